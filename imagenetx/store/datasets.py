"""Find FiftyOne datasets by name, with errors that say what to do."""

import logging

import fiftyone as fo

from imagenetx.errors import ImageNetXError

logger = logging.getLogger(__name__)

#: the fields every FiftyOne sample has: not named when a dataset is replaced
_DEFAULT_FIELDS = {"id", "filepath", "tags", "metadata", "created_at", "last_modified_at"}


def get_dataset(dataset) -> fo.Dataset:
    """Returns a dataset given itself or its name.

    Raises:
        ImageNetXError: if no dataset has that name
    """
    if isinstance(dataset, fo.core.collections.SampleCollection):
        return dataset
    if not fo.dataset_exists(dataset):
        names = fo.list_datasets()
        listing = ", ".join(names[:10]) + (" ..." if len(names) > 10 else "")
        raise ImageNetXError(
            f"No FiftyOne dataset named '{dataset}'. Existing datasets: "
            f"{listing or 'none'}. Create one with `Benchmark.load()` or "
            "`build_demo()`, or check the name with `fiftyone datasets list`"
        )
    return fo.load_dataset(dataset)


def check_new_dataset_name(name: str, overwrite: bool) -> None:
    """Refuses to replace an existing dataset unless asked to.

    Raises:
        ImageNetXError: if ``name`` exists and ``overwrite`` is False
    """
    if fo.dataset_exists(name) and not overwrite:
        raise ImageNetXError(
            f"A dataset named '{name}' already exists: pass `overwrite=True` "
            "to replace it, or choose another `name`"
        )


def describe_dataset(name: str) -> str:
    """What an existing dataset holds, in a line: its samples and its own
    fields (a run's predictions, tags added since it was made)."""
    dataset = fo.load_dataset(name)
    fields = [f for f in dataset.get_field_schema() if f not in _DEFAULT_FIELDS]
    return (f"{len(dataset):,} samples; fields: {', '.join(fields) or 'none'}")


def replace_dataset(name: str) -> None:
    """Deletes ``name`` for its replacement, and says what it held (logged
    as a warning: the command line prints it)."""
    try:
        held = describe_dataset(name)
    except Exception as e:  # a dataset that no longer loads: --overwrite is how it is mended
        held = f"what could not be read ({type(e).__name__}: {e})"
    fo.delete_dataset(name)
    logger.warning("Replaced dataset '%s' (`overwrite=True`), which held %s", name, held)


def make_dataset(name: str, overwrite: bool) -> fo.Dataset:
    """Creates an empty persistent dataset, replacing ``name`` if asked."""
    check_new_dataset_name(name, overwrite)
    if fo.dataset_exists(name):
        replace_dataset(name)
    dataset = fo.Dataset(name)
    dataset.persistent = True
    return dataset


def mark_benchmark(dataset: fo.Dataset, benchmark: str) -> None:
    """Says which benchmark a dataset holds, in
    ``dataset.info["imagenetx"]["benchmark"]``."""
    info = dict(dataset.info.get("imagenetx") or {})
    info["benchmark"] = benchmark
    dataset.info["imagenetx"] = info
    dataset.save()


def all_slices(samples, slices=None):
    """Every sample of a collection: on a grouped dataset or view, the
    samples of all its group slices (or of the ``slices`` named), flattened
    into one view; any other collection as it is.

    FiftyOne shows a grouped collection one slice at a time: ``values()``,
    ``count()`` and ``exists()`` on it see only the active slice.
    """
    if samples.media_type != "group":
        return samples
    return samples.select_group_slices(slices, _allow_mixed=True)
