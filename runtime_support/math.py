"""Elementwise functions numpy lacks."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["div_integer", "erf", "gelu", "pow_integer", "sigmoid"]

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SERIES_LIMIT = 3.0  # below: power series; above: continued fraction for erfc
_SATURATION = 6.0  # erfc(6) < 2**-54: erf rounds to +-1 in float64


def erf(x: np.ndarray) -> np.ndarray:
    """The error function, accurate to a few float64 ulps, returned in x's dtype.

    |x| < 3: erf(x) = 2/sqrt(pi) exp(-x^2) sum_n (2x^2)^n x / (1*3*...*(2n+1)), a series of
    positive terms (no cancellation). 3 <= |x| < 6: erfc from its continued fraction, evaluated
    backwards from a fixed depth that converges there. |x| >= 6: +-1.
    """
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


def gelu(x: np.ndarray, *, approximate: str = "none") -> np.ndarray:
    """Gelu: x * Phi(x), exactly through erf or with the tanh approximation."""
    x64 = np.asarray(x, dtype=np.float64)
    if approximate == "tanh":
        inner = math.sqrt(2.0 / math.pi) * (x64 + 0.044715 * x64**3)
        y = 0.5 * x64 * (1.0 + np.tanh(inner))
    else:
        y = 0.5 * x64 * (1.0 + erf(x64 / math.sqrt(2.0)))
    return y.astype(x.dtype, copy=False)


def sigmoid(x: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-x)), without overflow: exp is only taken of -|x|."""
    e = np.exp(-np.abs(x))
    one = x.dtype.type(1)
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
