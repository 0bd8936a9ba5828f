"""Loading an OOD release folder (``load_ood_dir``) against FiftyOne's own
importer of the same ``<wnid>/<image>`` tree in the same run.

The folders are generated: ``--n`` hard links to one real photo
(scikit-image's ``chelsea``), spread over ImageNet-A's 200 classes in the
``<wnid>/<image>`` layout, and over 15 corruptions x 5 severities x 200
classes in ImageNet-C's layout. The baseline is
``fo.Dataset.from_dir(..., dataset_type=fo.types.ImageClassificationDirectoryTree)``
on the ``<wnid>`` tree: it writes the folder name as the label, without
the ImageNet-1k ``class_index``, the unique label or any slicing field,
so it does less than the loader.

Usage: ood_load.py [--n 20000]
"""

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _env  # noqa: E402

import fiftyone as fo  # noqa: E402
import skimage.data  # noqa: E402
from PIL import Image  # noqa: E402

from imagenetx.benchmarks.ood import load_ood_dir  # noqa: E402
from imagenetx.benchmarks.ood.layouts import CORRUPTIONS  # noqa: E402
from imagenetx.classes.imagenet import class_table  # noqa: E402
from imagenetx.classes.ood import subset_indices  # noqa: E402


def build(root: Path, n: int) -> tuple:
    photo = root / "photo.jpg"
    Image.fromarray(skimage.data.chelsea()).save(photo, "JPEG")
    wnids = [class_table().wnids[i] for i in subset_indices("imagenet_a")]
    a, c = root / "imagenet-a", root / "imagenet-c"
    for k in range(n):
        folder = a / wnids[k % len(wnids)]
        folder.mkdir(parents=True, exist_ok=True)
        os.link(photo, folder / f"{k}.jpg")
        corruption = CORRUPTIONS[(k // len(wnids)) % 15]
        severity = 1 + (k // (len(wnids) * 15)) % 5
        folder = c / corruption / str(severity) / wnids[k % len(wnids)]
        folder.mkdir(parents=True, exist_ok=True)
        os.link(photo, folder / f"{k}.JPEG")
    return a, c


def timed(fn):
    tic = time.perf_counter()
    fn()
    return time.perf_counter() - tic


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=20000)
    args = parser.parse_args()
    _env.drop_database_at_exit()
    root = Path(tempfile.mkdtemp(prefix="ood-perf-"))
    try:
        a, c = build(root, args.n)
        base = timed(lambda: fo.Dataset.from_dir(
            dataset_dir=str(a), dataset_type=fo.types.ImageClassificationDirectoryTree,
            name="ood-baseline", persistent=False))
        ours = timed(lambda: load_ood_dir("a", str(a), name="ood-a", overwrite=True))
        c_time = timed(lambda: load_ood_dir("c", str(c), name="ood-c", overwrite=True))
        print(f"{args.n:,} images, <wnid>/<image> (ImageNet-A): load_ood_dir {ours:.2f} s "
              f"({args.n / ours:,.0f} images/s) vs FiftyOne's ImageClassificationDirectoryTree "
              f"importer {base:.2f} s ({args.n / base:,.0f} images/s): ratio {ours / base:.2f}")
        print(f"{args.n:,} images, ImageNet-C layout (15 corruptions x 5 severities): "
              f"load_ood_dir {c_time:.2f} s ({args.n / c_time:,.0f} images/s)")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
