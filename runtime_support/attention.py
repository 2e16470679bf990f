"""Attention kernels: scaled dot-product Attention (opset 23 to 25) and RotaryEmbedding.

Attention computes in the query's element type, as the operator's function body does: the scores
`(Q * sqrt(scale)) @ (K * sqrt(scale))^T`, the soft cap, the additive bias, the softmax (in the type
`softmax_precision` names, when given) and the product with V. Query heads share key and value
heads in groups (grouped-query attention) without copying K or V.

Settled semantics (docs/contract.md "Settled semantics"; tests/test_settled_attention.py):
- the soft cap applies to the scores before the mask is added, so a masked key stays at -inf;
- with `is_causal`, query i sees keys j <= i + offset, offset being the past sequence length (the
  keys of `past_key`), or nonpad_kv_seqlen - q_sequence_length per batch for an external cache;
- an `attn_mask` whose last axis is shorter than the total key length masks the remaining keys;
- a query row whose every key is masked (its bias is -inf throughout) gives zeros, in Y and in the
  softmax output of `qk_matmul_output_mode` 3.

The exact twin exact_attention runs the same code with another arithmetic plugged in (_Exact): the
two products by exact_matmul (rounded once to the type), the soft cap's tanh by exact_tanh and the
softmax by exact_softmax (every step in the softmax's type, the library's exp); everything else
is IEEE elementwise arithmetic, comparisons and selections in the type, exact already.
"""

from __future__ import annotations

import math

import numpy as np

from runtime_support._kernels import kernel
from runtime_support.exact import exact_matmul, exact_softmax
from runtime_support.exact_math import exact_tanh

__all__ = ["attention", "exact_attention", "rotary_embedding"]


def _heads(x: np.ndarray, num_heads, what: str) -> np.ndarray:
    """A 3-D (batch, sequence, heads * head_size) input as 4-D (batch, heads, sequence, head_size)."""
    if x.ndim == 4:
        return x
    if x.ndim != 3:
        raise ValueError(f"Attention: {what} must be 3-D or 4-D, got shape {x.shape}")
    if not num_heads or x.shape[2] % num_heads:
        raise ValueError(
            f"Attention: the hidden size {x.shape[2]} of 3-D {what} is not a multiple of its "
            f"number of heads ({num_heads})"
        )
    batch, sequence, hidden = x.shape
    return x.reshape(batch, sequence, num_heads, hidden // num_heads).transpose(0, 2, 1, 3)


def _mask_bias(attn_mask: np.ndarray, total: int, dtype: np.dtype) -> np.ndarray:
    """attn_mask as an additive bias of `dtype`: a boolean mask gives 0 where True and -inf where
    False; any other mask is added as it is. Keys beyond a shorter last axis are masked."""
    short = total - attn_mask.shape[-1]
    if short < 0:
        raise ValueError(
            f"Attention: attn_mask covers {attn_mask.shape[-1]} keys, there are only {total}"
        )
    if attn_mask.dtype == np.bool_:
        bias = np.where(attn_mask, dtype.type(0), dtype.type(-np.inf))
    else:
        bias = attn_mask.astype(dtype)
    if short:
        pad = np.full(bias.shape[:-1] + (short,), -np.inf, dtype=dtype)
        bias = np.concatenate((bias, pad), axis=-1)
    return bias


def _allowed(queries, total, offset, nonpad_kv_seqlen, is_causal, left, right):
    """Which keys each query may see under the causal rule, the sliding window and the padding of
    an external cache: (queries, total) or, with per-batch offsets, (batch, 1, queries, total).
    None when nothing restricts them."""
    if not (is_causal or left >= 0 or right >= 0 or nonpad_kv_seqlen is not None):
        return None
    key = np.arange(total)
    position = np.arange(queries).reshape(-1, 1) + offset  # absolute position of each query
    allowed = np.ones(np.broadcast_shapes(position.shape, key.shape), dtype=np.bool_)
    if is_causal:
        allowed &= key <= position
    if left >= 0:
        allowed &= key >= position - left
    if right >= 0:
        allowed &= key <= position + right
    if nonpad_kv_seqlen is not None:
        allowed &= key < nonpad_kv_seqlen.reshape(-1, 1, 1, 1)
    return allowed


def _softmax(scores: np.ndarray) -> np.ndarray:
    """exp(x - max) / sum(exp(x - max)) along the last axis; a row that is -inf throughout gives
    zeros (its maximum is taken as 0, its sum of zeros as 1)."""
    zero, one = scores.dtype.type(0), scores.dtype.type(1)
    peak = scores.max(axis=-1, keepdims=True)
    peak = np.where(np.isneginf(peak), zero, peak)
    e = np.exp(scores - peak)
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total == zero, one, total)


