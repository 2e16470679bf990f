"""ImageDecoder beyond the backend data (which tests/test_conformance.py checks: onnx's frozen
images, decoded by the Pillow of onnx's release): lossless formats give back the pixels they were
made from, the pixel formats, an image with alpha or a palette, undecodable data, the allocation
limit, and a module run where Pillow is missing (the error names the extra; compiling never needs
Pillow). Expected pixels are the arrays the images were made from, never the decoder's output.
"""

from __future__ import annotations

import io
import struct
import sys
import zlib

import numpy as np
import PIL.Image
import pytest
from onnx import TensorProto, helper

from onemodel_compile import load_compiled
from runtime_support import AllocationError, NodeError, set_allocation_limit
from tests import models

PIXELS = np.random.default_rng(5).integers(0, 256, (7, 11, 3), dtype=np.uint8)


def _model(pixel_format: str = "RGB", name: str = "decode"):
    node = helper.make_node("ImageDecoder", ["data"], ["image"], name, pixel_format=pixel_format)
    graph = helper.make_graph(
        [node],
        "image_decoder",
        [models.tensor("data", ["size"], TensorProto.UINT8)],
        [models.tensor("image", [None, None, None], TensorProto.UINT8)],
    )
    return models.finish(graph, opset=20)


def _encoded(pixels: np.ndarray, format_: str, mode: str | None = None) -> np.ndarray:
    image = (
        PIL.Image.fromarray(pixels) if mode is None else PIL.Image.fromarray(pixels).convert(mode)
    )
    with io.BytesIO() as f:
        image.save(f, format=format_)
        return np.frombuffer(f.getvalue(), np.uint8)


@pytest.mark.parametrize("variant", ["fast", "exact"])
@pytest.mark.parametrize("format_", ["PNG", "BMP", "PPM", "TIFF", "WEBP_LOSSLESS"])
def test_lossless_formats_give_back_their_pixels(format_, variant) -> None:
    if format_ == "WEBP_LOSSLESS":
        with io.BytesIO() as f:
            PIL.Image.fromarray(PIXELS).save(f, format="WEBP", lossless=True)
            data = np.frombuffer(f.getvalue(), np.uint8)
    else:
        data = _encoded(PIXELS, format_)
    module = load_compiled(_model("RGB"), variant=variant)
    (rgb,) = module.run(data)
    assert rgb.dtype == np.uint8
    np.testing.assert_array_equal(rgb, PIXELS)
    (bgr,) = load_compiled(_model("BGR"), variant=variant).run(data)
    np.testing.assert_array_equal(bgr, PIXELS[:, :, ::-1])


def test_grayscale_is_the_601_luma_of_the_rgb_image() -> None:
    (gray,) = load_compiled(_model("Grayscale")).run(_encoded(PIXELS, "PNG"))
    r, g, b = (PIXELS[:, :, i].astype(np.float64) for i in range(3))
    luma = (r * 299 + g * 587 + b * 114) / 1000  # ITU-R 601-2
    assert gray.shape == PIXELS.shape[:2] + (1,) and gray.dtype == np.uint8
    assert np.abs(gray[:, :, 0] - luma).max() <= 0.5 + 1e-9


def test_alpha_and_palette_images_decode_to_their_colours() -> None:
    module = load_compiled(_model("RGB"))
    rgba = np.concatenate([PIXELS, np.full(PIXELS.shape[:2] + (1,), 7, np.uint8)], axis=2)
    (rgb,) = module.run(_encoded(rgba, "PNG"))
    np.testing.assert_array_equal(rgb, PIXELS)  # alpha dropped
    palette = np.array([[0, 0, 0], [200, 10, 30], [5, 250, 128]], np.uint8)
    indices = np.random.default_rng(1).integers(0, 3, (4, 6))
    image = PIL.Image.fromarray(indices.astype(np.uint8), mode="P")
    image.putpalette(palette.reshape(-1).tolist())
    with io.BytesIO() as f:
        image.save(f, format="PNG")
        (decoded,) = module.run(np.frombuffer(f.getvalue(), np.uint8))
    np.testing.assert_array_equal(decoded, palette[indices])


@pytest.mark.parametrize(
    "data",
    [np.frombuffer(b"not an image at all", np.uint8), _encoded(PIXELS, "PNG")[:60]],
    ids=["garbage", "truncated"],
)
def test_undecodable_data_give_an_empty_image(data) -> None:
    (rgb,) = load_compiled(_model("RGB")).run(data)
    (gray,) = load_compiled(_model("Grayscale")).run(data)
    assert rgb.shape == (0, 0, 3) and gray.shape == (0, 0, 1)
    assert rgb.dtype == gray.dtype == np.uint8


def _png_claiming(width: int, height: int) -> np.ndarray:
    """A PNG whose header claims width x height pixels (its data do not follow)."""
    data = bytearray(_encoded(PIXELS, "PNG").tobytes())
    header = struct.pack(">II", width, height) + bytes(data[24:29])
    data[16:29] = header
    data[29:33] = struct.pack(">I", zlib.crc32(b"IHDR" + header))
    return np.frombuffer(bytes(data), np.uint8)


def test_the_decoded_size_is_checked_before_decoding() -> None:
    module = load_compiled(_model("RGB", name="huge"))
    previous = set_allocation_limit(1 << 20)
    try:
        with pytest.raises(NodeError, match="ImageDecoder 'huge'") as raised:
            module.run(_png_claiming(4000, 3000))
    finally:
        set_allocation_limit(previous)
    assert isinstance(raised.value.__cause__, AllocationError)


def test_without_pillow_compiling_works_and_running_names_the_extra(monkeypatch) -> None:
    for name in [n for n in sys.modules if n == "PIL" or n.startswith("PIL.")]:
        monkeypatch.setitem(sys.modules, name, None)  # `import PIL.Image` raises ImportError
    module = load_compiled(_model("RGB", name="decode"))
    with pytest.raises(NodeError, match=r"ImageDecoder 'decode'.*onemodel-runtime\[image\]"):
        module.run(np.zeros(10, np.uint8))
