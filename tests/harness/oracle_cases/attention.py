"""Oracle cases of the attention family (onemodel_compile/ops/attention.py: Attention and
RotaryEmbedding).

Not covered here, with the reason:
- Attention at opset 25 (left_window_size, right_window_size): onnxruntime 1.31.1 loads the
  default domain up to opset 26 but its Attention kernel does not know the window attributes (the
  backend cases test_attention_*window* cover them);
- an attn_mask shorter than the total key length: onnxruntime refuses it, the settled semantics
  (docs/contract.md) pad it with masked keys (backend cases test_attention_4d_*padded_kv*;
  tests/test_settled_attention.py);
- bfloat16: onnxruntime's Python binding takes and returns no bfloat16 arrays.
"""

from __future__ import annotations

import numpy as np

from tests.harness.oracle import Case, c, v, x

OPERATORS = ("Attention", "RotaryEmbedding")

MASKED_LOWEST = (
    "qk_matmul_output_mode 2 with is_causal: onnxruntime writes the lowest float32 at the keys "
    "the causal rule masks, the ONNX reference and the backend data (test_attention_4d_with_past_"
    "and_present_qk_matmul_bias_3d_mask_causal) -inf, as the compiler does"
)

_rng = np.random.default_rng(20231)

# A float mask with -inf at a few keys, and a whole query row at -inf (that row gives zeros).
_NEG_INF_MASK = _rng.standard_normal((4, 6)).astype(np.float32)
_NEG_INF_MASK[0, [1, 4]] = -np.inf
_NEG_INF_MASK[2, :] = -np.inf

# A boolean mask (batch 2, 1 head axis broadcast, 3 queries, 5 keys) with one fully masked row.
_BOOL_MASK = _rng.random((2, 1, 3, 5)) < 0.7
_BOOL_MASK[1, 0, 2, :] = False

_BH = {"n": (1, 2), "s": (1, 5), "t": (1, 6)}


def _f(*shape, dtype="float32", **options):
    return x(*shape, dtype=dtype, **options)


