"""onnxruntime's own operators: the com.microsoft ones (domain opset 1) its CPU provider runs and
real models contain (the transformer optimizer's fusions, the quantization tool's operators,
weight-only quantized matrix products, ...), and the default-domain ones it defines where onnx has
no schema at the model's opset (SimplifiedLayerNormalization, LayerNormalization before 17, the
experimental era's ImageScaler, Affine, ...). onnxruntime 1.31.1 is their definition
(docs/com-microsoft.md). Kernels in runtime_support/microsoft.py.

onnx knows no schema of these operators, so it fills no attribute defaults and infers no types:
each registration here declares onnxruntime's defaults (tests/test_microsoft.py compares them with
onnxruntime's schemas); the output types are onnxruntime_types.py's rules, read by shapes.py.
Operators of the same semantics as a default-domain one compile through that one's rule
(`_default_rule`).

Exactness: every float kernel has a declared exact twin (the same steps through exact_matmul,
exact_softmax, exact_gelu, exact_tanh, exact_sigmoid, exact_exp, exact_mean); quantized arithmetic
is integer arithmetic or IEEE arithmetic in a fixed order. Inverse's twin is Gauss-Jordan
elimination in a fixed order; GridSample is the default domain's (exact); the generation loops
(GreedySearch, BeamSearch, WhisperBeamSearch, Sampling) are exact when their decoder and encoder
are (they are checked node by node). The exact variant refuses none of the family.
"""

from __future__ import annotations

import dataclasses

import numpy as np

import runtime_support
from onemodel_compile import ir, onnxruntime_types
from onemodel_compile.errors import CompileError, UnsupportedError
from onemodel_compile.ops import conv, linalg, pool, pyir, quantization, recurrent
from onemodel_compile.ops.common import optional_arguments, span
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.pyir import Const, binop, call, index, scalar
from onemodel_compile.ops.registry import emitter, lookup
from onemodel_compile.ops.spatial import kernel_shape_of, window_keywords
from runtime_support.strings import RegexPatternError, check_longest_syntax

DOMAIN = "com.microsoft"


def microsoft(
    *op_types: str,
    defaults: dict | None = None,
    required: tuple[str, ...] = (),
    domain: str = DOMAIN,
    **options,
):
    """Register a rule for com.microsoft `op_types` (opset 1) whose view has onnxruntime's
    attribute `defaults` filled in (and so does the view of an `exact` rule); the defaults also
    serve the type rules: onnxruntime_types.DEFAULTS, by (domain, operator). They are
    onnxruntime 1.31.1's: what its schemas declare, and what its CPU kernels take for an optional
    attribute the schema gives no default. A `required` attribute the node lacks is a compile
    error naming the node and the attribute."""
    defaults = dict(defaults or {})
    options.setdefault("since", 1)
    if callable(options.get("exact")):
        options["exact"] = _with_defaults_of(options["exact"], defaults)

    def register(rule):
        emitter(*op_types, domain=domain, **options)(
            _with_defaults_of(rule, defaults, tuple(required))
        )
        for op_type in op_types:
            onnxruntime_types.DEFAULTS[(domain, op_type)] = defaults
            REQUIRED[(domain, op_type)] = tuple(required)
        return rule

    return register


# (domain, operator) -> the attributes its registration requires (tests/test_microsoft.py checks
# them against onnxruntime's schemas).
REQUIRED: dict[tuple[str, str], tuple[str, ...]] = {}


def _with_defaults_of(rule, defaults: dict, required: tuple[str, ...] = ()):
    def with_defaults(view: NodeView):
        for name in required:
            if name not in view.node.attrs:
                raise CompileError(
                    f"{view.node.label}: {view.op_type} needs its attribute {name!r}"
                )
        node = dataclasses.replace(view.node, attrs={**defaults, **view.node.attrs})
        filled = NodeView(
            node,
            view.inputs,
            view.outputs,
            view.variant,
            view._temporary,
            view._body,
            view._dim_code,
        )
        return rule(filled)

    with_defaults.__name__ = rule.__name__
    with_defaults.__doc__ = rule.__doc__
    return with_defaults


# Output types: onnxruntime_types.py (the shape rules of this family, read by shapes.py).


def _outputs(view: NodeView) -> int:
    """How many outputs the kernel returns: up to the last one the node lists."""
    listed = [i for i, o in enumerate(view.outputs) if o is not None]
    return listed[-1] + 1 if listed else 1


def _kernel_call(view: NodeView, kernel: str, optional: dict[int, str], **keywords):
    """`rt.<kernel>(inputs..., keywords)`, absent optional inputs by name (optional_arguments),
    `outputs=` when the node lists more than its first output."""
    args, named = optional_arguments(view, optional)
    outputs = _outputs(view)
    if outputs > 1:
        keywords["outputs"] = outputs
    return call(f"rt.{kernel}", *args, **named, **keywords)


# --- activations --------------------------------------------------------------------------------


@microsoft("Gelu", exact=True)
def gelu(view: NodeView):
    return call("rt.gelu", view.inputs[0], approximate="none")


@microsoft("BiasGelu", exact=True)
def bias_gelu(view: NodeView):
    return call("rt.gelu", binop("+", *view.inputs[:2]), approximate="none")


@microsoft("FastGelu", exact=True)
def fast_gelu(view: NodeView):
    X, bias = view.inputs[0], view.input(1)
    x = X if bias is None else binop("+", X, bias)
    return call("rt.gelu", x, approximate="tanh")


@microsoft("QuickGelu", defaults={"alpha": 1.702}, exact=True)
def quick_gelu(view: NodeView):
    """x * sigmoid(alpha * x): ONNX Swish's kernel."""
    return call("rt.swish", view.inputs[0], alpha=float(np.float32(view.attr("alpha"))))


# --- normalizations -----------------------------------------------------------------------------


_SKIP = {"epsilon": float(np.float32(1e-12))}


@microsoft("SkipLayerNormalization", defaults=_SKIP, exact=True)
def skip_layer_normalization(view: NodeView):
    return _kernel_call(
        view,
        "skip_layer_normalization",
        {3: "beta", 4: "bias"},
        epsilon=view.attr("epsilon"),
    )


@microsoft("SkipSimplifiedLayerNormalization", defaults=_SKIP, exact=True)
def skip_simplified_layer_normalization(view: NodeView):
    """The kernel of SkipLayerNormalization without beta: this node's fourth input is the bias."""
    keywords: dict[str, object] = {"bias": view.input(3)} if view.input(3) is not None else {}
    outputs = _outputs(view)
    if outputs > 1:
        keywords["outputs"] = outputs
    return call(
        "rt.skip_layer_normalization",
        *view.inputs[:3],
        **keywords,
        epsilon=view.attr("epsilon"),
        simplified=True,
    )


_LAYER_NORM = {"axis": -1, "epsilon": float(np.float32(1e-5)), "stash_type": 1}


@microsoft(
    "SimplifiedLayerNormalization",
    domain="",
    defaults=_LAYER_NORM,
    exact=True,
)
def simplified_layer_normalization(view: NodeView):
    return _kernel_call(
        view,
        "simplified_layer_normalization",
        {},
        axis=view.attr("axis"),
        epsilon=view.attr("epsilon"),
        stash_type=view.attr("stash_type"),
    )


@microsoft("LayerNormalization", domain="", until=16, defaults=_LAYER_NORM, exact=True)
def layer_normalization(view: NodeView):
    """onnxruntime's LayerNormalization before opset 17 (which its optimizer writes into models
    of older opsets): opset 17's semantics."""
    args, named = optional_arguments(view, {2: "B"})
    keywords = dict(axis=view.attr("axis"), epsilon=view.attr("epsilon"))
    keywords["stash_type"] = view.attr("stash_type")
    outputs = _outputs(view)
    if outputs == 1:
        return call("rt.layer_normalization", *args, **named, **keywords, stats=False)
    results = call("rt.layer_normalization", *args, **named, **keywords)
    return results if outputs == 3 else index(results, pyir.Slice(None, pyir.Lit(outputs)))


@microsoft(
    "EmbedLayerNormalization",
    defaults={"epsilon": float(np.float32(1e-12)), "mask_index_type": 1},
    exact=True,
)
def embed_layer_normalization(view: NodeView):
    if view.attr("mask_index_type") != 1:
        raise UnsupportedError(
            f"{view.node.label}: EmbedLayerNormalization with mask_index_type "
            f"{view.attr('mask_index_type')} is not supported (1 only)"
        )
    names = {0: "input_ids", 1: "segment_ids", 2: "word_embedding", 3: "position_embedding"}
    names.update({4: "segment_embedding", 5: "gamma", 6: "beta", 7: "mask", 8: "position_ids"})
    for required in (0, 2, 3, 5, 6):
        if view.input(required) is None:
            raise CompileError(
                f"{view.node.label}: input {required} ({names[required]}) is required"
            )
    operands = {names[i]: o for i, o in enumerate(view.inputs) if o is not None and i}
    keywords = {"epsilon": view.attr("epsilon")}
    outputs = _outputs(view)
    if outputs > 1:
        keywords["outputs"] = outputs
    return call("rt.embed_layer_normalization", view.inputs[0], **operands, **keywords)


@microsoft(
    "QEmbedLayerNormalization",
    defaults={"epsilon": float(np.float32(1e-12))},
    exact=True,
)
def qembed_layer_normalization(view: NodeView):
    """Every input but the ids by keyword (the kernel's parameters are the input names; the
    segment table's are named without _quant)."""
    for required in (0, 2, 3, 5, 6, 8, 9, 11, 12):
        if view.input(required) is None:
            raise CompileError(
                f"{view.node.label}: input {required} ({_QEMBED_INPUTS[required]}) is required"
            )
    operands = {
        _QEMBED_INPUTS[i]: operand for i, operand in enumerate(view.inputs) if i and operand
    }
    keywords = {"epsilon": view.attr("epsilon")}
    outputs = _outputs(view)
    if outputs > 1:
        keywords["outputs"] = outputs
    return call("rt.qembed_layer_normalization", view.inputs[0], **operands, **keywords)


