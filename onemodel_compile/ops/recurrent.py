"""Recurrent layers: RNN, GRU and LSTM (opsets 7 to 22; `layout` from 14), as kernels of
runtime_support/recurrent.py, which documents their semantics.

The emitter checks at compile time what the model fixes: the direction, the activation functions
(names normalized to their canonical spelling) and their count, hidden_size against R's shape.
The fast kernels use BLAS and numpy's exp and tanh; the exact variant calls the exact twins they
declare (rt.exact_rnn, rt.exact_gru, rt.exact_lstm: the same arithmetic in the same order, with
exact_matmul's products and the library's own sigmoid, tanh, expm1 and softplus).
"""

from __future__ import annotations

from onemodel_compile.errors import CompileError
from onemodel_compile.ops import pyir
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.pyir import call, index
from onemodel_compile.ops.registry import emitter
from runtime_support.recurrent import ACTIVATIONS

_CANONICAL = {name.lower(): name for name in ACTIVATIONS}

# The kernels' tensor parameters, in order (the nodes' inputs; RNN and GRU take the first six)
_INPUTS = ("X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P")
# op type: (kernel, its default activation functions of one direction, outputs, its own flag)
_LAYERS = {
    "RNN": ("rnn", ("Tanh",), 2, None),
    "GRU": ("gru", ("Sigmoid", "Tanh"), 2, "linear_before_reset"),
    "LSTM": ("lstm", ("Sigmoid", "Tanh", "Tanh"), 3, "input_forget"),
}
_DIRECTIONS = ("forward", "reverse", "bidirectional")


def _activations(view: NodeView, per_direction: int, directions: int) -> tuple[str, ...]:
    """The activation functions the node uses, canonically spelled: one set for all directions or
    one per direction. A full bidirectional set on a one-direction node (RNN's schema default
    is Tanh, Tanh) uses its first set."""
    names = []
    for name in view.attr("activations"):
        canonical = _CANONICAL.get(name.lower())
        if canonical is None:
            raise CompileError(
                f"{view.node.label}: unknown activation function {name!r} (expected one of "
                f"{', '.join(_CANONICAL.values())})"
            )
        names.append(canonical)
    if len(names) not in (per_direction, per_direction * directions, per_direction * 2):
        raise CompileError(
            f"{view.node.label}: {len(names)} activation functions given, {view.op_type} takes "
            f"{per_direction} per direction"
        )
    return tuple(names[: per_direction * directions])


def _check_hidden_size(view: NodeView) -> None:
    hidden_size, R = view.attr("hidden_size"), view.inputs[2]
    known = R.shape[-1] if R.shape is not None else None
    if hidden_size is not None and isinstance(known, int) and known != hidden_size:
        raise CompileError(
            f"{view.node.label}: hidden_size {hidden_size} does not match R's last dim {known}"
        )


def _one_step_likely(view: NodeView, keywords: dict) -> bool:
    """Whether the fast variant calls rt.lstm_step (runtime_support/recurrent.py: one time step as
    one product, else rt.lstm's call): an LSTM of one direction, layout 0, the default activations,
    no clip and no input_forget, whose sequence length is 1 or unknown at compile time (a streaming
    model's chunk: silero-vad's sequence axis comes out of an If whose branches differ in rank)."""
    if view.variant.exact or view.op_type != "LSTM" or set(keywords) != {"direction"}:
        return False
    X = view.inputs[0]
    steps = X.shape[0] if X.shape is not None and X.rank == 3 else None
    return keywords["direction"] != "bidirectional" and not (isinstance(steps, int) and steps != 1)


# Exact through the kernels' twins rt.exact_rnn, rt.exact_gru and rt.exact_lstm.
@emitter("RNN", "GRU", "LSTM", since=7, exact=True)
def recurrent(view: NodeView) -> pyir.Expr:
    """The kernel's call with the attributes that differ from its defaults, indexed down to the
    outputs the node lists."""
    kernel, defaults, total, flag = _LAYERS[view.op_type]
    direction = view.attr("direction")
    if direction not in _DIRECTIONS:
        raise CompileError(
            f"{view.node.label}: direction {direction!r} is not one of {', '.join(_DIRECTIONS)}"
        )
    _check_hidden_size(view)
    keywords = {"direction": direction}
    if view.attr("activations") is not None:
        directions = 2 if direction == "bidirectional" else 1
        activations = _activations(view, len(defaults), directions)
        if activations not in (defaults, defaults * directions):
            keywords["activations"] = activations
    for name in ("activation_alpha", "activation_beta", "clip"):
        if view.attr(name) is not None:
            keywords[name] = view.attr(name)
    for name in ("layout", flag):
        if name is not None and view.attr(name, 0):
            keywords[name] = view.attr(name)
    args, tensors = pyir.optional_arguments(_INPUTS, view.inputs)
    if _one_step_likely(view, keywords):
        kernel = "lstm_step"
    results = call(f"rt.{kernel}", *args, **tensors, **keywords)
    count = len(view.outputs)
    if count == 1:
        return index(results, 0)
    return results if count == total else index(results, pyir.Slice(None, pyir.Lit(count)))
