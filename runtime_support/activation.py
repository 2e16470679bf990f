"""Activation kernels numpy has no function for: the exponential linear units, Mish, Swish,
SwiGLU, Shrink and Hardmax.

The transcendental kernels compute float16 and bfloat16 inputs in float32 and round once to the
input's type at the end (as numpy's own float16 functions do), so a composite formula does not pile
up half-precision roundings. Expressions that cannot overflow are guarded so that the branch a
`where` discards raises no floating-point warning.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from runtime_support._kernels import kernel
from runtime_support.exact_math import (
    exact_expm1,
    exact_sigmoid,
    exact_softplus,
    exact_tanh,
    gelu_erf64,
)
from runtime_support.math import clip_ufunc, sigmoid

__all__ = [
    "celu",
    "elu",
    "exact_celu",
    "exact_elu",
    "exact_gelu",
    "exact_mish",
    "exact_selu",
    "exact_swiglu",
    "exact_swish",
    "hard_swish",
    "hardmax",
    "log_softmax",
    "mish",
    "relu",
    "selu",
    "shrink",
    "softmax",
    "swiglu",
    "swish",
]


def _widened(x: np.ndarray) -> np.ndarray:
    """x in the type its arithmetic runs in: float32 for the half-precision types."""
    return x.astype(np.float32) if x.dtype.itemsize < 4 else x


@kernel(exact=False, exact_twin="rt.exact_elu")
def elu(X: np.ndarray, *, alpha: float = 1.0) -> np.ndarray:
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""
    x = _widened(X)
    negative = x.dtype.type(alpha) * np.expm1(np.minimum(x, 0))
    return np.where(x > 0, x, negative).astype(X.dtype, copy=False)


@kernel(exact=False, exact_twin="rt.exact_celu")
def celu(X: np.ndarray, *, alpha: float = 1.0) -> np.ndarray:
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)), for either sign of alpha."""
    x = _widened(X)
    alpha = x.dtype.type(alpha)
    with np.errstate(over="ignore"):  # exp overflows only where the min() discards it
        negative = np.minimum(0, alpha * np.expm1(x / alpha))
    return (np.maximum(x, 0) + negative).astype(X.dtype, copy=False)


@kernel(exact=False, exact_twin="rt.exact_selu")
def selu(X: np.ndarray, *, alpha: float = 1.67326319, gamma: float = 1.05070102) -> np.ndarray:
    """gamma * x for x > 0, gamma * alpha * (exp(x) - 1) otherwise."""
    x = _widened(X)
    negative = x.dtype.type(alpha) * np.expm1(np.minimum(x, 0))
    return (x.dtype.type(gamma) * np.where(x > 0, x, negative)).astype(X.dtype, copy=False)


@kernel(exact=False, exact_twin="rt.exact_mish")
def mish(X: np.ndarray) -> np.ndarray:
    """x * tanh(softplus(x)), softplus(x) = log(1 + exp(x)) taken without overflow."""
    x = _widened(X)
    return (x * np.tanh(np.logaddexp(x, x.dtype.type(0)))).astype(X.dtype, copy=False)


@kernel(exact=False, exact_twin="rt.exact_swish")
def swish(X: np.ndarray, *, alpha: float = 1.0) -> np.ndarray:
    """x * sigmoid(alpha * x)."""
    x = _widened(X)
    return (x * sigmoid(x.dtype.type(alpha) * x)).astype(X.dtype, copy=False)


@kernel(exact=False, exact_twin="rt.exact_swiglu")
def swiglu(A: np.ndarray, B: np.ndarray, *, alpha: float = 1.0) -> np.ndarray:
    """swish(A, alpha) * B, the gate A and the value B of the same shape."""
    a = _widened(A)
    gate = a * sigmoid(a.dtype.type(alpha) * a)
    return (gate * B.astype(a.dtype, copy=False)).astype(A.dtype, copy=False)


