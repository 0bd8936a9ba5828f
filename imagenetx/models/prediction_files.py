"""Import a model's ImageNet predictions from a file onto a dataset.

Two file formats are read, the two that the original ``imagenet_x`` toolkit
reads (``imagenet_x.utils.load_model_predictions``):

-   its CSV: one row per image with the columns ``file_name``,
    ``predicted_class`` (0-999) and ``predicted_probability``; other
    columns are ignored
-   an ImageNet-testbed pickle: a dict ``{"model": name, "logits": N x 1000
    array}``. The predicted class is the argmax of each row and the
    confidence its softmax probability. The rows carry no file names: the
    toolkit pairs row ``k`` with row ``k`` of its ``filename_label.csv``,
    i.e. the 50,000 validation images in ``ImageFolder`` order (sorted by
    class WordNet id, then by file name), and so does ``row_order=
    "toolkit"`` here. ``row_order="val"`` reads the rows in file-number
    order instead (row ``k`` is ``ILSVRC2012_val_{k+1:08d}.JPEG``). A
    pickle may also carry ``"file_names"``: a list of N image file names,
    which then decides the pairing.

Predictions become a ``fo.Classification`` per sample (``label``: the
class's unique label, ``confidence``, ``class_index``), matched by image
file name and written in bulk. Every check happens before the first write,
so a refused file leaves the dataset as it was. The import claims the field
as a run does (:mod:`imagenetx.store.claims`): into a field a run or another
import is writing it is refused in one line, and a run started on a field
being imported is refused.
"""

import csv
import functools
import os
import pickle
from dataclasses import dataclass, field as dc_field

import numpy as np

from imagenetx.errors import ImageNetXError
from imagenetx.classes.imagenet import NUM_CLASSES, annotation_file
from imagenetx.options import ROW_ORDERS

#: the columns of the original toolkit's prediction CSV
CSV_COLUMNS = ("file_name", "predicted_class", "predicted_probability")


NUM_VAL = 50000

PICKLE_EXTENSIONS = (".pickle", ".pkl")

_LOGITS_CHUNK = 8192


@dataclass
class Predictions:
    """One prediction per image file, as read from a file.

    Attributes:
        model: the model name (the pickle's ``"model"``, else the file stem)
        format: ``"csv"`` or ``"pickle"``
        file_names: the image file names (base names), one per row
        class_index: int array of predicted classes, 0-999
        confidence: float array of the predicted class's probability
    """

    model: str
    format: str
    file_names: list
    class_index: np.ndarray
    confidence: np.ndarray

    def __len__(self):
        return len(self.file_names)


@dataclass
class ImportSummary:
    """What :func:`import_predictions` read and wrote."""

    dataset: str
    field: str
    path: str
    format: str
    model: str
    rows: int
    samples: int
    samples_written: int
    rows_not_in_dataset: int
    samples_without_row: int
    replaced: bool = False
    cleared: int = 0
    #: a few file names of rows that match no sample
    missing_examples: list = dc_field(default_factory=list)
    #: fraction of the written val predictions equal to ImageNet's own
    #: label (None when no val file name was written): a row order check
    imagenet_agreement: float = None
    #: the line saying whose stale claim of the field this import took over
    took_over: str = None

    def __str__(self):
        text = (
            f"Imported {self.rows:,} predictions of '{self.model}' "
            f"({self.format}) from '{self.path}' into field '{self.field}' "
            f"of dataset '{self.dataset}': {self.samples_written:,} of "
            f"{self.samples:,} samples written, {self.samples_without_row:,} "
            f"samples without a prediction; {self.rows_not_in_dataset:,} "
            "rows for files not in the dataset"
        )
        if self.missing_examples:
            text += f" (e.g. {', '.join(self.missing_examples)})"
        if self.replaced:
            text += (
                f"; replaced the field's previous values ({self.cleared:,} "
                "samples without a row cleared)"
            )
        if self.imagenet_agreement is not None:
            text += (
                f"; {self.imagenet_agreement:.1%} agree with ImageNet's own "
                "labels"
            )
            if self.format == "pickle" and self.imagenet_agreement < 0.05:
                text += (
                    " (very low: if the pickle's rows follow file-number "
                    "order, import again with `row_order=val` and `overwrite=True`)"
                )
        return text if self.took_over is None else f"{self.took_over}\n{text}"


