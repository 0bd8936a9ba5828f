"""The authors' augmentation sweeps: which hyper-parameter each varies, and
the strength of each run, parsed from its name.

Run names carry their hyper-parameters as ``_<name><number>`` tokens, e.g.
``eval_resnet50_crop8.0_wd1e-05_color100.0_id1662124509``. Strengths follow
the authors' ``plots.py`` (``extract_hparams_*``), on a 0-100 scale:

-   ``crop``: 100 minus the random-crop area lower bound in percent
    (``crop8.0``: crops down to 8% of the image, strength 92; ``crop100.0``:
    no cropping, strength 0)
-   ``colorjitter``: ``color`` (the paper's t x 100)
-   ``gaussian_blur``: ``smoothing`` (t x 100)

``colorjitter_crop`` and ``adaptive_colorjitter`` hold one setting each
(their strength does not vary). A run whose name lacks the sweep's token is
reported, never guessed.
"""

import re
from dataclasses import dataclass
from typing import Dict, List, Tuple

import numpy as np

from imagenetx.errors import ImageNetXError

_TOKEN = re.compile(r"_([A-Za-z]+)([-+]?\d*\.?\d+(?:[eE][-+]?\d+)?)(?=_|$)")


@dataclass(frozen=True)
class Sweep:
    """One augmentation sweep.

    Attributes:
        group: the authors' group (a folder of :mod:`reference` tables)
        token: the name token that holds the strength
        complement: strength = 100 - value (crop: a lower bound)
        title: what the strength means
    """

    group: str
    token: str
    complement: bool
    title: str

    def strength(self, value: float) -> float:
        """The strength (0-100) of a token value."""
        return 100.0 - value if self.complement else value


#: the sweeps, by group
SWEEPS = {
    "crop": Sweep("crop", "crop", True,
                  "random crop: 100 - crop area lower bound (%)"),
    "colorjitter": Sweep("colorjitter", "color", False,
                         "colour jitter strength (t x 100)"),
    "gaussian_blur": Sweep("gaussian_blur", "smoothing", False,
                           "Gaussian blur strength (t x 100)"),
    "colorjitter_crop": Sweep("colorjitter_crop", "color", False,
                              "colour jitter + crop, one setting"),
    "adaptive_colorjitter": Sweep("adaptive_colorjitter", "color", False,
                                  "per-class colour jitter + crop, one setting"),
}


def get_sweep(group: str) -> Sweep:
    """The sweep of a group; ImageNetXError for a group that is not one."""
    try:
        return SWEEPS[group]
    except KeyError:
        raise ImageNetXError(
            f"'{group}' is not an augmentation sweep: use one of "
            f"{', '.join(SWEEPS)}") from None


def parse_run_name(name: str) -> Dict[str, float]:
    """The ``_<name><number>`` hyper-parameters of a run name, e.g.
    ``{"crop": 8.0, "wd": 1e-05, "color": 100.0, "id": 1662124509.0}``."""
    return {k: float(v) for k, v in _TOKEN.findall(name)}


def run_strengths(names, sweep: Sweep) -> Tuple[np.ndarray, List[str]]:
    """The strength of each run of a sweep.

    Returns:
        ``(strengths, unparsable)``: a float array (NaN where the name has
        no strength) and the names without one
    """
    out = np.full(len(names), np.nan)
    unparsable = []
    for i, name in enumerate(names):
        value = parse_run_name(name).get(sweep.token)
        if value is None:
            unparsable.append(name)
        else:
            out[i] = sweep.strength(value)
    return out, unparsable
