"""Attention (opset 23 to 25) and RotaryEmbedding, as kernels of runtime_support/attention.py.

Attention runs matrix products (BLAS), exp and tanh: not exact, refused by the exact variant (the
docs/contract.md seed list). RotaryEmbedding is two products and a sum or difference per feature, each
correctly rounded in a fixed order: exact.
"""

from __future__ import annotations

from onemodel_compile import ir
from onemodel_compile.errors import CompileError
from onemodel_compile.ops.code import dtype_expr, py
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.registry import emitter


def _operands(view: NodeView, count: int) -> str:
    """The first `count` inputs positionally, None for absent ones, trailing absent ones dropped."""
    listed = [view.input(i) for i in range(count)]
    while listed and listed[-1] is None:
        listed.pop()
    return ", ".join("None" if operand is None else str(operand) for operand in listed)


def _results(call: str, view: NodeView, available: int) -> str:
    """`call` returns `available` results; the node lists the first len(view.outputs)."""
    count = len(view.outputs)
    return f"{call}[0]" if count == 1 else call if count == available else f"{call}[:{count}]"


@emitter("Attention", since=23, exact=False)
def attention(view: NodeView) -> str:
    keywords = []
    if view.attr("is_causal"):
        keywords.append("is_causal=1")
    for name in ("q_num_heads", "kv_num_heads", "scale"):
        if view.attr(name) is not None:
            keywords.append(f"{name}={py(view.attr(name))}")
    if view.attr("softcap"):
        keywords.append(f"softcap={py(view.attr('softcap'))}")
    if view.attr("softmax_precision") is not None:
        precision = ir.element_dtype(view.attr("softmax_precision"), view.node.label)
        keywords.append(f"softmax_precision={dtype_expr(precision)}")
    mode = view.attr("qk_matmul_output_mode")
    if mode not in (0, 1, 2, 3):
        raise CompileError(f"{view.node.label}: qk_matmul_output_mode {mode} is not 0, 1, 2 or 3")
    if view.output(3) is not None and mode:
        keywords.append(f"qk_matmul_output_mode={mode}")
    for name in ("left_window_size", "right_window_size"):  # opset 25
        size = view.attr(name, -1)
        if size < -1:
            raise CompileError(f"{view.node.label}: {name} {size} is neither -1 nor a size")
        if size != -1:
            keywords.append(f"{name}={size}")
    arguments = ", ".join([_operands(view, 7)] + keywords)
    return _results(f"rt.attention({arguments})", view, 4)


@emitter("RotaryEmbedding", since=23, exact=True)
def rotary_embedding(view: NodeView) -> str:
    keywords = [
        f"{name}={view.attr(name)}"
        for name in ("interleaved", "num_heads", "rotary_embedding_dim")
        if view.attr(name)
    ]
    return f"rt.rotary_embedding({', '.join([_operands(view, 4)] + keywords)})"
