"""Linear-algebra kernels numpy has no single function for."""

from __future__ import annotations

import numpy as np

__all__ = ["matmul_integer"]


def matmul_integer(A, B, a_zero_point=None, b_zero_point=None):
    """ONNX MatMulInteger: (A - a_zero_point) @ (B - b_zero_point) as int32. A zero point is a
    scalar, or one per row of A (a_zero_point) or per column of B (b_zero_point).

    The product runs in float64 through BLAS: every term is an integer of magnitude at most
    255 * 255, so every partial sum is an integer below 2**53 (for inner sizes up to 10**11) and
    exact in any summation order. The int32 result wraps as integer arithmetic does."""
    a = A.astype(np.float64)
    if a_zero_point is not None:
        zero = np.asarray(a_zero_point, dtype=np.float64)
        a -= zero.reshape(-1, 1) if zero.ndim == 1 and a.ndim > 1 else zero
    b = B.astype(np.float64)
    if b_zero_point is not None:
        b -= np.asarray(b_zero_point, dtype=np.float64)
    return np.matmul(a, b).astype(np.int64).astype(np.int32)