_QEMBED_INPUTS = (
    "input_ids segment_ids word_embedding_quant position_embedding_quant segment_embedding "
    "gamma_quant beta_quant mask word_embedding_scale position_embedding_scale "
    "segment_embedding_scale gamma_scale beta_scale word_embedding_zero_point "
    "position_embedding_zero_point segment_embedding_zero_point gamma_zero_point "
    "beta_zero_point"
).split()


# --- matrix products ----------------------------------------------------------------------------


_MATMUL = {"alpha": 1.0, "transA": 0, "transB": 0}
_FUSED_MATMUL = {**_MATMUL, "transBatchA": 0, "transBatchB": 0}


@microsoft(
    "FusedMatMul",
    defaults=_FUSED_MATMUL,
    exact=True,
)
def fused_matmul(view: NodeView):
    keywords = {name: view.attr(name) for name in _FUSED_MATMUL}
    return call("rt.fused_matmul", *view.inputs[:2], **_non_default(keywords, _FUSED_MATMUL))


@microsoft("TransposeMatMul", defaults=_MATMUL, exact=True)
def transpose_matmul(view: NodeView):
    keywords = {name: view.attr(name) for name in _MATMUL}
    return call("rt.fused_matmul", *view.inputs[:2], **_non_default(keywords, _MATMUL))


def _non_default(keywords: dict, defaults: dict) -> dict:
    """The keywords whose value is not the default (shorter calls)."""
    return {k: v for k, v in keywords.items() if defaults.get(k) != v}


_ACTIVATIONS = ("Relu", "LeakyRelu", "Tanh", "Sigmoid", "HardSigmoid", "Clip")


def _activation(view: NodeView, params) -> dict:
    activation = view.attr("activation") or ""
    if activation and activation not in _ACTIVATIONS:
        raise UnsupportedError(
            f"{view.node.label}: {view.op_type} activation {activation!r} is not supported "
            f"({', '.join(_ACTIVATIONS)})"
        )
    if not activation:
        return {}
    return {"activation": activation, "params": tuple(float(p) for p in params)}


@microsoft(
    "FusedGemm",
    defaults={"alpha": 1.0, "beta": 1.0, "transA": 0, "transB": 0, "activation": ""},
    exact=True,
)
def fused_gemm(view: NodeView):
    """Gemm as the default domain's rules compute it, then the activation (onnxruntime requires
    one) with its activation_alpha/beta/gamma."""
    product = linalg.gemm_exact(view) if view.variant.exact else linalg.gemm(view)
    params = [
        view.attr(name)
        for name in ("activation_alpha", "activation_beta", "activation_gamma")
        if view.attr(name) is not None
    ]
    activation = _activation(view, params)
    return call("rt.fused_activation", product, **activation) if activation else product


@microsoft(
    "FusedConv",
    defaults={"group": 1, "auto_pad": "NOTSET", "activation": ""},
    exact=True,
)
def fused_conv(view: NodeView):
    args, named = optional_arguments(view, {2: "B", 3: "Z"})
    geometry = dict(window_keywords(view, kernel_shape_of(view)))
    activation = _activation(view, view.attr("activation_params") or ())
    return call("rt.fused_conv", *args, **named, **geometry, group=view.attr("group"), **activation)


@microsoft("Inverse", exact=True)
def inverse(view: NodeView):
    """rt.inverse (LAPACK); the exact variant's twin is Gauss-Jordan elimination in a fixed
    order (rt.exact_inverse)."""
    return call("rt.inverse", view.inputs[0])


@microsoft("CDist", defaults={"metric": "sqeuclidean"}, exact=True)
def cdist(view: NodeView):
    metric = view.attr("metric")
    if metric not in ("sqeuclidean", "euclidean"):
        raise UnsupportedError(f"{view.node.label}: CDist metric {metric!r} is not supported")
    return call("rt.cdist", *view.inputs[:2], metric=metric)


# --- attention ----------------------------------------------------------------------------------


_ATTENTION = {"unidirectional": 0, "mask_filter_value": -10000.0, "scale": 0.0}


def _refuse(view: NodeView, *attributes: str) -> None:
    for name in attributes:
        if view.attr(name):
            raise UnsupportedError(
                f"{view.node.label}: {view.op_type} with {name}={view.attr(name)!r} is not "
                f"supported"
            )


@microsoft("Attention", defaults=_ATTENTION, required=("num_heads",), exact=True)
def attention(view: NodeView):
    _refuse(view, "do_rotary", "past_present_share_buffer")
    if view.input(6) is not None:
        raise UnsupportedError(
            f"{view.node.label}: Attention's past_sequence_length input is not supported"
        )
    keywords = {"num_heads": view.attr("num_heads")}
    for name in ("qkv_hidden_sizes", "unidirectional", "scale", "mask_filter_value"):
        value = view.attr(name)
        if value != _ATTENTION.get(name) and value is not None:
            keywords[name] = tuple(value) if isinstance(value, list) else value
    return _kernel_call(
        view,
        "microsoft_attention",
        {2: "bias", 3: "mask_index", 4: "past", 5: "attention_bias"},
        **keywords,
    )


@microsoft("MultiHeadAttention", defaults=_ATTENTION, required=("num_heads",), exact=True)
def multi_head_attention(view: NodeView):
    for index_, what in ((8, "past_sequence_length"), (9, "cache_indirection")):
        if view.input(index_) is not None:
            raise UnsupportedError(
                f"{view.node.label}: MultiHeadAttention's {what} input is not supported"
            )
    if view.output(3) is not None:
        raise UnsupportedError(
            f"{view.node.label}: MultiHeadAttention's qk output is not supported"
        )
    keywords = {"num_heads": view.attr("num_heads")}
    for name in ("unidirectional", "scale", "mask_filter_value"):
        if view.attr(name) != _ATTENTION[name]:
            keywords[name] = view.attr(name)
    optional = {1: "key", 2: "value", 3: "bias", 4: "key_padding_mask", 5: "attention_bias"}
    optional.update({6: "past_key", 7: "past_value"})
    return _kernel_call(view, "multi_head_attention", optional, **keywords)


_GQA: dict[str, object] = {"scale": 0.0, "softcap": 0.0, "do_rotary": 0, "rotary_interleaved": 0}
_GQA.update({"local_window_size": -1, "smooth_softmax": -1, "qk_output": 0, "causal": 1})
_GQA.update({"k_quant_type": "NONE", "v_quant_type": "NONE", "sliding_window_cache": 0})


@microsoft("GroupQueryAttention", defaults=_GQA, required=("num_heads", "kv_num_heads"), exact=True)
def group_query_attention(view: NodeView):
    """What onnxruntime-genai's model builder writes: grouped heads, a key/value cache, rotary
    positions from seqlens_k. Sliding windows, smooth softmax, head sinks, quantized caches, QK
    norms, position_ids and the qk output are refused, naming the node."""
    for name in ("local_window_size", "smooth_softmax"):
        if view.attr(name) != -1:
            raise UnsupportedError(
                f"{view.node.label}: GroupQueryAttention with {name} is not supported"
            )
    for name, default in (("k_quant_type", "NONE"), ("v_quant_type", "NONE"), ("causal", 1)):
        if view.attr(name) != default:
            raise UnsupportedError(
                f"{view.node.label}: GroupQueryAttention with {name}={view.attr(name)!r} is not supported"
            )
    _refuse(view, "qk_output", "sliding_window_cache", "kv_cache_bit_width")
    for index_ in range(11, 16):
        if view.input(index_) is not None:
            raise UnsupportedError(
                f"{view.node.label}: GroupQueryAttention input {index_} is not supported"
            )
    if view.input(9) is not None:
        raise UnsupportedError(
            f"{view.node.label}: GroupQueryAttention's position_ids input is not supported"
        )
    if view.output(3) is not None:
        raise UnsupportedError(
            f"{view.node.label}: GroupQueryAttention's output_qk is not supported"
        )
    keywords = {name: view.attr(name) for name in ("num_heads", "kv_num_heads")}
    for name in ("scale", "softcap", "do_rotary", "rotary_interleaved"):
        if view.attr(name) != _GQA[name]:
            keywords[name] = view.attr(name)
    for required, what in ((5, "seqlens_k"), (6, "total_sequence_length")):
        if view.input(required) is None:
            raise CompileError(f"{view.node.label}: input {required} ({what}) is required")
    optional = {1: "key", 2: "value", 3: "past_key", 4: "past_value", 5: "seqlens_k"}
    optional.update({6: "total_sequence_length", 7: "cos_cache", 8: "sin_cache"})
    optional.update({10: "attention_bias"})
    return _kernel_call(view, "group_query_attention", optional, **keywords)


@microsoft("QAttention", defaults=_ATTENTION, required=("num_heads",), exact=True)
def qattention(view: NodeView):
    _refuse(view, "do_rotary", "past_present_share_buffer")
    keywords = {"num_heads": view.attr("num_heads")}
    for name in ("unidirectional", "scale", "mask_filter_value"):
        if view.attr(name) != _ATTENTION[name]:
            keywords[name] = view.attr(name)
    optional = {5: "mask_index", 6: "input_zero_point", 7: "weight_zero_point", 8: "past"}
    return _kernel_call(view, "qattention", optional, **keywords)


