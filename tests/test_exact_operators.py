"""The exact kernels of the operators that left the refusal list last (docs/exact-variant.md):
exact_softmax_cross_entropy_loss, exact_attention, and GridSample and RoiAlign, whose kernels are
exact in both variants. Against independent references (numpy longdouble, the x87 extended
format, for the softmax and the attention; onnxruntime's values are the backend and oracle
cases'), the rules each adds (a NaN grid position, batch independence), and the same bits with
numpy's SIMD code switched off and under another numpy (subprocess digests)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import runtime_support as rt
from tests.harness.bit_identity import NO_AVX2, other_numpy_python, run_json_script

LD = np.longdouble


def _log_softmax_ld(x: np.ndarray) -> np.ndarray:
    """log-softmax over axis 1 in longdouble (64-bit significand: 2**-63 per operation)."""
    x = x.astype(LD)
    shifted = x - x.max(axis=1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_softmax_cross_entropy_loss_against_longdouble(dtype, reduction):
    rng = np.random.default_rng(3)
    scores = (rng.standard_normal((5, 7, 3)) * 4).astype(dtype)
    labels = rng.integers(0, 7, (5, 3))
    labels[0, 0] = -1  # ignored
    weights = rng.uniform(0.5, 2, 7).astype(dtype)
    loss, log_prob = rt.exact_softmax_cross_entropy_loss(
        scores, labels, weights, ignore_index=-1, reduction=reduction
    )
    want = _log_softmax_ld(scores)
    eps = float(np.finfo(dtype).eps)
    # the sum of the exponentials is rounded to the type once: log's absolute error ~ eps
    assert log_prob.dtype == dtype
    assert np.all(np.abs(log_prob.astype(LD) - want) <= 2 * eps * (1 + np.abs(want)))
    index = np.where(labels == -1, 0, labels)
    w = np.where(labels == -1, 0, weights[index]).astype(LD)
    losses = -np.take_along_axis(want, index[:, None], axis=1)[:, 0] * w
    expected = {"none": losses, "sum": losses.sum(), "mean": losses.sum() / w.sum()}[reduction]
    assert loss.dtype == dtype and loss.shape == np.shape(expected)
    np.testing.assert_allclose(loss.astype(np.float64), expected.astype(np.float64), rtol=8 * eps)


def _attention_ld(q, k, v, mask=None, softcap=0.0):
    """Attention of 4-D arrays in longdouble, heads grouped as the ONNX operator groups them."""
    q, k, v = (a.astype(LD) for a in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    scores = np.einsum("bhid,bhjd->bhij", q, k) / LD(math.sqrt(q.shape[-1]))
    if softcap:
        scores = softcap * np.tanh(scores / softcap)
    if mask is not None:
        scores = scores + np.where(mask, 0, -np.inf).astype(LD)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return np.einsum("bhij,bhjd->bhid", e / e.sum(axis=-1, keepdims=True), v)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("softcap", [0.0, 3.0])
def test_attention_against_longdouble(dtype, softcap):
    rng = np.random.default_rng(11)
    q = rng.standard_normal((2, 4, 5, 8)).astype(dtype)
    k = rng.standard_normal((2, 2, 6, 8)).astype(dtype)
    v = rng.standard_normal((2, 2, 6, 8)).astype(dtype)
    mask = rng.uniform(size=(5, 6)) < 0.8
    mask[:, 0] = True
    y, present_key, _, _ = rt.exact_attention(q, k, v, mask, softcap=softcap)
    want = _attention_ld(q, k, v, mask, softcap)
    eps = float(np.finfo(dtype).eps)
    assert y.dtype == dtype and np.array_equal(present_key, k)
    # sqrt(scale) rounded to the type and applied to Q and K, then products, exp, sums, quotients
    assert np.all(np.abs(y.astype(LD) - want) <= 64 * eps * (1 + np.abs(want)))


def test_attention_bits_do_not_depend_on_the_other_sequences():
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((3, 2, 4, 8)).astype(np.float32) for _ in range(3))
    together = rt.exact_attention(q, k, v, is_causal=1)[0]
    for b in range(3):
        alone = rt.exact_attention(q[b : b + 1], k[b : b + 1], v[b : b + 1], is_causal=1)[0]
        assert np.array_equal(alone, together[b : b + 1])


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_nan_position_reads_pixel_zero(mode, padding_mode):
    """A NaN coordinate cannot be cast to an index (the CPU decides what NaN becomes): it reads
    pixel 0; it is outside with zeros padding (0), its Keys weights are 0 (cubic: 0) and its
    linear weights NaN (linear with border or reflection: np.nan); the other points are
    unaffected."""
    x = np.arange(2 * 3 * 4, dtype=np.float32).reshape(1, 2, 3, 4) + 1
    grid = np.array([[[[np.nan, np.nan], [0.1, -0.3]]]], dtype=np.float32)  # (1, 1, 2, 2)
    y = rt.grid_sample(x, grid, mode=mode, padding_mode=padding_mode)
    clean = rt.grid_sample(x, grid[:, :, 1:], mode=mode, padding_mode=padding_mode)
    assert np.array_equal(y[..., 1:], clean)
    first = y[..., 0]
    if padding_mode == "zeros" or mode == "cubic":
        assert np.all(first == 0)
    elif mode == "linear":
        assert np.isnan(first).all() and not np.signbit(first).any()
    else:
        assert np.array_equal(first, x[:, :, 0, :1])


def test_roi_align_refuses_an_unbounded_sampling_grid():
    x = np.ones((1, 1, 4, 4), dtype=np.float32)
    rois = np.array([[0, 0, np.inf, 2]], dtype=np.float32)
    with pytest.raises(ValueError, match="RoiAlign: a region needs .* sampling points"):
        rt.roi_align(x, rois, np.array([0]))


DIGEST_SCRIPT = """
import hashlib, json, sys
import ml_dtypes
import numpy as np
import runtime_support as rt

