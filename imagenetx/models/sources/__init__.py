"""Model sources: each turns a spec ``SCHEME:REST`` into a
:class:`~imagenetx.models.classifier.Classifier`.

A lazy registry, like the probes': a source's module (and the library it
wraps) is imported only when a spec names it. Each source module defines

-   ``SYNTAX``: how its specs look, for messages
-   ``ZERO_SHOT``: whether it builds zero-shot heads (templates apply); a
    function of the request where that depends on it (a checkpoint of an
    ``open_clip:`` architecture)
-   ``parse(rest, request)``: checks a spec's syntax, importing nothing heavy
-   ``load(rest, request)``: the classifier

Specs:

-   ``timm:NAME``, ``torchvision:NAME[:WEIGHTS]``, ``checkpoint:PATH`` (with
    ``arch``): ImageNet-1k classifiers
-   ``open_clip:ARCH[/PRETRAINED]``: a zero-shot classifier built with
    open_clip's own ``build_zero_shot_classifier``
-   ``hf:ORG/NAME``: a transformers image classifier with ImageNet-1k labels,
    or a transformers CLIP / SigLIP model as a zero-shot classifier
-   ``zoo:NAME``: a FiftyOne zoo image classifier
"""

# lazy imports: start-up (a spec is checked without importing torch or the model's library)

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

from imagenetx.errors import ImageNetXError
from imagenetx.registry import Registry

def _check_scheme(scheme: str) -> None:
    if not scheme or not scheme.replace("_", "").isalnum():
        raise ImageNetXError(
            f"Cannot register model source '{scheme}': a scheme is letters, digits "
            "and underscores")


#: scheme -> the module that loads it (its dotted name, imported on first
#: use, or the module itself)
SOURCES: Registry = Registry("model source", check_name=_check_scheme)
SOURCES.register("timm", "imagenetx.models.sources.timm")
SOURCES.register("torchvision", "imagenetx.models.sources.torchvision")
SOURCES.register("checkpoint", "imagenetx.models.sources.checkpoint")
SOURCES.register("open_clip", "imagenetx.models.sources.open_clip")
SOURCES.register("hf", "imagenetx.models.sources.hf")
SOURCES.register("zoo", "imagenetx.models.sources.zoo")

#: the prompt templates a zero-shot head can use by name
TEMPLATE_SETS = ("openai", "simple")


@dataclass(frozen=True)
class ModelRequest:
    """What a source needs besides the spec: the model options.

    Attributes:
        arch: the architecture of a ``checkpoint:`` spec
        pretrained: False loads random weights (throughput tests)
        remap_by_position: load a checkpoint by position (see
            :mod:`imagenetx.models.sources.checkpoint`)
        templates: zero-shot prompt templates: ``"openai"`` (OpenAI's 80
            ImageNet templates), ``"simple"``, or a text file with one
            template per line, each with ``{c}``
        prompt: a single zero-shot prompt with ``{c}`` (instead of
            ``templates``), e.g. ``"A photo of a {c}"``
        classes: the output classes of a zero-shot head (``"imagenet"`` or
            a benchmark's, :mod:`imagenetx.classes.outputs`); classifiers
            with their own head ignore it
        default_prompt: the prompt a protocol pins, used by a zero-shot head
            when neither ``templates`` nor ``prompt`` is given; classifiers
            with their own head ignore it (an ``hf:`` spec is zero-shot
            only for a CLIP or SigLIP, which its config says)
    """

    arch: Optional[str] = None
    pretrained: bool = True
    remap_by_position: bool = False
    templates: Optional[str] = None
    prompt: Optional[str] = None
    classes: str = "imagenet"
    default_prompt: Optional[str] = None

    @property
    def zero_shot_options(self) -> bool:
        """Whether a zero-shot option was given."""
        return bool(self.templates or self.prompt)

    @property
    def head_prompt(self) -> Optional[str]:
        """The single prompt of a zero-shot head: the one given, else the
        protocol's unless templates are given."""
        if self.prompt is not None or self.templates:
            return self.prompt
        return self.default_prompt

    def with_classes(self, classes: str) -> "ModelRequest":
        return replace(self, classes=classes)


def register_source(scheme: str, module) -> None:
    """Adds a model source: specs ``scheme:REST`` then load through
    ``module`` (a module, or its dotted name, imported on first use), which
    defines

    -   ``SYNTAX``: how its specs look, e.g. ``"mymodels:NAME"`` (the error
        for an unknown spec lists every source's)
    -   ``ZERO_SHOT``: whether its classifiers build zero-shot heads
    -   ``parse(rest, request)``: checks ``REST`` without loading anything
        heavy, raising :class:`~imagenetx.errors.ImageNetXError`
    -   ``load(rest, request)``: the
        :class:`~imagenetx.models.classifier.Classifier`

    as the built-in sources do (``request``: a :class:`ModelRequest`)."""
    SOURCES.register(scheme, module)


