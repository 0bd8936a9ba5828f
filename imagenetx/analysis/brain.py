"""Error slices and FiftyOne Brain: the embeddings read from a brain key as
well as a field, and the slices drawn on a Brain visualization.

:func:`resolve_embeddings` says where a name's vectors are: a sample field,
a similarity index (its ``get_embeddings()``), or the field a visualization
was computed from. :func:`map_slices` runs ``compute_visualization`` on a
stored slicing's embeddings under the brain key ``<key>_map`` and records
it with the slicing, so FiftyOne's Embeddings panel, coloured by the string
field ``key``, shows the slices (and a lasso there is a view).
"""

import importlib.util
from dataclasses import dataclass
from typing import Dict, Optional

import numpy as np

from imagenetx.analysis.engine import stored_slicings, write_slicing_record
from imagenetx.errors import ImageNetXError
from imagenetx.store.datasets import get_dataset

#: the methods :func:`map_slices` offers (FiftyOne Brain's; umap needs umap-learn)
MAP_METHODS = ("pca", "tsne", "umap")
#: the dimensions FiftyOne Brain's t-SNE first reduces to by PCA (its ``pca_dims``),
#: and its perplexity (t-SNE needs more samples than that)
TSNE_PCA_DIMS, TSNE_PERPLEXITY = 50, 30


@dataclass
class EmbeddingsSource:
    """Where the vectors named ``name`` are.

    Attributes:
        name: the name given (a field or a brain key)
        field: the sample field holding them (a field's name, or the field a
            visualization was computed from); None for a similarity index
        index: the similarity index's brain key, when they are read from one
        vectors: ``{sample id: vector}`` read from the index (None for a field)
    """

    name: str
    field: Optional[str] = None
    index: Optional[str] = None
    vectors: Optional[Dict[str, np.ndarray]] = None

    def column(self, ids, columns: dict) -> list:
        """The vectors in the order of ``ids`` (None where a sample has none),
        from ``columns`` (the engine's, which read :attr:`field`) or the index."""
        if self.field is not None:
            return list(columns[self.field])
        return [self.vectors.get(i) for i in ids]


def map_key(key: str) -> str:
    """The brain key of the visualization of slicing ``key``."""
    return f"{key}_map"


def resolve_embeddings(samples, embeddings: str) -> EmbeddingsSource:
    """Where ``embeddings`` are: a sample field of ``samples``, a similarity
    index's brain key (read with ``get_embeddings()`` for the samples of
    ``samples``), or the key of a visualization computed from a field.

    Raises:
        ImageNetXError: for a name that is neither a field nor such a brain key
            (naming the brain keys present), an index of patches, or a
            visualization computed without an embeddings field
    """
    view = get_dataset(samples)
    dataset = view._dataset
    if view.has_field(embeddings):
        return EmbeddingsSource(embeddings, field=embeddings)
    keys = dataset.list_brain_runs()
    if embeddings not in keys:
        raise ImageNetXError(
            f"`embeddings='{embeddings}'` is not a field of dataset '{dataset.name}' nor one of "
            f"its brain keys ({', '.join(keys) or 'none'}): compute it first "
            "(`imagenetx.models.embed.run_embed`, or FiftyOne Brain's compute_similarity) or "
            "pass the field or similarity index that holds them")
    config = dataset.get_brain_info(embeddings).config
    kind = getattr(config, "type", None)
    if kind == "similarity":
        if config.patches_field is not None:
            raise ImageNetXError(
                f"`embeddings='{embeddings}'` is a similarity index of the objects in "
                f"'{config.patches_field}', not of the samples: give an index of whole images")
        index = dataset.load_brain_results(embeddings)
        vectors, ids, _ = index.get_embeddings(sample_ids=view.values("id"))
        return EmbeddingsSource(embeddings, index=embeddings,
                                vectors=dict(zip(ids, np.asarray(vectors))))
    if kind == "visualization" and config.embeddings_field and not config.patches_field:
        if not view.has_field(config.embeddings_field):
            raise ImageNetXError(
                f"`embeddings='{embeddings}'` is a visualization of the field "
                f"'{config.embeddings_field}', which dataset '{dataset.name}' no longer has: "
                "give a field or a similarity index that holds the embeddings")
        return EmbeddingsSource(embeddings, field=config.embeddings_field)
    raise ImageNetXError(
        f"`embeddings='{embeddings}'` is a brain run of dataset '{dataset.name}' that keeps no "
        "embeddings of its samples: give a field, a similarity index, or a visualization "
        "computed from a field")


