"""An image-text model's shared space: texts by its text tower, images by
its image tower (to describe slices found in any space in words).

Images go through the prediction run's pipeline (the model's own
preprocessing, the decoding workers, batches on the device) and stay in
memory: nothing is written to the dataset.
"""

from typing import Optional, Sequence

import numpy as np

from imagenetx.errors import ImageNetXError
from imagenetx.models.sources import ModelRequest
from imagenetx.models.sources import open_clip as source

#: texts per forward pass of the text tower
BATCH = 256


def check_spec(spec: str) -> None:
    """Raises, in one line and without loading anything, for a spec that
    is not ``open_clip:ARCH[/PRETRAINED]``."""
    scheme, _, rest = spec.partition(":")
    if scheme != "open_clip" or not rest.partition("/")[0]:
        raise ImageNetXError(
            f"`describe_with='{spec}'` is not an image-text model: pass "
            "open_clip:ARCH[/PRETRAINED] (a CLIP or SigLIP)")


class ImageTextModel:
    """The two towers of ``open_clip:ARCH[/PRETRAINED]`` (CLIP, SigLIP, ...),
    loaded once: one instance's texts and images share one space.

    Args:
        spec: the model spec
        pretrained (True): False builds random weights (tests)

    Raises:
        ImageNetXError: for a spec of another source, an unknown
            architecture or tag, or weights that cannot be fetched
    """

    def __init__(self, spec: str, pretrained: bool = True):
        check_spec(spec)
        rest = spec.partition(":")[2]
        request = ModelRequest(pretrained=pretrained)
        try:
            self.model, self.tokenizer, preprocess, self.spec, tag = source.create(rest, request)
        except ImageNetXError as e:
            raise ImageNetXError(f"`describe_with='{spec}'`: {e}") from None
        # the image tower and preprocessing of the zero-shot classifier
        # (its head's text weights are never built here)
        self.classifier = source.zero_shot_classifier(
            self.model, self.tokenizer, preprocess, self.spec, request,
            tag=tag if pretrained else None)

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), d)`` unit text embeddings."""
        import torch  # lazy: start-up

        out = []
        with torch.inference_mode():
            for i in range(0, len(texts), BATCH):
                v = self.model.encode_text(self.tokenizer(list(texts[i:i + BATCH])))
                out.append(torch.nn.functional.normalize(v.float(), dim=-1).numpy())
        return np.concatenate(out) if out else np.zeros((0, 0), np.float32)

    def encode_images(self, paths: Sequence[str], progress=None,
                      batch_size: Optional[int] = None,
                      num_workers: Optional[int] = None) -> np.ndarray:
        """``(len(paths), d)`` unit image embeddings, batched on the fastest
        device (CUDA when available).

        Args:
            paths: the image files
            progress (None): as in ``predict``: None for FiftyOne's default
                progress bar, False for none
            batch_size (None), num_workers (None): as in ``predict`` (None:
                the device's default, one decoding worker per core)

        Raises:
            ImageNetXError: naming the first image that cannot be read
        """
        import fiftyone.core.utils as fou  # lazy: start-up
        import torch  # lazy: start-up

        from imagenetx.models.device import (  # lazy: start-up (torch)
            default_batch_size,
            resolve_device,
        )
        from imagenetx.models.loader import (  # lazy: start-up (torch)
            DeviceInputs,
            crop_reader,
            make_loader,
        )

        paths = list(paths)
        device = resolve_device("auto")
        reader, share = crop_reader(self.classifier, "auto", device)
        loader = make_loader(paths, reader, device, batch_size or default_batch_size(device),
                             num_workers, share)
        inputs = DeviceInputs(device, reader, paths)
        normalize = self.classifier.preprocessing.normalizer(device)
        tower = self.classifier.module.encoder.to(device)
        out = None
        with fou.ProgressBar(total=len(paths), progress=progress) as pb, \
                torch.inference_mode():
            for batch in loader:
                positions, images, failed = inputs(batch)
                if failed:
                    position, why = failed[0]
                    raise ImageNetXError(
                        f"Cannot read image '{paths[position]}' ({why}) to describe the "
                        "slices: fix or remove the file, or describe without a model")
                if images is not None:
                    v = torch.nn.functional.normalize(tower(normalize(images)).float(), dim=-1)
                    if out is None:
                        out = np.zeros((len(paths), v.shape[1]), np.float32)
                    out[positions.numpy()] = v.cpu().numpy()
                pb.update(len(positions))
        tower.cpu()
        return out if out is not None else np.zeros((0, 0), np.float32)


def encode_texts(spec: str, texts: Sequence[str], pretrained: bool = True) -> np.ndarray:
    """``(len(texts), d)`` unit text embeddings of ``open_clip:ARCH[/PRETRAINED]``.

    Raises:
        ImageNetXError: for a spec of another source, or an unknown
            architecture
    """
    return ImageTextModel(spec, pretrained).encode_texts(texts)
