"""Kernels of onnxruntime's com.microsoft operators (and the default-domain ones onnxruntime adds:
SimplifiedLayerNormalization, LayerNormalization before opset 17), as onnxruntime 1.31.1's CPU
provider computes them (docs/com-microsoft.md).

Float kernels come in pairs: `name` (numpy's matmul, exp, tanh, erf) and `exact_name`, its declared
exact twin, the same steps through the library's exact primitives (exact_matmul, exact_softmax,
exact_gelu, exact_tanh, exact_sigmoid, exact_mean: fixed orders, one rounding each). One function
of the operator takes the primitives as its first argument (`_Primitives`), so the two cannot
drift apart. Integer and quantized kernels are integer arithmetic, or IEEE arithmetic in a fixed
order, and exact as they are.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

import numpy as np

from runtime_support import recurrent
from runtime_support._constants import cached, value_tag
from runtime_support._kernels import kernel
from runtime_support._threads import blas_threads_for
from runtime_support.activation import exact_gelu, log_softmax, softmax
from runtime_support.attention import rotary_embedding
from runtime_support.conv import conv
from runtime_support.exact import (
    exact_conv,
    exact_log_softmax,
    exact_matmul,
    exact_mean,
    exact_softmax,
    exact_sum,
)
from runtime_support.exact_math import (
    exact_exp,
    exact_pow,
    exact_sigmoid,
    exact_softplus,
    exact_tanh,
)
from runtime_support.math import gelu, sigmoid
from runtime_support.normalization import exact_layer_normalization, layer_normalization
from runtime_support.pool import average_pool, max_pool
from runtime_support.quantization import dynamic_quantize_linear
from runtime_support.strings import compile_longest

__all__ = [
    "microsoft_attention",
    "exact_microsoft_attention",
    "multi_head_attention",
    "exact_multi_head_attention",
    "skip_layer_normalization",
    "exact_skip_layer_normalization",
    "simplified_layer_normalization",
    "exact_simplified_layer_normalization",
    "embed_layer_normalization",
    "exact_embed_layer_normalization",
    "fused_matmul",
    "exact_fused_matmul",
    "fused_activation",
    "exact_fused_activation",
    "fused_conv",
    "exact_fused_conv",
    "cdist",
    "exact_cdist",
    "inverse",
    "exact_inverse",
    "group_query_attention",
    "exact_group_query_attention",
    "qattention",
    "exact_qattention",
    "qembed_layer_normalization",
    "exact_qembed_layer_normalization",
    "dynamic_quantize_matmul",
    "matmul_integer_to_float",
    "matmul_nbits",
    "exact_matmul_nbits",
    "matmul_bnb4",
    "exact_matmul_bnb4",
    "gather_block_quantized",
    "qlinear_binary",
    "qlinear_average_pool",
    "microsoft_rotary_embedding",
    "qlinear_softmax",
    "exact_qlinear_softmax",
    "qlinear_table",
    "qlinear_lookup",
    "qlinear_global_average_pool",
    "qlinear_concat",
    "qgemm",
    "matmul_integer16",
    "qlinear_where",
    "unfold_tensor",
    "nhwc_max_pool",
    "crop_and_resize",
    "dynamic_time_warping",
    "ngram_repeat_block",
    "dynamic_quantize_lstm",
    "exact_dynamic_quantize_lstm",
    "attn_lstm",
    "exact_attn_lstm",
    "murmur_hash3",
    "greedy_search",
    "exact_greedy_search",
    "beam_search",
    "exact_beam_search",
    "top_p_sampling",
    "exact_top_p_sampling",
    "decoder_masked_multi_head_attention",
    "exact_decoder_masked_multi_head_attention",
    "maxpool_with_mask",
    "word_conv_embedding",
    "exact_word_conv_embedding",
    "bifurcation_detector",
    "tokenizer",
    "moe",
    "exact_moe",
    "qmoe",
    "exact_qmoe",
    "scaled_silu",
    "exact_scaled_silu",
    "gated_add",
    "gated_rms_norm",
    "exact_gated_rms_norm",
    "branchwise_rms_norm",
    "exact_branchwise_rms_norm",
    "hyper_connection_pre_mix",
    "hyper_connection_post_mix",
    "linear_attention_gate",
    "exact_linear_attention_gate",
    "linear_attention",
    "exact_linear_attention",
    "microsoft_causal_conv_with_state",
    "exact_microsoft_causal_conv_with_state",
    "engram_gate",
    "exact_engram_gate",
    "ngram_hash_mapping",
    "varlen_ngram_hash_mapping",
    "mrotary_embedding",
]


@dataclass(frozen=True)
class _Primitives:
    """The float primitives a kernel is built from: numpy's (FAST) or the library's exact ones."""

    matmul: Callable
    softmax: Callable
    gelu: Callable
    tanh: Callable
    sigmoid: Callable
    exp: Callable
    mean: Callable  # mean(x, axis) with kept dims
    layer_normalization: Callable
    conv: Callable
    log_softmax: Callable  # along the last axis
    power: Callable


FAST = _Primitives(
    np.matmul,
    lambda x, axis: softmax(x, axis=axis),
    gelu,
    np.tanh,
    sigmoid,
    np.exp,
    lambda x, axis: np.mean(x, axis=axis, keepdims=True),
    layer_normalization,
    conv,
    log_softmax,
    np.power,
)
EXACT = _Primitives(
    exact_matmul,
    lambda x, axis: exact_softmax(x, axis=axis),
    exact_gelu,
    exact_tanh,
    exact_sigmoid,
    exact_exp,
    lambda x, axis: exact_mean(x, axis, keepdims=True),
    exact_layer_normalization,
    exact_conv,
    exact_log_softmax,
    exact_pow,
)


def _twins(implementation: Callable, name: str, doc: str) -> tuple[Callable, Callable]:
    """`name` (numpy's primitives) and `exact_name`, its declared exact twin."""

    def fast(*args, **kwargs):
        return implementation(FAST, *args, **kwargs)

    def exact(*args, **kwargs):
        return implementation(EXACT, *args, **kwargs)

    fast.__name__, exact.__name__ = name, f"exact_{name}"
    fast.__doc__ = exact.__doc__ = doc
    return (
        kernel(exact=False, exact_twin=f"rt.exact_{name}")(fast),
        kernel(exact=True)(exact),
    )


# --- normalizations ---------------------------------------------------------------------------


def _rms(m: _Primitives, x, scale, axis, epsilon, stash):
    """x / sqrt(mean(x * x) + epsilon) * scale over the axes from `axis`, statistics in `stash`;
    returns (Y in x's type, inv_std_var in stash)."""
    xs = x.astype(stash, copy=False)
    axes = tuple(range(axis % x.ndim, x.ndim))
    inv_std = stash.type(1) / np.sqrt(m.mean(xs * xs, axes) + stash.type(epsilon))
    y = (xs * inv_std).astype(x.dtype, copy=False) * scale.astype(x.dtype, copy=False)
    return y.astype(x.dtype, copy=False), inv_std


def _simplified_layer_normalization(m, X, scale, *, axis=-1, epsilon=1e-5, stash_type=1, outputs=1):
    stash = np.dtype(np.float64 if stash_type == 11 or X.dtype == np.float64 else np.float32)
    y, inv_std = _rms(m, X, scale, axis, epsilon, stash)
    return y if outputs == 1 else (y, inv_std.astype(np.float32 if stash_type == 1 else stash))


simplified_layer_normalization, exact_simplified_layer_normalization = _twins(
    _simplified_layer_normalization,
    "simplified_layer_normalization",
    """SimplifiedLayerNormalization (RMS normalization over the axes from `axis`): Y, and with
    outputs=2 also inv_std_var (the statistics' shape, kept axes of 1).""",
)


def _skip_layer_normalization(
    m, input, skip, gamma, beta=None, bias=None, *, epsilon=1e-12, simplified=False, outputs=1
):
    total = input + skip  # onnxruntime: input + skip, then + bias
    if bias is not None:
        total = total + bias
    if simplified:
        y, inv_std = _rms(m, total, gamma, -1, epsilon, np.dtype(np.float32))
        mean = np.zeros_like(inv_std)  # onnxruntime's CPU kernel leaves the mean at 0
    else:
        y, mean, inv_std = m.layer_normalization(total, gamma, beta, axis=-1, epsilon=epsilon)
    return y if outputs == 1 else (y, mean, inv_std, total)[:outputs]


skip_layer_normalization, exact_skip_layer_normalization = _twins(
    _skip_layer_normalization,
    "skip_layer_normalization",
    """SkipLayerNormalization (simplified=False) and SkipSimplifiedLayerNormalization: the layer
    (or RMS) normalization over the last axis of input + skip + bias; returns the first `outputs`
    of (output, mean, inv_std_var, input_skip_bias_sum).""",
)


def _embed_layer_normalization(
    m,
    input_ids,
    *,
    word_embedding,
    position_embedding,
    gamma,
    beta,
    segment_ids=None,
    segment_embedding=None,
    mask=None,
    position_ids=None,
    epsilon=1e-12,
    outputs=1,
):
    batch, sequence = input_ids.shape
    for ids, table, what in ((input_ids, word_embedding, "input_ids"),):
        _check_indices(ids, table.shape[0], what)
    if position_ids is None:
        positions = np.broadcast_to(np.arange(sequence), (batch, sequence))
    else:
        positions = np.broadcast_to(position_ids, (batch, sequence))
    _check_indices(positions, position_embedding.shape[0], "position_ids")
    total = word_embedding[input_ids] + position_embedding[positions]
    if segment_embedding is not None and segment_ids is not None:
        _check_indices(segment_ids, segment_embedding.shape[0], "segment_ids")
        total = total + segment_embedding[segment_ids]
    y = m.layer_normalization(total, gamma, beta, axis=-1, epsilon=epsilon, stats=False)
    if mask is None:
        mask_index = np.zeros(batch, np.int32)
    else:
        mask_index = np.count_nonzero(mask, axis=1).astype(np.int32)  # onnxruntime: the count
    return y if outputs == 1 else (y, mask_index, total)[:outputs]


embed_layer_normalization, exact_embed_layer_normalization = _twins(
    _embed_layer_normalization,
    "embed_layer_normalization",
    """EmbedLayerNormalization: layer normalization (last axis) of the word, position (by
    position_ids, or 0..sequence-1) and segment embeddings' sum; returns the first `outputs` of
    (output, mask_index: the mask's count of non-zeros per batch row, embedding_sum).""",
)


def _check_indices(ids: np.ndarray, size: int, what: str) -> None:
    if ids.size and (ids.min() < 0 or ids.max() >= size):
        raise IndexError(f"{what}: values must be in [0, {size}), got {ids.min()}..{ids.max()}")


# --- matrix products, activations, convolution ------------------------------------------------


def _fused_matmul(m, A, B, *, alpha=1.0, transA=0, transB=0, transBatchA=0, transBatchB=0):
    a, b = _transposed(A, transA, transBatchA), _transposed(B, transB, transBatchB)
    product = m.matmul(a, b)
    if alpha != 1.0:
        product = product * product.dtype.type(alpha)
    return product


def _transposed(x: np.ndarray, trans: int, trans_batch: int) -> np.ndarray:
    """FusedMatMul's operand views: transBatch moves the first axis to just before the last
    (batch dims rotate); trans swaps the last two. A 1-D operand is never transposed."""
    if x.ndim < 2:
        return x
    if trans_batch and x.ndim > 2:
        x = np.moveaxis(x, 0, -2)
    return np.swapaxes(x, -1, -2) if trans else x


fused_matmul, exact_fused_matmul = _twins(
    _fused_matmul,
    "fused_matmul",
    """FusedMatMul and TransposeMatMul: alpha * A' @ B' with the transposes of the attributes.""",
)


def _activation(m, x, activation: str, params: tuple):
    """x through one of FusedConv's / FusedGemm's activations, with their parameters."""
    if activation == "Relu":
        return np.maximum(x, x.dtype.type(0))
    if activation == "LeakyRelu":
        (alpha,) = params or (0.01,)
        return np.where(x < 0, x * x.dtype.type(alpha), x)
    if activation == "Tanh":
        return m.tanh(x)
    if activation == "Sigmoid":
        return m.sigmoid(x)
    if activation == "HardSigmoid":
        alpha, beta = params or (0.2, 0.5)
        y = x * x.dtype.type(alpha) + x.dtype.type(beta)
        return np.minimum(np.maximum(y, x.dtype.type(0)), x.dtype.type(1))
    if activation == "Clip":
        low, high = params or (float(np.finfo(x.dtype).min), float(np.finfo(x.dtype).max))
        return np.minimum(np.maximum(x, x.dtype.type(low)), x.dtype.type(high))
    if activation in ("", None):
        return x
    raise ValueError(f"activation {activation!r} is not supported")


def _fused_activation(m, x, *, activation="", params=()):
    return _activation(m, x, activation, tuple(params))


fused_activation, exact_fused_activation = _twins(
    _fused_activation,
    "fused_activation",
    """FusedGemm's activation (Relu, LeakyRelu, Tanh, Sigmoid, HardSigmoid, Clip) of x.""",
)


def _fused_conv(m, X, W, B=None, Z=None, *, activation="", params=(), **geometry):
    y = m.conv(X, W, B, **geometry)
    if Z is not None:
        y = y + Z
    return _activation(m, y, activation, tuple(params))


fused_conv, exact_fused_conv = _twins(
    _fused_conv,
    "fused_conv",
    """FusedConv: Conv (runtime_support.conv's arguments), + Z when given, then the activation.""",
)


def _cdist(m, A, B, *, metric="sqeuclidean"):
    if metric not in ("sqeuclidean", "euclidean"):
        raise ValueError(f"CDist: metric {metric!r} is not supported (sqeuclidean, euclidean)")
    difference = A[:, None, :] - B[None, :, :]
    squared = difference * difference
    if m is EXACT:
        total = exact_sum(squared, 2, dtype=A.dtype)
    else:
        total = squared.sum(axis=2)
    return np.sqrt(total) if metric == "euclidean" else total


cdist, exact_cdist = _twins(
    _cdist,
    "cdist",
    """CDist: the (squared) Euclidean distance of every row of A to every row of B.""",
)


@kernel(exact=False, exact_twin="rt.exact_inverse")
def inverse(X):
    """Inverse: the inverse of each (..., n, n) matrix (LAPACK; float16 through float32)."""
    if X.dtype == np.float16:
        return np.linalg.inv(X.astype(np.float32)).astype(np.float16)
    return np.linalg.inv(X)


@kernel(exact=True)
def exact_inverse(X):
    """Inverse by Gauss-Jordan elimination with partial pivoting, in float64 (float16 and
    float32 widen to it exactly), rounded once to X's type. Column k's pivot is the first row
    from k down of largest |value| (exact comparisons); every other row r then takes
    row_r - (a_rk / pivot) * row_k, the quotient, the product and the difference each one IEEE
    operation, and the pivot row is divided by the pivot: a fixed order of correctly rounded
    + - * /, the same bits on every machine. A singular matrix gives inf or NaN, as LAPACK's
    division by a zero pivot does."""
    X = np.asarray(X)
    n = X.shape[-1]
    a = X.astype(np.float64).reshape(-1, n, n).copy()
    inv = np.broadcast_to(np.eye(n), a.shape).copy()
    rows = np.arange(a.shape[0])
    with np.errstate(divide="ignore", invalid="ignore"):
        for k in range(n):
            pivot_row = k + np.argmax(np.abs(a[:, k:, k]), axis=1)
            for m in (a, inv):  # swap rows k and pivot_row
                row_k = m[rows, k].copy()
                m[rows, k] = m[rows, pivot_row]
                m[rows, pivot_row] = row_k
            pivot = a[:, k, k][:, None].copy()
            factors = a[:, :, k] / pivot  # (batch, n): each row's multiple of row k
            factors[:, k] = 0.0
            a -= factors[:, :, None] * a[:, k, None, :]
            inv -= factors[:, :, None] * inv[:, k, None, :]
            a[:, k] /= pivot
            inv[:, k] /= pivot
    return inv.reshape(X.shape).astype(X.dtype)


# --- attention --------------------------------------------------------------------------------


def _scaled_attention(m, q, k, v, scale, bias):
    """softmax(q @ k^T * scale + bias) @ v over (batch, heads, sequence, head_size) operands, the
    scores in float32 (float16 operands through float32)."""
    dtype = q.dtype
    q, k, v = (t.astype(np.float32, copy=False) for t in (q, k, v))
    scores = m.matmul(q, np.swapaxes(k, -1, -2)) * np.float32(scale)
    if bias is not None:
        scores = scores + bias.astype(np.float32, copy=False)
    return m.matmul(m.softmax(scores, -1), v).astype(dtype, copy=False)


def _causal(queries: int, keys: int, past: int) -> np.ndarray:
    """True where query i may not see key j: j > i + past."""
    return np.arange(keys)[None, :] > np.arange(queries)[:, None] + past


def _attention_mask(mask_index, batch, queries, keys, past, unidirectional, filter_value):
    """The additive mask of Attention: mask_filter_value where a key is masked (by mask_index's
    key lengths, [end, start) ranges, 0/1 matrix of 2, 3 or 4 dims) or by causality."""
    bias = np.zeros((batch, 1, queries, keys), np.float32)
    if mask_index is not None:
        mask_index = mask_index.astype(np.int64)
        j = np.arange(keys)
        if mask_index.ndim == 1 and mask_index.shape[0] == batch:
            hidden = j[None, :] >= mask_index[:, None]
        elif mask_index.ndim == 1 and mask_index.shape[0] == 2 * batch:
            end, start = mask_index[:batch, None], mask_index[batch:, None]
            hidden = (j[None, :] >= end) | (j[None, :] < start)
        elif mask_index.ndim == 2:
            hidden = mask_index == 0
        elif mask_index.ndim == 3:
            hidden = mask_index[:, None, :, :] == 0
        elif mask_index.ndim == 4:
            hidden = mask_index[:, :, past : past + queries, :keys] == 0
        else:
            raise ValueError(f"mask_index of shape {mask_index.shape} is not supported")
        if hidden.ndim == 2:
            hidden = hidden[:, None, None, :]
        bias = np.where(hidden, np.float32(filter_value), bias)
    if unidirectional:
        bias = np.where(_causal(queries, keys, past), np.float32(filter_value), bias)
    return bias


def _heads(x: np.ndarray, heads: int) -> np.ndarray:
    """(batch, sequence, heads * size) -> (batch, heads, sequence, size)."""
    batch, sequence, hidden = x.shape
    return x.reshape(batch, sequence, heads, hidden // heads).transpose(0, 2, 1, 3)


def _merged(x: np.ndarray) -> np.ndarray:
    """(batch, heads, sequence, size) -> (batch, sequence, heads * size)."""
    batch, heads, sequence, size = x.shape
    return x.transpose(0, 2, 1, 3).reshape(batch, sequence, heads * size)


def _attention(
    m,
    input,
    weights,
    bias=None,
    mask_index=None,
    past=None,
    attention_bias=None,
    *,
    num_heads,
    qkv_hidden_sizes=(),
    unidirectional=0,
    scale=0.0,
    mask_filter_value=-10000.0,
    outputs=1,
):
    projected = m.matmul(input, weights)
    if bias is not None:
        projected = projected + bias
    sizes = tuple(qkv_hidden_sizes) or (weights.shape[1] // 3,) * 3
    return _projected_attention(
        m, projected, sizes, mask_index, past, attention_bias, num_heads, unidirectional, scale,
        mask_filter_value, outputs
    )  # fmt: skip


def _projected_attention(
    m, projected, sizes, mask_index, past, attention_bias, num_heads, unidirectional, scale,
    mask_filter_value, outputs
):  # fmt: skip
    """Attention's steps after the Q, K, V projection (batch, sequence, sum of sizes)."""
    batch, sequence, _ = projected.shape
    q, k, v = np.split(projected, np.cumsum(sizes)[:2], axis=-1)
    q, k, v = (_heads(t, num_heads) for t in (q, k, v))
    past_length = 0
    if past is not None:
        past_length = past.shape[3]
        k, v = np.concatenate((past[0], k), axis=2), np.concatenate((past[1], v), axis=2)
    keys = k.shape[2]
    scale = scale or 1.0 / np.sqrt(sizes[0] // num_heads)
    additive = _attention_mask(
        mask_index, batch, sequence, keys, past_length, unidirectional, mask_filter_value
    )
    if attention_bias is not None:
        additive = additive + attention_bias
    y = _merged(_scaled_attention(m, q, k, v, scale, additive))
    return y if outputs == 1 else (y, np.stack((k, v)))


microsoft_attention, exact_microsoft_attention = _twins(
    _attention,
    "microsoft_attention",
    """com.microsoft Attention: the Q, K, V projections of input by weights (+ bias), split by
    qkv_hidden_sizes, scaled dot-product attention per head with mask_index's and causality's
    additive mask_filter_value and attention_bias; past (2, batch, heads, past, size) is
    prepended to K and V, and (output, present) returned with outputs=2.""",
)


def _multi_head_attention(
    m,
    query,
    key=None,
    value=None,
    bias=None,
    key_padding_mask=None,
    attention_bias=None,
    past_key=None,
    past_value=None,
    *,
    num_heads,
    unidirectional=0,
    scale=0.0,
    mask_filter_value=-10000.0,
    outputs=1,
):
    batch, sequence = query.shape[:2]
    if query.ndim == 5:  # packed (batch, sequence, heads, 3, size)
        q, k, v = (query[:, :, :, i].transpose(0, 2, 1, 3) for i in range(3))
    else:
        if bias is not None:
            width = query.shape[2]
            q_bias, k_bias, v_bias = bias[:width], bias[width : 2 * width], bias[2 * width :]
            query = query + q_bias
            if key is not None and key.ndim == 3:
                key, value = key + k_bias, value + v_bias
        q = _heads(query, num_heads)
        if key.ndim == 5:  # packed (batch, length, heads, 2, size)
            k, v = (key[:, :, :, i].transpose(0, 2, 1, 3) for i in range(2))
        elif key.ndim == 4:  # already (batch, heads, length, size)
            k, v = key, value
        else:
            k, v = _heads(key, num_heads), _heads(value, num_heads)
    past_length = 0
    if past_key is not None:
        past_length = past_key.shape[2]
        k, v = np.concatenate((past_key, k), axis=2), np.concatenate((past_value, v), axis=2)
    keys = k.shape[2]
    scale = scale or 1.0 / np.sqrt(q.shape[3])
    additive = np.zeros((batch, 1, sequence, keys), np.float32)
    if key_padding_mask is not None:
        j = np.arange(keys)
        if key_padding_mask.ndim == 1:
            hidden = (j[None, :] >= key_padding_mask[:, None])[:, None, None, :]
        else:
            hidden = (key_padding_mask == 0)[:, None, None, :]
        additive = np.where(hidden, np.float32(mask_filter_value), additive)
    if unidirectional:
        additive = np.where(
            _causal(sequence, keys, past_length), np.float32(mask_filter_value), additive
        )
    if attention_bias is not None:
        additive = additive + attention_bias
    y = _merged(_scaled_attention(m, q, k, v, scale, additive))
    return y if outputs == 1 else (y, k, v)[:outputs]


multi_head_attention, exact_multi_head_attention = _twins(
    _multi_head_attention,
    "multi_head_attention",
    """com.microsoft MultiHeadAttention: query (batch, sequence, hidden) or packed QKV; key and
    value (batch, length, hidden), (batch, heads, length, size) or packed KV; bias added to the 3-D
    query, key and value; past_key/past_value prepended; key_padding_mask of key lengths or 0/1;
    returns the first `outputs` of (output, present_key, present_value).""",
)


def _group_query_attention(
    m,
    query,
    key=None,
    value=None,
    past_key=None,
    past_value=None,
    seqlens_k=None,
    total_sequence_length=None,
    cos_cache=None,
    sin_cache=None,
    attention_bias=None,
    *,
    num_heads,
    kv_num_heads,
    scale=0.0,
    softcap=0.0,
    do_rotary=0,
    rotary_interleaved=0,
    outputs=1,
):
    batch, sequence = query.shape[:2]
    if key is None:  # packed (batch, sequence, (num_heads + 2 kv_num_heads) * head_size)
        size = query.shape[2] // (num_heads + 2 * kv_num_heads)
        query, key, value = np.split(
            query, [num_heads * size, (num_heads + kv_num_heads) * size], axis=2
        )
    q, k, v = _heads(query, num_heads), _heads(key, kv_num_heads), _heads(value, kv_num_heads)
    size = q.shape[3]
    total = int(np.asarray(total_sequence_length).reshape(()))
    past_length = 0 if past_key is None else past_key.shape[2]
    lengths = np.asarray(seqlens_k).astype(np.int64).reshape(batch) + 1
    first_prompt = past_length == 0 and sequence == total
    starts = np.zeros(batch, np.int64) if first_prompt else lengths - sequence
    if np.any(starts < 0) or np.any(starts + sequence > max(past_length, total)):
        raise ValueError(
            f"GroupQueryAttention: seqlens_k {seqlens_k.tolist()} do not fit {sequence} new "
            f"positions in a cache of {max(past_length, total)}"
        )
    if do_rotary:
        positions = starts[:, None] + np.arange(sequence)[None, :]
        rotated = 2 * cos_cache.shape[1]
        rotate = lambda t: rotary_embedding(  # noqa: E731
            t, cos_cache, sin_cache, positions, interleaved=rotary_interleaved,
            rotary_embedding_dim=rotated if rotated < size else 0
        )  # fmt: skip
        q, k = rotate(q), rotate(k)
    # The cache: each batch's past up to its start, then the new keys and values (the rest 0).
    cache = max(past_length, total)
    present_k = np.zeros((batch, kv_num_heads, cache, size), k.dtype)
    present_v = np.zeros((batch, kv_num_heads, cache, size), v.dtype)
    for b in range(batch):
        start = int(starts[b])
        if past_key is not None:
            present_k[b, :, :start] = past_key[b, :, :start]
            present_v[b, :, :start] = past_value[b, :, :start]
        present_k[b, :, start : start + sequence] = k[b]
        present_v[b, :, start : start + sequence] = v[b]
    group = num_heads // kv_num_heads
    keys = np.repeat(present_k, group, axis=1)
    values = np.repeat(present_v, group, axis=1)
    j = np.arange(cache)[None, None, :]
    i = np.arange(sequence)[None, :, None]
    hidden = (j > starts[:, None, None] + i) | (j >= lengths[:, None, None])
    scale = scale or 1.0 / np.sqrt(size)
    dtype = q.dtype
    qf, kf, vf = (t.astype(np.float32, copy=False) for t in (q, keys, values))
    scores = m.matmul(qf, np.swapaxes(kf, -1, -2)) * np.float32(scale)
    if softcap:
        scores = m.tanh(scores / np.float32(softcap)) * np.float32(softcap)
    if attention_bias is not None:
        scores = scores + attention_bias.astype(np.float32)
    scores = np.where(hidden[:, None], np.float32(-np.inf), scores)
    y = _merged(m.matmul(m.softmax(scores, -1), vf).astype(dtype, copy=False))
    return y if outputs == 1 else (y, present_k, present_v)[:outputs]


group_query_attention, exact_group_query_attention = _twins(
    _group_query_attention,
    "group_query_attention",
    """GroupQueryAttention (onnxruntime's CPU kernel): kv_num_heads key/value heads shared by
    groups of num_heads // kv_num_heads query heads; query, key, value (batch, sequence, heads *
    size) or packed in query; batch b's new positions start at seqlens_k[b] + 1 - sequence (0 for
    a first prompt: no past and sequence == total_sequence_length), are rotated there with
    do_rotary, and are written into the cache (batch, kv heads, max(past, total), size) after
    its past up to that start; query i sees keys j <= start + i and j <= seqlens_k[b]; softcap
    (tanh) before the mask. Returns the first `outputs` of (output, present_key, present_value).""",
)


def _qattention(
    m,
    input,
    weight,
    bias,
    input_scale,
    weight_scale,
    mask_index=None,
    input_zero_point=None,
    weight_zero_point=None,
    past=None,
    *,
    num_heads,
    unidirectional=0,
    scale=0.0,
    mask_filter_value=-10000.0,
    outputs=1,
):
    columns = weight.shape[1]
    projected = matmul_integer_to_float(
        input, weight, input_scale, weight_scale, input_zero_point, weight_zero_point, bias
    )
    sizes = (columns // 3,) * 3
    return _projected_attention(
        m, projected, sizes, mask_index, past, None, num_heads, unidirectional, scale,
        mask_filter_value, outputs
    )  # fmt: skip


qattention, exact_qattention = _twins(
    _qattention,
    "qattention",
    """QAttention: Attention whose Q, K, V projection is MatMulIntegerToFloat's (the integer
    product of the quantized input and weight, exact, times input_scale * weight_scale, + bias).""",
)


def _qembed_layer_normalization(m, input_ids, *, epsilon=1e-12, outputs=1, mask=None,
                                segment_ids=None, **tables):  # fmt: skip
    """tables: `<table>_quant`, `<table>_scale`, `<table>_zero_point` for word_embedding,
    position_embedding, gamma, beta and (optional) segment_embedding, by keyword."""
    found = {}
    for table in ("word_embedding", "position_embedding", "segment_embedding", "gamma", "beta"):
        quantized = tables.get(f"{table}_quant", tables.get(table))
        if quantized is not None:
            found[table] = _dequantize(
                quantized, tables[f"{table}_scale"], tables.get(f"{table}_zero_point")
            )
    return _embed_layer_normalization(
        m, input_ids, **found, segment_ids=segment_ids, mask=mask, epsilon=epsilon,
        outputs=outputs
    )  # fmt: skip


qembed_layer_normalization, exact_qembed_layer_normalization = _twins(
    _qembed_layer_normalization,
    "qembed_layer_normalization",
    """QEmbedLayerNormalization: EmbedLayerNormalization of the tables dequantized
    ((q - zero point) * scale in float32).""",
)


# --- quantized matrix products ----------------------------------------------------------------


def _integer_matmul(a_shifted: np.ndarray, b_shifted: np.ndarray) -> np.ndarray:
    """The int32 product of integer operands (zero points already subtracted), in float64 through
    BLAS: every term is below 2**16 in magnitude, so every partial sum is an integer below 2**53
    and exact in any order (runtime_support.linalg.matmul_integer's argument)."""
    return np.matmul(a_shifted.astype(np.float64), b_shifted.astype(np.float64))


def _per_column(value, columns: int) -> np.ndarray:
    """A scale or zero point of B: a scalar, or one per column (N)."""
    value = np.asarray(value)
    return value.reshape(-1) if value.size == columns and value.size > 1 else value.reshape(())


@kernel(exact=True)
def dynamic_quantize_matmul(A, B, b_scale, b_zero_point=None, bias=None):
    """DynamicQuantizeMatMul: A quantized to uint8 as DynamicQuantizeLinear does (scale from
    A's range widened to hold 0, zero point rounded and saturated), the integer product with B,
    then * (a_scale * b_scale) + bias in float32."""
    a, a_scale, a_zero_point = dynamic_quantize_linear(A)
    return matmul_integer_to_float(a, B, a_scale, b_scale, a_zero_point, b_zero_point, bias)


@kernel(exact=True)
def matmul_integer_to_float(
    A, B, a_scale, b_scale, a_zero_point=None, b_zero_point=None, bias=None
):
    """MatMulIntegerToFloat: (A - a_zero_point) @ (B - b_zero_point), exact, as float32 times
    a_scale * b_scale (one product of the scales, then one multiplication), + bias."""
    columns = B.shape[-1]
    a = A.astype(np.int64)
    if a_zero_point is not None:
        a = a - np.asarray(a_zero_point).astype(np.int64).reshape(())
    b = B.astype(np.int64)
    if b_zero_point is not None:
        b = b - _per_column(b_zero_point, columns).astype(np.int64)
    dtype = np.asarray(a_scale).dtype
    multiplier = np.asarray(a_scale).reshape(()) * _per_column(b_scale, columns)
    y = _integer_matmul(a, b).astype(dtype) * multiplier.astype(dtype)
    if bias is not None:
        y = y + bias
    return y.astype(dtype, copy=False)


def _unpacked(packed: np.ndarray, bits: int) -> np.ndarray:
    """Unsigned `bits`-bit values of a uint8 array, the low bits first, along a new last axis."""
    shifts = np.arange(0, 8, bits, dtype=np.uint8)
    values = (packed[..., None] >> shifts) & np.uint8((1 << bits) - 1)
    return values.reshape(*packed.shape[:-1], packed.shape[-1] * (8 // bits))


def _matmul_nbits(
    m, A, B, scales, zero_points=None, g_idx=None, bias=None, *, K, N, bits=4, block_size
):
    """MatMulNBits: A (..., K) @ dequantized B^T. B is (N, blocks, block_size * bits / 8) uint8,
    values low bits first; scales (N * blocks); zero points uint8 packed like B (default
    2**(bits - 1)) or of the scales' type (the float offset); g_idx: the block of each row k."""
    blocks = -(-K // block_size)
    values = _unpacked(B.reshape(N, blocks, -1), bits)[:, :, :block_size].astype(np.float32)
    scale = scales.reshape(N, blocks).astype(np.float32)
    if zero_points is None:
        zero = np.float32(1 << (bits - 1))
        w = (values - zero) * scale[:, :, None]
    elif zero_points.dtype == np.uint8:
        zero = _unpacked(zero_points.reshape(N, -1), bits)[:, :blocks].astype(np.float32)
        w = (values - zero[:, :, None]) * scale[:, :, None]
    else:  # a float zero point: value * scale - zero_point * scale (onnxruntime's form)
        zero = zero_points.reshape(N, blocks).astype(np.float32)
        w = (values - zero[:, :, None]) * scale[:, :, None]
    w = w.reshape(N, blocks * block_size)[:, :K]
    if g_idx is not None and g_idx.size == K:
        value_of = values.reshape(N, -1)[:, :K]
        block = g_idx.astype(np.int64)
        zero_k = zero if np.ndim(zero) == 0 else np.asarray(zero)[:, block]
        w = (value_of - zero_k) * scale[:, block]
    y = m.matmul(A.astype(np.float32, copy=False), np.ascontiguousarray(w.T))
    if bias is not None:
        y = y + bias.astype(np.float32)
    return y.astype(A.dtype, copy=False)


matmul_nbits, exact_matmul_nbits = _twins(
    _matmul_nbits,
    "matmul_nbits",
    """MatMulNBits with 2- to 8-bit weights in blocks along K (see the implementation).""",
)


# The 4-bit code books of bitsandbytes' formats (what onnxruntime's MatMulBnb4 dequantizes by).
_BNB4_CODES = {
    0: (  # FP4: sign, two exponent bits, one mantissa bit, scaled to [-1, 1]
        0.0, 0.005208333333, 0.66666667, 1.0, 0.33333333, 0.5, 0.16666667, 0.25,
        -0.0, -0.005208333333, -0.66666667, -1.0, -0.33333333, -0.5, -0.16666667, -0.25,
    ),
    1: (  # NF4: the quantiles of a normal distribution, scaled to [-1, 1]
        -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
        -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
        0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
        0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0,
    ),
}  # fmt: skip


def _matmul_bnb4(m, A, B, absmax, *, K, N, block_size, quant_type, transB=1):
    """MatMulBnb4: A @ W^T with W (N, K) row-major, element j the code of its 4 bits (the high
    nibble first) times absmax[j // block_size], in the absmax's type."""
    codes = np.asarray(_BNB4_CODES[quant_type], np.float32)
    nibbles = np.stack((B >> np.uint8(4), B & np.uint8(15)), axis=-1).reshape(-1)[: N * K]
    scales = np.repeat(absmax.astype(np.float32), block_size)[: N * K]
    weights = (codes[nibbles] * scales).astype(absmax.dtype).reshape(N, K)
    y = m.matmul(A.astype(np.float32, copy=False), weights.T.astype(np.float32))
    return y.astype(A.dtype, copy=False)


matmul_bnb4, exact_matmul_bnb4 = _twins(
    _matmul_bnb4,
    "matmul_bnb4",
    """MatMulBnb4 (bitsandbytes' FP4, quant_type 0, and NF4, 1): see _matmul_bnb4.""",
)


def _int4(data: np.ndarray, bits: int, signed: bool) -> np.ndarray:
    """Unpacked `bits`-bit values of packed uint8 data along its last axis, as int32."""
    values = _unpacked(data, bits).astype(np.int32)
    if signed:
        values = np.where(values >= 1 << (bits - 1), values - (1 << bits), values)
    return values


@kernel(exact=True)
def gather_block_quantized(
    data,
    indices,
    scales,
    zero_points=None,
    *,
    gather_axis=0,
    quantize_axis=1,
    block_size=128,
    bits=4,
):
    """GatherBlockQuantized of packed uint8 data (`bits` per value, low bits first, zero point
    default 2**(bits - 1)) or of ml_dtypes' int4/uint4: gather along gather_axis, dequantize by
    blocks of block_size along quantize_axis: (value - zero_point) * scale in the scale's type."""
    if data.dtype == np.uint8:
        values = _int4(data, bits, signed=False)
        default_zero = 1 << (bits - 1)
    else:
        values = data.astype(np.int32)
        default_zero = 0
    rank = values.ndim
    gather_axis, quantize_axis = gather_axis % rank, quantize_axis % rank
    if zero_points is None:
        zero = np.full(scales.shape, default_zero, np.int32)
    elif zero_points.dtype == np.uint8:
        zero = _int4(zero_points, bits, signed=False)
        zero = zero[tuple(slice(0, n) for n in scales.shape)]
    else:
        zero = zero_points.astype(np.int32)
    repeat = lambda t: np.repeat(t, block_size, axis=quantize_axis)  # noqa: E731
    size = values.shape[quantize_axis]
    span = tuple(slice(0, size) if a == quantize_axis else slice(None) for a in range(rank))
    scale_full, zero_full = repeat(scales)[span], repeat(zero)[span]
    indices = np.where(indices < 0, indices + values.shape[gather_axis], indices)
    take = lambda t: np.take(t, indices, axis=gather_axis)  # noqa: E731
    shifted = (take(values) - take(zero_full)).astype(np.float32)
    return (shifted * take(scale_full).astype(np.float32)).astype(scales.dtype)


def _quantize(values: np.ndarray, scale, zero_point, dtype) -> np.ndarray:
    """saturate(rint(values / scale) + zero_point) to `dtype` (onnxruntime's float32 division and
    round half to even)."""
    info = np.iinfo(dtype)
    quotient = np.rint(values / np.float32(scale)) + np.float32(zero_point)
    return np.clip(quotient, info.min, info.max).astype(dtype)


def _dequantize(x, scale, zero_point) -> np.ndarray:
    zero = 0 if zero_point is None else np.asarray(zero_point).astype(np.int32)
    return (x.astype(np.int32) - zero).astype(np.float32) * np.asarray(scale, np.float32)


def _fma32(a: np.ndarray, b, c) -> np.ndarray:
    """a * b + c rounded once to float32, as a fused multiply-add: the product of float32 values
    is exact in float64 (48 significant bits) and the float64 sum is rounded to float32 (a second
    rounding only when that sum needs more than 53 bits: not for 8-bit operands and ordinary
    scales)."""
    return (a.astype(np.float64) * np.float64(b) + np.asarray(c, np.float64)).astype(np.float32)


@kernel(exact=True)
def qlinear_binary(
    A, A_scale, A_zero_point=None, B=None, B_scale=None, B_zero_point=None, C_scale=None,
    C_zero_point=None, *, op="Add"
):  # fmt: skip
    """QLinearAdd (op="Add") and QLinearMul, as onnxruntime's x86-64 kernels (MLAS, AVX2)
    compute them in float32, rounding half to even and saturating.
    Add: with rA = sa / sc, rB = sb / sc and the fixed part zc - (rA * za + rB * zb),
    fma(A, rA, fma(B, rB, fixed)); a single-element side is folded into the fixed part first
    (fixed + A * rA, two roundings). Mul: (A - za) * (B - zb) * (sa * sb / sc) + zc."""
    dtype = A.dtype
    zero = lambda z: 0 if z is None else int(np.asarray(z).reshape(()))  # noqa: E731
    za, zb, zc = zero(A_zero_point), zero(B_zero_point), zero(C_zero_point)
    sa, sb, sc = (np.float32(np.asarray(s).reshape(())) for s in (A_scale, B_scale, C_scale))
    if op == "Add":
        ratio_a, ratio_b = sa / sc, sb / sc
        fixed = np.float32(zc) - (ratio_a * np.float32(za) + ratio_b * np.float32(zb))
        a, b = A.astype(np.float32), B.astype(np.float32)
        if a.size == 1 and b.size != 1:
            fixed = fixed + a.reshape(()) * ratio_a
            value = _fma32(b, ratio_b, fixed) + np.zeros_like(a)
        elif b.size == 1:
            fixed = fixed + b.reshape(()) * ratio_b
            value = _fma32(a, ratio_a, fixed) + np.zeros_like(b)
        else:
            value = _fma32(a, ratio_a, _fma32(b, ratio_b, fixed))
    else:
        product = (A.astype(np.int32) - za) * (B.astype(np.int32) - zb)
        value = product.astype(np.float32) * (sa * sb / sc) + np.float32(zc)
    info = np.iinfo(dtype)
    return np.clip(np.rint(value), info.min, info.max).astype(dtype)


@kernel(exact=True)
def qlinear_average_pool(
    X, x_scale, x_zero_point=None, y_scale=None, y_zero_point=None, *, count_include_pad=0,
    **window
):  # fmt: skip
    """QLinearAveragePool: X dequantized ((X - zero point) * scale in float32), averaged by
    AveragePool (runtime_support.pool: taps in a fixed order, one division), then
    rint(y / y_scale + y_zero_point) saturated (onnxruntime adds the zero point before rounding)."""
    zero = 0 if x_zero_point is None else np.int32(np.asarray(x_zero_point).reshape(()))
    x = (X.astype(np.int32) - zero).astype(np.float32) * np.float32(x_scale)
    y = average_pool(x, count_include_pad=count_include_pad, **window)
    y_zero = 0 if y_zero_point is None else np.asarray(y_zero_point).reshape(())
    info = np.iinfo(X.dtype)
    value = np.rint(y / np.float32(y_scale) + np.float32(y_zero))
    return np.clip(value, info.min, info.max).astype(X.dtype)


@kernel(exact=True)
def microsoft_rotary_embedding(
    input, position_ids, cos_cache, sin_cache, *, interleaved=0, num_heads=0,
    rotary_embedding_dim=0
):  # fmt: skip
    """com.microsoft RotaryEmbedding: the default domain's rotation (rt.rotary_embedding).
    position_ids of one element is the first position (positions offset + 0..sequence-1); a 3-D
    input without num_heads has heads of twice cos_cache's width."""
    if input.ndim == 3 and not num_heads:
        num_heads = input.shape[2] // (2 * cos_cache.shape[1])
    sequence = input.shape[1] if input.ndim == 3 else input.shape[2]
    if position_ids.size == 1:
        position_ids = int(position_ids.reshape(())) + np.arange(sequence, dtype=np.int64)
    position_ids = np.broadcast_to(position_ids, (input.shape[0], sequence))
    return rotary_embedding(
        input,
        cos_cache,
        sin_cache,
        position_ids,
        interleaved=interleaved,
        num_heads=num_heads,
        rotary_embedding_dim=rotary_embedding_dim,
    )


@kernel(exact=True)
def qlinear_table(
    X_scale, X_zero_point=None, Y_scale=None, Y_zero_point=None, *, dtype, activation, alpha=0.01
):
    """The 256 results of QLinearSigmoid (activation="sigmoid") or QLinearLeakyRelu by the input's
    bits (its uint8 view), as onnxruntime builds its lookup table: dequantize in float32,
    the function (the library's exact sigmoid: the same bits everywhere), quantize (round half to
    even, saturate)."""
    dtype = np.dtype(dtype)
    bits = np.arange(256, dtype=np.uint8).view(dtype)
    zero = lambda z: np.int32(0) if z is None else np.int32(np.asarray(z).reshape(()))  # noqa: E731
    x = (bits.astype(np.int32) - zero(X_zero_point)).astype(np.float32)
    x = x * np.float32(np.asarray(X_scale).reshape(()))
    if activation == "sigmoid":
        y = exact_sigmoid(x)
    else:
        y = np.where(x >= 0, x, x * np.float32(alpha))
    info = np.iinfo(dtype)
    y_scale = np.float32(np.asarray(Y_scale).reshape(()))
    value = np.rint(y.astype(np.float32) / y_scale) + np.float32(zero(Y_zero_point))
    return np.clip(value, info.min, info.max).astype(dtype)


@kernel(exact=True)
def qlinear_lookup(X, table):
    """QLinearSigmoid, QLinearLeakyRelu: each quantized value looked up in its table
    (qlinear_table)."""
    return table[X.view(np.uint8)]


@kernel(exact=True)
def qlinear_global_average_pool(X, x_scale, x_zero_point, y_scale, y_zero_point, *,
                                channels_last=0):  # fmt: skip
    """QLinearGlobalAveragePool: the integer sum over the spatial axes (exact), as float32 times
    x_scale / (y_scale * count), requantized with y_zero_point; (the input's zero point taken out
    of the sum first)."""
    axes = tuple(range(1, X.ndim - 1)) if channels_last else tuple(range(2, X.ndim))
    count = int(np.prod([X.shape[a] for a in axes]))
    total = (X.astype(np.int64) - np.int64(x_zero_point)).sum(axis=axes, keepdims=True)
    multiplier = np.float32(x_scale) / (np.float32(y_scale) * np.float32(count))
    value = total.astype(np.float32) * multiplier
    info = np.iinfo(X.dtype)
    return np.clip(np.rint(value) + np.float32(y_zero_point), info.min, info.max).astype(X.dtype)


@kernel(exact=True)
def qlinear_concat(Y_scale, Y_zero_point, *tensors, axis):
    """QLinearConcat: each (X, scale, zero_point) triple requantized to Y's scale and zero point
    (an input already in them is copied), then concatenated along `axis`."""
    parts = []
    for x, scale, zero in zip(tensors[0::3], tensors[1::3], tensors[2::3]):
        if np.float32(scale) == np.float32(Y_scale) and np.all(zero == Y_zero_point):
            parts.append(x)
        else:
            parts.append(_quantize(_dequantize(x, scale, zero), Y_scale, Y_zero_point,
                                   Y_zero_point.dtype))  # fmt: skip
    return np.concatenate(parts, axis=axis)


@kernel(exact=True)
def qgemm(A, a_scale, a_zero_point, B, b_scale, b_zero_point, C=None, y_scale=None,
          y_zero_point=None, *, alpha=1.0, transA=0, transB=0):  # fmt: skip
    """QGemm: alpha * (A' - za) @ (B' - zb) (exact integers) * (a_scale * b_scale) + C
    (int32, dequantized with the same scale), float32; requantized when y_scale is given."""
    a = (A.T if transA else A).astype(np.int64) - np.int64(np.asarray(a_zero_point).reshape(()))
    b_matrix = B.T if transB else B
    columns = b_matrix.shape[1]
    b = b_matrix.astype(np.int64) - _per_column(b_zero_point, columns).astype(np.int64)
    accumulator = _integer_matmul(a, b)
    if C is not None:
        accumulator = accumulator + C.astype(np.float64)
    scale = (np.float32(a_scale) * _per_column(b_scale, columns).astype(np.float32)) * np.float32(
        alpha
    )
    y = accumulator.astype(np.float32) * scale.astype(np.float32)
    if y_scale is None:
        return y
    dtype = y_zero_point.dtype if y_zero_point is not None else np.dtype(np.uint8)
    return _quantize(y, y_scale, 0 if y_zero_point is None else y_zero_point, dtype)


@kernel(exact=True)
def matmul_integer16(A, B):
    """MatMulInteger16: the int32 product of 16-bit integer matrices (in int64, wrapping to int32
    as onnxruntime's int32 accumulation does; uint32 when both are unsigned)."""
    product = np.matmul(A.astype(np.int64), B.astype(np.int64))
    unsigned = A.dtype.kind == "u" and B.dtype.kind == "u"
    return product.astype(np.uint32 if unsigned else np.int32)


@kernel(exact=True)
def qlinear_where(condition, X, x_scale, x_zero_point, Y, y_scale, y_zero_point, z_scale,
                  z_zero_point):  # fmt: skip
    """QLinearWhere: X and Y requantized to Z's scale and zero point (an operand already in them
    is copied), then selected by `condition`."""
    dtype = np.asarray(z_zero_point).dtype

    def requantized(value, scale, zero):
        same = np.float32(scale) == np.float32(z_scale) and np.all(zero == z_zero_point)
        return value if same else _quantize(_dequantize(value, scale, zero), z_scale,
                                             z_zero_point, dtype)  # fmt: skip

    x = requantized(X, x_scale, x_zero_point)
    y = requantized(Y, y_scale, y_zero_point)
    return np.where(condition, x, y).astype(dtype, copy=False)


@kernel(exact=True)
def unfold_tensor(input, *, dim=-1, size, step=1):
    """UnfoldTensor (torch's Tensor.unfold): the windows of `size` elements every `step` along
    `dim`, that axis becoming the number of windows and the window a new last axis."""
    dim = dim % input.ndim
    windows = np.lib.stride_tricks.sliding_window_view(input, size, axis=dim)
    taken = windows[(slice(None),) * dim + (slice(None, None, step),)]
    return np.ascontiguousarray(taken)


@kernel(exact=True)
def nhwc_max_pool(x, **window):
    """NhwcMaxPool: MaxPool (runtime_support.pool) of channels-last input, the channels moved
    first and back."""
    channels_first = np.moveaxis(x, -1, 1)
    return np.ascontiguousarray(np.moveaxis(max_pool(channels_first, **window), 1, -1))


def _qlinear_softmax(m, X, X_scale, x_zero_point=None, y_scale=None, y_zero_point=None, *, axis,
                     opset):  # fmt: skip
    if opset < 13:  # the 2-D coercion: rows of everything from `axis` on
        axis = axis % X.ndim
        rows = X.reshape(int(np.prod(X.shape[:axis], dtype=np.int64)), -1)
    else:
        rows = np.moveaxis(X, axis, -1)
    length = rows.shape[-1]
    if rows.size == 0:
        return np.zeros_like(X)
    x_scale = np.float32(np.asarray(X_scale).reshape(()))
    # The table of exp((i - 255 + shift) * x_scale), shift keeping the sum below float's maximum.
    headroom = float(np.log(np.float32(np.finfo(np.float32).max) / np.float32(length)))
    shift = max(0.0, headroom - 5.0) / float(x_scale)
    steps = (np.arange(256, dtype=np.float64) - 255.0 + shift) * float(x_scale)
    table = m.exp(steps).astype(np.float32)
    signed = X.dtype == np.int8
    if signed:  # entry i serves the byte i - 128
        table = table[(np.arange(256) + 128) % 256]
        positions = ((np.int32(127) - rows.max(axis=-1, keepdims=True)) + rows).astype(np.uint8)
        values = table[positions]
    else:
        shifted = (255 - rows.max(axis=-1, keepdims=True).astype(np.int32)) + rows
        values = table[shifted]
    total = np.cumsum(values, axis=-1, dtype=np.float32)[..., -1:]  # in order, in float32
    scale = np.floor(np.float32(1) / np.float32(np.asarray(y_scale).reshape(())))
    zero = 0 if y_zero_point is None else int(np.asarray(y_zero_point).reshape(()))
    quantized = np.rint((values * scale) / total).astype(np.int64) + zero
    if signed:  # onnxruntime's int8 store: above 255 becomes 255 (-1 as int8), the rest wraps
        y = np.where(quantized > 255, 255, quantized).astype(np.uint8).view(np.int8)
    else:
        y = np.minimum(quantized, 255).astype(np.uint8)
    y = y.reshape(X.shape) if opset < 13 else np.moveaxis(y, -1, axis)
    return np.ascontiguousarray(y)


qlinear_softmax, exact_qlinear_softmax = _twins(
    _qlinear_softmax,
    "qlinear_softmax",
    """QLinearSoftmax as onnxruntime's CPU kernel computes it: a 256-entry float32 table of exp
    at the input's scale (its zero point unused), each row shifted so its maximum reads the
    table's last entry, the row's float32 sum in order, rint(t * floor(1 / y_scale) / sum) + zero
    point, stored as onnxruntime stores it; along `axis` from opset 13, over the 2-D coercion
    before.""",
)


@kernel(exact=True)
def crop_and_resize(X, rois, batch_indices, crop_size, *, mode="bilinear",
                    extrapolation_value=0.0):  # fmt: skip
    """CropAndResize (TensorFlow's crop_and_resize): each roi (y1, x1, y2, x2, in [0, 1] of the
    image) of image batch_indices[r] sampled on a crop_size grid, bilinearly or at the nearest
    pixel; a sample outside the image is extrapolation_value. The sample positions as TensorFlow
    computes them: y1 (H - 1) + i (y2 - y1) (H - 1) / (h - 1), or the roi's middle when h is 1.
    Every step is one IEEE operation in a fixed order (float32)."""
    height, width = (int(v) for v in np.asarray(crop_size).reshape(-1)[:2])
    _, _, image_height, image_width = X.shape
    boxes = rois.astype(np.float32)

    def positions(low, high, count, size):
        span = np.float32(size - 1)
        if count > 1:
            step = (high - low) * span / np.float32(count - 1)
            return low[:, None] * span + np.arange(count, dtype=np.float32)[None, :] * step[:, None]
        return (np.float32(0.5) * (low + high) * span)[:, None]

    ys = positions(boxes[:, 0], boxes[:, 2], height, image_height)  # (rois, height)
    xs = positions(boxes[:, 1], boxes[:, 3], width, image_width)  # (rois, width)
    images = X[np.asarray(batch_indices).astype(np.int64)]  # (rois, C, H, W)
    inside = ((ys >= 0) & (ys <= image_height - 1))[:, :, None] & (
        (xs >= 0) & (xs <= image_width - 1)
    )[:, None, :]
    rows = np.arange(len(boxes))[:, None, None]
    if mode == "nearest":
        half = np.float32(0.5)  # round half up (roundf: the positions inside are >= 0)
        yi = np.clip(np.floor(ys + half), 0, image_height - 1).astype(np.int64)
        xi = np.clip(np.floor(xs + half), 0, image_width - 1).astype(np.int64)
        samples = images[rows, :, yi[:, :, None], xi[:, None, :]]  # (rois, h, w, C)
    else:
        top = np.clip(np.floor(ys), 0, image_height - 1).astype(np.int64)
        left = np.clip(np.floor(xs), 0, image_width - 1).astype(np.int64)
        bottom = np.minimum(top + 1, image_height - 1)
        right = np.minimum(left + 1, image_width - 1)
        dy = (ys - top)[:, :, None, None].astype(np.float32)
        dx = (xs - left)[:, None, :, None].astype(np.float32)

        def pixel(y, x):
            return images[rows, :, y[:, :, None], x[:, None, :]].astype(np.float32)

        upper = pixel(top, left) + (pixel(top, right) - pixel(top, left)) * dx
        lower = pixel(bottom, left) + (pixel(bottom, right) - pixel(bottom, left)) * dx
        samples = upper + (lower - upper) * dy
    fill = np.asarray(extrapolation_value, np.float32)
    result = np.where(inside[..., None], samples, fill).astype(X.dtype)
    return np.ascontiguousarray(result.transpose(0, 3, 1, 2))


@kernel(exact=True)
def ngram_repeat_block(input_ids, scores, *, ngram_size):
    """NGramRepeatBlock: the score of every token that would repeat an n-gram already in
    input_ids (its last ngram_size - 1 ids followed by that token) set to -inf."""
    result = scores.copy()
    batch, length = input_ids.shape
    n = int(ngram_size)
    if n < 1 or length + 1 < n:
        return result
    for b in range(batch):
        ids = input_ids[b]
        tail = ids[length - n + 1 :] if n > 1 else ids[:0]
        for start in range(length - n + 1):
            if np.array_equal(ids[start : start + n - 1], tail):
                token = int(ids[start + n - 1])
                if 0 <= token < result.shape[1]:
                    result[b, token] = -np.inf
    return result


@kernel(exact=True)
def dynamic_time_warping(input):
    """DynamicTimeWarping: the cheapest monotone path through a (rows, cols) cost matrix (or
    (1, rows, cols)), as onnxruntime computes it: accumulated float32 costs column by column, a
    step from the diagonal only when strictly cheapest, else from above when strictly cheapest,
    else from the left; traced back from the last cell until a row or column index reaches 0.
    Returns the path's (row, column) indices, int32 (2, length). A Python loop over the cells:
    each depends on the one above it."""
    matrix = np.asarray(input, np.float32)
    if matrix.ndim == 3 and matrix.shape[0] == 1:
        matrix = matrix[0]
    if matrix.ndim != 2:
        raise ValueError(f"DynamicTimeWarping takes a 2-D cost matrix, got shape {input.shape}")
    rows, cols = matrix.shape
    cost = np.full((rows + 1, cols + 1), np.inf, np.float32)
    cost[0, 0] = 0
    trace = np.full((rows + 1, cols + 1), -1, np.int8)
    for j in range(1, cols + 1):
        for i in range(1, rows + 1):
            c0, c1, c2 = cost[i - 1, j - 1], cost[i - 1, j], cost[i, j - 1]
            if c0 < c1 and c0 < c2:
                best, step = c0, 0
            elif c1 < c0 and c1 < c2:
                best, step = c1, 1
            else:
                best, step = c2, 2
            cost[i, j] = best + matrix[i - 1, j - 1]
            trace[i, j] = step
    path = []
    i, j = rows, cols
    while i > 0 and j > 0:
        path.append((i - 1, j - 1))
        step = trace[i, j]
        i, j = (i - 1, j - 1) if step == 0 else (i - 1, j) if step == 1 else (i, j - 1)
    return np.array(path[::-1], np.int32).reshape(-1, 2).T.copy()


# --- DynamicQuantizeLSTM ------------------------------------------------------------------------


def _quantized_rows(a: np.ndarray) -> tuple[np.ndarray, np.float32]:
    """a dynamically quantized to uint8 as DynamicQuantizeLinear does, returned as the exact
    float32 integers (q - zero_point) and the scale."""
    q, scale, zero = dynamic_quantize_linear(a)
    return (q.astype(np.int32) - np.int32(zero)).astype(np.float32), np.float32(scale)


def _quantized_states(h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """_quantized_rows of each direction's state h[d] ([*directions, hidden, batch]) by itself,
    as onnxruntime quantizes each direction's h, in as few numpy calls as a step allows: the
    integers (q - zero_point) as float32 and the scales, shaped to broadcast against h.
    clip(rint(h / scale), -zero_point, 255 - zero_point) is saturate(rint(h / scale) +
    zero_point) - zero_point: every term is an integer float32 holds exactly."""
    axes, nothing = (-2, -1), np.float32(0)
    high = np.maximum.reduce(h, axis=axes, keepdims=True, initial=nothing)
    low = np.minimum.reduce(h, axis=axes, keepdims=True, initial=nothing)
    span = high - low  # 0 only when high == low: scale 1, as dynamic_quantize_linear
    scale = np.where(span == 0, np.float32(1), span / np.float32(255))
    zero = np.rint(np.fmin(np.fmax(nothing - low / scale, nothing), np.float32(255)))
    shifted = np.divide(h, scale)
    np.rint(shifted, out=shifted)
    # np.minimum and np.maximum: np.clip's Python wrapper costs as much as both
    np.maximum(shifted, np.negative(zero), out=shifted)
    np.minimum(shifted, np.float32(255) - zero, out=shifted)
    return shifted, scale


class _QuantizedFast(recurrent._Fast):
    """The LSTM's two products with the float operand (X for all steps at once, h at each step)
    quantized dynamically, as onnxruntime's DynamicQuantizeLSTM does, times the dequantized
    weights (their integers minus zero point, times their scales). The common case runs
    runtime_support.recurrent's loop of all directions at once, each direction's R a product of
    its own (never one block-diagonal product): each direction's h has its own scale."""

    shared_directions = False

    @staticmethod
    def matmul(a, b):
        # np.matmul, not matmul_weight's kernel: 1.49 -> 1.20 ms on common_old's 23 x 512 by
        # 512 x 4096 alone, but no gain in the layer (6.95 against 7.01 ms, one process)
        shifted, scale = _quantized_rows(a)
        return np.matmul(shifted, b) * scale

    @staticmethod
    def recurrence(R, h):
        shifted, scale = _quantized_rows(h)
        return np.matmul(R, shifted) * scale

    @staticmethod
    def step_product(R, h, out):
        shifted, scale = _quantized_states(h)
        np.matmul(R, shifted, out=out)
        out *= scale
        return out


class _QuantizedExact(recurrent._Exact):
    """_QuantizedFast with exact_matmul's products."""

    @staticmethod
    def matmul(a, b):
        shifted, scale = _quantized_rows(a)
        return exact_matmul(shifted, b) * scale

    @staticmethod
    def recurrence(R, h):
        shifted, scale = _quantized_rows(h)
        return exact_matmul(shifted.T, R.T).T * scale


def _dequantized_gates(weights, scale, zero_point) -> np.ndarray:
    """[directions, rows, 4 * hidden] integers to float32 [directions, 4 * hidden, rows] (ONNX
    LSTM's layout): (w - zero_point) * scale, the scale and zero point per direction or per
    direction and gate column. Computed once per constant weights array (_constants.cached)."""

    def make():
        shape = (weights.shape[0], 1, -1)
        shifted = weights.astype(np.int32) - np.asarray(zero_point).astype(np.int32).reshape(shape)
        values = shifted.astype(np.float32) * np.asarray(scale, np.float32).reshape(shape)
        gates = np.ascontiguousarray(values.transpose(0, 2, 1))
        # memory that can never change (a read-only view of bytes), so that what the LSTM
        # derives from these gates (its loop's weights) is kept too (_constants.cached)
        return np.frombuffer(gates.tobytes(), gates.dtype).reshape(gates.shape)

    return cached((weights,), ("dequantized gates", value_tag(scale), value_tag(zero_point)), make)


def _dynamic_quantize_lstm(
    m, X, W, R, B=None, sequence_lens=None, initial_h=None, initial_c=None, P=None, W_scale=None,
    W_zero_point=None, R_scale=None, R_zero_point=None, *, activations=("Sigmoid", "Tanh", "Tanh"),
    activation_alpha=None, activation_beta=None, clip=None, direction="forward", input_forget=0
):  # fmt: skip
    return recurrent._lstm(
        m,
        X,
        _dequantized_gates(W, W_scale, W_zero_point),
        _dequantized_gates(R, R_scale, R_zero_point),
        B,
        sequence_lens,
        initial_h,
        initial_c,
        P,
        activations,
        activation_alpha,
        activation_beta,
        clip,
        direction,
        0,
        input_forget,
    )


@kernel(exact=False, exact_twin="rt.exact_dynamic_quantize_lstm")
def dynamic_quantize_lstm(*args, **kwargs):
    """DynamicQuantizeLSTM: ONNX LSTM (runtime_support.recurrent's steps) whose weights W
    [directions, input, 4 * hidden] and R [directions, hidden, 4 * hidden] are quantized (scales
    and zero points per direction or per gate column), and whose X and, at each step, h are
    quantized dynamically to uint8 before their products (onnxruntime's CPU kernel). Returns
    (Y, Y_h, Y_c)."""
    return _dynamic_quantize_lstm(_QuantizedFast, *args, **kwargs)


@kernel(exact=True)
def exact_dynamic_quantize_lstm(*args, **kwargs):
    """dynamic_quantize_lstm with exact_matmul, exact_sigmoid and exact_tanh."""
    return _dynamic_quantize_lstm(_QuantizedExact, *args, **kwargs)


# --- AttnLSTM -------------------------------------------------------------------------------------


def _attention_sum(m: _Primitives, e: np.ndarray) -> np.ndarray:
    """The float64 sum of float32 `e` over its last axis (kept): numpy's, or exact_sum's fixed
    tree."""
    if m is EXACT:
        return exact_sum(e, axis=-1, keepdims=True, dtype=np.float64)
    return np.add.reduce(e, axis=-1, dtype=np.float64, keepdims=True)


def _attn_lstm(
    m, cell, X, W, R, B=None, sequence_lens=None, initial_h=None, initial_c=None, P=None, QW=None,
    MW=None, V=None, M=None, memory_seq_lens=None, AW=None, *,
    activations=("Sigmoid", "Tanh", "Tanh"), activation_alpha=None, activation_beta=None,
    clip=None, direction="forward", input_forget=0, outputs=3
):  # fmt: skip
    if X.dtype != np.float32:
        raise TypeError(f"AttnLSTM runs float32 only (as onnxruntime's kernel), got {X.dtype}")
    steps, batch, inputs = X.shape
    directions, rows, hidden = R.shape
    memory_steps = M.shape[1]
    attention = W.shape[2] - inputs  # the attention state's width: AW's last dim, else M's
    expected = M.shape[2] if AW is None else AW.shape[2]
    if attention != expected or rows != 4 * hidden or QW.shape[1] != hidden:
        raise ValueError(
            f"AttnLSTM: W {W.shape} must be [{directions}, {4 * hidden}, {inputs} + {expected}]"
            f", R {R.shape} [directions, 4 * hidden, hidden], QW {QW.shape} [directions, "
            f"{hidden}, attention size]"
        )
    lengths = _lengths(sequence_lens, batch, steps, "sequence_lens")
    memory_lengths = _lengths(memory_seq_lens, batch, memory_steps, "memory_seq_lens")
    if steps == 0:
        raise ValueError("AttnLSTM needs at least one time step")
    masked = np.arange(memory_steps) >= memory_lengths[:, None]  # memory past each length
    masked = masked if masked.any() else None
    uniform = (1.0 / memory_lengths)[:, None]  # the alignment of a row whose exponentials are 0
    full = bool((lengths == steps).all())
    # with B, onnxruntime adds the bias and clips in one step, min(b, x) then max(-b, x) with b
    # clip or float's largest: a NaN gate input becomes +b (the bound below); without B it clips
    # by comparisons that keep a NaN (the activations' own clip)
    gate_clip = None if B is not None else clip
    functions = recurrent._activations(
        activations, activation_alpha, activation_beta, (gate_clip, gate_clip, None),
        directions, X.dtype, cell,
    )  # fmt: skip
    if m is FAST and gate_clip is None:  # numpy's sigmoid through exp costs an errstate a call
        functions = [
            [_half_tanh_sigmoid if name.lower() == "sigmoid" else function
             for name, function in zip(activations[3 * d : 3 * d + 3] or activations, bound)]
            for d, bound in enumerate(functions)
        ]  # fmt: skip
    if B is not None:
        bound = X.dtype.type(np.finfo(X.dtype).max if clip is None else clip)
        functions = [
            [_bounded(f, bound), _bounded(g, bound), h_] for f, g, h_ in functions
        ]  # fmt: skip
    reverse = [False, True] if direction == "bidirectional" else [direction == "reverse"]
    every = np.arange(batch)
    time = np.arange(steps)[:, None]
    Y = np.zeros((steps, directions, batch, hidden), X.dtype)
    Y_h = np.empty((directions, batch, hidden), X.dtype)
    Y_c = np.empty((directions, batch, hidden), X.dtype)
    one, zero = X.dtype.type(1), X.dtype.type(0)
    # once for every step's exp and division (an errstate costs microseconds)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for d in range(directions):
            f, g, h_ = functions[d]
            # step s of row j reads X at position[s, j]: s, or counted back from its length
            position = np.where(time < lengths, lengths - 1 - time, time) if reverse[d] else None
            x = X if position is None else X[position, every]
            xw = m.matmul(x.reshape(steps * batch, inputs), W[d, :, :inputs].T)
            if B is not None:
                xw += B[d, :rows] + B[d, rows:]
            xw = xw.reshape(steps, batch, rows)
            # [attention | h] @ [W's attention columns | R]^T: the step's two products as one
            weights = cached(
                (W, R), ("attn_lstm", d, inputs), lambda d=d: _attn_weights(W[d], R[d], inputs)
            )
            keys = m.matmul(M, MW[d])  # [batch, memory steps, attention mechanism size]
            state = np.zeros((batch, attention + hidden), X.dtype)  # [attention | h]
            if initial_h is not None:
                state[:, attention:] = initial_h[d]
            c = np.zeros((batch, hidden), X.dtype) if initial_c is None else initial_c[d].copy()
            peepholes = None if P is None else np.split(P[d], 3)  # i, o, f
            out = np.zeros((steps, batch, hidden), X.dtype)
            for s in range(int(lengths.max())):
                gates = m.matmul(state, weights)
                gates += xw[s]
                i, o, forget, candidate = (
                    gates[:, k * hidden : (k + 1) * hidden] for k in range(4)
                )
                if peepholes is None and not input_forget:
                    f(gates[:, : 3 * hidden], gates[:, : 3 * hidden])
                else:
                    if peepholes is not None:
                        i += peepholes[0] * c
                    f(i, i)
                    if input_forget:
                        np.subtract(one, i, out=forget)
                    else:
                        if peepholes is not None:
                            forget += peepholes[2] * c
                        f(forget, forget)
                g(candidate, candidate)
                new_c = c * forget
                new_c += i * candidate
                if peepholes is not None or input_forget:
                    if peepholes is not None:
                        o += peepholes[1] * new_c
                    f(o, o)
                h = h_(new_c, np.empty_like(new_c))
                h *= o
                if full:
                    c = new_c
                else:  # a finished row keeps its cell state; its output (and next query) is 0
                    active = (s < lengths)[:, None]
                    c = np.where(active, new_c, c)
                    h = np.where(active, h, zero)
                out[s] = h
                # Bahdanau attention: scores v . tanh(keys + h QW) over the row's memory
                query = m.matmul(h, QW[d])
                scores = m.matmul(m.tanh(keys + query[:, None, :]), V[d])
                powers = m.exp(scores)  # no maximum taken out, as onnxruntime's kernel
                if masked is not None:
                    powers[masked] = zero
                total = _attention_sum(m, powers)
                alignment = (powers / total).astype(X.dtype)
                if not total.all():
                    alignment = np.where(total == 0, uniform, alignment).astype(X.dtype)
                    if masked is not None:
                        alignment[masked] = zero
                context = m.matmul(alignment[:, None, :], M)[:, 0]
                if AW is None:
                    state[:, :attention] = context
                else:
                    state[:, :attention] = m.matmul(np.concatenate([h, context], axis=1), AW[d])
                state[:, attention:] = h
            Y_h[d] = out[lengths - 1, every]
            Y_c[d] = c
            Y[:, d] = out if position is None else out[position, every]
            if position is not None and not full:
                Y[:, d][time >= lengths] = zero
    results = (Y, Y_h, Y_c)
    if m is EXACT:
        results = tuple(recurrent._default_nans(a) for a in results)
    return results if outputs == 3 else results[:outputs]


def _lengths(values, batch: int, steps: int, name: str) -> np.ndarray:
    """Each row's length as int64: `values` (an optional lengths input), checked to lie in [1,
    steps], or `steps` for every row."""
    if values is None:
        return np.full(batch, steps, np.int64)
    lengths = values.astype(np.int64)
    if lengths.size and (lengths.min() < 1 or lengths.max() > steps):
        raise ValueError(f"{name} must lie in [1, {steps}], got {lengths.tolist()}")
    return lengths


def _bounded(function, bound):
    """function(x, out) of x first bounded as onnxruntime's biased clip bounds it: fmin(x, b)
    then fmax(., -b), so that a NaN becomes b."""

    def bounded(x, out):
        np.fmin(x, bound, out=out)
        np.fmax(out, -bound, out=out)
        return function(out, out)

    return bounded


def _half_tanh_sigmoid(x, out):
    """The fast variant's sigmoid, 0.5 * tanh(x / 2) + 0.5 (runtime_support.recurrent's common
    case writes it so too)."""
    np.multiply(x, x.dtype.type(0.5), out=out)
    np.tanh(out, out=out)
    out *= out.dtype.type(0.5)
    out += out.dtype.type(0.5)
    return out


def _attn_weights(W: np.ndarray, R: np.ndarray, inputs: int) -> np.ndarray:
    """[W's attention columns | R]^T, [attention + hidden, 4 * hidden]."""
    return np.ascontiguousarray(np.concatenate([W[:, inputs:], R], axis=1).T)


@kernel(exact=False, exact_twin="rt.exact_attn_lstm")
def attn_lstm(*args, **kwargs):
    """AttnLSTM (com.microsoft): an LSTM whose input at step t is [X_t | A_{t-1}], A the attention
    state (0 before the first step); after each step, Bahdanau attention over the memory M:
    keys = M MW, scores_j = V . tanh(keys_j + H_t QW) for the row's first memory_seq_lens
    positions, alignment = exp(scores) / sum (float64 sum, no maximum subtracted; all 0: uniform),
    context = alignment M, and A_t = context, or [H_t | context] AW with AW. A finished row
    (sequence_lens) outputs 0 and keeps its cell state. Gates, activations (onnxruntime's alpha
    and beta defaults, given explicitly by the compiler), clip, peepholes and input_forget as
    runtime_support.recurrent's LSTM, except that with B every gate input is bounded by fmin and
    fmax (clip, or float's largest), so that a NaN becomes the bound, as onnxruntime's biased
    clip makes it. float32 only. Returns (Y, Y_h, Y_c)[:outputs]."""
    X, W, R = args[:3]
    work = X.shape[0] * X.shape[1] * W.shape[0] * W.shape[1] * (W.shape[2] + R.shape[2])
    with blas_threads_for(work):
        return _attn_lstm(FAST, recurrent._Fast, *args, **kwargs)


@kernel(exact=True)
def exact_attn_lstm(*args, **kwargs):
    """attn_lstm's steps with exact_matmul, exact_tanh, exact_sigmoid, exact_exp and exact_sum."""
    return _attn_lstm(EXACT, recurrent._Exact, *args, **kwargs)


# --- hashing ----------------------------------------------------------------------------------


def _rotl32(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _fmix32(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> np.uint32(16))
    h = h * np.uint32(0x85EBCA6B)
    h = h ^ (h >> np.uint32(13))
    h = h * np.uint32(0xC2B2AE35)
    return h ^ (h >> np.uint32(16))


def _murmur_words(words: np.ndarray, length: int, seed: int) -> np.ndarray:
    """MurmurHash3_x86_32 of each row of little-endian uint32 words (`length` bytes per row)."""
    c1, c2 = np.uint32(0xCC9E2D51), np.uint32(0x1B873593)
    h = np.full(words.shape[0], seed, np.uint32)
    with np.errstate(over="ignore"):
        for i in range(words.shape[1]):
            k = _rotl32(words[:, i] * c1, 15) * c2
            h = _rotl32(h ^ k, 13) * np.uint32(5) + np.uint32(0xE6546B64)
        h = h ^ np.uint32(length)
        return _fmix32(h)


@kernel(exact=True)
def murmur_hash3(X, *, seed=0, positive=1):
    """MurmurHash3 (x86, 32 bits) of each element's little-endian bytes (4 or 8; strings: their
    UTF-8 bytes), as uint32, or int32 with positive=0."""
    if X.dtype.kind in "OUS":
        flat = [str(s).encode("utf-8") for s in X.reshape(-1)]
        hashed = np.array([_murmur_bytes(b, seed) for b in flat], np.uint32).reshape(X.shape)
    else:
        data = np.ascontiguousarray(X).astype(X.dtype.newbyteorder("<"), copy=False)
        words = data.reshape(-1).view(np.uint32).reshape(data.size, -1)
        hashed = _murmur_words(words, X.dtype.itemsize, seed).reshape(X.shape)
    return hashed if positive else hashed.view(np.int32)


def _murmur_bytes(data: bytes, seed: int) -> int:
    """MurmurHash3_x86_32 of a byte string (the tail of 1 to 3 bytes mixed in at the end)."""
    body = len(data) // 4 * 4
    words = np.frombuffer(data[:body], "<u4").reshape(1, -1)
    c1, c2 = np.uint32(0xCC9E2D51), np.uint32(0x1B873593)
    h = np.array([seed], np.uint32)
    with np.errstate(over="ignore"):
        for i in range(words.shape[1]):
            k = _rotl32(words[:, i] * c1, 15) * c2
            h = _rotl32(h ^ k, 13) * np.uint32(5) + np.uint32(0xE6546B64)
        tail = data[body:]
        if tail:
            k = np.array([int.from_bytes(tail, "little")], np.uint32)
            h = h ^ (_rotl32(k * c1, 15) * c2)
        h = h ^ np.uint32(len(data))
        return int(_fmix32(h)[0])


# --- the generation loops: GreedySearch, BeamSearch, Sampling -------------------------------------
# onnxruntime's CPU implementation is the definition (docs/com-microsoft.md "Generation"). The
# subgraphs are the node's compiled to nested functions. A GPT-style decoder (model_type 0):
# decoder(input_ids, position_ids, attention_mask, past_0, ...) -> (logits, present_0, ...), past
# and present (2, batch, heads, length, head size). An encoder-decoder (model_type 1, T5 style;
# 2, Whisper): see _EncoderDecoderSteps. The loops differ only in where a step's logits come
# from (_GptSteps, _EncoderDecoderSteps).


def _scalar_input(value, default, dtype):
    """An optional one-element input (max_length, num_beams, ...) as a Python number."""
    if value is None:
        return default
    return dtype(np.asarray(value).reshape(-1)[0])


def _max_length(max_length, length: int) -> int:
    limit = _scalar_input(max_length, None, int)
    if limit is None or limit <= length:
        raise ValueError(f"max_length ({limit}) must be larger than the input's length ({length})")
    return limit


def _lowest(dtype) -> np.generic:
    """What onnxruntime writes over a blocked token's score: the type's lowest finite value."""
    return np.finfo(dtype).min


@dataclass
class _LogitsProcessors:
    """onnxruntime's logits processors, in its order: repetition penalty, no-repeat n-gram, vocab
    mask, prefix vocab mask (first step only), min length, temperature. `sequences` holds each
    row's tokens so far (batch * beams rows, `length` columns)."""

    eos_token_id: int
    min_length: int = 0
    repetition_penalty: float = 1.0
    no_repeat_ngram_size: int = 0
    vocab_mask: np.ndarray | None = None
    prefix_vocab_mask: np.ndarray | None = None
    temperature: float = 1.0
    beams: int = 1

    def __call__(self, scores: np.ndarray, sequences: np.ndarray, step: int) -> np.ndarray:
        rows, length = sequences.shape
        lowest = _lowest(scores.dtype)
        if self.repetition_penalty != 1.0:
            penalty = scores.dtype.type(self.repetition_penalty)
            for row in range(rows):
                tokens = np.unique(sequences[row])
                seen = scores[row, tokens]
                scores[row, tokens] = np.where(seen < 0, seen * penalty, seen / penalty)
        n = self.no_repeat_ngram_size
        if 0 < n <= length:
            for row in range(rows):
                ids = sequences[row]
                tail = ids[length - n + 1 :]
                blocked = [
                    int(ids[start + n - 1])
                    for start in range(length - n + 1)
                    if n == 1 or np.array_equal(ids[start : start + n - 1], tail)
                ]
                scores[row, blocked] = lowest
        if self.vocab_mask is not None:
            scores[:, self.vocab_mask.reshape(-1) == 0] = lowest
        if self.prefix_vocab_mask is not None and step == 1:
            blocked = np.repeat(self.prefix_vocab_mask == 0, self.beams, axis=0)
            scores[blocked] = lowest
        if self.min_length > 0 and length < self.min_length:
            scores[:, self.eos_token_id] = lowest
        if self.temperature > 0 and self.temperature != 1.0:
            scores /= scores.dtype.type(self.temperature)
        return scores


def _gpt_inputs(input_ids, attention_mask, pad_token_id: int, beams: int):
    """The first step's (input_ids, position_ids, attention_mask), each row repeated `beams`
    times, and the positions of the next tokens: as onnxruntime's CreateGptInputs, a pad token
    has mask 0 and position 0, the others count 0, 1, ... (the given attention_mask, when there
    is one, is the decoder's as given, positions still counted over the non-pad tokens)."""
    ids = np.asarray(input_ids, np.int32)
    real = ids != pad_token_id
    positions = np.where(real, np.cumsum(real, axis=1) - 1, 0).astype(np.int32)
    mask = real.astype(np.int32) if attention_mask is None else np.asarray(attention_mask, np.int32)
    following = real.sum(axis=1).astype(np.int32)
    expand = lambda a: np.repeat(a, beams, axis=0)  # noqa: E731
    return expand(ids), expand(positions), expand(mask), expand(following)


def _empty_past(layers: int, rows: int, heads: int, head_size: int, dtype) -> list[np.ndarray]:
    return [np.zeros((2, rows, heads, 0, head_size), dtype) for _ in range(layers)]


class _GptSteps:
    """A GPT-style decoder's steps, rows already repeated per beam: `prompt` is the sequences'
    start; `logits(step)` runs the decoder (init_decoder at the first step when there is one) and
    returns the last position's logits; `advance(tokens, rows)` feeds each row's next token, the
    presents of `rows` (the rows each new row continues; None: each its own) as the next past."""

    def __init__(self, decoder, input_ids, attention_mask, beams: int, *, pad_token_id: int,
                 layers: int, heads: int, head_size: int, dtype: str = "float32",
                 init_decoder=None):  # fmt: skip
        self.decoder, self.init_decoder = decoder, init_decoder
        inputs = _gpt_inputs(input_ids, attention_mask, pad_token_id, beams)
        self.ids, self.positions, self.mask, self.following = inputs
        self.prompt = self.ids
        self.past = _empty_past(layers, len(self.ids), heads, head_size, np.dtype(dtype))
        self.present: list = []

    def logits(self, step: int) -> np.ndarray:
        run = self.init_decoder if step == 1 and self.init_decoder is not None else self.decoder
        logits, *self.present = run(self.ids, self.positions, self.mask, *self.past)
        return logits[:, -1, :]

    def advance(self, tokens: np.ndarray, rows: np.ndarray | None = None) -> None:
        self.ids = tokens[:, None]
        self.positions = self.following[:, None].copy()
        self.following = self.following + 1
        self.mask = np.concatenate([self.mask, np.ones((len(tokens), 1), np.int32)], axis=1)
        if rows is None:
            self.past = self.present
        else:
            self.past = [np.ascontiguousarray(p[:, rows]) for p in self.present]


def _encoder_mask(ids: np.ndarray, pad_token_id: int) -> np.ndarray:
    """onnxruntime's encoder attention mask when the node has none: 0 for the pad tokens before a
    row's first other token (left padding), 1 from there on (a pad token later, T5's tokenizer's
    end, is attended)."""
    return np.cumsum(ids != pad_token_id, axis=1).astype(bool).astype(np.int32)


class _EncoderDecoderSteps:
    """An encoder-decoder's steps (model_type 1, onnxruntime's T5 form), the same interface as
    _GptSteps. The encoder runs once on the batch's rows: encoder(encoder_input_ids,
    encoder_attention_mask[, decoder_input_ids]). With decoder_input_ids (the "encoder and
    decoder init" form: `init` True) it is every row's decoder_start_token_id and the encoder
    returns (logits, encoder_hidden_states, present_key_self_0, present_value_self_0, ...,
    present_key_cross_0, present_value_cross_0, ...): its logits are the first step's, its self
    presents the first past. Without, it returns the cross keys and values only and the first
    step is the decoder's, on the start token with an empty self past. Every output is repeated
    per beam (row b's beams are rows b * beams ...). Each step then runs decoder(input_ids,
    encoder_attention_mask, [encoder_hidden_states,] past_key_self_0, past_value_self_0, ...,
    past_key_cross_0, past_value_cross_0, ...) -> (logits, present_key_self_0, ...), past and
    present (batch, heads, length, head size); the cross keys and values stay as the encoder
    gave them. The sequences start with the start token.

    Whisper's form (model_type 2, `whisper` True): the encoder takes (encoder_input_ids: audio
    features, decoder_input_ids: the prompt, `prompt` or every row's start token) and returns
    the init form's outputs, the self presents of the whole prompt; no attention mask anywhere
    (the decoder's inputs are input_ids[, encoder_hidden_states], the pasts); the sequences
    start with the prompt."""

    def __init__(self, encoder, decoder, input_ids, attention_mask, beams: int, *,
                 pad_token_id: int, decoder_start_token_id: int, layers: int, heads: int,
                 head_size: int, dtype: str = "float32", init: bool = True,
                 hidden_states: bool = False, whisper: bool = False,
                 prompt=None):  # fmt: skip
        self.decoder, self.hidden_states = decoder, hidden_states
        expand = lambda a: np.repeat(a, beams, axis=0)  # noqa: E731
        rows = len(input_ids)
        if prompt is None:
            start = np.full((rows, 1), decoder_start_token_id, np.int32)
        else:
            start = np.asarray(prompt, np.int32)
        self.mask = None
        if whisper:
            encoder_inputs = (input_ids, start)
        else:
            ids = np.asarray(input_ids, np.int32)
            if attention_mask is None:
                mask = _encoder_mask(ids, pad_token_id)
            else:
                mask = np.asarray(attention_mask, np.int32)
            self.mask = expand(mask)
            encoder_inputs = (ids, mask, start)[: 3 if init else 2]
        self.prompt = expand(start)
        self.ids = self.prompt[:, -1:]
        self.hidden = None
        self.first = None
        if init:
            logits, hidden, *presents = encoder(*encoder_inputs)
            self.first = expand(logits)[:, -1, :]
            if hidden_states:
                self.hidden = expand(hidden)
            self.present = [expand(p) for p in presents[: 2 * layers]]
            self.cross = [expand(p) for p in presents[2 * layers :]]
        else:
            self.cross = [expand(p) for p in encoder(*encoder_inputs)]
            empty = (len(self.ids), heads, 0, head_size)
            self.present = [np.zeros(empty, np.dtype(dtype)) for _ in range(2 * layers)]
        self.past = self.present

    def logits(self, step: int) -> np.ndarray:
        if step == 1 and self.first is not None:
            return self.first
        feeds = [self.ids] + ([] if self.mask is None else [self.mask])
        feeds += [self.hidden] if self.hidden_states else []
        logits, *self.present = self.decoder(*feeds, *self.past, *self.cross)
        return logits[:, -1, :]

    def advance(self, tokens: np.ndarray, rows: np.ndarray | None = None) -> None:
        self.ids = tokens[:, None]
        if rows is None:
            self.past = self.present
        else:
            self.past = [np.ascontiguousarray(p[rows]) for p in self.present]


def _one_row_loop(
    decoder,
    input_ids,
    max_length,
    processors: "_LogitsProcessors",
    choose,
    attention_mask,
    *,
    pad_token_id: int,
    layers: int,
    heads: int,
    head_size: int,
    dtype: str = "float32",
    init_decoder=None,
):
    """The loop of GreedySearch and Sampling (one row per batch entry): each step runs the
    decoder, takes the last position's logits through the logits processors and `choose`s each
    row's next token; a row that produced eos_token_id is done: it gets pad_token_id for that
    step and every later one. Stops at max_length or when every row is done (onnxruntime leaves
    the rest of its output uninitialized then; here it is pad_token_id). Returns sequences int32
    (batch, max_length), the prompt first."""
    model = _GptSteps(decoder, input_ids, attention_mask, 1, pad_token_id=pad_token_id,
                      layers=layers, heads=heads, head_size=head_size, dtype=dtype,
                      init_decoder=init_decoder)  # fmt: skip
    batch, length = model.prompt.shape
    limit = _max_length(max_length, length)
    sequences = np.full((batch, limit), pad_token_id, np.int32)
    sequences[:, :length] = model.prompt
    done = np.zeros(batch, bool)
    step = 0
    while length < limit:
        step += 1
        scores = np.array(model.logits(step), copy=True)
        scores = processors(scores, sequences[:, :length], step)
        tokens = choose(scores).astype(np.int32)
        done |= tokens == processors.eos_token_id
        tokens[done] = pad_token_id
        sequences[:, length] = tokens
        length += 1
        if done.all():
            break
        model.advance(tokens)
    return sequences


def _processors(eos_token_id, min_length, repetition_penalty, no_repeat_ngram_size, vocab_mask,
                prefix_vocab_mask, **options) -> "_LogitsProcessors":  # fmt: skip
    return _LogitsProcessors(
        eos_token_id,
        _scalar_input(min_length, 0, int),
        _scalar_input(repetition_penalty, 1.0, float),
        no_repeat_ngram_size,
        None if vocab_mask is None else np.asarray(vocab_mask),
        None if prefix_vocab_mask is None else np.asarray(prefix_vocab_mask),
        **options,
    )


def _greedy_search(
    P: _Primitives,
    decoder,
    input_ids,
    max_length,
    min_length=None,
    repetition_penalty=None,
    vocab_mask=None,
    prefix_vocab_mask=None,
    attention_mask=None,
    *,
    eos_token_id: int,
    pad_token_id: int,
    no_repeat_ngram_size: int = 0,
    init_decoder=None,
    **geometry,
):
    """GreedySearch: the one-row loop (_one_row_loop) choosing each row's first largest score.
    Only comparisons and the processors' IEEE steps: exact as it is."""
    del P
    processors = _processors(eos_token_id, min_length, repetition_penalty, no_repeat_ngram_size,
                             vocab_mask, prefix_vocab_mask)  # fmt: skip
    return _one_row_loop(
        decoder,
        input_ids,
        max_length,
        processors,
        lambda scores: np.argmax(scores, axis=1),
        attention_mask,
        pad_token_id=pad_token_id,
        init_decoder=init_decoder,
        **geometry,
    )


_MINSTD_MODULUS = 2**31 - 1


class _MinstdRand0:
    """std::default_random_engine of libstdc++ (minstd_rand0: x <- 16807 x mod 2**31 - 1), the
    generator onnxruntime's Sampling draws from, and std::uniform_real_distribution<double>(0, 1)
    over it (generate_canonical: two draws, ((g1 - 1) + (g2 - 1) r) / r**2 in double with
    r = 2**31 - 2, below 1)."""

    def __init__(self, seed: int):
        self.state = seed % _MINSTD_MODULUS or 1

    def _next(self) -> int:
        self.state = self.state * 16807 % _MINSTD_MODULUS
        return self.state

    def uniform(self) -> float:
        r = float(_MINSTD_MODULUS - 1)
        first, second = self._next(), self._next()
        u = (float(first - 1) + float(second - 1) * r) / (r * r)
        return u if u < 1.0 else float(np.nextafter(1.0, 0.0))


def _sample_tokens(P: _Primitives, scores, generator, top_p, filter_value, min_tokens_to_keep):
    """onnxruntime's top-p sampling of each row: the row's scores sorted ascending, their float32
    softmax accumulated in float32 from the smallest; the tokens whose running sum is at most
    1 - top_p (all but the last min_tokens_to_keep) get filter_value; then its Multinomial: exp
    of (score - the largest finite score) in float64, accumulated, and the first token whose
    running sum passes uniform * total (one uniform draw per row, rows in order)."""
    rows, vocab = scores.shape
    threshold = np.float32(1) - np.float32(top_p)
    tokens = np.empty(rows, np.int64)
    for row in range(rows):
        order = np.argsort(scores[row], kind="stable")
        running = np.cumsum(P.softmax(scores[row][order], -1), dtype=np.float32)
        last = vocab - int(min_tokens_to_keep)
        blocked = order[: max(last, 1)][running[: max(last, 1)] <= threshold]
        scores[row, blocked] = np.float32(filter_value)
        values = scores[row].astype(np.float64)
        finite = np.isfinite(values)
        largest = values[finite].max() if finite.any() else np.finfo(np.float32).min
        totals = np.cumsum(np.where(finite, P.exp(values - largest), 0.0))
        target = generator.uniform() * totals[-1]
        tokens[row] = min(int(np.searchsorted(totals, target, side="right")), vocab - 1)
    return tokens


def _sampling(
    P: _Primitives,
    decoder,
    input_ids,
    max_length,
    min_length=None,
    repetition_penalty=None,
    vocab_mask=None,
    prefix_vocab_mask=None,
    attention_mask=None,
    seed=None,
    *,
    eos_token_id: int,
    pad_token_id: int,
    no_repeat_ngram_size: int = 0,
    temperature: float = 1.0,
    top_p: float = 0.0,
    filter_value: float = -1e20,
    min_tokens_to_keep: int = 0,
    init_decoder=None,
    **geometry,
):
    """Sampling (custom=0): the one-row loop whose processors end with the temperature, each
    row's token drawn by _sample_tokens from onnxruntime's own generator seeded with `seed`, 0
    when absent (as onnxruntime's: the same draws; minstd_rand0 takes seed 0 as 1)."""
    generator = _MinstdRand0(_scalar_input(seed, 0, int))
    processors = _processors(eos_token_id, min_length, repetition_penalty, no_repeat_ngram_size,
                             vocab_mask, prefix_vocab_mask, temperature=temperature)  # fmt: skip
    return _one_row_loop(
        decoder,
        input_ids,
        max_length,
        processors,
        lambda scores: _sample_tokens(
            P, scores, generator, top_p, filter_value, min_tokens_to_keep
        ),
        attention_mask,
        pad_token_id=pad_token_id,
        init_decoder=init_decoder,
        **geometry,
    )


@dataclass
class _Hypotheses:
    """One batch entry's finished beams, at most `beams` of them, each scored sum of log
    probabilities / length ** length_penalty (float32, as onnxruntime's BeamHypotheses)."""

    P: _Primitives
    beams: int
    length_penalty: np.float32
    early_stopping: bool
    found: list = dataclasses.field(default_factory=list)  # (score, tokens), best first

    def _score(self, total: np.float32, length: int) -> np.float32:
        scale = self.P.power(np.float32(length), self.length_penalty)
        return np.float32(np.float32(total) / np.float32(scale))

    def add(self, tokens: np.ndarray, total: np.float32) -> None:
        score = self._score(total, len(tokens))
        if len(self.found) < self.beams or score > self.found[-1][0]:
            at = next((i for i, (s, _) in enumerate(self.found) if score > s), len(self.found))
            self.found.insert(at, (score, tokens.copy()))
            del self.found[self.beams :]

    def done(self, best: np.float32, length: int) -> bool:
        if len(self.found) < self.beams:
            return False
        return self.early_stopping or self.found[-1][0] >= self._score(best, length)


def _beam_search(
    P: _Primitives,
    decoder,
    input_ids,
    max_length,
    min_length=None,
    num_beams=None,
    num_return_sequences=None,
    length_penalty=None,
    repetition_penalty=None,
    vocab_mask=None,
    prefix_vocab_mask=None,
    attention_mask=None,
    decoder_input_ids=None,
    *,
    eos_token_id: int,
    pad_token_id: int,
    layers: int,
    heads: int,
    head_size: int,
    dtype: str = "float32",
    no_repeat_ngram_size: int = 0,
    early_stopping: int = 0,
    init_decoder=None,
    outputs: int = 1,
    encoder=None,
    decoder_start_token_id: int = -1,
    init: bool = True,
    hidden_states: bool = False,
    whisper: bool = False,
):
    """BeamSearch (and WhisperBeamSearch): num_beams rows per batch entry (the first scored 0,
    the others -1e9 so that the first step expands one); each step the last position's logits
    -> log_softmax -> the logits processors -> + the row's score; of the batch entry's beams *
    vocab candidates the 2 beams best (ties: the lower index) are taken in order: an
    eos_token_id among the first `beams` finishes that row's sequence (its hypothesis, without the eos), the others continue
    until `beams` rows are filled. An entry is done when it has `beams` hypotheses and (with
    early_stopping) always, or else when its worst is at least the best candidate's score / the
    current length ** length_penalty. At max_length (or when every entry is done) the open beams
    become hypotheses; the num_return_sequences best are returned, padded with pad_token_id,
    their scores, and (outputs=3) every step's candidate scores (batch, beams, vocab) stacked,
    zeros for the steps an early stop leaves out. With an `encoder` (model_type 1) the steps
    are _EncoderDecoderSteps' and the sequences start with decoder_start_token_id; with
    `whisper` (model_type 2, WhisperBeamSearch) with decoder_input_ids, the prompt."""
    beams = _scalar_input(num_beams, 1, int)
    returned = _scalar_input(num_return_sequences, 1, int)
    if not 1 <= returned <= beams:
        raise ValueError(f"num_return_sequences ({returned}) must be in [1, num_beams={beams}]")
    penalty = np.float32(_scalar_input(length_penalty, 1.0, float))
    geometry = dict(pad_token_id=pad_token_id, layers=layers, heads=heads, head_size=head_size,
                    dtype=dtype)  # fmt: skip
    if encoder is None:
        model: _GptSteps | _EncoderDecoderSteps = _GptSteps(
            decoder, input_ids, attention_mask, beams, init_decoder=init_decoder, **geometry
        )
    else:
        model = _EncoderDecoderSteps(encoder, decoder, input_ids, attention_mask, beams,
                                     decoder_start_token_id=decoder_start_token_id, init=init,
                                     hidden_states=hidden_states, whisper=whisper,
                                     prompt=decoder_input_ids, **geometry)  # fmt: skip
    rows, length = model.prompt.shape
    ids_length = length
    batch = rows // beams
    limit = _max_length(max_length, length)
    if encoder is not None and limit < length + 2:
        raise ValueError(
            f"max_length ({limit}) must be at least {length + 2} with an encoder and decoder "
            f"(the start of {length} tokens + 2): onnxruntime's loop skips the encoder's step "
            f"below, and what it computes then is not followed"
        )
    sequences = np.full((rows, limit), pad_token_id, np.int32)
    sequences[:, :length] = model.prompt
    processors = _processors(eos_token_id, min_length, repetition_penalty, no_repeat_ngram_size,
                             vocab_mask, prefix_vocab_mask, beams=beams)  # fmt: skip
    scores_of_rows = np.zeros((batch, beams), np.float32)
    scores_of_rows[:, 1:] = np.float32(-1e9)
    scores_of_rows = scores_of_rows.reshape(-1)
    hypotheses = [_Hypotheses(P, beams, penalty, bool(early_stopping)) for _ in range(batch)]
    done = np.zeros(batch, bool)
    step, steps = 0, []
    while length < limit:
        step += 1
        logits = model.logits(step)
        vocab = logits.shape[-1]
        scores = np.array(P.log_softmax(np.ascontiguousarray(logits)), copy=True)
        scores = processors(scores, sequences[:, :length], step)
        scores += scores_of_rows[:, None]
        steps.append(scores.copy())
        flat = scores.reshape(batch, beams * vocab)
        order = np.argsort(-flat, axis=1, kind="stable")[:, : 2 * beams]
        best = np.take_along_axis(flat, order, axis=1)
        next_scores = np.zeros(rows, np.float32)
        next_tokens = np.full(rows, pad_token_id, np.int32)
        # a done entry's rows: score 0, pad_token_id, and the past of row 0 (the first entry's
        # first beam, as onnxruntime's scorer leaves their beam indices), which shows in the
        # scores output of the steps after it is done
        next_rows = np.zeros(rows, np.int64)
        for b in range(batch):
            if done[b]:
                continue
            filled = 0
            for j in range(2 * beams):
                token, row = int(order[b, j] % vocab), b * beams + int(order[b, j] // vocab)
                if token == eos_token_id:
                    if j < beams:
                        hypotheses[b].add(sequences[row, :length], best[b, j])
                else:
                    at = b * beams + filled
                    next_scores[at], next_tokens[at], next_rows[at] = best[b, j], token, row
                    filled += 1
                if filled == beams:
                    break
            done[b] = hypotheses[b].done(best[b].max(), length)
        sequences = sequences[next_rows]
        sequences[:, length] = next_tokens
        length += 1
        scores_of_rows = next_scores
        if done.all():
            break
        model.advance(next_tokens, next_rows)
    result = np.full((batch, returned, limit), pad_token_id, np.int32)
    result_scores = np.zeros((batch, returned), np.float32)
    for b in range(batch):
        if not done[b]:
            for row in range(b * beams, (b + 1) * beams):
                hypotheses[b].add(sequences[row, :length], scores_of_rows[row])
        for k, (score, tokens) in enumerate(hypotheses[b].found[:returned]):
            result[b, k, : len(tokens)] = tokens
            result_scores[b, k] = score
    if outputs > 2:  # scores: every step's (batch, beams, vocab); zeros after an early stop
        everything = np.zeros((limit - ids_length, batch, beams, vocab), np.float32)
        everything[: len(steps)] = np.stack(steps).reshape(len(steps), batch, beams, vocab)
        return result, result_scores, everything
    return (result, result_scores)[:outputs] if outputs > 1 else result


greedy_search, exact_greedy_search = _twins(
    _greedy_search, "greedy_search", _greedy_search.__doc__ or ""
)
beam_search, exact_beam_search = _twins(_beam_search, "beam_search", _beam_search.__doc__ or "")
# (not `sampling`: runtime_support.sampling is the module of Resize and GridSample)
top_p_sampling, exact_top_p_sampling = _twins(_sampling, "top_p_sampling", _sampling.__doc__ or "")


# --- the small ones: MaxpoolWithMask, WordConvEmbedding, BifurcationDetector, Tokenizer ----------


@kernel(exact=True)
def maxpool_with_mask(X, M, *, kernel_shape, strides, pads):
    """MaxpoolWithMask as onnxruntime's CPU kernel computes it (1 to 3 spatial axes): a window
    starts at the type's lowest value and reads its elements in row order; along the innermost
    axis the scan stops at the first element whose mask is 0, except the channel's very first
    element (2-D and 3-D), and goes on with the next row. Channel c reads the mask at flat offset
    (c * spatial size) mod (the mask's batch * channels), as the kernel does (a mask of one
    channel: the same mask for every channel). Returns float32 windows."""
    X = np.asarray(X)
    spatial = X.shape[2:]
    rank = len(spatial)
    size = int(np.prod(spatial))
    channels = X.shape[0] * X.shape[1]
    flat_mask = np.asarray(M, np.int32).reshape(-1)
    total = int(np.prod(np.asarray(M).shape[:2]))
    offsets = (np.arange(channels) * size) % total
    masks = flat_mask[offsets[:, None] + np.arange(size)] != 0
    if rank > 1:
        masks[:, 0] = True  # the kernel's `input_index > 0`
    masks = masks.reshape((channels,) + spatial)
    values = X.reshape((channels,) + spatial)
    out_shape = [
        (spatial[i] + pads[i] + pads[i + rank] - kernel_shape[i]) // strides[i] + 1
        for i in range(rank)
    ]
    lowest = np.finfo(X.dtype).min
    result = np.empty((channels, *out_shape), X.dtype)
    for position in np.ndindex(*out_shape):
        window = []
        for axis, p in enumerate(position):
            start = p * strides[axis] - pads[axis]
            window.append(slice(max(start, 0), min(start + kernel_shape[axis], spatial[axis])))
        kept = np.cumprod(masks[(slice(None), *window)], axis=-1).astype(bool)
        inside = values[(slice(None), *window)].reshape(channels, -1)
        picked = np.where(kept.reshape(channels, -1), inside, lowest)
        result[(slice(None), *position)] = np.maximum(picked.max(axis=1, initial=lowest), lowest)
    return result.reshape(X.shape[:2] + tuple(out_shape))


def _word_conv_embedding(P: _Primitives, sequence, W, B, C):
    """WordConvEmbedding: a word's length is its count of positive character ids (0 when its
    first id is not positive); its first max(length, window) characters are looked up in C,
    each window of them (window = W's third axis) flattened and multiplied by the filters W,
    + B, tanh, and the largest over the word's windows per filter (starting from -1e12). A
    word of length 0 gives zeros (onnxruntime leaves its row uninitialized)."""
    ids = np.asarray(sequence)
    words, word_length = ids.shape
    filters, _, window, width = W.shape
    lengths = np.where(ids[:, 0] > 0, (ids > 0).sum(axis=1), 0)
    weights = np.ascontiguousarray(W.reshape(filters, window * width).T)
    result = np.zeros((words, filters), np.float32)
    for word in np.flatnonzero(lengths > 0):
        count = max(int(lengths[word]), window)
        chars = C[ids[word, :count]].reshape(-1)
        starts = np.arange(count - window + 1)[:, None] * width + np.arange(window * width)
        unfolded = chars[starts]
        activations = P.tanh(P.matmul(unfolded, weights) + B)
        result[word] = np.maximum(activations.max(axis=0), np.float32(-1e12))
    return result


word_conv_embedding, exact_word_conv_embedding = _twins(
    _word_conv_embedding, "word_conv_embedding", _word_conv_embedding.__doc__ or ""
)


@kernel(exact=True)
def bifurcation_detector(src_tokens, cur_tokens, prev_suffix_match_idx, pred_tokens=None, *,
                         min_ngram_size, max_ngram_size, outputs=2):  # fmt: skip
    """BifurcationDetector (speculative decoding): with pred_tokens, the first index where
    they leave src_tokens (from prev_suffix_match_idx on) and cur_tokens + pred_tokens up to and
    including it; then the suffix match: for n from min to max n-gram size, the output's last n
    tokens searched in src_tokens: none found ends the search, a second occurrence after the
    first (from the first's start + 1) resets the match to -1 and tries the next n, else the
    index after the first occurrence (kept when the next n ends the search)."""
    src = np.asarray(src_tokens).reshape(-1)
    cur = np.asarray(cur_tokens).reshape(-1)
    if pred_tokens is None:
        tokens = cur.copy()
    else:
        pred = np.asarray(pred_tokens).reshape(-1)
        start = int(np.asarray(prev_suffix_match_idx).reshape(-1)[0])
        if not 0 <= start <= len(src) or len(pred) != len(src) + 1 - start:
            raise ValueError(
                f"BifurcationDetector: pred_tokens has {len(pred)} tokens, expected "
                f"{len(src) + 1 - start} (src_tokens' {len(src)} + 1 - prev_suffix_match_idx)"
            )
        split = 0
        while split < len(src) - start and pred[split] == src[split + start]:
            split += 1
        tokens = np.concatenate([cur, pred[: split + 1]])

    def find(pattern, begin):
        n = len(pattern)
        for i in range(begin, len(src) - n + 1):
            if np.array_equal(src[i : i + n], pattern):
                return i
        return len(src)

    suffix = -1
    for n in range(int(min_ngram_size), int(max_ngram_size) + 1):
        if n > len(tokens):
            break
        tail = tokens[len(tokens) - n :]
        found = find(tail, 0)
        if found == len(src):
            break
        suffix = found + n
        if suffix >= len(src):
            break
        if find(tail, suffix - n + 1) != len(src):
            suffix = -1
    index = np.full(np.shape(prev_suffix_match_idx), suffix, np.int64)
    return (tokens, index)[:outputs] if outputs > 1 else tokens


class _SeparatorTree:
    """The separators as onnxruntime 1.31.1's Tokenizer searches them at one position of the
    text: the longest separator the text starts with (earlier separators win overlaps, see
    _tokenize_separators)."""

    def __init__(self, separators: list[str]):
        self.priority = {s: i for i, s in enumerate(separators)}
        self.prefixes = {s[:k] for s in separators for k in range(1, len(s) + 1)}

    def match(self, text: str) -> str | None:
        found, k = None, 0
        while k < len(text) and text[: k + 1] in self.prefixes:
            k += 1
            if text[:k] in self.priority:
                found = text[:k]
        return found


def _tokenize_separators(text: str, tree: _SeparatorTree, mincharnum: int) -> list[str]:
    """The matches of every position in order, an overlapping later one kept only when its
    separator comes earlier in the list (replacing the one it overlaps); the pieces of text
    between them (and after the last) of at least mincharnum characters."""
    matches: list[tuple[int, int, int]] = []  # (offset, size, priority), by offset
    for offset in range(len(text)):
        found = tree.match(text[offset:])
        if found is None:
            continue
        new = (offset, len(found), tree.priority[found])
        while True:
            clash = next((m for m in matches if not (m[0] + m[1] <= offset
                          or offset + new[1] <= m[0])), None)  # fmt: skip
            if clash is None:
                matches.append(new)
                matches.sort()
                break
            if new[2] < clash[2]:
                matches.remove(clash)
                continue
            break
    tokens, position = [], 0
    for offset, size, _ in matches:
        if offset - position > 0 and offset - position >= mincharnum:
            tokens.append(text[position:offset])
        position = offset + size
    if len(text) - position >= max(mincharnum, 1):
        tokens.append(text[position:])
    return tokens


def _tokenize_expression(text: str, expression, mincharnum: int) -> list[str]:
    """The non-empty matches of `expression` (RE2, leftmost-longest) left to right without
    overlap, of at least mincharnum characters. Matched over the UTF-8 bytes, as onnxruntime
    does: after an empty match the search moves on one byte, and a match that is not whole
    characters (\\C) is an error, as in onnxruntime."""
    data = text.encode("utf-8")
    tokens = []
    for match in expression.finditer(data):
        start, end = match.span()
        if start == end:
            continue
        try:
            token = data[start:end].decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(
                f"Tokenizer: a match of tokenexp {expression.pattern!r} is not whole UTF-8 "
                f"characters (at byte offset {start} of {text!r})"
            ) from None
        if len(token) >= mincharnum:
            tokens.append(token)
    return tokens


@kernel(exact=True)
def tokenizer(X, *, mark, pad_value, mincharnum, separators=(), tokenexp=None):
    """Tokenizer (strings [C] or [N, C]): each string's tokens (characters when the one
    separator is ""; the pieces between separators, _tokenize_separators; or, with tokenexp
    and no separators, the matches of that expression, _tokenize_expression), between the
    marks STX and ETX (chr(2), chr(3)) when `mark`, then pad_value up to the longest row (after
    the end mark, as onnxruntime 1.31.1 writes them); the output gains that axis (length 0 when
    no string has a token)."""
    X = np.asarray(X, dtype=object)
    strings = [str(s) for s in X.reshape(-1)]
    if tokenexp is not None:
        expression = compile_longest(tokenexp)
        rows = [_tokenize_expression(s, expression, int(mincharnum)) for s in strings]
    elif len(separators) == 1 and separators[0] == "":
        rows = [list(s) for s in strings]
    else:
        tree = _SeparatorTree(list(separators))
        rows = [_tokenize_separators(s, tree, int(mincharnum)) for s in strings]
    longest = max((len(r) for r in rows), default=0)
    if longest == 0:
        return np.empty(X.shape + (0,), dtype=object)
    width = longest + 2 * bool(mark)
    out = np.empty((len(rows), width), dtype=object)
    for i, row in enumerate(rows):
        marked = ["\x02", *row, "\x03"] if mark else row
        out[i] = marked + [pad_value] * (width - len(marked))
    return out.reshape(X.shape + (width,))


def _decoder_masked_mha(
    P: _Primitives,
    query,
    key=None,
    value=None,
    mask_index=None,
    attention_bias=None,
    past_key=None,
    past_value=None,
    past_sequence_length=None,
    bias=None,
    *,
    num_heads: int,
    scale: float = 0.0,
    mask_filter_value: float = -10000.0,
    outputs: int = 1,
):
    """DecoderMaskedMultiHeadAttention, one decoding step (query (batch, 1, hidden)). Self-
    attention: key and value (batch, 1, hidden) (+ bias's thirds), written into a copy of the
    shared past/present cache (batch, heads, max length, size) at past_sequence_length, and
    attended up to it. Cross-attention: key and value (batch, heads, length, size) attended
    whole. mask_index (batch, keys) 0/1 adds mask_filter_value where 0; attention_bias is added;
    scale 0 means 1/sqrt(size). Returns output (and present_key, present_value)."""
    batch, _, hidden = query.shape
    size = hidden // num_heads
    q = query.astype(np.float32)
    if bias is not None:
        q = q + bias[:hidden]

    def heads(t):
        return t.reshape(batch, 1, num_heads, size).transpose(0, 2, 1, 3)

    presents = []
    if key is not None and key.ndim == 4:
        keys, values = key, value
    else:
        k, v = key.astype(np.float32), value.astype(np.float32)
        if bias is not None:
            k, v = k + bias[hidden : 2 * hidden], v + bias[2 * hidden :]
        at = _scalar_input(past_sequence_length, 0, int)
        present_key, present_value = np.array(past_key, copy=True), np.array(past_value, copy=True)
        present_key[:, :, at] = heads(k)[:, :, 0]
        present_value[:, :, at] = heads(v)[:, :, 0]
        keys, values = present_key[:, :, : at + 1], present_value[:, :, : at + 1]
        presents = [present_key, present_value]
    count = keys.shape[2]
    additive = np.zeros((batch, 1, 1, count), np.float32)
    if mask_index is not None:
        hidden_keys = np.asarray(mask_index)[:, :count] == 0
        additive = np.where(hidden_keys[:, None, None, :], np.float32(mask_filter_value), additive)
    if attention_bias is not None:
        additive = additive + attention_bias[..., :count].astype(np.float32)
    factor = scale if scale else 1.0 / np.sqrt(size)
    out = _scaled_attention(P, heads(q), keys, values, np.float32(factor), additive)
    result = out.transpose(0, 2, 1, 3).reshape(batch, 1, hidden).astype(query.dtype)
    found = (result, *presents)
    return found[:outputs] if outputs > 1 else result


decoder_masked_multi_head_attention, exact_decoder_masked_multi_head_attention = _twins(
    _decoder_masked_mha, "decoder_masked_multi_head_attention", _decoder_masked_mha.__doc__ or ""
)


# --- mixture of experts ---------------------------------------------------------------------------


def _moe_routes(m: _Primitives, router_probs, k: int, normalize: bool):
    """onnxruntime's MoE routing: the float32 softmax of each row of router logits, its k largest
    (equal probabilities: the higher expert index first, as std::partial_sort with
    std::greater over (probability, index) pairs orders them), divided by their sum (added in
    rank order) with normalize_routing_weights. Returns (experts, weights), both (tokens, k)."""
    probs = m.softmax(router_probs.astype(np.float32), axis=-1)
    count = probs.shape[-1]
    order = np.argsort(-probs[:, ::-1], axis=-1, kind="stable")[:, :k]
    experts = count - 1 - order
    weights = np.take_along_axis(probs, experts, axis=-1)
    if normalize:
        total = weights[:, 0].copy()
        for j in range(1, k):
            total = total + weights[:, j]
        weights = weights / total[:, None]
    return experts, weights


def _moe_activation(m: _Primitives, h, activation_type, alpha, beta, limit):
    """The expert's activation in float32, as onnxruntime's CPU MoE computes it: gelu is the tanh
    approximation; swiglu takes the fused fc1 output interleaved (gate at even positions, linear
    at odd ones), gate clamped above and linear on both sides at swiglu_limit."""
    if activation_type == "relu":
        return np.maximum(h, np.float32(0))
    if activation_type == "gelu":
        inner = np.float32(0.7978845608) * (h + np.float32(0.044715) * h * h * h)
        return np.float32(0.5) * h * (np.float32(1) + m.tanh(inner))
    if activation_type == "silu":
        return h * (np.float32(1) / (np.float32(1) + m.exp(-h)))
    if activation_type == "identity":
        return h
    gate, linear = h[:, 0::2], h[:, 1::2]
    if limit is not None:
        gate = np.minimum(gate, np.float32(limit))
        linear = np.clip(linear, np.float32(-limit), np.float32(limit))
    swish = gate * m.sigmoid(np.float32(alpha) * gate)
    return swish * (linear + np.float32(beta))


def _qmoe_routes(m: _Primitives, router_probs, k: int, normalize: bool, router_weights=None):
    """QMoE's routing (unlike MoE's): each token's k largest router logits (equal ones: the higher
    expert index first), their weights exp(logit - the largest) times 1 / their float32 sum (in
    rank order); with router_weights, those at the chosen experts instead (times 1 / their sum
    with normalize_routing_weights). Weights of at most 1e-8 route nowhere (onnxruntime's
    threshold)."""
    logits = router_probs.astype(np.float32)
    count = logits.shape[-1]
    experts = count - 1 - np.argsort(-logits[:, ::-1], axis=-1, kind="stable")[:, :k]
    chosen = np.take_along_axis(logits, experts, axis=-1)
    if router_weights is not None:
        weights = np.take_along_axis(router_weights.astype(np.float32), experts, axis=-1)
        if not normalize:
            return experts, np.where(weights > np.float32(1e-8), weights, np.float32(0))
    else:
        weights = m.exp(chosen - chosen[:, :1])
    total = weights[:, 0].copy()
    for j in range(1, k):
        total = total + weights[:, j]
    with np.errstate(divide="ignore"):
        inverse = np.where(total == 0, np.float32(0), np.float32(1) / total).astype(np.float32)
    weights = weights * inverse[:, None]
    return experts, np.where(weights > np.float32(1e-8), weights, np.float32(0))


def _moe(
    m,
    input,
    router_probs,
    fc1_experts_weights,
    fc1_experts_bias=None,
    fc2_experts_weights=None,
    fc2_experts_bias=None,
    *,
    k=1,
    activation_type="relu",
    normalize_routing_weights=0,
    activation_alpha=1.0,
    activation_beta=0.0,
    swiglu_limit=None,
    routes=None,
):
    """MoE (onnxruntime's CPU kernel): each token's k experts by _moe_routes; expert e computes
    activation(x @ fc1[e]^T + b1[e]) @ fc2[e]^T + b2[e] (fc1 (experts, fc1 width, hidden), fc2
    (experts, hidden, inter), intermediate results rounded to the input's type), and a token's
    output is the sum of its experts' outputs times their routing weights, in float32, added in
    the order of the experts' indices."""
    dtype = input.dtype
    hidden = input.shape[-1]
    tokens = input.reshape(-1, hidden)
    experts, weights = routes or _moe_routes(
        m, router_probs.reshape(tokens.shape[0], -1), k, bool(normalize_routing_weights)
    )
    output = np.zeros(tokens.shape, np.float32)
    for expert in range(fc1_experts_weights.shape[0]):
        rows, ranks = np.nonzero((experts == expert) & (weights > 0))
        if rows.size == 0:
            continue
        x = tokens[rows].astype(np.float32)
        h = m.matmul(x, fc1_experts_weights[expert].astype(np.float32).T).astype(dtype)
        if fc1_experts_bias is not None:
            h = (h.astype(np.float32) + fc1_experts_bias[expert].astype(np.float32)).astype(dtype)
        a = _moe_activation(
            m,
            h.astype(np.float32),
            activation_type,
            activation_alpha,
            activation_beta,
            swiglu_limit,
        ).astype(dtype)
        w2 = fc2_experts_weights[expert].astype(np.float32)
        y = m.matmul(a.astype(np.float32), w2.reshape(hidden, -1).T).astype(dtype)
        if fc2_experts_bias is not None:
            y = (y.astype(np.float32) + fc2_experts_bias[expert].astype(np.float32)).astype(dtype)
        output[rows] += weights[rows, ranks][:, None] * y.astype(np.float32)
    return output.astype(dtype).reshape(input.shape)


moe, exact_moe = _twins(_moe, "moe", _moe.__doc__ or "")


def _dequantized_experts(weights, scales, zero_points, bits: int, block_size):
    """QMoE's integer weights (experts, N, K * bits / 8) uint8, values low bits first, as float32
    (value - zero point) * scale: scales (experts, N) for one scale per row (of N), (experts, N,
    K / block_size) by blocks of K; zero points packed like the values, (experts, N * bits / 8)
    or (experts, N, blocks * bits / 8) (rounded up to bytes), default 2**(bits - 1)."""
    values = _unpacked(weights, bits).astype(np.float32)
    experts, rows, columns = values.shape
    scale = scales.astype(np.float32)
    if scale.ndim == 3:  # by blocks (one block a row too: its zero points by rows of blocks)
        blocks = scale.shape[2]
        per_block = -(-columns // blocks) if not block_size else block_size
        if zero_points is None:
            zero = np.float32(1 << (bits - 1))
        else:
            zero = _unpacked(zero_points.reshape(experts, rows, -1), bits)[:, :, :blocks]
            zero = np.repeat(zero.astype(np.float32), per_block, axis=2)[:, :, :columns]
        return (values - zero) * np.repeat(scale, per_block, axis=2)[:, :, :columns]
    scale = scale.reshape(experts, rows, 1)
    if zero_points is None:
        return (values - np.float32(1 << (bits - 1))) * scale
    zero = _unpacked(zero_points.reshape(experts, -1), bits)[:, :rows].astype(np.float32)
    return (values - zero[:, :, None]) * scale


def _qmoe(
    m,
    input,
    router_probs,
    fc1_experts_weights,
    fc1_scales,
    fc1_experts_bias=None,
    fc2_experts_weights=None,
    fc2_scales=None,
    fc2_experts_bias=None,
    fc1_zero_points=None,
    fc2_zero_points=None,
    router_weights=None,
    *,
    fc1_bits=4,
    fc2_bits=4,
    block_size=None,
    k=1,
    normalize_routing_weights=0,
    **activation,
):
    """QMoE with integer weights (quant_type 'int'): the experts' weights dequantized
    (_dequantized_experts), QMoE's routing (_qmoe_routes), then MoE's expert products in
    float32."""
    hidden = input.shape[-1]
    routes = _qmoe_routes(
        m,
        router_probs.reshape(-1, router_probs.shape[-1]),
        k,
        bool(normalize_routing_weights),
        None if router_weights is None else router_weights.reshape(-1, router_weights.shape[-1]),
    )
    fc1 = _dequantized_experts(
        fc1_experts_weights, fc1_scales, fc1_zero_points, fc1_bits, block_size
    )
    fc2 = _dequantized_experts(
        fc2_experts_weights, fc2_scales, fc2_zero_points, fc2_bits, block_size
    )
    return _moe(
        m,
        input,
        router_probs.reshape(-1, router_probs.shape[-1]),
        fc1,
        fc1_experts_bias,
        fc2.reshape(fc2.shape[0], hidden, -1),
        fc2_experts_bias,
        k=k,
        routes=routes,
        **activation,
    )


qmoe, exact_qmoe = _twins(_qmoe, "qmoe", _qmoe.__doc__ or "")


# --- the LLM blocks' fused elementwise operators (Qwen3.5, gated DeltaNet, hyper-connections) -----


def _softplus(m: _Primitives, x):
    """log(1 + exp(x)) in float32: numpy's logaddexp, or the library's exact softplus."""
    return exact_softplus(x) if m is EXACT else np.logaddexp(x, np.float32(0))


def _scaled_silu(m, X, scale=None, *, alpha=1.0):
    """ScaledSiLU: z = X * s rounded to X's type (s the scalar scale input, else alpha), then
    z * sigmoid(z) with the sigmoid rounded to X's type too; float32 arithmetic."""
    s = np.float32(alpha) if scale is None else np.float32(np.asarray(scale).reshape(()))
    z = (X.astype(np.float32) * s).astype(X.dtype)
    zf = z.astype(np.float32)
    sigmoid_z = m.sigmoid(zf).astype(X.dtype).astype(np.float32)
    return (zf * sigmoid_z).astype(X.dtype)


scaled_silu, exact_scaled_silu = _twins(_scaled_silu, "scaled_silu", _scaled_silu.__doc__ or "")


@kernel(exact=True)
def gated_add(X, Y, gate):
    """GatedAdd: X + Y * gate (gate (..., 1) over the last axis), the product rounded to X's type
    before the sum (float16: each step in float32, rounded to half)."""
    product = (Y.astype(np.float32) * gate.astype(np.float32)).astype(X.dtype)
    return (X.astype(np.float32) + product.astype(np.float32)).astype(X.dtype)


def _inverse_rms(m: _Primitives, values, epsilon):
    """1 / sqrt(mean(values**2) + epsilon) over the last axis (kept), float32."""
    mean = m.mean(values * values, -1)
    return np.float32(1) / np.sqrt(mean + np.float32(epsilon))


def _gated_rms_norm(m, X, scale, gate, *, activation="silu", epsilon=1e-5):
    """GatedRMSNorm: over each group of C (scale's length) of the last axis, X / rms * scale *
    act(gate), act silu (z sigmoid(z)) or sigmoid; float32 arithmetic, rounded once to X's
    type."""
    size = scale.size
    x = X.astype(np.float32).reshape(-1, size)
    z = gate.astype(np.float32).reshape(-1, size)
    normalized = x * _inverse_rms(m, x, epsilon) * scale.astype(np.float32).reshape(-1)
    gated = z * m.sigmoid(z) if activation in ("silu", "swish") else m.sigmoid(z)
    return (normalized * gated).astype(X.dtype).reshape(X.shape)


gated_rms_norm, exact_gated_rms_norm = _twins(
    _gated_rms_norm, "gated_rms_norm", _gated_rms_norm.__doc__ or ""
)


def _streams(X, num_branches: int):
    """(rows, branches, hidden) of hyper-connection streams: grouped (..., C, H), or flattened
    (..., C * H) with num_branches = C; also the prefix of the shape."""
    if num_branches:
        prefix, hidden = X.shape[:-1], X.shape[-1] // num_branches
        return X.reshape(-1, num_branches, hidden), prefix, num_branches, hidden
    prefix, branches, hidden = X.shape[:-2], X.shape[-2], X.shape[-1]
    return X.reshape(-1, branches, hidden), prefix, branches, hidden


def _gates(gate, rows: int, branches: int, hidden: int) -> np.ndarray:
    """A mixing gate as (rows, C, 1) (one per branch: (..., C) or (..., C, 1)) or (rows, C, H)."""
    g = np.asarray(gate).astype(np.float32)
    per_branch = g.size == rows * branches
    return g.reshape(rows, branches, 1 if per_branch else hidden)


def _branchwise_rms_norm(m, X, scale=None, *, num_branches=0, epsilon=1e-5):
    """BranchwiseRMSNorm: RMS normalization of each branch's H values, times scale (H), (C, H)
    or (C * H), float32 arithmetic rounded to X's type."""
    x, _, branches, hidden = _streams(X, num_branches)
    x = x.astype(np.float32)
    y = x * _inverse_rms(m, x, epsilon)
    if scale is not None:
        s = np.asarray(scale).astype(np.float32)
        y = y * (s.reshape(hidden) if s.size == hidden else s.reshape(branches, hidden))
    return y.astype(X.dtype).reshape(X.shape)


branchwise_rms_norm, exact_branchwise_rms_norm = _twins(
    _branchwise_rms_norm, "branchwise_rms_norm", _branchwise_rms_norm.__doc__ or ""
)


@kernel(exact=True)
def hyper_connection_pre_mix(streams, pre_mix, *, reduction_scale=1.0, num_branches=0):
    """HyperConnectionPreMix: sum over the branches c (in order, float32) of streams[..., c, h] *
    pre_mix, times reduction_scale; returns (..., H) in the streams' type."""
    x, prefix, branches, hidden = _streams(streams, num_branches)
    x = x.astype(np.float32)
    g = _gates(pre_mix, x.shape[0], branches, hidden)
    total = x[:, 0] * g[:, 0]
    for c in range(1, branches):
        total = total + x[:, c] * g[:, c]
    y = total * np.float32(reduction_scale)
    return y.astype(streams.dtype).reshape(*prefix, hidden)


@kernel(exact=True)
def hyper_connection_post_mix(streams, block_output, post_mix, stream_mix=None, *, num_branches=0):
    """HyperConnectionPostMix: Y[..., k, h] = sum over c (in order, float32) of stream_mix[..., c,
    k] * streams[..., c, h] (the streams themselves without stream_mix), + post_mix[..., k, h] *
    block_output[..., h]; the streams' shape and type."""
    x, _, branches, hidden = _streams(streams, num_branches)
    x = x.astype(np.float32)
    rows = x.shape[0]
    if stream_mix is None:
        mixed = x
    else:
        mix = np.asarray(stream_mix).astype(np.float32).reshape(rows, branches, branches)
        mixed = mix[:, 0, :, None] * x[:, 0:1, :]
        for c in range(1, branches):
            mixed = mixed + mix[:, c, :, None] * x[:, c : c + 1, :]
    block = block_output.astype(np.float32).reshape(rows, 1, hidden)
    y = mixed + _gates(post_mix, rows, branches, hidden) * block
    return y.astype(streams.dtype).reshape(streams.shape)


def _linear_attention_gate(m, a, dt_bias, decay_scale, b=None, *, outputs=1):
    """LinearAttentionGate: decay = decay_scale * softplus(a + dt_bias) (per head, the last
    axis), and (outputs=2) beta = sigmoid(b); float32 arithmetic rounded to a's type."""
    biased = a.astype(np.float32) + dt_bias.astype(np.float32).reshape(-1)
    decay = (decay_scale.astype(np.float32).reshape(-1) * _softplus(m, biased)).astype(a.dtype)
    if outputs == 1:
        return decay
    if b is None:
        raise ValueError("LinearAttentionGate's beta output needs its b input")
    return decay, m.sigmoid(b.astype(np.float32)).astype(a.dtype)


linear_attention_gate, exact_linear_attention_gate = _twins(
    _linear_attention_gate, "linear_attention_gate", _linear_attention_gate.__doc__ or ""
)


def _linear_attention(
    m,
    query,
    key,
    value,
    past_state=None,
    decay=None,
    beta=None,
    *,
    q_num_heads,
    kv_num_heads,
    update_rule="gated_delta",
    scale=0.0,
    outputs=1,
):
    """LinearAttention: the recurrence run token by token (onnxruntime may use a chunk-parallel
    form; the values are the same up to rounding). State S (batch, kv heads, d_k, d_v), zeros
    without past_state; per token: gated rules S = exp(g) S (g per head or per key dimension);
    delta rules S = S + k (x) beta (v - S^T k) (with the decayed S); linear/gated S = S + k (x) v;
    output scale q^T S (scale 0: 1 / sqrt(d_k)). Query head i reads kv head i // (H_q / H_kv);
    with more kv heads than query heads, kv head j reads query head j // (H_kv / H_q) and the
    output has one head per kv head. Float32 arithmetic; returns (output, present_state)."""
    batch, steps, _ = query.shape
    d_k = query.shape[-1] // q_num_heads
    d_v = value.shape[-1] // kv_num_heads
    heads = max(q_num_heads, kv_num_heads)
    q = query.astype(np.float32).reshape(batch, steps, q_num_heads, d_k)
    k = key.astype(np.float32).reshape(batch, steps, kv_num_heads, d_k)
    v = value.astype(np.float32).reshape(batch, steps, kv_num_heads, d_v)
    if q_num_heads >= kv_num_heads:
        kv_of = np.arange(heads) // (q_num_heads // kv_num_heads)
        q_of = np.arange(heads)
    else:
        kv_of = np.arange(heads)
        q_of = np.arange(heads) // (kv_num_heads // q_num_heads)
    state = (
        np.zeros((batch, kv_num_heads, d_k, d_v), np.float32)
        if past_state is None
        else np.array(past_state, np.float32)
    )
    factor = np.float32(scale) if scale else np.float32(1.0 / np.sqrt(d_k))
    gated, delta = update_rule in ("gated", "gated_delta"), update_rule in ("delta", "gated_delta")
    if gated and decay is None or delta and beta is None:
        raise ValueError(f"LinearAttention's {update_rule} rule needs its decay and beta inputs")
    g = None if decay is None else decay.astype(np.float32).reshape(batch, steps, kv_num_heads, -1)
    rate = None if beta is None else beta.astype(np.float32).reshape(batch, steps, -1)
    out = np.empty((batch, steps, heads, d_v), np.float32)
    for t in range(steps):
        kt, vt = k[:, t], v[:, t]
        if gated:
            state = m.exp(g[:, t])[..., None] * state  # (b, h, d_k or 1, 1) over (b, h, d_k, d_v)
        if delta:
            memory = m.matmul(kt[:, :, None, :], state)[:, :, 0, :]  # S^T k: (b, h, d_v)
            bt = rate[:, t]
            bt = np.broadcast_to(bt if bt.shape[-1] == kv_num_heads else bt[:, :1], kt.shape[:2])
            update = bt[..., None] * (vt - memory)
        else:
            update = vt
        state = state + kt[..., :, None] * update[..., None, :]
        read = m.matmul(q[:, t][:, q_of][:, :, None, :], state[:, kv_of])[:, :, 0, :]
        out[:, t] = factor * read
    output = out.reshape(batch, steps, heads * d_v).astype(query.dtype)
    present = state.astype(np.float32 if past_state is None else past_state.dtype)
    return (output, present)[:outputs] if outputs > 1 else output


linear_attention, exact_linear_attention = _twins(
    _linear_attention, "linear_attention", _linear_attention.__doc__ or ""
)


def _causal_conv_with_state(
    m,
    input,
    weight,
    bias=None,
    past_state=None,
    *,
    dilation=1,
    activation="none",
    channels_last=0,
    outputs=1,
):
    """CausalConvWithState, one spatial axis: the depthwise causal convolution of past_state
    (zeros without it: (k - 1) * dilation positions) followed by the input, output position t
    reading virtual positions t + j * dilation for tap j (in order, float32), + bias, silu when
    asked; present_state the virtual input's last (k - 1) * dilation positions. channels_last:
    (batch, length, d_1, ...) activations and states, channels = d_1 * ...; returns (output,
    present_state)."""
    x = input.astype(np.float32)
    if channels_last:
        x = np.moveaxis(x.reshape(x.shape[0], x.shape[1], -1), 1, 2)  # (batch, channels, length)
    batch, channels, length = x.shape
    taps = weight.shape[-1]
    state_length = (taps - 1) * dilation
    if past_state is None:
        past = np.zeros((batch, channels, state_length), np.float32)
    else:
        past = past_state.astype(np.float32)
        if channels_last:
            past = np.moveaxis(past.reshape(batch, state_length, -1), 1, 2)
    virtual = np.concatenate([past, x], axis=-1)
    w = weight.astype(np.float32).reshape(channels, taps)
    y = w[None, :, 0, None] * virtual[:, :, 0:length]
    for j in range(1, taps):
        start = j * dilation
        y = y + w[None, :, j, None] * virtual[:, :, start : start + length]
    if bias is not None:
        y = y + bias.astype(np.float32).reshape(1, channels, 1)
    if activation in ("silu", "swish"):
        y = y * m.sigmoid(y)
    present = virtual[:, :, virtual.shape[-1] - state_length :]
    if channels_last:
        y = np.moveaxis(y, 1, 2).reshape(input.shape)
        present = np.moveaxis(present, 1, 2).reshape(batch, state_length, *input.shape[2:])
    y = y.astype(input.dtype)
    present = present.astype(input.dtype)
    return (y, present)[:outputs] if outputs > 1 else y


microsoft_causal_conv_with_state, exact_microsoft_causal_conv_with_state = _twins(
    _causal_conv_with_state,
    "microsoft_causal_conv_with_state",
    _causal_conv_with_state.__doc__ or "",
)


def _engram_gate(
    m, key, query, value, key_norm_scale, query_norm_scale, conv_norm_scale=None, *, epsilon=1e-5,
    outputs=1,
):  # fmt: skip
    """EngramGate: dot = sum over the hidden axis of RMSNorm(key) * RMSNorm(query) / sqrt(hidden)
    (each with its (hc, hidden) scale), gate = sigmoid(sign(dot) sqrt(max(|dot|, 1e-6))), output
    gate * value (value shared by the hc hyper-connections); gated_value_normed (outputs=2)
    RMSNorm(output) * conv_norm_scale. Float32 arithmetic rounded to the key's type."""
    hidden = key.shape[-1]

    def rms(x, scale):
        return x * _inverse_rms(m, x, epsilon) * scale.astype(np.float32)

    k = rms(key.astype(np.float32), key_norm_scale)
    q = rms(query.astype(np.float32), query_norm_scale)
    dot = m.mean(k * q, -1) * np.float32(hidden) / np.sqrt(np.float32(hidden))
    signed = np.sign(dot) * np.sqrt(np.maximum(np.abs(dot), np.float32(1e-6)))
    gated = m.sigmoid(signed.astype(np.float32)) * value.astype(np.float32)[..., None, :]
    output = gated.astype(key.dtype)
    if outputs == 1:
        return output
    if conv_norm_scale is None:
        raise ValueError("EngramGate's gated_value_normed output needs conv_norm_scale")
    return output, rms(gated, conv_norm_scale).astype(key.dtype)


engram_gate, exact_engram_gate = _twins(_engram_gate, "engram_gate", _engram_gate.__doc__ or "")


@dataclass(frozen=True)
class _NGramLayout:
    """Packed requests laid out as blocks of a virtual buffer: request b's max_ngram_size - 1
    history slots (`slots[b]`, from `blocks[b]`) then its tokens (at `positions`)."""

    blocks: np.ndarray
    slots: np.ndarray
    positions: np.ndarray
    request: np.ndarray  # each token's request

    def virtual(self, history, tokens, dtype) -> np.ndarray:
        buffer = np.empty(self.positions.size + self.slots.size, dtype)
        buffer[self.slots] = history
        buffer[self.positions] = tokens
        return buffer

    def trailing(self, lengths, history: int) -> np.ndarray:
        """Each request's last `history` virtual positions (present_ids' window)."""
        return self.blocks[:, None] + lengths[:, None] + np.arange(history)


def _ngram_layout(starts, lengths, history: int) -> _NGramLayout:
    batch = lengths.size
    blocks = starts + np.arange(batch) * history
    request = np.repeat(np.arange(batch), lengths)
    positions = np.arange(request.size) + (request + 1) * history
    return _NGramLayout(blocks, blocks[:, None] + np.arange(history), positions, request)


def _ngram_packed(
    ids, starts, lengths, multipliers, vocab_sizes, past_ids, head_offsets, eos_token_id,
    segment_ids, past_segment_ids, *, pad_id, n_head_per_ngram, max_ngram_size, reset_on_eos,
    op,
):  # fmt: skip
    """The hashing both NGramHashMapping operators share, over packed requests (request b is
    ids[starts[b] : starts[b] + lengths[b]]) laid out by _ngram_layout, so that every causal
    shift reads inside its own request's block; history slots hold past_ids, else the
    missing-history id (eos_token_id when given, else pad_id). A reset after virtual position j
    (an EOS at j with reset_on_eos, a change of segment between j and j + 1) marks j; a token's
    shifts at or before the latest mark strictly before it read the missing-history id. The
    latest mark is a running maximum over the whole buffer: an earlier request's marks lie
    before this block, below every shift it reads. Returns hash_ids (total, heads), the virtual
    ids and the layout."""
    dtype = ids.dtype
    history = max_ngram_size - 1
    batch, total = lengths.size, ids.size
    heads = history * n_head_per_ngram
    factors = np.asarray(multipliers, dtype).reshape(-1)
    sizes = np.asarray(vocab_sizes, dtype).reshape(-1)
    if factors.size < max_ngram_size or sizes.size != heads:
        raise ValueError(
            f"{op}: multipliers need {max_ngram_size} entries and vocab_sizes {heads}, got "
            f"{factors.size} and {sizes.size}"
        )
    if np.any(sizes <= 0):
        raise ValueError(f"{op}: vocab_sizes must be positive, got {sizes.tolist()}")
    eos = None if eos_token_id is None else np.asarray(eos_token_id, dtype)
    if eos is not None and eos.ndim != 0:
        raise ValueError(f"{op}: eos_token_id must be a scalar, got shape {eos.shape}")
    missing = dtype.type(pad_id) if eos is None else eos[()]
    layout = _ngram_layout(starts, lengths, history)
    if past_ids is not None and np.shape(past_ids) != (batch, history):
        raise ValueError(f"{op}: past_ids must have shape {(batch, history)}")
    virtual = layout.virtual(missing if past_ids is None else past_ids, ids, dtype)
    positions = layout.positions
    marks = np.full(virtual.size, -1, np.int64)
    if reset_on_eos and eos is not None:
        at_eos = np.flatnonzero(virtual == missing)
        marks[at_eos] = at_eos
    if segment_ids is not None:
        segments = np.asarray(segment_ids, np.int32).reshape(-1)
        change = np.flatnonzero(segments[1:] != segments[:-1]) + 1
        change = change[layout.request[change] == layout.request[change - 1]]
        marks[positions[change] - 1] = positions[change] - 1
        if past_segment_ids is not None:
            before = np.asarray(past_segment_ids, np.int32).reshape(batch, history)
            joined = np.concatenate([before, segments[starts, None]], axis=1)
            rows, columns = np.nonzero(joined[:, 1:] != joined[:, :-1])
            marks[layout.slots[rows, columns]] = layout.slots[rows, columns]
    resets = np.maximum.accumulate(marks)[positions - 1]  # the latest mark before each token
    hashes = np.empty((total, heads), dtype)
    with np.errstate(over="ignore"):
        mix = ids * factors[0]
        for shift in range(1, history + 1):
            source = positions - shift
            token = np.where(source <= resets, missing, virtual[source])
            mix = mix ^ (token * factors[shift])
            first = (shift - 1) * n_head_per_ngram
            # the vocabulary sizes are positive: remainder's result is too
            hashes[:, first : first + n_head_per_ngram] = np.remainder(
                mix[:, None], sizes[first : first + n_head_per_ngram]
            )
        if head_offsets is not None:
            hashes = hashes + np.asarray(head_offsets, dtype).reshape(-1)
    return hashes, virtual, layout


@kernel(exact=True)
def ngram_hash_mapping(
    input_ids, multipliers, vocab_sizes, past_ids=None, head_offsets=None, eos_token_id=None,
    segment_ids=None, *, pad_id, n_head_per_ngram, max_ngram_size, reset_on_eos=0, outputs=1,
):  # fmt: skip
    """NGramHashMapping: for n = 2 .. max_ngram_size, mix = x_0 m_0 ^ x_1 m_1 ^ ... ^ x_(n-1)
    m_(n-1) with x_i the id i positions back (before the sequence: past_ids, right-aligned, else
    eos_token_id when given, else pad_id), products wrapping in the ids' type; each head of order
    n emits mix modulo its vocabulary size (+ head_offsets). After an EOS (reset_on_eos with
    eos_token_id; past_ids' count) or a change of segment_ids (within input_ids only), the ids
    at or before it read as eos_token_id (else pad_id). Returns hash_ids (batch, sequence,
    (max_ngram_size - 1) n_head_per_ngram) and (outputs=2) present_ids, the last
    max_ngram_size - 1 ids of past_ids followed by input_ids."""
    ids = np.asarray(input_ids)
    batch, length = ids.shape
    if segment_ids is not None and np.shape(segment_ids) != ids.shape:
        raise ValueError(f"NGramHashMapping: segment_ids must have the shape {ids.shape}")
    lengths = np.full(batch, length, np.int64)
    hashes, virtual, layout = _ngram_packed(
        ids.reshape(-1), np.arange(batch) * length, lengths, multipliers, vocab_sizes, past_ids,
        head_offsets, eos_token_id, segment_ids, None, pad_id=pad_id,
        n_head_per_ngram=n_head_per_ngram, max_ngram_size=max_ngram_size,
        reset_on_eos=reset_on_eos, op="NGramHashMapping",
    )  # fmt: skip
    hashes = hashes.reshape(batch, length, hashes.shape[1])
    if outputs == 1:
        return hashes
    return hashes, virtual[layout.trailing(lengths, max_ngram_size - 1)]


@kernel(exact=True)
def varlen_ngram_hash_mapping(
    input_ids, multipliers, vocab_sizes, cumulative_sequence_length, past_ids=None,
    head_offsets=None, eos_token_id=None, segment_ids=None, past_segment_ids=None,
    capture_count=None, *, pad_id, n_head_per_ngram, max_ngram_size, reset_on_eos=0,
    state_update_capacity=0, outputs=1,
):  # fmt: skip
    """VarlenNGramHashMapping: NGramHashMapping's hashing over packed requests (request b is
    input_ids[cu[b] : cu[b + 1]], at least one token), each with its own row of past_ids;
    segment changes reset within a request and, with past_segment_ids, within its history and
    at its first token. Returns hash_ids (total, heads), present_ids (batch, max_ngram_size - 1:
    each request's trailing ids), present_segment_ids (their segments; before the request
    past_segment_ids, else its first token's; None without segment_ids) and state_update
    (batch, state_update_capacity, max_ngram_size - 1): the trailing ids after each of the first
    capture_count[b] tokens (clamped to the request's length and the capacity), pad_id after."""
    ids = np.asarray(input_ids).reshape(-1)
    bounds = np.asarray(cumulative_sequence_length, np.int64).reshape(-1)
    if bounds.size < 2 or bounds[0] != 0 or bounds[-1] != ids.size or np.any(np.diff(bounds) <= 0):
        raise ValueError(
            "VarlenNGramHashMapping: cumulative_sequence_length must rise strictly from 0 to "
            f"{ids.size} (every request has a token), got {bounds.tolist()}"
        )
    starts, lengths = bounds[:-1], np.diff(bounds)
    batch, history = lengths.size, max_ngram_size - 1
    if segment_ids is None and past_segment_ids is not None:
        raise ValueError("VarlenNGramHashMapping: past_segment_ids requires segment_ids")
    if segment_ids is not None and np.size(segment_ids) != ids.size:
        raise ValueError(f"VarlenNGramHashMapping: segment_ids must have {ids.size} ids")
    if past_segment_ids is not None and np.shape(past_segment_ids) != (batch, history):
        raise ValueError(
            f"VarlenNGramHashMapping: past_segment_ids must have shape {(batch, history)}"
        )
    if (capture_count is None) != (state_update_capacity == 0):
        raise ValueError(
            "VarlenNGramHashMapping: capture_count is given exactly when state_update_capacity "
            "is positive"
        )
    hashes, virtual, layout = _ngram_packed(
        ids, starts, lengths, multipliers, vocab_sizes, past_ids, head_offsets, eos_token_id,
        segment_ids, past_segment_ids, pad_id=pad_id, n_head_per_ngram=n_head_per_ngram,
        max_ngram_size=max_ngram_size, reset_on_eos=reset_on_eos, op="VarlenNGramHashMapping",
    )  # fmt: skip
    if outputs == 1:
        return hashes
    trailing = layout.trailing(lengths, history)
    present_segments = None
    if segment_ids is not None:
        segments = np.asarray(segment_ids, np.int32).reshape(-1)
        before = segments[starts, None] if past_segment_ids is None else past_segment_ids
        present_segments = layout.virtual(before, segments, np.int32)[trailing]
    results = (hashes, virtual[trailing], present_segments)[:outputs]
    if outputs < 4:
        return results
    capacity = int(state_update_capacity)
    counts = np.zeros(batch, np.int64) if capture_count is None else capture_count
    counts = np.clip(np.asarray(counts, np.int64).reshape(-1), 0, np.minimum(lengths, capacity))
    captured = np.arange(capacity)[None, :] < counts[:, None]
    # the window after token c ends at its virtual position blocks + history + c
    ends = layout.blocks[:, None] + np.minimum(np.arange(capacity), lengths[:, None] - 1) + 1
    windows = virtual[ends[:, :, None] + np.arange(history)]
    state = np.where(captured[:, :, None], windows, ids.dtype.type(pad_id))
    return (*results, state)


def _mrope_streams(half: int, section, layout: int) -> np.ndarray:
    """Which of the three position streams (temporal, height, width) each of the half rotary
    features takes: contiguous sections (layout 0), or temporal everywhere with height at every
    third feature from 1 for the first 3 section[1], width from 2 for the first 3 section[2]
    (layout 1)."""
    if layout == 0:
        streams = np.repeat(np.arange(3), np.asarray(section, np.int64))
    else:
        streams = np.zeros(half, np.int64)
        streams[1 : 3 * int(section[1]) : 3] = 1
        streams[2 : 3 * int(section[2]) : 3] = 2
    if streams.size != half:
        raise ValueError(f"MRotaryEmbedding: mrope_section {list(section)} does not sum to {half}")
    return streams


@kernel(exact=True)
def mrotary_embedding(
    input, position_ids, cos_cache, sin_cache, *, mrope_section, mrope_layout=0, interleaved=0,
    num_heads=0, rotary_embedding_dim=0,
):  # fmt: skip
    """MRotaryEmbedding (Qwen-VL's M-RoPE): each rotary feature's cosine and sine looked up at the
    position of its stream (_mrope_streams) in position_ids (3, batch, sequence), then the default
    domain's rotation (rt.rotary_embedding) with those per-token angles; a 3-D input without
    num_heads has heads of twice cos_cache's width."""
    if input.ndim == 3 and not num_heads:
        num_heads = input.shape[2] // (2 * cos_cache.shape[1])
    half = cos_cache.shape[1]
    positions = np.asarray(position_ids, np.int64)
    if positions.size and not (0 <= positions.min() and positions.max() < cos_cache.shape[0]):
        raise ValueError(f"MRotaryEmbedding: position_ids must lie in [0, {cos_cache.shape[0]})")
    streams = _mrope_streams(half, mrope_section, mrope_layout)
    chosen = positions[streams]  # (half, batch, sequence)
    features = np.arange(half)[:, None, None]
    cos = np.moveaxis(cos_cache[chosen, features], 0, -1)
    sin = np.moveaxis(sin_cache[chosen, features], 0, -1)
    return rotary_embedding(
        input,
        cos,
        sin,
        None,
        interleaved=interleaved,
        num_heads=num_heads,
        rotary_embedding_dim=rotary_embedding_dim,
    )
