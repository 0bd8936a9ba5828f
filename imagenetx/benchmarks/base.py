"""What a benchmark tells the analysis engine: its slicings, label spaces
and which samples count.

:class:`Benchmark` is also the generic benchmark: any dataset whose ground
truth has a ``class_index``, sliced by any categorical field of the user's
(:func:`field_slicing`), scored by exact class.
"""

from typing import Dict, List, Optional, Tuple

import fiftyone as fo

from imagenetx.classes.decisions import Decisions
from imagenetx.classes.spaces import ExactClass, LabelSpace
from imagenetx.errors import ImageNetXError
from imagenetx.benchmarks.loading import Loading, load_with
from imagenetx.benchmarks.scenarios import (
    FieldNames,
    ScenarioChanges,
    apply_scenarios,
    kept_scenario_fields,
    prune_scenarios,
    wanted_scenarios,
)
from imagenetx.metrics.slicing import Slicing, value_order
from imagenetx.store.indexes import ensure_indexes

#: the most distinct values a field may have to be used as a slicing
MAX_SLICES = 1000


class Benchmark:
    """A benchmark's analysis spec (the generic one; subclasses add theirs).

    Attributes:
        name: the benchmark's name, e.g. ``"imagenet_x"``
        title: its display name
        default_slicing: the slicing used when none is named (None: the
            user must name one)
        default_label_space: the label space used when none is named
        group_slicing: the single-valued slicing offered for per-group
            tables and as a filter (e.g. ImageNet-X's meta-classes)
        discovery_slicings: the slicings slice discovery intersects when
            none are named (empty: the user must name them)
        needs_logits: whether its label spaces read the stored logits
            (``imagenetx predict`` then stores them)
        output_classes: the classes a zero-shot head is built over for it
            (:mod:`imagenetx.classes.outputs`): ImageNet's 1000 unless the
            benchmark scores zero-shot models over its own
        loading: where its data is loaded from and with which options
            (:mod:`imagenetx.benchmarks.loading`); None: it is not loaded
            by :meth:`load` (the generic benchmark: any dataset)
        keeps_geometry: its images are already the model's input size and
            go to the model as they are, without its resize and crop
            (ImageNet-C, -C-bar and -3DCC: 224 x 224 centre crops made by
            the authors' scripts)
        border_crop: pixels the model run cuts from every side of each
            image before the model's own preprocessing (ObjectNet's 2-pixel
            frame); 0: none
    """

    name = "generic"
    title = "Any classification dataset"
    default_slicing: Optional[str] = None
    default_label_space = "class"
    group_slicing: Optional[str] = None
    discovery_slicings: Tuple[str, ...] = ()
    needs_logits = False
    output_classes = "imagenet"
    keeps_geometry = False
    border_crop = 0
    loading: Optional[Loading] = None

    def load(self, progress=None, token: Optional[str] = None, **options):
        """Builds a dataset of this benchmark from one of its sources.

        The source is one keyword, its location the value:
        ``ImageNetD().load(dir="/data/ImageNet-D")``,
        ``ImageNetX().load(hub="ILSVRC/imagenet-1k", max_samples=1000)``;
        none names the default source where there is one
        (``CueConflict().load()``: the download). ``self.loading`` lists
        the sources and the options each takes.

        Args:
            progress (None): a progress callback, for the sources that report
            token (None): a Hugging Face token, for the Hub
            **options: the source, its options, and ``name``,
                ``overwrite``, ``gt_field``

        Returns:
            ``(dataset, summary)``

        Raises:
            ImageNetXError: for a source or option this benchmark does not
                take (before anything is loaded), or what its loader raises
        """
        if self.loading is None:
            raise ImageNetXError(
                f"Benchmark '{self.name}' says no sources to load from: build the dataset "
                "with FiftyOne (fo.Dataset.from_dir, load_from_hub), then `tag` it")
        return load_with(self.loading, progress=progress, token=token, **options)

    def matches(self, samples, settings=None) -> bool:
        """Whether a dataset holds this benchmark's fields (their names may
        come from ``settings``)."""
        return True

    def slicing_names(self, samples, settings) -> List[str]:
        """The names of the slicings this benchmark offers."""
        return []

    def slicing(self, samples, settings, name: str) -> Optional[Slicing]:
        """One named slicing (None when the benchmark has no such slicing);
        only it is resolved, so its values are read only when used."""
        return None

    def label_spaces(self, settings) -> Dict[str, LabelSpace]:
        """The named label spaces this benchmark offers."""
        return {"class": ExactClass(f"{settings.gt_field}.class_index")}

    def base_query(self, settings) -> Optional[dict]:
        """The query (MongoDB, on sample fields) that selects the samples
        that count, when one query says it; None: every sample counts. The
        Model Evaluation scenarios add it to each subset
        (:mod:`imagenetx.benchmarks.scenarios`)."""
        return None

    def base_view(self, samples, settings):
        """The samples that count: those :meth:`base_query` selects."""
        query = self.base_query(settings)
        return samples if query is None else samples.match(query)

    def decisions(self) -> Optional[Decisions]:
        """How a 1000-way model's probabilities become this benchmark's
        decisions; None: the ImageNet class itself."""
        return None

    def tagged(self, dataset, settings=None, changed: bool = True) -> ScenarioChanges:
        """Called after this benchmark's fields were written on a dataset:
        registers its slicings as Model Evaluation scenarios and indexes
        what the panels and views query (tags, the slicings' fields).

        Args:
            dataset: the dataset
            settings (None): where its fields are (an analysis ``Settings``
                or a :class:`~imagenetx.benchmarks.scenarios.FieldNames`)
            changed (True): whether the fields may have changed since the
                scenarios were made; False (a re-tag that wrote nothing)
                keeps the scenarios this project wrote when all of them are
                still there and each slicing has one, without reading the
                samples, and only makes the missing indexes on the fields
                they read
        """
        settings = settings or FieldNames()
        if not changed:
            fields = kept_scenario_fields(dataset, self, settings)
            if fields is not None:
                ensure_indexes(dataset, ["tags", *fields])
                return ScenarioChanges()
        wanted = wanted_scenarios(dataset, self, settings)
        ensure_indexes(dataset, ["tags", *(p for _, fields in wanted.values() for p in fields)])
        return apply_scenarios(dataset, wanted)

    def predictions_written(self, dataset, field: str) -> None:
        """Called after a prediction field was written: drops the scenarios
        of fields deleted since (its label and correctness are indexed when
        it is evaluated); a subclass may do more (e.g. save views of it)."""
        prune_scenarios(dataset)

    def check_fields(self, samples, settings) -> None:
        """Raises ImageNetXError when the dataset lacks this benchmark's
        fields."""
        path = f"{settings.gt_field}.class_index"
        if not samples.has_field(path):
            raise ImageNetXError(
                f"Dataset '{samples._dataset.name}' has no ground truth field "
                f"'{settings.gt_field}' with a class_index: run `tag_dataset()` "
                "(ImageNet file names) or `Benchmark.load()`, or pass `gt_field`"
            )


