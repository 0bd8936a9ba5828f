"""Texts embedded by an open_clip model's text tower, in the space its
image tower embeds images in (to describe slices found in that space)."""

from typing import Sequence

import numpy as np

from imagenetx.errors import ImageNetXError

#: texts per forward pass of the text tower
BATCH = 256


def encode_texts(spec: str, texts: Sequence[str], pretrained: bool = True) -> np.ndarray:
    """``(len(texts), d)`` unit text embeddings of ``open_clip:ARCH[/PRETRAINED]``.

    Raises:
        ImageNetXError: for a spec of another source, or an unknown
            architecture
    """
    import open_clip  # lazy: start-up (torch)
    import torch  # lazy: start-up

    source, _, rest = spec.partition(":")
    arch, _, tag = rest.partition("/")
    if source != "open_clip" or not arch:
        raise ImageNetXError(
            f"`describe_with='{spec}'` is not an image-text model: pass "
            "open_clip:ARCH[/PRETRAINED], the model that made the embeddings")
    if arch not in open_clip.list_models():
        raise ImageNetXError(
            f"`describe_with='{spec}'`: unknown open_clip architecture '{arch}'; see "
            "open_clip.list_models()")
    model, _, _ = open_clip.create_model_and_transforms(
        arch, pretrained=(tag or None) if pretrained else None)
    tokenizer = open_clip.get_tokenizer(arch)
    model.eval()
    out = []
    with torch.inference_mode():
        for i in range(0, len(texts), BATCH):
            v = model.encode_text(tokenizer(list(texts[i:i + BATCH])))
            out.append(torch.nn.functional.normalize(v.float(), dim=-1).numpy())
    return np.concatenate(out) if out else np.zeros((0, 0), np.float32)