def read_predictions(path, row_order: str = "toolkit") -> Predictions:
    """Reads a prediction file: the toolkit's CSV or a testbed pickle.

    The format follows the extension (``.pickle``/``.pkl`` are pickles,
    anything else is sniffed: a pickle starts with byte 0x80).

    Args:
        path: the file
        row_order ("toolkit"): for pickles without ``"file_names"``: how
            rows map to validation images, ``"toolkit"`` or ``"val"`` (see
            the module docstring)

    Returns:
        a :class:`Predictions`

    Raises:
        ImageNetXError: if the file is missing, unreadable, or holds wrong
            columns, shapes, class ids or probabilities
    """
    path = os.fspath(path)
    if row_order not in ROW_ORDERS:
        raise ImageNetXError(
            f"Unknown row order '{row_order}': use one of "
            f"{', '.join(ROW_ORDERS)}"
        )
    if not os.path.exists(path):
        raise ImageNetXError(
            f"Prediction file '{path}' does not exist: check the path "
            "(a CSV with columns file_name,predicted_class,"
            "predicted_probability, or a logits pickle)"
        )
    if os.path.isdir(path):
        raise ImageNetXError(
            f"Prediction file '{path}' is a folder: pass one CSV or pickle "
            "file"
        )
    try:
        with open(path, "rb") as f:
            head = f.read(1)
    except OSError as e:
        raise ImageNetXError(
            f"Cannot read prediction file '{path}': {e.strerror or e}; check "
            "its permissions"
        ) from e
    if path.lower().endswith(PICKLE_EXTENSIONS) or head == b"\x80":
        return _read_pickle(path, row_order)
    return _read_csv(path)


