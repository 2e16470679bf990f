"""Quantization kernels: linear (de)quantization to and from 8- and 16-bit integers, and the
integer and quantized matrix products and convolutions.

Every kernel is exact, the same bits on every machine:
- a quotient or product is one IEEE operation in the type the specification names (the scale's
  type, or `precision`); float16 and bfloat16 operations go through float32, which rounds them
  correctly (float32 carries more than twice their precision plus two bits);
- rounding is half to even (`np.rint`), saturation to the target's range is a comparison, and NaN
  goes to the target's minimum (what onnxruntime gives), defined rather than left to the cast;
- integer products and sums run in float64 through BLAS: each term is an integer of magnitude at
  most 255 * 255, so every partial sum is an integer below 2**53 (for reductions shorter than
  10**11 terms) and exact in any summation order. Sums wrap to int32 as integer arithmetic does.

Scales and zero points are per tensor (a scalar or a one-element vector) or per axis (a vector
along `axis`). Blocked quantization (scales of rank 2 and more) is out of scope.
"""

from __future__ import annotations

import numpy as np

from runtime_support.conv import conv

__all__ = [
    "conv_integer",
    "dequantize_linear",
    "dynamic_quantize_linear",
    "qlinear_conv",
    "qlinear_matmul",
    "quantize_linear",
]


def _along(value, axis: int, rank: int) -> np.ndarray:
    """A scale or zero point shaped to broadcast against a rank-`rank` tensor: a scalar as is,
    a one-element vector as a scalar, a vector along `axis`."""
    value = np.asarray(value)
    if value.ndim == 0:
        return value
    if value.ndim > 1:
        raise ValueError(
            f"blocked quantization (a scale or zero point of shape {value.shape}) is not supported"
        )
    if value.size == 1:
        return value.reshape(())
    if not -rank <= axis < rank:
        raise ValueError(f"axis {axis} is out of range for rank {rank}")
    shape = [1] * rank
    shape[axis % rank] = value.size
    return value.reshape(shape)


def _saturate(values: np.ndarray, dtype) -> np.ndarray:
    """Integer-valued float64 `values` into `dtype`, clamped to its range; NaN to its minimum."""
    info = np.iinfo(dtype)
    return np.fmin(np.fmax(values, float(info.min)), float(info.max)).astype(dtype)


def _zero(zero_point, axis: int, rank: int) -> np.ndarray | float:
    return 0.0 if zero_point is None else _along(zero_point, axis, rank).astype(np.float64)


def quantize_linear(
    x, y_scale, y_zero_point=None, *, axis=1, output_dtype=np.uint8, precision=None
):
    """ONNX QuantizeLinear to an integer type: saturate(rint(x / y_scale) + y_zero_point), the
    division in `precision` (by default the scale's type)."""
    precision = y_scale.dtype if precision is None else np.dtype(precision)
    scale = _along(y_scale, axis, x.ndim).astype(precision)
    quotient = np.rint(x.astype(precision) / scale)
    return _saturate(quotient.astype(np.float64) + _zero(y_zero_point, axis, x.ndim), output_dtype)


def dequantize_linear(x, x_scale, x_zero_point=None, *, axis=1, output_dtype=np.float32):
    """ONNX DequantizeLinear from an integer type: (x - x_zero_point) * x_scale. The difference
    is exact in int64, rounded once to float32; the product is one float32 multiplication, then
    rounded to `output_dtype` (float16 and bfloat16 keep float32's product, as the reference)."""
    shifted = x.astype(np.int64)
    if x_zero_point is not None:
        shifted = shifted - _along(x_zero_point, axis, x.ndim).astype(np.int64)
    scale = _along(x_scale, axis, x.ndim).astype(np.float32)
    return (shifted.astype(np.float32) * scale).astype(output_dtype)


def dynamic_quantize_linear(x):
    """ONNX DynamicQuantizeLinear (uint8): the range [min(x, 0), max(x, 0)] mapped onto 0..255.
    Returns (y, y_scale, y_zero_point); an all-zero (or empty) x gets scale 1."""
    high = np.max(x, initial=np.float32(0))
    low = np.min(x, initial=np.float32(0))
    scale = np.float32(1) if high == low else (high - low) / np.float32(255)
    zero_point = np.rint(np.fmin(np.fmax(np.float32(0) - low / scale, 0), 255))
    y = np.rint(x / scale).astype(np.float64) + np.float64(zero_point)
    return _saturate(y, np.uint8), np.asarray(scale, np.float32), np.asarray(zero_point, np.uint8)


