"""Errors a user can cause. Each carries one line that names the file, node or operator at fault."""

from __future__ import annotations


class CompileError(Exception):
    """The model cannot be compiled; the message says why in one line."""


class ModelError(CompileError):
    """The file is missing, unreadable or not a valid ONNX model."""


class UnsupportedError(CompileError):
    """The model uses something outside the compiler's scope (operator, opset, element type)."""


class ExactnessError(UnsupportedError):
    """An operator cannot be compiled in the exact variant."""


def node_label(op_type: str, name: str) -> str:
    """How messages refer to a node: `Conv node 'conv1'` (or `Conv node #3` when unnamed)."""
    return f"{op_type} node {name!r}" if name else f"{op_type} node (unnamed)"
