"""Settled semantics of Attention (docs/contract.md "Settled semantics"), one test per rule, each failing
when the rule is broken:

- the soft cap applies before the mask;
- `is_causal` lets query i see keys j <= i + past_sequence_length;
- a mask shorter than the key length masks the remainder;

and the specification's fully-masked-row rule (zeros, not NaN), in both variants.

Expected values come from `_reference`, plain Python loops over queries and keys written here (never
the code under test), cross-checked against the ONNX backend data where a backend case exercises
the rule. Each synthetic test also checks that the rule's alternatives give other values, so that
the inputs really tell the rules apart.
"""

from __future__ import annotations

import math

import numpy as np
import onnx
import pytest
from onnx import helper

from onemodel_compile import load_compiled
from tests.harness import backend_cases

IR_VERSION = 10
NAMES = ("Q", "K", "V", "attn_mask", "past_key", "past_value", "nonpad_kv_seqlen")
OUTPUTS = ("Y", "present_key", "present_value", "qk_matmul_output")


def _model(inputs: dict, attrs=None, opset=23, outputs=("Y",)):
    """A one-node Attention model; `inputs` maps input names (NAMES) to arrays, all graph inputs;
    `outputs` names the node's outputs in order ("" for one not asked for)."""
    listed = [name if name in inputs else "" for name in NAMES]
    while listed[-1] == "":
        listed.pop()
    node = helper.make_node("Attention", listed, list(outputs), **(attrs or {}))
    graph = helper.make_graph(
        [node],
        "attention",
        [
            helper.make_tensor_value_info(
                name, helper.np_dtype_to_tensor_dtype(inputs[name].dtype), inputs[name].shape
            )
            for name in listed
            if name
        ],
        [helper.make_empty_tensor_value_info(name) for name in outputs if name],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = IR_VERSION
    inferred = {i.name: i for i in onnx.shape_inference.infer_shapes(model).graph.output}
    del model.graph.output[:]
    model.graph.output.extend(inferred[name] for name in outputs if name)
    return model


def _run(inputs: dict, attrs=None, opset=23, outputs=("Y",), variant="fast"):
    module = load_compiled(_model(inputs, attrs, opset, outputs), variant)
    return module.run(*(inputs[name] for name in NAMES if name in inputs))


def _reference(
    q,
    k,
    v,
    mask=None,
    past_key=None,
    past_value=None,
    *,
    causal=False,
    softcap=0.0,
    offset=None,
    pad_visible=False,
    cap_after_mask=False,
):
    """Attention of 4-D float arrays by loops, in float64. `offset` overrides the causal offset
    (default: the past sequence length); `pad_visible` lets the keys a short mask does not cover
    be seen, `cap_after_mask` applies the soft cap after the mask: the alternatives to the settled
    rules, for checking that a test's inputs tell them apart. Returns (Y, probabilities)."""
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    past = 0
    if past_key is not None:
        past = past_key.shape[2]
        k = np.concatenate((np.asarray(past_key, np.float64), k), axis=2)
        v = np.concatenate((np.asarray(past_value, np.float64), v), axis=2)
    if offset is None:
        offset = past
    batch, heads, queries, size = q.shape
    total = k.shape[2]
    group = heads // k.shape[1]
    scale = 1.0 / math.sqrt(size)
    if mask is not None:
        mask = np.broadcast_to(mask, (batch, heads, queries, mask.shape[-1]))
    y = np.zeros((batch, heads, queries, v.shape[3]))
    probabilities = np.zeros((batch, heads, queries, total))
    for b in range(batch):
        for h in range(heads):
            kv = h // group
            for i in range(queries):
                logits = []
                for j in range(total):
                    score = scale * sum(q[b, h, i, d] * k[b, kv, j, d] for d in range(size))
                    if softcap and not cap_after_mask:
                        score = softcap * math.tanh(score / softcap)
                    bias = 0.0
                    if mask is not None:
                        if j < mask.shape[-1]:
                            m = mask[b, h, i, j]
                            bias += (0.0 if m else -math.inf) if mask.dtype == bool else float(m)
                        elif not pad_visible:
                            bias = -math.inf
                    if causal and j > i + offset:
                        bias = -math.inf
                    score += bias
                    if softcap and cap_after_mask:
                        score = softcap * math.tanh(score / softcap)
                    logits.append(score)
                if all(s == -math.inf for s in logits):
                    continue  # no visible key: zeros
                peak = max(logits)
                weights = [math.exp(s - peak) for s in logits]
                norm = sum(weights)
                for j in range(total):
                    p = weights[j] / norm
                    probabilities[b, h, i, j] = p
                    y[b, h, i] += p * v[b, kv, j]
    return y, probabilities


def _random(seed, *shapes):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for shape in shapes]


