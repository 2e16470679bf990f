"""Quantization kernels: linear (de)quantization to and from 8- and 16-bit integers, the 4- and
2-bit integers and the float8 and float4 types; the casts to those small types (Cast, CastLike);
the integer and quantized matrix products and convolutions.

Every kernel is exact, the same bits on every machine:
- a quotient or product is one IEEE operation in the type the specification names (the scale's
  type, or `precision`); float16 and bfloat16 operations go through float32, which rounds them
  correctly (float32 carries more than twice their precision plus two bits);
- rounding is half to even (`np.rint`), saturation to the target's range is a comparison, and NaN
  goes to the target's minimum (what onnxruntime gives), defined rather than left to the cast;
- integer products and sums run through BLAS on exact integers, in float32 when every partial sum
  provably stays below 2**24 (the data's type bounds one factor, the weights' sums of magnitudes
  are computed: runtime_support.linalg.integer_sum_type), else in float64 (each term at most
  255 * 255, every partial sum below 2**53 for reductions shorter than 10**11 terms). Either way
  the sums are exact in any summation order. Sums wrap to int32 as integer arithmetic does.

Scales and zero points are per tensor (a scalar or a one-element vector), per axis (a vector
along `axis`) or blocked (`block_size` > 0: the input's rank, each element covering `block_size`
consecutive elements along `axis`).

The small types are ml_dtypes' (runtime_support/_dtypes.py). A conversion to one of them is
ml_dtypes' round to nearest even, which the backend data follow, with ONNX's saturation added
(`saturate`, float8 targets only: an out-of-range value or infinity becomes the largest finite
value of its sign instead of infinity or NaN); float8 E8M0, a power of two, rounds as
`round_mode` says.
"""

from __future__ import annotations

import numpy as np

from runtime_support._dtypes import is_float_dtype
from runtime_support._kernels import kernel
from runtime_support.conv import conv
from runtime_support.linalg import integer_span, shifted_integers, wrapped_int32

__all__ = [
    "cast_small",
    "conv_integer",
    "dequantize_linear",
    "dynamic_quantize_linear",
    "qlinear_conv",
    "qlinear_matmul",
    "quantize_linear",
]


