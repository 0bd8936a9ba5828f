"""Slice discovery over 50,000 images x (16 factors + 17 meta-classes + 1000
classes), up to 3-way conjunctions (target: under 10 s on this CPU), beside
a baseline measured in the same run: naive enumeration of every conjunction
present in the data (each image's active slices, all combinations of up to
3, counted with a pandas ``groupby``), then the same support, redundancy
and score rules. The baseline is exhaustive, so it also checks that the
search's pruning changes nothing: both top-10 lists must be equal.

When ``../shared/data/imagenetx/predictions/ResNet50.csv`` is present it
also times the whole ``discover_slices`` on a tagged 50,000-image dataset in
FiftyOne's database (one column read, memberships, search, intervals) with
ResNet50's predictions, and the baseline on the same arrays.

With ``--sliceline`` it also times the ``sliceline`` package (if installed)
on the same data, factors as 16 binary features, at 2-way conjunctions
(its 3-way run does not finish in minutes here).

The data are synthetic with ImageNet-X's shape: 50 images per class, each
class in one of 17 meta-classes, 1 to 3 factors per image from skewed
frequencies; errors are 20% at random plus 3 planted conjunctions.
"""

import argparse
import itertools
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import _env  # noqa: E402,F401
import numpy as np  # noqa: E402

from imagenetx.metrics.discovery import _Scorer, find_slices  # noqa: E402

SHARED = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    "shared", "data", "imagenetx", "predictions", "ResNet50.csv",
)

N, FACTORS, METAS, CLASSES = 50_000, 16, 17, 1000
MAX_ORDER, MIN_SUPPORT, TOP_K = 3, 20, 10
REPEATS = 3


