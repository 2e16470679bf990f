"""Values derived from constant operands, computed once per constant.

A generated module's weights are read-only memory maps of its weights file, so a kernel may keep
what it derives from them (a shifted or converted copy, per-line sums) for as long as the array
that owns the memory lives, and skip that work on every later run. Arrays whose memory can change
(inputs, intermediates, anything writeable) are never cached: `cached` then just calls `build`.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable

import numpy as np

__all__ = ["cached", "immutable_root", "value_tag"]

# What kernels made from read-only arrays, by the arrays' identities (a module passes the same
# weight arrays on every call); an entry goes when any of its arrays does.
_MADE: dict[tuple, tuple] = {}  # key -> (weak references, shapes, what was made)


def immutable_root(x: np.ndarray) -> np.ndarray | None:
    """The array that owns x's memory when nothing can ever change that memory (a read-only view
    of bytes or of a read-only buffer, as the weights file's memory map is), else None."""
    root = x
    while isinstance(root.base, np.ndarray):
        if root.flags.writeable:
            return None
        root = root.base
    if root.flags.writeable:
        return None
    if isinstance(root.base, bytes) or (isinstance(root.base, memoryview) and root.base.readonly):
        return root
    return None


def cached(arrays, options: Hashable, build: Callable[[], object]):
    """build(), kept for the next call with the same `arrays` and `options` (everything else
    build depends on, small arguments by value: value_tag) while every array's memory can never
    change (immutable_root), else made anew."""
    key = (options, *map(id, arrays))
    entry = _MADE.get(key)
    if entry is not None:
        refs, shapes, made = entry
        if all(r() is a and a.shape == s for r, s, a in zip(refs, shapes, arrays)):
            return made
    made = build()
    if all(isinstance(a, np.ndarray) and immutable_root(a) is not None for a in arrays):
        _MADE[key] = ([weakref.ref(a) for a in arrays], [a.shape for a in arrays], made)
        for a in arrays:
            weakref.finalize(a, _MADE.pop, key, None)
    return made


def value_tag(value) -> Hashable:
    """A small argument (a scale, a zero point) as a hashable tag: its dtype, shape and bytes."""
    if value is None:
        return None
    array = np.asarray(value)
    return (array.dtype.str, array.shape, array.tobytes())