def _close(actual, expected, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(actual, np.float64), expected, rtol=rtol, atol=atol)


def _differs(a, b):
    return np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)).max() > 1e-3


def _backend(name):
    case = backend_cases.case(name)
    inputs, outputs = case.data_sets[0]
    names = [i.name for i in case.model.graph.input]
    arrays = dict(zip(names, (np.asarray(a) for a in inputs)))
    return case, arrays, [np.asarray(a) for a in outputs]


def _compiled_backend(case, arrays):
    module = load_compiled(case.model, "fast")
    return module.run(*(arrays[i.name] for i in case.model.graph.input))


# --- softcap before the mask -------------------------------------------------------------------


def test_attention_softcap_before_the_mask():
    q, k, v = _random(1, (1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 4))
    q *= 3
    mask = np.array(
        [[0.0, -np.inf, 1.5, 0.0, -0.5], [2.0, 0.0, -np.inf, -np.inf, 0.0], [0.0] * 5],
        dtype=np.float32,
    )
    softcap = 0.75
    (y,) = _run({"Q": q, "K": k, "V": v, "attn_mask": mask}, {"softcap": softcap})
    expected, _ = _reference(q, k, v, mask, softcap=softcap)
    _close(y, expected)
    # capped after the mask, -inf would become -softcap and the masked keys would count
    assert _differs(expected, _reference(q, k, v, mask, softcap=softcap, cap_after_mask=True)[0])

    # the backend data agree: a -inf mask under a small soft cap
    case, arrays, (want,) = _backend("test_attention_4d_softcap_neginf_mask")
    softcap = next(a.f for a in case.model.graph.node[0].attribute if a.name == "softcap")
    ours, _ = _reference(
        arrays["Q"], arrays["K"], arrays["V"], arrays["attn_mask"], softcap=softcap
    )
    _close(ours, want, rtol=1e-4, atol=1e-6)
    _close(_compiled_backend(case, arrays)[0], want, rtol=1e-4, atol=1e-6)
    other, _ = _reference(
        arrays["Q"],
        arrays["K"],
        arrays["V"],
        arrays["attn_mask"],
        softcap=softcap,
        cap_after_mask=True,
    )
    assert _differs(want, other)


# --- is_causal with a past sequence ---------------------------------------------------------------


@pytest.mark.parametrize("opset", [23, 24])
def test_attention_is_causal_with_past_sequence_length(opset):
    # 2 new queries, 3 new keys, 4 past keys: query i sees keys j <= i + 4
    q, k, v, past_key, past_value = _random(
        2, (2, 4, 2, 8), (2, 2, 3, 8), (2, 2, 3, 8), (2, 2, 4, 8), (2, 2, 4, 8)
    )
    inputs = {"Q": q, "K": k, "V": v, "past_key": past_key, "past_value": past_value}
    y, present_key, present_value, qk = _run(
        inputs, {"is_causal": 1, "qk_matmul_output_mode": 3}, opset, OUTPUTS
    )
    expected, probabilities = _reference(q, k, v, None, past_key, past_value, causal=True)
    _close(y, expected)
    _close(qk, probabilities)
    assert (qk[:, :, 0, 5:] == 0).all() and (qk[:, :, 0, :5] > 0).all()
    assert (qk[:, :, 1, 6:] == 0).all() and (qk[:, :, 1, :6] > 0).all()
    np.testing.assert_array_equal(present_key, np.concatenate((past_key, k), axis=2))
    np.testing.assert_array_equal(present_value, np.concatenate((past_value, v), axis=2))
    # top-left alignment (offset 0) or alignment on the last key (offset total - queries = 5)
    for offset in (0, 5):
        other, _ = _reference(q, k, v, None, past_key, past_value, causal=True, offset=offset)
        assert _differs(expected, other), offset

    # the backend data agree: 4 queries, 6 new keys, 12 past keys (offset 12, not 14)
    name = "test_attention_4d_with_past_and_present_qk_matmul_bias_4d_mask_causal"
    case, arrays, want = _backend(name)
    args = [arrays[n] for n in ("Q", "K", "V", "attn_mask", "past_key", "past_value")]
    ours, _ = _reference(*args, causal=True)
    _close(ours, want[0], rtol=1e-4, atol=1e-6)
    _close(_compiled_backend(case, arrays)[0], want[0], rtol=1e-4, atol=1e-6)
    assert _differs(want[0], _reference(*args, causal=True, offset=14)[0])


