"""NINCO's 17 OOD unit tests (noise and patterns), generated from code.

Bitterwolf et al. (ICML 2023) made each unit test from 400 ImageNet val
images: the images are picked by a seed derived from the test's name, each
image gives its size (and, for the pixel permutations, its pixels), and a
noise function of ``noise_functions.py`` draws the picture
(``create_unit_test_data.ipynb``, j-cb/NINCO@8f42ce7). The picks are
reproduced exactly (:func:`source_indices`: the release's 6,800 file names);
the noise, which upstream draws from NumPy's unseeded global generator, is
drawn here from a generator seeded by ``(seed, test, image)``, so a load is
reproducible and any one image can be remade alone.

Without ImageNet val images, the pictures are 224 x 224 and the two pixel
permutations (which shuffle a val image's pixels) are left out.
"""

import io
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np
from PIL import Image

from imagenetx.disk import write_file

#: the unit tests, as NINCO names them
KINDS = ("uni", "low_freq", "low_freq_channelfullscale", "low_freq_colorrange", "pixel_perm",
         "low_freq_pixel_perm", "Rademacher", "monochrome", "grey", "black", "white", "blobs",
         "Gaussian", "tricolour", "tricolour_primary", "horizontal_stripes",
         "vertical_stripes")
#: the unit tests that permute a val image's pixels (the others use its size only)
PIXEL_KINDS = ("pixel_perm", "low_freq_pixel_perm")
#: images per unit test in the release
PER_KIND = 400
#: the ImageNet val images the picks index (torchvision's ``ImageNet`` order)
VAL_IMAGES = 50000
#: the picture size when no ImageNet val image gives one
DEFAULT_SIZE = (224, 224)


class UnitTestImage(NamedTuple):
    """One unit-test image to make: its test, its rank among the test's
    picks, and the ImageNet val image (torchvision index) it is made from."""

    kind: str
    rank: int
    val_index: int

    @property
    def file_name(self) -> str:
        """The release's file name (``uni_000_uni_00112.png``; png for an
        even val index, jpg for an odd one, as upstream)."""
        ext = "png" if self.val_index % 2 == 0 else "jpg"
        return f"{self.kind}_{self.rank:03d}_{self.kind}_{self.val_index:05d}.{ext}"


def kind_seed(kind: str) -> int:
    """Upstream's seed of a test's picks: the digits of its characters' codes."""
    return int("".join(str(ord(c)) for c in kind))


def source_indices(kind: str) -> np.ndarray:
    """The 400 val images (sorted torchvision indices) a unit test is made
    from, as ``create_unit_test_data.ipynb`` picks them."""
    rs = np.random.RandomState(np.random.MT19937(np.random.SeedSequence(kind_seed(kind))))
    return np.sort(rs.choice(VAL_IMAGES, PER_KIND, replace=False))


def planned(per_kind: int, kinds: Sequence[str] = KINDS) -> List[UnitTestImage]:
    """The first ``per_kind`` images (by rank) of each unit test."""
    return [UnitTestImage(kind, rank, int(i)) for kind in kinds
            for rank, i in enumerate(source_indices(kind)[:per_kind])]


# -- the noise functions of NINCO's noise_functions.py, on a seeded generator --


def _gauss(image: np.ndarray, sigma: float) -> np.ndarray:
    from skimage.filters import gaussian  # lazy: start-up

    return gaussian(image, sigma=sigma, channel_axis=2, mode="wrap")


def _full_range(image):
    image = image - image.min()
    return image / image.max()


def _full_range_per_channel(image):
    image = image - np.amin(image, axis=(0, 1))
    return image / np.amax(image, axis=(0, 1))


def _color_range(image, center, deviation, quantile=0.95):
    image = image - np.quantile(image, (1 - quantile) / 2, axis=(0, 1))
    image = image / np.quantile(image, 0.5 + quantile / 2, axis=(0, 1))
    return 2 * image * deviation + center


def _permuted(image, rng):
    flat = image.reshape((-1, image.shape[-1])).copy()
    rng.shuffle(flat)
    return flat.reshape(image.shape)


def _stripes(shape, orientation: str, colors) -> np.ndarray:
    image = np.zeros(shape)
    n = len(colors)
    axis = 0 if orientation == "horizontal" else 1
    width = shape[axis] // n
    for i, c in enumerate(colors):
        index = [slice(None)] * 3
        index[axis] = slice(i * width, (i + 1) * width)
        image[tuple(index)] += c
    index = [slice(None)] * 3
    index[axis] = slice(n * width, None)
    image[tuple(index)] += colors[-1]  # upstream's last colour fills the remainder
    return image


_LOW_FREQ_SIGMAS = (10, 15, 25, 40, 60, 85)
_STRIPES = (4, 5, 7, 10, 15, 20)
_ORIENTATIONS = ("horizontal", "vertical")


