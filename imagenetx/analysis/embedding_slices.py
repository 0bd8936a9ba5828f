"""Failures no annotation names: the slices of an embeddings field where a
model errs most above its average, on any dataset.

The columns come from :func:`~imagenetx.analysis.engine.prepare` (one
query, the same images and correctness as every other analysis; the
embeddings field read in it), the slices from
:func:`imagenetx.metrics.error_slices.find_error_slices`. With ``key``, the
slices are stored: a string field ``key`` on the samples ("slice 1", ...,
None outside every slice), one FiftyOne saved view per slice
(``<key>-<rank>``), and the run that made them in
``dataset.info["imagenetx"]["error_slicings"][key]``; the engine then
treats ``key`` as a slicing like the benchmark's own (ratios, charts, the
panel's click to a slice's mistakes).
"""

from dataclasses import dataclass
from typing import List, Optional, Sequence

import numpy as np

from imagenetx.analysis.brain import check_map, map_key, map_slices, resolve_embeddings
from imagenetx.analysis.engine import prepare, stored_slicings, write_slicing_record
from imagenetx.analysis.settings import Settings
from imagenetx.benchmarks import get_benchmark
from imagenetx.errors import ImageNetXError
from imagenetx.classes.imagenet import class_table
from imagenetx.metrics.error_slices import (
    COMPONENTS,
    FIT_SHARE,
    ErrorSlices,
    check_embeddings,
    class_reference,
    find_error_slices,
    rank_texts,
)
from imagenetx.models.text_embeddings import ImageTextModel, check_spec
from imagenetx.benchmarks.imagenet_x.factors import FACTORS
from imagenetx.metrics.stats import to_json
from imagenetx.store.datasets import get_dataset
from imagenetx.store.names import INFO_KEY


#: the templates the ImageNet classes are described with
CLASS_TEMPLATES = ("a photo of a {}.", "a drawing of a {}.", "a close-up photo of a {}.")
#: descriptions kept per slice
TOP_TEXTS = 3


def description_vocabulary(texts: Sequence[str] = (), classes: bool = True,
                           factors: bool = True) -> List[str]:
    """The texts a slice is described with: ImageNet's classes x
    :data:`CLASS_TEMPLATES`, the 16 factor names, and ``texts``."""
    vocabulary = list(texts)
    if factors:
        vocabulary += [f.replace("_", " ") for f in FACTORS]
    if classes:
        vocabulary += [t.format(name) for name in class_table().names for t in CLASS_TEMPLATES]
    return list(dict.fromkeys(vocabulary))


def slice_value(rank: int) -> str:
    """The value a slice's samples hold in the stored field."""
    return f"slice {rank}"


@dataclass
class EmbeddingSliceResults:
    """The slices :func:`discover_error_slices` found, best first."""

    dataset: str
    pred_field: str
    embeddings: str
    correct: str
    found: ErrorSlices
    sample_ids: List[List[str]]
    #: ``{slicing, title, values, overlap: per slice, the share of its
    #: samples in each value}`` of the benchmark's default slicing, when it
    #: has one
    overlap: Optional[dict]
    key: Optional[str] = None
    #: per slice, ``[(text, score, similarity)]`` best first (None without
    #: an image-text model: the typical samples stand for the slice)
    descriptions: Optional[List[list]] = None
    #: the brain key of the slices' visualization (``map``), when made
    map: Optional[str] = None

    def to_dict(self) -> dict:
        """JSON-ready: the slices best first, each with its statistics (of
        its held-out members), typical samples, ``sample_ids`` (every
        member) and ``held_out_ids``."""
        slices = []
        for k, (s, ids) in enumerate(zip(self.found.slices, self.sample_ids)):
            entry = {**s.to_dict(), "name": slice_value(s.rank),
                     "typical_ids": [ids[i] for i in _positions(s.members, s.typical)],
                     "sample_ids": ids,
                     "held_out_ids": [ids[i] for i in _positions(s.members, s.held_out)]}
            if self.key:
                entry["saved_view"] = saved_view_name(self.key, s.rank)
            if self.descriptions is not None:
                entry["descriptions"] = [{"text": t, "score": round(sc, 6),
                                          "similarity": round(si, 6)}
                                         for t, sc, si in self.descriptions[k]]
            if self.overlap:
                entry["overlap"] = dict(zip(self.overlap["values"], self.overlap["overlap"][k]))
            slices.append(entry)
        return {"dataset": self.dataset, "pred_field": self.pred_field,
                "embeddings": self.embeddings, "correct": self.correct, "key": self.key,
                "map": self.map,
                "n": self.found.n, "accuracy": to_json(self.found.accuracy),
                "components": self.found.components, "dimensions": self.found.dimensions,
                "y_weight": self.found.y_weight, "y_hat_weight": self.found.y_hat_weight,
                "across_classes": self.found.across_classes,
                "across_dimensions": self.found.across_dimensions,
                "split": self.found.split, "held_out": self.found.held_out,
                "overlap_slicing": self.overlap and self.overlap["slicing"],
                "slices": slices}


