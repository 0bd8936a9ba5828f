"""Parsing the annotation files (target: under 1 s), against the original
toolkit's pandas loader in the same process."""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

t = time.perf_counter()
from imagenetx.benchmarks.imagenet_x import annotations as anno  # noqa: E402

for split in anno.SPLITS:
    anno.load_split(split)
anno.real_labels()
anno.val_labels()
ours = time.perf_counter() - t

t = time.perf_counter()
from imagenet_x import load_annotations  # noqa: E402

for split in ("val", "train"):
    for which in ("top", "multi"):
        load_annotations(which_factor=which, partition=split, filter_prototypes=False)
baseline = time.perf_counter() - t

print(f"parse all annotation files (val+train, top+multi, ReaL, labels): {ours:.3f} s")
print(f"original toolkit load_annotations (val+train, top+multi):          {baseline:.3f} s")
print(f"ratio baseline/ours: {baseline / ours:.1f}x  target: ours < 1 s -> {'met' if ours < 1 else 'NOT met'}")