def field_slicing(samples, path: str) -> Slicing:
    """A slicing by any categorical field of a dataset: its distinct values,
    single- or multi-valued as the field is (``tags`` works too).

    Raises:
        ImageNetXError: when the field does not exist or is not categorical
    """
    if not samples.has_field(path):
        raise ImageNetXError(
            f"Unknown slicing '{path}': it is neither a slicing of this "
            "benchmark nor a field of the dataset; pass a field path such "
            "as 'tags' or 'my_field'"
        )
    field = samples.get_field(path)
    parts = path.split(".")
    inside_list = any(
        isinstance(samples.get_field(".".join(parts[:i])), fo.ListField)
        for i in range(1, len(parts)))
    if inside_list:
        raise ImageNetXError(
            f"Field '{path}' lies inside a list (e.g. detections): slice by a "
            "field with one value or one list of values per sample")
    multi = isinstance(field, fo.ListField)
    inner = field.field if multi else field
    if not isinstance(inner, (fo.StringField, fo.BooleanField, fo.IntField)):
        raise ImageNetXError(
            f"Field '{path}' is a {type(field).__name__}, not a categorical "
            "field (strings, booleans, integers or lists of them): slice by "
            "another field"
        )
    values = sorted((v for v in samples.distinct(path) if v is not None), key=value_order)
    if len(values) > MAX_SLICES:
        raise ImageNetXError(
            f"Field '{path}' has {len(values):,} distinct values, more than "
            f"{MAX_SLICES}: slice by a coarser field"
        )
    name = path.rsplit(".", 1)[-1]
    return Slicing(name, path, tuple(values), multi=multi, title=name)