@microsoft(
    "RotaryEmbedding",
    defaults={"interleaved": 0, "num_heads": 0, "rotary_embedding_dim": 0, "scale": 1.0},
    exact=True,
)
def rotary_embedding(view: NodeView):
    """The default domain's rotation (rt.rotary_embedding) with com.microsoft's inputs (input,
    position_ids, cos_cache, sin_cache) and its position offset and head count rules."""
    _refuse(view, "is_packed_batching")
    if view.attr("scale") != 1.0:
        raise UnsupportedError(
            f"{view.node.label}: RotaryEmbedding with scale != 1 is not supported"
        )
    keywords = {
        name: view.attr(name)
        for name in ("interleaved", "num_heads", "rotary_embedding_dim")
        if view.attr(name)
    }
    return call("rt.microsoft_rotary_embedding", *view.inputs[:4], **keywords)


# --- quantization ---------------------------------------------------------------------------------


@microsoft("DynamicQuantizeMatMul", exact=True)
def dynamic_quantize_matmul(view: NodeView):
    args, named = optional_arguments(view, {3: "b_zero_point", 4: "bias"})
    return call("rt.dynamic_quantize_matmul", *args, **named)


@microsoft("MatMulIntegerToFloat", exact=True)
def matmul_integer_to_float(view: NodeView):
    args, named = optional_arguments(view, {4: "a_zero_point", 5: "b_zero_point", 6: "bias"})
    return call("rt.matmul_integer_to_float", *args, **named)


_LSTM_INPUTS = (
    "X W R B sequence_lens initial_h initial_c P W_scale W_zero_point R_scale R_zero_point"
).split()


@microsoft(
    "DynamicQuantizeLSTM",
    defaults={"direction": "forward", "input_forget": 0},
    exact=True,
)
def dynamic_quantize_lstm(view: NodeView):
    """The LSTM's attributes as ops.recurrent passes them; the kernel returns (Y, Y_h, Y_c)."""
    direction = view.attr("direction")
    if direction not in ("forward", "reverse", "bidirectional"):
        raise CompileError(f"{view.node.label}: direction {direction!r} is not supported")
    for required in (8, 9, 10, 11):
        if view.input(required) is None:
            raise CompileError(
                f"{view.node.label}: input {required} ({_LSTM_INPUTS[required]}) is required"
            )
    keywords = {"direction": direction}
    if view.attr("activations") is not None:
        directions = 2 if direction == "bidirectional" else 1
        keywords["activations"] = recurrent._activations(view, 3, directions)
    for name in ("activation_alpha", "activation_beta", "clip"):
        if view.attr(name) is not None:
            keywords[name] = view.attr(name)
    if view.attr("input_forget"):
        keywords["input_forget"] = 1
    args, tensors = pyir.optional_arguments(_LSTM_INPUTS, view.inputs)
    results = call("rt.dynamic_quantize_lstm", *args, **tensors, **keywords)
    count = len(view.outputs)
    if count == 1:
        return index(results, 0)
    return results if count == 3 else index(results, pyir.Slice(None, pyir.Lit(count)))


_ATTN_LSTM_INPUTS = (
    "X W R B sequence_lens initial_h initial_c P QW MW V M memory_seq_lens AW"
).split()
# onnxruntime's activation parameters when activation_alpha / activation_beta run out (its
# rnn_helpers: LeakyRelu 0.01, HardSigmoid 0.2 and 0.5, Elu 1.0, every other one 0, Affine,
# ScaledTanh and ThresholdedRelu too); None: the function takes no such parameter.
_ONNXRUNTIME_ACTIVATION_DEFAULTS = {
    "Affine": (0.0, 0.0),
    "LeakyRelu": (0.01, None),
    "ThresholdedRelu": (0.0, None),
    "ScaledTanh": (0.0, 0.0),
    "HardSigmoid": (0.2, 0.5),
    "Elu": (1.0, None),
}


def _explicit_parameters(view: NodeView, names: tuple[str, ...]) -> dict:
    """activation_alpha and activation_beta with a value for every function that takes one, in
    the order onnxruntime consumes them (the given ones first, then its defaults)."""
    given = {p: list(view.attr(p) or ()) for p in ("activation_alpha", "activation_beta")}
    full: dict[str, list[float]] = {"activation_alpha": [], "activation_beta": []}
    for name in names:
        for parameter, default in zip(full, _ONNXRUNTIME_ACTIVATION_DEFAULTS.get(name, ())):
            if default is not None:
                values = given[parameter]
                full[parameter].append(values.pop(0) if values else default)
    return {p: tuple(values) for p, values in full.items() if values}


@microsoft("AttnLSTM", defaults={"direction": "forward", "input_forget": 0}, exact=True)
def attn_lstm(view: NodeView):
    """An LSTM wrapped in Bahdanau attention (rt.attn_lstm documents it). Refused as
    onnxruntime's CPU kernel refuses: no hidden_size, a clip <= 0, other than 3 activation
    functions per direction, float64 (not implemented there), an absent QW, MW, V or M (its
    kernel reads them unconditionally)."""
    label = view.node.label
    direction = view.attr("direction")
    if direction not in ("forward", "reverse", "bidirectional"):
        raise CompileError(f"{label}: direction {direction!r} is not supported")
    directions = 2 if direction == "bidirectional" else 1
    hidden_size = view.attr("hidden_size")
    if hidden_size is None or hidden_size <= 0:
        raise UnsupportedError(f"{label}: AttnLSTM needs a positive attribute 'hidden_size'")
    recurrent._check_hidden_size(view)
    clip = view.attr("clip")
    if clip is not None and not clip > 0:
        raise UnsupportedError(f"{label}: AttnLSTM with clip={clip!r} (it must be above 0)")
    for required in (8, 9, 10, 11):
        if view.input(required) is None:
            raise UnsupportedError(
                f"{label}: AttnLSTM needs input {required} ({_ATTN_LSTM_INPUTS[required]})"
            )
    if view.inputs[0].dtype is not None and view.inputs[0].dtype != np.float32:
        raise UnsupportedError(
            f"{label}: AttnLSTM of {view.inputs[0].dtype} (onnxruntime's kernel runs float32 only)"
        )
    keywords: dict = {"direction": direction}
    names = ("Sigmoid", "Tanh", "Tanh") * directions
    if view.attr("activations") is not None:
        if len(view.attr("activations")) != 3 * directions:
            raise UnsupportedError(
                f"{label}: AttnLSTM's attribute 'activations' lists "
                f"{len(view.attr('activations'))} functions, onnxruntime takes {3 * directions}"
            )
        names = recurrent._activations(view, 3, directions)
        keywords["activations"] = names
    keywords.update(_explicit_parameters(view, names))
    if clip is not None:
        keywords["clip"] = clip
    if view.attr("input_forget"):
        keywords["input_forget"] = 1
    args, tensors = pyir.optional_arguments(_ATTN_LSTM_INPUTS, view.inputs)
    count = len(view.outputs)
    if count < 3:
        keywords["outputs"] = count
    results = call("rt.attn_lstm", *args, **tensors, **keywords)
    return index(results, 0) if count == 1 else results


@microsoft(
    "MatMulNBits",
    defaults={"bits": 4, "accuracy_level": 0, "weight_prepacked": 0},
    required=("K", "N", "block_size"),
    exact=True,
)
def matmul_nbits(view: NodeView):
    bits = view.attr("bits")
    if bits not in (2, 4, 8):
        raise UnsupportedError(f"{view.node.label}: MatMulNBits with {bits} bits is not supported")
    _refuse(view, "weight_prepacked")
    args, named = optional_arguments(view, {3: "zero_points", 4: "g_idx", 5: "bias"})
    keywords = {name: view.attr(name) for name in ("K", "N", "bits", "block_size")}
    return call("rt.matmul_nbits", *args, **named, **keywords)


@microsoft(
    "GatherBlockQuantized",
    defaults={"gather_axis": 0, "quantize_axis": 1, "block_size": 128, "bits": 4},
    exact=True,
)
def gather_block_quantized(view: NodeView):
    args, named = optional_arguments(view, {3: "zero_points"})
    keywords = {
        name: view.attr(name) for name in ("gather_axis", "quantize_axis", "block_size", "bits")
    }
    return call("rt.gather_block_quantized", *args, **named, **keywords)


@microsoft("QuantizeLinear", defaults={"axis": 1}, exact=True)
def quantize_linear(view: NodeView):
    """The default domain's rule (8- and 16-bit targets, per-tensor and per-axis)."""
    return quantization.quantize_linear(view)


@microsoft(
    "DequantizeLinear",
    defaults={"axis": 1},
    exact=True,
)
def dequantize_linear(view: NodeView):
    return quantization.dequantize_linear(view)


@microsoft("QLinearAdd", "QLinearMul", exact=True)
def qlinear_binary(view: NodeView):
    args, named = optional_arguments(
        view, {2: "A_zero_point", 5: "B_zero_point", 7: "C_zero_point"}
    )
    return call("rt.qlinear_binary", *args, **named, op=view.op_type.removeprefix("QLinear"))


def _table_rule(activation: str):
    """`rt.qlinear_lookup(X, table)`: the 256-entry table (rt.qlinear_table) built at compile
    time when the scales and zero points are constants (a module constant), else at run time."""

    def emit(view: NodeView):
        X = view.inputs[0]
        if X.dtype is None or X.dtype.name not in ("uint8", "int8"):
            raise CompileError(f"{view.node.label}: {view.op_type} takes uint8 or int8 input")
        keywords = {"dtype": X.dtype, "activation": activation}
        if activation == "leaky_relu":
            keywords["alpha"] = float(np.float32(view.attr("alpha")))
        parameters = [view.input(i) for i in (1, 2, 3, 4)]
        if all(p is None or p.const is not None for p in parameters):
            values = [None if p is None else p.const for p in parameters]
            table = runtime_support.qlinear_table(*values, **keywords)
            table = Const(table, f"{view.node.name or view.op_type}_table")
        else:
            args, named = optional_arguments(view, {2: "X_zero_point", 4: "Y_zero_point"})
            table = call("rt.qlinear_table", *args[1:], **named, **keywords)
        return call("rt.qlinear_lookup", X, table)

    return emit


