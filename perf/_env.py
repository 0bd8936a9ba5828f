"""Shared setup for the benchmarks: a private database, dropped at exit."""

import atexit
import os
import tempfile
import uuid

os.environ.setdefault("FIFTYONE_DATABASE_NAME", f"imagenetx-bench-{uuid.uuid4().hex[:6]}")
os.environ.setdefault("FIFTYONE_DO_NOT_TRACK", "true")
os.environ.setdefault("FIFTYONE_DATABASE_VALIDATION", "false")
os.environ.setdefault("FIFTYONE_SHOW_PROGRESS_BARS", "false")
os.environ.setdefault("FIFTYONE_DEFAULT_DATASET_DIR", tempfile.mkdtemp(prefix="imagenetx-bench-"))


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