def saved_view_name(key: str, rank: int) -> str:
    """The saved view of slice ``rank`` of the slicing ``key``."""
    return f"{key}-{rank}"


def discover_error_slices(samples, pred_field: str, embeddings: str, k: int = 5,
                          key: Optional[str] = None, overwrite: bool = False,
                          components: int = COMPONENTS, fit_share: Optional[float] = FIT_SHARE,
                          class_terms: bool = True, across_classes: bool = True,
                          seed: int = 0,
                          describe_with: Optional[str] = None, texts: Sequence[str] = (),
                          pretrained: bool = True, map_method: Optional[str] = None,
                          settings: Settings = None, **kwargs) -> EmbeddingSliceResults:
    """The ``k`` slices of an embeddings field where ``pred_field`` errs most
    above its average.

    Args:
        samples: a dataset, view, or dataset name
        pred_field: the prediction field
        embeddings: the sample field holding one vector per sample
            (FiftyOne Brain's convention), or the brain key of a similarity
            index (or of a visualization computed from a field):
            :func:`~imagenetx.analysis.brain.resolve_embeddings`
        k (5): the most slices to return
        key (None): store the slices under this name (a sample field, saved
            views, the run's record); None: store nothing
        overwrite (False): replace a stored slicing of the same ``key``
        components (25), fit_share (0.5), seed (0): as in
            :func:`~imagenetx.metrics.error_slices.find_error_slices`: the
            mixture is fitted on ``fit_share`` of the samples (drawn with
            ``seed``) and each slice's numbers come from the others; every
            sample is given its slice. ``fit_share=None``: fit on all
        class_terms (True): Domino's categorical terms of the true and the
            predicted class (a slice tends to be one confusion cell); False:
            one term of the correctness only (ours, not Domino's), for a
            failure that spans the true classes (one texture photo under 16
            shapes: Domino's terms split it by cell and find none of it;
            this finds it, ``tests/test_embedding_slices.py``)
        across_classes (True): with ``class_terms``, pool Domino's slices
            with those of the same mixture without class terms, for a
            failure that spans classes (altered copies of images of many
            classes); False: Domino's only (:func:`~imagenetx.metrics.
            error_slices.find_error_slices`)
        describe_with (None): an image-text model
            (``open_clip:ARCH/PRETRAINED``, a CLIP or SigLIP): each slice gets
            its nearest texts of :func:`description_vocabulary` (plus
            ``texts``) in that model's space, whatever space it was found in
            (:func:`describe_slices`); None: its most typical samples only
        texts (()): a user's own descriptions to rank too
        pretrained (True): False loads ``describe_with`` with random weights
            (tests)
        map_method (None): with ``key``, also a FiftyOne Brain visualization of
            the embeddings of ``samples`` (the samples sliced) by this method
            (pca, tsne, umap) under the brain key ``<key>_map``, for the
            Embeddings panel coloured by ``key``
            (:func:`~imagenetx.analysis.brain.map_slices`)
        settings (None): analysis settings (correctness, which samples
            count), with keyword overrides

    Raises:
        ImageNetXError: before anything is written, for a missing field, a
            field of no vectors (a label, a string), a sample without an
            embedding, embeddings of mixed or wrong
            dimension, NaN rows, ``k`` out of range, a ``key`` in use, or a
            ``map_method`` that cannot be made
    """
    view = get_dataset(samples)
    dataset = view._dataset
    source = resolve_embeddings(view, embeddings)
    if source.field is not None:
        _check_vectors(view, source.field)
    if key is not None:
        _check_key(dataset, key, overwrite)
    if map_method is not None:
        check_map(dataset, key, map_method, overwrite, parameter="map_method")
    if describe_with is not None:
        check_spec(describe_with)  # before the fit
    settings = Settings.create(settings, **kwargs)
    s = {} if _has_default_slicing(view, settings) else {"slicing": "tags"}
    paths = ([source.field] if source.field else []) + \
        (["filepath"] if describe_with is not None else [])
    p = prepare(view, [pred_field], settings, ids=True, extra_paths=paths, **s)
    keep = p.counted[pred_field]
    column = [v for v, kept in zip(source.column(p.ids, p.columns), keep) if kept]
    missing = sum(v is None for v in column)
    if missing:
        raise ImageNetXError(
            f"`embeddings='{embeddings}'` is missing on {missing:,} of the {len(column):,} "
            "samples with a prediction: compute them for every sample, or narrow the view")
    lengths = {len(v) for v in column}
    if len(lengths) > 1:
        raise ImageNetXError(
            f"`embeddings='{embeddings}'` holds vectors of {len(lengths)} lengths "
            f"({', '.join(map(str, sorted(lengths)))}): recompute them with one model")
    x = np.stack([np.asarray(v, dtype=np.float32) for v in column]) if column else \
        np.zeros((0, 0), np.float32)
    correct = p.correct[pred_field][keep]
    check_embeddings(x, correct, k, name=f"embeddings='{embeddings}'")
    terms = {}
    if class_terms:
        terms = dict(targets=p.classes[keep],
                     predicted=p.label_space.predicted(pred_field, p.columns)[keep],
                     confidence=p.confidence[pred_field][keep])
    found = find_error_slices(x, correct, k=k, components=components, fit_share=fit_share,
                              across_classes=across_classes, seed=seed, **terms)
    ids = [i for i, kept in zip(p.ids, keep) if kept]
    sample_ids = [[ids[i] for i in s.members] for s in found.slices]
    overlap = None
    if p.benchmark.default_slicing is not None and "slicing" not in s:
        membership = p.membership[keep]
        overlap = {"slicing": p.slicing.name, "title": p.slicing.label,
                   "values": [str(v) for v in p.slicing.values],
                   "overlap": [membership[sl.members].mean(axis=0).round(4).tolist()
                               for sl in found.slices]}
    descriptions = None
    if describe_with is not None:
        files = [f for f, kept in zip(p.columns["filepath"], keep) if kept]
        reuse = x if source.field and _made_by(dataset, source.field, describe_with,
                                               pretrained) else None
        descriptions = describe_slices(found, p.classes[keep], files, describe_with,
                                       texts=texts, pretrained=pretrained, embeddings=reuse)
    result = EmbeddingSliceResults(dataset.name, pred_field, embeddings, p.label_space.name,
                                   found, sample_ids, overlap, descriptions=descriptions)
    if key is not None:
        _store(dataset, key, result)
        result.key = key
    if map_method is not None:
        map_slices(view, key, map_method, overwrite=overwrite, seed=seed)
        result.map = map_key(key)
    return result


