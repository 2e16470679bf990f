"""Linear-algebra kernels numpy has no single function for."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from runtime_support._constants import derived, value_tag

__all__ = ["matmul_integer"]

# float32 holds every integer up to 2**24 exactly: a product of integers whose every partial sum
# stays below that, in whatever order BLAS adds (FMA included), is exact in float32 too.
_FLOAT32_INTEGERS = 2**24


def integer_span(dtype) -> int:
    """The largest |x - zero_point| for x and zero_point of integer type `dtype` (max - min): a
    bound that holds whatever the zero point, which DynamicQuantizeLinear computes per run."""
    info = np.iinfo(dtype)
    return int(info.max) - int(info.min)


def integer_sum_type(bound: int, line_sums: np.ndarray) -> type:
    """float32 when every sum of products of a factor bounded by `bound` with one line of the
    other operand (whose sums of magnitudes are `line_sums`) stays below 2**24, else float64
    (exact below 2**53 for any reduction shorter than 10**11 terms of 8-bit integers). Either way
    every partial sum is an exact integer, so the result's bits do not depend on the type."""
    largest = float(line_sums.max()) if line_sums.size else 0.0
    return np.float32 if bound * largest < _FLOAT32_INTEGERS else np.float64


def shifted_integers(w, zero_point, bound: int, lines: Callable[[np.ndarray], np.ndarray]):
    """w - zero_point as exact integers in the type integer_sum_type picks for products with a
    factor bounded by `bound` (`lines` gives the sums of magnitudes of w's lines). Derived once per
    constant w (runtime_support._constants)."""

    def make():
        shifted = w.astype(np.float64)
        if zero_point is not None:
            shifted -= zero_point
        result = shifted.astype(integer_sum_type(bound, lines(np.abs(shifted))), copy=False)
        result.flags.writeable = False  # shared by every later run when cached
        return result

    return derived(w, ("shifted integers", bound, lines, value_tag(zero_point)), make)


def _column_sums(magnitudes: np.ndarray) -> np.ndarray:
    return magnitudes.sum(axis=-2)


def matmul_integer(A, B, a_zero_point=None, b_zero_point=None):
    """ONNX MatMulInteger: (A - a_zero_point) @ (B - b_zero_point) as int32. A zero point is a
    scalar, or one per row of A (a_zero_point) or per column of B (b_zero_point).

    The product runs through BLAS on exact integers: in float32 when every partial sum provably
    stays below 2**24 (integer_sum_type: |A - a_zero_point| is bounded by A's type, B's column
    sums of magnitudes are computed), else in float64. A constant B is shifted and converted once.
    A 2-D B multiplies A's rows as one 2-D product (not one per stack of A). The int32 result
    wraps as integer arithmetic does."""
    zero_b = None if b_zero_point is None else np.asarray(b_zero_point, dtype=np.float64)
    b = shifted_integers(B, zero_b, integer_span(A.dtype), _column_sums)
    a = A.astype(b.dtype)
    if a_zero_point is not None:
        zero = np.asarray(a_zero_point, dtype=b.dtype)
        a -= zero.reshape(-1, 1) if zero.ndim == 1 and a.ndim > 1 else zero
    if b.ndim == 2 and a.ndim > 2:
        product = np.matmul(a.reshape(-1, a.shape[-1]), b).reshape(a.shape[:-1] + b.shape[-1:])
    else:
        product = np.matmul(a, b)
    return product.astype(np.int64).astype(np.int32)
