"""Images to decoded batches: DataLoader workers on every core the process
may use decode, resize and crop the files into uint8 crops
(:mod:`imagenetx.models.decode`); on a GPU a share of each batch's JPEGs
crosses undecoded and is decoded there (:class:`DeviceInputs`). A file that
cannot be read costs only that image: its position and reason travel with
the batch.
"""

from __future__ import annotations

import math
import os
from typing import List, NamedTuple, Optional

import torch

from imagenetx.errors import ImageNetXError
from imagenetx.models.classifier import Classifier
from imagenetx.models.decode import (
    CropReader,
    Geometry,
    decodable,
    decode_batch,
    resolve_decoder,
)

#: batches each DataLoader worker keeps decoded ahead
PREFETCH_FACTOR = 4
#: on a GPU, the share of each batch's JPEGs decoded there (the CPU
#: workers decode the rest at the same time)
GPU_DECODE_SHARE = 0.5


def default_workers() -> int:
    """Decoding processes when none are given: one per CPU core this
    process may run on (its affinity, which containers and ``taskset``
    narrow), not every core of the machine."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def crop_reader(classifier: Classifier, decoder: str, device) -> tuple:
    """The workers' :class:`CropReader` for ``decoder``, and the share of
    each batch decoded on the GPU (0 on the CPU, with ``pil``, and for a
    geometry tensors cannot reproduce)."""
    prep = classifier.preprocessing
    geometry = Geometry.of(prep.geometry)
    try:
        kind = resolve_decoder(decoder, geometry)
    except ValueError as e:
        raise ImageNetXError(f"`decoder={decoder}`: {e}") from None
    share = GPU_DECODE_SHARE if (
        decoder == "auto" and kind == "torchvision" and device.type == "cuda"
    ) else 0.0
    return CropReader(prep.geometry, geometry, kind), share


def error_message(e: Exception) -> str:
    """How a per-image failure is recorded: ``"Type: message"``."""
    return f"{type(e).__name__}: {e}"


class ImageFiles(torch.utils.data.Dataset):
    """Image files -> ``(position, uint8 crop or None, encoded bytes or None,
    error message or None)``.

    Args:
        paths: the image files
        reader: decodes a path into the model's uint8 ``(3, h, w)`` crop
        raw_share (0.0): the share of positions whose JPEG bytes are handed
            over undecoded, for :func:`~imagenetx.models.decode.decode_batch`
            on the GPU (a file that is not a plain JPEG is decoded here
            anyway)
    """

    def __init__(self, paths: list, reader: CropReader, raw_share: float = 0.0):
        self.paths = paths
        self.reader = reader
        self.raw_share = raw_share

    def __len__(self):
        return len(self.paths)

    def _raw_slot(self, i: int) -> bool:
        # spread evenly: floor((i + 1) * share) steps up at raw positions
        return int((i + 1) * self.raw_share) > int(i * self.raw_share)

    def __getitem__(self, i):
        try:
            if self.raw_share and self._raw_slot(i):
                data = self.reader.read(self.paths[i])
                if decodable(data):
                    return i, None, data, None
                return i, self.reader(self.paths[i], data), None, None
            return i, self.reader(self.paths[i]), None, None
        except Exception as e:  # any decode error costs only this image
            return i, None, None, error_message(e)


class Batch(NamedTuple):
    """One collated batch of :class:`ImageFiles` items.

    Attributes:
        positions: the positions of the rows of ``images``
        images: uint8 ``(n, 3, h, w)`` crops, None when there are none
        failed: ``[(position, message), ...]`` of unreadable images
        raw_positions: the positions of the encoded JPEGs in ``raw``
        raw: their bytes, concatenated into one uint8 tensor (one shared
            memory handle per batch: a tensor per image exhausts file
            descriptors), None when there are none
        raw_sizes: their lengths in ``raw``
    """

    positions: torch.Tensor
    images: Optional[torch.Tensor]
    failed: list
    raw_positions: tuple = ()
    raw: Optional[torch.Tensor] = None
    raw_sizes: tuple = ()

    def encoded(self) -> List[torch.Tensor]:
        """Each encoded JPEG, as a 1-D view of ``raw``."""
        if self.raw is None:
            return []
        return list(torch.split(self.raw, list(self.raw_sizes)))


def collate_images(items: list) -> Batch:
    """Stacks the decoded crops of a batch, concatenates its encoded JPEGs
    and sets the failures aside."""
    crops = [(i, x) for i, x, _, err in items if x is not None]
    raw = [(i, data) for i, _, data, _ in items if data is not None]
    failed = [(i, err) for i, _, _, err in items if err is not None]
    positions = torch.tensor([i for i, _ in crops], dtype=torch.long)
    # stacked straight into shared memory in a worker
    images = torch.stack([x for _, x in crops]) if crops else None
    blob = None
    if raw:
        blob = torch.frombuffer(bytearray(b"".join(d for _, d in raw)),
                                dtype=torch.uint8)
    return Batch(positions, images, failed, tuple(i for i, _ in raw), blob,
                 tuple(len(d) for _, d in raw))


def make_loader(paths, reader: CropReader, device, batch_size, num_workers,
                raw_share: float = 0.0, dataset=None):
    """A DataLoader of :class:`Batch` es over ``paths`` (or over ``dataset``,
    an :class:`ImageFiles` of another kind)."""
    if num_workers is None:
        num_workers = default_workers()
    num_workers = min(num_workers, math.ceil(len(paths) / batch_size))
    # uint8 crops cross process and bus (4x smaller than floats) and are
    # normalized on the model's device
    return torch.utils.data.DataLoader(
        dataset if dataset is not None else ImageFiles(paths, reader, raw_share),
        batch_size=batch_size,
        shuffle=False,
        num_workers=num_workers,
        collate_fn=collate_images,
        pin_memory=device.type == "cuda",
        prefetch_factor=PREFETCH_FACTOR if num_workers else None,
    )


class DeviceInputs:
    """Moves each :class:`Batch` to the device: the workers' crops, and the
    encoded JPEGs decoded, resized and cropped there
    (:func:`~imagenetx.models.decode.decode_batch`); those it refuses are
    decoded on the CPU here.

    Args:
        device: the model's device
        reader: the workers' reader (its geometry, and the CPU fallback)
        paths: the images, by position
    """

    def __init__(self, device, reader: Optional[CropReader] = None, paths=None):
        self.device = device
        self.reader = reader
        self.paths = paths

    def __call__(self, batch: Batch) -> tuple:
        """``(positions, uint8 images on the device or None, failures)``:
        the workers' crops and the device's decodes of the encoded JPEGs."""
        positions = [batch.positions]
        parts = [] if batch.images is None else [
            batch.images.to(self.device, non_blocking=True)]
        failed = list(batch.failed)
        if batch.raw_positions:
            encoded = batch.encoded()
            crops, refused = decode_batch(encoded, self.reader.geometry, self.device)
            refused_set = set(refused)
            if crops is not None:
                parts.append(crops)
                positions.append(torch.tensor(
                    [p for k, p in enumerate(batch.raw_positions) if k not in refused_set],
                    dtype=torch.long))
            for k in refused:
                pos = batch.raw_positions[k]
                try:
                    crop = self.reader(self.paths[pos], encoded[k].numpy().tobytes())
                except Exception as e:  # costs only this image
                    failed.append((pos, error_message(e)))
                    continue
                parts.append(crop[None].to(self.device))
                positions.append(torch.tensor([pos], dtype=torch.long))
        images = torch.cat(parts) if parts else None
        return torch.cat(positions), images, failed
