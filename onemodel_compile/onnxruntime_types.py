"""Output types of onnxruntime's own operators (ops/microsoft.py), which onnx's inference knows
nothing of: the compiler's shape rules for them, read by shapes.output_types, and the attribute
defaults ops/microsoft.py declares with its registrations (onnxruntime 1.31.1's schemas; no onnx
schema fills them in). A rule sees the node's input types through a small view (`_View`: `inputs`,
`input(i)`, `attr(name)` with those defaults) and returns one type per output it knows.
"""

from __future__ import annotations

import functools

import numpy as np

from onemodel_compile import ir

DOMAIN = "com.microsoft"

# (domain, op_type) -> {attribute: onnxruntime's default}; filled by ops/microsoft.py's
# registrations, checked against onnxruntime's schemas by tests/test_microsoft.py.
DEFAULTS: dict[tuple[str, str], dict[str, object]] = {}


class _Operand:
    """An input's type as the rules read it."""

    def __init__(self, value_type):
        self.type = value_type if value_type is not None else ir.UNKNOWN

    @property
    def dtype(self):
        return getattr(self.type, "dtype", None)

    @property
    def shape(self):
        return getattr(self.type, "shape", None)

    @property
    def rank(self):
        return None if self.shape is None else len(self.shape)


class _View:
    def __init__(self, node: ir.Node, inputs: list):
        self.node = node
        self.inputs = [None if k is None else _Operand(k.type) for k in inputs]
        self._defaults = DEFAULTS.get((node.domain, node.op_type), {})

    def input(self, index: int) -> _Operand | None:
        return self.inputs[index] if index < len(self.inputs) else None

    def operand(self, index: int) -> _Operand:
        """Input `index`, which the operator requires; absent, an IndexError (caught by
        output_types: the node's types stay unknown and its emitter names what is missing)."""
        found = self.input(index)
        if found is None:
            raise IndexError(f"input {index} is absent")
        return found

    def operands(self, count: int) -> tuple[_Operand, ...]:
        """The first `count` inputs, all required."""
        return tuple(self.operand(i) for i in range(count))

    def attr(self, name: str, default=None):
        return self.node.attrs.get(name, self._defaults.get(name, default))


def output_types(node: ir.Node, inputs: list) -> list[ir.ValueType] | None:
    """The types of `node`'s outputs when it is one of onnxruntime's own operators, else None."""
    rule = RULES.get((node.domain, node.op_type))
    if rule is None:
        return None
    if node.domain == "" and node.op_type in _ONNX_FROM and node.opset >= _ONNX_FROM[node.op_type]:
        return None  # onnx's own operator of that name: onnx's inference and shapes.py's rules
    try:
        found = rule(_View(node, inputs))
    except (AttributeError, IndexError, TypeError, ValueError, ZeroDivisionError):
        # a malformed node (a missing input, a rank the operator cannot have, a bad attribute):
        # its types stay unknown, and its emitter names what is wrong
        return None
    return [t if isinstance(t, ir.TensorType) else ir.UNKNOWN for t in found]


# The default-domain operators onnx defines from an opset on (below it only onnxruntime does).
_ONNX_FROM = {"LayerNormalization": 17, "ThresholdedRelu": 10, "MeanVarianceNormalization": 9}


def _like(*indices: int):
    """Outputs of the types of inputs `indices` (one output per index)."""

    def infer(view: _View):
        return [view.operand(i).type if view.input(i) else ir.UNKNOWN for i in indices]

    return infer


def _typed(dtype, shape) -> ir.TensorType:
    return ir.TensorType(None if dtype is None else np.dtype(dtype), shape)


def _with_last(operand, last) -> ir.TensorType:
    shape = operand.shape
    return _typed(operand.dtype, None if shape is None else (*shape[:-1], last))


def _statistics(operand, dtype=np.float32) -> ir.TensorType:
    shape = operand.shape
    return _typed(dtype, None if shape is None else (*shape[:-1], 1))


def _skip_types(view: _View):
    X = view.operand(0)
    return [X.type, _statistics(X), _statistics(X), X.type]