microsoft("QLinearSigmoid", exact=True)(_table_rule("sigmoid"))
microsoft("QLinearLeakyRelu", defaults={"alpha": float(np.float32(0.01))}, exact=True)(
    _table_rule("leaky_relu")
)


@microsoft(
    "QLinearGlobalAveragePool",
    defaults={"channels_last": 0},
    exact=True,
)
def qlinear_global_average_pool(view: NodeView):
    return call(
        "rt.qlinear_global_average_pool",
        *view.inputs[:5],
        channels_last=view.attr("channels_last"),
    )


@microsoft(
    "QLinearAveragePool",
    defaults={"auto_pad": "NOTSET", "ceil_mode": 0, "channels_last": 0, "count_include_pad": 0},
    required=("kernel_shape",),
    exact=True,
)
def qlinear_average_pool(view: NodeView):
    """Dequantized, averaged as AveragePool averages (float32 taps in a fixed order, one
    division), requantized as onnxruntime does (the zero point added before rounding)."""
    if view.attr("channels_last"):
        raise UnsupportedError(
            f"{view.node.label}: QLinearAveragePool with channels_last is not supported"
        )
    args, named = optional_arguments(view, {2: "x_zero_point", 4: "y_zero_point"})
    return call(
        "rt.qlinear_average_pool",
        *args,
        **named,
        **pool._window(view),
        count_include_pad=view.attr("count_include_pad"),
    )


@microsoft("QLinearConcat", required=("axis",), exact=True)
def qlinear_concat(view: NodeView):
    if (len(view.inputs) - 2) % 3:
        raise CompileError(f"{view.node.label}: QLinearConcat takes (X, scale, zero point) triples")
    return call("rt.qlinear_concat", *view.inputs, axis=view.attr("axis"))


@microsoft("QGemm", defaults={"alpha": 1.0, "transA": 0, "transB": 0}, exact=True)
def qgemm(view: NodeView):
    args, named = optional_arguments(view, {6: "C", 7: "y_scale", 8: "y_zero_point"})
    keywords = {name: view.attr(name) for name in ("alpha", "transA", "transB")}
    return call("rt.qgemm", *args, **named, **keywords)


@microsoft(
    "QLinearConv",
    defaults={"auto_pad": "NOTSET", "group": 1, "channels_last": 0},
    exact=True,
)
def qlinear_conv(view: NodeView):
    if view.attr("channels_last"):
        raise UnsupportedError(
            f"{view.node.label}: QLinearConv with channels_last is not supported"
        )
    return quantization.qlinear_conv(view)


_MURMUR_TYPES = ("int32", "uint32", "int64", "uint64", "float32", "float64", "object")


@microsoft(
    "MurmurHash3",
    defaults={"seed": 0, "positive": 1},
    exact=True,
)
def murmur_hash3(view: NodeView):
    X = view.inputs[0]
    if X.dtype is not None and X.dtype.name not in _MURMUR_TYPES:
        raise UnsupportedError(f"{view.node.label}: MurmurHash3 of {X.dtype.name} is not supported")
    seed = int(np.uint32(view.attr("seed") & 0xFFFFFFFF))
    return call("rt.murmur_hash3", X, seed=seed, positive=view.attr("positive"))


# --- operators the default domain also has ------------------------------------------------------


def _as_default(view: NodeView, op_type: str, opset: int, attrs: dict | None = None) -> NodeView:
    """`view` as a node of the default domain's `op_type` at `opset` (its attributes, and
    `attrs` for the ones this domain spells differently or fixes)."""
    node = dataclasses.replace(
        view.node,
        op_type=op_type,
        domain="",
        opset=opset,
        attrs={**view.node.attrs, **(attrs or {})},
    )
    return NodeView(
        node, view.inputs, view.outputs, view.variant, view._temporary, view._body, view._dim_code
    )


def _default_rule(op_type: str, opset: int, attrs: dict | None = None):
    """The emit rule and exactness of the default domain's `op_type` at `opset`, for a
    com.microsoft operator of the same semantics."""

    def entry(view: NodeView):
        return lookup(op_type, "", opset, view.variant, view.node.label)

    def emit(view: NodeView):
        return entry(view).emit(_as_default(view, op_type, opset, attrs))

    def exact(view: NodeView):
        return entry(view).refusal(_as_default(view, op_type, opset, attrs))

    return emit, exact


for _op_type, _opset, _attrs, _defaults in (
    ("Trilu", 14, None, {"upper": 1}),
    ("Range", 11, None, {}),
    ("GatherND", 11, None, {}),
    ("Pad", 11, None, {"mode": "constant"}),
):
    _emit, _exact = _default_rule(_op_type, _opset, _attrs)
    microsoft(_op_type, defaults=_defaults, exact=_exact)(_emit)


@microsoft("ExpandDims", exact=True)
def expand_dims(view: NodeView):
    """Unsqueeze by one axis, a scalar int32 input (normalized at run time when not constant)."""
    X, axis = view.inputs[:2]
    if axis.const is not None:
        value = int(axis.const.reshape(()))
        if X.rank is not None:
            value = value % (X.rank + 1) if -X.rank - 1 <= value <= X.rank else value
        return call("np.expand_dims", X, value)
    return call("rt.unsqueeze", X, axis)


@microsoft("Unique", exact=True)
def unique(view: NodeView):
    """(y, idx, counts) of a 1-D input in the order of first occurrence: ONNX Unique's kernel
    with sorted=0, its first index output dropped."""
    y, inverse, counts = (
        [out.name if out is not None else None for out in view.outputs] + [None] * 3
    )[:3]
    return [pyir.assign((y, None, inverse, counts), call("rt.unique", view.inputs[0], sorted=0))]


# --- onnxruntime's default-domain operators of the experimental era -----------------------------
# onnx dropped these schemas (or defines them only from a later opset); onnxruntime still runs
# them, and old models (ImageScaler in the model zoo's Tiny YOLOv2) contain them.


@microsoft("Affine", domain="", defaults={"alpha": 1.0, "beta": 0.0}, exact=True)
def affine(view: NodeView):
    X = view.inputs[0]
    product = binop("*", X, scalar(view.attr("alpha"), X.dtype))
    return binop("+", product, scalar(view.attr("beta"), X.dtype))


@microsoft("Scale", domain="", defaults={"scale": 1.0}, exact=True)
def scale(view: NodeView):
    X = view.inputs[0]
    return binop("*", X, scalar(view.attr("scale"), X.dtype))


@microsoft("ImageScaler", domain="", defaults={"scale": 1.0}, exact=True)
def image_scaler(view: NodeView):
    """scale * x + bias[channel] over (N, C, H, W)."""
    X = view.inputs[0]
    product = binop("*", X, scalar(view.attr("scale"), X.dtype))
    bias = view.attr("bias")
    if not bias:
        return product
    dtype = X.dtype if X.dtype is not None else np.dtype(np.float32)
    shift = np.asarray(bias, dtype).reshape(1, -1, 1, 1)
    return binop("+", product, Const(shift, f"{view.node.name or 'ImageScaler'}_bias"))


@microsoft("ScaledTanh", domain="", defaults={"alpha": 1.0, "beta": 1.0}, exact=True)
def scaled_tanh(view: NodeView):
    X = view.inputs[0]
    inner = binop("*", X, scalar(view.attr("beta"), X.dtype))
    return binop("*", call("np.tanh", inner), scalar(view.attr("alpha"), X.dtype))


def _parametric_softplus(function: str):
    def emit(view: NodeView):
        X = view.inputs[0]
        inner = binop("*", X, scalar(view.attr("beta"), X.dtype))
        if function == "np.logaddexp":
            softplus = call(function, inner, scalar(0, X.dtype))
        else:
            softplus = call(function, inner)
        return binop("*", softplus, scalar(view.attr("alpha"), X.dtype))

    return emit


_SOFTPLUS = {"alpha": 1.0, "beta": 1.0}
microsoft("ParametricSoftplus", domain="", defaults=_SOFTPLUS, exact=False)(
    _parametric_softplus("np.logaddexp")  # log(exp(x) + exp(0)) without overflow
)
microsoft(
    "ParametricSoftplus",
    domain="",
    defaults=_SOFTPLUS,
    variant="exact",
    exact=True,
)(_parametric_softplus("rt.exact_softplus"))


@microsoft("Crop", domain="", defaults={"border": [0, 0, 0, 0]}, exact=True)
def crop(view: NodeView):
    """(N, C, H, W) cut by border (left, top, right, bottom), or a scale (height, width) window
    from (top, left)."""
    X = view.inputs[0]
    left, top, right, bottom = (int(b) for b in view.attr("border"))
    window = view.attr("scale")
    if window:
        height, width = (int(s) for s in window)
        rows, columns = span(top, top + height), span(left, left + width)
    else:
        rows, columns = span(top, -bottom or None), span(left, -right or None)
    return index(X, (span(), span(), rows, columns))


for _op_type, _opset, _until, _name in (
    ("DynamicSlice", 10, None, "Slice"),
    ("ThresholdedRelu", 10, 9, "ThresholdedRelu"),
):
    _emit, _exact = _default_rule(_name, _opset)
    defaults = {"alpha": 1.0} if _op_type == "ThresholdedRelu" else {}
    microsoft(_op_type, domain="", until=_until, defaults=defaults, exact=_exact)(_emit)


def _mvn_axes(view: NodeView) -> list[int]:
    """onnxruntime's axes: the batch axis too (opset 9's default), and the channels across them."""
    return [0, 1, 2, 3] if view.attr("across_channels") else [0, 2, 3]