def check_map(samples, key: Optional[str], method: str, overwrite: bool = False,
              parameter: str = "method") -> str:
    """Refuses, before anything is written, a map :func:`map_slices` could not
    make: no ``key``, an unknown ``method`` (the caller's ``parameter``), umap
    without umap-learn, or ``<key>_map`` a brain run of something else.
    Returns the brain key."""
    if key is None:
        raise ImageNetXError(f"`{parameter}` needs a `key`: the map is coloured by the slices' "
                             "stored field")
    if method not in MAP_METHODS:
        raise ImageNetXError(
            f"`{parameter}='{method}'` is not a visualization method: use one of "
            f"{', '.join(MAP_METHODS)}")
    if method == "umap" and importlib.util.find_spec("umap") is None:
        raise ImageNetXError(f"`{parameter}='umap'` needs umap-learn (`pip install umap-learn`): "
                             "or use pca or tsne")
    dataset = get_dataset(samples)._dataset
    brain_key = map_key(key)
    recorded = (stored_slicings(dataset).get(key) or {}).get("map") == brain_key
    if brain_key in dataset.list_brain_runs() and not (recorded or overwrite):
        raise ImageNetXError(
            f"brain key '{brain_key}' of dataset '{dataset.name}' holds another run: pass "
            "`overwrite=True` to replace it, or choose another key")
    return brain_key


def map_slices(samples, key: str, method: str = "pca", overwrite: bool = False,
               seed: int = 0, progress=None):
    """A FiftyOne Brain visualization of the embeddings of the stored error
    slicing ``key``, under the brain key ``<key>_map``, recorded in the
    slicing's record (``"map"``): FiftyOne's Embeddings panel, coloured by the
    field ``key``, shows the slices.

    Args:
        samples: a dataset, view, or dataset name: the samples drawn
        key: the stored slicing (``discover_error_slices(..., key=...)``)
        method ("pca"): ``compute_visualization``'s method (pca, tsne, umap)
        overwrite (False): replace a brain run ``<key>_map`` this slicing
            did not record
        seed (0): the reducer's random state
        progress (None): FiftyOne's progress option

    Returns:
        the ``fiftyone.brain.visualization.VisualizationResults``
    """
    import fiftyone.brain as fob  # lazy: start-up

    view = get_dataset(samples)
    dataset = view._dataset
    record = stored_slicings(dataset).get(key)
    if record is None:
        raise ImageNetXError(
            f"`key='{key}'` holds no error slices of dataset '{dataset.name}': store them "
            "first (`discover_error_slices()` with a `key`)")
    brain_key = check_map(dataset, key, method, overwrite)
    source = resolve_embeddings(view, record["embeddings"])
    if source.field is not None:
        view = view.exists(source.field)
        first = view.limit(1).values(source.field)
        given = {"embeddings": source.field}
    else:
        view = view.select(list(source.vectors))
        first = list(source.vectors.values())[:1]
        given = {"similarity_index": source.index}
    n = view.count() if source.field is not None else len(source.vectors)
    if method == "tsne" and n <= TSNE_PERPLEXITY:
        raise ImageNetXError(
            f"`method='tsne'` needs more than {TSNE_PERPLEXITY} samples (its perplexity), not "
            f"{n}: use pca, or draw more samples")
    options = {"seed": seed}
    if method == "tsne" and first and len(first[0]) <= TSNE_PCA_DIMS:
        options["pca_dims"] = None  # FiftyOne's t-SNE reduces to 50 dimensions first
    # drawn under a new key first: a run that fails leaves the old map as it was
    drawing = f"{brain_key}_drawing"
    if drawing in dataset.list_brain_runs():
        dataset.delete_brain_run(drawing)
    try:
        fob.compute_visualization(view, method=method, brain_key=drawing, progress=progress,
                                  **given, **options)
    except BaseException:
        if drawing in dataset.list_brain_runs():
            dataset.delete_brain_run(drawing)
        raise
    if brain_key in dataset.list_brain_runs():
        dataset.delete_brain_run(brain_key)
    dataset.rename_brain_run(drawing, brain_key)
    results = dataset.load_brain_results(brain_key)
    write_slicing_record(dataset, key, {**stored_slicings(dataset)[key], "map": brain_key,
                                        "map_method": method})
    return results
