"""Element types by name, including ONNX's types numpy lacks: bfloat16, the float8 types, float4
E2M1, int4/uint4 and int2/uint2, all from ml_dtypes (imported only when one is asked for).

numpy arrays of these hold one element per byte; ONNX packs the 4- and 2-bit types two and four to
a byte in tensors and files (onnx's numpy_helper unpacks initializers; the weights file packs them
again, runtime_support/_weights.py).
"""

from __future__ import annotations

import numpy as np

# ONNX type name -> ml_dtypes' name, for the types numpy has no dtype of.
ML_DTYPES = (
    "bfloat16",
    "float8_e4m3fn",
    "float8_e4m3fnuz",
    "float8_e5m2",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
    "float4_e2m1fn",
    "int4",
    "uint4",
    "int2",
    "uint2",
)
# The floating types among them (numpy sees most of them as kind "V").
ML_FLOATS = frozenset(name for name in ML_DTYPES if name.startswith(("bfloat", "float")))
# Bits per element of the types ONNX packs several to a byte.
PACKED_BITS = {"int4": 4, "uint4": 4, "float4_e2m1fn": 4, "int2": 2, "uint2": 2}


def dtype_from_name(name: str) -> np.dtype:
    """The numpy dtype called `name` ("float32", "bfloat16", "float8_e4m3fn", "int4", ...)."""
    if name in ML_DTYPES:
        import ml_dtypes  # only modules that use one of these types need it

        return np.dtype(getattr(ml_dtypes, name))
    return np.dtype(name)


def is_float_dtype(dtype) -> bool:
    """Whether `dtype` is a floating type: numpy's, bfloat16, float8 or float4."""
    dtype = np.dtype(dtype)
    return dtype.kind == "f" or dtype.name in ML_FLOATS


def is_integer_dtype(dtype) -> bool:
    """Whether `dtype` is an integer type: numpy's, int4/uint4 or int2/uint2."""
    dtype = np.dtype(dtype)
    return dtype.kind in "iu" or dtype.name in ("int4", "uint4", "int2", "uint2")
