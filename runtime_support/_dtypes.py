"""Element types by name, including bfloat16 (from ml_dtypes, imported only when asked for)."""

from __future__ import annotations

import numpy as np


def dtype_from_name(name: str) -> np.dtype:
    """The numpy dtype called `name` ("float32", "bfloat16", ...)."""
    if name == "bfloat16":
        import ml_dtypes  # only modules that use bfloat16 need it

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)
