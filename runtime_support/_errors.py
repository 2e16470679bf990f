"""Errors raised inside a generated module's nodes, re-raised naming the node.

A generated `run` holds its node statements in one `try` block (free on the normal path). When a
statement raises, `raise_in_node` finds the innermost frame of that module in the traceback, looks
its line up in the module's `_NODES` table (line ranges written by the compiler, one per node) and
raises a NodeError naming the node, its op type and the shapes of its inputs, as onnxruntime's
messages do; the original exception stays attached as its cause.
"""

from __future__ import annotations

import numpy as np


class NodeError(RuntimeError, ValueError):
    """An operator failed at run time (an index out of range, shapes that do not broadcast...).
    A RuntimeError as onnxruntime's failures are, and a ValueError as its invalid-argument ones
    and most numpy errors are, so that handlers written for either keep working."""

    def __init__(self, message: str, node: str):
        super().__init__(message)
        self.node = node


def _describe(value) -> str:
    if isinstance(value, np.ndarray):
        return f"{value.dtype} {list(value.shape)}"
    if isinstance(value, (list, tuple)):
        return f"sequence of {len(value)}"
    if value is None:
        return "absent"
    return type(value).__name__


def raise_in_node(error: BaseException, nodes, run) -> None:
    """Raise NodeError for `error` if it came from a node's statement listed in `nodes`
    (`(first_line, last_line, description, ((input_name, identifier | None), ...))`); return
    otherwise, so that the caller re-raises `error` as it is. `run` is the module's function:
    frames of its module are those sharing its globals."""
    module_globals = run.__globals__
    frame_line = None
    traceback = error.__traceback__
    while traceback is not None:
        if traceback.tb_frame.f_globals is module_globals:
            frame_line = (traceback.tb_frame, traceback.tb_lineno)
        traceback = traceback.tb_next
    if frame_line is None:
        return
    frame, line = frame_line
    found = None
    for entry in nodes:
        if entry[0] <= line <= entry[1] and (found is None or entry[0] > found[0]):
            found = entry  # the innermost: a body's node lies within its If or Loop
    if found is None:
        return
    _, _, description, inputs = found
    seen = frame.f_locals
    shapes = ", ".join(
        f"{name or '(absent)'}: {_describe(seen[identifier]) if identifier in seen else 'constant'}"
        for name, identifier in inputs
    )
    message = f"{description} failed: {type(error).__name__}: {error}"
    if inputs:
        message += f" (inputs: {shapes})"
    raise NodeError(message, description) from error