def import_predictions(
    samples,
    path,
    field: str,
    overwrite: bool = False,
    row_order: str = "toolkit",
    gt_field: str = "ground_truth",
) -> ImportSummary:
    """Writes a prediction file onto a dataset as a ``fo.Classification``.

    Samples are matched to rows by image file name (the base name of
    ``filepath`` and of the file's ``file_name``). Matched samples get
    ``label`` (the class's unique label), ``confidence`` and
    ``class_index``. Rows whose file is not in the dataset, and samples
    without a row, are counted in the summary.

    An existing ``fo.Classification`` field is replaced only with
    ``overwrite=True``: then it holds exactly the file's predictions
    afterwards, and samples without a row lose their previous value.

    Args:
        samples: a dataset, a view, or a dataset name; with a view only its
            samples are matched and written
        path: a CSV or pickle file (see :func:`read_predictions`)
        field: the prediction field to write, a top-level name
        overwrite (False): whether to replace an existing field
        row_order ("toolkit"): see :func:`read_predictions`
        gt_field ("ground_truth"): the ground truth field, which is never
            overwritten

    Returns:
        an :class:`ImportSummary`

    Raises:
        ImageNetXError: before anything is written, for a bad file (see
            :func:`read_predictions`), an unknown dataset, an invalid field
            name, an existing field that is not a ``fo.Classification``, an
            existing one without ``overwrite``, a file none of whose file
            names is in the dataset, or a field another run is writing
    """
    # the file first: a bad one is refused without loading FiftyOne
    predictions = read_predictions(path, row_order)

    from imagenetx.store.bulk import chunked, write_raw  # lazy: start-up
    from imagenetx.store.claims import claim_field  # lazy: start-up
    from imagenetx.store.datasets import get_dataset  # lazy: start-up
    from imagenetx.store.schema import eval_key_of  # lazy: start-up
    from imagenetx.store.classifications import write_classifications  # lazy: start-up

    samples = get_dataset(samples)
    dataset = samples._dataset
    # one writer per field: a run or another import writing it refuses this one
    with claim_field(dataset, field, f"import of '{os.path.basename(path)}'") as claim:
        replaced = _check_field(dataset, field, overwrite, gt_field)

        # one query for ids and paths (values() would decode each field apart)
        docs = list(samples._aggregate(pipeline=[{"$project": {"filepath": 1}}]))
        ids = [d["_id"] for d in docs]
        names = [_basename(d["filepath"]) for d in docs]
        row_of = {name: row for row, name in enumerate(predictions.file_names)}
        rows = [row_of.get(name) for name in names]
        matched = [i for i, row in enumerate(rows) if row is not None]
        without = [i for i, row in enumerate(rows) if row is None]
        present = set(names)
        missing = [n for n in predictions.file_names if n not in present]
        if not matched:
            shown = ", ".join(sorted(present)[:3]) or "(none: the dataset is empty)"
            raise ImageNetXError(
                f"None of the {len(predictions):,} file names in '{os.fspath(path)}' is in "
                f"dataset '{dataset.name}' (the file's look like "
                f"{', '.join(predictions.file_names[:2])}; the dataset's look like {shown}): "
                "import the predictions of this dataset's images, or pick the dataset they "
                "were made on")

        cleared = []
        if replaced and without:
            with_value = set(samples.exists(field).values("_id", _raw=True))
            cleared = [ids[i] for i in without if ids[i] in with_value]

        def clears():
            for chunk in chunked(cleared):
                yield {sample_id: {field: None} for sample_id in chunk}

        selected = [rows[i] for i in matched]
        claim.check()  # still this import's (the file was read meanwhile)
        write_classifications(
            dataset,
            field,
            [ids[i] for i in matched],
            predictions.class_index[selected].tolist(),
            confidence=predictions.confidence[selected].tolist(),
        )
        written = len(matched)
        write_raw(dataset, clears())
        key = eval_key_of(field)
        if replaced and dataset.has_evaluation(key):
            dataset.delete_evaluation(key)  # it scored the old predictions

    return ImportSummary(
        dataset=dataset.name,
        field=field,
        path=os.fspath(path),
        format=predictions.format,
        model=predictions.model,
        rows=len(predictions),
        samples=len(ids),
        samples_written=written,
        rows_not_in_dataset=len(missing),
        samples_without_row=len(without),
        replaced=replaced,
        cleared=len(cleared),
        missing_examples=missing[:3],
        imagenet_agreement=_agreement(predictions, {names[i] for i in matched}),
        took_over=claim.took_over,
    )


def _basename(path: str) -> str:
    """The file name of a path, with ``/`` or ``\\`` separators."""
    return path.rsplit("/", 1)[-1].rsplit("\\", 1)[-1]


def _check_field(dataset, field: str, overwrite: bool, gt_field: str) -> bool:
    """Checks the target field; returns whether an existing one is replaced."""
    from imagenetx.store.schema import check_prediction_field  # lazy: start-up

    if not check_prediction_field(dataset, field, gt_field):
        return False
    if not overwrite:
        raise ImageNetXError(
            f"Field '{field}' of dataset '{dataset.name}' already holds "
            "classifications: pass `overwrite=True` to replace "
            "them, or choose another `field`"
        )
    return True


def _agreement(predictions: Predictions, written: set):
    """Fraction of written val predictions equal to ImageNet's label."""
    from imagenetx.benchmarks.imagenet_x import annotations as anno  # lazy: start-up

    rows = [
        (row, anno.val_number(name))
        for row, name in enumerate(predictions.file_names)
        if name in written and anno.VAL_FILE_RE.match(name)
    ]
    if not rows:
        return None
    labels = anno.val_labels()
    pred_rows, numbers = np.array(rows).T
    return float(
        (predictions.class_index[pred_rows] == labels[numbers - 1]).mean()
    )


# --------------------------------------------------------------------- CSV