def synthetic(seed: int = 0):
    """(correct, slicings) of ImageNet-X's shape (see the module docstring)."""
    rng = np.random.default_rng(seed)
    classes = np.repeat(np.arange(CLASSES), N // CLASSES)
    meta_of_class = rng.integers(0, METAS, CLASSES)
    metas = meta_of_class[classes]
    freq = np.sort(rng.dirichlet(np.ones(FACTORS) * 0.7))[::-1]
    factors = np.zeros((N, FACTORS), bool)
    count = rng.integers(1, 4, N)
    for i in range(N):
        factors[i, rng.choice(FACTORS, count[i], replace=False, p=freq)] = True
    wrong = rng.random(N) < 0.2
    wrong |= factors[:, 3] & (metas == 5) & (rng.random(N) < 0.9)
    wrong |= factors[:, 1] & factors[:, 7] & (rng.random(N) < 0.7)
    wrong |= (classes == 17) & factors[:, 0]
    slicings = [
        ("factors", tuple(f"f{i}" for i in range(FACTORS)), factors),
        ("metaclass", tuple(f"m{i}" for i in range(METAS)),
         np.eye(METAS, dtype=bool)[metas]),
        ("class", tuple(f"c{i}" for i in range(CLASSES)),
         np.eye(CLASSES, dtype=bool)[classes]),
    ]
    return ~wrong, slicings


def naive(correct, slicings, max_order=MAX_ORDER, min_support=MIN_SUPPORT,
          top_k=TOP_K):
    """Every conjunction present in the data, counted with pandas; the same
    support, redundancy and score rules; the top ``top_k`` as
    ``[(score, columns)]``."""
    import pandas as pd

    names = [(s, v) for s, values, _ in slicings for v in values]
    x = np.hstack([m for _, _, m in slicings])
    n, width = x.shape
    err = (~correct).astype(np.int64)
    size1 = x.sum(axis=0)
    usable = (size1 >= min_support) & (size1 < n)
    keys, errs = [], []
    for row, e in zip(x, err):
        active = np.flatnonzero(row & usable).tolist()
        for order in range(1, max_order + 1):
            for combo in itertools.combinations(active, order):
                keys.append(combo)
                errs.append(e)
    frame = pd.DataFrame({"key": keys, "err": errs})
    table = frame.groupby("key", sort=False)["err"].agg(["size", "sum"])
    table = table[table["size"] >= min_support]
    sizes = table["size"].to_dict()
    # redundant: no smaller than one of its parents, or a parent missing
    keep = []
    for key, s in sizes.items():
        parents = [key[:i] + key[i + 1:] for i in range(len(key))] if len(key) > 1 else []
        keep.append(all(p in sizes and s < sizes[p] for p in parents))
    table = table[keep]
    family = sum(__import__("math").comb(int(usable.sum()), k)
                 for k in range(1, max_order + 1))
    scorer = _Scorer("bound", n, int(err.sum()), family, min_support, 0.95, 0.05)
    score = scorer.score(table["size"].to_numpy(), table["sum"].to_numpy())
    table = table.assign(score=score)
    table = table[table["score"] > scorer.floor]
    order = sorted(zip(table["score"], table.index),
                   key=lambda t: (-t[0], len(t[1]), t[1]))[:top_k]
    return [(sc, tuple((names[c]) for c in key)) for sc, key in order], len(sizes)


def run_sliceline(correct, slicings, max_order):
    """The ``sliceline`` package on the same images: factors as binary
    features, meta-class and class as categorical ones."""
    from sliceline.slicefinder import Slicefinder

    factors = slicings[0][2].astype(np.int64)
    metas = slicings[1][2].argmax(axis=1)
    classes = slicings[2][2].argmax(axis=1)
    x = np.column_stack([factors, metas, classes])
    finder = Slicefinder(alpha=0.95, k=TOP_K, max_l=max_order,
                         min_sup=MIN_SUPPORT)
    finder.fit(x, (~correct).astype(np.float64))
    return finder


def real_dataset():
    """``discover_slices`` end to end on ResNet50's predictions, read from
    a tagged 50,000-image dataset, beside the baseline on the same arrays."""
    import csv

    from imagenetx.analysis import columns, discover_slices, prepare
    from imagenetx.benchmarks.imagenet_x.tagging import tag_dataset
    from imagenetx.store.classifications import write_classifications

    _env.drop_database_at_exit()
    ds = _env.val_names_dataset("bench-discovery")
    tag_dataset(ds)
    ids, names = ds.values(["id", "filepath"])
    with open(SHARED, newline="") as f:
        preds = {r["file_name"]: int(r["predicted_class"]) for r in csv.DictReader(f)}
    write_classifications(ds, "resnet50", ids,
                          [preds[os.path.basename(p)] for p in names])

    size, columns.CACHE_SIZE = columns.CACHE_SIZE, 0
    discover_slices(ds, "resnet50")  # warm-up
    cold = []
    for _ in range(REPEATS):
        t = time.perf_counter()
        result = discover_slices(ds, "resnet50")
        cold.append(time.perf_counter() - t)
    columns.CACHE_SIZE = size
    discover_slices(ds, "resnet50")
    cached = []
    for _ in range(REPEATS):
        t = time.perf_counter()
        discover_slices(ds, "resnet50")
        cached.append(time.perf_counter() - t)

    p = prepare(ds, ["resnet50"], slicing="factors",
                extra_slicings=["metaclass", "class"])
    keep = p.counted["resnet50"]
    slicings = [(n, sl.values, m[keep]) for n, (sl, m) in
                {"factors": (p.slicing, p.membership), **p.extra}.items()]
    t = time.perf_counter()
    expected, conjunctions = naive(p.correct["resnet50"][keep], slicings)
    theirs = time.perf_counter() - t
    same = [(round(s.score, 9), s.predicates) for s in result.slices] == [
        (round(sc, 9), key) for sc, key in expected]
    cold_s = statistics.median(cold)
    print(f"real: discover_slices on ResNet50, {result.search.n:,} images read from "
          f"the database, factors x metaclass x class, up to 3-way: median "
          f"{cold_s:.3f} s (columns cached: {statistics.median(cached):.3f} s)")
    print(f"baseline on the same arrays (no database read): naive enumeration of "
          f"{conjunctions:,} conjunctions: {theirs:.3f} s; ours is "
          f"{theirs / cold_s:.1f}x faster end to end; same top {TOP_K}: {same}; "
          f"target < 10 s -> {'met' if cold_s < 10 else 'NOT met'}")
    print(f"  first: {result.slices[0].name}, n={result.slices[0].n}, "
          f"error ratio {result.slices[0].error_ratio:.2f}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sliceline", action="store_true",
                        help="also time the sliceline package (2-way)")
    args = parser.parse_args()

    correct, slicings = synthetic()
    find_slices(correct, slicings, max_order=MAX_ORDER, min_support=MIN_SUPPORT,
                top_k=TOP_K)  # warm-up
    ours = []
    for _ in range(REPEATS):
        t = time.perf_counter()
        result = find_slices(correct, slicings, max_order=MAX_ORDER,
                             min_support=MIN_SUPPORT, top_k=TOP_K)
        ours.append(time.perf_counter() - t)

    t = time.perf_counter()
    expected, conjunctions = naive(correct, slicings)
    theirs = time.perf_counter() - t

    same = [(round(s.score, 9), s.predicates) for s in result.slices] == [
        (round(sc, 9), key) for sc, key in expected]
    ours_s = statistics.median(ours)
    print(f"discovery: {N:,} images x ({FACTORS} factors + {METAS} meta-classes + "
          f"{CLASSES} classes), up to {MAX_ORDER}-way, min support {MIN_SUPPORT}, "
          f"top {TOP_K}: median {ours_s:.3f} s (best {min(ours):.3f} s of {REPEATS}); "
          f"conjunctions evaluated per order {list(result.evaluated)}")
    print(f"baseline: naive enumeration of all {conjunctions:,} conjunctions with "
          f"enough support (pandas groupby), same rules: {theirs:.3f} s")
    print(f"ours is {theirs / ours_s:.1f}x faster than the baseline; same top "
          f"{TOP_K}: {same}; target < 10 s -> {'met' if ours_s < 10 else 'NOT met'}")
    for s in result.slices[:3]:
        print(f"  {s.name}: n={s.n}, error ratio {s.error_ratio:.2f}, "
              f"score {s.score:.2f}")

    if os.path.exists(SHARED):
        real_dataset()
    else:
        print(f"real data: skipped, {SHARED} absent")

    if args.sliceline:
        try:
            import sliceline  # noqa: F401
        except ImportError:
            print("sliceline: not installed (pip install sliceline)")
            return
        t = time.perf_counter()
        find_slices(correct, slicings, max_order=2, min_support=MIN_SUPPORT,
                    top_k=TOP_K, score="sliceline")
        ours2 = time.perf_counter() - t
        t = time.perf_counter()
        run_sliceline(correct, slicings, 2)
        theirs2 = time.perf_counter() - t
        print(f"sliceline package, same images, 2-way, its alpha score: "
              f"{theirs2:.3f} s; ours with score='sliceline' 2-way: {ours2:.3f} s "
              f"({theirs2 / ours2:.1f}x)")


if __name__ == "__main__":
    main()
