"""OOD scoring of 100,000 samples with every logit-only detector (MSP,
MaxLogit, Energy, GEN, temperature-scaled MSP) on 1,000-class float32
logits, as ``imagenetx ood`` hands them to the detectors, beside a plain
numpy baseline of the same formulas measured in the same run on the same
array (target: the detectors at most 1.2x the baseline).

The baseline is what a user writes by hand: the logits cast to float64,
``softmax`` as ``exp(z - max) / sum``, its maximum; ``max``;
``max + log(sum(exp(z - max)))``; GEN over ``np.sort`` of the softmax; MSP
of ``z / T``. The detectors are :func:`imagenetx.ood.get_detector`'s
``score`` (the temperature fitted once on 5,000 held-out ID rows, timed
apart). Each side is timed best of ``--repeats``, the two alternating (the
machine may be shared); the scores are checked equal.

Usage: ood_scoring.py [--n 100000] [--classes 1000] [--repeats 3]
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import _env  # noqa: E402,F401
import numpy as np  # noqa: E402

from imagenetx.ood import Outputs, get_detector  # noqa: E402

DETECTORS = ("msp", "max_logit", "energy", "gen", "temp_scaling")


def _softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def baseline(name, logits, temperature):
    """The plain numpy score of ``name``."""
    z = logits.astype(np.float64)
    if name == "msp":
        return _softmax(z).max(axis=1)
    if name == "max_logit":
        return z.max(axis=1)
    if name == "energy":
        m = z.max(axis=1)
        return m + np.log(np.exp(z - m[:, None]).sum(axis=1))
    if name == "gen":
        p = np.sort(_softmax(z), axis=1)[:, -100:]
        return -np.sum(p ** 0.1 * (1 - p) ** 0.1, axis=1)
    return _softmax(z / temperature).max(axis=1)


def timed(fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - start, out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--classes", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    labels = rng.integers(0, args.classes, args.n)
    logits = rng.normal(0, 2, (args.n, args.classes)).astype(np.float32)
    logits[np.arange(args.n), labels] += rng.normal(3, 2, args.n).astype(np.float32)
    held = slice(0, 5000)
    temp = get_detector("temp_scaling")
    start = time.perf_counter()
    stats = temp.fit(Outputs(logits=logits[held], labels=labels[held]))
    fit_s = time.perf_counter() - start
    print(f"{args.n:,} x {args.classes} float32 logits; temperature {stats.temperature:.3f} "
          f"fitted on 5,000 held-out rows in {fit_s:.2f} s")
    print(f"{'detector':<14} {'detector s':>10} {'numpy s':>8} {'ratio':>6}")
    total_ours = total_base = 0.0
    outputs = Outputs(logits=logits)
    for name in DETECTORS:
        det = get_detector(name)
        ours_t, base_t = [], []
        fitted = stats if det.fit_on else None
        for _ in range(args.repeats):  # alternate the two sides
            t, ours = timed(det.score, outputs, fitted)
            ours_t.append(t)
            t, base = timed(baseline, name, logits, stats.temperature)
            base_t.append(t)
        np.testing.assert_allclose(ours, base, rtol=1e-9, atol=1e-12)
        o, b = min(ours_t), min(base_t)
        total_ours += o
        total_base += b
        print(f"{name:<14} {o:>10.2f} {b:>8.2f} {o / b:>5.2f}x")
    print(f"{'all five':<14} {total_ours:>10.2f} {total_base:>8.2f} "
          f"{total_ours / total_base:>5.2f}x")
    print(f"ratio: {total_ours / total_base:.2f}x (detectors / plain numpy)")


if __name__ == "__main__":
    main()
