"""model-vs-human's model zoo: which wrapper its authors ran each network
and weights with.

The table (``data/model_vs_human/zoo.json``, MIT, read from
``modelvshuman/models/pytorch/model_zoo.py``, ``utils.load_model`` and
``models/wrappers/pytorch.py`` at the commit it names) gives each of the
zoo's 102 models its wrapper and, where the wrapper preprocesses itself,
its resize, crop and mean / std, with the specs of this project that load
the same network and weights. A model is found by those specs exactly (a
torchvision model by its weights entry, a timm model by the name the zoo
passed to timm, a checkpoint by a file named after the zoo's model), never
by a name's prefix: ``timm:inception_v3`` is not the zoo's
``inception_v3`` (torchvision's).
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Dict, Optional, Tuple

ZOO_FILE = Path(__file__).parent / "data" / "model_vs_human" / "zoo.json"


@lru_cache(maxsize=1)
def zoo() -> Dict[str, dict]:
    """The zoo's model name -> its entry (``wrapper``, ``specs``, ...)."""
    with open(ZOO_FILE, encoding="utf-8") as f:
        return json.load(f)["models"]


@lru_cache(maxsize=1)
def _by_spec() -> Dict[str, str]:
    return {spec: name for name, entry in zoo().items() for spec in entry["specs"]}


def spec_keys(spec: str, record: dict) -> Tuple[str, ...]:
    """The specs the zoo table may name a loaded model by: a torchvision
    model with its resolved weights entry
    (``torchvision:resnet50:IMAGENET1K_V1``), a timm model as given and as
    the ``name.tag`` timm resolved it to, a checkpoint by its file's stem
    (``checkpoint:resnet50_trained_on_SIN``), any other as given."""
    scheme, _, rest = spec.partition(":")
    if scheme == "torchvision" and record.get("weights"):
        return (f"torchvision:{rest.partition(':')[0]}:"
                f"{str(record['weights']).split('.')[-1]}",)
    if scheme == "timm" and record.get("weights"):
        return spec, f"timm:{record['weights']}"
    if scheme == "checkpoint":
        return (f"checkpoint:{os.path.splitext(os.path.basename(rest))[0]}",)
    return (spec,)


def zoo_entry(spec: str, record: dict) -> Tuple[Optional[str], Optional[dict]]:
    """``(zoo name, entry)`` of the zoo's model a loaded model is (its spec
    and run record), or ``(None, None)``: the zoo never ran it."""
    by_spec = _by_spec()
    name = next((by_spec[k] for k in spec_keys(spec, record) if k in by_spec), None)
    return (name, zoo()[name]) if name else (None, None)