def _norm_types(view: _View):
    X = view.operand(0)
    axis = view.attr("axis")
    shape = X.shape
    if shape is not None and not -len(shape) <= axis < len(shape):
        shape = None  # a scalar, or an axis outside the rank: the emitter refuses the node
    if shape is not None:
        axis = axis % len(shape)
        shape = (*shape[:axis], *([1] * (len(shape) - axis)))
    stash = np.float64 if view.attr("stash_type") == 11 else np.float32
    return [X.type, _typed(stash, shape), _typed(stash, shape)]


def _embed_types(view: _View):
    ids, words = view.operand(0), view.operand(2)
    shape = ids.shape
    hidden = None if words.shape is None else words.shape[-1]
    full = _typed(words.dtype, None if shape is None else (*shape, hidden))
    batch = None if shape is None else (shape[0],)
    return [full, _typed(np.int32, batch), full]


def _matmul_type(view: _View):
    A, B = view.operands(2)
    if A.shape is None or B.shape is None or len(A.shape) < 2 or len(B.shape) < 2:
        return [_typed(A.dtype, None)]
    a, b = list(A.shape), list(B.shape)
    if view.attr("transBatchA", 0) and len(a) > 2:
        a = a[1:-1] + [a[0], a[-1]]
    if view.attr("transBatchB", 0) and len(b) > 2:
        b = b[1:-1] + [b[0], b[-1]]
    if view.attr("transA"):
        a[-2], a[-1] = a[-1], a[-2]
    if view.attr("transB"):
        b[-2], b[-1] = b[-1], b[-2]
    batch = a[:-2] if len(a) >= len(b) else b[:-2]
    return [_typed(A.dtype, (*batch, a[-2], b[-1]))]


def _gemm_type(view: _View):
    A, B = view.operands(2)
    if A.shape is None or B.shape is None:
        return [_typed(A.dtype, None)]
    rows = A.shape[1] if view.attr("transA") else A.shape[0]
    columns = B.shape[0] if view.attr("transB") else B.shape[1]
    return [_typed(A.dtype, (rows, columns))]


def _conv_type(view: _View):
    X, W = view.operands(2)
    return [
        _typed(X.dtype, None if X.shape is None else (X.shape[0], *((None,) * (len(X.shape) - 1))))
    ]


def _cdist_type(view: _View):
    A, B = view.operands(2)
    rows = None if A.shape is None else A.shape[0]
    columns = None if B.shape is None else B.shape[0]
    return [_typed(A.dtype, (rows, columns))]


