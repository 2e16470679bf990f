"""Input checks of generated modules: dtype, rank, static dims and consistent symbolic dims."""

from __future__ import annotations

import numpy as np

from runtime_support._dtypes import dtype_from_name


class InvalidInput(ValueError):
    """An input given to a generated module does not match the model's declaration."""


def _describe_shape(shape) -> str:
    return "[" + ", ".join("?" if dim is None else str(dim) for dim in shape) + "]"


_OBJECT = np.dtype(object)
# A string tensor is an object array of str; unicode and numpy 2's StringDType arrays are taken too
# (and converted), as onnxruntime takes them.
_STRING_KINDS = frozenset("OUT")


def _parse_type(text: str):
    """("tensor", dtype) | ("sequence", inner) | ("optional", inner) | ("map", (key, value)) from
    "sequence(float32)", "map(string,float32)"; "string" is an object array of str."""
    for kind in ("sequence", "optional"):
        if text.startswith(kind + "(") and text.endswith(")"):
            return kind, _parse_type(text[len(kind) + 1 : -1])
    if text.startswith("map(") and text.endswith(")"):
        key, value = text[4:-1].split(",", 1)
        return "map", (_parse_type(key)[1], _parse_type(value))
    if text in ("string", "object"):
        return "tensor", _OBJECT
    return "tensor", (None if text == "?" else dtype_from_name(text))


def _dtype_name(dtype) -> str:
    return "string" if dtype == _OBJECT else dtype.name


def _key_check(dtype):
    """What a map's keys must be: str for string keys, a Python or numpy int for int64 keys."""
    return (str,) if dtype == _OBJECT else (int, np.integer)


class InputChecker:
    """Checks the arguments of `run` against the module's INPUTS, built once at import, and returns
    them as arrays (numpy scalars become 0-d arrays).

    A dim is an int (must match), a str (a symbolic dim: every use must have the same size) or None
    (any size). Sequences are lists of arrays; an absent optional is None.
    """

    def __init__(self, inputs):
        self._specs = [(name, _parse_type(kind), shape) for name, kind, shape in inputs]
        self._quick = [_quick_spec(kind, shape) for _, kind, shape in self._specs]
        if None in self._quick:
            self._quick = None
        else:  # a symbol used once anywhere accepts any size: only repeated ones are compared
            uses: dict[str, int] = {}
            for *_, symbolic in self._quick:
                for _, symbol in symbolic:
                    uses[symbol] = uses.get(symbol, 0) + 1
            self._quick = [
                (*spec[:-1], tuple((a, s) for a, s in spec[-1] if uses[s] > 1))
                for spec in self._quick
            ]

    def __call__(self, *values):
        if self._quick is not None and self._matches(values):
            return values[0] if len(values) == 1 else values
        symbols: dict[str, tuple[int, str]] = {}
        checked = [
            self._check(name, kind, shape, value, symbols)
            for (name, kind, shape), value in zip(self._specs, values)
        ]
        return checked[0] if len(checked) == 1 else checked

    def _matches(self, values) -> bool:
        """The common case, decided in a few attribute reads per input: every value an ndarray of
        exactly the declared dtype object and shape (static dims equal, a symbolic dim that more
        than one axis uses the same size on each).
        False sends the call through the full check, which also accepts equal but distinct dtype
        objects and numpy scalars, and names what is wrong."""
        if len(values) != len(self._quick):
            return False
        symbols: dict[str, int] = {}
        for (dtype, shape, rank, static, repeated), value in zip(self._quick, values):
            if type(value) is not np.ndarray or value.dtype is not dtype:
                return False
            if shape is not None:  # every dim static
                if value.shape != shape:
                    return False
                continue
            given = value.shape
            if len(given) != rank:
                return False
            for axis, size in static:
                if given[axis] != size:
                    return False
            for axis, symbol in repeated:
                if symbols.setdefault(symbol, given[axis]) != given[axis]:
                    return False
        return True

    def _check(self, name, kind, shape, value, symbols):
        form, inner = kind
        if form == "optional":
            return None if value is None else self._check(name, inner, shape, value, symbols)
        if form == "sequence":
            if not isinstance(value, (list, tuple)):
                raise InvalidInput(
                    f"input {name!r}: expected a list of arrays, got {type(value).__name__}"
                )
            return [self._check(f"{name}[{i}]", inner, None, v, {}) for i, v in enumerate(value)]
        if form == "map":
            return _check_map(name, inner, value)
        dtype = inner
        if isinstance(value, np.generic):
            value = np.asarray(value)
        if not isinstance(value, np.ndarray):
            expected = _dtype_name(dtype) if dtype is not None else "any type"
            raise InvalidInput(
                f"input {name!r}: expected a numpy array of {expected}, got {type(value).__name__}"
            )
        if dtype == _OBJECT and value.dtype.kind in _STRING_KINDS:
            value = value if value.dtype == _OBJECT else value.astype(object)
        elif dtype is not None and value.dtype != dtype:
            raise InvalidInput(
                f"input {name!r}: expected dtype {_dtype_name(dtype)}, got {value.dtype.name}"
            )
        if shape is None:
            return value
        if value.ndim != len(shape):
            raise InvalidInput(
                f"input {name!r}: expected rank {len(shape)} {_describe_shape(shape)}, "
                f"got rank {value.ndim} {list(value.shape)}"
            )
        for axis, (want, got) in enumerate(zip(shape, value.shape)):
            if isinstance(want, int) and want != got:
                raise InvalidInput(
                    f"input {name!r}: expected shape {_describe_shape(shape)}, "
                    f"got {list(value.shape)} (axis {axis})"
                )
            if isinstance(want, str):
                seen = symbols.setdefault(want, (got, name))
                if seen[0] != got:
                    raise InvalidInput(
                        f"input {name!r}: symbolic dim {want!r} is {got} on axis {axis}, "
                        f"but {seen[0]} in input {seen[1]!r}"
                    )
        return value


