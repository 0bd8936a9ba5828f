"""Model specs to suggest: timm's pretrained names, open_clip's pretrained
pairs, and a short list of well-known Hugging Face and FiftyOne zoo ids.
Any other spec is still accepted; these only help a user find one.
"""

from __future__ import annotations

import functools
from typing import List

#: shown before anything is typed: one of each kind worth knowing
FEATURED = (
    "timm:resnet50.a1_in1k",
    "timm:vit_base_patch16_224.augreg2_in21k_ft_in1k",
    "timm:convnext_base.fb_in22k_ft_in1k",
    "torchvision:resnet50:IMAGENET1K_V2",
    "open_clip:ViT-B-16/openai",
    "open_clip:ViT-B-32/laion2b_s34b_b79k",
    "open_clip:ViT-B-16-SigLIP/webli",
    "hf:google/vit-base-patch16-224",
    "hf:microsoft/resnet-50",
    "hf:openai/clip-vit-base-patch32",
    "zoo:resnet50-imagenet-torch",
)

#: well-known Hugging Face and zoo ids beyond the featured ones
KNOWN = (
    "hf:facebook/convnext-base-224",
    "hf:facebook/convnext-large-224-22k-1k",
    "hf:facebook/deit-base-patch16-224",
    "hf:microsoft/beit-base-patch16-224",
    "hf:microsoft/swin-base-patch4-window7-224",
    "hf:google/efficientnet-b0",
    "hf:openai/clip-vit-base-patch16",
    "hf:openai/clip-vit-large-patch14",
    "hf:google/siglip-base-patch16-224",
    "zoo:mobilenet-v2-imagenet-torch",
    "zoo:resnet101-imagenet-torch",
    "zoo:vgg16-imagenet-torch",
    "zoo:densenet121-imagenet-torch",
    "zoo:inception-v3-imagenet-torch",
)

#: the most suggestions a form shows at once
MAX_SUGGESTIONS = 40


@functools.lru_cache(maxsize=1)
def all_specs() -> tuple:
    """Every spec the catalog knows (imports timm and open_clip once)."""
    specs = list(FEATURED) + list(KNOWN)
    try:
        import open_clip

        specs += [f"open_clip:{a}/{t}" for a, t in open_clip.list_pretrained()]
    except ImportError:
        pass
    try:
        import timm

        specs += [f"timm:{n}" for n in timm.list_pretrained() if "in1k" in n or "." not in n]
    except ImportError:
        pass
    return tuple(dict.fromkeys(specs))


def suggest_specs(text: str = "", limit: int = MAX_SUGGESTIONS) -> List[str]:
    """Specs for what a user has typed: the featured ones for nothing,
    else those containing every word typed, prefix matches first."""
    text = (text or "").strip().lower()
    if not text:
        return list(FEATURED)
    words = text.split()
    hits = [s for s in all_specs() if all(w in s.lower() for w in words)]
    hits.sort(key=lambda s: (not s.lower().startswith(text), len(s)))
    return hits[:limit]


def is_zero_shot(spec: str) -> bool:
    """Whether a spec names a zero-shot model (its prompts apply):
    ``open_clip:``, or an ``hf:`` CLIP or SigLIP id."""
    scheme, _, rest = (spec or "").partition(":")
    if scheme == "open_clip":
        return True
    return scheme == "hf" and any(k in rest.lower() for k in ("clip", "siglip"))
