"""The App panel's refresh over 50,000 samples (target: 0.2 s or less), run
through FiftyOne's operator execution as the App runs it, beside a plain
``values()`` read of the same columns, one list per field, in the same
run: what a panel built the obvious way pays before computing anything.

A refresh that finds the data unchanged reuses the columns read last time
(:mod:`imagenetx.analysis.columns`); the first refresh after a write reads
them again: both are printed.

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
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _env  # noqa: E402,F401

os.environ.setdefault("FIFTYONE_PLUGINS_DIR", tempfile.mkdtemp(prefix="imagenetx-bench-plugins-"))

import fiftyone as fo  # noqa: E402
import fiftyone.operators as foo  # noqa: E402

from imagenetx.benchmarks.imagenet_x import annotations as anno  # noqa: E402
from imagenetx.app.install import PLUGIN_NAME, install_plugin  # noqa: E402
from imagenetx.store.classifications import write_classifications  # noqa: E402
from imagenetx.benchmarks.imagenet_x.tagging import tag_dataset  # noqa: E402
from imagenetx.store.indexes import added_indexes, ensure_indexes  # noqa: E402

N = 50000
REPEATS = 5


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
        write_classifications(ds, f"labels_{j}", ids, labels, confidence=[1.0] * N)
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


def measure(ds, k: int, touch: int) -> dict:
    refresh(ds)  # warm: annotations parsed, plugin loaded
    warm = statistics.median(refresh(ds) for _ in range(REPEATS))
    cold = []  # after a write the columns are read again from the database
    for i in range(REPEATS):
        ds[:1].tag_samples(f"touched-{touch}-{i}")
        cold.append(refresh(ds))
    return {"warm": warm, "after_write": statistics.median(cold),
            "plain_read": statistics.median(bare_read(ds, k) for _ in range(REPEATS)),
            "queries": queries(ds)}


def drop_added(ds) -> list:
    dropped = added_indexes(ds)
    for name in dropped:
        ds.drop_index(name)
    return dropped


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fields", type=int, nargs="+", default=[1],
                        help="numbers of prediction fields, measured in turn (e.g. 1 10 30)")
    parser.add_argument("--indexes", choices=["with", "without", "both"], default="with")
    args = parser.parse_args()
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
            ensure_indexes(ds, dropped)
    print(f"panel refresh, {N:,} samples, ReaL correctness, bootstrap intervals "
          f"(median of {REPEATS}; plain read: values() of the same columns, one list per "
          "field, the same run)")
    print(f"{'fields':>6} {'indexes':>8} {'warm':>7} {'after write':>12} {'plain read':>11} "
          f"{'3 view counts':>14}")
    for k, mode, m in rows:
        print(f"{k:>6} {mode:>8} {m['warm']:>6.2f}s {m['after_write']:>11.2f}s "
              f"{m['plain_read']:>10.2f}s {m['queries']:>13.3f}s")
    for k, mode, m in rows:
        print(f"{k} field(s), {mode} indexes: plain read / warm refresh "
              f"{m['plain_read'] / m['warm']:.1f}x, after write / plain read "
              f"{m['after_write'] / m['plain_read']:.2f}x")


if __name__ == "__main__":
    main()
