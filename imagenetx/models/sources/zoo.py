"""``zoo:NAME``: a FiftyOne zoo image classifier, e.g.
``zoo:resnet50-imagenet-torch``, loaded with FiftyOne's own
``fiftyone.zoo.load_zoo_model`` and run through our pipeline.

FiftyOne's torch models (``TorchImageModel``) hold the torch module
(``_model``) and say their preprocessing in their config; the classifier is
built from those (:func:`classifier_from_fiftyone_model`), with the model's
``classes`` mapped to our class indices. The preprocessing is, in order:

-   the config's ``transforms`` (a torchvision ``Compose``), less its
    ``ToPILImage``
-   ``image_size``: FiftyOne's ``Resize(image_size)``, with the config's
    ``image_mean`` / ``image_std``
-   for zoo torchvision models, which FiftyOne runs at the images' own size
    (``image_min_dim`` / ``image_max_dim``, one image per batch), the
    torchvision weights' own eval transform (resize and center crop), as
    ``torchvision:NAME`` uses; their predictions then differ from
    FiftyOne's ``apply_model``, which sees whole images

Zoo models wrapping a transformers classifier
(``FiftyOneTransformerForImageClassification``) use its ``id2label`` and
image processor, as ``hf:`` does.

Where this path is slower than a native spec: loading (FiftyOne resolves
the zoo manifest, checks the model's requirements, and keeps weights in
its own zoo folder, so a model already cached by timm or torchvision is
fetched again), and a ``transforms`` Compose other than a resize then a
center crop, which leaves the pipeline's fast uint8 decoders out
(``--decoder auto`` falls back to PIL). Inference itself is the same torch
module, batched by our pipeline (FiftyOne's own ``predict_all`` on zoo
torchvision models resizes each image with PIL and runs one per batch).
"""

# lazy imports: start-up (a spec is checked without importing torch or the model's library)

from __future__ import annotations

from imagenetx.errors import ImageNetXError
import os
from urllib.parse import urlparse

from imagenetx.models.sources._common import first_line, suggest
from imagenetx.models.sources._network import (
    hub_unreachable,
    missing_weights,
    quiet_hub,
    unreachable,
)

SYNTAX = "zoo:NAME"
ZERO_SHOT = False


def parse(rest: str, request) -> None:
    if any(c.isspace() for c in rest):
        raise ImageNetXError(
            f"Model spec 'zoo:{rest}' is not {SYNTAX}: e.g. zoo:resnet50-imagenet-torch")


def load(rest: str, request):
    import fiftyone.zoo as foz

    names = foz.list_zoo_models()
    if rest not in names:
        classifiers = [n for n in names if "imagenet" in n]
        raise ImageNetXError(
            f"Unknown FiftyOne zoo model '{rest}'{suggest(rest, names)}: see "
            "fiftyone.zoo.list_zoo_models(), e.g. "
            f"{', '.join(classifiers[:3]) or 'resnet50-imagenet-torch'}")
    if not request.pretrained:
        raise ImageNetXError(
            f"FiftyOne zoo model '{rest}' loads its pretrained weights only: leave "
            "pretrained=False out, or use timm:NAME for random weights")
    offline = _check_download(rest)
    try:
        with quiet_hub(offline=offline):
            model = foz.load_zoo_model(rest)
    except Exception as e:  # downloads, requirements, in many types
        raise ImageNetXError(
            f"Cannot load FiftyOne zoo model '{rest}' ({type(e).__name__}: "
            f"{first_line(e)}): connect to the internet (the zoo downloads its "
            "weights on first use) and install its requirements "
            f"(fiftyone zoo models requirements --install {rest})") from e
    return classifier_from_fiftyone_model(model, f"zoo:{rest}")


def _check_download(name: str) -> bool:
    """Raises ImageNetXError when the zoo model is not downloaded and the
    address it downloads from cannot be reached; returns whether the Hub,
    which models without an address of their own load from, cannot be
    reached (they then load from its cache only)."""
    import fiftyone as fo
    import fiftyone.zoo as foz

    if foz.is_zoo_model_downloaded(name):
        return False
    manager = foz.get_zoo_model(name).manager
    config = manager.config if manager is not None else None
    url = getattr(config, "url", None)
    if url is None and getattr(config, "google_drive_id", None):
        url = "https://drive.google.com"
    if not url:  # the Hub (transformers and remote models)
        return hub_unreachable() is not None
    reason = unreachable(url)
    if reason is not None:
        raise missing_weights(
            f"FiftyOne zoo model '{name}'", os.path.basename(urlparse(url).path) or name,
            fo.config.model_zoo_dir, urlparse(url).netloc, reason,
            f"download it on a machine with network (fiftyone zoo models download {name})",
            random_weights=False)
    return False


