"""A shift's dataset, read for effective robustness and calibration.

``--shift KEY=DATASET`` names a shift (a key of the testbed's lines,
:data:`imagenetx.protocols.effective_robustness.SHIFTS`, or ``imagenet-v2``
for every ImageNetV2 variant a dataset holds) and the dataset loaded with
that shift's release (``imagenetx load``). :func:`read_shift` checks the
two belong together and scores the field as the shift's benchmark scores it
(ImageNet-A/-R: the argmax over their 200 classes; ObjectNet: over the 125
ImageNet classes of its 113, right if any of the image's class's).
"""

from dataclasses import dataclass
from typing import Dict, Optional, Sequence, Tuple

import numpy as np

from imagenetx.analysis.engine import Prepared, prepare
from imagenetx.benchmarks.loading import load_hint
from imagenetx.benchmarks.ood.layouts import LAYOUTS
from imagenetx.errors import ImageNetXError
from imagenetx.options import V2_VARIANTS
from imagenetx.protocols import effective_robustness as er
from imagenetx.store.datasets import get_dataset

#: each shift's release (a key of ``LAYOUTS``) and the class subset of its
#: class-matched clean top-1 (None: all of ImageNet val)
SHIFT_DATASETS: Dict[str, Tuple[str, Optional[str]]] = {
    **{f"imagenet-v2-{v}": ("v2", None) for v in V2_VARIANTS},
    "imagenet-sketch": ("sketch", None),
    "imagenet-a": ("a", "a"),
    "imagenet-r": ("r", "r"),
    "imagenet-c": ("c", None),
    "objectnet": ("objectnet", "objectnet"),
}

#: ``imagenet-v2=DATASET``: every variant the dataset holds
V2_ALL = "imagenet-v2"


@dataclass
class ShiftData:
    """One shift dataset's scored field.

    Attributes:
        key: the key as given, resolved (``imagenet-v2`` or a shift's key)
        prepared: the dataset read and scored (``extra_paths`` among its
            columns)
        masks: ``{shift: (n,) bool}`` the counted images of each shift it
            holds (one per ImageNetV2 variant)
    """

    key: str
    prepared: Prepared
    masks: Dict[str, np.ndarray]

    @property
    def dataset(self) -> str:
        return self.prepared.dataset_name


def resolve_key(key: str) -> str:
    """``imagenet-v2`` (and ``imagenetv2``) as is, else the shift's key."""
    if key in (V2_ALL, "imagenetv2"):
        return V2_ALL
    name = er.get_shift(key).name
    if name not in SHIFT_DATASETS:
        raise ImageNetXError(
            f"Shift '{key}' cannot be scored from a dataset yet: use one of "
            f"{', '.join([V2_ALL, *SHIFT_DATASETS])}")
    return name


def read_shift(samples, pred_field: str, key: str, gt_field: str = "ground_truth",
               extra_paths: Sequence[str] = ()) -> ShiftData:
    """Reads one shift's dataset and scores ``pred_field`` on it.

    Raises:
        ImageNetXError: an unknown shift, a dataset of another benchmark,
            no such field, or no image of the variant asked for
    """
    key = resolve_key(key)
    layout = LAYOUTS[SHIFT_DATASETS["imagenet-v2-matched-frequency" if key == V2_ALL
                                    else key][0]]
    samples = get_dataset(samples)
    name = samples._dataset.name
    benchmark = ((samples._dataset.info or {}).get("imagenetx") or {}).get("benchmark")
    if benchmark != layout.benchmark:
        raise ImageNetXError(
            f"Dataset '{name}' is not an {layout.title} dataset (its benchmark: "
            f"{benchmark or 'none'}): pass `{key}=DATASET` with a dataset that "
            f"`Benchmark.load()` made ({load_hint(layout.benchmark)})")
    if not samples.has_field(pred_field):
        raise ImageNetXError(
            f"Dataset '{name}' has no field '{pred_field}': predict it there "
            f"(`predict`, `field='{pred_field}'`), or name another `pred_field`")
    p = prepare(samples, [pred_field], gt_field=gt_field, intervals=False,
                extra_paths=[*layout.fields, *extra_paths])
    counted = p.counted[pred_field]
    if layout.kind != "v2":
        return ShiftData(key, p, {key: counted})
    variants = np.array([str(v) for v in p.columns["variant"]])
    masks = {}
    for v in V2_VARIANTS:
        shift = f"imagenet-v2-{v}"
        keep = counted & (variants == v)
        if keep.any() and key in (V2_ALL, shift):
            masks[shift] = keep
    if not masks:
        which = "" if key == V2_ALL else f"{key[len('imagenet-v2-'):]} "
        raise ImageNetXError(
            f"Dataset '{name}' holds no ImageNetV2 {which}image with a '{pred_field}' "
            "prediction: load that variant, or name the one it holds")
    return ShiftData(key, p, masks)


def parse_shifts(specs) -> Dict[str, str]:
    """``{shift: dataset}`` from a mapping, or from ``KEY=DATASET`` strings
    (``imagenet-v2=my-v2``, as ``--shift`` takes them)."""
    if specs is None or isinstance(specs, dict):
        return dict(specs or {})
    out = {}
    for spec in specs:
        key, sep, name = str(spec).partition("=")
        if not sep or not key or not name:
            raise ImageNetXError(
                f"Shift '{spec}' is not KEY=DATASET: write e.g. imagenet-v2=my-imagenet-v2 "
                f"(keys: {', '.join([V2_ALL, *SHIFT_DATASETS])})")
        resolve_key(key)
        out[key] = name
    return out
