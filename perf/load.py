"""Loading folders at scale (``imagenetx load``) against FiftyOne's own
importer of the same files in the same run.

The folders hold generated files of a JPEG's first bytes alone (the loaders
read names and the first bytes, not pixels), kept under ``--root`` between
runs (``--clean`` deletes them):

-   ImageNet train layout, ``<wnid>/<wnid>_<k>.JPEG`` over the 1000
    classes: ``load_imagenet_dir(split="train")``, which also matches every
    file name against the ImageNet-X annotations
-   ImageNet-C layout, ``<corruption>/<severity>/<wnid>/<image>.JPEG``, 50
    images per class as released, filling the 15 corruptions x 5 severities
    one after the other: ``load_ood_dir("c")``

The baseline is ``fo.Dataset.from_dir(...,
dataset_type=fo.types.ImageClassificationDirectoryTree)`` on the same
``<wnid>`` tree: it writes the folder name as the label, without the
ImageNet-1k ``class_index``, the unique label, tags or the ImageNet-X
field, so it does less than the loader. It runs on at most
``--baseline-max`` files (default 50,000; on 2 cores it takes about a
minute per 50,000), on the first files of the same tree.

Usage: load.py [--n 50000 1000000] [--root /tmp/imagenetx-load-perf]
               [--baseline-max 50000] [--clean]
"""

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _env  # noqa: E402

import fiftyone as fo  # noqa: E402

from imagenetx.benchmarks.imagenet_x.sources import load_imagenet_dir  # noqa: E402
from imagenetx.benchmarks.ood import load_ood_dir  # noqa: E402
from imagenetx.benchmarks.ood.layouts import CORRUPTIONS, SEVERITIES  # noqa: E402
from imagenetx.classes.imagenet import class_table  # noqa: E402


def _touch_tree(root: Path, n: int, folder_of) -> Path:
    """``n`` files ``folder_of(k)/name`` of a JPEG's first bytes, made once
    (a marker file says the tree is complete)."""
    done = root / ".complete-jpeg"
    if done.exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    made = set()
    for k in range(n):
        folder, name = folder_of(k)
        if folder not in made:
            os.makedirs(root / folder, exist_ok=True)
            made.add(folder)
        fd = os.open(root / folder / name, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
        os.write(fd, b"\xff\xd8\xff\xe0")
        os.close(fd)
    done.touch()
    return root


def train_tree(base: Path, n: int) -> Path:
    wnids = class_table().wnids
    return _touch_tree(base / f"train-{n}", n, lambda k: (
        wnids[k % 1000], f"{wnids[k % 1000]}_{k // 1000}.JPEG"))


def c_tree(base: Path, n: int) -> Path:
    """50 images per class folder, as in the release: the classes of one
    corruption and severity filled before the next."""
    wnids = class_table().wnids
    cells = [(c, s) for c in CORRUPTIONS[:15] for s in SEVERITIES]

    def folder_of(k):
        folder, image = divmod(k, 50)
        (c, s), wnid = cells[folder // 1000 % len(cells)], wnids[folder % 1000]
        return os.path.join(c, str(s), wnid), f"ILSVRC2012_val_{folder % 1000 * 50 + image + 1:08d}.JPEG"

    return _touch_tree(base / f"c-{n}", n, folder_of)


def subtree(tree: Path, n: int) -> Path:
    """A tree of hard links to the first ``n`` files of a ``<wnid>`` tree,
    ``n / 1000`` per class, for the baseline."""
    out = tree.parent / f"{tree.name}-first-{n}"
    if (out / ".complete").exists():
        return out
    shutil.rmtree(out, ignore_errors=True)
    for k in range(n):
        wnid = class_table().wnids[k % 1000]
        os.makedirs(out / wnid, exist_ok=True)
        name = f"{wnid}_{k // 1000}.JPEG"
        os.link(tree / wnid / name, out / wnid / name)
    (out / ".complete").touch()
    return out


def timed(fn):
    tic = time.perf_counter()
    result = fn()
    return time.perf_counter() - tic, result


def rate(n: int, seconds: float) -> str:
    return f"{seconds:.1f} s ({n / seconds:,.0f} samples/s)"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, nargs="+", default=[50000, 1000000])
    parser.add_argument("--root", default="/tmp/imagenetx-load-perf")
    parser.add_argument("--baseline-max", type=int, default=50000)
    parser.add_argument("--clean", action="store_true",
                        help="delete the generated folders at the end")
    args = parser.parse_args()
    _env.drop_database_at_exit()
    base = Path(args.root)
    try:
        for n in args.n:
            tic = time.perf_counter()
            train, corrupt = train_tree(base, n), c_tree(base, n)
            print(f"{n:,} files per layout ready in {time.perf_counter() - tic:.1f} s")

            seconds, (ds, summary) = timed(lambda: load_imagenet_dir(
                str(train), split="train", name="perf-train", overwrite=True))
            assert len(ds) == n, (len(ds), n)
            print(f"  load_imagenet_dir (train, <wnid>/<image>, "
                  f"{summary.tagging.annotated:,} annotated): {rate(n, seconds)}")
            ours_train = seconds
            fo.delete_dataset("perf-train")

            seconds, (ds, _) = timed(lambda: load_ood_dir(
                "c", str(corrupt), name="perf-c", overwrite=True))
            assert len(ds) == n
            print(f"  load_ood_dir (ImageNet-C layout): {rate(n, seconds)}")
            ours_c = seconds
            fo.delete_dataset("perf-c")

            m = min(n, args.baseline_max)
            tree = train if m == n else subtree(train, m)
            seconds, ds = timed(lambda: fo.Dataset.from_dir(
                dataset_dir=str(tree),
                dataset_type=fo.types.ImageClassificationDirectoryTree,
                name="perf-baseline", overwrite=True))
            assert len(ds) == m
            ds.delete()
            print(f"  baseline, FiftyOne's ImageClassificationDirectoryTree importer "
                  f"on {m:,} of these files: {rate(m, seconds)}")
            baseline = m / seconds
            print(f"  ratio to the baseline's samples/s: load_imagenet_dir "
                  f"{n / ours_train / baseline:.1f}x, load_ood_dir {n / ours_c / baseline:.1f}x "
                  f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    finally:
        if args.clean:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
