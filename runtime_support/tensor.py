"""Tensor kernels for shapes only known at run time."""

from __future__ import annotations

import numpy as np


def reshape(data: np.ndarray, shape: np.ndarray, *, allowzero: int = 0) -> np.ndarray:
    """ONNX Reshape: a 0 copies the input's dim (unless allowzero), one -1 is inferred."""
    dims = [int(d) for d in shape]
    if not allowzero:
        dims = [data.shape[i] if d == 0 else d for i, d in enumerate(dims)]
    return data.reshape(dims)