def describe_slices(found: ErrorSlices, targets, filepaths: Sequence[str], spec: str,
                    texts: Sequence[str] = (), pretrained: bool = True, embeddings=None,
                    progress=None) -> List[list]:
    """Each slice's nearest texts in the space of the image-text model
    ``spec``, as Domino's ``describe`` ranks them: the slice's prototype
    contrasted with its own class's (:func:`~imagenetx.metrics.error_slices.
    class_reference`), over :func:`description_vocabulary` and ``texts``.
    A slice's images are its members (those whose most likely component is
    the slice's; Domino's are those whose membership exceeds 0.5).

    The images needed (the slices' members and their classes' rows) are
    embedded by ``spec``'s image tower in memory, unless ``embeddings``
    already holds every row in that space.

    Args:
        found: the slices (their members index the rows)
        targets: ``(n,)`` each row's true class index
        filepaths: each row's image
        spec: ``open_clip:ARCH[/PRETRAINED]``
        texts (()): a user's own descriptions to rank too
        pretrained (True): False builds ``spec`` with random weights (tests)
        embeddings (None): ``(n, d)`` the rows already in ``spec``'s space
        progress (None): the image pass's progress bar, as in ``predict``

    Returns:
        per slice, ``[(text, score, similarity)]`` best first

    Raises:
        ImageNetXError: for a spec that is not an image-text model, weights
            that cannot be fetched, or an image that cannot be read
    """
    model = ImageTextModel(spec, pretrained)  # a bad spec is refused with no slices too
    if not found.slices:
        return []
    references = [class_reference(targets, sl.members) for sl in found.slices]
    if embeddings is None:
        rows = np.unique(np.concatenate([np.concatenate([sl.members, ref])
                                         for sl, ref in zip(found.slices, references)]))
        embeddings = model.encode_images([filepaths[r] for r in rows], progress=progress)
    else:
        rows = np.arange(len(embeddings))
    vocabulary = description_vocabulary(texts)
    vectors = model.encode_texts(vocabulary)
    return [[(vocabulary[i], sc, si) for i, sc, si in
             rank_texts(embeddings, np.searchsorted(rows, sl.members), vectors, top=TOP_TEXTS,
                        reference=np.searchsorted(rows, ref))]
            for sl, ref in zip(found.slices, references)]


