"""Shared setup for the benchmarks: a private database and private temporary
folders, all removed at exit (a benchmark run leaves nothing on the disk)."""

import atexit
import os
import shutil
import tempfile
import uuid


def temp_folder(prefix: str) -> str:
    """A new temporary folder, removed with everything in it when the script
    exits."""
    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


os.environ.setdefault("FIFTYONE_DATABASE_NAME", f"imagenetx-bench-{uuid.uuid4().hex[:6]}")
os.environ.setdefault("FIFTYONE_DO_NOT_TRACK", "true")
os.environ.setdefault("FIFTYONE_DATABASE_VALIDATION", "false")
os.environ.setdefault("FIFTYONE_SHOW_PROGRESS_BARS", "false")
if "FIFTYONE_DEFAULT_DATASET_DIR" not in os.environ:
    os.environ["FIFTYONE_DEFAULT_DATASET_DIR"] = temp_folder("imagenetx-bench-")


def drop_database_at_exit():
    import fiftyone as fo
    import fiftyone.core.odm as foo

    atexit.register(lambda: foo.get_db_client().drop_database(fo.config.database_name))


def val_names_dataset(name: str, n: int = 50000):
    """A fresh dataset of the first ``n`` validation file names; no images
    are needed to tag, import or score them."""
    import fiftyone as fo

    if fo.dataset_exists(name):
        fo.delete_dataset(name)
    ds = fo.Dataset(name)
    ds.add_samples(
        fo.Sample(filepath=f"/data/val/ILSVRC2012_val_{i:08d}.JPEG")
        for i in range(1, n + 1)
    )
    return ds


#: the shipped ResNet50 and DINO predictions (the toolkit's CSVs)
PREDICTIONS = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    "shared", "data", "imagenetx", "predictions")


def read_toolkit_csv(path: str) -> dict:
    """{file name: (class, probability)}, in the file's row order."""
    import csv

    with open(path, newline="") as f:
        return {r["file_name"]: (int(r["predicted_class"]), float(r["predicted_probability"]))
                for r in csv.DictReader(f)}


def four_prediction_fields(ds, ids: list, names: list) -> tuple:
    """Writes ResNet50, DINO and a perturbed copy of each (5% of the
    predictions changed, seeded) onto ``ds``, and the same 4 as toolkit CSVs
    in a temporary folder (in the toolkit's row order, that of its
    ``filename_label.csv``, which the shipped CSVs follow).

    Returns:
        ``(fields, csv folder)``
    """
    import csv

    import numpy as np

    from imagenetx.store.classifications import write_classifications

    csv_dir = temp_folder("imagenetx-bench-preds-")
    rng = np.random.default_rng(0)
    fields = []
    for model in ("ResNet50", "DINO"):
        preds = read_toolkit_csv(os.path.join(PREDICTIONS, f"{model}.csv"))
        classes = np.array([preds[n][0] for n in names])
        conf = np.array([preds[n][1] for n in names])
        flip = rng.random(len(classes)) < 0.05
        perturbed = np.where(flip, rng.integers(0, 1000, len(classes)), classes)
        for field, values in ((model, classes), (f"{model}_perturbed", perturbed)):
            write_classifications(ds, field, ids, values, confidence=conf.tolist())
            row = {n: (v, c) for n, v, c in zip(names, values.tolist(), conf.tolist())}
            with open(os.path.join(csv_dir, f"{field}.csv"), "w", newline="") as f:
                w = csv.writer(f)
                w.writerow(["file_name", "predicted_class", "predicted_probability"])
                w.writerows((n, *row[n]) for n in preds)
            fields.append(field)
    return fields, csv_dir