def shrink(X: np.ndarray, *, bias: float = 0.0, lambd: float = 0.5) -> np.ndarray:
    """x + bias where x < -lambd, x - bias where x > lambd, 0 elsewhere.

    The float attributes are compared and added in float32 for the half-precision types, in
    float64 for integers (the result truncated toward zero into the integer type), in the input's
    own type otherwise: every step is a comparison or one correctly rounded addition."""
    x = X.astype(np.float64) if X.dtype.kind in "iu" else _widened(X)
    bias, lambd = x.dtype.type(bias), x.dtype.type(lambd)
    y = np.where(x < -lambd, x + bias, np.where(x > lambd, x - bias, x.dtype.type(0)))
    return y.astype(X.dtype, copy=False)


@kernel(out=True, fresh=True)
def hard_swish(X: np.ndarray, *, out: np.ndarray | None = None) -> np.ndarray:
    """x * min(max(x / 6 + 0.5, 0), 1), into `out` when given (an array of x's shape and dtype,
    possibly x itself; else a new array). Fast variant.

    float32 and float64 (at least one axis) take four passes and one temporary instead of the
    inline formula's five passes and five arrays: clip(x + 3, 0, 6) * (1/6) * x (a rounding or
    two from the formula's, within the fast variant's tolerance). Other types compute the formula
    in their own type, as the exact variant's inline code does."""
    x = np.asarray(X)
    if x.dtype not in (np.float32, np.float64) or x.ndim == 0:
        f = x.dtype.type
        y = x * np.minimum(np.maximum(x / f(6) + f(0.5), f(0)), f(1))
        if out is None:
            return y
        out[...] = y
        return out
    f = x.dtype.type
    t = np.add(x, f(3))
    clip_ufunc(t, f(0), f(6), out=t)
    np.multiply(t, f(1 / 6), out=t)
    return np.multiply(x, t, out=t if out is None else out)


@kernel(out=True, fresh=True, exact=False)
def relu(X: np.ndarray, *, out: np.ndarray | None = None) -> np.ndarray:
    """max(x, 0) of a float32 or float64 array as a clip to [0, inf], into `out` when given: the
    fast variant's Relu. numpy 2.4 on AVX-512 clips 221,184 float32 values in place in about a
    third of np.maximum's time with a scalar 0 (47 against 157 us, loaded machine), and the
    ufunc skips np.clip's wrapper (0.75 against 2.1 us on 1,000 values). Not exact: -0 stays
    -0 where np.maximum (the exact variant's Relu) gives +0; NaN stays NaN in both. The bounds
    are made once per dtype: numpy scalars built per call were half the time of a Relu on a
    tiny tensor (1.9 -> 1.2 us on 16 values)."""
    bounds = _RELU_BOUNDS.get(X.dtype)
    if bounds is None:
        f = X.dtype.type
        bounds = _RELU_BOUNDS.setdefault(X.dtype, (f(0), f(np.inf)))
    return clip_ufunc(X, *bounds, out=out)


_RELU_BOUNDS: dict[np.dtype, tuple] = {}  # dtype -> (0, inf) in it


def hardmax(X: np.ndarray, *, axis: int = -1) -> np.ndarray:
    """1 at the first maximum along `axis`, 0 elsewhere (a NaN counts as the maximum)."""
    y = np.zeros_like(X)
    if X.size:
        first = np.expand_dims(np.argmax(X, axis=axis), axis)
        np.put_along_axis(y, first, 1, axis=axis)
    return y


def _shifted(x, axis):
    """x minus its maximum along `axis` (an empty axis has nothing to shift)."""
    return x - x.max(axis=axis, keepdims=True, initial=-np.inf)


# Up to this many elements the row sums are one np.add.reduce: the BLAS product's set-up (a ones
# vector, two reshapes) costs more than it saves (a classifier's 3 to 1000 scores: 5.2 -> 3.2 us).
_SMALL_SOFTMAX = 1024


