"""Control flow: If, Loop, Scan. Each subgraph becomes a nested function (see NodeView.body);
the operators themselves only move values, so they are exact (their bodies are checked node by
node)."""

from __future__ import annotations

from onemodel_compile.ops import pyir
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.pyir import Ref, call, ifexp, tuple_of
from onemodel_compile.ops.registry import emitter


def outputs_of(view: NodeView, value) -> list[pyir.Assign]:
    """The node's outputs bound to a call returning the tuple of them (absent ones to `_`; one
    output unpacked as `(y,) = ...`)."""
    names = [out.name if out is not None else None for out in view.outputs]
    return [pyir.assign(names, value, unpack=len(names) == 1)]


def _optional(view: NodeView, index: int) -> pyir.Expr:
    """Input `index`, or None when absent (an argument the kernel takes positionally)."""
    return pyir.expr(view.input(index))


@emitter("If", since=1, exact=True, foldable=False)
def if_(view: NodeView) -> list[pyir.Assign]:
    then_branch, else_branch = view.body("then_branch"), view.body("else_branch")
    return outputs_of(view, ifexp(view.inputs[0], call(then_branch), call(else_branch)))


@emitter("Loop", since=1, exact=True, foldable=False)
def loop(view: NodeView) -> list[pyir.Assign]:
    """The trip count and condition are positional (None when absent): the carried values
    follow them."""
    body = Ref(view.body("body"))
    carried = view.inputs[2:]
    scan_count = len(view.outputs) - len(carried)
    keywords: dict[str, object] = {"scan_outputs": scan_count}
    if scan_count:
        keywords["scan_dtypes"] = tuple_of(  # dtypes as code (a plain tuple is a literal)
            out.dtype if out is not None and out.dtype is not None else None
            for out in view.outputs[len(carried) :]
        )
    arguments = [body, _optional(view, 0), _optional(view, 1), *carried]
    return outputs_of(view, call("rt.loop", *arguments, **keywords))


_SCAN_ATTRIBUTES = (
    "scan_input_axes",
    "scan_input_directions",
    "scan_output_axes",
    "scan_output_directions",
)


@emitter("Scan", since=9, exact=True, foldable=False)
def scan(view: NodeView) -> list[pyir.Assign]:
    body = Ref(view.body("body"))
    keywords = {"num_scan_inputs": view.attr("num_scan_inputs"), "outputs": len(view.outputs)}
    keywords.update({name: view.attr(name) for name in _SCAN_ATTRIBUTES if view.attr(name)})
    return outputs_of(view, call("rt.scan", body, *view.inputs, **keywords))


@emitter("Scan", since=8, until=8, exact=True, foldable=False)
def scan_batched(view: NodeView) -> list[pyir.Assign]:
    """The sequence lengths are positional (None when absent): the scanned values follow them."""
    body = Ref(view.body("body"))
    keywords = {"num_scan_inputs": view.attr("num_scan_inputs"), "outputs": len(view.outputs)}
    if view.attr("directions"):
        keywords["directions"] = view.attr("directions")
    values = view.inputs[1:]
    return outputs_of(view, call("rt.scan_batched", body, _optional(view, 0), *values, **keywords))
