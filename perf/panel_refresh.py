"""The App panel's refresh over 50,000 samples (targets: 0.2 s warm at 30
prediction fields; 0.3 s after a write of one field at 10), run through
FiftyOne's operator execution as the App runs it, each beside baselines
measured in the same run:

-   warm: a refresh that finds the data unchanged (the columns and the
    chart are kept), beside FiftyOne's own reload of the dataset, which
    every panel event pays before the panel runs (``ctx.dataset``);
-   after a write of one field (a recorded bulk write that changes one
    prediction field, as a run does), after a new field, after a re-tag of
    one sample: only what changed is read again
    (:mod:`imagenetx.analysis.columns`), beside the same refresh with every
    kept column and result dropped first (every column read again, the
    panel before this change) and a plain ``values()`` read of the same
    columns, one list per field.

The dataset: the 50,000 validation file names (no images needed), tagged,
with ImageNet's own labels as each prediction field, as in the demo. Usage:
panel_refresh.py [--fields K [K ...]] [--indexes with|without|both]: each
number of prediction fields in turn (fields are added between them), with
the indexes the project makes (tags, slicing fields, labels), without them,
or both; three view counts (a factor, a tag, a label) show what the indexes
change.
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _env  # noqa: E402,F401

if "FIFTYONE_PLUGINS_DIR" not in os.environ:
    os.environ["FIFTYONE_PLUGINS_DIR"] = _env.temp_folder("imagenetx-bench-plugins-")

import fiftyone as fo  # noqa: E402
import fiftyone.operators as foo  # noqa: E402

from imagenetx.analysis import columns as kept_columns  # noqa: E402
from imagenetx.analysis import memo  # noqa: E402
from imagenetx.benchmarks.imagenet_x import annotations as anno  # noqa: E402
from imagenetx.app.install import PLUGIN_NAME, install_plugin  # noqa: E402
from imagenetx.store.classifications import write_classifications  # noqa: E402
from imagenetx.benchmarks.imagenet_x.tagging import tag_dataset  # noqa: E402
from imagenetx.store.indexes import added_indexes, ensure_indexes  # noqa: E402

N = 50000
REPEATS = 5
#: writes of 50,000 samples are slow: fewer of them
WRITE_REPEATS = 3


def build(k: int) -> fo.Dataset:
    ds = _env.val_names_dataset("bench-panel", N)
    tag_dataset(ds)
    add_fields(ds, 0, k)
    ds.info["imagenetx"] = {"default_correct": "real"}
    ds.save()
    return ds


def add_fields(ds, start: int, stop: int) -> None:
    """Writes the prediction fields ``labels_<start>`` .. ``labels_<stop - 1>``
    and indexes their labels, as an evaluated run of the project does."""
    ids = ds.values("id")
    labels = anno.val_labels()
    for j in range(start, stop):
        write_classifications(ds, f"labels_{j}", ids, labels[:N], confidence=[1.0] * N)
        ensure_indexes(ds, [f"labels_{j}.label"])


def refresh(ds) -> float:
    tic = time.perf_counter()
    result = foo.execute_operator(
        f"{PLUGIN_NAME}/imagenetx_panel",
        ctx={"dataset": ds.name, "params": {
            "panel_id": "bench", "__method__": "on_load", "panel_state": {}}},
    )
    seconds = time.perf_counter() - tic
    assert result.error is None, result.error_message
    return seconds


def bare_read(ds, k: int) -> float:
    tic = time.perf_counter()
    ds.values(["imagenetx.top_factor", "imagenetx.real_labels",
               "imagenetx.prototype", "ground_truth.class_index"]
              + [f"labels_{j}.class_index" for j in range(k)])
    return time.perf_counter() - tic


def queries(ds) -> float:
    """What the views filter on: a factor's images, a tag, a label's
    predictions (the median of a few counts)."""
    def once():
        tic = time.perf_counter()
        ds.match({"imagenetx.top_factor": "texture"}).count()
        ds.match_tags("x:texture").count()
        ds.match({"labels_0.label": "tench"}).count()
        return time.perf_counter() - tic
    return statistics.median(once() for _ in range(REPEATS))


def forget() -> None:
    """Drops every kept column and result: the next refresh reads all."""
    kept_columns._CACHE.clear()
    kept_columns._DERIVED.clear()
    memo._RESULTS.clear()


def reload_dataset(ds) -> float:
    """FiftyOne's reload of the dataset that each panel event starts with."""
    tic = time.perf_counter()
    fo.load_dataset(ds.name, reload=True)
    return time.perf_counter() - tic


