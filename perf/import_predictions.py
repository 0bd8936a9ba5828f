"""Importing 50,000 predictions onto a 50,000-sample dataset (target: under
3 s), from the toolkit's CSV and from a testbed logits pickle.

Baselines in the same run: reading the same CSV and writing it with
FiftyOne's ``set_values()`` of ``fo.Classification`` objects, and a
per-sample ``sample.save()`` loop (on --baseline-n samples, scaled).

Uses ../shared/data/imagenetx/predictions/ResNet50.csv when present, else
a CSV of random predictions in the same format. Usage:
import_predictions.py [--baseline-n N]
"""

import argparse
import csv
import os
import pickle
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _env  # noqa: E402,F401

import fiftyone as fo  # noqa: E402
import numpy as np  # noqa: E402

from imagenetx.classes.imagenet import class_table  # noqa: E402
from imagenetx.models.prediction_files import _val_order, import_predictions  # noqa: E402

N = 50000
SHARED_CSV = (Path(__file__).resolve().parents[2] / "shared" / "data"
              / "imagenetx" / "predictions" / "ResNet50.csv")


def prediction_files(folder: Path):
    """(csv path, pickle path) of the same 50,000 predictions."""
    order = _val_order("toolkit")
    if SHARED_CSV.is_file():
        csv_path = SHARED_CSV
        with open(csv_path, newline="") as f:
            rows = {r["file_name"]: (int(r["predicted_class"]),
                                     float(r["predicted_probability"]))
                    for r in csv.DictReader(f)}
        classes = np.array([rows[n][0] for n in order])
    else:
        rng = np.random.default_rng(0)
        classes = rng.integers(0, 1000, N)
        csv_path = folder / "random.csv"
        with open(csv_path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["file_name", "predicted_class", "predicted_probability"])
            w.writerows(zip(order, classes.tolist(), rng.random(N).tolist()))
    logits = np.random.default_rng(1).normal(size=(N, 1000)).astype(np.float32)
    logits[np.arange(N), classes] += 8
    pickle_path = folder / "testbed.pickle"
    with open(pickle_path, "wb") as f:
        pickle.dump({"model": "bench", "logits": logits}, f, protocol=4)
    return csv_path, pickle_path


def read_csv_rows(path):
    with open(path, newline="") as f:
        return {r["file_name"]: (int(r["predicted_class"]),
                                 float(r["predicted_probability"]))
                for r in csv.DictReader(f)}


def set_values_baseline(ds, path, field):
    """The idiomatic FiftyOne way: fo.Classification objects, set_values."""
    rows = read_csv_rows(path)
    names = class_table().labels
    labels = []
    for filepath in ds.values("filepath"):
        row = rows.get(os.path.basename(filepath))
        labels.append(None if row is None else fo.Classification(
            label=names[row[0]], confidence=row[1], class_index=row[0]))
    ds.set_values(field, labels)


def save_loop(ds, path, field, limit):
    """A per-sample script: set the field, save, next."""
    rows = read_csv_rows(path)
    labels = class_table().labels
    for sample in ds.limit(limit).iter_samples(autosave=False):
        row = rows.get(os.path.basename(sample.filepath))
        if row is not None:
            sample[field] = fo.Classification(
                label=labels[row[0]], confidence=row[1], class_index=row[0])
            sample.save()


def timed(fn, *args, **kwargs):
    t = time.perf_counter()
    result = fn(*args, **kwargs)
    return time.perf_counter() - t, result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline-n", type=int, default=5000,
                        help="samples the save loop runs over (then scaled)")
    args = parser.parse_args()
    _env.drop_database_at_exit()
    folder = Path(tempfile.mkdtemp(prefix="imagenetx-bench-preds-"))
    try:
        run(folder, args.baseline_n)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run(folder: Path, baseline_n: int):
    csv_path, pickle_path = prediction_files(folder)
    class_table()

    ds = _env.val_names_dataset("bench-import")
    time.sleep(2)  # let the database settle after the inserts
    csv_s, summary = timed(import_predictions, ds, csv_path, "from_csv")
    print(summary)
    csv2_s, _ = timed(import_predictions, ds, csv_path, "from_csv",
                      overwrite=True)
    pkl_s, summary = timed(import_predictions, ds, pickle_path, "from_pickle")
    print(summary)

    base = _env.val_names_dataset("bench-set-values")
    time.sleep(2)
    sv_s, _ = timed(set_values_baseline, base, csv_path, "preds")
    loop_n = min(baseline_n, N)
    loop_s, _ = timed(save_loop, base, csv_path, "loop_preds", loop_n)
    loop_s *= N / loop_n
    assert base.values("preds.class_index") == ds.values("from_csv.class_index")

    scaled = "" if loop_n == N else f" (measured on {loop_n:,}, scaled)"
    print(f"import_predictions, CSV, 50,000 rows (first run):         {csv_s:.2f} s")
    print(f"import_predictions, CSV, 50,000 rows (--overwrite rerun): {csv2_s:.2f} s")
    print(f"import_predictions, logits pickle 50,000 x 1000:          {pkl_s:.2f} s")
    print(f"baseline: csv.DictReader + fo.Classification + set_values: {sv_s:.2f} s")
    print(f"baseline: per-sample sample.save() loop{scaled}: {loop_s:.1f} s")
    print(f"ratio set_values / import_predictions (CSV): {sv_s / csv_s:.1f}x; "
          f"save-loop / import_predictions (CSV): {loop_s / csv_s:.0f}x")
    print(f"target < 3 s: CSV {'met' if csv_s < 3 else 'NOT met'}, pickle "
          f"{'met' if pkl_s < 3 else 'NOT met'}")


if __name__ == "__main__":
    main()