def _made_by(dataset, embeddings: str, spec: str, pretrained: bool) -> bool:
    """Whether ``imagenetx embed`` wrote ``embeddings`` with the pretrained
    weights of ``spec`` (its run record, on the predictions field, says)."""
    if not pretrained:  # random weights differ from one build to the next
        return False
    for field in dataset.get_field_schema().values():
        record = (field.info or {}).get(INFO_KEY) or {}
        if record.get("embeddings") == embeddings:
            return record.get("spec") == spec and bool(record.get("pretrained"))
    return False


def _check_vectors(view, embeddings: str) -> None:
    """Raises for a field declared as anything but one vector per sample (a
    label, a string); an undeclared list is checked by its values."""
    import fiftyone as fo

    field = view.get_field(embeddings)
    if isinstance(field, (fo.VectorField, fo.ArrayField)) or (
            isinstance(field, fo.ListField)
            and (field.field is None or isinstance(field.field, (fo.FloatField, fo.IntField)))):
        return
    kind = (field.document_type.__name__ if isinstance(field, fo.EmbeddedDocumentField)
            else type(field).__name__)
    raise ImageNetXError(
        f"`embeddings='{embeddings}'` is a {kind} field of dataset '{view._dataset.name}', "
        "not embeddings: give a field of one vector per sample (written by `run_embed()` "
        "or FiftyOne Brain's compute_embeddings)")


def _has_default_slicing(view, settings: Settings) -> bool:
    return bool(settings.slicing) or get_benchmark(view, settings.benchmark, settings) \
        .default_slicing is not None


