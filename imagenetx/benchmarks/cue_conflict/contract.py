"""The fields every cue-conflict dataset carries, and the check for them."""

from imagenetx.benchmarks.loading import load_hint
from imagenetx.errors import ImageNetXError

#: the fields every cue-conflict dataset carries (see ``loaders``)
CONTRACT_FIELDS = ("shape", "texture", "texture_index", "cue_conflict")


def require_contract(samples, gt_field: str = "ground_truth") -> None:
    """Raises ImageNetXError unless ``samples`` hold the cue-conflict
    fields."""
    for path in (*CONTRACT_FIELDS, f"{gt_field}.class_index"):
        if not samples.has_field(path):
            raise ImageNetXError(
                f"Dataset '{samples._dataset.name}' has no field '{path}' of "
                f"the cue-conflict contract: {load_hint('cue_conflict')} with "
                "`Benchmark.load()`")
