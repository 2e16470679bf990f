"""String operators: StringConcat, StringSplit, RegexFullMatch, StringNormalizer. Kernels in
runtime_support/strings.py.

All exact (string operations have one answer). Text from the model (delimiters, patterns,
stopwords) reaches the module only as escaped literals; a pattern becomes a pattern object
inside the kernel, compiled from that literal (RE2 where installed: runtime_support/strings.py).
A pattern that is not RE2 syntax is refused at compile time, as onnxruntime refuses the session.
"""

from __future__ import annotations

from onemodel_compile.errors import CompileError
from onemodel_compile.ops import pyir
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.pyir import call
from onemodel_compile.ops.registry import emitter
from runtime_support.strings import RegexPatternError, check_syntax


@emitter("StringConcat", since=20, exact=True)
def string_concat(view: NodeView) -> pyir.Expr:
    return call("rt.string_concat", *view.inputs[:2])


@emitter("StringSplit", since=20, exact=True)
def string_split(view: NodeView) -> pyir.Expr:
    return call(
        "rt.string_split",
        view.inputs[0],
        delimiter=view.attr("delimiter"),
        maxsplit=view.attr("maxsplit"),
    )


@emitter("RegexFullMatch", since=20, exact=True)
def regex_full_match(view: NodeView) -> pyir.Expr:
    pattern = view.attr("pattern")
    try:
        check_syntax(pattern)
    except RegexPatternError as error:
        raise CompileError(f"{view.node.label}: {error}") from None
    return call("rt.regex_full_match", view.inputs[0], pattern=pattern)


@emitter("StringNormalizer", since=10, exact=True)
def string_normalizer(view: NodeView) -> pyir.Expr:
    return call(
        "rt.string_normalizer",
        view.inputs[0],
        case_change_action=view.attr("case_change_action"),
        is_case_sensitive=view.attr("is_case_sensitive"),
        stopwords=tuple(view.attr("stopwords") or ()),
    )
