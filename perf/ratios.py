"""Error ratios with bootstrap intervals for 4 models x 46,110 images read
from the database (target: under 1 s warm), beside the original
``imagenet_x`` toolkit computing the same table from its CSVs in the same
run (``get_factor_accuracies`` + ``error_ratio``).

The 4 models are ResNet50 and DINO from ``../shared/data/imagenetx/
predictions`` and a perturbed copy of each (5% of predictions changed,
seeded); the toolkit reads the same 4 predictions as CSV files.
"""

import os
import statistics
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _env  # noqa: E402,F401

import fiftyone as fo  # noqa: E402

from imagenetx.analysis import compute_ratios  # noqa: E402
from imagenetx.benchmarks.imagenet_x.factors import FACTORS  # noqa: E402
from imagenetx.benchmarks.imagenet_x.tagging import tag_dataset  # noqa: E402

SHARED = _env.PREDICTIONS
REPEATS = 5


def main():
    if not os.path.isdir(SHARED):
        print(f"skipped: {SHARED} absent")
        return
    _env.drop_database_at_exit()
    fo.list_datasets()  # start the database outside the timings

    ds = _env.val_names_dataset("bench-ratios")
    ids = ds.values("id")
    tag_dataset(ds)
    names = [os.path.basename(p) for p in ds.values("filepath")]

    fields, csv_dir = _env.four_prediction_fields(ds, ids, names)

    # ours: one query for the 4 fields, then the statistics; the column
    # cache is off, so every call reads the database as the first wave did
    from imagenetx.analysis import columns

    size, columns.CACHE_SIZE = columns.CACHE_SIZE, 0
    compute_ratios(ds, fields)  # warm-up
    ours = []
    for _ in range(REPEATS):
        t = time.perf_counter()
        result = compute_ratios(ds, fields).to_dict()
        ours.append(time.perf_counter() - t)

    # for information: the heavier variants
    variants = {}
    for label, kwargs in (("multi-factor", {"slicing": "factors"}),
                          ("ReaL (clean)", {"correct": "real"}),
                          ("by meta-class", {"by": "metaclass"})):
        times = []
        for _ in range(3):
            t = time.perf_counter()
            compute_ratios(ds, fields, **kwargs)
            times.append(time.perf_counter() - t)
        variants[label] = statistics.median(times)

    columns.CACHE_SIZE = size
    compute_ratios(ds, fields)
    cached = []
    for _ in range(REPEATS):
        t = time.perf_counter()
        compute_ratios(ds, fields)
        cached.append(time.perf_counter() - t)

    # the toolkit, same table from its CSVs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from imagenet_x import error_ratio, get_factor_accuracies

        get_factor_accuracies(csv_dir, which_factor="top")  # warm-up
        theirs = []
        for _ in range(3):
            t = time.perf_counter()
            table = get_factor_accuracies(csv_dir, which_factor="top")
            ratios = error_ratio(table)
            theirs.append(time.perf_counter() - t)

    worst = 0.0
    for field in fields:
        for f in FACTORS:
            e = result["models"][field]["slices"][f]
            worst = max(worst, abs(e["accuracy"] - table.loc[field, f]),
                        abs(e["error_ratio"] - ratios.loc[field, f]))
    n = result["models"][fields[0]]["n"]
    ours_s, theirs_s = statistics.median(ours), statistics.median(theirs)
    print(f"ratios: {len(fields)} models x {n:,} images from the database, "
          f"top factor, 1000-resample bootstrap intervals: "
          f"median {ours_s:.3f} s (best {min(ours):.3f} s of {REPEATS})")
    print(f"  same, data unchanged since the last read (columns cached): "
          f"median {statistics.median(cached):.3f} s")
    print("  same with intervals: " + ", ".join(
        f"{k} {v:.3f} s" for k, v in variants.items()))
    print(f"baseline: imagenet_x toolkit, same table from its CSVs, no intervals: "
          f"median {theirs_s:.3f} s (best {min(theirs):.3f} s of 3)")
    print(f"ours is {theirs_s / ours_s:.1f}x faster than the toolkit; largest "
          f"difference between the two tables {worst:.1e}; target < 1 s -> "
          f"{'met' if ours_s < 1 else 'NOT met'}")


if __name__ == "__main__":
    main()