def _check_key(dataset, key: str, overwrite: bool) -> None:
    if key in stored_slicings(dataset):
        if overwrite:
            return
        raise ImageNetXError(
            f"`key='{key}'` holds slices already: pass `overwrite=True` to replace them, "
            "or choose another key")
    if dataset.has_field(key):
        raise ImageNetXError(
            f"`key='{key}'` is a field of dataset '{dataset.name}' that holds no slices: "
            "choose another key")


def _store(dataset, key: str, result: EmbeddingSliceResults) -> None:
    """The slices as a field, saved views and a record, replacing an older
    slicing of the same key."""
    from fiftyone import ViewField as F  # lazy: start-up (the CLI parser imports analysis)
    import fiftyone as fo  # lazy: start-up

    old = stored_slicings(dataset).get(key)
    if old is not None:
        for rank in range(1, len(old["values"]) + 1):
            name = saved_view_name(key, rank)
            if dataset.has_saved_view(name):
                dataset.delete_saved_view(name)
    if not dataset.has_field(key):
        dataset.add_sample_field(key, fo.StringField)
    else:
        dataset.clear_sample_field(key)
    values = {i: slice_value(s.rank) for s, ids in
              zip(result.found.slices, result.sample_ids) for i in ids}
    if values:
        dataset.set_values(key, values, key_field="id")
    for s in result.found.slices:
        dataset.save_view(saved_view_name(key, s.rank),
                          dataset.match(F(key) == slice_value(s.rank)),
                          description=f"{result.pred_field}: accuracy {s.accuracy:.3f} "
                                      f"over {s.size:,} samples (error ratio "
                                      f"{s.error_ratio:.2f})")
    record = {"pred_field": result.pred_field, "embeddings": result.embeddings,
              "correct": result.correct, "k": len(result.found.slices),
              "components": result.found.components, "split": result.found.split,
              "values": [slice_value(s.rank) for s in result.found.slices],
              "sizes": [s.size for s in result.found.slices],
              "about": _about(result)}
    if old is not None and "map" in old and old.get("embeddings") == result.embeddings:
        # the map of the same embeddings stays valid: it is coloured by the field
        record.update(map=old["map"], map_method=old.get("map_method"))
    write_slicing_record(dataset, key, record)


def _about(result: EmbeddingSliceResults) -> list:
    """What the panel shows of each slice beside its bar: its nearest texts
    with their similarity, the values of the benchmark's default slicing it
    overlaps most (at most :data:`TOP_TEXTS` each), and which fit found it
    (by class or across classes) when both were pooled."""
    about = []
    for k, sl in enumerate(result.found.slices):
        entry = {}
        if result.found.across_classes:
            entry["found"] = "across classes" if sl.across_classes else "by class"
        if result.descriptions is not None:
            # rounded as to_dict rounds them, so both print the same figures
            entry["texts"] = [[t, round(si, 6)] for t, _, si in result.descriptions[k]]
        if result.overlap:
            shares = sorted(zip(result.overlap["values"], result.overlap["overlap"][k]),
                            key=lambda vs: -vs[1])
            entry["overlap"] = [[v, sh] for v, sh in shares[:TOP_TEXTS] if sh > 0]
            entry["overlap_title"] = result.overlap["title"]
        about.append(entry)
    return about


def about_slices(samples, slicing: str) -> Optional[dict]:
    """``{value: {"texts", "overlap", "overlap_title"}}`` of a stored error
    slicing (None for any other slicing): what the panel shows beside its
    bars."""
    record = stored_slicings(samples).get(slicing)
    if record is None:
        return None
    return dict(zip(record["values"], record.get("about") or [{}] * len(record["values"])))


def _positions(members: np.ndarray, rows: np.ndarray) -> list:
    """Where each of ``rows`` lies in ``members``."""
    where = {int(m): i for i, m in enumerate(members)}
    return [where[int(r)] for r in rows]
