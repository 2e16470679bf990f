"""The allocation limit: a run-time allocation whose size comes from the model's values (the shape
of ConstantOfShape or Expand, Tile's repeats, Range's bounds, Resize's sizes, OneHot's depth...)
is checked before numpy is asked for the memory, so that a model declaring an absurd size fails
with a message naming the size (and, through the module's NodeError, the node) instead of
exhausting the machine.

The limit is in bytes, per array. Its default is the machine's physical memory (64 GiB where
that cannot be read): an array larger than the memory can never be useful. A caller raises or
lowers it for the whole process with `set_allocation_limit(nbytes)` (None restores the default)
or, before runtime_support is imported, with the environment variable ONEMODEL_ALLOCATION_LIMIT
(bytes, or a number with a K, M, G or T suffix: `ONEMODEL_ALLOCATION_LIMIT=2G`).
"""

from __future__ import annotations

import math
import os

import numpy as np

__all__ = [
    "AllocationError",
    "allocation_limit",
    "check_allocation",
    "set_allocation_limit",
]

ENVIRONMENT_VARIABLE = "ONEMODEL_ALLOCATION_LIMIT"
FALLBACK_LIMIT = 64 << 30  # where the physical memory cannot be read
_SUFFIXES = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


class AllocationError(MemoryError):
    """An array the model asks for is larger than the allocation limit (or than any machine)."""


def _physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # Windows, or a platform that does not say
        return FALLBACK_LIMIT


def _parse(text: str) -> int:
    """`2G` -> 2 << 30; a plain integer is bytes."""
    text = text.strip().upper().removesuffix("B").removesuffix("I")
    suffix = text[-1:] if text[-1:] in _SUFFIXES else ""
    number = text[: len(text) - len(suffix)]
    try:
        value = float(number) * _SUFFIXES[suffix]
    except ValueError:
        raise ValueError(
            f"{ENVIRONMENT_VARIABLE}={text!r}: expected bytes, or a number with K, M, G or T"
        ) from None
    if not value > 0 or math.isinf(value):
        raise ValueError(f"{ENVIRONMENT_VARIABLE}={text!r}: the limit must be positive")
    return int(value)


def _default() -> int:
    text = os.environ.get(ENVIRONMENT_VARIABLE)
    return _physical_memory() if not text else _parse(text)


_limit = _default()


def allocation_limit() -> int:
    """The largest array, in bytes, that a model may ask for at run time."""
    return _limit


def set_allocation_limit(nbytes: int | None) -> int:
    """Set the allocation limit for the whole process (None: back to the default); returns the
    previous limit."""
    global _limit
    previous = _limit
    if nbytes is None:
        _limit = _default()
    else:
        if isinstance(nbytes, bool) or not isinstance(nbytes, (int, np.integer)) or nbytes <= 0:
            raise ValueError(f"the allocation limit must be a positive number of bytes: {nbytes!r}")
        _limit = int(nbytes)
    return previous


def format_bytes(nbytes: int) -> str:
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= size:
            return f"{nbytes / size:.3g} {unit}"
    return f"{nbytes} bytes"


_ITEMSIZES: dict = {}  # dtype or scalar type -> bytes per element


def _itemsize(dtype) -> int:
    size = np.dtype(dtype).itemsize
    try:
        _ITEMSIZES[dtype] = size
    except TypeError:  # (an unhashable dtype spelling: computed each time)
        pass
    return size


def check_allocation(shape, dtype, what: str = "result") -> tuple[int, ...]:
    """`shape` as a tuple of Python ints, after checking that an array of that shape and `dtype`
    fits the allocation limit (AllocationError) and has no negative dim (ValueError). The sizes
    are Python ints: no overflow, however large. (About a microsecond: kernels call it on every
    run.)"""
    dims = tuple(map(int, shape))
    if dims and min(dims) < 0:
        raise ValueError(f"the {what} shape {list(dims)} has a negative dim")
    itemsize = _ITEMSIZES.get(dtype) or _itemsize(dtype)
    nbytes = math.prod(dims) * itemsize
    if nbytes > _limit:
        raise AllocationError(
            f"the {what} would be {np.dtype(dtype)} {list(dims)}, {format_bytes(nbytes)}, over "
            f"the allocation limit of {format_bytes(_limit)} (runtime_support."
            f"set_allocation_limit or {ENVIRONMENT_VARIABLE} raises it)"
        )
    return dims
