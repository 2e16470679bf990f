"""Elementwise functions numpy lacks."""

from __future__ import annotations

import math

import numpy as np

from runtime_support._kernels import kernel
from runtime_support._threads import run_ranges

try:  # the ufunc behind np.clip, same results: np.clip's Python wrapper costs 1.4 to 2.5 us a call
    from numpy._core.umath import clip as clip_ufunc  # numpy 2
except ImportError:  # numpy 1.26
    from numpy.core.umath import clip as clip_ufunc

__all__ = ["div_integer", "erf", "gelu", "pow_integer", "sigmoid"]

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SERIES_LIMIT = 3.0  # below: power series; above: continued fraction for erfc
_SATURATION = 6.0  # erfc(6) < 2**-54: erf rounds to +-1 in float64

# The float32 erf: erf(x) = tanh(x * P(t) / Q(t)), t = min(x*x, 16). atanh(erf(x))/x
# is smooth, so a short rational fits it, and tanh damps the argument's error by (1 - erf**2)
# where erf nears +-1 and keeps the result within [-1, 1] (erf rounds to 1 from |x| = 3.92 on;
# numpy's float32 tanh is 1 - 2**-24 up to 10, so this one is from |x| = 4.3 on, one ulp below
# before). Coefficients of t**0.. (P) and t**1.. (Q, whose t**0 is 1), all
# positive, fitted and measured by tools/derive_erf_float32.py (relative error in erf of the
# rational 3.3e-9, 5.2e-8 with the coefficients rounded to float32).
_ERF32_T_MAX = np.float32(16.0)
_ERF32_P = tuple(
    np.float32(c)
    for c in (1.128379225730896, 0.27980682253837585, 0.042646538466215134, 0.0021782799158245325)
)
_ERF32_Q = tuple(
    np.float32(c) for c in (0.1568925529718399, 0.023689910769462585, 0.000324923952575773)
)
_ONE32 = np.float32(1)
_HALF32 = np.float32(0.5)
_SQRT_TWO_OVER_PI32 = np.float32(math.sqrt(2.0 / math.pi))
_GELU_CUBIC = np.float32(0.044715)


def _gelu_coefficients():
    """erf(x / sqrt 2) of Gelu by the same rational, rewritten in h = x / 2 and s = h * h (so
    u = x / sqrt 2 = sqrt 2 h, u * u = 2 s): z = u P(2s) / Q(2s) = h p(s) / q(s) with p monic,
    P(2s) = 8 P3 (s**3 + a2 s**2 + a1 s + a0), and q(s) = Q(2s) / (8 sqrt 2 P3). h serves the
    last step too (gelu = h (1 + tanh z)): no pass scales x by 1/sqrt 2, none by 1/2 at the end,
    and p's leading multiply is gone. Computed in float64 from the float32 erf coefficients."""
    big_p = [float(c) for c in _ERF32_P]
    big_q = [1.0] + [float(c) for c in _ERF32_Q]
    monic = tuple(np.float32(big_p[i] * 2**i / (8 * big_p[3])) for i in range(3))
    factor = math.sqrt(2.0) * 8 * big_p[3]
    return monic, tuple(np.float32(big_q[i] * 2**i / factor) for i in range(4))


_GELU_P, _GELU_Q = _gelu_coefficients()  # p's t**0..t**2 (t**3's is 1), q's t**0..t**3
# Small tensors limit h to +-4 (x to +-8): there z = h p(8) / q(8) is beyond 13 on both paths, and
# numpy's float32 tanh is +-1 exactly from |z| = 10.0008 on (0.99999994 below it)
_GELU_H_MAX = np.float32(4.0)
# Elements per block of the float32 kernels: their chains of in-place ufuncs then work on a few
# 125 KB buffers that stay in L2 (faster than whole-array passes at 1M elements), each below glibc's
# default mmap threshold (128 KiB), so they come from the heap, never a fresh mmap whose pages fault
# in on every call (about 4.5 us a page on this project's virtual machines). Measured on 1M
# elements: 16K-element blocks 12% slower (more calls), 64K ones no faster once faults count.
_BLOCK = 32000


def _via_float32(x: np.ndarray) -> bool:
    """Whether the fast float32 kernels serve x: float32, and float16/bfloat16 widened to it."""
    return x.dtype == np.float32 or x.dtype.name in ("float16", "bfloat16")


