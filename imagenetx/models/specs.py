"""Model specs, in the signatures earlier versions used: a thin front over
:mod:`imagenetx.models.sources` (the sources) and
:mod:`imagenetx.models.classifier` (the model interface).

Every mistake raises :class:`ImageNetXError` before any image is read.
"""

from __future__ import annotations

from typing import Optional

from imagenetx.models.preprocess import Preprocessing  # noqa: F401 (re-exported)
from imagenetx.models.sources import (  # noqa: F401 (re-exported)
    SCHEMES,
    SPEC_HELP,
    ModelRequest,
    check_request,
    split_spec,
)

__all__ = ["SCHEMES", "SPEC_HELP", "Preprocessing", "LoadedModel", "ModelRequest",
           "parse_spec", "load_model"]


def __getattr__(name):  # the classifier class, without importing torch here
    if name == "LoadedModel":
        from imagenetx.models.classifier import Classifier  # lazy: start-up

        return Classifier
    raise AttributeError(name)


def parse_spec(
    spec: str, arch: Optional[str] = None, remap_by_position: bool = False,
    templates: Optional[str] = None, prompt: Optional[str] = None,
) -> tuple:
    """Checks a model spec and its options, importing no model library.

    Returns:
        ``(scheme, rest, arch)``

    Raises:
        ImageNetXError: if the spec or an option is malformed
    """
    check_request(spec, ModelRequest(arch=arch, remap_by_position=remap_by_position,
                                     templates=templates, prompt=prompt))
    scheme, rest = split_spec(spec)
    return scheme, rest, arch


def load_model(
    spec: str,
    arch: Optional[str] = None,
    pretrained: bool = True,
    remap_by_position: bool = False,
    templates: Optional[str] = None,
    prompt: Optional[str] = None,
    classes: str = "imagenet",
):
    """Loads the classifier a spec names (see
    :func:`imagenetx.models.sources.load_model`).

    Returns:
        a :class:`~imagenetx.models.classifier.Classifier`
    """
    from imagenetx.models.sources import load_model as load  # lazy: start-up

    return load(spec, ModelRequest(arch=arch, pretrained=pretrained,
                                   remap_by_position=remap_by_position,
                                   templates=templates, prompt=prompt,
                                   classes=classes))