@microsoft(
    "MeanVarianceNormalization",
    domain="",
    until=8,
    defaults={"across_channels": 0, "normalize_variance": 1},
    exact=True,
)
def mean_variance_normalization_1(view: NodeView):
    """Opset 9's rule over _mvn_axes, or with normalize_variance=0 the mean taken away only."""
    if view.attr("normalize_variance"):
        emit, _ = _default_rule("MeanVarianceNormalization", 9, {"axes": _mvn_axes(view)})
        return emit(view)
    X = view.inputs[0]
    mean = "rt.exact_mean" if view.variant.exact else "np.mean"
    return binop("-", X, call(mean, X, axis=tuple(_mvn_axes(view)), keepdims=True))


@microsoft("MatMulInteger16", exact=True)
def matmul_integer16(view: NodeView):
    return call("rt.matmul_integer16", *view.inputs[:2])


@microsoft("QLinearWhere", exact=True)
def qlinear_where(view: NodeView):
    return call("rt.qlinear_where", *view.inputs[:9])


@microsoft("UnfoldTensor", defaults={"dim": -1, "step": 1}, required=("size",), exact=True)
def unfold_tensor(view: NodeView):
    keywords = {name: view.attr(name) for name in ("dim", "size", "step")}
    return call("rt.unfold_tensor", view.inputs[0], **keywords)


@microsoft(
    "NhwcMaxPool",
    defaults={"auto_pad": "NOTSET", "ceil_mode": 0},
    required=("kernel_shape",),
    exact=True,
)
def nhwc_max_pool(view: NodeView):
    """MaxPool's geometry given explicitly (the spatial axes are 1..rank-2 here: the compiler's
    window rules read NCHW shapes), or auto_pad settled by the kernel at run time."""
    kernel_shape = tuple(int(k) for k in view.attr("kernel_shape"))
    count = len(kernel_shape)
    keywords = {
        "kernel_shape": kernel_shape,
        "strides": tuple(view.attr("strides") or (1,) * count),
        "dilations": tuple(view.attr("dilations") or (1,) * count),
        "ceil_mode": view.attr("ceil_mode"),
    }
    if view.attr("auto_pad") not in ("NOTSET", ""):
        keywords["auto_pad"] = view.attr("auto_pad")
    else:
        keywords["pads"] = tuple(view.attr("pads") or (0,) * (2 * count))
    return call("rt.nhwc_max_pool", view.inputs[0], **keywords)


_GRID_SAMPLE = {"align_corners": 0, "mode": "bilinear", "padding_mode": "zeros"}
_emit, _exact = _default_rule("GridSample", 16)
microsoft("GridSample", defaults=_GRID_SAMPLE, exact=_exact)(_emit)


@microsoft("QLinearSoftmax", defaults={"axis": -1}, required=("opset",), exact=True)
def qlinear_softmax(view: NodeView):
    """The `opset` attribute (required) says Softmax's semantics: along `axis` from 13, over the
    2-D coercion at `axis` before; the schema's default axis is -1 for both (onnxruntime's kernel
    would take 1 before 13 only for an axis its schema did not fill in)."""
    opset = view.attr("opset")
    if opset is None:
        raise CompileError(f"{view.node.label}: QLinearSoftmax needs its opset attribute")
    axis = view.attr("axis")
    args, named = optional_arguments(view, {2: "x_zero_point", 4: "y_zero_point"})
    return call("rt.qlinear_softmax", *args, **named, axis=axis, opset=opset)


@microsoft(
    "MatMulBnb4",
    defaults={"transB": 1, "training_mode": 0},
    required=("K", "N", "block_size", "quant_type"),
    exact=True,
)
def matmul_bnb4(view: NodeView):
    if view.attr("quant_type") not in (0, 1) or not view.attr("transB"):
        raise UnsupportedError(
            f"{view.node.label}: MatMulBnb4 with quant_type {view.attr('quant_type')} and transB "
            f"{view.attr('transB')} is not supported (FP4 or NF4, transposed B)"
        )
    keywords = {name: view.attr(name) for name in ("K", "N", "block_size", "quant_type")}
    return call("rt.matmul_bnb4", *view.inputs[:3], **keywords)


@microsoft("CropAndResize", defaults={"mode": "bilinear", "extrapolation_value": 0.0}, exact=True)
def crop_and_resize(view: NodeView):
    mode = view.attr("mode")
    if mode not in ("bilinear", "nearest"):
        raise UnsupportedError(f"{view.node.label}: CropAndResize mode {mode!r} is not supported")
    extrapolation = float(np.float32(view.attr("extrapolation_value")))
    return call(
        "rt.crop_and_resize", *view.inputs[:4], mode=mode, extrapolation_value=extrapolation
    )


@microsoft("NGramRepeatBlock", required=("ngram_size",), exact=True)
def ngram_repeat_block(view: NodeView):
    return call("rt.ngram_repeat_block", *view.inputs[:2], ngram_size=view.attr("ngram_size"))


@microsoft("DynamicTimeWarping", exact=True)
def dynamic_time_warping(view: NodeView):
    return call("rt.dynamic_time_warping", view.inputs[0])


@microsoft("ConvTransposeWithDynamicPads", defaults={"group": 1, "auto_pad": "NOTSET"}, exact=True)
def conv_transpose_with_dynamic_pads(view: NodeView):
    """ConvTranspose (the default domain's kernel and attributes) with its pads an input: a tuple
    literal when constant, else read at run time."""
    keywords = conv._conv_transpose_keywords(view)
    pads = view.input(2)
    if pads is not None and not {"output_shape", "auto_pad"} & set(keywords):
        if pads.const is not None:
            keywords["pads"] = tuple(int(p) for p in pads.const.reshape(-1))
        else:
            keywords["pads"] = call("tuple", pyir.method(pads, "tolist"))
    operands = [view.inputs[0], view.inputs[1]] + ([view.input(3)] if view.input(3) else [])
    return call("rt.conv_transpose", *operands, **keywords)


# --- the generation loops -------------------------------------------------------------------------


_GENERATION = {
    "model_type": 0,
    "no_repeat_ngram_size": 0,
    "vocab_size": -1,
    "decoder_start_token_id": -1,
}
_GENERATION_REQUIRED = ("decoder", "eos_token_id", "pad_token_id")


def _decoder_geometry(view: NodeView, attr: str) -> dict:
    """(layers, heads, head_size, dtype) of a GPT-style decoder subgraph, read from its inputs
    as onnxruntime reads them: input_ids, position_ids, attention_mask, past_0, ... with past
    (2, batch, heads, past length, head size); outputs logits, present_0, ..."""
    graph = view.node.attrs.get(attr)
    label = view.node.label
    if not isinstance(graph, ir.Graph):
        raise CompileError(f"{label}: {view.op_type} needs its {attr!r} subgraph")
    if len(graph.inputs) < 4 or len(graph.inputs) != len(graph.outputs) + 2:
        raise UnsupportedError(
            f"{label}: {view.op_type}'s {attr} subgraph must take (input_ids, position_ids, "
            f"attention_mask, past_0, ...) and return (logits, present_0, ...): it has "
            f"{len(graph.inputs)} inputs and {len(graph.outputs)} outputs (a shared past/present "
            f"buffer is not supported)"
        )
    geometry = _past_geometry(
        graph.types.get(graph.inputs[3]),
        (2, 4),
        5,
        f"{label}: {view.op_type}'s {attr} subgraph must declare its past_0 input as "
        f"(2, batch, heads, length, head size) with the heads and head size as numbers",
    )
    return {"layers": len(graph.outputs) - 1, **geometry}


def _past_geometry(past, axes: tuple[int, int], rank: int, error: str) -> dict:
    """heads, head_size and dtype of a generation subgraph's first past input, a value type of
    `rank` dims with the heads and head size at `axes`; CompileError(error) when it does not
    declare both as numbers."""
    shape = getattr(past, "shape", None)
    if shape is None or len(shape) != rank or not all(isinstance(shape[i], int) for i in axes):
        raise CompileError(error)
    dtype = getattr(past, "dtype", None)
    return {
        "heads": int(shape[axes[0]]),
        "head_size": int(shape[axes[1]]),
        "dtype": np.dtype(dtype if dtype is not None else np.float32).name,
    }


def _subgraph(view: NodeView, attr: str) -> ir.Graph:
    graph = view.node.attrs.get(attr)
    if not isinstance(graph, ir.Graph):
        raise CompileError(f"{view.node.label}: {view.op_type} needs its {attr!r} subgraph")
    return graph


