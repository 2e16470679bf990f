"""ImageDecoder's kernel: an encoded image (a 1-D uint8 tensor) to (height, width, channels) uint8.

Decoding goes through Pillow, the runtime's optional `image` extra, imported on first use (so
importing runtime_support never loads it, and compiling never needs it). Without Pillow the node
raises an error naming the extra. Data Pillow cannot decode give an empty image (0, 0, channels),
as the operator's definition says. The decoded size is checked against the allocation limit before
any pixel is decoded (docs/robustness.md).

Exact: the decoders Pillow bundles compute in integers with one answer for a given library
version (docs/decisions.md, "ImageDecoder").
"""

from __future__ import annotations

import io

import numpy as np

from runtime_support._kernels import kernel
from runtime_support._limits import check_allocation

__all__ = ["image_decoder"]

IMAGE_EXTRA = "pip install 'onemodel-runtime[image]' (Pillow)"

# pixel_format -> (Pillow mode, channels, whether the channels are reversed)
PIXEL_FORMATS = {"RGB": ("RGB", 3, False), "BGR": ("RGB", 3, True), "Grayscale": ("L", 1, False)}


def _pillow():
    try:
        import PIL.Image
    except ImportError:
        raise ImportError(
            f"ImageDecoder needs Pillow, which is not installed: {IMAGE_EXTRA}"
        ) from None
    return PIL.Image


@kernel(fresh=True, exact=True)
def image_decoder(encoded, *, pixel_format="RGB"):
    """The image in `encoded` as uint8 (height, width, 3) in RGB or BGR order, or (height, width,
    1) for Grayscale (Pillow's "L": ITU-R 601-2 luma of the RGB image, as the backend data are);
    an image with alpha or a palette is converted to RGB first (alpha dropped)."""
    if pixel_format not in PIXEL_FORMATS:
        raise ValueError(f"unknown pixel_format {pixel_format!r} (RGB, BGR or Grayscale)")
    mode, channels, reverse = PIXEL_FORMATS[pixel_format]
    Image = _pillow()
    data = np.ascontiguousarray(encoded, dtype=np.uint8).tobytes()
    try:
        image = Image.open(io.BytesIO(data))
        width, height = image.size
    except Exception:  # not an image Pillow knows: the definition's empty matrix
        return np.zeros((0, 0, channels), np.uint8)
    check_allocation((height, width, channels), np.uint8, "decoded image")
    try:
        image.load()
        if image.mode != mode:
            image = image.convert("RGB").convert(mode) if mode == "L" else image.convert(mode)
    except Image.DecompressionBombError:
        raise
    except Exception:  # a truncated or corrupted stream
        return np.zeros((0, 0, channels), np.uint8)
    pixels = np.asarray(image, dtype=np.uint8).reshape(height, width, channels)
    return np.array(pixels[:, :, ::-1] if reverse else pixels)
