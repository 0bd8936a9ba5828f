"""The object editor on CPU: edits per second over 1,000 images at ImageNet
size, against reading and writing the same images without editing, in the
same run; and where the time goes.

The images are 500 x 375 JPEGs (ImageNet's most common validation size)
cut at random from scikit-image's real photos, each with an elliptic object
mask covering 10-40% of it in a ``fo.Segmentation`` field. The editor runs
``imagenetx.edits.edit_dataset`` with ImageNet-E's seven classical edits
(size 0.10 / 0.08 / 0.05, position, direction 30 / 90, a random other
image's background). The baseline reads each image once and writes it as a
PNG once per edit, with the same number of threads: the editor's I/O
without its image work or database writes. Then one thread times each
stage of the editor on a subset.

Usage: edit.py [--images 1000] [--workers N] [--profile 100]
"""

import argparse
import atexit
import os
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _env  # noqa: E402,F401

import cv2  # noqa: E402
import fiftyone as fo  # noqa: E402
import numpy as np  # noqa: E402
import skimage.data  # noqa: E402

from imagenetx.edits import apply, edit_dataset, parse_edits  # noqa: E402
from imagenetx.edits import operations as ops  # noqa: E402
from imagenetx.edits.masks import label_mask  # noqa: E402

EDITS = ["size:0.1,0.08,0.05", "position", "direction:30,90", "background:random"]
PHOTOS = ("chelsea", "astronaut", "coffee", "rocket", "cat", "stereo_motorcycle",
          "immunohistochemistry", "hubble_deep_field", "retina", "colorwheel")
WIDTH, HEIGHT = 500, 375


