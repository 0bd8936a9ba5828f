"""Where a probe's results are stored, read without torch (the analysis and
the panel only read them; :mod:`imagenetx.probes.run` writes them)."""

from typing import Dict, Optional

from imagenetx.store.datasets import get_dataset
from imagenetx.store.names import PROBE_INFO_KEY as INFO_KEY

#: a level's entry before it has run
NOT_RUN = -1


def probe_field(field: str, probe: str) -> str:
    """The list field of ``probe``'s results for the prediction field
    ``field``: ``lite0`` + ``spectral`` -> ``lite0_spectral``."""
    return f"{field}_{probe}"


def probe_info(samples, field: str, probe: str) -> Optional[dict]:
    """The stored description of a probe field: ``{"probe", "field",
    "model", "levels"}``, or None if it has not been run."""
    dataset = get_dataset(samples)._dataset
    name = probe_field(field, probe)
    if not dataset.has_field(name):
        return None
    info = dataset.get_field(name).info or {}
    return info.get(INFO_KEY)


def probe_fields(samples) -> Dict[str, dict]:
    """``{probe field: its info}`` of every probe run on the dataset."""
    dataset = get_dataset(samples)._dataset
    out = {}
    for name, f in dataset.get_field_schema().items():
        info = (f.info or {}).get(INFO_KEY)
        if info:
            out[name] = info
    return out
