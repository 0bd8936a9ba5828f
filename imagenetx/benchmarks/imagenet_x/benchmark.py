"""ImageNet-X's analysis spec: its slicings (top factor, all factors,
meta-class, class) and label spaces (class, meta-class, ReaL)."""

from imagenetx.benchmarks.base import Benchmark
from imagenetx.benchmarks.loading import IMAGENET_X
from imagenetx.benchmarks.imagenet_x.factors import FACTORS
from imagenetx.classes.imagenet import METACLASSES, class_table
from imagenetx.classes.spaces import ExactClass, InSet, SameGroup
from imagenetx.errors import ImageNetXError
from imagenetx.metrics.slicing import Slicing


class ImageNetX(Benchmark):
    """ImageNet-X: 16 factors of variation on ImageNet val and train images.

    Which images count: annotated samples (``imagenetx.split`` set), without
    the paper's 3,000 prototypes unless ``include_prototypes``.
    """

    name = "imagenet_x"
    title = "ImageNet-X"
    loading = IMAGENET_X
    default_slicing = "top_factor"
    default_label_space = "class"
    group_slicing = "metaclass"
    discovery_slicings = ("factors", "metaclass", "class")

    def matches(self, samples, settings=None) -> bool:
        field_name = settings.field_name if settings else "imagenetx"
        return samples.has_field(f"{field_name}.top_factor")

    def slicing_names(self, samples, settings):
        return ["top_factor", "factors", "metaclass", "class"]

    def slicing(self, samples, settings, name):
        fn = settings.field_name
        return {
            "top_factor": Slicing("top_factor", f"{fn}.top_factor", FACTORS,
                                  title="factor"),
            "factors": Slicing("factors", f"{fn}.factors", FACTORS,
                               multi=True, title="factor"),
            "metaclass": Slicing("metaclass", f"{fn}.metaclass", METACLASSES,
                                 title="meta-class"),
            "class": Slicing("class", f"{settings.gt_field}.label",
                             class_table().labels, title="class"),
        }.get(name)

    def label_spaces(self, settings):
        gt = f"{settings.gt_field}.class_index"
        return {
            "class": ExactClass(gt),
            "metaclass": SameGroup(class_table().metaclass_index, gt_path=gt),
            "real": InSet(
                f"{settings.field_name}.real_labels", "real",
                empty="skip" if settings.real_mode == "clean" else "count",
                missing_error=(
                    "ReaL labels exist only for validation images, and this "
                    "view holds training images: select validation samples "
                    f"(`{settings.field_name}.split == 'val'`) for --correct real"
                ),
            ),
        }

    def base_query(self, settings):
        # a plain query filter is cheaper for the database than an expression
        query = {f"{settings.field_name}.split": {"$ne": None}}
        if not settings.include_prototypes:
            query[f"{settings.field_name}.prototype"] = False
        return query

    def check_fields(self, samples, settings):
        if not samples.has_field(settings.field_name):
            raise ImageNetXError(
                f"Dataset '{samples._dataset.name}' has no field "
                f"'{settings.field_name}': run `tag_dataset()` first"
            )
        if not samples.has_field(f"{settings.gt_field}.class_index"):
            raise ImageNetXError(
                f"Dataset '{samples._dataset.name}' has no ground truth field "
                f"'{settings.gt_field}' with a class_index: run `tag_dataset()`"
                " (or pass `gt_field`)"
            )
