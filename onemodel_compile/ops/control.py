"""Control flow: If, Loop, Scan. Each subgraph becomes a nested function (see NodeView.body);
the operators themselves only move values, so they are exact (their bodies are checked node by
node)."""

from __future__ import annotations

from onemodel_compile.ops.code import dtype_expr, py
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.registry import emitter


def targets(view: NodeView) -> str:
    """Assignment targets for a call returning a tuple of the node's outputs (absent: `_`)."""
    names = [out.name if out is not None else "_" for out in view.outputs]
    return f"({names[0]},)" if len(names) == 1 else ", ".join(names)


@emitter("If", since=1, exact=True, foldable=False)
def if_(view: NodeView) -> list[str]:
    then_branch, else_branch = view.body("then_branch"), view.body("else_branch")
    return [f"{targets(view)} = {then_branch}() if {view.inputs[0]} else {else_branch}()"]


def _optional(view: NodeView, index: int) -> str:
    operand = view.input(index)
    return "None" if operand is None else str(operand)


@emitter("Loop", since=1, exact=True, foldable=False)
def loop(view: NodeView) -> list[str]:
    body = view.body("body")
    carried = [str(x) for x in view.inputs[2:]]
    scan_count = len(view.outputs) - len(carried)
    scan_dtypes = tuple(
        dtype_expr(out.dtype) if out is not None and out.dtype is not None else "None"
        for out in view.outputs[len(carried) :]
    )
    arguments = [body, _optional(view, 0), _optional(view, 1), *carried]
    keywords = f"scan_outputs={scan_count}"
    if scan_count:
        keywords += f", scan_dtypes=({', '.join(scan_dtypes)},)"
    return [f"{targets(view)} = rt.loop({', '.join(arguments)}, {keywords})"]


@emitter("Scan", since=9, exact=True, foldable=False)
def scan(view: NodeView) -> list[str]:
    body = view.body("body")
    values = [str(x) for x in view.inputs]
    keywords = [f"num_scan_inputs={view.attr('num_scan_inputs')}", f"outputs={len(view.outputs)}"]
    for attr in (
        "scan_input_axes",
        "scan_input_directions",
        "scan_output_axes",
        "scan_output_directions",
    ):
        if view.attr(attr):
            keywords.append(f"{attr}={py(view.attr(attr))}")
    return [f"{targets(view)} = rt.scan({body}, {', '.join(values)}, {', '.join(keywords)})"]


@emitter("Scan", since=8, until=8, exact=True, foldable=False)
def scan_batched(view: NodeView) -> list[str]:
    body = view.body("body")
    values = [str(x) for x in view.inputs[1:]]
    keywords = [f"num_scan_inputs={view.attr('num_scan_inputs')}", f"outputs={len(view.outputs)}"]
    if view.attr("directions"):
        keywords.append(f"directions={py(view.attr('directions'))}")
    return [
        f"{targets(view)} = rt.scan_batched({body}, {_optional(view, 0)}, {', '.join(values)}, "
        f"{', '.join(keywords)})"
    ]