def _picture(kind: str, image: np.ndarray, rng) -> np.ndarray:
    """The unit test's picture before clipping: the notebook's branch for
    ``kind`` (its parameters drawn first, then the noise)."""
    shape = image.shape
    if kind == "uni":
        return rng.uniform(0.0, 1.0, shape)
    if kind in ("low_freq", "low_freq_channelfullscale"):
        sigma = rng.choice(_LOW_FREQ_SIGMAS)
        scale = _full_range if kind == "low_freq" else _full_range_per_channel
        return scale(_gauss(rng.uniform(0.0, 1.0, shape), sigma))
    if kind == "low_freq_colorrange":
        sigma = rng.choice(_LOW_FREQ_SIGMAS)
        center, deviation = rng.uniform(0.0, 1.0, 3), rng.uniform(0.1, 0.3)
        return _color_range(_gauss(rng.uniform(0.0, 1.0, shape), sigma), center, deviation)
    if kind == "pixel_perm":
        return _permuted(image, rng)
    if kind == "low_freq_pixel_perm":
        sigma = rng.choice((1, 1.5, 2, 3, 4, 6, 8))
        return _gauss(_permuted(image, rng), sigma)
    if kind == "Rademacher":
        return (rng.random_sample(shape) > 0.5).astype(float)
    if kind in ("monochrome", "grey", "black", "white"):
        color = {"monochrome": lambda: rng.uniform(0.0, 1.0, 3),
                 "grey": lambda: rng.uniform(0.0, 1.0, 1),
                 "black": lambda: 0.0, "white": lambda: 1.0}[kind]()
        return np.zeros(shape) + color
    if kind == "blobs":
        sigma = rng.choice((1.5, 2, 2.5, 3, 3.5, 4))
        blobs = _gauss(rng.binomial(1, 0.7, shape).astype(np.float32), sigma)
        blobs[blobs < 0.75] = 0.0  # upstream's push_out(lower=.75, upper=1.0)
        blobs[blobs > 1.0] = 1.0
        return blobs
    if kind == "Gaussian":
        sigma = rng.choice((0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5))
        return sigma * rng.standard_normal(shape) + 0.5
    if kind in ("tricolour", "tricolour_primary"):
        orientation = _ORIENTATIONS[rng.choice([0, 1])]
        colors = (rng.uniform(0.0, 1.0, (3, 3)) if kind == "tricolour"
                  else rng.binomial(1, 0.5, (3, 3)))
        return _stripes(shape, orientation, colors)
    if kind in ("horizontal_stripes", "vertical_stripes"):
        n = rng.choice(_STRIPES)
        return _stripes(shape, kind.split("_")[0], rng.uniform(0.0, 1.0, (n, 3)))
    raise ValueError(f"unknown NINCO unit test {kind!r}")


def draw(kind: str, image: np.ndarray, seed: int, val_index: int) -> np.ndarray:
    """One unit-test picture, ``uint8`` of ``image``'s shape, as upstream
    turns it into an image (clipped to [0, 1], times 255, truncated).

    Args:
        kind: the unit test (one of :data:`KINDS`)
        image: the source val image, ``(h, w, 3)`` floats in [0, 1] (zeros
            of the picture's size where no val image is read)
        seed: the load's seed
        val_index: the source's torchvision index (part of the image's seed)
    """
    rng = np.random.RandomState(np.random.MT19937(
        np.random.SeedSequence([seed, kind_seed(kind), val_index])))
    return (np.clip(_picture(kind, image, rng), 0, 1) * 255).astype(np.uint8)


def generate(images: Sequence[UnitTestImage], out_dir: str, seed: int,
             val_paths: Optional[Dict[int, str]] = None,
             workers: int = 4) -> List[Tuple[UnitTestImage, str]]:
    """Writes the unit-test images under ``out_dir/<kind>/<file name>``,
    each written whole; an image already there (same seed, same name) is
    kept.

    Args:
        images: what to make (:func:`planned`)
        out_dir: the folder, one per seed (the caller's)
        seed: the seed of the noise
        val_paths (None): torchvision val index -> the val image's path; the
            source of each picture's size and pixels (None: 224 x 224)
        workers (4): threads

    Returns:
        ``(image, path)`` of each, in the order of ``images``
    """
    def make(item: UnitTestImage) -> str:
        path = os.path.join(out_dir, item.kind, item.file_name)
        if os.path.isfile(path):
            return path
        if val_paths is not None:
            with Image.open(val_paths[item.val_index]) as im:
                source = np.asarray(im.convert("RGB"), dtype=np.float64) / 255
        else:
            source = np.zeros((*DEFAULT_SIZE, 3))
        picture = Image.fromarray(draw(item.kind, source, seed, item.val_index), mode="RGB")
        buffer = io.BytesIO()
        picture.save(buffer, format="PNG" if path.endswith(".png") else "JPEG")
        return write_file(path, buffer.getvalue())

    for kind in {i.kind for i in images}:
        os.makedirs(os.path.join(out_dir, kind), exist_ok=True)
    with ThreadPoolExecutor(workers) as pool:
        return list(zip(images, pool.map(make, images)))
