"""Seconds of the evaluation after a predict run (``eval_<field>``) on 50,000
samples: ``imagenetx.store.evaluation.evaluate_simple`` against FiftyOne's
``evaluate_classifications`` in the same run (target: under 1 s).

Both evaluate the same dataset (ground truth and a prediction field with
confidences, about 76% correct, like a ResNet-50) under two eval keys; each
is run ``--repeats`` times, alternating, and the best run counts. The two
runs are checked to store the same per-sample values and results.

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
from imagenetx.store.evaluation import evaluate_simple  # noqa: E402


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

    runs = {"evaluate_classifications": [], "evaluate_simple": []}
    for _ in range(args.repeats):
        t = time.perf_counter()
        ref = ds.evaluate_classifications("pred", eval_key="eval_ref", progress=False)
        runs["evaluate_classifications"].append(time.perf_counter() - t)
        t = time.perf_counter()
        fast = evaluate_simple(ds, "pred", "ground_truth", "eval_pred")
        runs["evaluate_simple"].append(time.perf_counter() - t)

    same_values = ds.values("eval_ref") == ds.values("eval_pred")
    same_report = ref.report() == fast.report() and (
        ref.metrics() == fast.metrics())
    for name, seconds in runs.items():
        print(f"{name:<25} s: " + ", ".join(f"{s:.2f}" for s in seconds))
    base, new = min(runs["evaluate_classifications"]), min(runs["evaluate_simple"])
    print(f"evaluate_classifications: {base:.2f} s; evaluate_simple: {new:.2f} s; "
          f"speed-up {base / new:.1f}x; target < 1 s -> {'met' if new < 1 else 'NOT met'}")
    print(f"same per-sample values: {same_values}; same metrics and report: {same_report}; "
          f"accuracy {fast.metrics()['accuracy']:.4f}")


if __name__ == "__main__":
    main()
