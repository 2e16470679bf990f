"""Attention (opset 23 to 25) and RotaryEmbedding, as kernels of runtime_support/attention.py.

Attention's fast kernel runs matrix products (BLAS), numpy's exp and tanh; its exact twin the same
code with exact_matmul, exact_tanh and exact_softmax (runtime_support/attention.py). RotaryEmbedding is two products and a sum or difference per feature, each
correctly rounded in a fixed order: exact.
"""

from __future__ import annotations

from onemodel_compile import ir
from onemodel_compile.errors import CompileError
from onemodel_compile.ops import pyir
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.pyir import call, index
from onemodel_compile.ops.registry import emitter

# The kernels' tensor parameters, in order (the nodes' inputs)
_ATTENTION_INPUTS = ("Q", "K", "V", "attn_mask", "past_key", "past_value", "nonpad_kv_seqlen")
_ROTARY_INPUTS = ("X", "cos_cache", "sin_cache", "position_ids")


def _call(kernel: str, names: tuple, view: NodeView, keywords: dict) -> pyir.Call:
    """`kernel` of the node's inputs (absent optional ones left to the kernel's defaults)."""
    args, tensors = pyir.optional_arguments(names, view.inputs)
    return call(kernel, *args, **tensors, **keywords)


def _results(results: pyir.Expr, view: NodeView, available: int) -> pyir.Expr:
    """`results` holds `available` results; the node lists the first len(view.outputs)."""
    count = len(view.outputs)
    if count == 1:
        return index(results, 0)
    return results if count == available else index(results, pyir.Slice(None, pyir.Lit(count)))


# Exact through the kernel's twin rt.exact_attention (exact_matmul, exact_tanh, exact_softmax).
@emitter("Attention", since=23, exact=True)
def attention(view: NodeView) -> pyir.Expr:
    keywords: dict[str, object] = {}
    if view.attr("is_causal"):
        keywords["is_causal"] = 1
    for name in ("q_num_heads", "kv_num_heads", "scale"):
        if view.attr(name) is not None:
            keywords[name] = view.attr(name)
    if view.attr("softcap"):
        keywords["softcap"] = view.attr("softcap")
    if view.attr("softmax_precision") is not None:
        precision = ir.element_dtype(view.attr("softmax_precision"), view.node.label)
        keywords["softmax_precision"] = precision
    mode = view.attr("qk_matmul_output_mode")
    if mode not in (0, 1, 2, 3):
        raise CompileError(f"{view.node.label}: qk_matmul_output_mode {mode} is not 0, 1, 2 or 3")
    if view.output(3) is not None and mode:
        keywords["qk_matmul_output_mode"] = mode
    for name in ("left_window_size", "right_window_size"):  # opset 25
        size = view.attr(name, -1)
        if size < -1:
            raise CompileError(f"{view.node.label}: {name} {size} is neither -1 nor a size")
        if size != -1:
            keywords[name] = size
    return _results(_call("rt.attention", _ATTENTION_INPUTS, view, keywords), view, 4)


@emitter("RotaryEmbedding", since=23, exact=True)
def rotary_embedding(view: NodeView) -> pyir.Expr:
    keywords = {
        name: view.attr(name)
        for name in ("interleaved", "num_heads", "rotary_embedding_dim")
        if view.attr(name)
    }
    return _call("rt.rotary_embedding", _ROTARY_INPUTS, view, keywords)