def _requantize(accumulator, multiplier, y_zero_point):
    """saturate(rint(accumulator * multiplier) + y_zero_point) in y_zero_point's type, the product
    and sum in float64 (the accumulator is an exact integer)."""
    zero = np.asarray(y_zero_point)
    scaled = np.rint(accumulator * np.asarray(multiplier).astype(np.float64))
    return _saturate(scaled + zero.astype(np.float64), zero.dtype)


def _matrix_side(value, rows: bool) -> np.ndarray:
    """A QLinearMatMul scale or zero point: a vector is per row of `a` (rows) or per column of
    `b`; higher ranks broadcast as given."""
    value = np.asarray(value)
    if value.ndim == 1 and value.size > 1 and rows:
        return value.reshape(-1, 1)
    return value.reshape(()) if value.size == 1 else value


def qlinear_matmul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point):
    """ONNX QLinearMatMul: the integer product of (a - a_zero_point) and (b - b_zero_point),
    rescaled by a_scale * b_scale / y_scale (computed in the scales' type) and requantized."""
    left = a.astype(np.float64) - _matrix_side(a_zero_point, True).astype(np.float64)
    right = b.astype(np.float64) - _matrix_side(b_zero_point, False).astype(np.float64)
    multiplier = _matrix_side(a_scale, True) * _matrix_side(b_scale, False) / y_scale.reshape(())
    return _requantize(np.matmul(left, right), multiplier, np.asarray(y_zero_point).reshape(()))


def _integer_conv(x, x_zero_point, w, w_zero_point, geometry) -> np.ndarray:
    """The convolution of (x - x_zero_point) with (w - w_zero_point), as exact float64 integers.
    Padding adds zeros after the shift, that is x_zero_point before it."""
    shifted_x = x.astype(np.float64)
    if x_zero_point is not None:
        shifted_x -= np.asarray(x_zero_point, dtype=np.float64).reshape(())
    shifted_w = w.astype(np.float64)
    if w_zero_point is not None:
        shifted_w -= _along(w_zero_point, 0, w.ndim).astype(np.float64)
    return conv(shifted_x, shifted_w, **geometry)


def conv_integer(
    x,
    w,
    x_zero_point=None,
    w_zero_point=None,
    *,
    pads=None,
    strides=None,
    dilations=None,
    group=1,
    auto_pad="NOTSET",
):
    """ONNX ConvInteger: int32 sums (wrapping) of the zero-point-shifted products. The geometry
    as runtime_support.conv takes it."""
    geometry = dict(pads=pads, strides=strides, dilations=dilations, group=group, auto_pad=auto_pad)
    return (
        _integer_conv(x, x_zero_point, w, w_zero_point, geometry).astype(np.int64).astype(np.int32)
    )


def qlinear_conv(
    x,
    x_scale,
    x_zero_point,
    w,
    w_scale,
    w_zero_point,
    y_scale,
    y_zero_point,
    B=None,
    *,
    pads=None,
    strides=None,
    dilations=None,
    group=1,
    auto_pad="NOTSET",
):
    """ONNX QLinearConv: the integer convolution plus the int32 bias B, rescaled per output
    channel by x_scale * w_scale / y_scale (computed in float32) and requantized. The geometry
    as runtime_support.conv takes it."""
    geometry = dict(pads=pads, strides=strides, dilations=dilations, group=group, auto_pad=auto_pad)
    accumulator = _integer_conv(x, x_zero_point, w, w_zero_point, geometry)
    spatial = (1,) * (x.ndim - 2)
    if B is not None:
        accumulator += B.astype(np.float64).reshape((-1,) + spatial)
    scales = np.asarray(w_scale, dtype=np.float32).reshape(-1)
    multiplier = np.float32(x_scale.reshape(())) * scales / np.float32(y_scale.reshape(()))
    return _requantize(
        accumulator, multiplier.reshape((-1,) + spatial), np.asarray(y_zero_point).reshape(())
    )