def make_images(folder: Path, n: int, seed: int = 0) -> list:
    """``n`` ImageNet-size JPEGs cut from real photos, and their masks."""
    rng = np.random.default_rng(seed)
    photos = []
    for name in PHOTOS:
        photo = getattr(skimage.data, name)()
        photo = photo[0] if isinstance(photo, tuple) else photo  # a stereo pair
        photos.append(np.ascontiguousarray(photo[..., :3][..., ::-1]))
    samples = []
    for i in range(n):
        photo = photos[i % len(photos)]
        h, w = photo.shape[:2]
        crop_w = int(rng.integers(w // 2, w + 1))
        crop_h = min(h, int(crop_w * HEIGHT / WIDTH))
        x0, y0 = int(rng.integers(0, w - crop_w + 1)), int(rng.integers(0, h - crop_h + 1))
        image = cv2.resize(photo[y0:y0 + crop_h, x0:x0 + crop_w], (WIDTH, HEIGHT),
                           interpolation=cv2.INTER_AREA)
        path = folder / f"ILSVRC2012_val_{i + 1:08d}.JPEG"
        cv2.imwrite(str(path), image, [cv2.IMWRITE_JPEG_QUALITY, 90])
        mask = np.zeros((HEIGHT, WIDTH), np.uint8)
        area = rng.uniform(0.1, 0.4) * WIDTH * HEIGHT
        aspect = rng.uniform(0.6, 1.6)
        ax = int(np.sqrt(area / np.pi * aspect))
        ay = int(np.sqrt(area / np.pi / aspect))
        ax, ay = min(ax, WIDTH // 2 - 1), min(ay, HEIGHT // 2 - 1)
        cx = int(rng.integers(ax, WIDTH - ax))
        cy = int(rng.integers(ay, HEIGHT - ay))
        cv2.ellipse(mask, (cx, cy), (ax, ay), float(rng.uniform(0, 180)), 0, 360, 1, -1)
        samples.append(fo.Sample(filepath=str(path), seg=fo.Segmentation(mask=mask)))
    return samples


def baseline(paths: list, copies: int, out: Path, workers: int) -> float:
    """Seconds to read each image and write it ``copies`` times as PNG."""
    def one(path):
        image = cv2.imread(path, cv2.IMREAD_COLOR)
        stem = os.path.splitext(os.path.basename(path))[0]
        for k in range(copies):
            cv2.imwrite(str(out / f"{k}" / f"{stem}.png"), image)

    for k in range(copies):
        (out / f"{k}").mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(one, paths))
    return time.perf_counter() - start


def stages(paths: list, labels: list, edits: list) -> dict:
    """Seconds per stage of the editor's image work, on one thread, as
    ``edit_dataset`` does it: each image read and its object inpainted once,
    then its edits, ``background:random`` on another image's inpainting."""
    t = defaultdict(float)
    rng = np.random.default_rng(0)

    def clock(name, fn, *args):
        s = time.perf_counter()
        out = fn(*args)
        t[name] += time.perf_counter() - s
        return out

    ready = []
    for path, label in zip(paths, labels):
        image = clock("read JPEG", cv2.imread, path, cv2.IMREAD_COLOR)
        mask = clock("mask from the label", label_mask, label, image.shape)
        clean = clock("inpaint the object (cv2.inpaint, Telea)", ops.clean_plate,
                      image, mask)
        ready.append((image, mask, clean))
    for i, (image, mask, clean) in enumerate(ready):
        for edit in edits:
            background = ready[(i + 1) % len(ready)][2] if edit.kind == "background" \
                else None
            try:
                edited = clock(f"{edit.kind} edit", apply.OPERATIONS[edit.kind], image,
                               mask, edit, rng, background, clean)
            except Exception:
                continue
            clock("encode PNG", cv2.imencode, ".png", edited.image)
    return dict(t)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--images", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=min(8, os.cpu_count() or 1))
    parser.add_argument("--profile", type=int, default=100,
                        help="images timed stage by stage on one thread")
    args = parser.parse_args()
    _env.drop_database_at_exit()

    root = Path(tempfile.mkdtemp(prefix="imagenetx-perf-edit-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    images = root / "images"
    images.mkdir()
    samples = make_images(images, args.images)
    source = fo.Dataset("perf-edit-src")
    source.add_samples(samples, progress=False)
    paths = source.values("filepath")
    edits = parse_edits(EDITS)

    t_base = baseline(paths, len(edits), root / "baseline", args.workers)
    db = defaultdict(float)
    for name in ("_grouped_copy", "_add_edits", "_done"):
        setattr(apply, name, _timed(getattr(apply, name), db, name))
    start = time.perf_counter()
    dataset, summary = edit_dataset(source, "seg", EDITS, seed=0, workers=args.workers,
                                    skip_failed=True, progress=False)
    t_edit = time.perf_counter() - start
    n_edits = sum(summary.added.values())
    n_writes = len(paths) * len(edits)
    print(f"{len(paths):,} images {WIDTH} x {HEIGHT}, {len(edits)} edits each "
          f"({', '.join(e.slice for e in edits)}), {args.workers} threads, "
          f"{os.cpu_count()} CPU cores")
    print(f"baseline, read + write PNG x{len(edits)}: {t_base:.1f} s, "
          f"{n_writes / t_base:.1f} images written/s")
    print(f"imagenetx edit_dataset: {t_edit:.1f} s, {n_edits:,} edits "
          f"({len(summary.failed)} left out), {n_edits / t_edit:.1f} edits/s")
    print(f"ratio editor / baseline time: {t_edit / t_base:.2f}")

    n = min(args.profile, len(paths))
    t = stages(paths[:n], source.select(source.values("id")[:n], ordered=True)
               .values("seg"), edits)
    total = sum(t.values())
    print(f"\nwhere the time goes (one thread, {n} images x {len(edits)} edits, "
          f"{total:.1f} s of image work):")
    for name, secs in sorted(t.items(), key=lambda kv: -kv[1]):
        print(f"  {name:38s} {secs:6.2f} s  {100 * secs / total:5.1f}%")
    print(f"\ndatabase, in the {t_edit:.1f} s run: grouped copy "
          f"{db['_grouped_copy']:.1f} s, adding the edits in bulk {db['_add_edits']:.1f} s, "
          f"finding done slices {db['_done']:.2f} s")


def _timed(fn, into: dict, name: str):
    def wrapper(*args, **kwargs):
        s = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            into[name] += time.perf_counter() - s
    return wrapper


if __name__ == "__main__":
    main()
