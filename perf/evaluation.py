"""Seconds of the evaluation after a predict run (``eval_<field>``) on 50,000
samples against FiftyOne's ``evaluate_classifications`` in the same run
(target: under 1 s).

Three ways, on the same dataset (ground truth and a prediction field with
confidences, about 76% correct, like a ResNet-50):

-   ``evaluate_classifications`` (the baseline)
-   ``evaluate_simple`` on its own: reads the columns, writes every
    sample's value (what ``evaluate_predictions`` does outside ``predict``)
-   after ``predict``: the values were written with the predictions and
    the run holds the columns, so ``evaluate_predictions(..., written=...)``
    registers the run and saves its results (the columns are read once
    beforehand here, as ``predict`` has them in memory)

Each is run ``--repeats`` times, alternating, and the best run counts; they
are checked to store the same per-sample values and results.

Usage: evaluation.py [--n 50000] [--repeats 3]
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _env  # noqa: E402,F401

import fiftyone as fo  # noqa: E402
import numpy as np  # noqa: E402

from imagenetx.classes.imagenet import class_table  # noqa: E402
from imagenetx.store.evaluation import (  # noqa: E402
    Written,
    _columns,
    evaluate_predictions,
    evaluate_simple,
)


def build(n: int) -> fo.Dataset:
    labels = class_table().labels
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 1000, n)
    pred = np.where(rng.random(n) < 0.76, truth, rng.integers(0, 1000, n))
    conf = rng.random(n)
    ds = fo.Dataset("bench-evaluation")
    ds.add_samples(
        fo.Sample(filepath=f"/data/val/{i:08d}.JPEG",
                  ground_truth=fo.Classification(label=labels[t]),
                  pred=fo.Classification(label=labels[p], confidence=float(c)))
        for i, (t, p, c) in enumerate(zip(truth, pred, conf)))
    return ds


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=50000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    _env.drop_database_at_exit()

    t = time.perf_counter()
    ds = build(args.n)
    print(f"{args.n:,} samples ready in {time.perf_counter() - t:.1f} s")

    runs = {"evaluate_classifications": [], "evaluate_simple": [], "after predict": []}
    columns = None
    for _ in range(args.repeats):
        t = time.perf_counter()
        ref = ds.evaluate_classifications("pred", eval_key="eval_ref", progress=False)
        runs["evaluate_classifications"].append(time.perf_counter() - t)
        t = time.perf_counter()
        simple = evaluate_simple(ds, "pred", "ground_truth", "eval_pred")
        runs["evaluate_simple"].append(time.perf_counter() - t)
        if columns is None:  # what predict holds in memory
            columns = _columns(ds, ["ground_truth.label", "ground_truth._id", "pred.label",
                                    "pred._id", "pred.confidence"])
        t = time.perf_counter()
        after = evaluate_predictions(ds, "pred", written=Written(columns, previous=False))
        runs["after predict"].append(time.perf_counter() - t)

    fast = ds.load_evaluation_results("eval_pred")
    same_values = ds.values("eval_ref") == ds.values("eval_pred")
    same_report = all(r.report() == ref.report() and r.metrics() == ref.metrics()
                      for r in (simple, fast))
    for name, seconds in runs.items():
        print(f"{name:<25} s: " + ", ".join(f"{s:.2f}" for s in seconds))
    base = min(runs["evaluate_classifications"])
    for name in ("evaluate_simple", "after predict"):
        new = min(runs[name])
        print(f"{name}: {new:.2f} s against evaluate_classifications {base:.2f} s: "
              f"{base / new:.1f}x faster; under 1 s: {'yes' if new < 1 else 'NO'}")
    print(f"same per-sample values: {same_values}; same metrics and report: {same_report}; "
          f"accuracy {after.accuracy:.4f} over {after.evaluated:,}")


if __name__ == "__main__":
    main()