CASES = [
    # --- Attention: heads and layouts
    Case(
        "attention_4d_basic",
        "Attention",
        23,
        (_f("n", 3, "s", 8), _f("n", 3, "t", 8), _f("n", 3, "t", 8)),
        dims=_BH,
    ),
    Case(
        "attention_3d_gqa",
        "Attention",
        23,
        (_f("n", "s", 24), _f("n", "t", 12), _f("n", "t", 10)),
        attrs={"q_num_heads": 4, "kv_num_heads": 2},
        dims=_BH,
    ),
    Case(
        "attention_4d_mqa_scaled_float_mask",
        "Attention",
        23,
        (_f(2, 4, 3, 8), _f(2, 1, 5, 8), _f(2, 1, 5, 6), _f(2, 4, 3, 5)),
        attrs={"scale": 0.3},
    ),
    Case(
        "attention_3d_diff_head_sizes_dynamic",
        "Attention",
        24,
        (
            _f("n", "s", 18, dynamic=True),
            _f("n", "t", 18, dynamic=True),
            _f("n", "t", 12, dynamic=True),
        ),
        attrs={"q_num_heads": 3, "kv_num_heads": 3},
        dims=_BH,
    ),
    # --- masks, causal rule, past key and value
    Case(
        "attention_bool_mask_causal_fully_masked_row",
        "Attention",
        23,
        (_f(2, 2, 3, 4), _f(2, 2, 5, 4), _f(2, 2, 5, 4), v(_BOOL_MASK, "bool")),
        attrs={"is_causal": 1},
    ),
    Case(
        "attention_neg_inf_mask_softcap",
        "Attention",
        23,
        (
            _f(1, 2, 4, 8, scale=3.0),
            _f(1, 2, 6, 8, scale=3.0),
            _f(1, 2, 6, 8),
            v(_NEG_INF_MASK, "float32"),
        ),
        attrs={"softcap": 0.5},
    ),
    Case(
        "attention_past_present_causal_gqa",
        "Attention",
        23,
        (
            _f("n", 4, 3, 8),
            _f("n", 2, 3, 8),
            _f("n", 2, 3, 8),
            _f(1, 3, 7),
            _f("n", 2, 4, 8),
            _f("n", 2, 4, 8),
        ),
        attrs={"is_causal": 1},
        outputs=3,
        dims={"n": (1, 3)},
    ),
    Case(
        "attention_3d_past_present_bool_mask",
        "Attention",
        24,
        (
            _f(2, 2, 12),
            _f(2, 2, 12),
            _f(2, 2, 12),
            x(2, 5, dtype="bool", gen="bool"),
            _f(2, 3, 3, 4),
            _f(2, 3, 3, 4),
        ),
        attrs={"q_num_heads": 3, "kv_num_heads": 3},
        outputs=3,
    ),
    Case(
        "attention_causal_more_queries_than_keys",
        "Attention",
        23,
        (_f(1, 2, 6, 4), _f(1, 2, 3, 4), _f(1, 2, 3, 4)),
        attrs={"is_causal": 1},
    ),
    Case(
        "attention_nan_and_inf_in_query",
        "Attention",
        23,
        (_f(1, 2, 5, 4, special=True), _f(1, 2, 5, 4), _f(1, 2, 5, 4)),
    ),
    Case(
        "attention_24_nonpad_causal",
        "Attention",
        24,
        (_f(3, 2, 2, 8), _f(3, 2, 6, 8), _f(3, 2, 6, 8), None, None, None, v([6, 3, 4], "int64")),
        attrs={"is_causal": 1},
    ),
    Case(
        "attention_24_nonpad_gqa_decode",
        "Attention",
        24,
        (
            _f(2, 4, 1, 8),
            _f(2, 2, 7, 8),
            _f(2, 2, 7, 8),
            _f(2, 1, 1, 7),
            None,
            None,
            v([7, 2], "int64"),
        ),
    ),
    # --- the optional qk_matmul_output at each mode
    Case(
        "attention_qk_mode0_with_softcap",
        "Attention",
        23,
        (_f(2, 3, 4, 8), _f(2, 3, 6, 8), _f(2, 3, 6, 8)),
        attrs={"softcap": 1.5},
        outputs=4,
        skip_outputs=(1, 2),
    ),
    Case(
        "attention_qk_mode1_softcap_mask",
        "Attention",
        23,
        (_f(2, 3, 4, 8), _f(2, 3, 6, 8), _f(2, 3, 6, 8), _f(4, 6)),
        attrs={"softcap": 2.0, "qk_matmul_output_mode": 1},
        outputs=4,
        skip_outputs=(1, 2),
    ),
    Case(
        "attention_qk_mode2_float_mask_past",
        "Attention",
        23,
        (
            _f(2, 3, 4, 8),
            _f(2, 3, 2, 8),
            _f(2, 3, 2, 8),
            _f(2, 1, 4, 5),
            _f(2, 3, 3, 8),
            _f(2, 3, 3, 8),
        ),
        attrs={"qk_matmul_output_mode": 2},
        outputs=4,
    ),
    Case(
        "attention_qk_mode2_causal",
        "Attention",
        23,
        (_f(1, 2, 3, 4), _f(1, 2, 5, 4), _f(1, 2, 5, 4)),
        attrs={"qk_matmul_output_mode": 2, "is_causal": 1},
        outputs=4,
        skip_outputs=(1, 2),
        divergence=MASKED_LOWEST,
    ),
    Case(
        "attention_qk_mode3_fully_masked_row",
        "Attention",
        23,
        (_f(2, 2, 3, 4), _f(2, 2, 5, 4), _f(2, 2, 5, 4), v(_BOOL_MASK, "bool")),
        attrs={"qk_matmul_output_mode": 3},
        outputs=4,
        skip_outputs=(1, 2),
    ),
    # --- element types and softmax precision
    Case(
        "attention_float16_softmax_precision_float",
        "Attention",
        23,
        (
            _f(2, 2, 3, 8, dtype="float16"),
            _f(2, 2, 4, 8, dtype="float16"),
            _f(2, 2, 4, 8, dtype="float16"),
        ),
        attrs={"softmax_precision": 1, "qk_matmul_output_mode": 3},
        outputs=4,
        skip_outputs=(1, 2),
    ),
    Case(
        "attention_float16_gqa_causal",
        "Attention",
        24,
        (
            _f(1, 4, 3, 8, dtype="float16"),
            _f(1, 2, 3, 8, dtype="float16"),
            _f(1, 2, 3, 8, dtype="float16"),
        ),
        attrs={"is_causal": 1},
    ),
    Case(
        "attention_float64",
        "Attention",
        23,
        (
            _f(2, 2, 3, 5, dtype="float64"),
            _f(2, 2, 4, 5, dtype="float64"),
            _f(2, 2, 4, 5, dtype="float64"),
            _f(3, 4, dtype="float64"),
        ),
        attrs={"scale": 0.5},
        rtol=1e-6,
        atol=1e-7,
        note="float64: onnxruntime's result is float32-accurate (about 1e-8 off), the compiler "
        "computes in float64",
    ),
    # --- RotaryEmbedding
    Case(
        "rotary_4d_position_ids",
        "RotaryEmbedding",
        23,
        (
            _f("n", 3, "s", 8),
            _f(20, 4, gen="uniform", low=-1, high=1),
            _f(20, 4, gen="uniform", low=-1, high=1),
            x("n", "s", dtype="int64", gen="int", low=0, high=19),
        ),
        dims={"n": (1, 3), "s": (1, 6)},
    ),
    Case(
        "rotary_3d_interleaved_partial",
        "RotaryEmbedding",
        23,
        (
            _f(2, "s", 32, special=True),
            _f(10, 2, gen="uniform", low=-1, high=1),
            _f(10, 2, gen="uniform", low=-1, high=1),
            x(2, "s", dtype="int64", gen="int", low=0, high=9),
        ),
        attrs={"num_heads": 4, "interleaved": 1, "rotary_embedding_dim": 4},
        dims={"s": (1, 5)},
    ),
    Case(
        "rotary_no_position_ids_partial",
        "RotaryEmbedding",
        23,
        (
            _f(2, 2, 3, 10),
            _f(2, 3, 3, gen="uniform", low=-1, high=1),
            _f(2, 3, 3, gen="uniform", low=-1, high=1),
        ),
        attrs={"rotary_embedding_dim": 6},
    ),
    Case(
        "rotary_no_position_ids_interleaved_3d",
        "RotaryEmbedding",
        23,
        (
            _f(1, 4, 12),
            _f(1, 4, 3, gen="uniform", low=-1, high=1),
            _f(1, 4, 3, gen="uniform", low=-1, high=1),
        ),
        attrs={"num_heads": 2, "interleaved": 1},
    ),
    Case(
        "rotary_float16",
        "RotaryEmbedding",
        23,
        (
            _f(1, 2, 4, 8, dtype="float16"),
            _f(8, 4, dtype="float16", gen="uniform", low=-1, high=1),
            _f(8, 4, dtype="float16", gen="uniform", low=-1, high=1),
            c([[0, 3, 5, 7]], "int64"),
        ),
    ),
    Case(
        "rotary_empty_sequence",
        "RotaryEmbedding",
        23,
        (_f(2, 2, 0, 4), _f(5, 2), _f(5, 2), x(2, 0, dtype="int64", gen="int", low=0, high=4)),
    ),
]