def measure(ds, k: int, touch: int) -> dict:
    refresh(ds)  # warm: annotations parsed, plugin loaded
    warm = statistics.median(refresh(ds) for _ in range(REPEATS))
    ids = ds.values("id")
    labels = anno.val_labels()[:N]
    one_field, everything = [], []
    for i in range(WRITE_REPEATS):
        # a run writes one field again with other predictions
        shifted = (labels + 1 + i + touch) % 1000
        write_classifications(ds, f"labels_{i % k}", ids, shifted, confidence=[0.5] * N)
        one_field.append(refresh(ds))
        write_classifications(ds, f"labels_{i % k}", ids, labels, confidence=[1.0] * N)
        forget()  # the same write, every column read again
        everything.append(refresh(ds))
    added = []
    for i in range(WRITE_REPEATS):
        write_classifications(ds, f"added_{touch}_{i}", ids, labels, confidence=[1.0] * N)
        added.append(refresh(ds))
    for i in range(WRITE_REPEATS):
        ds.delete_sample_field(f"added_{touch}_{i}")
    refresh(ds)
    retag = []
    for i in range(REPEATS):
        ds[:1].tag_samples(f"touched-{touch}-{i}")
        retag.append(refresh(ds))
    return {"warm": warm,
            "reload": statistics.median(reload_dataset(ds) for _ in range(REPEATS)),
            "one_field": statistics.median(one_field),
            "everything": statistics.median(everything),
            "added": statistics.median(added),
            "retag": statistics.median(retag),
            "plain_read": statistics.median(bare_read(ds, k) for _ in range(REPEATS)),
            "queries": queries(ds)}


def drop_added(ds) -> list:
    dropped = added_indexes(ds)
    for name in dropped:
        ds.drop_index(name)
    return dropped


def main():
    global N
    parser = argparse.ArgumentParser()
    parser.add_argument("--fields", type=int, nargs="+", default=[1],
                        help="numbers of prediction fields, measured in turn (e.g. 1 10 30)")
    parser.add_argument("--indexes", choices=["with", "without", "both"], default="with")
    parser.add_argument("--samples", type=int, default=N,
                        help="the first this many validation images (a quick check)")
    args = parser.parse_args()
    N = args.samples
    _env.drop_database_at_exit()
    install_plugin()
    counts = sorted(args.fields)
    ds = build(counts[0])
    rows, have = [], counts[0]
    for k in counts:
        add_fields(ds, have, k)
        have = k
        modes = ["with", "without"] if args.indexes == "both" else [args.indexes]
        for mode in modes:
            dropped = drop_added(ds) if mode == "without" else []
            rows.append((k, mode, measure(ds, k, len(rows))))
            print(k, mode, {n: round(v, 3) for n, v in rows[-1][2].items()}, flush=True)
            ensure_indexes(ds, dropped)
    print(f"panel refresh, {N:,} samples, ReaL correctness, bootstrap intervals "
          f"(median of {REPEATS}, of {WRITE_REPEATS} after writes; all columns in the same run)")
    print("  warm: nothing changed | FiftyOne reload: the dataset reload every panel "
          "event starts with\n  one field: after a run wrote one field again | all "
          "re-read: the same, every kept column dropped first (before this change)\n"
          "  new field: after a run added one | re-tag: after one sample's tags "
          "changed | plain read: values() of the columns")
    print(f"{'fields':>6} {'indexes':>8} {'warm':>7} {'reload':>7} {'one field':>10} "
          f"{'all re-read':>12} {'new field':>10} {'re-tag':>7} {'plain read':>11} "
          f"{'3 view counts':>14}")
    for k, mode, m in rows:
        print(f"{k:>6} {mode:>8} {m['warm']:>6.2f}s {m['reload']:>6.2f}s "
              f"{m['one_field']:>9.2f}s {m['everything']:>11.2f}s {m['added']:>9.2f}s "
              f"{m['retag']:>6.2f}s {m['plain_read']:>10.2f}s {m['queries']:>13.3f}s")
    for k, mode, m in rows:
        print(f"{k} field(s), {mode} indexes: after a write of one field, "
              f"{m['everything'] / m['one_field']:.1f}x faster than reading all again "
              f"({m['plain_read'] / m['one_field']:.1f}x than a plain read); warm "
              f"refresh {m['warm'] / m['reload']:.1f}x FiftyOne's reload")


if __name__ == "__main__":
    main()
