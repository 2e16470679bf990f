"""String kernels: StringConcat, StringSplit, RegexFullMatch, StringNormalizer.

String tensors are numpy object arrays of Python str (docs/ml-domain.md). Every kernel is exact:
string operations have one answer. Regular expressions are Python `re` patterns compiled from the
model's text (a literal in the generated module, never code), with re.ASCII so that \\w, \\d, \\s
and \\b mean what they mean in RE2, the syntax ONNX names.
"""

from __future__ import annotations

import re

import numpy as np

from runtime_support._kernels import kernel

__all__ = ["regex_full_match", "string_concat", "string_normalizer", "string_split"]

_OBJECT = np.dtype(object)


def _strings(shape, values) -> np.ndarray:
    out = np.empty(shape, dtype=_OBJECT)
    out.reshape(-1)[:] = values  # reshape of a fresh array: a view
    return out


@kernel(exact=True)
def string_concat(X, Y):
    """Elementwise X + Y with numpy broadcasting."""
    left, right = np.broadcast_arrays(X, Y)
    return _strings(left.shape, [a + b for a, b in zip(left.reshape(-1), right.reshape(-1))])


@kernel(exact=True)
def string_split(X, *, delimiter=None, maxsplit=None):
    """(Y, Z): each string split at `delimiter` (runs of whitespace when it is absent or empty,
    Python's str.split(None)), at most `maxsplit` times; Y pads the pieces with "" to the longest
    count along a new last axis, Z holds each string's count (int64)."""
    separator = delimiter or None
    limit = -1 if maxsplit is None else int(maxsplit)
    pieces = [str(s).split(separator, limit) for s in X.reshape(-1)]
    counts = np.array([len(p) for p in pieces], dtype=np.int64).reshape(X.shape)
    width = max((len(p) for p in pieces), default=0)
    Y = _strings(
        X.shape + (width,), [piece for p in pieces for piece in p + [""] * (width - len(p))]
    )
    return Y, counts


@kernel(exact=True)
def regex_full_match(X, *, pattern):
    """Whether each string matches `pattern` as a whole (bool)."""
    compiled = re.compile(pattern, re.ASCII)
    flat = [compiled.fullmatch(str(s)) is not None for s in X.reshape(-1)]
    return np.array(flat, dtype=bool).reshape(X.shape)


_CASE_CHANGE = {"NONE": lambda s: s, "LOWER": str.lower, "UPPER": str.upper}


@kernel(exact=True)
def string_normalizer(
    X, *, case_change_action="NONE", is_case_sensitive=0, stopwords=(), locale=""
):
    """StringNormalizer of a [C] or [1, C] tensor: the strings that are not stopwords (compared
    after lowering both when not case-sensitive), with their case changed; one "" when none is
    left. `locale` is not used: case changes are Unicode's, the same on every machine."""
    if X.ndim not in (1, 2) or (X.ndim == 2 and X.shape[0] != 1):
        raise ValueError(f"StringNormalizer: input of shape {X.shape}, expected [C] or [1, C]")
    if case_change_action not in _CASE_CHANGE:
        raise ValueError(f"StringNormalizer: case_change_action {case_change_action!r}")
    fold = (lambda s: s) if is_case_sensitive else str.lower
    stops = {fold(word) for word in stopwords}
    change = _CASE_CHANGE[case_change_action]
    kept = [change(str(s)) for s in X.reshape(-1) if fold(str(s)) not in stops] or [""]
    return _strings((len(kept),) if X.ndim == 1 else (1, len(kept)), kept)