def digest(*arrays):
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()

k = np.arange(2 * 4 * 9 * 16, dtype=np.uint64)
x = ((k * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(40)).astype(np.float64) / 2.0**21 - 4.0
x = x.reshape(2, 4, 9, 16)
out = {}
for dtype in (np.float32, np.float64, np.float16, ml_dtypes.bfloat16):
    q, kk, v = x[:, :, :5].astype(dtype), x[:, :2, 2:].astype(dtype), x[:, 2:, 2:].astype(dtype)
    name = np.dtype(dtype).name
    out[f"attention {name}"] = digest(*rt.exact_attention(q, kk, v, is_causal=1, softcap=5.0)[::3])
    labels = (np.arange(2 * 16).reshape(2, 16) * 7) % 4
    out[f"sce {name}"] = digest(*rt.exact_softmax_cross_entropy_loss(q[:, :4, 0], labels))
    if dtype in (np.float32, np.float64):
        image = x[:, :3].astype(dtype)
        grid = (x[:, 3, :, :12].reshape(2, 9, 6, 2) / 3.5).astype(dtype)
        for mode in ("nearest", "linear", "cubic"):
            for padding in ("zeros", "border", "reflection"):
                out[f"grid {mode} {padding} {name}"] = digest(
                    rt.grid_sample(image, grid, mode=mode, padding_mode=padding)
                )
        rois = np.array([[0.5, 1.2, 12.3, 7.9], [2.0, 0.0, 9.0, 8.5]], dtype=dtype)
        for mode in ("avg", "max"):
            out[f"roi {mode} {name}"] = digest(
                rt.roi_align(image, rois, np.array([1, 0]), mode=mode, output_height=3,
                             output_width=4, spatial_scale=0.75)
            )
json.dump(out, sys.stdout)
"""


def test_same_bits_without_simd_and_with_another_numpy():
    default = run_json_script(DIGEST_SCRIPT, {})
    assert len(default) == 2 * 4 + 2 * (9 + 2)
    assert run_json_script(DIGEST_SCRIPT, {"NPY_DISABLE_CPU_FEATURES": NO_AVX2}) == default
    assert run_json_script(DIGEST_SCRIPT, {}, other_numpy_python()) == default


def test_exact_matmul_of_operands_of_unknown_type_is_exact() -> None:
    """LinearAttention's function body multiplies inside a Scan body, where the operands' types
    are unknown: the exact variant must still call rt.exact_matmul (np.matmul's BLAS sums in a
    machine-dependent order; the bit-identity matrix found these cases differing under
    OPENBLAS_CORETYPE)."""
    from onemodel_compile.compiler import generate
    from tests.harness import backend_cases

    source = generate(backend_cases.case("test_linear_attention_linear").model, "exact").source
    assert "rt.exact_matmul(" in source and "np.matmul(" not in source


def _scan_of(op: str, dtype, **attrs):
    """A Scan whose body applies `op` to each row of x and the outer weight w, with the body's
    value types left empty (so the compiler knows no dtype there, as in LinearAttention's
    function body)."""
    from onnx import helper, numpy_helper

    element = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    body_inputs = ["w", "row"] if op == "Einsum" else ["row", "w"]
    body = helper.make_graph(
        [helper.make_node(op, body_inputs, ["out"], **attrs)],
        "body",
        [helper.make_empty_tensor_value_info("row")],
        [helper.make_empty_tensor_value_info("out")],
    )
    weight = np.arange(12).reshape(3, 4).astype(dtype) / (1 if np.dtype(dtype).kind == "i" else 7)
    graph = helper.make_graph(
        [helper.make_node("Scan", ["x"], ["y"], body=body, num_scan_inputs=1)],
        "scan",
        [helper.make_tensor_value_info("x", element, [5, 2, 3])],
        [helper.make_tensor_value_info("y", element, None)],
        [numpy_helper.from_array(weight, "w")],
    )
    return (
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
        weight,
    )


@pytest.mark.parametrize("dtype", [np.float32])
@pytest.mark.parametrize(
    "op, attrs", [("Gemm", {"alpha": 2.0}), ("Einsum", {"equation": "kn,mk->mn"})]
)
def test_exact_gemm_and_einsum_of_operands_of_unknown_type(op, attrs, dtype) -> None:
    """As MatMul above: Gemm and Einsum in a Scan body call their exact kernels (not np.einsum's
    or the @ of BLAS); results against float64, within the one float32 ulp that exact_matmul's
    one-slice product (each operand rounded to w bits of its line's scale) may differ by."""
    from onemodel_compile import load_compiled
    from onemodel_compile.compiler import generate

    model, weight = _scan_of(op, dtype, **attrs)
    source = generate(model, "exact").source
    assert f"rt.exact_{op.lower()}(" in source
    x = (np.arange(30).reshape(5, 2, 3) % 7 - 3).astype(dtype)
    got = load_compiled(model, "exact").run(x).y
    scale = 2 if op == "Gemm" else 1
    wide = np.float64 if np.dtype(dtype).kind == "f" else np.int64
    expected = (scale * (x.astype(wide) @ weight.astype(wide))).astype(dtype)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_max_ulp(got, expected, maxulp=1)


def test_exact_gemm_and_einsum_take_integers_the_fast_way() -> None:
    """An operand whose type the compiler did not know reaches rt.exact_gemm / rt.exact_einsum
    even when it holds integers: they compute integers as the fast variant does (exact already),
    not through the float slices."""
    import runtime_support as rt

    r = np.random.default_rng(3)
    A = r.integers(-50, 50, (4, 3)).astype(np.int64)
    B = r.integers(-50, 50, (5, 3)).astype(np.int64)
    C = r.integers(-50, 50, (5,)).astype(np.int64)
    got = rt.exact_gemm(A, B, C, alpha=2.0, beta=3.0, transB=1)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, 2 * (A @ B.T) + 3 * C)
    np.testing.assert_array_equal(rt.exact_gemm(A, B, transB=1), A @ B.T)
    einsum = rt.exact_einsum("ik,jk->ij", A, B)
    assert einsum.dtype == np.int64
    np.testing.assert_array_equal(einsum, A @ B.T)
