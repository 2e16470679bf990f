"""String kernels: StringConcat, StringSplit, RegexFullMatch, StringNormalizer; the pattern
compilation com.microsoft Tokenizer's tokenexp shares (compile_longest).

String tensors are numpy object arrays of Python str (docs/ml-domain.md). Every kernel is exact:
string operations have one answer. Regular expressions are Python `re` patterns compiled from the
model's text (a literal in the generated module, never code). ONNX names RE2's syntax, whose
matching takes time linear in the text; Python's `re` backtracks and can take exponential time on a
hostile pattern such as (a+)+$. So patterns compile with google-re2 (the `regex` extra) where it is
installed, and otherwise with `re` (re.ASCII, so that \\w, \\d, \\s and \\b mean what they mean in
RE2) only when the pattern has no construct that makes backtracking explode: no repeat or
alternation inside an unbounded repeat; others raise an error naming the extra (docs/decisions.md).
"""

from __future__ import annotations

import functools
import re

import numpy as np

from runtime_support._kernels import kernel

try:
    import re2  # google-re2, the `regex` extra
except ImportError:  # pragma: no cover - exercised by forcing `re2 = None` in the tests
    re2 = None

try:
    from re import _parser as _sre_parse  # type: ignore[attr-defined]  # Python 3.11 on
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse as _sre_parse  # type: ignore[no-redef]

__all__ = [
    "RegexPatternError",
    "regex_full_match",
    "string_concat",
    "string_normalizer",
    "string_split",
]

REGEX_EXTRA = "pip install 'onemodel-runtime[regex]' (google-re2)"

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


class RegexPatternError(ValueError):
    """A RegexFullMatch pattern that is not valid RE2, or that this machine cannot match safely."""


# Constructs of Python's `re` that RE2 does not have: a model using them is not valid ONNX.
_NOT_RE2 = {
    _sre_parse.GROUPREF: "a backreference",
    _sre_parse.GROUPREF_EXISTS: "a conditional group",
    _sre_parse.ASSERT: "a lookaround",
    _sre_parse.ASSERT_NOT: "a lookaround",
}
_REPEATS = (_sre_parse.MAX_REPEAT, _sre_parse.MIN_REPEAT) + (
    (_sre_parse.POSSESSIVE_REPEAT,) if hasattr(_sre_parse, "POSSESSIVE_REPEAT") else ()
)


def _walk(items, inside_unbounded: bool):
    """(what, inside_unbounded) for every construct of a parsed pattern, depth first."""
    for op, argument in items:
        yield op, argument, inside_unbounded
        if op in _REPEATS:
            low, high, body = argument
            yield from _walk(body, inside_unbounded or high == _sre_parse.MAXREPEAT)
        elif op == _sre_parse.SUBPATTERN:
            yield from _walk(argument[-1], inside_unbounded)
        elif op == _sre_parse.BRANCH:
            for alternative in argument[1]:
                yield from _walk(alternative, inside_unbounded)
        elif op in (_sre_parse.ASSERT, _sre_parse.ASSERT_NOT):
            yield from _walk(argument[1], inside_unbounded)


# RE2 syntax Python's re has not, or reads otherwise (Unicode classes, \Q..\E quoting, \C, \z,
# \x{...}, the U flag, POSIX classes such as [[:alpha:]], which re takes for a character set):
# without RE2 such a pattern is neither refused nor matched by re.
_RE2_ONLY = re.compile(r"\\[pPQEzC]|\\x\{|\(\?[a-zA-Z]*U|\[\[:")


def _parse(pattern: str):
    try:
        return _sre_parse.parse(pattern, re.ASCII)
    except re.error as error:
        message = f"pattern {pattern!r} is not a valid regular expression: {error}"
        raise RegexPatternError(message) from None


def backtracking_hazard(pattern: str) -> str | None:
    """Why Python's backtracking `re` could take exponential time on `pattern`, or None: a repeat
    (other than one of at most one) or an alternation inside an unbounded repeat, as in (a+)+ or
    (a|aa)*. Raises RegexPatternError for what is not RE2 syntax."""
    for op, argument, inside_unbounded in _walk(_parse(pattern), False):
        if op in _NOT_RE2:
            raise RegexPatternError(f"pattern {pattern!r} has {_NOT_RE2[op]}, which RE2 lacks")
        if inside_unbounded and op == _sre_parse.BRANCH:
            return "has an alternation inside an unbounded repeat"
        if inside_unbounded and op in _REPEATS and argument[1] > 1:
            return "has a repeat inside an unbounded repeat"
    return None


def check_syntax(pattern: str) -> None:
    """RegexPatternError if `pattern` is not RE2 syntax (RE2's own check where it is installed).
    A pattern with a backtracking hazard passes, and so does one with RE2 syntax Python's re
    lacks (\\p{Greek}): the machine that runs it may have RE2."""
    if re2 is not None:
        compile_pattern(pattern)
    elif not _RE2_ONLY.search(pattern):  # else only RE2 can tell (the running machine may have it)
        backtracking_hazard(pattern)


def _compile_re2(pattern: str, *, longest_match: bool = False):
    """RE2's compiled `pattern` (google-re2 installed); RegexPatternError when it is not RE2."""
    options = re2.Options()
    options.log_errors = False  # the error is raised here, not printed by RE2 on stderr
    options.longest_match = longest_match
    try:
        return re2.compile(pattern, options)
    except re2.error as error:
        reason = error.args[0] if error.args else error
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise RegexPatternError(f"pattern {pattern!r} is not valid RE2: {reason}") from None


@functools.lru_cache(maxsize=64)
def compile_pattern(pattern: str):
    """A compiled pattern with a `fullmatch(text)` method: RE2's where google-re2 is installed,
    else Python's for a pattern without a backtracking hazard; RegexPatternError otherwise."""
    if re2 is not None:
        return _compile_re2(pattern)
    if _RE2_ONLY.search(pattern):
        raise RegexPatternError(
            f"pattern {pattern!r} uses RE2 syntax Python's re lacks: {REGEX_EXTRA}"
        )
    hazard = backtracking_hazard(pattern)
    if hazard is not None:
        raise RegexPatternError(
            f"pattern {pattern!r} {hazard}: Python's re could take exponential time on it; "
            f"RE2 matches it in linear time: {REGEX_EXTRA}"
        )
    return re.compile(pattern, re.ASCII)


@functools.lru_cache(maxsize=64)
def compile_longest(pattern: str):
    """RE2's compiled `pattern` with leftmost-longest matching (as onnxruntime's Tokenizer
    compiles its tokenexp). No fallback to Python's re: it is leftmost-first, its classes and $
    differ and no pattern can be made longest-matching by rewriting (docs/com-microsoft.md);
    without google-re2, RegexPatternError naming the extra."""
    if re2 is None:
        raise RegexPatternError(
            f"pattern {pattern!r} needs RE2's leftmost-longest matching, which Python's re "
            f"lacks: {REGEX_EXTRA}"
        )
    return _compile_re2(pattern, longest_match=True)


def check_longest_syntax(pattern: str) -> None:
    """RegexPatternError if `pattern` is not RE2 syntax, checked where google-re2 is installed;
    without it nothing is checked here (re's parser rejects valid RE2 such as \\p{Greek}) and the
    module raises when it runs, naming the extra."""
    if re2 is not None:
        compile_longest(pattern)


@kernel(exact=True)
def regex_full_match(X, *, pattern):
    """Whether each string matches `pattern` as a whole (bool)."""
    compiled = compile_pattern(pattern)
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
