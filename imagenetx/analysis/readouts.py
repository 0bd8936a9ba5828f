"""The lines a reader needs beside a field's numbers, wherever they are
shown (the command line, the panel, the run's result in the App, the HTML
report, the Hub card): which images they count
(:mod:`imagenetx.analysis.populations`) and what they may be compared with
(:mod:`imagenetx.analysis.comparability`)."""

from typing import Dict, List, Sequence

from imagenetx.analysis.comparability import comparability, published_check
from imagenetx.analysis.populations import populations
from imagenetx.analysis.settings import Settings
from imagenetx.store.datasets import get_dataset


def readout_notes(samples, fields: Sequence[str], settings: Settings = None,
                  **kwargs) -> Dict[str, List[str]]:
    """Per field, its population line (where per-factor and whole-set
    numbers count different images), its comparability line (where a
    run of this project made it) and its clean top-1 beside the model's
    published one (where the field covers the images that figure counts);
    fields with none are left out.

    Args:
        samples: a dataset, view, or dataset name
        fields: prediction fields
        settings (None): as in :func:`imagenetx.analysis.compute_ratios`,
            with keyword overrides
    """
    samples = get_dataset(samples)
    s = Settings.create(settings, **kwargs)
    out: Dict[str, List[str]] = {}
    counts = populations(samples, fields, s)
    for f in fields:
        lines = []
        counted = counts[f]
        if counted is not None and counted.note():
            lines.append(counted.note())
        compared = comparability(samples, f)
        if compared is not None:
            lines.append(compared.line())
        checked = published_check(samples, f)
        if checked is not None:
            lines.append(checked.line())
        if lines:
            out[f] = lines
    return out

