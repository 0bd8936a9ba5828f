"""What a field's numbers may be compared with: its comparability line.

A field predicted or attacked under a paper's protocol keeps the protocol
and its departures in its run record (``info["imagenetx_model"]``). Where
every pin held, its numbers are "comparable to COLUMN of TABLE"; where
one did not, "not the authors' setting: PARAM, ...". A run on fewer
ImageNet val images than the published column counts (the suite's PGD-40 on
1,000 of Gavrikov & Keuper's 50,000) adds its sampling error: the accuracy
with its 95 % Wilson interval.
"""

from dataclasses import dataclass
from typing import Dict, Optional, Tuple


from imagenetx.analysis.populations import val_images, whole_set_top1
from imagenetx.benchmarks import get_benchmark
from imagenetx.benchmarks.ood.layouts import LAYOUTS
from imagenetx.errors import ImageNetXError
from imagenetx.metrics.stats import INTERVAL_LEVEL, wilson_interval
from imagenetx.protocols import get_protocol
from imagenetx.protocols.base import departure_note
from imagenetx.protocols.published import Published, Top1Check, check_top1
from imagenetx.store.datasets import get_dataset
from imagenetx.store.names import INFO_KEY

#: the key of an attacked field's column in :data:`PUBLISHED_COLUMNS`
ATTACK = "attack"

#: per protocol: the published table its runs are compared with, and per
#: benchmark (:data:`ATTACK`: an attack on ImageNet val) the column
PUBLISHED_COLUMNS: Dict[str, Tuple[str, Dict[str, str]]] = {
    "gavrikov": ("Gavrikov & Keuper's benchmark.csv", {
        "imagenet_x": "top1_acc/imagenet",
        ATTACK: "top1_acc/PGD-40/low",
        "cue_conflict": "shape-bias",
        **{lay.benchmark: lay.column for lay in LAYOUTS.values()
           if lay.column.startswith("top1_acc/")},  # the others: not in the table
    }),
    "robustbench": ("RobustBench's ImageNet L-inf leaderboard", {
        "imagenet_x": "clean accuracy", ATTACK: "AutoAttack robust accuracy"}),
    "model-vs-human": ("model-vs-human's cue-conflict results (Geirhos et al.)", {
        "cue_conflict": "shape bias"}),
    "imagenet-d": ("ImageNet-D's results (Zhang et al., CVPR 2024)", {
        "imagenet_d": "top-1 per nuisance"}),
}


@dataclass(frozen=True)
class Sampled:
    """A run on fewer images than its published column: the accuracy and
    its interval.

    Attributes:
        correct, n: the field's right predictions, of its images
        published_n: the images the column counts
        low, high: the Wilson interval at ``level``
    """

    correct: int
    n: int
    published_n: int
    low: float
    high: float
    level: float = INTERVAL_LEVEL

    def note(self) -> str:
        return (f"on {self.n:,} of the column's {self.published_n:,} images: "
                f"{100 * self.correct / self.n:.2f}% ({self.level:.0%} interval "
                f"{100 * self.low:.2f}-{100 * self.high:.2f}%)")

    def to_dict(self) -> dict:
        return {"correct": self.correct, "n": self.n, "published_n": self.published_n,
                "low": self.low, "high": self.high, "level": self.level}


@dataclass(frozen=True)
class Comparability:
    """What a field's numbers may be compared with.

    Attributes:
        protocol: the protocol it ran under (None: none)
        departures: the pins it set otherwise
        table, column: the published table and column (None: not known)
        sampled: its sampling error where it ran on fewer images than
            the column counts
        details: each departure in words, where the record has them
    """

    protocol: Optional[str]
    departures: Tuple[str, ...] = ()
    table: Optional[str] = None
    column: Optional[str] = None
    sampled: Optional[Sampled] = None
    details: Optional[Dict[str, str]] = None

    def line(self) -> str:
        """``comparable to COLUMN of TABLE`` or ``not the authors' setting:
        PARAM, ...``, with the sampling error where there is one."""
        if self.protocol is None:
            head = "not the authors' setting: no protocol (predict with `protocol=NAME`)"
        elif self.departures:
            head = (f"{departure_note(self.departures, self.details)} "
                    f"(`protocol={self.protocol}`)")
        elif self.column:
            head = f"comparable to {self.column} of {self.table}"
        else:
            head = f"every pin of `protocol={self.protocol}` held"
        return head + (f"; {self.sampled.note()}" if self.sampled else "")

    def to_dict(self) -> dict:
        return {"protocol": self.protocol, "departures": list(self.departures),
                "table": self.table, "column": self.column, "line": self.line(),
                "sampled": self.sampled.to_dict() if self.sampled else None}


def comparability(samples, field: str) -> Optional[Comparability]:
    """The comparability of ``field`` on ``samples`` (a dataset, view or
    name), from its run record; None for a field no run of this project
    made (imported predictions)."""
    samples = get_dataset(samples)
    if not samples.has_field(field):
        return None
    record = (samples._dataset.get_field(field).info or {}).get(INFO_KEY)
    if not record:
        return None
    name = record.get("protocol")
    if not name:
        return Comparability(None)
    benchmark = get_benchmark(samples).name
    table, columns = PUBLISHED_COLUMNS.get(name, (None, {}))
    column = columns.get(ATTACK if record.get("attack") and benchmark == "imagenet_x"
                         else benchmark)
    published_n = (record.get("protocol_pins") or {}).get("n")
    sampled = None
    if benchmark == "imagenet_x" and published_n:
        top1 = whole_set_top1(samples, [field])[field]
        if 0 < top1.n < published_n:
            low, high = wilson_interval(top1.correct, top1.n, INTERVAL_LEVEL)
            sampled = Sampled(top1.correct, top1.n, int(published_n), low, high)
    if table is None:  # a protocol registered elsewhere: its own words
        try:
            protocol = get_protocol(name)
            table, column = protocol.title, protocol.metric or None
        except ImageNetXError:  # a protocol of an old record, no longer registered
            table = column = None
    return Comparability(name, tuple(record.get("departures") or ()), table, column,
                         sampled, record.get("departure_details"))


def published_check(samples, field: str) -> Optional[Top1Check]:
    """The field's clean top-1 beside its model's published one, where its
    run record names a published figure and the field covers the images
    that figure counts (all 50,000 val images; RobustBench's 5,000); None
    otherwise.

    Args:
        samples: a dataset, view or name
        field: a prediction field a run of this project made
    """
    samples = get_dataset(samples)
    if not samples.has_field(field):
        return None
    record = (samples._dataset.get_field(field).info or {}).get(INFO_KEY) or {}
    published = Published.from_dict(record.get("published_top1"))
    if published is None or record.get("attack"):
        return None
    top1 = whole_set_top1(val_images(samples), [field])[field]
    if top1.n != published.n:
        return None
    return check_top1(top1.correct, top1.n, published)
