"""Zero-shot heads: a CLIP-style model as a classifier over named classes.

The head's weights are the class embeddings of open_clip's own
``build_zero_shot_classifier`` (each class's prompts encoded, normalized,
averaged, normalized again); a batch's logits are
``scale * normalize(image features) @ weights + bias``, with the model's
own ``logit_scale`` (and SigLIP's ``logit_bias``). The weights cost nothing
per batch: they are computed once per (model, classes, prompts), when the
run starts (after its checks: a refused field or prompt costs no text
encoding), and cached on disk under ``$IMAGENETX_CACHE_DIR/zero_shot``.

Prompts: OpenAI's 80 ImageNet templates (``openai``, the default, as
OpenCLIP reports ImageNet), open_clip's ``simple`` set, a file of
templates, or one ``prompt`` (ImageNet-D's ``"A photo of a {c}"``).
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Callable, List, Optional, Sequence, Union

import torch

from imagenetx.classes.outputs import OutputClasses
from imagenetx.models.sources import read_template_file
from imagenetx.store.downloads import cache_root

#: the templates used when none are given
DEFAULT_TEMPLATES = "openai"


def template_texts(templates: Optional[str] = None, prompt: Optional[str] = None) -> List[str]:
    """The prompt templates, each with ``{c}`` for the class name.

    Args:
        templates (None): ``"openai"``, ``"simple"`` or a file of templates;
            None: ``"openai"`` unless ``prompt`` is given
        prompt (None): a single template
    """
    if prompt is not None:
        return [prompt]
    templates = templates or DEFAULT_TEMPLATES
    if templates in ("openai", "simple"):
        from open_clip import zero_shot_metadata as meta

        fns = (meta.OPENAI_IMAGENET_TEMPLATES if templates == "openai"
               else meta.SIMPLE_IMAGENET_TEMPLATES)
        return [fn("{c}") for fn in fns]

    return read_template_file(templates)


def as_callables(texts: Sequence[str]) -> List[Callable[[str], str]]:
    """Templates as open_clip's builder takes them (``{c}`` is named, so
    ``str.format`` with a positional class name would not fill it)."""
    return [lambda c, t=t: t.format(c=c) for t in texts]


def describe(classes: OutputClasses, texts: Sequence[str], templates: Optional[str],
             prompt: Optional[str]) -> dict:
    """The zero-shot part of a run's record."""
    how = "prompt" if prompt is not None else (templates or DEFAULT_TEMPLATES)
    return {"zero_shot": True, "classes": classes.name, "templates": how,
            "num_templates": len(texts), "prompt": prompt,
            "example": texts[0].format(c=classes.prompt_names[0])}


class ZeroShotClassifier(torch.nn.Module):
    """Image features -> logits over the head's classes.

    Args:
        encoder: normalized images -> image features (the image tower)
        weights: ``(D, K)`` normalized class embeddings, or a function that
            builds them when the run starts (:meth:`materialize`): a run that
            refuses its field or its prompts then refuses before paying for
            ``K`` x templates text encodings
        scale: the logit scale (``logit_scale.exp()``)
        bias (None): the logit bias (SigLIP)
    """

    def __init__(self, encoder: torch.nn.Module,
                 weights: Union[torch.Tensor, Callable[[], torch.Tensor]], scale: float,
                 bias: Optional[float] = None):
        super().__init__()
        self.encoder = encoder
        self._build = weights if callable(weights) else None
        self.register_buffer("weights", None if callable(weights) else weights.float())
        self.scale = float(scale)
        self.bias = None if bias is None else float(bias)

    @property
    def materialized(self) -> bool:
        """Whether the class embeddings are built."""
        return self.weights is not None

    def materialize(self) -> None:
        """Builds the class embeddings now, if they were deferred (on the
        CPU, before the module moves to its device)."""
        if self.weights is None:
            self.weights = self._build().float()
            self._build = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = self.encoder(x)
        features = torch.nn.functional.normalize(features.float(), dim=-1)
        if self.weights is None:  # not built by the engine: built where it is used
            self.materialize()
            self.weights = self.weights.to(features.device)
        logits = self.scale * features @ self.weights
        return logits if self.bias is None else logits + self.bias


def materialize(module: torch.nn.Module) -> None:
    """Builds the deferred class embeddings of the zero-shot heads in
    ``module`` (the engine calls it once its run's checks have passed)."""
    for part in module.modules():
        if isinstance(part, ZeroShotClassifier):
            part.materialize()


def cached_weights(key: dict, build: Callable[[], torch.Tensor]) -> torch.Tensor:
    """The head weights for ``key`` from the disk cache, else built and
    cached (written to a temporary name first)."""

    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:24]
    path = cache_root() / "zero_shot" / f"{digest}.pt"
    if path.is_file():
        try:
            return torch.load(path, weights_only=True)
        except Exception:  # a damaged cache entry is rebuilt
            pass
    weights = build().detach().float().cpu()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    torch.save(weights, tmp)
    os.replace(tmp, path)
    return weights


def head_key(spec: str, pretrained: bool, classes: OutputClasses,
             texts: Sequence[str]) -> dict:
    """What a head's weights depend on (its cache key). Random weights
    (``pretrained=False``) are never the same twice, so they are keyed by
    nothing cacheable."""
    return {"spec": spec, "pretrained": pretrained, "classes": classes.name,
            "names": list(classes.prompt_names), "templates": list(texts)}
