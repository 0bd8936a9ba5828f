"""What a protocol is: the values a paper's own code ran with, pinned.

A :class:`Protocol` is data: the decoder, the resize / crop /
interpolation, the normalization, the label space, the prompt, the subset
and its completeness rule, the attack and its budget, the precision, how
many images, and the arithmetic of the published column. Each pin carries
the line of the authors' code it comes from (:attr:`Protocol.references`).
The model pipeline applies the pins (:mod:`imagenetx.models.protocols`);
settings given on top of them are departures, recorded with the field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

#: how images become model inputs, by name: what each means
GEOMETRIES = {
    "model": "the model's own configuration (timm / torchvision / Hugging Face)",
    "clip": "CLIP's own preprocess transform (open_clip's, the model's own for "
            "other models)",
    "resize256-crop224": "PIL Resize(256) bilinear + CenterCrop(224) for every model",
    "robustbench": "timm models: their own Resize(floor(size / crop_pct)) + CenterCrop; "
                   "others: Res256Crop224, PIL Resize(256) bilinear + CenterCrop(224)",
    "model-vs-human": "224 x 224 images as they are (ToTensor only); other sizes PIL "
                      "Resize(256) bilinear + CenterCrop(224)",
}

#: how the [0, 1] input is normalized, by name
NORMALIZATIONS = {
    "model": "the model's own mean / std (inside the model)",
    "imagenet": "ImageNet's mean (0.485, 0.456, 0.406) / std (0.229, 0.224, 0.225)",
}

#: ImageNet's mean and std (torchvision's, model-vs-human's ``PytorchLoader``)
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


@dataclass(frozen=True)
class Protocol:
    """The values a paper's code ran with.

    Attributes:
        name: the registry name (``--protocol NAME``)
        title: the paper, in words
        decoder: ``pil`` (every reference decodes with PIL)
        geometry: a key of :data:`GEOMETRIES`
        normalization: a key of :data:`NORMALIZATIONS`
        classes: the label space of a zero-shot head (None: the dataset's)
        prompt: the one zero-shot prompt, with ``{c}`` (None: not pinned)
        logit_scale: a zero-shot head's fixed logit scale (None: the model's)
        subset: the images the published numbers use, by name
            (``robustbench``: RobustBench's 5,000 ids; None: all)
        n: how many images the published numbers use (None: not pinned)
        attack: an attack's settings (``AttackSettings`` fields), or None
        amp: autocast (``off``: float32), or None (not pinned)
        batch_size: the batch size the published arithmetic depends on
        metric: the published column's arithmetic, in words
        benchmarks: the benchmarks whose own protocol this is (their
            datasets get it by default)
        benchmark_geometry: benchmark name -> the geometry the authors used
            on that benchmark's images instead of :attr:`geometry`
        references: pin -> the authors' line it comes from
    """

    name: str
    title: str
    decoder: str = "pil"
    geometry: str = "model"
    normalization: str = "model"
    classes: Optional[str] = None
    prompt: Optional[str] = None
    logit_scale: Optional[float] = None
    subset: Optional[str] = None
    n: Optional[int] = None
    attack: Optional[Dict[str, object]] = None
    amp: Optional[str] = None
    batch_size: Optional[int] = None
    metric: str = ""
    benchmarks: Tuple[str, ...] = ()
    benchmark_geometry: Dict[str, str] = field(default_factory=dict)
    references: Dict[str, str] = field(default_factory=dict)

    def pins(self) -> Dict[str, object]:
        """Every pinned value, by parameter name (a field's run record keeps
        them)."""
        out: Dict[str, object] = {"decoder": self.decoder, "geometry": self.geometry}
        out.update({f"geometry.{b}": g for b, g in self.benchmark_geometry.items()})
        out["normalization"] = self.normalization
        for name in ("classes", "prompt", "logit_scale", "subset", "n", "amp",
                     "batch_size"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        if self.attack:
            out.update({f"attack.{k}": v for k, v in self.attack.items()})
        if self.metric:
            out["metric"] = self.metric
        return out

    def geometry_for(self, benchmark: str) -> str:
        """The geometry on ``benchmark``'s images."""
        return self.benchmark_geometry.get(benchmark, self.geometry)

    def describe(self) -> Dict[str, str]:
        """Each pin in words, with its reference (``imagenetx protocols``)."""
        words = {"geometry": GEOMETRIES[self.geometry],
                 "normalization": NORMALIZATIONS[self.normalization],
                 **{f"geometry.{b}": GEOMETRIES[g] for b, g in self.benchmark_geometry.items()}}
        for k in ("attack.eps", "attack.step_size"):
            if self.attack and k[7:] in self.attack:
                words[k] = f"{self.attack[k[7:]] * 255:g}/255"
        return {k: str(words.get(k, v)) for k, v in self.pins().items()}