def source_of(scheme: str):
    """The source module of ``scheme`` (imported on first use)."""
    return SOURCES.get(scheme)


def spec_syntax() -> str:
    """How specs look, one per registered source (for messages)."""
    syntaxes = [getattr(source, "SYNTAX", f"{scheme}:...") for scheme, source in SOURCES.items()]
    return ", ".join(syntaxes[:-1]) + f" or {syntaxes[-1]}" if len(syntaxes) > 1 else syntaxes[0]


def split_spec(spec: str) -> tuple:
    """``(scheme, rest)`` of a spec, checked to name a registered source.

    Raises:
        ImageNetXError: for a spec of no registered source, listing them
    """
    scheme, sep, rest = (spec or "").partition(":")
    if not sep or scheme not in SOURCES or not rest:
        raise ImageNetXError(f"Unknown model spec '{spec}': use {spec_syntax()}")
    return scheme, rest


def check_request(spec: str, request: ModelRequest) -> None:
    """Checks a spec and its options without loading anything heavy.

    Raises:
        ImageNetXError: for a malformed spec, an option that does not apply
            to it, or a malformed zero-shot prompt
    """
    scheme, rest = split_spec(spec)
    if scheme != "checkpoint":
        if request.remap_by_position:
            raise ImageNetXError(
                "`remap_by_position=True` applies to "
                f"checkpoint:PATH specs only, not '{spec}'")
        if request.arch:
            raise ImageNetXError(
                f"`arch` applies to checkpoint:PATH specs only, not '{spec}'")
    source = source_of(scheme)
    zero_shot = getattr(source, "ZERO_SHOT", False)
    if request.zero_shot_options and not (zero_shot(request) if callable(zero_shot)
                                          else zero_shot):
        raise ImageNetXError(
            f"`templates` and `prompt` apply to zero-shot models (open_clip:, "
            f"hf: CLIP or SigLIP), not '{spec}'")
    if request.templates and request.prompt:
        raise ImageNetXError("Pass `templates` or `prompt`, not both")
    if request.prompt is not None:
        check_prompt(request.prompt)
    if request.templates:
        check_templates(request.templates)
    source.parse(rest, request)


def check_prompt(prompt: str, where: str = "`prompt`") -> None:
    """Raises ImageNetXError unless ``prompt`` has exactly one ``{c}``."""
    if prompt.count("{c}") != 1:
        raise ImageNetXError(
            f"{where} '{prompt}' must hold the class name as {{c}} exactly once, "
            "e.g. 'A photo of a {c}'")
    try:
        prompt.format(c="x")
    except (IndexError, KeyError, ValueError) as e:
        raise ImageNetXError(
            f"{where} '{prompt}' is not a template with only {{c}} ({e}): write "
            "other braces as {{ and }}") from None


def check_templates(templates: str) -> None:
    """Raises ImageNetXError unless ``templates`` names a template set or a
    readable file of templates, each with ``{c}``."""
    import os

    if templates in TEMPLATE_SETS:
        return
    if not os.path.isfile(templates):
        raise ImageNetXError(
            f"`templates` '{templates}' is neither {' nor '.join(TEMPLATE_SETS)} "
            "nor a file: pass a text file with one template per line, each with {c}")
    lines = read_template_file(templates)
    if not lines:
        raise ImageNetXError(f"`templates` file '{templates}' holds no template")
    for k, line in enumerate(lines, 1):
        check_prompt(line, where=f"Line {k} of `templates` file '{templates}'")


def read_template_file(path: str) -> list:
    """The non-empty lines of a templates file."""
    with open(path, encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip()]


def load_model(spec: str, request: Optional[ModelRequest] = None):
    """Loads the classifier a spec names.

    Args:
        spec: ``SCHEME:REST`` (see the module docstring)
        request (None): the model options (default: pretrained, ImageNet)

    Returns:
        a :class:`~imagenetx.models.classifier.Classifier`

    Raises:
        ImageNetXError: for an unknown model, weights that cannot be fetched,
            or a model whose outputs are not the requested classes
    """
    from imagenetx.models.classifier import check_outputs

    request = request or ModelRequest()
    check_request(spec, request)
    scheme, rest = split_spec(spec)
    classifier = source_of(scheme).load(rest, request)
    classifier.spec = spec
    classifier.module.eval()
    check_outputs(classifier)
    return classifier
