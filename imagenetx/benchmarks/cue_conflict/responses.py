"""Published trial-by-trial responses on the cue-conflict stimuli, as
prediction fields beside the user's models.

model-vs-human's raw-data CSVs (rgeirhos/texture-vs-shape ``raw-data/``)
have the columns ``subj,session,trial,rt,object_response,category,
condition,imagename``. The image is the part of ``imagename`` after its
last ``_`` (``0001_s5n_dnn_0_airplane_00_airplane1-bicycle2.png`` ->
``airplane1-bicycle2.png``); ``category`` is its shape category and
``object_response`` the answer, one of the 16 categories or ``na`` (a human
who did not answer in time: stored as no prediction).

Each subject becomes a ``fo.Classification`` field named after it
(``subject-01`` -> ``subject_01``, ``resnet50``) with ``label`` the answer,
``class_index`` its index among the 16 and ``rt`` the response time.
Subjects named ``subject-NN`` are human observers: their fields are listed
in ``dataset.info["imagenetx"]["humans"]``.
"""

import csv
import os
import re
from dataclasses import dataclass, field as dc_field
from typing import Dict, List, Optional, Sequence

import fiftyone as fo
from bson import ObjectId

from imagenetx.classes.cue_conflict import categories
from imagenetx.errors import ImageNetXError
from imagenetx.benchmarks.cue_conflict.benchmark import CueConflict, require_contract
from imagenetx.store.bulk import chunked, write_raw
from imagenetx.store.claims import claim_field
from imagenetx.store.classifications import write_classifications
from imagenetx.store.datasets import get_dataset
from imagenetx.store.schema import (
    check_prediction_field,
    declare_classification,
    eval_key_of,
)

RESPONSE_COLUMNS = ("subj", "session", "trial", "rt", "object_response",
                    "category", "condition", "imagename")
NO_RESPONSE = "na"
_HUMAN_RE = re.compile(r"^subject-\d+$")


@dataclass
class Responses:
    """One subject's answers.

    Attributes:
        subject: the ``subj`` value (``subject-01``, ``resnet50``)
        path: the file it came from
        images: the stimulus file names
        shapes: the ``category`` column (each image's shape category)
        answers: the answer per image, None for ``na``
        rts: the response time per image (None where not a number)
    """

    subject: str
    path: str
    images: List[str] = dc_field(default_factory=list)
    shapes: List[str] = dc_field(default_factory=list)
    answers: List[Optional[str]] = dc_field(default_factory=list)
    rts: List[Optional[float]] = dc_field(default_factory=list)

    @property
    def human(self) -> bool:
        return bool(_HUMAN_RE.match(self.subject))

    @property
    def field(self) -> str:
        """The prediction field name: the subject with ``-`` as ``_``."""
        return re.sub(r"\W", "_", self.subject)


@dataclass
class ResponsesSummary:
    """What :func:`import_responses` wrote."""

    dataset: str
    fields: Dict[str, int]
    humans: List[str]
    no_answer: int

    def __str__(self):
        listing = ", ".join(f"{f} ({n:,})" for f, n in self.fields.items())
        return (f"Imported the responses of {len(self.fields)} observers into "
                f"dataset '{self.dataset}': {listing}; {len(self.humans)} "
                f"human, {self.no_answer:,} trials without an answer left "
                "empty")


