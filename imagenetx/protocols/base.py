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
from typing import Dict, Optional, Sequence, Tuple

#: how images become model inputs, by name: what each means
GEOMETRIES = {
    "model": "the model's own configuration (timm / torchvision / Hugging Face)",
    "clip": "CLIP's own preprocess transform (open_clip's, the model's own for "
            "other models)",
    "resize256-crop224": "PIL Resize(256) bilinear + CenterCrop(224) for every model",
    "robustbench": "the leaderboard entry's named preprocessing (Res256Crop224, "
                   "BicubicRes256Crop224, Res224, Crop288; timm: RobustBench's "
                   "get_timm_model_preprocessing), `preprocessing=NAME`, else "
                   "Res256Crop224 (a departure: preprocessing not named)",
    "model-vs-human-loader": "model-vs-human's loader: 224 x 224 images as they are "
                             "(ToTensor only); other sizes PIL Resize(256) bilinear + "
                             "CenterCrop(224)",
    "model-vs-human": "model-vs-human's loader, then its wrappers: a model trained with "
                      "ImageNet's mean / std at 224 gets the loader's tensor; any other "
                      "gets it back as a PIL image (undo_default_preprocessing, "
                      "ToPILImage), its own Resize + CenterCrop where its input size is "
                      "not 224, and its own mean / std",
}

#: how the [0, 1] input is normalized, by name
NORMALIZATIONS = {
    "model": "the model's own mean / std (inside the model)",
    "imagenet": "ImageNet's mean (0.485, 0.456, 0.406) / std (0.229, 0.224, 0.225)",
    "robustbench": "what RobustBench feeds the leaderboard entry: the raw [0, 1] tensor "
                   "where its network reads it so, its own mean / std elsewhere; a model "
                   "outside the leaderboard its own",
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
        templates: a zero-shot head's templates by name (``openai``: OpenAI's
            80 ImageNet templates; None: not pinned)
        logit_scale: a zero-shot head's fixed logit scale (None: the model's)
        subset: the images the published numbers use, by name
            (``robustbench``: RobustBench's 5,000 ids; None: all)
        n: how many images the published numbers use (None: not pinned)
        attack: an attack's settings (``AttackSettings`` fields), or None
        amp: autocast (``off``: float32), or None (not pinned)
        cuda_zero_shot_amp: the autocast of a zero-shot (CLIP) head on CUDA,
            where the reference loads CLIP in half precision
            (``clip.load(..., "cuda")``); None: :attr:`amp`
        batch_size: the batch size the published arithmetic depends on
        metric: the published column's arithmetic, in words
        benchmarks: the benchmarks whose own protocol this is (their
            datasets get it by default)
        applies_to: the benchmarks whose datasets it may be applied to
            (empty: any)
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
    templates: Optional[str] = None
    logit_scale: Optional[float] = None
    subset: Optional[str] = None
    n: Optional[int] = None
    attack: Optional[Dict[str, object]] = None
    amp: Optional[str] = None
    cuda_zero_shot_amp: Optional[str] = None
    batch_size: Optional[int] = None
    metric: str = ""
    benchmarks: Tuple[str, ...] = ()
    applies_to: Tuple[str, ...] = ()
    benchmark_geometry: Dict[str, str] = field(default_factory=dict)
    references: Dict[str, str] = field(default_factory=dict)

    def pins(self) -> Dict[str, object]:
        """Every pinned value, by parameter name (a field's run record keeps
        them)."""
        out: Dict[str, object] = {"decoder": self.decoder, "geometry": self.geometry}
        out.update({f"geometry.{b}": g for b, g in self.benchmark_geometry.items()})
        out["normalization"] = self.normalization
        for name in ("classes", "prompt", "templates", "logit_scale", "subset", "n", "amp",
                     "cuda_zero_shot_amp", "batch_size"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        if self.attack:
            out.update({f"attack.{k}": v for k, v in self.attack.items()})
        if self.metric:
            out["metric"] = self.metric
        return out

    def applies(self, benchmark: str) -> bool:
        """Whether it may be applied to a dataset of ``benchmark``."""
        return not self.applies_to or benchmark in self.applies_to

    def amp_for(self, zero_shot: bool, device_type: str) -> Optional[str]:
        """The pinned autocast of a model on a device type (``cuda``,
        ``cpu``): half precision for a zero-shot head on CUDA where the
        reference loads CLIP so, else :attr:`amp` (None: not pinned)."""
        if zero_shot and device_type == "cuda" and self.cuda_zero_shot_amp is not None:
            return self.cuda_zero_shot_amp
        return self.amp

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


def resolve_amp(protocol: Optional[Protocol], requested: str, zero_shot: bool,
                device_type: str) -> Tuple[str, bool]:
    """The autocast a run uses and whether it departs from the protocol's.

    Args:
        protocol: the run's protocol (None: nothing pinned)
        requested: ``--amp`` (``auto``: the protocol's, else the device's
            default)
        zero_shot: whether the model is a zero-shot (CLIP-style) head
        device_type: ``cuda`` or ``cpu``

    Returns:
        ``(amp, departs)``: ``amp`` as ``--amp`` takes it, and True when the
        user's ``--amp`` differs from the pinned precision
    """
    pinned = protocol.amp_for(zero_shot, device_type) if protocol is not None else None
    if pinned is None:
        return requested, False
    if requested == "auto":
        return pinned, False
    return requested, requested != pinned


def departure_note(departures: Sequence[str], details: Optional[Dict[str, str]] = None) -> str:
    """What a comparison with a published column says of a run that departs
    from its protocol: ``not the authors' setting: images: 8 of 5,000``
    (each departure in ``details``' words where it has them)."""
    details = details or {}
    return (f"not the authors' setting: {', '.join(details.get(d, d) for d in departures)}"
            if departures else "")
