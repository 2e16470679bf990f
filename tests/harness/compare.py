"""The one comparison of a result with its reference, used by every runner and test.

- a sequence (list) matches element by element, None only None;
- a tensor must be a numpy array (not a numpy scalar) of the reference's dtype and shape;
- floating types (float16/32/64, bfloat16, the float8 and float4 types of ml_dtypes) compare as
  float64: NaN where and only where the reference has NaN, an infinity only by the same infinity
  (sign and all), a finite value within atol + rtol * |reference|;
- every other type (integers, bool, strings) is identical.

The backend data needs exactly this: its NaN-producing cases (Div by zero, Log of negatives, the
float8 casts' NaN encodings) put NaN where numpy does, and its saturating casts give the finite
extreme, never an infinity, so an infinity must not be excused by any tolerance.
"""

from __future__ import annotations

import numpy as np

# ml_dtypes' floating types are numpy kind "V": they are recognised by name.
_FLOAT_NAMES = frozenset(
    "bfloat16 float8_e4m3fn float8_e4m3fnuz float8_e5m2 float8_e5m2fnuz float8_e8m0fnu "
    "float8_e4m3b11fnuz float4_e2m1fn".split()
)


def is_float(dtype: np.dtype) -> bool:
    return dtype.kind in "fc" or dtype.name in _FLOAT_NAMES


def compare(expected, actual, rtol: float, atol: float, where: str = "") -> str | None:
    """None when `actual` matches `expected`, else what differs (prefixed with `where`)."""
    prefix = f"{where}: " if where else ""
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return f"{prefix}expected a sequence of {len(expected)}, got {_describe(actual)}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            problem = compare(e, a, rtol, atol, f"{where}[{i}]")
            if problem:
                return problem
        return None
    if expected is None:
        return None if actual is None else f"{prefix}expected None, got {_describe(actual)}"
    if not isinstance(actual, np.ndarray):
        return f"{prefix}got {_describe(actual)}, not a numpy array"
    expected = np.asarray(expected)
    if actual.dtype != expected.dtype:
        return f"{prefix}dtype {actual.dtype}, expected {expected.dtype}"
    if actual.shape != expected.shape:
        return f"{prefix}shape {actual.shape}, expected {expected.shape}"
    if is_float(expected.dtype):
        wide = np.complex128 if expected.dtype.kind == "c" else np.float64
        e, a = expected.astype(wide), actual.astype(wide)
        nan_e, nan_a = np.isnan(e), np.isnan(a)
        finite = np.isfinite(e) & np.isfinite(a)  # an infinity must be met exactly
        with np.errstate(invalid="ignore", over="ignore"):
            close = (e == a) | (finite & (np.abs(a - e) <= atol + rtol * np.abs(e)))
        bad = (nan_e != nan_a) | (~nan_e & ~close)
        if bad.any():
            first = _first(bad)
            return (
                f"{prefix}{int(bad.sum())} of {e.size} values differ beyond rtol {rtol:g} "
                f"atol {atol:g}; first at {first}: {actual[first]!r}, expected {expected[first]!r}"
            )
        return None
    if not np.array_equal(expected, actual):
        bad = expected != actual
        first = _first(bad)
        return (
            f"{prefix}{int(bad.sum())} of {expected.size} values differ; first at {first}: "
            f"{actual[first]!r}, expected {expected[first]!r}"
        )
    return None


def _describe(value) -> str:
    if isinstance(value, list):
        return f"a list of {len(value)}"
    return type(value).__name__


def _first(bad: np.ndarray) -> tuple[int, ...]:
    return tuple(int(i) for i in np.unravel_index(int(np.flatnonzero(bad)[0]), bad.shape))