def _read_csv(path: str) -> Predictions:
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            lines = list(csv.reader(f))
    except (UnicodeDecodeError, csv.Error) as e:
        raise ImageNetXError(
            f"Cannot read prediction file '{path}' as CSV: {e}; expected a "
            "text CSV with columns file_name,predicted_class,"
            "predicted_probability or a logits pickle (.pickle)"
        ) from e
    except OSError as e:
        raise ImageNetXError(
            f"Cannot read prediction file '{path}': {e.strerror or e}; check "
            "its permissions"
        ) from e

    if not lines:
        raise ImageNetXError(
            f"Prediction file '{path}' is empty: expected a header "
            "file_name,predicted_class,predicted_probability and one row "
            "per image"
        )
    header = [h.strip() for h in lines[0]]
    absent = [c for c in CSV_COLUMNS if c not in header]
    if absent:
        found = ",".join(header)[:120]
        raise ImageNetXError(
            f"Prediction file '{path}' lacks the column(s) "
            f"{', '.join(absent)} (its header is '{found}'): the toolkit's "
            "CSV has the columns file_name,predicted_class,"
            "predicted_probability"
        )
    width = len(header)
    name_col, class_col, prob_col = (header.index(c) for c in CSV_COLUMNS)
    body = [row for row in lines[1:] if row]
    for number, row in enumerate(lines[1:], start=2):
        if row and len(row) != width:
            raise ImageNetXError(
                f"Line {number} of prediction file '{path}' has {len(row)} "
                f"fields, the header has {width}: fix or remove that line"
            )
    if not body:
        raise ImageNetXError(
            f"Prediction file '{path}' has a header but no rows: export the "
            "model's predictions into it"
        )

    columns = list(zip(*body))
    file_names = [_basename(n.strip()) for n in columns[name_col]]
    classes = _class_column(columns[class_col], path, lines)
    probs = _numeric_column(columns[prob_col], np.float64, path, lines,
                            "predicted_probability", "a number in [0, 1]")

    bad = np.flatnonzero((classes < 0) | (classes >= NUM_CLASSES))
    if bad.size:
        raise ImageNetXError(
            f"Prediction file '{path}' has {bad.size} predicted_class "
            f"value(s) outside 0-{NUM_CLASSES - 1} (first: "
            f"{columns[class_col][bad[0]].strip()[:40]} on line "
            f"{_line_of(lines, bad[0])}): classes "
            "must be ImageNet-1k indices 0-999"
        )
    bad = np.flatnonzero(~((probs >= 0) & (probs <= 1)))
    if bad.size:
        raise ImageNetXError(
            f"Prediction file '{path}' has {bad.size} predicted_probability "
            f"value(s) outside [0, 1] (first: {probs[bad[0]]} on line "
            f"{_line_of(lines, bad[0])}): write the predicted class's "
            "softmax probability"
        )
    _check_names(file_names, path)
    model = os.path.splitext(os.path.basename(path))[0]
    return Predictions(model, "csv", file_names, classes, probs)


def _class_column(values, path, lines) -> np.ndarray:
    """Parses predicted_class: integers, or integral numbers like 394.0."""
    try:
        return np.array(values).astype(np.int64)
    except (ValueError, OverflowError):
        pass
    expected = "an integer class id 0-999"
    numbers = _numeric_column(values, np.float64, path, lines,
                              "predicted_class", expected)
    bad = np.flatnonzero(~np.isfinite(numbers) | (numbers != np.round(numbers)))
    if bad.size:
        k = int(bad[0])
        raise ImageNetXError(
            f"Prediction file '{path}' has a predicted_class "
            f"'{values[k][:40]}' that is not an integer on line "
            f"{_line_of(lines, k)}: each row needs {expected}"
        )
    # out-of-range values stay out of range (checked by the caller)
    return np.clip(numbers, -1, NUM_CLASSES).astype(np.int64)


def _numeric_column(values, dtype, path, lines, name, expected):
    """Parses a CSV column at numpy speed; names the first bad cell."""
    try:
        return np.array(values).astype(dtype)
    except (ValueError, OverflowError):
        pass
    parse = int if dtype is np.int64 else float
    for k, value in enumerate(values):
        try:
            parse(value)
        except (ValueError, OverflowError):
            raise ImageNetXError(
                f"Prediction file '{path}' has a non-numeric {name} "
                f"'{value[:40]}' on line {_line_of(lines, k)}: each row "
                f"needs {expected}"
            ) from None
    raise ImageNetXError(
        f"Prediction file '{path}' has a {name} column that does not parse "
        f"as {expected}"
    )