@kernel(out=True, fresh=True, exact=False, exact_twin="rt.exact_softmax")
def softmax(x, *, axis=-1, out=None):
    """exp(x - max) / sum(exp(x - max)) along `axis`, into `out` when given (an array of x's shape
    and dtype, possibly x itself; else a new array).

    Along the last axis of C-contiguous float32 and float64 arrays of more than _SMALL_SOFTMAX
    elements: softmax_rows, with the whole array's maximum as every row's shift. Elsewhere the
    reductions are ufunc methods, the difference, exp and scaling run in place."""
    x = np.asarray(x)
    axis = axis % x.ndim if x.ndim else 0
    if (
        axis == x.ndim - 1
        and x.shape[-1] > 1
        and x.size > _SMALL_SOFTMAX
        and x.dtype in (np.float32, np.float64)
        and x.flags.c_contiguous
        and (out is None or out.flags.c_contiguous)
    ):
        rows = x.reshape(-1, x.shape[-1])
        y = softmax_rows(rows, rows_max(rows), None if out is None else out.reshape(rows.shape))
        return y.reshape(x.shape) if out is None else out
    e = np.subtract(x, np.maximum.reduce(x, axis=axis, keepdims=True, initial=-np.inf), out=out)
    np.exp(e, out=e)
    e /= np.add.reduce(e, axis=axis, keepdims=True)
    return e


# A row whose exponentials, shifted by a maximum above the row's own, sum to less than this is
# computed again with its own maximum: its largest value is then more than 22 below the shift, or
# its exponentials underflow. Above it, the shift's rounding costs the row at most half an ulp of
# 32 (1e-6 relative in float32), about what the exp itself rounds.
_LOW_SUM = 2.0**-32


def rows_max(rows: np.ndarray):
    """The largest value of the 2-D float `rows` (NaN if one is NaN): softmax_rows's shift. One
    reduction over the whole array: along rows of 14 to 200 values, the rows' own maxima cost
    numpy 5 to 10 times as long (20 against 2.2 us on 4 x 6 heads of 14 x 14 scores)."""
    return np.maximum.reduce(rows, axis=None)


def softmax_rows(rows: np.ndarray, shift, out: np.ndarray | None = None) -> np.ndarray:
    """softmax of each row of the C-contiguous 2-D float32 or float64 `rows` (into `out`, of its
    shape, possibly rows itself), exp(x - shift) scaled by the reciprocal of its row's sum: shift
    (rows_max of these rows or of an array they are part of) is the same for every row, so a row
    gets the same bits alone, in a run of rows or in the whole (fused attention splits its rows
    over threads). Rows that `shift` leaves with a sum under _LOW_SUM (their maximum far below
    it, or all -inf) take their own maximum; a shift that is not finite (a NaN or +inf in the
    array), or a quarter of the rows low, every row. The sums are a BLAS matrix-vector product
    with a vector of ones (a quarter of np.add.reduce's time on 128-element rows); a reciprocal
    and a product instead of a division (two roundings instead of one, well within the fast
    variant's tolerance)."""
    if not math.isfinite(shift):  # math's: np.isfinite of a scalar costs 1 us
        return _own_max_rows(rows, out)
    # e into a scratch array when out is rows: the rows with a low sum need them again
    in_place = out is not None and np.may_share_memory(out, rows)
    e = np.subtract(rows, shift, out=None if in_place else out)
    np.exp(e, out=e)
    total = np.matmul(e, _ones(rows.shape[1], rows.dtype))
    if total.min() < _LOW_SUM:
        low = np.flatnonzero(total < _LOW_SUM)
        if 4 * low.size > total.size:  # most rows: all again, rather than gathered
            return _own_max_rows(rows, out)
        e[low] = _own_max_rows(rows[low], None)
        total[low] = 1.0
    np.reciprocal(total, out=total)
    return np.multiply(e, total[:, None], out=out if in_place else e)


def _own_max_rows(rows: np.ndarray, out: np.ndarray | None) -> np.ndarray:
    """softmax of each row of the 2-D `rows` shifted by the row's own maximum (into `out`), each
    row's bits its own (np.add.reduce's sums, not BLAS's, whose bits depend on the rows around)."""
    e = np.subtract(rows, np.maximum.reduce(rows, axis=1, keepdims=True, initial=-np.inf), out=out)
    np.exp(e, out=e)
    e /= np.add.reduce(e, axis=1, keepdims=True)
    return e


