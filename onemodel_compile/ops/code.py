"""Pieces of generated code: literals that round-trip exactly, dtype names, attribute values.

Everything that comes from the model passes through `py` or `literal`, which produce only Python
literals (numbers, escaped strings, tuples) and numpy constructors: never model text as code.
"""

from __future__ import annotations

import math

import numpy as np

from runtime_support._dtypes import ML_DTYPES, is_float_dtype

_DTYPE_EXPR = {
    "bool": "np.bool_",
    "uint8": "np.uint8",
    "int8": "np.int8",
    "uint16": "np.uint16",
    "int16": "np.int16",
    "uint32": "np.uint32",
    "int32": "np.int32",
    "uint64": "np.uint64",
    "int64": "np.int64",
    "float16": "np.float16",
    "float32": "np.float32",
    "float64": "np.float64",
}
# numpy has no name for these: the module asks runtime_support (ml_dtypes) for them.
_DTYPE_EXPR.update({name: f"rt.dtype_from_name({name!r})" for name in ML_DTYPES})


def dtype_expr(dtype) -> str:
    """Code for a numpy dtype: `np.float32`."""
    return _DTYPE_EXPR[np.dtype(dtype).name]


def number(value) -> str:
    """A Python number literal that round-trips exactly (floats through float64's repr)."""
    if isinstance(value, (bool, np.bool_)):
        return "True" if value else "False"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    value = float(value)
    if math.isnan(value):
        return "np.nan"
    if math.isinf(value):
        return "np.inf" if value > 0 else "-np.inf"
    return repr(value)


def tuple_code(items) -> str:
    """A tuple display of `items`, each already source (`(batch, 12)`, `(seq,)`)."""
    items = [str(item) for item in items]
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def py(value) -> str:
    """A Python literal for an attribute value: number, str, or (nested) tuple of them."""
    if isinstance(value, str):
        return repr(value)  # repr escapes quotes, newlines and non-printables
    if isinstance(value, (list, tuple)):
        return tuple_code(py(v) for v in value)
    if isinstance(value, np.ndarray):
        return py(value.tolist())
    if value is None:
        return "None"
    return number(value)


def element(value, dtype) -> str:
    """A literal for one element of `dtype`, as short as round-tripping allows: the shortest
    decimal that turns back into the same bits when parsed as a float and cast to `dtype`
    (0.1 for float32's 0.100000001490116...), float64's repr otherwise."""
    dtype = np.dtype(dtype)
    if not is_float_dtype(dtype) or dtype.itemsize == 8:
        return number(np.asarray(value).item())
    typed = np.asarray(value, dtype=dtype).reshape(())
    if not np.isfinite(typed.astype(np.float32)):
        return number(float(typed.astype(np.float32)))
    text = str(typed[()])
    if np.asarray(float(text), dtype=dtype).tobytes() == typed.tobytes():
        return text
    return number(float(typed.astype(np.float64)))


def _nested(values, dtype) -> str:
    if isinstance(values, list):
        return "[" + ", ".join(_nested(v, dtype) for v in values) + "]"
    return element(values, dtype)


def scalar(value, dtype) -> str:
    """A numpy scalar of `dtype`: `np.float32(0.5)`."""
    return f"{dtype_expr(dtype)}({element(value, dtype)})"


def _string_literal(array: np.ndarray) -> str:
    """An object array of str rebuilt exactly, every element an escaped literal (`py`)."""
    if array.size == 0:
        return f"np.empty({py(array.shape)}, dtype=np.object_)"

    def nested(values) -> str:
        if isinstance(values, list):
            return "[" + ", ".join(nested(v) for v in values) + "]"
        return py(str(values))

    return f"np.array({nested(array.tolist())}, dtype=np.object_)"


def literal(array: np.ndarray) -> str:
    """An ndarray constructor that rebuilds `array` exactly: `np.array([1, 2], dtype=np.int64)`;
    string tensors (object arrays of str) as `np.array(['a', 'b'], dtype=np.object_)`."""
    array = np.asarray(array)
    if array.dtype == object:
        return _string_literal(array)
    values = _nested(array.tolist(), array.dtype)
    if array.size == 0:
        return f"np.zeros({py(array.shape)}, dtype={dtype_expr(array.dtype)})"
    return f"np.array({values}, dtype={dtype_expr(array.dtype)})"