# --- a short mask masks the remaining keys --------------------------------------------------------


@pytest.mark.parametrize("opset", [23, 24])
@pytest.mark.parametrize("kind", ["float", "bool"])
def test_attention_short_mask_masks_the_remainder(opset, kind):
    q, k, v, past_key, past_value = _random(
        3, (1, 2, 3, 4), (1, 2, 4, 4), (1, 2, 4, 4), (1, 2, 2, 4), (1, 2, 2, 4)
    )
    rng = np.random.default_rng(4)
    # 6 keys (2 past, 4 new); the mask covers the first 4
    if kind == "bool":
        mask = rng.random((3, 4)) < 0.7
        mask[:, 0] = True  # every query keeps a visible key
    else:
        mask = rng.standard_normal((1, 2, 3, 4)).astype(np.float32)
    inputs = {
        "Q": q,
        "K": k,
        "V": v,
        "attn_mask": mask,
        "past_key": past_key,
        "past_value": past_value,
    }
    y, _, _, qk = _run(inputs, {"qk_matmul_output_mode": 3}, opset, OUTPUTS)
    expected, probabilities = _reference(q, k, v, mask, past_key, past_value)
    _close(y, expected)
    _close(qk, probabilities)
    assert (qk[..., 4:] == 0).all()
    # keys past the mask's end left visible instead
    assert _differs(expected, _reference(q, k, v, mask, past_key, past_value, pad_visible=True)[0])

    # the backend data agree (a 4-key mask over 6 keys; there nonpad_kv_seqlen <= 4 masks those
    # keys too, so these data are consistent with the rule without singling it out)
    case, arrays, (want,) = _backend("test_attention_4d_diff_heads_mask4d_padded_kv")
    _close(_compiled_backend(case, arrays)[0], want, rtol=1e-4, atol=1e-6)


# --- a fully masked row gives zeros -------------------------------------------------------------


def test_attention_fully_masked_row_gives_zeros():
    q, k, v = _random(5, (1, 2, 3, 4), (1, 2, 4, 4), (1, 2, 4, 4))
    mask = np.array([[True, False, True, True], [False] * 4, [True] * 4])
    y, qk = _run(
        {"Q": q, "K": k, "V": v, "attn_mask": mask},
        {"qk_matmul_output_mode": 3},
        outputs=("Y", "", "", "qk_matmul_output"),
    )
    expected, probabilities = _reference(q, k, v, mask)
    assert not np.isnan(y).any() and (y[:, :, 1] == 0).all() and (qk[:, :, 1] == 0).all()
    _close(y, expected)
    _close(qk, probabilities)

    case, arrays, want = _backend("test_attention_23_fullymasked_qk_matmul_output_mode3_zero")
    ours = _reference(arrays["Q"], arrays["K"], arrays["V"], arrays["attn_mask"])
    for got, ref, data in zip(_compiled_backend(case, arrays), ours, want):
        _close(ref, data, rtol=1e-4, atol=1e-6)
        _close(got, data, rtol=1e-4, atol=1e-6)


# --- exactness -----------------------------------------------------------------------------------


@pytest.mark.parametrize("opset", [23, 24, 25])
def test_attention_in_the_exact_variant_follows_the_rules(opset):
    """The exact variant compiles Attention (exact_matmul, exact_tanh, exact_softmax) and keeps
    every settled rule: soft cap before a mask, causal, a fully masked row of zeros; its values
    are the loop reference's to float32 accuracy."""
    q, k, v = _random(6, (2, 2, 3, 4), (2, 2, 3, 4), (2, 2, 3, 4))
    mask = np.ones((3, 3), dtype=bool)
    mask[1] = False  # query 1 sees no key
    inputs = {"Q": q, "K": k, "V": v, "attn_mask": mask}
    attrs = {"softcap": 2.0, "is_causal": 1}
    y = _run(inputs, attrs, opset=opset, variant="exact").Y
    want, _ = _reference(q, k, v, mask, causal=True, softcap=2.0)
    np.testing.assert_allclose(y, want, rtol=2e-6, atol=2e-7)
    assert np.all(y[:, :, 1] == 0) and not np.signbit(y[:, :, 1]).any()
    np.testing.assert_allclose(y, _run(inputs, attrs, opset=opset).Y, rtol=1e-5, atol=1e-6)