@functools.lru_cache(maxsize=64)
def _ones(n: int, dtype) -> np.ndarray:
    """n ones of `dtype`, read-only: the row sums' vector, made once per row length."""
    ones = np.ones(n, dtype)
    ones.flags.writeable = False
    return ones


@kernel(exact=False, exact_twin="rt.exact_log_softmax")
def log_softmax(x, *, axis=-1):
    """x - max - log(sum(exp(x - max))) along `axis`."""
    shifted = _shifted(x, axis)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


# --- the exact variant's twins --------------------------------------------------------------------
# Each computes in float64 (every input type widens to it exactly) with IEEE + - * / in the order
# its docstring gives and the library's own exp-family polynomials (runtime_support/exact_math.py),
# then rounds once to the input's type: the same bits on every machine.


def _float64(X: np.ndarray) -> np.ndarray:
    return np.asarray(X).astype(np.float64)


@kernel(exact=True)
def exact_elu(X: np.ndarray, *, alpha: float = 1.0) -> np.ndarray:
    """x for x > 0, alpha * expm1(min(x, 0)) otherwise."""
    x = _float64(X)
    negative = np.float64(alpha) * exact_expm1(np.minimum(x, 0.0))
    return np.where(x > 0, x, negative).astype(X.dtype)


@kernel(exact=True)
def exact_celu(X: np.ndarray, *, alpha: float = 1.0) -> np.ndarray:
    """max(x, 0) + min(0, alpha * expm1(x / alpha))."""
    x = _float64(X)
    alpha = np.float64(alpha)
    negative = np.minimum(0.0, alpha * exact_expm1(x / alpha))
    return (np.maximum(x, 0.0) + negative).astype(X.dtype)


@kernel(exact=True)
def exact_selu(
    X: np.ndarray, *, alpha: float = 1.67326319, gamma: float = 1.05070102
) -> np.ndarray:
    """gamma * x for x > 0, gamma * (alpha * expm1(min(x, 0))) otherwise."""
    x = _float64(X)
    alpha, gamma = np.float64(alpha), np.float64(gamma)
    negative = alpha * exact_expm1(np.minimum(x, 0.0))
    return (gamma * np.where(x > 0, x, negative)).astype(X.dtype)


@kernel(exact=True)
def exact_mish(X: np.ndarray) -> np.ndarray:
    """x * tanh(softplus(x))."""
    x = _float64(X)
    return (x * exact_tanh(exact_softplus(x))).astype(X.dtype)


@kernel(exact=True)
def exact_swish(X: np.ndarray, *, alpha: float = 1.0) -> np.ndarray:
    """x * sigmoid(alpha * x)."""
    x = _float64(X)
    return (x * exact_sigmoid(np.float64(alpha) * x)).astype(X.dtype)


@kernel(exact=True)
def exact_swiglu(A: np.ndarray, B: np.ndarray, *, alpha: float = 1.0) -> np.ndarray:
    """(a * sigmoid(alpha * a)) * b."""
    a = _float64(A)
    gate = a * exact_sigmoid(np.float64(alpha) * a)
    return (gate * _float64(B)).astype(A.dtype)


@kernel(exact=True)
def exact_gelu(X: np.ndarray, *, approximate: str = "none") -> np.ndarray:
    """(0.5 * x) * (1 + erf(x / sqrt(2))) (for x <= -3/4 as (0.5 * x) * erfc(-x / sqrt(2)), which
    does not cancel: exact_math.gelu_erf64), or with approximate="tanh"
    (0.5 * x) * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * ((x * x) * x))))."""
    x = _float64(X)
    if approximate == "tanh":
        inner = np.float64(0.7978845608028654) * (x + np.float64(0.044715) * ((x * x) * x))
        y = (0.5 * x) * (1.0 + exact_tanh(inner))
    else:
        y = gelu_erf64(x)
    return y.astype(X.dtype)
