"""The App panel's refresh over 50,000 samples (target: 0.2 s or less), run
through FiftyOne's operator execution as the App runs it, beside a plain
``values()`` read of the same columns, one list per field, in the same
run: what a panel built the obvious way pays before computing anything.

A refresh that finds the data unchanged reuses the columns read last time
(:mod:`imagenetx.analysis.columns`); the first refresh after a write reads
them again: both are printed.

The dataset: the 50,000 validation file names (no images needed), tagged,
with ImageNet's own labels as the prediction field, as in the demo. Usage:
panel_refresh.py [--fields K] (K prediction fields, 1 by default).
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
from imagenetx.plugin import PLUGIN_NAME, install_plugin  # noqa: E402
from imagenetx.store.classifications import write_classifications  # noqa: E402
from imagenetx.benchmarks.imagenet_x.tagging import tag_dataset  # noqa: E402

N = 50000
REPEATS = 5


def build(k: int) -> fo.Dataset:
    ds = _env.val_names_dataset("bench-panel", N)
    tag_dataset(ds)
    ids = ds.values("id")
    labels = anno.val_labels()
    for j in range(k):
        write_classifications(ds, f"labels_{j}", ids, labels, confidence=[1.0] * N)
    ds.info["imagenetx"] = {"default_correct": "real"}
    ds.save()
    return ds


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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fields", type=int, default=1)
    args = parser.parse_args()
    _env.drop_database_at_exit()
    install_plugin()
    ds = build(args.fields)
    refresh(ds)  # warm: annotations parsed, plugin loaded
    panel = statistics.median(refresh(ds) for _ in range(REPEATS))
    # after a write the columns are read again from the database
    cold = []
    for i in range(REPEATS):
        ds[:1].tag_samples(f"touched-{i}")
        cold.append(refresh(ds))
    cold = statistics.median(cold)
    floor = statistics.median(bare_read(ds, args.fields) for _ in range(REPEATS))
    print(f"panel refresh, {N:,} samples, {args.fields} prediction field(s), "
          f"ReaL correctness, bootstrap intervals: {panel:.2f} s (median of {REPEATS})")
    print(f"same, first refresh after a write (columns read from the database): "
          f"{cold:.2f} s (median of {REPEATS})")
    print(f"plain values() of the same columns, one list per field: {floor:.2f} s")
    print(f"ratio plain read / panel refresh: {floor / panel:.1f}x  "
          f"target <= 0.2 s: {'met' if panel <= 0.2 else 'NOT met'}")


if __name__ == "__main__":
    main()