def _encoder_decoder_geometry(view: NodeView, whisper: bool = False) -> dict:
    """What rt.beam_search needs of a T5-style encoder and decoder (model_type 1), read from
    their inputs and outputs as onnxruntime 1.31.1 reads them (its T5 encoder and decoder
    subgraphs): the encoder (encoder_input_ids, encoder_attention_mask[, decoder_input_ids]) ->
    (logits, encoder_hidden_states, 4 self and cross presents per layer) with decoder_input_ids
    (`init`), (2 cross presents per layer) without; the decoder (input_ids (batch, 1),
    encoder_attention_mask[, encoder_hidden_states], 4 pasts per layer) -> (logits, 2 self
    presents per layer), past (batch, heads, length, head size). Forms onnxruntime's kernel
    fails on, and its shared past/present buffer, are refused naming the node. Whisper's
    (model_type 2): the encoder (encoder_input_ids: audio features, decoder_input_ids) -> the
    init form's outputs; the decoder without encoder_attention_mask."""
    label, op = view.node.label, view.op_type
    encoder, decoder = _subgraph(view, "encoder"), _subgraph(view, "decoder")
    init = whisper or len(encoder.inputs) == 3
    mask = 0 if whisper else 1  # the decoder's encoder_attention_mask input
    hidden_states = (
        len(decoder.inputs) > 1 + mask and decoder.inputs[1 + mask] == "encoder_hidden_states"
    )
    first_past = 1 + mask + hidden_states
    layers = (len(decoder.outputs) - 1) // 2
    expected_encoder = 2 + 4 * layers if init else 2 * layers
    if (
        len(encoder.inputs) not in ((2,) if whisper else (2, 3))
        or layers < 1
        or len(decoder.outputs) != 1 + 2 * layers
        or len(decoder.inputs) != first_past + 4 * layers
        or len(encoder.outputs) != expected_encoder
    ):
        form = (
            "Whisper form (model_type 2): an encoder of 2 inputs returning 2 + 4 * layers "
            "outputs, a decoder of 1 or 2 inputs"
            if whisper
            else "T5 form (model_type 1): an encoder of 2 or 3 inputs returning 2 + 4 * layers "
            "outputs (with decoder_input_ids) or 2 * layers, a decoder of 2 or 3 inputs"
        )
        raise UnsupportedError(
            f"{label}: {op}'s encoder and decoder subgraphs must have onnxruntime's {form} + "
            f"4 * layers pasts returning 1 + 2 * layers outputs: they have "
            f"{len(encoder.inputs)} -> "
            f"{len(encoder.outputs)} and {len(decoder.inputs)} -> {len(decoder.outputs)} (a "
            f"shared past/present buffer is not supported)"
        )
    if hidden_states and not init:
        raise UnsupportedError(
            f"{label}: {op}'s decoder takes encoder_hidden_states but its encoder does not "
            f"return them (onnxruntime's kernel fails on this form too)"
        )
    prompt = whisper and view.input(10) is not None
    if int(view.attr("decoder_start_token_id")) < 0 and not prompt:
        raise CompileError(
            f"{label}: {op} with model_type {view.attr('model_type')} needs "
            f"decoder_start_token_id" + (" or the decoder_input_ids input" if whisper else "")
        )
    ids = getattr(decoder.types.get(decoder.inputs[0]), "shape", None)
    if ids is None or len(ids) != 2 or ids[1] != 1:
        raise UnsupportedError(
            f"{label}: {op}'s decoder must declare its input_ids as (batch, 1) (a decoder fed "
            f"the whole sequence every step is not supported)"
        )
    geometry = _past_geometry(
        decoder.types.get(decoder.inputs[first_past]),
        (1, 3),
        4,
        f"{label}: {op}'s decoder must declare its past_key_self_0 input as (batch, heads, "
        f"length, head size) with the heads and head size as numbers",
    )
    return {
        "encoder": pyir.Ref(view.body("encoder")),
        "decoder_start_token_id": int(view.attr("decoder_start_token_id")),
        "init": init,
        "hidden_states": hidden_states,
        **({"whisper": True} if whisper else {}),
        "layers": layers,
        **geometry,
    }


# model_type -> the form of the node's subgraphs, and what onnxruntime 1.31.1's kernels run:
# GreedySearch and Sampling refuse every model_type but 0 when the session is created.
_MODEL_TYPES = {0: "GPT-style decoder", 1: "encoder-decoder (T5 style)", 2: "Whisper"}
_COMPILED_MODEL_TYPES = {
    "GreedySearch": (0,),
    "Sampling": (0,),
    "BeamSearch": (0, 1, 2),
    "WhisperBeamSearch": (2,),
}


def _generation_keywords(view: NodeView) -> dict:
    """The subgraphs' geometry (the decoder's, or with model_type 1 the encoder and decoder's),
    the special tokens, no_repeat_ngram_size and an init_decoder (a GPT export's first-step
    decoder) when the node has one; what the compiler does not run (model_type 1 and 2 outside
    BeamSearch and WhisperBeamSearch, which onnxruntime's kernels refuse too) refused naming the
    node."""
    label = view.node.label
    model_type = view.attr("model_type")
    if model_type not in _COMPILED_MODEL_TYPES[view.op_type]:
        form = _MODEL_TYPES.get(model_type, "unknown")
        compiled = " and ".join(str(t) for t in _COMPILED_MODEL_TYPES[view.op_type])
        raise UnsupportedError(
            f"{label}: {view.op_type} with model_type {model_type} is not supported ({form}; "
            f"compiled: model_type {compiled})"
        )
    if model_type in (1, 2):
        keywords = _encoder_decoder_geometry(view, whisper=model_type == 2)
    else:
        keywords = _decoder_geometry(view, "decoder")
    keywords.update(
        eos_token_id=int(view.attr("eos_token_id")),
        pad_token_id=int(view.attr("pad_token_id")),
    )
    if view.attr("no_repeat_ngram_size"):
        keywords["no_repeat_ngram_size"] = int(view.attr("no_repeat_ngram_size"))
    if model_type == 0 and isinstance(view.node.attrs.get("init_decoder"), ir.Graph):
        if _decoder_geometry(view, "init_decoder") != _decoder_geometry(view, "decoder"):
            raise UnsupportedError(f"{label}: init_decoder and decoder differ in their past")
        keywords["init_decoder"] = pyir.Ref(view.body("init_decoder"))
    return keywords


@microsoft(
    "GreedySearch",
    defaults=_GENERATION,
    required=_GENERATION_REQUIRED,
    exact=True,
    foldable=False,
)
def greedy_search(view: NodeView):
    """The decoder becomes a nested function the loop (rt.greedy_search) calls at every step."""
    keywords = _generation_keywords(view)
    decoder = pyir.Ref(view.body("decoder"))
    optional = {2: "min_length", 3: "repetition_penalty", 4: "vocab_mask", 5: "prefix_vocab_mask"}
    optional[6] = "attention_mask"
    args, named = optional_arguments(view, optional)
    return call("rt.greedy_search", decoder, *args, **named, **keywords)


@microsoft(
    "BeamSearch",
    defaults={**_GENERATION, "early_stopping": 0},
    required=_GENERATION_REQUIRED,
    exact=True,
    foldable=False,
)
@microsoft(
    "WhisperBeamSearch",
    defaults={**_GENERATION, "model_type": 2, "early_stopping": 0},
    required=_GENERATION_REQUIRED,
    exact=True,
    foldable=False,
)
def beam_search(view: NodeView):
    """rt.beam_search over the decoder's nested function (and the encoder's, model_type 1 and 2);
    outputs sequences, sequences_scores and scores (each step's candidate scores). Whisper's
    decoder_input_ids (model_type 2) is the prompt; its logits processor, cross_qk and
    non_speech_probs are refused."""
    label, op = view.node.label, view.op_type
    keywords = _generation_keywords(view)
    refused = {11: "logits_processor", 12: "cross_qk_layer_head", 13: "extra_decoding_ids"}
    refused[14] = "temperature"
    if view.attr("model_type") != 2:
        refused[10] = "decoder_input_ids"
    for position, name in sorted(refused.items()):
        if view.input(position) is not None:
            raise UnsupportedError(f"{label}: {op}'s {name} input is not supported")
    for position, name in ((3, "cross_qk"), (4, "non_speech_probs")):
        if position < len(view.outputs) and view.outputs[position] is not None:
            raise UnsupportedError(f"{label}: {op}'s {name} output is not supported")
    if view.node.attrs.get("decoder_output_cross_qk"):
        raise UnsupportedError(f"{label}: {op} with decoder_output_cross_qk is not supported")
    if view.attr("early_stopping"):
        keywords["early_stopping"] = 1
    decoder = pyir.Ref(view.body("decoder"))
    names = "min_length num_beams num_return_sequences length_penalty repetition_penalty"
    names += " vocab_mask prefix_vocab_mask attention_mask"
    optional = dict(enumerate(names.split(), start=2))
    optional[10] = "decoder_input_ids"
    args, named = optional_arguments(view, optional)
    outputs = _outputs(view)
    if outputs > 1:
        keywords["outputs"] = outputs
    return call("rt.beam_search", decoder, *args, **named, **keywords)


_SAMPLING = {
    **_GENERATION,
    "temperature": 1.0,
    "top_p": 0.0,
    "filter_value": float(np.float32(-1e20)),
    "min_tokens_to_keep": 0,
    "custom": 0,
    "presence_penalty": 0.0,
}


@microsoft(
    "Sampling", defaults=_SAMPLING, required=_GENERATION_REQUIRED, exact=True, foldable=False
)
def sampling(view: NodeView):
    """rt.top_p_sampling over the decoder's nested function: onnxruntime's top-p sampling and its
    random generator (the same tokens for the same seed); custom sampling, presence_mask and
    the filtered_logits output are refused."""
    label = view.node.label
    if view.attr("custom"):
        raise UnsupportedError(f"{label}: Sampling with custom=1 is not supported")
    if view.input(7) is not None:
        raise UnsupportedError(f"{label}: Sampling's presence_mask input is not supported")
    if len(view.outputs) > 1 and view.outputs[1] is not None:
        raise UnsupportedError(f"{label}: Sampling's filtered_logits output is not supported")
    keywords = _generation_keywords(view)
    keywords.update(
        temperature=float(np.float32(view.attr("temperature"))),
        top_p=float(np.float32(view.attr("top_p"))),
        filter_value=float(np.float32(view.attr("filter_value"))),
        min_tokens_to_keep=int(view.attr("min_tokens_to_keep")),
    )
    decoder = pyir.Ref(view.body("decoder"))
    names = "min_length repetition_penalty vocab_mask prefix_vocab_mask attention_mask"
    optional = dict(enumerate(names.split(), start=2))
    optional.update({7: "presence_mask", 8: "seed"})
    args, named = optional_arguments(view, optional)
    return call("rt.top_p_sampling", decoder, *args, **named, **keywords)


# --- the small ones -------------------------------------------------------------------------------