# Caps as arrays of a block's length: numpy 2.4 runs np.minimum of an array and a scalar at a
# fifth of the speed of two arrays (11.5 against 2.4 us on 32000 float32 here), the same bits.
_ERF32_T_CAP = np.full(_BLOCK, _ERF32_T_MAX, np.float32)
_GELU_S_CAP = np.full(_BLOCK, 8.0, np.float32)  # s = h * h = u * u / 2, u * u capped at 16
_ERF32_T_CAP.flags.writeable = _GELU_S_CAP.flags.writeable = False


def _blocks(x: np.ndarray, out: np.ndarray, scratch: int):
    """(x block, out block, `scratch` scratch buffers) over the flat float32 arrays x and out."""
    flat_x, flat_out = x.reshape(-1), out.reshape(-1)
    size = flat_x.size
    if size <= _BLOCK:  # one block, as a tuple: no generator, no slicing (small tensors' overhead)
        return ((flat_x, flat_out) + tuple(_scratch(size, scratch)),)
    return _block_slices(flat_x, flat_out, size, scratch)


def _block_slices(flat_x, flat_out, size: int, scratch: int):
    buffers = [np.empty(_BLOCK, np.float32) for _ in range(scratch)]
    for start in range(0, size, _BLOCK):
        stop = min(start + _BLOCK, size)
        n = stop - start
        yield (flat_x[start:stop], flat_out[start:stop]) + tuple(b[:n] for b in buffers)


def _run_blocks(block, x: np.ndarray, out: np.ndarray, scratch: int, **errors) -> None:
    """block(x block, out block, *scratch) over the flat float32 arrays x and out, under
    np.errstate(**errors) (per thread: numpy keeps it in a context variable); large arrays in
    equal runs over the threads set (run_ranges: elementwise, so the split changes no bits)."""
    flat_x, flat_out = x.reshape(-1), out.reshape(-1)

    def run(start: int, stop: int) -> None:
        with np.errstate(**errors):
            for blocked in _blocks(flat_x[start:stop], flat_out[start:stop], scratch):
                block(*blocked)

    run_ranges(run, flat_x.size, align=16)  # runs start on 64-byte boundaries


def _erf32_block(x, out, t, q, p) -> None:
    """out = erf(x) for float32 blocks, by Horner's rule in float32 and numpy's tanh (t, q, p:
    scratch; out is written last, so it may be x). t = x*x is clamped rather than x (one pass, NaN
    kept): beyond |x| = 4 the argument only grows, and tanh of it rounds to +-1."""
    np.multiply(x, x, out=t)
    np.minimum(t, _ERF32_T_CAP[: t.size], out=t)
    np.multiply(t, _ERF32_P[-1], out=p)
    for c in _ERF32_P[-2:0:-1]:
        np.add(p, c, out=p)
        np.multiply(p, t, out=p)
    np.add(p, _ERF32_P[0], out=p)
    np.multiply(p, x, out=p)
    np.multiply(t, _ERF32_Q[-1], out=q)
    for c in _ERF32_Q[-2::-1]:
        np.add(q, c, out=q)
        np.multiply(q, t, out=q)
    np.add(q, _ONE32, out=q)
    np.divide(p, q, out=p)
    np.tanh(p, out=out)


