"""Read the columns of a view in one query."""

from typing import Dict, List, Sequence

import numpy as np
from fiftyone import ViewField as F
from fiftyone.core.expressions import ViewExpression
import fiftyone.core.utils as fou

from imagenetx.memory import gc_paused


def read_columns(view, paths: Sequence[str], ids: bool = False) -> Dict[str, list]:
    """Reads sample field paths of a view with one ``values()`` query.

    Args:
        view: the view
        paths: the field paths (duplicates are read once)
        ids (False): also return the sample ids under ``"id"``

    Returns:
        ``{path: list}``, one value per sample (None where missing); stored
        vectors (logits) come back as numpy arrays
    """
    paths = list(dict.fromkeys(paths))
    exprs = [F(p) for p in paths]
    if ids:
        exprs.append(F("_id"))
    # one array per sample decodes about twice as fast as one key per
    # field. Decoding creates ~10 objects per sample, which would trigger
    # full garbage collections over everything FiftyOne has loaded: they
    # are paused meanwhile.
    with gc_paused():
        rows = view.values(ViewExpression(exprs), _raw=True)
        n = len(rows)
        columns = list(zip(*rows)) if n else [()] * len(exprs)
        del rows
    out = {p: list(c) for p, c in zip(paths, columns)}
    for p, column in out.items():
        first = next((v for v in column if v is not None), None)
        if isinstance(first, bytes):
            out[p] = [None if v is None else fou.deserialize_numpy_array(v)
                      for v in column]
    if ids:
        out["id"] = [str(i) for i in columns[-1]]
    return out


def float_column(values: List) -> np.ndarray:
    """Floats with None -> NaN."""
    return np.array([np.nan if v is None else v for v in values], dtype=np.float64)