def _attention_types(view: _View):
    X, W = view.operands(2)
    sizes = view.attr("qkv_hidden_sizes")
    width = sizes[2] if sizes else (None if W.shape is None else W.shape[1] // 3)
    return [_with_last(X, width), _typed(X.dtype, None)]


def _mha_types(view: _View):
    Q, V = view.operand(0), view.input(2)
    width = None
    if V is not None and V.shape is not None and len(V.shape) == 3:
        width = V.shape[2]
    elif Q.shape is not None and len(Q.shape) == 3 and (V is None or V.rank != 4):
        width = Q.shape[2]
    shape = None if Q.shape is None else (Q.shape[0], Q.shape[1], width)
    present = _typed(Q.dtype, None)
    return [_typed(Q.dtype, shape), present, present]


def _gqa_types(view: _View):
    Q, K = view.operand(0), view.input(1)
    width = None
    if Q.shape is not None and isinstance(Q.shape[-1], int):
        heads, kv_heads = view.attr("num_heads"), view.attr("kv_num_heads")
        size = Q.shape[-1] // (heads if K is not None else heads + 2 * kv_heads)
        width = heads * size
    present = _typed(Q.dtype, None if Q.shape is None else (Q.shape[0], None, None, None))
    return [_with_last(Q, width), present, present]


def _float_result(view: _View, scale_index: int):
    A, B = view.operand(0), view.operand(1)
    scale = view.operand(scale_index)
    if A.shape is None or B.shape is None:
        return [_typed(scale.dtype, None)]
    return [_typed(scale.dtype, (*A.shape[:-1], B.shape[-1]))]


def _lstm_types(view: _View, hidden_axis: int = 1):
    """Y, Y_h, Y_c of an LSTM-like node; R's `hidden_axis` holds the hidden size when the
    attribute is absent (DynamicQuantizeLSTM's R is [directions, hidden, 4 * hidden], AttnLSTM's
    ONNX LSTM's [directions, 4 * hidden, hidden])."""
    X, R = view.operand(0), view.operand(2)
    directions = 2 if view.attr("direction") == "bidirectional" else 1
    hidden = view.attr("hidden_size") or (None if R.shape is None else R.shape[hidden_axis])
    steps, batch = (None, None) if X.shape is None else X.shape[:2]
    state = _typed(X.dtype, (directions, batch, hidden))
    return [_typed(X.dtype, (steps, directions, batch, hidden)), state, state]


def _nbits_type(view: _View):
    A = view.operand(0)
    return [_with_last(A, view.attr("N"))]


def _gather_block_type(view: _View):
    data, indices, scales = view.operands(3)
    if data.shape is None or indices.shape is None:
        return [_typed(scales.dtype, None)]
    shape = list(data.shape)
    if data.dtype == np.uint8:
        axis = view.attr("quantize_axis") % len(shape)
        if axis == len(shape) - 1 and isinstance(shape[-1], int):
            shape[-1] = shape[-1] * 8 // view.attr("bits")
    gather = view.attr("gather_axis") % len(shape)
    return [_typed(scales.dtype, (*shape[:gather], *indices.shape, *shape[gather + 1 :]))]


def _quantize_type(view: _View):
    X, zero_point = view.operand(0), view.input(2)
    dtype = np.uint8 if zero_point is None else zero_point.dtype
    return [_typed(dtype, X.shape)]


def _global_pool_type(view: _View):
    X = view.operand(0)
    if X.shape is None:
        return [X.type]
    if view.attr("channels_last"):
        return [_typed(X.dtype, (X.shape[0], *([1] * (len(X.shape) - 2)), X.shape[-1]))]
    return [_typed(X.dtype, (*X.shape[:2], *([1] * (len(X.shape) - 2))))]


def _qgemm_type(view: _View):
    A, B, y_scale, y_zero = view.operand(0), view.operand(3), view.input(7), view.input(8)
    dtype = np.float32 if y_scale is None else (y_zero.dtype if y_zero else np.uint8)
    if A.shape is None or B.shape is None:
        return [_typed(dtype, None)]
    rows = A.shape[1] if view.attr("transA") else A.shape[0]
    columns = B.shape[0] if view.attr("transB") else B.shape[1]
    return [_typed(dtype, (rows, columns))]


def _matmul16_type(view: _View):
    A, B = view.operands(2)
    unsigned = A.dtype is not None and B.dtype is not None and A.dtype.kind == B.dtype.kind == "u"
    dtype = np.uint32 if unsigned else np.int32
    if A.shape is None or B.shape is None:
        return [_typed(dtype, None)]
    return [_typed(dtype, (*A.shape[:-1], B.shape[-1]))]


def _qlinear_where_type(view: _View):
    Z = view.input(8)
    return [_typed(None if Z is None else Z.dtype, None)]


def _sequences_type(view: _View):
    """GreedySearch's and Sampling's sequences: int32 (batch, max_length)."""
    shape = view.operand(0).shape
    return [_typed(np.int32, None if shape is None else (shape[0], None))]


def _beam_types(view: _View):
    """BeamSearch's sequences int32 (batch, num_return_sequences, max_length), sequences_scores
    float32 (batch, num_return_sequences), scores float32 (steps, batch, beams, vocab)."""
    shape = view.operand(0).shape
    batch = None if shape is None else shape[0]
    return [
        _typed(np.int32, (batch, None, None)),
        _typed(np.float32, (batch, None)),
        _typed(np.float32, (None, batch, None, None)),
    ]


def _whisper_beam_types(view: _View):
    """WhisperBeamSearch's: BeamSearch's, then cross_qk float32 and non_speech_probs float32
    (batch)."""
    batch = _beam_types(view)[0].shape[0]
    return _beam_types(view) + [_typed(np.float32, None), _typed(np.float32, (batch,))]


def _tokenizer_type(view: _View):
    shape = view.operand(0).shape
    return [_typed(object, None if shape is None else (*shape, None))]


def _dmmha_types(view: _View):
    query = view.operand(0)
    past_key, past_value = view.input(5), view.input(6)
    return [
        query.type,
        past_key.type if past_key else ir.UNKNOWN,
        past_value.type if past_value else ir.UNKNOWN,
    ]


def _pre_mix_type(view: _View):
    """HyperConnectionPreMix: (..., H) of the streams' (..., C, H), or of (..., C * H) with
    num_branches = C."""
    streams = view.operand(0)
    shape, branches = streams.shape, view.attr("num_branches")
    if shape is None:
        return [_typed(streams.dtype, None)]
    if branches:
        last = shape[-1] // branches if isinstance(shape[-1], int) else None
        return [_typed(streams.dtype, (*shape[:-1], last))]
    return [_typed(streams.dtype, (*shape[:-2], shape[-1]))]


def _linear_attention_types(view: _View):
    """LinearAttention: output (batch, steps, max(H_q, H_kv) d_v) of the query's type, the state
    (batch, H_kv, d_k, d_v) of past_state's type (float32 without one)."""
    query, value = view.operand(0), view.operand(2)
    heads = max(int(view.attr("q_num_heads")), int(view.attr("kv_num_heads")))
    out_shape = None
    if query.shape is not None and value.shape is not None and len(value.shape) == 3:
        d_v = (
            value.shape[2] // int(view.attr("kv_num_heads"))
            if isinstance(value.shape[2], int)
            else None
        )
        out_shape = (query.shape[0], query.shape[1], None if d_v is None else heads * d_v)
    state = view.operand(3).type if view.input(3) else _typed(np.float32, None)
    return [_typed(query.dtype, out_shape), _typed(state.dtype, None)]


RULES = {
    (DOMAIN, "DecoderMaskedMultiHeadAttention"): _dmmha_types,
    (DOMAIN, "MaxpoolWithMask"): lambda view: [_typed(view.operand(0).dtype, None)],
    (DOMAIN, "WordConvEmbedding"): lambda view: [_typed(np.float32, None)],
    (DOMAIN, "BifurcationDetector"): lambda view: [
        _typed(np.int64, (None,)),
        view.operand(2).type,
    ],
    (DOMAIN, "Tokenizer"): _tokenizer_type,
    (DOMAIN, "GreedySearch"): _sequences_type,
    (DOMAIN, "Sampling"): _sequences_type,
    (DOMAIN, "BeamSearch"): _beam_types,
    (DOMAIN, "WhisperBeamSearch"): _whisper_beam_types,
    (DOMAIN, "ConvTransposeWithDynamicPads"): _conv_type,
    (DOMAIN, "DynamicTimeWarping"): lambda view: [_typed(np.int32, (2, None))],
    (DOMAIN, "NGramRepeatBlock"): _like(1),
    (DOMAIN, "CropAndResize"): lambda view: [_typed(view.operand(0).dtype, None)],
    (DOMAIN, "MatMulBnb4"): _nbits_type,
    (DOMAIN, "QLinearSoftmax"): _like(0),
    (DOMAIN, "MatMulInteger16"): _matmul16_type,
    (DOMAIN, "QLinearWhere"): _qlinear_where_type,
    (DOMAIN, "NhwcMaxPool"): lambda view: [_typed(view.operand(0).dtype, None)],
    (DOMAIN, "GridSample"): lambda view: [_typed(view.operand(0).dtype, None)],
    (DOMAIN, "UnfoldTensor"): lambda view: [_typed(view.operand(0).dtype, None)],
    (DOMAIN, "Gelu"): _like(0),
    (DOMAIN, "BiasGelu"): _like(0),
    (DOMAIN, "FastGelu"): _like(0),
    (DOMAIN, "QuickGelu"): _like(0),
    (DOMAIN, "SkipLayerNormalization"): _skip_types,
    (DOMAIN, "SkipSimplifiedLayerNormalization"): _skip_types,
    ("", "SimplifiedLayerNormalization"): lambda view: _norm_types(view)[:1]
    + _norm_types(view)[2:],
    ("", "LayerNormalization"): _norm_types,
    (DOMAIN, "EmbedLayerNormalization"): _embed_types,
    (DOMAIN, "QEmbedLayerNormalization"): _embed_types,
    (DOMAIN, "FusedMatMul"): _matmul_type,
    (DOMAIN, "TransposeMatMul"): _matmul_type,
    (DOMAIN, "FusedGemm"): _gemm_type,
    (DOMAIN, "FusedConv"): _conv_type,
    (DOMAIN, "Inverse"): _like(0),
    (DOMAIN, "CDist"): _cdist_type,
    (DOMAIN, "Attention"): _attention_types,
    (DOMAIN, "MultiHeadAttention"): _mha_types,
    (DOMAIN, "GroupQueryAttention"): _gqa_types,
    (DOMAIN, "QAttention"): _attention_types,
    (DOMAIN, "RotaryEmbedding"): _like(0),
    (DOMAIN, "DynamicQuantizeMatMul"): lambda view: _float_result(view, 0),
    (DOMAIN, "MatMulIntegerToFloat"): lambda view: _float_result(view, 2),
    (DOMAIN, "DynamicQuantizeLSTM"): _lstm_types,
    (DOMAIN, "AttnLSTM"): functools.partial(_lstm_types, hidden_axis=2),
    (DOMAIN, "MatMulNBits"): _nbits_type,
    (DOMAIN, "GatherBlockQuantized"): _gather_block_type,
    (DOMAIN, "QuantizeLinear"): _quantize_type,
    (DOMAIN, "DequantizeLinear"): lambda view: [
        _typed(view.operand(1).dtype, view.operand(0).shape)
    ],
    (DOMAIN, "QLinearAdd"): _like(0),
    (DOMAIN, "QLinearMul"): _like(0),
    (DOMAIN, "QLinearLeakyRelu"): _like(0),
    (DOMAIN, "QLinearGlobalAveragePool"): _global_pool_type,
    (DOMAIN, "QGemm"): _qgemm_type,
    (DOMAIN, "MurmurHash3"): lambda view: [
        _typed(np.uint32 if view.attr("positive") else np.int32, view.operand(0).shape)
    ],
    ("", "Affine"): _like(0),
    ("", "Scale"): _like(0),
    ("", "ImageScaler"): _like(0),
    ("", "ScaledTanh"): _like(0),
    ("", "MeanVarianceNormalization"): _like(0),
    (DOMAIN, "QLinearSigmoid"): _like(0),
    ("", "ParametricSoftplus"): _like(0),
    (DOMAIN, "MoE"): _like(0),
    (DOMAIN, "QMoE"): _like(0),
    (DOMAIN, "ScaledSiLU"): _like(0),
    (DOMAIN, "GatedAdd"): _like(0),
    (DOMAIN, "GatedRMSNorm"): _like(0),
    (DOMAIN, "BranchwiseRMSNorm"): _like(0),
    (DOMAIN, "HyperConnectionPreMix"): _pre_mix_type,
    (DOMAIN, "HyperConnectionPostMix"): _like(0),
    (DOMAIN, "LinearAttentionGate"): _like(0, 0),
    (DOMAIN, "LinearAttention"): _linear_attention_types,
    (DOMAIN, "EngramGate"): _like(0, 0),
    (DOMAIN, "MRotaryEmbedding"): _like(0),
    (DOMAIN, "NGramHashMapping"): lambda view: [
        _typed(view.operand(0).dtype, None),
        _typed(view.operand(0).dtype, None),
    ],
    (DOMAIN, "VarlenNGramHashMapping"): lambda view: [
        _typed(view.operand(0).dtype, None),
        _typed(view.operand(0).dtype, None),
        _typed(np.int32, None),
        _typed(view.operand(0).dtype, None),
    ],
    (DOMAIN, "CausalConvWithState"): lambda view: [
        view.operand(0).type,
        _typed(view.operand(0).dtype, None),
    ],
}