def _exact_softmax(scores: np.ndarray) -> np.ndarray:
    """_softmax by exact_softmax: a row that is -inf throughout gives zeros (exact_softmax's NaNs
    there replaced, as _softmax's peak of 0 and sum of 1 give)."""
    with np.errstate(invalid="ignore"):
        probabilities = exact_softmax(scores, axis=-1)
    empty = np.isneginf(scores.max(axis=-1, keepdims=True))
    return np.where(empty, probabilities.dtype.type(0), probabilities)


class _Fast:
    matmul = staticmethod(np.matmul)
    tanh = staticmethod(np.tanh)
    softmax = staticmethod(_softmax)


class _Exact:
    matmul = staticmethod(exact_matmul)
    tanh = staticmethod(exact_tanh)
    softmax = staticmethod(_exact_softmax)


def _grouped_matmul(a: np.ndarray, b: np.ndarray, kv_heads: int, matmul=np.matmul) -> np.ndarray:
    """a (batch, q_heads, m, k) @ b (batch, kv_heads, k, n): query head h uses key/value head
    h // (q_heads / kv_heads)."""
    batch, q_heads, m, _ = a.shape
    if q_heads % kv_heads:
        raise ValueError(
            f"Attention: {q_heads} query heads cannot share {kv_heads} key/value heads evenly"
        )
    grouped = a.reshape(batch, kv_heads, q_heads // kv_heads, m, a.shape[-1])
    product = matmul(grouped, b[:, :, np.newaxis])
    return product.reshape(batch, q_heads, m, b.shape[-1])


@kernel(exact=False, exact_twin="rt.exact_attention")
def attention(
    Q,
    K,
    V,
    attn_mask=None,
    past_key=None,
    past_value=None,
    nonpad_kv_seqlen=None,
    **attributes,
):
    """ONNX Attention: (Y, present_key, present_value, qk_matmul_output); see _attention."""
    return _attention(
        _Fast, Q, K, V, attn_mask, past_key, past_value, nonpad_kv_seqlen, **attributes
    )


@kernel(exact=True)
def exact_attention(
    Q,
    K,
    V,
    attn_mask=None,
    past_key=None,
    past_value=None,
    nonpad_kv_seqlen=None,
    **attributes,
):
    """attention with exact products, tanh and softmax (the module docstring); same arguments."""
    return _attention(
        _Exact, Q, K, V, attn_mask, past_key, past_value, nonpad_kv_seqlen, **attributes
    )


def _attention(
    arithmetic,
    Q,
    K,
    V,
    attn_mask=None,
    past_key=None,
    past_value=None,
    nonpad_kv_seqlen=None,
    *,
    is_causal=0,
    kv_num_heads=None,
    q_num_heads=None,
    qk_matmul_output_mode=0,
    scale=None,
    softcap=0.0,
    softmax_precision=None,
    left_window_size=-1,
    right_window_size=-1,
):
    """ONNX Attention: (Y, present_key, present_value, qk_matmul_output).

    Q, K, V are 4-D (batch, heads, sequence, head_size) or 3-D (batch, sequence, hidden) with
    `q_num_heads` and `kv_num_heads`. `scale` defaults to 1/sqrt(head_size); `softmax_precision`
    is the numpy dtype the softmax runs in (default: the query's). `qk_matmul_output_mode` picks
    the fourth result: 0 the scaled scores, 1 after the soft cap, 2 with the bias added, 3 the
    softmax. Y keeps the rank of Q; the present key and value are 4-D."""
    dtype = Q.dtype
    q = _heads(Q, q_num_heads, "Q")
    k = _heads(K, kv_num_heads, "K")
    v = _heads(V, kv_num_heads, "V")
    if (past_key is None) != (past_value is None):
        raise ValueError("Attention: past_key and past_value come together")
    if past_key is not None:
        if nonpad_kv_seqlen is not None:
            raise ValueError("Attention: nonpad_kv_seqlen cannot be used with past_key")
        k = np.concatenate((past_key, k), axis=2)
        v = np.concatenate((past_value, v), axis=2)
    present_key, present_value = k, v
    queries, total, kv_heads = q.shape[2], k.shape[2], k.shape[1]

    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[3])
    root = dtype.type(math.sqrt(scale))  # Q and K are each scaled by sqrt(scale)
    key_t = np.swapaxes(k * root, -1, -2)
    scores = _grouped_matmul(q * root, key_t, kv_heads, arithmetic.matmul).astype(dtype, copy=False)
    raw = scores
    if softcap > 0:
        cap = dtype.type(softcap)
        scores = cap * arithmetic.tanh(scores / cap)
    capped = scores

    bias = None
    if attn_mask is not None:
        bias = _mask_bias(attn_mask, total, dtype)
    if nonpad_kv_seqlen is not None:
        offset = (nonpad_kv_seqlen.astype(np.int64) - queries).reshape(-1, 1, 1, 1)
    else:
        offset = 0 if past_key is None else past_key.shape[2]
    allowed = _allowed(
        queries, total, offset, nonpad_kv_seqlen, is_causal, left_window_size, right_window_size
    )
    if allowed is not None:
        structure = np.where(allowed, dtype.type(0), dtype.type(-np.inf))
        bias = structure if bias is None else bias + structure
    if bias is not None:
        scores = scores + bias

    work = scores if softmax_precision is None else scores.astype(softmax_precision)
    probabilities = arithmetic.softmax(work)
    if bias is not None:  # a row without any visible key gives zeros, even where scores are NaN
        masked = np.isneginf(bias).all(axis=-1, keepdims=True)
        probabilities = np.where(masked, probabilities.dtype.type(0), probabilities)
    probabilities = probabilities.astype(dtype, copy=False)

    y = _grouped_matmul(probabilities, v, kv_heads, arithmetic.matmul).astype(dtype, copy=False)
    if Q.ndim == 3:
        batch, heads, _, head_size = y.shape
        y = y.transpose(0, 2, 1, 3).reshape(batch, queries, heads * head_size)
    qk = (raw, capped, scores, probabilities)[qk_matmul_output_mode]
    return y, present_key, present_value, qk


