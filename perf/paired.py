"""Paired scores over 12 variants x 5,000 groups x 3 models (target: under
1 s warm), against a per-variant pandas computation in the same run.

The dataset is an ImageNet-E-shaped grouped dataset of 60,000 samples
(5,000 groups: ``ori`` and 11 edits, under the first 5,000 val file names,
so ImageNet-X factors attach) with three synthetic prediction fields; no
image is needed to score predictions.

Timed, each warm (imports done and a first call made), best of
``--repeats``:

-   ``paired_scores(..., by_factor=True)`` with its caches cleared (the
    column cache and the interval cache): one query reads every field,
    then per model the 11 slices and 11 x 16 factor rows, each with
    McNemar's exact test and a 1,000-resample paired bootstrap interval
-   the same call again, the columns served from the cache (the panel's
    repeated refresh)
-   the baseline: one ``values()`` read into a pandas DataFrame, then per
    model and variant a merge of the originals with the edits on the
    group id, top-1 / drop / flips, scipy's exact binomial test, a
    1,000-resample bootstrap over the merged groups (resampling indices) of
    the drop, and the drop per factor by ``explode`` and ``groupby``
    (without intervals: the baseline computes less)

Usage: paired.py [--groups 5000] [--repeats 3]
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _env  # noqa: E402,F401

import fiftyone as fo  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from bson import ObjectId  # noqa: E402
from scipy import stats  # noqa: E402

from imagenetx.analysis import columns  # noqa: E402
from imagenetx.analysis.paired import paired_scores  # noqa: E402
from imagenetx.benchmarks.imagenet_e.contract import VARIANTS  # noqa: E402
from imagenetx.benchmarks.imagenet_x.tagging import tag_dataset  # noqa: E402
from imagenetx.classes.imagenet import class_table  # noqa: E402
from imagenetx.metrics.paired import drop_interval  # noqa: E402
from imagenetx.store.bulk import chunked, write_raw  # noqa: E402
from imagenetx.store.datasets import all_slices  # noqa: E402
from imagenetx.store.schema import declare_classification, raw_classification  # noqa: E402

FIELDS = ("model_a", "model_b", "model_c")


def build(name: str, groups: int, seed: int = 0) -> fo.Dataset:
    """The grouped dataset, its ground truth from ImageNet-X's annotations
    and three prediction fields: originals right 75-85% of the time, each
    edit breaking some of them."""
    if fo.dataset_exists(name):
        fo.delete_dataset(name)
    ds = fo.Dataset(name)
    ds.add_group_field("group", default="ori")

    def samples():
        # a generator: samples kept in memory would each be reloaded after
        # every bulk write
        for i in range(1, groups + 1):
            g = fo.Group()
            for v in VARIANTS:
                ext = "JPEG" if v.folder == "ori" else "png"
                yield fo.Sample(filepath=f"/data/imagenet-e/{v.folder}/"
                                         f"ILSVRC2012_val_{i:08d}.{ext}",
                                group=g.element(v.folder), edit=v.edit,
                                edit_level=v.level)

    ds.add_samples(samples(), num_samples=groups * len(VARIANTS), progress=False)
    tag_dataset(all_slices(ds), by_stem=True)  # ground truth + factors
    truth = all_slices(ds).values("ground_truth.class_index")
    slice_of = np.array(all_slices(ds).values("group.name"))
    ids = all_slices(ds).values("id")
    labels = class_table().labels
    rng = np.random.default_rng(seed)
    # val images ImageNet-X leaves out: a class of their own, the same per group
    group_of = all_slices(ds).values("group.id")
    filled = {g: int(rng.integers(1000)) for g, t in zip(group_of, truth) if t is None}
    missing = [i for i, t in enumerate(truth) if t is None]
    truth = np.array([filled[g] if t is None else t for g, t in zip(group_of, truth)])
    write_raw(ds, map(lambda chunk: {ObjectId(ids[i]): {"ground_truth": raw_classification(
        labels[truth[i]], int(truth[i]))} for i in chunk}, chunked(missing)))
    keep = {v.folder: 1.0 - 0.02 * k for k, v in enumerate(VARIANTS)}
    for m, field in enumerate(FIELDS):
        declare_classification(ds, field)
        right = rng.random(len(ids)) < (0.85 - 0.05 * m) * np.array(
            [keep[s] for s in slice_of])
        pred = np.where(right, truth, (truth + rng.integers(1, 1000, len(ids))) % 1000)

        def batch(chunk, pred=pred, field=field):
            return {ObjectId(ids[i]): {field: raw_classification(labels[pred[i]],
                                                                 int(pred[i]))}
                    for i in chunk}

        write_raw(ds, map(batch, chunked(list(range(len(ids))))))
    return ds


def baseline(ds) -> dict:
    """Per model and variant with pandas (see the module docstring)."""
    flat = all_slices(ds)
    cols = flat.values(["group._id", "group.name", "ground_truth.class_index",
                        "imagenetx.factors", *(f"{f}.class_index" for f in FIELDS)])
    df = pd.DataFrame(dict(zip(["group", "slice", "truth", "factors", *FIELDS], cols)))
    df["group"] = df["group"].astype(str)
    ori = df[df.slice == "ori"]
    out = {}
    rng = np.random.default_rng(0)
    for field in FIELDS:
        for variant in [v.folder for v in VARIANTS[1:]]:
            edit = df[df.slice == variant]
            m = ori.merge(edit, on="group", suffixes=("_o", "_e"))
            m = m[m[f"{field}_o"].notna() & m[f"{field}_e"].notna()]
            ro = m[f"{field}_o"] == m["truth_o"]
            re = m[f"{field}_e"] == m["truth_o"]
            broken, fixed = int((ro & ~re).sum()), int((~ro & re).sum())
            p = stats.binomtest(min(broken, fixed), broken + fixed).pvalue
            diff = (ro.astype(int) - re.astype(int)).to_numpy()
            draws = rng.integers(0, len(diff), (1000, len(diff)))
            ci = np.quantile(diff[draws].mean(axis=1), [0.025, 0.975])
            m = m.assign(diff=diff, flip=(m[f"{field}_o"] != m[f"{field}_e"]))
            per_factor = m.explode("factors_o").groupby("factors_o")["diff"].mean()
            out[(field, variant)] = (ro.mean(), re.mean(), diff.mean(), m.flip.mean(),
                                     p, ci, per_factor)
    return out


def best(fn, repeats: int, before=None) -> float:
    if before:
        before()
    fn()  # warm
    times = []
    for _ in range(repeats):
        if before:
            before()
        tic = time.perf_counter()
        fn()
        times.append(time.perf_counter() - tic)
    return min(times)


def clear_caches():
    columns._CACHE.clear()
    drop_interval.cache_clear()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--groups", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    _env.drop_database_at_exit()

    tic = time.perf_counter()
    ds = build("perf-paired", args.groups)
    print(f"built {len(all_slices(ds)):,} samples ({args.groups:,} groups x "
          f"{len(VARIANTS)} slices, {len(FIELDS)} models) in "
          f"{time.perf_counter() - tic:.1f} s")

    def ours():
        return paired_scores(ds, FIELDS, by_factor=True)

    # the two agree on what both compute
    result, base = ours().to_dict(), baseline(ds)
    for (field, variant), (o, e, drop, flips, p, ci, per_factor) in base.items():
        row = result["models"][field]["slices"][variant]
        assert np.allclose([row["top1_original"], row["top1"], row["drop"],
                            row["flip_rate"], row["p"]], [o, e, drop, flips, p])
        tol = 0.5 / np.sqrt(args.groups)  # two bootstraps: Monte Carlo error
        assert abs(row["ci_low"] - ci[0]) < tol and abs(row["ci_high"] - ci[1]) < tol
        for factor, d in per_factor.items():
            assert np.isclose(result["models"][field]["factors"][variant][factor]["drop"], d)

    cold = best(ours, args.repeats, before=clear_caches)
    cached = best(ours, args.repeats)
    slow = best(lambda: baseline(ds), args.repeats)
    rows = len(FIELDS) * (len(VARIANTS) - 1) * 17
    print(f"paired_scores, caches cleared:   {cold:.3f} s ({rows} rows with intervals)")
    print(f"paired_scores, columns cached:   {cached:.3f} s")
    print(f"pandas per variant (baseline):   {slow:.3f} s "
          f"({len(FIELDS) * (len(VARIANTS) - 1)} intervals, factor drops without)")
    print(f"ratio baseline / ours: {slow / cold:.1f}x (caches cleared), "
          f"{slow / cached:.1f}x (cached)")


if __name__ == "__main__":
    main()
