"""String operators: StringConcat, StringSplit, RegexFullMatch, StringNormalizer. Kernels in
runtime_support/strings.py.

All exact (string operations have one answer). Text from the model (delimiters, patterns,
stopwords) reaches the module only as escaped literals; a pattern becomes a `re` pattern object
inside the kernel, compiled from that literal.
"""

from __future__ import annotations

from onemodel_compile.ops import pyir
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.pyir import call
from onemodel_compile.ops.registry import emitter


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
    return call("rt.regex_full_match", view.inputs[0], pattern=view.attr("pattern"))


@emitter("StringNormalizer", since=10, exact=True)
def string_normalizer(view: NodeView) -> pyir.Expr:
    return call(
        "rt.string_normalizer",
        view.inputs[0],
        case_change_action=view.attr("case_change_action", "NONE"),
        is_case_sensitive=view.attr("is_case_sensitive", 0),
        stopwords=tuple(view.attr("stopwords") or ()),
    )