def _along(value, axis: int, rank: int, block_size: int = 0, length: int = 0) -> np.ndarray:
    """A scale or zero point shaped to broadcast against a rank-`rank` tensor: a scalar as is,
    a one-element vector as a scalar, a vector along `axis`; with `block_size`, a tensor of the
    input's rank repeated `block_size` times along `axis` and cut to the input's `length`."""
    value = np.asarray(value)
    if block_size > 0:
        if value.ndim != rank:
            raise ValueError(
                f"blocked quantization: a scale or zero point of rank {value.ndim} for an input "
                f"of rank {rank}"
            )
        axis %= rank
        if -(-length // block_size) != value.shape[axis]:
            raise ValueError(
                f"blocked quantization: {value.shape[axis]} blocks of {block_size} along axis "
                f"{axis} cannot cover {length} elements"
            )
        return np.repeat(value, block_size, axis=axis)[(slice(None),) * axis + (slice(0, length),)]
    if value.ndim == 0:
        return value
    if value.ndim > 1:
        raise ValueError(
            f"a scale or zero point of shape {value.shape} needs block_size (blocked quantization)"
        )
    if value.size == 1:
        return value.reshape(())
    if not -rank <= axis < rank:
        raise ValueError(f"axis {axis} is out of range for rank {rank}")
    shape = [1] * rank
    shape[axis % rank] = value.size
    return value.reshape(shape)


def _integer_range(dtype) -> tuple[int, int]:
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
    else:
        import ml_dtypes  # int4, uint4, int2, uint2

        info = ml_dtypes.iinfo(dtype)
    return int(info.min), int(info.max)


def _saturate(values: np.ndarray, dtype) -> np.ndarray:
    """Integer-valued float64 `values` into `dtype`, clamped to its range; NaN to its minimum."""
    low, high = _integer_range(dtype)
    return np.fmin(np.fmax(values, float(low)), float(high)).astype(dtype)


_E8M0_ROUNDING = ("up", "down", "nearest")


def _to_e8m0(x: np.ndarray, saturate: bool, round_mode: str) -> np.ndarray:
    """float8 E8M0 (2**(e - 127), e = 0..254; 255 is NaN) of |x|: float32's biased exponent,
    plus one when rounding up a value that is not a power of two (`up`), or past the midpoint
    1.5 * 2**e (`nearest`, ties up). Beyond 2**127 saturates to it, or gives NaN."""
    import ml_dtypes

    if round_mode not in _E8M0_ROUNDING:
        raise ValueError(f"round_mode {round_mode!r} is not one of {', '.join(_E8M0_ROUNDING)}")
    bits = np.abs(x.astype(np.float32)).view(np.uint32)
    exponent = (bits >> 23).astype(np.int64)
    mantissa = bits & 0x7FFFFF
    nan = (exponent == 255) & (mantissa != 0)
    if round_mode == "up":
        exponent += (mantissa != 0) & (exponent < 255)
    elif round_mode == "nearest":
        exponent += (mantissa >= 0x400000) & (exponent < 255)
    limit = 254 if saturate else 255
    code = np.where(nan, 255, np.minimum(exponent, limit)).astype(np.uint8)
    return code.view(ml_dtypes.float8_e8m0fnu)


# The 4- and 2-bit integer types: name -> (minimum, maximum).
_SMALL_INTEGERS = {"int4": (-8, 7), "uint4": (0, 15), "int2": (-2, 1), "uint2": (0, 3)}


def _float_to_small_integer(x, to):
    """A float to int4/uint4/int2/uint2 as ml_dtypes 0.7 converts (and the backend data say):
    truncated toward zero, 0 when outside the type's range or NaN. Computed here, because
    ml_dtypes 0.5 (the newest that admits numpy 1.26) wraps out-of-range values around instead:
    the bit-identity matrix found the two versions' casts differing."""
    low, high = _SMALL_INTEGERS[to.name]
    with np.errstate(invalid="ignore"):
        whole = np.trunc(np.asarray(x).astype(np.float64))
        inside = (whole >= low) & (whole <= high)
        return np.where(inside, whole, 0).astype(np.int8).astype(to)


@kernel(exact=True)
def cast_small(x, *, to, saturate=True, round_mode="up"):
    """ONNX Cast to or from the small types (float8, float4, 4- and 2-bit integers): ml_dtypes'
    conversion, with saturation for float8 targets (`saturate`) and E8M0's `round_mode`."""
    to = np.dtype(to)
    if to.name == "float8_e8m0fnu" and x.dtype != to:
        return _to_e8m0(x, bool(saturate), round_mode)
    if to.name in _SMALL_INTEGERS and is_float_dtype(x.dtype):
        return _float_to_small_integer(x, to)
    if saturate and to.name.startswith("float8") and is_float_dtype(x.dtype):
        import ml_dtypes

        largest = float(ml_dtypes.finfo(to).max)
        x = np.clip(x.astype(np.float32) if x.dtype.itemsize < 4 else x, -largest, largest)
    return x.astype(to)


@kernel(exact=True)
def quantize_linear(
    x,
    y_scale,
    y_zero_point=None,
    *,
    axis=1,
    block_size=0,
    output_dtype=np.uint8,
    precision=None,
    saturate=True,
):
    """ONNX QuantizeLinear. To an integer type: saturate(rint(x / y_scale) + y_zero_point); to a
    float8 or float4 type: cast(x / y_scale + y_zero_point) with the cast's rounding and
    `saturate`. The division in `precision` (by default the scale's type)."""
    output_dtype = np.dtype(output_dtype)
    precision = y_scale.dtype if precision is None else np.dtype(precision)
    length = x.shape[axis] if block_size > 0 else 0
    scale = _along(y_scale, axis, x.ndim, block_size, length).astype(precision)
    quotient = x.astype(precision) / scale
    if is_float_dtype(output_dtype):
        if y_zero_point is not None:
            zero = _along(y_zero_point, axis, x.ndim, block_size, length).astype(np.float32)
            quotient = quotient.astype(np.float32) + zero
        return cast_small(quotient, to=output_dtype, saturate=saturate)
    zero = (
        0.0
        if y_zero_point is None
        else _along(y_zero_point, axis, x.ndim, block_size, length).astype(np.float64)
    )
    return _saturate(np.rint(quotient).astype(np.float64) + zero, output_dtype)


@kernel(exact=True)
def dequantize_linear(
    x, x_scale, x_zero_point=None, *, axis=1, block_size=0, output_dtype=np.float32
):
    """ONNX DequantizeLinear: (x - x_zero_point) * x_scale. From an integer type the difference
    is exact in int64, rounded once to float32; from a float8 or float4 type it is taken in
    float32 (every such value and difference of two is exact there). The product is one float32
    multiplication, then rounded to `output_dtype` (float16 and bfloat16 keep float32's product,
    as the reference)."""
    length = x.shape[axis] if block_size > 0 else 0
    wide = np.float32 if is_float_dtype(x.dtype) else np.int64
    shifted = x.astype(wide)
    if x_zero_point is not None:
        shifted = shifted - _along(x_zero_point, axis, x.ndim, block_size, length).astype(wide)
    scale = _along(x_scale, axis, x.ndim, block_size, length).astype(np.float32)
    return (shifted.astype(np.float32) * scale).astype(output_dtype)


def dynamic_quantize_linear(x):
    """ONNX DynamicQuantizeLinear (uint8): the range [min(x, 0), max(x, 0)] mapped onto 0..255.
    Returns (y, y_scale, y_zero_point); an all-zero (or empty) x gets scale 1."""
    high = np.max(x, initial=np.float32(0))
    low = np.min(x, initial=np.float32(0))
    scale = np.float32(1) if high == low else (high - low) / np.float32(255)
    zero_point = np.rint(np.fmin(np.fmax(np.float32(0) - low / scale, 0), 255))
    if x.dtype == np.float32:
        # in float32, in place: rint(x / scale) + zero_point is exact there (both integers, the
        # sum under 2**24 unless it lies far outside 0..255, where it saturates alike), so the
        # bits are the float64 sum's, with a third of the memory traffic (ddddocr common_old's
        # 184,320 values: 328 -> 216 us); fmax and fmin, not clip: NaN saturates to 0
        y = np.divide(x, scale)
        np.rint(y, out=y)
        y += np.float32(zero_point)
        np.fmax(y, np.float32(0), out=y)
        np.fmin(y, np.float32(255), out=y)
        q = y.astype(np.uint8)
    else:
        q = _saturate(np.rint(x / scale).astype(np.float64) + np.float64(zero_point), np.uint8)
    return q, np.asarray(scale, np.float32), np.asarray(zero_point, np.uint8)


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


def _map_sums(magnitudes: np.ndarray) -> np.ndarray:
    """Each output map's sum of filter magnitudes ((M, C/group, *kernel) -> (M,))."""
    return magnitudes.reshape(magnitudes.shape[0], -1).sum(axis=1)


def _integer_conv(x, x_zero_point, w, w_zero_point, geometry) -> np.ndarray:
    """The convolution of (x - x_zero_point) with (w - w_zero_point), as exact integers in float32
    or float64 (runtime_support.linalg.shifted_integers: x's type bounds its factor, each output
    map's sum of filter magnitudes is computed; a constant w is shifted once). Padding adds zeros
    after the shift, that is x_zero_point before it."""
    zero_w = None
    if w_zero_point is not None:
        zero_w = _along(w_zero_point, 0, w.ndim).astype(np.float64)
    shifted_w = shifted_integers(w, zero_w, integer_span(x.dtype), _map_sums)
    shifted_x = x.astype(shifted_w.dtype)
    if x_zero_point is not None:
        shifted_x -= np.asarray(x_zero_point, dtype=shifted_w.dtype).reshape(())
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
    return wrapped_int32(_integer_conv(x, x_zero_point, w, w_zero_point, geometry))


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
    accumulator = _integer_conv(x, x_zero_point, w, w_zero_point, geometry).astype(
        np.float64, copy=False
    )
    spatial = (1,) * (x.ndim - 2)
    if B is not None:
        accumulator += B.astype(np.float64).reshape((-1,) + spatial)
    scales = np.asarray(w_scale, dtype=np.float32).reshape(-1)
    multiplier = np.float32(x_scale.reshape(())) * scales / np.float32(y_scale.reshape(()))
    return _requantize(
        accumulator, multiplier.reshape((-1,) + spatial), np.asarray(y_zero_point).reshape(())
    )