def is_responses_csv(path) -> bool:
    """Whether a file starts with the model-vs-human raw-data header."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            header = next(csv.reader(f), [])
    except (OSError, UnicodeDecodeError, csv.Error):
        return False
    return tuple(h.strip() for h in header) == RESPONSE_COLUMNS


def _rt(text: str) -> Optional[float]:
    try:
        value = float(text)
    except ValueError:
        return None
    return None if value != value else value


def read_responses(path) -> List[Responses]:
    """Reads one raw-data CSV: one :class:`Responses` per subject in it.

    Raises:
        ImageNetXError: for other columns, an answer or category outside
            the 16, or an image named twice for one subject
    """
    path = os.fspath(path)
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            rows = list(csv.reader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise ImageNetXError(f"Cannot read responses file '{path}': {e}") from None
    header = tuple(h.strip() for h in rows[0]) if rows else ()
    if header != RESPONSE_COLUMNS:
        raise ImageNetXError(
            f"'{path}' is not a model-vs-human responses CSV: its columns are "
            f"{','.join(header) or 'missing'}, expected {','.join(RESPONSE_COLUMNS)}")
    known = set(categories())
    col = {c: i for i, c in enumerate(RESPONSE_COLUMNS)}
    by_subject: Dict[str, Responses] = {}
    for line, row in enumerate(rows[1:], start=2):
        if not any(row):
            continue
        if len(row) != len(RESPONSE_COLUMNS):
            raise ImageNetXError(
                f"'{path}' line {line} has {len(row)} values, not "
                f"{len(RESPONSE_COLUMNS)}")
        answer, shape = row[col["object_response"]], row[col["category"]]
        if answer != NO_RESPONSE and answer not in known:
            raise ImageNetXError(
                f"'{path}' line {line}: answer '{answer}' is neither one of the "
                f"16 categories nor '{NO_RESPONSE}'")
        if shape not in known:
            raise ImageNetXError(
                f"'{path}' line {line}: category '{shape}' is not one of the 16")
        subject = row[col["subj"]]
        r = by_subject.setdefault(subject, Responses(subject, path))
        r.images.append(row[col["imagename"]].rsplit("_", 1)[-1])
        r.shapes.append(shape)
        r.answers.append(None if answer == NO_RESPONSE else answer)
        r.rts.append(_rt(row[col["rt"]]))
    for r in by_subject.values():
        if len(set(r.images)) != len(r.images):
            raise ImageNetXError(
                f"'{path}': subject '{r.subject}' answers some image twice")
    if not by_subject:
        raise ImageNetXError(f"'{path}' has no responses")
    return list(by_subject.values())


def import_responses(samples, paths: Sequence, field: Optional[str] = None,
                     overwrite: bool = False) -> ResponsesSummary:
    """Writes published responses onto a cue-conflict dataset, one field per
    subject (see the module docstring).

    Args:
        samples: a cue-conflict dataset, view or dataset name
        paths: raw-data CSV files
        field (None): the field name, for a single subject only; default:
            the subject's name
        overwrite (False): replace existing fields

    Raises:
        ImageNetXError: before anything is written, for a bad file, images
            the dataset does not have, a category that disagrees with the
            image's shape, or an existing field without ``overwrite``
    """

    subjects = [r for p in paths for r in read_responses(p)]
    if field is not None and len(subjects) != 1:
        raise ImageNetXError(
            f"`field` names one field, but the files hold {len(subjects)} "
            "subjects: leave it out to name each field after its subject")
    names = [field] if field else [r.field for r in subjects]
    if len(set(names)) != len(names):
        raise ImageNetXError(
            f"Subjects repeat across the files: {', '.join(names)}; import "
            "each once")
    samples = get_dataset(samples)
    dataset = samples._dataset
    require_contract(samples)
    # one writer per field: a run or another import writing one refuses this one
    files = ", ".join(os.path.basename(os.fspath(p)) for p in paths)
    with claim_field(dataset, names, f"import of responses from {files}") as claim:
        for name in names:
            if check_prediction_field(dataset, name, "ground_truth") and not overwrite:
                raise ImageNetXError(
                    f"Field '{name}' of dataset '{dataset.name}' already exists: "
                    "pass `overwrite=True` to replace it")

        ids, filepaths, shapes = samples.values(["_id", "filepath", "shape"], _raw=True)
        row_of = {os.path.basename(p): i for i, p in enumerate(filepaths)}
        for r in subjects:
            unknown = [n for n in r.images if n not in row_of]
            if unknown:
                raise ImageNetXError(
                    f"'{r.path}' ({r.subject}) answers {len(unknown):,} images that "
                    f"dataset '{dataset.name}' does not have, e.g. "
                    f"{', '.join(unknown[:3])}: import into the full cue-conflict "
                    "dataset")
            wrong = [n for n, s in zip(r.images, r.shapes) if shapes[row_of[n]] != s]
            if wrong:
                raise ImageNetXError(
                    f"'{r.path}' ({r.subject}) gives another shape category than "
                    f"the dataset for {len(wrong):,} images, e.g. {wrong[0]}")

        index = {c: i for i, c in enumerate(categories())}
        written, no_answer = {}, 0
        for name, r in zip(names, subjects):
            claim.check()
            if dataset.has_evaluation(eval_key_of(name)):
                dataset.delete_evaluation(eval_key_of(name))  # it scored the old field
            if dataset.has_field(name):
                dataset.delete_sample_field(name)
            declare_classification(dataset, name, rt=fo.FloatField)
            rows = [(ids[row_of[n]], a, t) for n, a, t in zip(r.images, r.answers, r.rts)
                    if a is not None]
            write_classifications(
                dataset, name, [i for i, _, _ in rows], [index[a] for _, a, _ in rows],
                labels=categories(), rt=[t for _, _, t in rows])
            empty = [ids[row_of[n]] for n, a in zip(r.images, r.answers) if a is None]
            write_raw(dataset, ({ObjectId(i): {name: None} for i in c} for c in chunked(empty)))
            written[name] = len(rows)
            no_answer += len(empty)
            CueConflict().predictions_written(dataset, name)

    info = dict(dataset.info.get("imagenetx") or {})
    humans = set(info.get("humans") or ()) - set(names)
    humans |= {n for n, r in zip(names, subjects) if r.human}
    info["humans"] = sorted(humans)
    dataset.info["imagenetx"] = info
    dataset.save()
    return ResponsesSummary(dataset.name, written, sorted(
        n for n, r in zip(names, subjects) if r.human), no_answer)
