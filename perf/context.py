"""Context for 4 user models against 335 + 54 published models (the
``imagenet_testbed`` and ``modelvshuman`` tables), warm: tables parsed and
columns cached (target: under 0.5 s). Baseline in the same run: the
original ``imagenet_x`` toolkit computing the same 4 models' factor
accuracies from their CSVs, plus pandas reading the two reference tables
(what the paper's Figure 4 was drawn from), with no fit.

The 4 models are ResNet50 and DINO from ``../shared/data/imagenetx/
predictions`` and a perturbed copy of each (5% of predictions changed,
seeded).
"""

import os
import statistics
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _env  # noqa: E402,F401


from imagenetx.analysis import compute_ratios  # noqa: E402
from imagenetx.analysis.context import reference_cloud  # noqa: E402
from imagenetx.benchmarks.imagenet_x.tagging import tag_dataset  # noqa: E402

SHARED = os.path.dirname(_env.PREDICTIONS)
GROUPS = ("imagenet_testbed", "modelvshuman")
REPEATS = 7


def _median(fn, repeats=REPEATS):
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), min(times), out


def main():
    results = os.path.join(SHARED, "results")
    if not os.path.isdir(results):
        print(f"skipped: {results} absent")
        return
    _env.drop_database_at_exit()
    ds = _env.val_names_dataset("bench-context")
    ids = ds.values("id")
    tag_dataset(ds)
    names = [os.path.basename(p) for p in ds.values("filepath")]
    fields, csv_dir = _env.four_prediction_fields(ds, ids, names)

    t = time.perf_counter()
    result = reference_cloud(ds, fields, GROUPS, results_dir=results)
    cold = time.perf_counter() - t
    ours, best, result = _median(
        lambda: reference_cloud(ds, fields, GROUPS, results_dir=results))
    ratios, _, _ = _median(lambda: compute_ratios(ds, fields, intervals=False))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pandas as pd
        from imagenet_x import get_factor_accuracies

        def baseline():
            tables = [pd.read_csv(os.path.join(
                results, f"val/top_factor/{g}/class/accuracies_per_factor.csv"))
                for g in GROUPS]
            return get_factor_accuracies(csv_dir, which_factor="top"), tables

        baseline()
        theirs, theirs_best, (table, _) = _median(baseline, 3)

    worst = max(abs(result.users[f].factor_accuracy[k] - table.loc[f, name])
                for f in fields for k, name in enumerate(result.factors))
    print(f"context: {len(fields)} models x {result.users[fields[0]].n:,} images against "
          f"{len(result.models)} published models ({' + '.join(GROUPS)}), warm: "
          f"median {ours:.3f} s (best {best:.3f} s of {REPEATS}); first call "
          f"(tables parsed, columns read) {cold:.3f} s")
    print(f"  for scale: compute_ratios of the same fields, no intervals: "
          f"median {ratios:.3f} s")
    print(f"baseline: imagenet_x toolkit's factor accuracies from the CSVs + pandas "
          f"reading the reference tables: median {theirs:.3f} s (best "
          f"{theirs_best:.3f} s of 3)")
    print(f"ours is {theirs / ours:.1f}x faster than the baseline; largest difference "
          f"in factor accuracy {worst:.1e}; target < 0.5 s -> "
          f"{'met' if ours < 0.5 else 'NOT met'}")


if __name__ == "__main__":
    main()
