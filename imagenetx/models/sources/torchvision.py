"""``torchvision:NAME[:WEIGHTS]``: a torchvision classification model and
its weights enum entry (``DEFAULT`` when omitted), e.g.
``torchvision:resnet50:IMAGENET1K_V2``."""

# lazy imports: start-up (a spec is checked without importing torch or the model's library)

from __future__ import annotations

import os
from typing import Optional

from imagenetx.classes.outputs import imagenet_outputs
from imagenetx.errors import ImageNetXError
from imagenetx.models.sources._common import first_line, suggest
from imagenetx.models.sources._network import check_url_weights

SYNTAX = "torchvision:NAME[:WEIGHTS]"
ZERO_SHOT = False


def parse(rest: str, request) -> None:
    """Nothing to check before torchvision is imported."""


def load(rest: str, request):
    from imagenetx.models.classifier import Classifier

    import torchvision.models as tvm

    name, _, weights = rest.partition(":")
    model, prep = torchvision_model(name, weights or None, request.pretrained)
    entry = tvm.get_model_weights(name)[(weights or "DEFAULT").split(".")[-1]]
    return Classifier(f"torchvision:{rest}", model, prep, imagenet_outputs(),
                      "torchvision", record={"pretrained": request.pretrained,
                                             "weights": str(entry),
                                             "published_top1": published(entry)})


def published(entry) -> Optional[dict]:
    """A weights entry's own ImageNet top-1 (``meta["_metrics"]``), as
    :class:`~imagenetx.protocols.published.Published` keeps it."""
    top1 = ((entry.meta.get("_metrics") or {}).get("ImageNet-1K") or {}).get("acc@1")
    if top1 is None:
        return None
    return {"top1": float(top1), "source": f"torchvision {entry}", "n": 50000,
            "decimals": 2}


def torchvision_model(name: str, weights_name: Optional[str], pretrained: bool):
    """``(model, preprocessing)`` of a torchvision model and weights name.

    Raises:
        ImageNetXError: for an unknown model or weights name, or weights that
            cannot be fetched
    """
    import torch
    import torchvision.models as tvm

    from imagenetx.models.preprocess import from_torchvision_weights

    names = tvm.list_models(module=tvm)
    if name not in names:
        raise ImageNetXError(
            f"Unknown torchvision classification model '{name}'"
            f"{suggest(name, names)}: see "
            "torchvision.models.list_models(module=torchvision.models)"
        )
    enum = tvm.get_model_weights(name)
    weights_name = weights_name or "DEFAULT"
    try:
        weights = enum[weights_name.split(".")[-1]]
    except KeyError:
        raise ImageNetXError(
            f"Unknown weights '{weights_name}' of torchvision model '{name}':"
            f" use one of DEFAULT, {', '.join(w.name for w in enum)}"
        ) from None
    if pretrained:
        check_url_weights(weights.url, f"torchvision model '{name}'",
                          f"load a local state dict with `model=checkpoint:PATH` and "
                          f"`arch=torchvision:{name}`")
    # random weights: still the network the weights were trained as (a SWAG
    # ViT's 384 or 518 input, as torchvision's builder sets it from them)
    network = ({"image_size": weights.meta["min_size"][0]}
               if not pretrained and name.startswith("vit_") and "min_size" in weights.meta
               else {})
    try:
        model = tvm.get_model(name, weights=weights if pretrained else None, **network)
    except Exception as e:  # download errors
        raise ImageNetXError(
            f"Cannot get the weights {weights} of torchvision model '{name}' "
            f"({type(e).__name__}: {first_line(e)}): connect to the "
            "internet, or put the file in the torch hub cache "
            f"({os.path.join(torch.hub.get_dir(), 'checkpoints')}), or load a"
            f" local state dict with `model=checkpoint:PATH` and "
            f"`arch=torchvision:{name}`"
        ) from e
    return model, from_torchvision_weights(weights)