@microsoft("MaxpoolWithMask", defaults={"auto_pad": "NOTSET", "storage_order": 0}, exact=True)
def maxpool_with_mask(view: NodeView):
    """The window geometry passed explicitly (no ceil_mode: the schema has none); auto_pad
    VALID is pads of 0, SAME_* is refused."""
    kernel_shape = view.attr("kernel_shape")
    if not kernel_shape:
        raise CompileError(f"{view.node.label}: MaxpoolWithMask needs its attribute 'kernel_shape'")
    count = len(kernel_shape)
    auto_pad = view.attr("auto_pad")
    if auto_pad not in ("NOTSET", "", "VALID"):
        raise UnsupportedError(f"{view.node.label}: MaxpoolWithMask auto_pad {auto_pad!r}")
    pads = view.attr("pads") if auto_pad in ("NOTSET", "") else None
    return call(
        "rt.maxpool_with_mask",
        *view.inputs[:2],
        kernel_shape=tuple(int(k) for k in kernel_shape),
        strides=tuple(int(s) for s in view.attr("strides") or (1,) * count),
        pads=tuple(int(p) for p in pads or (0,) * (2 * count)),
    )


@microsoft("WordConvEmbedding", exact=True)
def word_conv_embedding(view: NodeView):
    return call("rt.word_conv_embedding", *view.inputs[:4])


@microsoft("BifurcationDetector", defaults={"min_ngram_size": 1, "max_ngram_size": 3}, exact=True)
def bifurcation_detector(view: NodeView):
    return _kernel_call(
        view,
        "bifurcation_detector",
        {3: "pred_tokens"},
        min_ngram_size=int(view.attr("min_ngram_size")),
        max_ngram_size=int(view.attr("max_ngram_size")),
    )


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


@microsoft("Tokenizer", required=("mark", "pad_value", "mincharnum"), exact=True)
def tokenizer(view: NodeView):
    """Separators, characters (the one separator "", or tokenexp "." as onnxruntime reads it)
    or, with no separators, the matches of tokenexp: RE2 leftmost-longest, checked here where
    google-re2 is installed (runtime_support/strings.py). The pattern reaches the module as a
    string literal only. What onnxruntime refuses at session creation is a compile error."""
    label = view.node.label
    separators = [_text(s) for s in view.attr("separators") or ()]
    tokenexp = _text(view.attr("tokenexp") or "")
    mincharnum = int(view.attr("mincharnum"))
    if mincharnum < 1:
        raise CompileError(f"{label}: Tokenizer's mincharnum must be positive, not {mincharnum}")
    if not separators and not tokenexp:
        raise CompileError(f"{label}: Tokenizer needs separators or tokenexp")
    if "" in separators and len(separators) > 1:
        raise CompileError(f"{label}: Tokenizer's empty separator must be the only one")
    if not separators and tokenexp == ".":  # onnxruntime's character mode ("\n" included)
        separators = [""]
    if separators == [""] and mincharnum > 1:
        raise CompileError(f"{label}: Tokenizer of characters needs mincharnum 1")
    keywords: dict[str, object] = {"separators": tuple(separators)}
    if not separators:  # separators win over tokenexp, as in onnxruntime
        try:
            check_longest_syntax(tokenexp)
        except RegexPatternError as error:
            raise CompileError(f"{label}: Tokenizer's tokenexp: {error}") from None
        keywords = {"tokenexp": tokenexp}
    return call(
        "rt.tokenizer",
        view.inputs[0],
        mark=int(view.attr("mark")),
        pad_value=_text(view.attr("pad_value")),
        mincharnum=mincharnum,
        **keywords,
    )


@microsoft(
    "DecoderMaskedMultiHeadAttention",
    defaults={"scale": 0.0, "mask_filter_value": -10000.0, "past_present_share_buffer": 0},
    required=("num_heads",),
    exact=True,
)
def decoder_masked_multi_head_attention(view: NodeView):
    """One step over the shared past/present cache, or cross-attention over 4-D key and value;
    beam search's cache_indirection and the qk output are refused."""
    label = view.node.label
    if view.input(8) is not None or view.input(9) is not None:
        raise UnsupportedError(f"{label}: DecoderMaskedMultiHeadAttention with beam_width / "
                               "cache_indirection is not supported")  # fmt: skip
    if view.attr("output_qk") or (len(view.outputs) > 3 and view.outputs[3] is not None):
        raise UnsupportedError(f"{label}: DecoderMaskedMultiHeadAttention's qk output")
    key = view.input(1)
    if view.input(5) is not None and not view.attr("past_present_share_buffer"):
        raise UnsupportedError(
            f"{label}: DecoderMaskedMultiHeadAttention with a past needs "
            "past_present_share_buffer=1 (as onnxruntime's kernel does)"
        )
    if key is None:
        raise UnsupportedError(f"{label}: DecoderMaskedMultiHeadAttention without key")
    return _kernel_call(
        view,
        "decoder_masked_multi_head_attention",
        {1: "key", 2: "value", 3: "mask_index", 4: "attention_bias", 5: "past_key",
         6: "past_value", 7: "past_sequence_length", 8: "beam_width", 9: "cache_indirection",
         10: "bias"},  # fmt: skip
        num_heads=int(view.attr("num_heads")),
        scale=float(np.float32(view.attr("scale"))),
        mask_filter_value=float(np.float32(view.attr("mask_filter_value"))),
    )


# --- mixture of experts ---------------------------------------------------------------------------

_MOE = {"k": 1, "activation_type": "relu", "normalize_routing_weights": 0, "use_sparse_mixer": 0}
_MOE.update({"activation_alpha": 1.0, "activation_beta": 0.0, "swiglu_fusion": 0})
_MOE_ACTIVATIONS = ("relu", "gelu", "silu", "identity", "swiglu")


def _moe_keywords(view: NodeView) -> dict:
    """The MoE attributes the kernel takes; what onnxruntime's CPU kernel refuses is refused
    here too (naming the node): swiglu other than fused and interleaved (swiglu_fusion=1), the
    sparse mixer, an unknown activation."""
    activation = view.attr("activation_type")
    if activation not in _MOE_ACTIVATIONS:
        raise UnsupportedError(
            f"{view.node.label}: {view.op_type} activation_type {activation!r} is not supported"
        )
    if activation == "swiglu" and view.attr("swiglu_fusion") != 1:
        raise UnsupportedError(
            f"{view.node.label}: {view.op_type} swiglu with swiglu_fusion="
            f"{view.attr('swiglu_fusion')} is not supported (onnxruntime's CPU kernel takes 1)"
        )
    _refuse(view, "use_sparse_mixer")
    keywords: dict[str, object] = {"k": view.attr("k"), "activation_type": activation}
    if view.attr("normalize_routing_weights"):
        keywords["normalize_routing_weights"] = 1
    if activation == "swiglu":
        keywords["activation_alpha"] = float(np.float32(view.attr("activation_alpha")))
        keywords["activation_beta"] = float(np.float32(view.attr("activation_beta")))
        if view.attr("swiglu_limit") is not None:
            keywords["swiglu_limit"] = float(np.float32(view.attr("swiglu_limit")))
    return keywords


@microsoft("MoE", defaults=_MOE, exact=True)
def moe(view: NodeView):
    """Mixture of experts: top-k routing over the router's softmax, two expert matrix products
    per token (rt.moe). onnxruntime's CPU kernel has no fc3 (it fails NOT_IMPLEMENTED), so a node
    with fc3 inputs is refused."""
    if view.input(6) is not None or view.input(7) is not None:
        raise UnsupportedError(f"{view.node.label}: MoE with fc3 weights is not supported")
    keywords = _moe_keywords(view)
    optional = {3: "fc1_experts_bias", 4: "fc2_experts_weights", 5: "fc2_experts_bias"}
    args, named = optional_arguments(view, {**optional, 6: "", 7: ""})
    if len(args) < 3 or "fc2_experts_weights" not in named and len(args) < 5:
        raise CompileError(f"{view.node.label}: MoE needs input, router_probs, fc1 and fc2 weights")
    return call("rt.moe", *args, **named, **keywords)


_QMOE = {**_MOE, "expert_weight_bits": 4, "quant_type": "int", "weights_prepacked": -1}
_QMOE["accuracy_level"] = 0


@microsoft("QMoE", defaults=_QMOE, exact=True)
def qmoe(view: NodeView):
    """MoE with integer-quantized expert weights (rt.qmoe: its own routing, see the kernel).
    Refused, naming the node: the floating-point quant types (fp4, nvfp4, fp8, wfp4afp8), fc3,
    prepacked weights (weights_prepacked=1: a layout of the execution provider's), and the
    configurations in which onnxruntime's CPU kernel quantizes the activations to int8 (MLAS
    CompInt8: block-wise 8-bit weights at every accuracy level, block-wise weights with
    accuracy_level 4), whose roundings the compiler does not reproduce."""
    label = view.node.label
    if view.attr("quant_type") != "int":
        raise UnsupportedError(
            f"{label}: QMoE quant_type {view.attr('quant_type')!r} is not supported"
        )
    if any(view.input(i) is not None for i in (8, 9, 10, 13, *range(15, len(view.inputs)))):
        raise UnsupportedError(
            f"{label}: QMoE with fc3 or floating-point quantization inputs is not supported"
        )
    if view.attr("weights_prepacked") == 1:
        raise UnsupportedError(f"{label}: QMoE with weights_prepacked=1 is not supported")
    bits = view.attr("expert_weight_bits")
    fc1_bits = view.attr("fc1_expert_weight_bits") or bits
    fc2_bits = view.attr("fc2_expert_weight_bits") or bits
    for width in (fc1_bits, fc2_bits):
        if width not in (2, 4, 8):
            raise UnsupportedError(f"{label}: QMoE with {width}-bit weights is not supported")
    block_size = view.attr("block_size")
    if block_size and (8 in (fc1_bits, fc2_bits) or view.attr("accuracy_level") == 4):
        raise UnsupportedError(
            f"{label}: QMoE with block-wise {max(fc1_bits, fc2_bits)}-bit weights at accuracy_level "
            f"{view.attr('accuracy_level')} is not supported (onnxruntime quantizes the "
            "activations to int8 there)"
        )
    keywords = _moe_keywords(view)
    keywords.update(fc1_bits=fc1_bits, fc2_bits=fc2_bits)
    if block_size:
        keywords["block_size"] = block_size
    optional = {4: "fc1_experts_bias", 5: "fc2_experts_weights", 6: "fc2_scales"}
    optional.update({7: "fc2_experts_bias", 11: "fc1_zero_points", 12: "fc2_zero_points"})
    optional.update({14: "router_weights", 8: "", 9: "", 10: "", 13: ""})
    operands = view.inputs[:15]
    if len(operands) < 7 or any(operands[i] is None for i in (0, 1, 2, 3, 5, 6)):
        raise CompileError(
            f"{label}: QMoE needs input, router_probs, fc1 and fc2 weights and scales"
        )
    names = [optional.get(i) for i in range(len(operands))]
    args, named = pyir.optional_arguments(names, operands)
    named = {name: operand for name, operand in named.items() if name}
    return call("rt.qmoe", *args, **named, **keywords)