def classifier_from_fiftyone_model(model, spec: str):
    """A Classifier from a loaded FiftyOne image classifier.

    Args:
        model: a ``fiftyone.utils.torch.TorchImageModel`` whose output
            processor is a classifier's, with ImageNet-1k ``classes``
        spec: the spec, for messages and the record

    Raises:
        ImageNetXError: for a model that is not a torch ImageNet-1k
            classifier, or whose preprocessing has no fixed size
    """
    import torch

    from imagenetx.classes.outputs import imagenet_outputs
    from imagenetx.models.classifier import Classifier
    from imagenetx.models.sources._labels import imagenet_order, reorder_to_imagenet

    module = getattr(model, "_model", None)
    if not isinstance(module, torch.nn.Module):
        raise ImageNetXError(
            f"FiftyOne model '{spec}' ({type(model).__name__}) is not a torch "
            "model: choose a zoo model whose name ends in -torch")
    processor_name = type(getattr(model, "_output_processor", None)).__name__
    if "Classif" not in processor_name and "Classif" not in type(model).__name__:
        raise ImageNetXError(
            f"FiftyOne model '{spec}' is not an image classifier (its outputs are "
            f"processed by {processor_name}): choose an ImageNet classifier, e.g. "
            "zoo:resnet50-imagenet-torch")
    what = f"FiftyOne model '{spec}'"
    hf_config = getattr(module, "config", None)
    if getattr(hf_config, "id2label", None) and hasattr(module, "save_pretrained"):
        from imagenetx.models.sources.hf import preprocessing as hf_preprocessing

        labels = [hf_config.id2label[k] for k in sorted(hf_config.id2label, key=int)]
        processor = getattr(model, "_transforms", None)
        processor = getattr(processor, "processor", processor)  # FiftyOne's handler
        prep = hf_preprocessing(getattr(processor, "image_processor", processor), spec)
    else:
        labels = list(model.classes or [])
        prep = fiftyone_preprocessing(model, spec)
    order = imagenet_order(labels, what)
    module.eval()
    return Classifier(spec, reorder_to_imagenet(_as_logits(module), order), prep,
                      imagenet_outputs(), "zoo",
                      record={"fiftyone_model": type(model).__name__,
                              "reordered": order is not None})


def _as_logits(module):
    """The module, returning a logits tensor (transformers models return a
    ``ModelOutput``)."""
    from imagenetx.models.classifier import LogitsOf

    return LogitsOf(module) if hasattr(module, "save_pretrained") else module


def fiftyone_preprocessing(model, spec: str):
    """The :class:`Preprocessing` of a FiftyOne ``TorchImageModel`` (see the
    module docstring for the order)."""
    import torchvision.transforms as T

    from imagenetx.models.preprocess import Preprocessing, from_transform

    config = model.config
    transforms = getattr(config, "transforms", None)
    if transforms is not None:
        steps = [s for s in getattr(transforms, "transforms", [transforms])
                 if not isinstance(s, T.ToPILImage)]
        try:
            prep = from_transform(T.Compose(steps), f"'{spec}'")
        except (ValueError, AttributeError, IndexError) as e:
            raise ImageNetXError(
                f"FiftyOne model '{spec}' has transforms this pipeline cannot read "
                f"({first_line(e)}): give it a Compose of a resize, a center crop, "
                "ToTensor and Normalize") from None
        _check_fixed_size(prep, spec)
        return prep
    mean, std = config.image_mean, config.image_std
    if config.image_size and mean and std:
        size = list(config.image_size)  # passed to Resize as FiftyOne does
        return Preprocessing(T.Compose([T.Resize(size), T.CenterCrop(size)]),
                             tuple(mean), tuple(std), (3, int(size[0]), int(size[-1])))
    weights = _torchvision_weights(config)
    if weights is not None:
        from imagenetx.models.preprocess import from_torchvision_weights

        return from_torchvision_weights(weights)
    raise ImageNetXError(
        f"FiftyOne model '{spec}' resizes images to no fixed size (image_size and "
        "transforms unset): set its config's image_size, image_mean and image_std, "
        "or load the same network with timm: or torchvision:")


def _check_fixed_size(prep, spec: str) -> None:
    """Raises ImageNetXError unless the geometry ends in a fixed-size step
    (a crop, or a resize to height and width)."""
    import torchvision.transforms as T

    last = prep.geometry.transforms[-1] if prep.geometry.transforms else None
    fixed = isinstance(last, T.CenterCrop) or (
        isinstance(last, T.Resize) and isinstance(last.size, (list, tuple))
        and len(last.size) == 2)
    if not fixed:
        raise ImageNetXError(
            f"FiftyOne model '{spec}' transforms images to no fixed size: end its "
            "geometry in a CenterCrop or a Resize to (height, width)")


def _torchvision_weights(config):
    """The torchvision weights entry a zoo torchvision model loads
    (``entrypoint_args["weights"]``, e.g. ``ResNet50_Weights.DEFAULT``), or
    None."""
    import torchvision

    name = (getattr(config, "entrypoint_args", None) or {}).get("weights")
    if not isinstance(name, str):
        return name
    enum, _, member = name.partition(".")
    try:
        return getattr(getattr(torchvision.models, enum), member)
    except AttributeError:
        return None