def _line_of(lines, k: int) -> int:
    """The 1-based file line of the k-th non-empty data row."""
    seen = -1
    for number, row in enumerate(lines[1:], start=2):
        if row:
            seen += 1
            if seen == k:
                return number
    return -1


def _check_names(file_names: list, path: str) -> None:
    empty = sum(1 for n in file_names if not n)
    if empty:
        raise ImageNetXError(
            f"Prediction file '{path}' has {empty} row(s) with an empty "
            "file_name: every row needs the image's file name"
        )
    if len(set(file_names)) != len(file_names):
        seen, dup = set(), None
        for n in file_names:
            if n in seen:
                dup = n
                break
            seen.add(n)
        raise ImageNetXError(
            f"Prediction file '{path}' has more than one row for "
            f"'{dup}': keep one prediction per image"
        )


# ------------------------------------------------------------------ pickle

#: what a logits pickle may reference: numpy arrays, dtypes and scalars
_PICKLE_ALLOWED = {
    ("numpy", "ndarray"), ("numpy", "dtype"),
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"),
    ("numpy.core.numeric", "_frombuffer"),
    ("numpy._core.numeric", "_frombuffer"),
    ("collections", "OrderedDict"),
    ("_codecs", "encode"),  # protocol 2 stores bytes through it
    ("builtins", "dict"), ("builtins", "list"), ("builtins", "tuple"),
}


class _ArrayUnpickler(pickle.Unpickler):
    """Loads plain containers and numpy arrays, and refuses anything else.

    A pickle can run any code while it loads; a logits file never needs
    more than this, so nothing else is imported.
    """

    def find_class(self, module, name):
        if (module, name) in _PICKLE_ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(
            f"it references {module}.{name}; only dicts of numpy arrays are "
            "read (convert tensors with .numpy() before pickling)"
        )


def _read_pickle(path: str, row_order: str) -> Predictions:
    hint = (
        'expected a pickle of {"model": name, "logits": N x 1000 numpy '
        "array}"
    )
    try:
        with open(path, "rb") as f:
            data = _ArrayUnpickler(f).load()
    except OSError as e:
        raise ImageNetXError(
            f"Cannot read prediction file '{path}': {e.strerror or e}; check "
            "its permissions"
        ) from e
    except Exception as e:  # a corrupt pickle raises almost anything
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ImageNetXError(
            f"Cannot read prediction file '{path}' as a logits pickle "
            f"({reason}): {hint}"
        ) from e

    if not isinstance(data, dict) or "logits" not in data:
        what = (
            f"a dict with keys {sorted(map(str, data))[:5]}"
            if isinstance(data, dict) else f"a {type(data).__name__}"
        )
        raise ImageNetXError(
            f"Prediction file '{path}' holds {what}, no 'logits': {hint}"
        )
    logits = data["logits"]
    if not isinstance(logits, np.ndarray):
        try:
            logits = np.asarray(logits)
        except Exception:
            logits = np.asarray(None)
    if (
        logits.ndim != 2
        or logits.shape[1] != NUM_CLASSES
        or logits.dtype.kind not in "iuf"
    ):
        raise ImageNetXError(
            f"Prediction file '{path}' holds logits of shape "
            f"{logits.shape} and type {logits.dtype}: {hint}, one row per "
            f"image and one column per ImageNet-1k class"
        )
    file_names = _pickle_file_names(data, len(logits), path, row_order)
    class_index, confidence = _argmax_softmax(logits, path)
    model = data.get("model")
    if not isinstance(model, str) or not model:
        model = os.path.splitext(os.path.basename(path))[0]
    return Predictions(model, "pickle", file_names, class_index, confidence)