@kernel(out=True, fresh=True, exact=False, exact_twin="rt.exact_erf")
def erf(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """The error function in x's dtype (into `out` when given: an array of x's shape and dtype,
    possibly x itself).

    float32 (and float16, bfloat16 through float32): tanh of a rational in float32, see
    _erf32_block, about 100 times faster than the float64 path. Measured by
    tools/derive_erf_float32.py against libm's float64 erf: at most 4.6 float32 ulps (mean 0.4)
    over 2 * 10**7 random inputs (uniform in [-5, 5] and random bit patterns), at most 1.02 over
    every float32 in [2, 4]; never beyond +-1; +-inf gives +-1, NaN stays NaN.

    Other types: float64, accurate to a few float64 ulps. |x| < 3: erf(x) = 2/sqrt(pi) exp(-x^2)
    sum_n (2x^2)^n x / (1*3*...*(2n+1)), a series of positive terms (no cancellation).
    3 <= |x| < 6: erfc from its continued fraction, evaluated backwards from a fixed depth that
    converges there. |x| >= 6: +-1.
    """
    x = np.asarray(x)
    if not _via_float32(x):
        return _into(_erf64(x), out)
    if x.dtype != np.float32 or not x.flags.c_contiguous:
        return _into(erf(np.ascontiguousarray(x, dtype=np.float32)).astype(x.dtype), out)
    if out is not None and not out.flags.c_contiguous:
        return _into(erf(x), out)
    if out is None:
        out = np.empty(x.shape, np.float32)
    if x.size <= _SMALL:
        _erf32_block(_clamped(x.reshape(-1)), out.reshape(-1), *_scratch(x.size, 3))
        return out
    _run_blocks(_erf32_block, x, out, 3, over="ignore")  # x*x of a huge x: inf, capped at 16
    return out


# Tensors up to this many elements (a decoder step's activations) skip np.errstate and the block
# loop: in a model, between matrix products that evict the caches, entering and leaving errstate
# costs about 9 us, as much as four ufunc calls. Their x is clamped to +-9 instead (two passes),
# so that no float operation overflows; erf(+-9) and erf of anything beyond round to +-1 alike.
_SMALL = 4096
_ERF32_X_MAX = np.float32(9.0)


def _clamped(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """x clamped to [-9, 9] (NaN stays NaN), into `out` (a new array by default; may be x)."""
    return clip_ufunc(x, -_ERF32_X_MAX, _ERF32_X_MAX, out=out)  # as minimum and maximum, faster


def _scratch(size: int, count: int) -> list:
    return [np.empty(size, np.float32) for _ in range(count)]


def _into(y: np.ndarray, out: np.ndarray | None) -> np.ndarray:
    if out is None:
        return y
    out[...] = y
    return out


def _erf64(x: np.ndarray) -> np.ndarray:
    """erf in float64 (series and continued fraction, see erf), returned in x's dtype."""
    x64 = np.asarray(x, dtype=np.float64)
    a = np.abs(x64)
    result = np.ones_like(x64)
    small = a < _SERIES_LIMIT
    if small.any():
        s = a[small]
        s2 = 2.0 * s * s
        term = s.copy()
        total = s.copy()
        n = 0
        while True:
            n += 1
            term *= s2 / (2 * n + 1)
            total += term
            if not (term > total * 2.0**-54).any():
                break
        result[small] = _TWO_OVER_SQRT_PI * np.exp(-s * s) * total
    middle = (a >= _SERIES_LIMIT) & (a < _SATURATION)
    if middle.any():
        z = a[middle]
        # erfc(z) = exp(-z^2)/sqrt(pi) * 1/(z + (1/2)/(z + 1/(z + (3/2)/(z + 2/(z + ...)))))
        fraction = z.copy()
        for k in range(60, 0, -1):
            fraction = z + (k / 2.0) / fraction
        result[middle] = 1.0 - np.exp(-z * z) / (math.sqrt(math.pi) * fraction)
    result = np.copysign(result, x64)
    result[np.isnan(x64)] = np.nan
    return result.astype(np.asarray(x).dtype, copy=False)


@kernel(out=True, fresh=True, exact=False, exact_twin="rt.exact_gelu")
def gelu(x: np.ndarray, *, approximate: str = "none", out: np.ndarray | None = None) -> np.ndarray:
    """Gelu: x * Phi(x) = 0.5 * x * (1 + erf(x / sqrt 2)), or with approximate="tanh"
    0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3))); into `out` as erf does.

    float32 (float16, bfloat16 through it): in float32 blocks with the float32 erf of `erf`; the
    kernel a graph rewrite of the Div/Erf/Add/Mul/Mul pattern could call. Other types: float64.
    gelu(-inf) is NaN (-inf * 0), with numpy's invalid-value warning on tensors of up to _SMALL
    elements, which skip np.errstate."""
    x = np.asarray(x)
    if not _via_float32(x):
        x64 = x.astype(np.float64)
        if approximate == "tanh":
            inner = math.sqrt(2.0 / math.pi) * (x64 + 0.044715 * x64**3)
            y = 0.5 * x64 * (1.0 + np.tanh(inner))
        else:
            y = 0.5 * x64 * (1.0 + _erf64(x64 / math.sqrt(2.0)))
        return _into(y.astype(x.dtype, copy=False), out)
    if x.dtype != np.float32 or not x.flags.c_contiguous:
        y = gelu(np.ascontiguousarray(x, dtype=np.float32), approximate=approximate)
        return _into(y.astype(x.dtype), out)
    if out is not None and not out.flags.c_contiguous:
        return _into(gelu(x, approximate=approximate), out)
    if out is None:
        out = np.empty(x.shape, np.float32)
    if x.size <= _SMALL and approximate == "none":  # as erf's small tensors, no errstate
        flat_x = x.reshape(-1)
        h, limited = _scratch(x.size, 2)
        np.multiply(flat_x, _HALF32, out=h)
        # h limited (see _GELU_H_MAX) so that nothing overflows: the bits of the blocked path
        clip_ufunc(h, -_GELU_H_MAX, _GELU_H_MAX, out=limited)
        _gelu32_erf_tail(limited, h, out.reshape(-1), *_scratch(x.size, 3))
        return out
    if approximate == "tanh":
        _run_blocks(_gelu32_tanh_block, x, out, 2, over="ignore", invalid="ignore")
    else:  # as in erf; gelu(-inf) is NaN
        _run_blocks(_gelu32_erf_block, x, out, 4, over="ignore", invalid="ignore")
    return out


def _gelu32_erf_block(x, out, h, s, q, p) -> None:
    """out = gelu(x) = h (1 + tanh(h p(s) / q(s))), h = x / 2, s = min(h * h, 8), for float32
    blocks (h, s, q, p: scratch; out is written last): 19 passes (see _gelu_coefficients)."""
    np.multiply(x, _HALF32, out=h)
    _gelu32_erf_tail(h, h, out, s, q, p)


def _gelu32_erf_tail(h, h_out, out, s, q, p) -> None:
    """out = h_out (1 + tanh(h p(s) / q(s))), s = min(h * h, 8); h_out is h, or (small
    tensors) h before its limit."""
    np.multiply(h, h, out=s)
    np.minimum(s, _GELU_S_CAP[: s.size], out=s)
    np.add(s, _GELU_P[2], out=p)
    np.multiply(p, s, out=p)
    np.add(p, _GELU_P[1], out=p)
    np.multiply(p, s, out=p)
    np.add(p, _GELU_P[0], out=p)
    np.multiply(s, _GELU_Q[3], out=q)
    np.add(q, _GELU_Q[2], out=q)
    np.multiply(q, s, out=q)
    np.add(q, _GELU_Q[1], out=q)
    np.multiply(q, s, out=q)
    np.add(q, _GELU_Q[0], out=q)
    np.multiply(p, h, out=p)
    np.divide(p, q, out=p)
    np.tanh(p, out=p)
    np.add(p, _ONE32, out=p)
    np.multiply(p, h_out, out=out)


def _gelu32_tanh_block(x, out, u, t) -> None:
    """out = gelu(x) with approximate="tanh", for float32 blocks (u, t: scratch)."""
    np.multiply(x, x, out=t)
    np.multiply(t, _GELU_CUBIC, out=t)
    np.add(t, _ONE32, out=t)
    np.multiply(t, x, out=t)
    np.multiply(t, _SQRT_TWO_OVER_PI32, out=t)
    np.tanh(t, out=u)
    np.add(u, _ONE32, out=u)
    np.multiply(u, x, out=u)
    np.multiply(u, _HALF32, out=out)


@kernel(fresh=True, exact=False, exact_twin="rt.exact_sigmoid")
def sigmoid(x: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-x)). float32 and float64 arrays: in place in one new array (negative, exp,
    add, reciprocal: 156 us on 221,184 float32 values where the branch-free np.where form took
    1,238, and 3.4 against 6.3 us on an SE block's 1,152); exp(-x) overflowing to inf gives 0,
    for x below about -88 in float32 where the value is a subnormal under 1e-38. Other types:
    exp is only taken of -|x|, without overflow."""
    x = np.asarray(x)
    one = x.dtype.type(1)
    if x.dtype in (np.float32, np.float64) and x.ndim:
        t = np.negative(x)
        with np.errstate(over="ignore"):
            np.exp(t, out=t)
        t += one
        return np.reciprocal(t, out=t)
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, one / (one + e), e / (one + e))


def div_integer(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer division truncating toward zero (C semantics), as ONNX Div on integers."""
    quotient = np.floor_divide(a, b)
    inexact = (np.remainder(a, b) != 0) & ((a < 0) != (b < 0))
    return np.where(inexact, quotient + 1, quotient).astype(np.result_type(a, b), copy=False)


def pow_integer(base: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    """Integer Pow in the base's type, wrapping on overflow; exponents may be negative.

    The power is taken on the bits as uint64 (wrapping products agree with every narrower type).
    A negative exponent gives 1 / base**n truncated toward zero: 1 for base 1, +-1 for base -1,
    0 for any other base but 0, which gives the type's minimum (as onnxruntime).
    """
    base, exponent = np.asarray(base), np.asarray(exponent)
    dtype = base.dtype
    negative = exponent < 0
    magnitude = np.where(negative, 0, exponent).astype(np.uint64)
    result = np.power(base.astype(np.uint64), magnitude).astype(dtype)
    if not negative.any():
        return result
    minus_one = np.where(exponent % 2 == 0, 1, -1)
    reciprocal = np.where(base == 1, 1, np.where(base == -1, minus_one, 0)).astype(dtype)
    reciprocal[np.broadcast_to(base == 0, reciprocal.shape)] = np.iinfo(dtype).min
    return np.where(negative, reciprocal, result)
