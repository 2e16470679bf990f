"""Input checks of generated modules: dtype, rank, static dims and consistent symbolic dims."""

from __future__ import annotations

import numpy as np

from runtime_support._dtypes import dtype_from_name


class InvalidInput(ValueError):
    """An input given to a generated module does not match the model's declaration."""


def _describe_shape(shape) -> str:
    return "[" + ", ".join("?" if dim is None else str(dim) for dim in shape) + "]"


class InputChecker:
    """Checks the arguments of `run` against the module's INPUTS, built once at import.

    A dim is an int (must match), a str (a symbolic dim: every use must have the same size) or None
    (any size).
    """

    def __init__(self, inputs):
        self._specs = [
            (name, dtype_from_name(dtype), shape) for name, dtype, shape in inputs
        ]

    def __call__(self, *values) -> None:
        symbols: dict[str, tuple[int, str]] = {}
        for (name, dtype, shape), value in zip(self._specs, values):
            if not isinstance(value, np.ndarray):
                raise InvalidInput(
                    f"input {name!r}: expected a numpy array of {dtype.name}, "
                    f"got {type(value).__name__}"
                )
            if value.dtype != dtype:
                raise InvalidInput(
                    f"input {name!r}: expected dtype {dtype.name}, got {value.dtype.name}"
                )
            if shape is None:
                continue
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