# --- the LLM blocks' fused elementwise operators --------------------------------------------------

_EPSILON = float(np.float32(1e-5))


@microsoft("ScaledSiLU", defaults={"alpha": 1.0}, exact=True)
def scaled_silu(view: NodeView):
    keywords = {}
    if view.attr("alpha") != 1.0:
        keywords["alpha"] = float(np.float32(view.attr("alpha")))
    return _kernel_call(view, "scaled_silu", {1: "scale"}, **keywords)


@microsoft("GatedAdd", exact=True)
def gated_add(view: NodeView):
    return call("rt.gated_add", *view.inputs[:3])


@microsoft("GatedRMSNorm", defaults={"activation": "silu", "epsilon": _EPSILON}, exact=True)
def gated_rms_norm(view: NodeView):
    activation = view.attr("activation")
    if activation not in ("silu", "swish", "sigmoid"):
        raise UnsupportedError(
            f"{view.node.label}: GatedRMSNorm activation {activation!r} is not supported"
        )
    return call(
        "rt.gated_rms_norm",
        *view.inputs[:3],
        activation="silu" if activation == "swish" else activation,
        epsilon=view.attr("epsilon"),
    )


@microsoft("BranchwiseRMSNorm", defaults={"num_branches": 0, "epsilon": _EPSILON}, exact=True)
def branchwise_rms_norm(view: NodeView):
    keywords = {"epsilon": view.attr("epsilon")}
    if view.attr("num_branches"):
        keywords["num_branches"] = int(view.attr("num_branches"))
    return _kernel_call(view, "branchwise_rms_norm", {1: "scale"}, **keywords)


@microsoft(
    "HyperConnectionPreMix", defaults={"reduction_scale": 1.0, "num_branches": 0}, exact=True
)
def hyper_connection_pre_mix(view: NodeView):
    keywords: dict[str, object] = {}
    if view.attr("reduction_scale") != 1.0:
        keywords["reduction_scale"] = float(np.float32(view.attr("reduction_scale")))
    if view.attr("num_branches"):
        keywords["num_branches"] = int(view.attr("num_branches"))
    return call("rt.hyper_connection_pre_mix", *view.inputs[:2], **keywords)


@microsoft("HyperConnectionPostMix", defaults={"num_branches": 0}, exact=True)
def hyper_connection_post_mix(view: NodeView):
    keywords = {"num_branches": int(view.attr("num_branches"))} if view.attr("num_branches") else {}
    return _kernel_call(view, "hyper_connection_post_mix", {3: "stream_mix"}, **keywords)


@microsoft("LinearAttentionGate", exact=True)
def linear_attention_gate(view: NodeView):
    return _kernel_call(view, "linear_attention_gate", {3: "b"})


_LINEAR_ATTENTION = {"update_rule": "gated_delta", "scale": 0.0, "state_window": 0}
_LINEAR_ATTENTION["chunk_size"] = 64


@microsoft(
    "LinearAttention",
    defaults=_LINEAR_ATTENTION,
    required=("q_num_heads", "kv_num_heads"),
    exact=True,
)
def linear_attention(view: NodeView):
    """The linear-attention recurrence token by token (rt.linear_attention); chunk_size is a
    tuning hint of onnxruntime's. Refused, naming the node: state_window > 0 (per-token states)."""
    rule = view.attr("update_rule")
    if rule not in ("linear", "gated", "delta", "gated_delta"):
        raise UnsupportedError(
            f"{view.node.label}: LinearAttention update_rule {rule!r} is not supported"
        )
    _refuse(view, "state_window")
    keywords: dict[str, object] = {
        "q_num_heads": int(view.attr("q_num_heads")),
        "kv_num_heads": int(view.attr("kv_num_heads")),
        "update_rule": rule,
    }
    if view.attr("scale"):
        keywords["scale"] = float(np.float32(view.attr("scale")))
    return _kernel_call(
        view, "linear_attention", {3: "past_state", 4: "decay", 5: "beta"}, **keywords
    )


_CAUSAL_CONV: dict[str, object] = {"state_window": 0, "channels_last": 0, "dilation": 1, "ndim": 1}
_CAUSAL_CONV["activation"] = "none"


@microsoft("CausalConvWithState", defaults=_CAUSAL_CONV, exact=True)
def causal_conv_with_state(view: NodeView):
    """The stateful causal depthwise convolution along one axis
    (rt.microsoft_causal_conv_with_state; onnx's CausalConvWithState of opset 27 is ops/conv.py's).
    Refused, naming the node: ndim 2 and 3, state_window > 0 (per-position states)."""
    if view.attr("ndim") != 1:
        raise UnsupportedError(
            f"{view.node.label}: CausalConvWithState with ndim={view.attr('ndim')} is not supported"
        )
    _refuse(view, "state_window")
    activation = view.attr("activation")
    if activation not in ("none", "silu", "swish"):
        raise UnsupportedError(
            f"{view.node.label}: CausalConvWithState activation {activation!r} is not supported"
        )
    keywords: dict[str, object] = {}
    if view.attr("dilation") != 1:
        keywords["dilation"] = int(view.attr("dilation"))
    if activation != "none":
        keywords["activation"] = "silu"
    if view.attr("channels_last"):
        keywords["channels_last"] = 1
    return _kernel_call(
        view, "microsoft_causal_conv_with_state", {2: "bias", 3: "past_state"}, **keywords
    )


@microsoft("EngramGate", defaults={"epsilon": _EPSILON}, exact=True)
def engram_gate(view: NodeView):
    return _kernel_call(view, "engram_gate", {5: "conv_norm_scale"}, epsilon=view.attr("epsilon"))


_NGRAM_HASH = ("pad_id", "n_head_per_ngram", "max_ngram_size")


def _ngram_keywords(view: NodeView) -> dict[str, object]:
    keywords: dict[str, object] = {name: int(view.attr(name)) for name in _NGRAM_HASH}
    if view.attr("reset_on_eos"):
        keywords["reset_on_eos"] = 1
    return keywords


@microsoft("NGramHashMapping", defaults={"reset_on_eos": 0}, required=_NGRAM_HASH, exact=True)
def ngram_hash_mapping(view: NodeView):
    """Engram's n-gram hash ids (rt.ngram_hash_mapping), with EOS and segment resets."""
    optional = {3: "past_ids", 4: "head_offsets", 5: "eos_token_id", 6: "segment_ids"}
    return _kernel_call(view, "ngram_hash_mapping", optional, **_ngram_keywords(view))


_VARLEN_NGRAM = {"reset_on_eos": 0, "state_update_capacity": 0}


@microsoft("VarlenNGramHashMapping", defaults=_VARLEN_NGRAM, required=_NGRAM_HASH, exact=True)
def varlen_ngram_hash_mapping(view: NodeView):
    """NGramHashMapping over packed variable-length requests (rt.varlen_ngram_hash_mapping), with
    segment state across calls and state capture. What onnxruntime refuses for any input is a
    compile error naming the node: a capacity outside [0, 8], capture_count without a positive
    capacity or the reverse, past_segment_ids or present_segment_ids without segment_ids."""
    capacity = int(view.attr("state_update_capacity"))
    label = view.node.label
    if not 0 <= capacity <= 8:
        raise CompileError(f"{label}: state_update_capacity {capacity} is outside [0, 8]")
    if (view.input(9) is None) != (capacity == 0):
        raise CompileError(
            f"{label}: capture_count is given exactly when state_update_capacity is positive"
        )
    if view.input(7) is None and (view.input(8) is not None or view.output(2) is not None):
        raise CompileError(f"{label}: past_segment_ids and present_segment_ids require segment_ids")
    optional = {4: "past_ids", 5: "head_offsets", 6: "eos_token_id", 7: "segment_ids"}
    optional.update({8: "past_segment_ids", 9: "capture_count"})
    keywords = _ngram_keywords(view)
    if capacity:
        keywords["state_update_capacity"] = capacity
    return _kernel_call(view, "varlen_ngram_hash_mapping", optional, **keywords)


_MROPE: dict[str, object] = {"mrope_layout": 0, "interleaved": 0, "num_heads": 0}
_MROPE.update({"rotary_embedding_dim": 0, "is_packed_batching": 0, "scale": 1.0})


@microsoft("MRotaryEmbedding", defaults=_MROPE, required=("mrope_section",), exact=True)
def mrotary_embedding(view: NodeView):
    """Multimodal rotary embedding (rt.mrotary_embedding). Refused, naming the node:
    is_packed_batching and a scale other than 1, as for RotaryEmbedding."""
    _refuse(view, "is_packed_batching")
    if view.attr("scale") != 1.0:
        raise UnsupportedError(
            f"{view.node.label}: MRotaryEmbedding with scale != 1 is not supported"
        )
    keywords: dict[str, object] = {
        "mrope_section": tuple(int(s) for s in view.attr("mrope_section"))
    }
    for name in ("mrope_layout", "interleaved", "num_heads", "rotary_embedding_dim"):
        if view.attr(name):
            keywords[name] = int(view.attr(name))
    return call("rt.mrotary_embedding", *view.inputs[:4], **keywords)
