"""A model's published clean accuracy, and whether a run reproduces it.

A run over a whole clean set (ImageNet's 50,000 val images, RobustBench's
5,000) should land on the top-1 its weights were published with; when it
does not, its weights, preprocessing or network differ from what their
authors ran, whatever else the run says. The published figures are public
tables, shipped with their sources (``data/published_accuracy/README.md``):
timm's ``results-imagenet.csv`` (per pretrained tag and test size),
open_clip's zero-shot results table, RobustBench's ``model_info`` (clean
accuracy over its 5,000), and torchvision's weights metadata (``acc@1``,
read by the torchvision source when it loads the weights).

:func:`published_top1` finds a model's figure from its run record;
:func:`check_top1` compares a run's top-1 with it. Nothing here imports a
model library.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Dict, Optional

#: the folder of the published tables
TABLES = Path(__file__).parent / "data" / "published_accuracy"
TIMM_TABLE = TABLES / "timm" / "results-imagenet.csv"
OPEN_CLIP_TABLE = TABLES / "open_clip" / "openclip_results.csv"
ROBUSTBENCH_TABLE = TABLES / "robustbench" / "imagenet_linf_model_info.json"

#: ImageNet's validation images, which timm, torchvision and open_clip count
IMAGENET_VAL = 50000
#: RobustBench's subset, which its ``clean_acc`` counts
ROBUSTBENCH_N = 5000
#: the two-sided 95 % normal quantile of the sampling-error allowance
Z95 = 1.959964


@dataclass(frozen=True)
class Published:
    """A model's published top-1.

    Attributes:
        top1: in percent
        source: where it is published, in words (``torchvision
            ResNet50_Weights.IMAGENET1K_V1``)
        n: the images it counts
        decimals: the decimals the table rounds it to
    """

    top1: float
    source: str
    n: int = IMAGENET_VAL
    decimals: int = 2

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Optional[dict]) -> Optional["Published"]:
        return cls(**d) if d else None


@dataclass(frozen=True)
class Top1Check:
    """A run's top-1 beside the published one.

    Attributes:
        correct, n: the run's right predictions, of its images
        published: the published figure
        tolerance: the difference allowed, in points: the sampling error
            of ``n`` images (95 %) plus half the table's last decimal
    """

    correct: int
    n: int
    published: Published
    tolerance: float

    @property
    def top1(self) -> float:
        return 100.0 * self.correct / self.n

    @property
    def difference(self) -> float:
        """Points above (+) or below (-) the published top-1."""
        return self.top1 - self.published.top1

    @property
    def reproduces(self) -> bool:
        return abs(self.difference) <= self.tolerance

    def line(self) -> str:
        """``top-1 76.13 % (torchvision ResNet50_Weights.IMAGENET1K_V1:
        76.13 %)``, and the flag where it does not reproduce."""
        head = (f"top-1 {self.top1:.2f} % ({self.published.source}: "
                f"{self.published.top1:.{self.published.decimals}f} %)")
        if self.reproduces:
            return head
        return (f"{head}: does not reproduce its published accuracy "
                f"({self.difference:+.1f} points): check its weights and preprocessing")

    def to_dict(self) -> dict:
        return {"top1": self.top1, "correct": self.correct, "n": self.n,
                "published": self.published.to_dict(), "difference": self.difference,
                "tolerance": self.tolerance, "reproduces": self.reproduces,
                "line": self.line()}


def check_top1(correct: int, n: int, published: Published) -> Top1Check:
    """A run's ``correct`` of ``n`` beside ``published``.

    The allowance is what two runs of the same network on comparable images
    may differ by: ``1.96 * sqrt(p (1 - p) / n)`` (in points) plus half a
    unit of the table's last decimal.
    """
    if n <= 0:
        raise ValueError("check_top1 needs at least one image")
    p = correct / n
    tolerance = 100.0 * Z95 * math.sqrt(p * (1 - p) / n) + 0.5 * 10 ** -published.decimals
    return Top1Check(correct, n, published, tolerance)


@lru_cache(maxsize=1)
def timm_table() -> Dict[str, Dict[int, float]]:
    """timm's ``model`` (name.tag) -> ``{test size: top-1}``."""
    out: Dict[str, Dict[int, float]] = {}
    with open(TIMM_TABLE, encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            out.setdefault(row["model"], {})[int(row["img_size"])] = float(row["top1"])
    return out


@lru_cache(maxsize=1)
def open_clip_table() -> Dict[tuple, float]:
    """open_clip's ``(name, pretrained)`` -> zero-shot ImageNet top-1 (a fraction)."""
    out = {}
    with open(OPEN_CLIP_TABLE, encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            if row.get("ImageNet 1k"):
                out[(row["name"], row["pretrained"])] = float(row["ImageNet 1k"])
    return out


@lru_cache(maxsize=1)
def robustbench_table() -> Dict[str, float]:
    """RobustBench's ImageNet L-inf entry -> its clean accuracy (percent)."""
    with open(ROBUSTBENCH_TABLE, encoding="utf-8") as f:
        entries = json.load(f)["imagenet_linf"]
    return {name: float(e["clean_acc"]) for name, e in entries.items()}


def tables_present() -> Dict[str, bool]:
    """Each shipped table, by source, and whether it is there (``doctor``)."""
    return {"timm": TIMM_TABLE.is_file(), "open_clip": OPEN_CLIP_TABLE.is_file(),
            "robustbench": ROBUSTBENCH_TABLE.is_file()}


def timm_top1(weights: str, size: Optional[int]) -> Optional[Published]:
    """timm's published top-1 of ``name.tag`` at the test size ``size``
    (its only row when it has one size; None: not in the table, or not at
    that size)."""
    rows = timm_table().get(weights)
    if not rows:
        return None
    if size in rows:
        top1 = rows[size]
    elif len(rows) == 1 and size is None:
        top1 = next(iter(rows.values()))
    else:
        return None
    where = f" at {size} px" if size else ""
    return Published(top1, f"timm {weights}{where}", IMAGENET_VAL, 3)


def open_clip_top1(arch: str, tag: str) -> Optional[Published]:
    """open_clip's published zero-shot top-1 of ``arch/tag`` (None: not in
    its table)."""
    value = open_clip_table().get((arch, tag))
    if value is None:
        return None
    return Published(round(100 * value, 2), f"open_clip results {arch}/{tag}", IMAGENET_VAL, 2)


def robustbench_top1(entry: str) -> Optional[Published]:
    """RobustBench's clean accuracy of a leaderboard entry over its 5,000."""
    value = robustbench_table().get(entry)
    if value is None:
        return None
    return Published(value, f"RobustBench {entry}", ROBUSTBENCH_N, 2)


def published_top1(record: dict) -> Optional[Published]:
    """The published top-1 of the model a run record names (None: no
    table has it, or the run's weights are not the published ones).

    A torchvision record carries its weights' own ``acc@1`` (its
    ``published_top1``, read where torchvision is loaded); a timm record its
    weights' ``name.tag`` and the input size; an open_clip record its
    architecture and tag (with OpenAI's templates, as the table's runs); a RobustBench leaderboard entry (a checkpoint run
    under ``protocol=robustbench``) its entry name.
    """
    if not record.get("pretrained", True):
        return None
    own = Published.from_dict(record.get("published_top1"))
    if own is not None:
        return own
    applied = record.get("protocol_applied") or {}
    entry = applied.get("leaderboard_entry")
    if entry:
        return robustbench_top1(entry)
    source, spec = record.get("source"), str(record.get("spec") or "")
    if source == "timm" and record.get("weights"):
        size = (applied.get("input_size") or record.get("input_size") or [None])[-1]
        return timm_top1(record["weights"], size)
    if source == "open_clip" and record.get("templates", "openai") == "openai":
        # open_clip's table is zero-shot over OpenAI's 80 templates: other
        # prompts are another classifier
        arch, _, tag = spec.partition(":")[2].partition("/")
        return open_clip_top1(arch, tag) if tag else None
    return None
