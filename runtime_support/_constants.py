"""Values derived from constant operands, computed once per constant.

A generated module's weights are read-only memory maps of its weights file, so a kernel may keep
what it derives from them (a shifted or converted copy, per-line sums) for as long as the array
that owns the memory lives, and skip that work on every later run. Arrays whose memory can change
(inputs, intermediates, anything writeable) are never cached: `derived` then just calls `make`.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable

import numpy as np

__all__ = ["derived", "immutable_root", "value_tag"]

# id(owning array) -> (weak reference to it, {key: derived value}); an entry goes with its owner
_DERIVED: dict[int, tuple[weakref.ref, dict]] = {}


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


def derived(x: np.ndarray, tag: Hashable, make: Callable[[], object]):
    """make(), cached under (x's memory, layout, tag) when x is immutable. `tag` must name
    everything else make() depends on (small arguments by value)."""
    root = immutable_root(x) if isinstance(x, np.ndarray) else None
    if root is None:
        return make()
    key = (x.__array_interface__["data"][0], x.shape, x.strides, x.dtype.str, tag)
    owner = id(root)
    entry = _DERIVED.get(owner)
    if entry is None or entry[0]() is not root:
        forget = lambda _, owner=owner: _DERIVED.pop(owner, None)  # noqa: E731
        entry = (weakref.ref(root, forget), {})
        _DERIVED[owner] = entry
    values = entry[1]
    if key not in values:
        values[key] = make()
    return values[key]


def value_tag(value) -> Hashable:
    """A small argument (a scale, a zero point) as a hashable tag: its dtype, shape and bytes."""
    if value is None:
        return None
    array = np.asarray(value)
    return (array.dtype.str, array.shape, array.tobytes())
