"""Small generated images that stand in for ImageNet photos.

A fresh machine has no ImageNet images, so the demo gives each sample a
placeholder that shows its class and top factor: the App grid then reads
well and never shows a broken thumbnail. Images that share a class and a
factor share their pixels, so only the ~6,000 distinct pictures are drawn.
"""

import functools
import io
import os
import textwrap
from concurrent.futures import ThreadPoolExecutor

from PIL import Image, ImageDraw, ImageFont

from imagenetx.classes.imagenet import METACLASSES

SIZE = 192

# one background color per meta-class, so the grid shows the grouping
_PALETTE = [
    (31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40),
    (148, 103, 189), (140, 86, 75), (227, 119, 194), (127, 127, 127),
    (188, 189, 34), (23, 190, 207), (57, 59, 121), (99, 121, 57),
    (140, 109, 49), (132, 60, 57), (123, 65, 115), (82, 84, 163),
    (107, 110, 207),
]


@functools.lru_cache(maxsize=None)
def _fonts():
    return ImageFont.load_default(size=18), ImageFont.load_default(size=15)


def render(class_name: str, factor, metaclass: str) -> bytes:
    """Returns the JPEG bytes of one placeholder image."""
    color = _PALETTE[METACLASSES.index(metaclass) % len(_PALETTE)]
    image = Image.new("RGB", (SIZE, SIZE), color)
    draw = ImageDraw.Draw(image)
    big, small = _fonts()
    y = 14
    for line in textwrap.wrap(class_name, 16)[:4]:
        draw.text((12, y), line, font=big, fill=(255, 255, 255))
        y += 24
    draw.text((12, SIZE - 62), metaclass.replace("_", " "), font=small,
              fill=(235, 235, 235))
    draw.rectangle((0, SIZE - 36, SIZE, SIZE), fill=(20, 20, 20))
    draw.text((12, SIZE - 28), f"x:{factor}" if factor else "no factor",
              font=small, fill=(255, 210, 60))
    out = io.BytesIO()
    image.save(out, "JPEG", quality=80)
    return out.getvalue()


def write_placeholders(paths: list, keys: list, workers: int = 4) -> int:
    """Writes one placeholder per path.

    Args:
        paths: the image paths to write
        keys: ``(class_name, factor, metaclass)`` for each path
        workers (4): threads that write files (drawing holds the GIL,
            writing does not)

    Returns:
        the number of distinct images drawn
    """
    pictures = {key: render(*key) for key in dict.fromkeys(keys)}
    for folder in {os.path.dirname(p) for p in paths}:
        os.makedirs(folder, exist_ok=True)

    def write(pair):
        path, key = pair
        with open(path, "wb") as f:
            f.write(pictures[key])

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for _ in pool.map(write, zip(paths, keys), chunksize=512):
            pass
    return len(pictures)
