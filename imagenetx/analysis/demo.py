"""The offline demo: all 48,868 annotated validation images, no download.

Without ImageNet images each sample gets a generated placeholder that shows
its class and top factor. As a real analysis that needs no image and no
model, the demo stores ImageNet's own labels as a prediction field and
scores them against the ReaL labels: the paper's label-bias analysis.
"""

import os
import time
from dataclasses import dataclass, field

import fiftyone as fo

from imagenetx.benchmarks.imagenet_x import annotations as anno
from imagenetx.analysis import slice_accuracies
from imagenetx.store.datasets import check_new_dataset_name, make_dataset
from imagenetx.classes.imagenet import class_table
from imagenetx.metrics import SliceTable
from imagenetx.benchmarks.imagenet_x.placeholders import SIZE, write_placeholders
from imagenetx.benchmarks.imagenet_x.sources import add_images, find_imagenet_files
from imagenetx.store.classifications import write_classifications
from imagenetx.benchmarks.imagenet_x.tagging import TagSummary, tag_dataset

DEFAULT_NAME = "imagenet-x-demo"

#: the prediction field that holds ImageNet's original labels
LABELS_FIELD = "imagenet_labels"


@dataclass
class DemoSummary:
    """What :func:`build_demo` made, how long each step took, and the
    label-bias table."""

    dataset: str
    samples: int
    real_images: int
    placeholders_drawn: int
    tagging: TagSummary
    label_bias: SliceTable
    seconds: dict = field(default_factory=dict)

    def timing(self) -> str:
        total = sum(self.seconds.values())
        parts = ", ".join(f"{k} {v:.1f}s" for k, v in self.seconds.items())
        return f"built in {total:.1f}s ({parts})"


def build_demo(
    name: str = DEFAULT_NAME,
    overwrite: bool = False,
    imagenet_dir: str = None,
    placeholder_dir: str = None,
) -> DemoSummary:
    """Builds the demo dataset of the 48,868 annotated validation images.

    Args:
        name ("imagenet-x-demo"): the dataset name
        overwrite (False): whether to replace an existing dataset
        imagenet_dir (None): an ImageNet validation folder whose real images
            to use; images it lacks get placeholders
        placeholder_dir (None): where to write placeholders, by default
            ``{fo.config.default_dataset_dir}/{name}/placeholders``

    Returns:
        a :class:`DemoSummary`
    """
    seconds = {}
    tic = time.perf_counter()

    def lap(step):
        nonlocal tic
        now = time.perf_counter()
        seconds[step] = seconds.get(step, 0.0) + now - tic
        tic = now

    check_new_dataset_name(name, overwrite)
    real = find_imagenet_files(imagenet_dir, "val") if imagenet_dir else {}
    val = anno.load_split("val")
    lap("annotations")

    folder = placeholder_dir or os.path.join(
        fo.config.default_dataset_dir, name, "placeholders"
    )
    table = class_table()
    paths, metadata, to_draw, keys = [], [], [], []
    for file_name, klass, factor in zip(
        val.file_names, val.class_index, val.top_factor
    ):
        if file_name in real:
            paths.append(real[file_name][0])
            metadata.append(None)
            continue
        path = os.path.join(folder, file_name)
        paths.append(path)
        metadata.append(
            fo.ImageMetadata(width=SIZE, height=SIZE, num_channels=3,
                             mime_type="image/jpeg")
        )
        to_draw.append(path)
        keys.append((table.labels[klass], factor, table.metaclass[klass]))
    drawn = write_placeholders(to_draw, keys) if to_draw else 0
    lap("placeholders")

    dataset = make_dataset(name, overwrite)
    ids = add_images(dataset, paths, metadata)
    lap("samples")

    tagging = tag_dataset(dataset)
    lap("tagging")

    # ImageNet's own label of each image, as if it were a model's prediction
    original = anno.val_labels()[
        [anno.val_number(f) - 1 for f in val.file_names]
    ]
    write_classifications(
        dataset, LABELS_FIELD, ids, original, confidence=[1.0] * len(ids)
    )
    # ImageNet's labels are the ground truth, so only ReaL can score them:
    # the App panel opens with that correctness
    dataset.info["imagenetx"] = {"benchmark": "imagenet_x", "default_correct": "real",
                                 "demo": True}
    dataset.save()
    lap("labels")

    label_bias = slice_accuracies(
        dataset, LABELS_FIELD, correct="real", real_mode="paper"
    )
    lap("analysis")

    return DemoSummary(
        dataset=name,
        samples=len(ids),
        real_images=len(paths) - len(to_draw),
        placeholders_drawn=drawn,
        tagging=tagging,
        label_bias=label_bias,
        seconds=seconds,
    )