def _pickle_file_names(data, n, path, row_order) -> list:
    names = data.get("file_names")
    if names is not None:
        names = list(names) if not isinstance(names, str) else None
        if (
            names is None
            or len(names) != n
            or not all(isinstance(x, str) for x in names)
        ):
            raise ImageNetXError(
                f"Prediction file '{path}' has 'file_names' that are not "
                f"{n:,} strings, one per logits row: fix them or leave them "
                "out (rows then follow the validation order)"
            )
        names = [_basename(x) for x in names]
        _check_names(names, path)
        return names
    if n != NUM_VAL:
        raise ImageNetXError(
            f"Prediction file '{path}' holds {n:,} logits rows and no "
            f"'file_names': a testbed pickle has one row per validation "
            f"image ({NUM_VAL:,}); add a 'file_names' list to pair rows "
            "with images"
        )
    return list(_val_order(row_order))


@functools.lru_cache(maxsize=None)
def _val_order(row_order: str) -> tuple:
    """The validation file names in the order of a testbed pickle's rows."""
    if row_order == "val":
        return tuple(f"ILSVRC2012_val_{k:08d}.JPEG" for k in range(1, NUM_VAL + 1))
    # the toolkit pairs logits rows with the rows of this file
    from imagenetx.benchmarks.imagenet_x.annotations import filename_labels  # lazy: start-up
    from imagenetx.classes.imagenet import REINSTALL_HINT  # lazy: start-up

    csv_path = annotation_file("filename_label.csv")
    names = filename_labels()[0]
    if len(names) != NUM_VAL:
        raise ImageNetXError(
            f"ImageNet-X annotation file '{csv_path}' lists {len(names):,} "
            f"images, not {NUM_VAL:,}; {REINSTALL_HINT}"
        )
    return names


def _argmax_softmax(logits: np.ndarray, path: str):
    """Argmax and max softmax probability of each row, chunk by chunk."""
    n = len(logits)
    class_index = np.empty(n, np.int64)
    confidence = np.empty(n, np.float64)
    dtype = np.result_type(logits.dtype, np.float32)
    for start in range(0, n, _LOGITS_CHUNK):
        x = np.asarray(logits[start : start + _LOGITS_CHUNK], dtype=dtype)
        if not np.isfinite(x).all():
            row = start + int(np.flatnonzero(~np.isfinite(x).all(axis=1))[0])
            raise ImageNetXError(
                f"Prediction file '{path}' has non-finite logits (NaN or "
                f"inf) in row {row}: re-export the model's outputs"
            )
        top = x.argmax(axis=1)
        peak = x[np.arange(len(x)), top]
        # softmax at the argmax: exp(0) / sum(exp(x - max))
        total = np.exp(x - peak[:, None]).sum(axis=1)
        class_index[start : start + len(x)] = top
        confidence[start : start + len(x)] = 1.0 / total
    return class_index, confidence


def import_prediction_files(samples, paths, field: str = None, overwrite: bool = False,
                            row_order: str = "toolkit", gt_field: str = "ground_truth"):
    """Imports prediction files of any kind the project reads: published
    cue-conflict responses (one or more model-vs-human raw-data CSVs, one
    field per subject, :func:`~imagenetx.benchmarks.cue_conflict.responses.
    import_responses`), else one toolkit CSV or testbed pickle into
    ``field`` (:func:`import_predictions`).

    Returns:
        the summary of the import that ran

    Raises:
        ImageNetXError: for several files that are not responses, a missing
            ``field``, or anything the import itself refuses
    """
    from imagenetx.benchmarks.cue_conflict.responses import (  # lazy: start-up
        import_responses,
        is_responses_csv,
    )

    paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    if any(map(is_responses_csv, paths)):
        return import_responses(samples, paths, field, overwrite=overwrite)
    if len(paths) != 1 or not field:
        raise ImageNetXError(
            "A prediction file (toolkit CSV or pickle) is imported one at a "
            "time, with `field` naming the field to write")
    return import_predictions(samples, paths[0], field, overwrite=overwrite,
                              row_order=row_order, gt_field=gt_field)