def _check_map(name, kind, value):
    """A map input: a dict whose keys have the declared key type (values are taken as given)."""
    key_dtype, _ = kind
    if not isinstance(value, dict):
        raise InvalidInput(f"input {name!r}: expected a dict, got {type(value).__name__}")
    allowed = _key_check(key_dtype)
    wrong = next((k for k in value if not isinstance(k, allowed) or isinstance(k, bool)), None)
    if wrong is not None:
        expected = _dtype_name(key_dtype)
        raise InvalidInput(
            f"input {name!r}: expected {expected} keys, got {type(wrong).__name__} {wrong!r}"
        )
    return value


def _quick_spec(kind, shape):
    """(dtype, shape when every dim is static, rank, ((axis, size), ...), ((axis, symbol), ...))
    of a tensor input with a known dtype and rank, for InputChecker._matches; None otherwise."""
    form, dtype = kind
    if form != "tensor" or dtype is None or shape is None:
        return None
    static = tuple((axis, d) for axis, d in enumerate(shape) if isinstance(d, int))
    symbolic = tuple((axis, d) for axis, d in enumerate(shape) if isinstance(d, str))
    every_static = tuple(shape) if len(static) == len(shape) else None
    return dtype, every_static, len(shape), static, symbolic


def feeds_in_order(inputs, feeds) -> list:
    """The values of `feeds` (keyed by ONNX input name) in the order of INPUTS."""
    names = [name for name, _, _ in inputs]
    missing = [name for name in names if name not in feeds]
    unknown = sorted(set(feeds) - set(names))
    if missing or unknown:
        parts = []
        if missing:
            parts.append(f"missing input(s) {missing}")
        if unknown:
            parts.append(f"unknown input(s) {unknown}")
        raise InvalidInput("; ".join(parts) + f"; the model's inputs are {names}")
    return [feeds[name] for name in names]


def owned(value, *sources):
    """`value` as an array the caller may keep and modify: a copy when it is read-only (a weight,
    a broadcast view) or shares memory with one of `sources` (the caller's inputs)."""
    if type(value) is np.ndarray and value.base is None and value.flags.writeable:
        # owns its memory: shared with a source only if it is that source or the source's base
        # (a loop, not any() over a generator: half the cost of this common case, 0.73 -> 0.35 us)
        for source in sources:
            if value is source or getattr(source, "base", None) is value:
                return value.copy()
        return value
    value = np.asarray(value)
    if not value.flags.writeable or any(
        isinstance(source, np.ndarray) and np.may_share_memory(value, source) for source in sources
    ):
        return value.copy()
    return value