def _one_nan(x: np.ndarray) -> np.ndarray:
    """x with every NaN as numpy's `np.nan`: which NaN an operation on NaNs passes on (its sign and
    payload) differs between machines, and RotaryEmbedding is exact."""
    return np.where(np.isnan(x), x.dtype.type(np.nan), x)


def rotary_embedding(
    X,
    cos_cache,
    sin_cache,
    position_ids=None,
    *,
    interleaved=0,
    num_heads=0,
    rotary_embedding_dim=0,
):
    """ONNX RotaryEmbedding. X is 4-D (batch, heads, sequence, head_size) or 3-D (batch,
    sequence, num_heads * head_size). The first `rotary_embedding_dim` features of each head (all
    of them when 0) are rotated pairwise, the pairs being the two halves of that span or, when
    `interleaved`, its even and odd features: (x1, x2) -> (cos x1 - sin x2, sin x1 + cos x2).
    cos_cache and sin_cache hold the angles' cosines and sines by position (2-D, looked up at
    `position_ids`) or by batch and sequence (3-D, when `position_ids` is absent)."""
    if X.ndim == 4:
        x = X
    elif X.ndim == 3 and num_heads and X.shape[2] % num_heads == 0:
        batch, sequence, hidden = X.shape
        x = X.reshape(batch, sequence, num_heads, hidden // num_heads).transpose(0, 2, 1, 3)
    else:
        raise ValueError(
            f"RotaryEmbedding: input of shape {X.shape} needs to be 4-D, or 3-D with num_heads "
            f"({num_heads}) dividing its last axis"
        )
    rotated = rotary_embedding_dim or x.shape[3]
    if rotated % 2 or rotated > x.shape[3]:
        raise ValueError(
            f"RotaryEmbedding: cannot rotate {rotated} features of heads of size {x.shape[3]}"
        )
    if position_ids is not None:
        if position_ids.size and not (
            0 <= position_ids.min() and position_ids.max() < cos_cache.shape[0]
        ):
            raise ValueError(f"RotaryEmbedding: position_ids must lie in [0, {cos_cache.shape[0]})")
        cos_cache, sin_cache = cos_cache[position_ids], sin_cache[position_ids]
    # (batch, sequence, rotated / 2) -> (batch, 1, sequence, rotated / 2) beside the heads
    cos, sin = cos_cache[:, np.newaxis], sin_cache[:, np.newaxis]
    if interleaved:
        first, second = slice(0, rotated, 2), slice(1, rotated, 2)
    else:
        first, second = slice(0, rotated // 2), slice(rotated // 2, rotated)
    x1, x2 = x[..., first], x[..., second]
    y = x.copy()
    y[..., first] = _one_nan(cos * x1 - sin * x2)
    y[..., second] = _one_nan(sin * x1 + cos * x2)
    if X.ndim == 3:
        y = y.transpose(0, 2, 1, 3).reshape(X.shape)
    return y
