"""At more than one thread, the fused attention's per-head products and LayerNormalization's
matrix-vector statistics run at one BLAS thread when small (runtime_support/fused.py,
normalization.py; docs/performance.md, "Transformers, session 9"): the BLAS count inside them,
the count after them, and their values at 2 threads against onnxruntime and against 1 thread."""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest
from onnx import helper

import runtime_support as rt
from runtime_support import _threads, fused, normalization
from tests import models
from tests.test_threads import _openblas_get


@pytest.fixture
def restore_count():
    before = rt.get_num_threads()
    yield
    rt.set_num_threads(before)


def _spy(monkeypatch, module, name, seen, blas_threads):
    original = getattr(module, name)

    def spy(*args, **kwargs):
        seen.append(blas_threads())
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)


@pytest.mark.parametrize(
    "seq,head_size,one_thread", [(14, 32, True), (128, 64, True), (512, 64, False)]
)
def test_attention_heads_run_small_products_at_one_blas_thread(
    seq, head_size, one_thread, restore_count, monkeypatch
):
    blas_threads = _openblas_get()
    r = models.rng(1)
    q = r.standard_normal((1, 2, seq, head_size)).astype(np.float32)
    k = r.standard_normal((1, 2, head_size, seq)).astype(np.float32)
    v = r.standard_normal((1, 2, seq, head_size)).astype(np.float32)
    rt.set_num_threads(1)
    whole = rt.attention_heads(q, k, v, scale=0.125)
    seen: list = []
    _spy(monkeypatch, fused, "_attention_heads", seen, blas_threads)
    rt.set_num_threads(2)
    result = rt.attention_heads(q, k, v, scale=0.125)
    assert seen == [1 if one_thread else 2] and blas_threads() == 2
    if one_thread:  # the same BLAS calls as at one thread
        np.testing.assert_array_equal(result, whole)
    scores = np.einsum("bhsd,bhdt->bhst", q.astype(np.float64), k.astype(np.float64)) * 0.125
    e = np.exp(scores - scores.max(-1, keepdims=True))
    expected = np.einsum("bhst,bhtd->bhsd", e / e.sum(-1, keepdims=True), v.astype(np.float64))
    np.testing.assert_allclose(result, expected, rtol=2e-5, atol=2e-5)


def test_layer_normalization_statistics_at_one_blas_thread(restore_count, monkeypatch):
    blas_threads = _openblas_get()
    r = models.rng(2)
    x = r.standard_normal((128, 384)).astype(np.float32)
    scale, bias = r.standard_normal(384).astype(np.float32), r.standard_normal(384).astype(
        np.float32
    )
    rt.set_num_threads(1)
    whole = rt.layer_normalization(x, scale, bias, axis=-1, stats=False)
    seen: list = []
    _spy(monkeypatch, normalization, "_layer_normalization32_rows", seen, blas_threads)
    rt.set_num_threads(2)
    result = rt.layer_normalization(x, scale, bias, axis=-1, stats=False)
    assert seen == [1] and blas_threads() == 2
    np.testing.assert_array_equal(result, whole)


def _encoder_layer_model():
    """A torch-style decomposed attention + LayerNorm block (the fast variant fuses both)."""
    r = models.rng(3)
    hidden, heads, seq = 64, 2, 16
    head = hidden // heads
    g = [
        helper.make_node("MatMul", ["x", "wq"], ["q0"], name="q"),
        helper.make_node("MatMul", ["x", "wk"], ["k0"], name="k"),
        helper.make_node("MatMul", ["x", "wv"], ["v0"], name="v"),
        helper.make_node("Reshape", ["q0", "heads_shape"], ["q1"], name="q_heads"),
        helper.make_node("Reshape", ["k0", "heads_shape"], ["k1"], name="k_heads"),
        helper.make_node("Reshape", ["v0", "heads_shape"], ["v1"], name="v_heads"),
        helper.make_node("Transpose", ["q1"], ["q2"], name="q_t", perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["k1"], ["k2"], name="k_t", perm=[0, 2, 3, 1]),
        helper.make_node("Transpose", ["v1"], ["v2"], name="v_t", perm=[0, 2, 1, 3]),
        helper.make_node("MatMul", ["q2", "k2"], ["s0"], name="scores"),
        helper.make_node("Div", ["s0", "root"], ["s1"], name="scale"),
        helper.make_node("Softmax", ["s1"], ["p"], name="softmax", axis=-1),
        helper.make_node("MatMul", ["p", "v2"], ["c0"], name="context"),
        helper.make_node("Transpose", ["c0"], ["c1"], name="c_t", perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["c1", "hidden_shape"], ["c2"], name="merge"),
        helper.make_node("Add", ["c2", "x"], ["h"], name="residual"),
        helper.make_node("LayerNormalization", ["h", "gamma", "beta"], ["y"], name="norm", axis=-1),
    ]
    weights = {
        name: (r.standard_normal((hidden, hidden)) / 8).astype(np.float32)
        for name in ("wq", "wk", "wv")
    }
    inits = [models.init(name, w) for name, w in weights.items()] + [
        models.init("heads_shape", np.array([0, seq, heads, head], np.int64)),
        models.init("hidden_shape", np.array([0, seq, hidden], np.int64)),
        models.init("root", np.array(np.sqrt(head), np.float32)),
        models.init("gamma", r.standard_normal(hidden).astype(np.float32)),
        models.init("beta", r.standard_normal(hidden).astype(np.float32)),
    ]
    graph = helper.make_graph(
        g,
        "block",
        [models.tensor("x", [2, seq, hidden])],
        [models.tensor("y", [2, seq, hidden])],
        inits,
    )
    return models.finish(graph, opset=17)


def test_an_encoder_block_at_two_threads_matches_onnxruntime(tmp_path, restore_count):
    from onemodel_compile import compile_model

    model = _encoder_layer_model()
    path = compile_model(model, tmp_path / "block.py")
    source = path.read_text()
    assert "rt.attention_heads(" in source and "rt.layer_normalization(" in source
    module = models.import_generated(path)
    x = models.rng(4).standard_normal((2, 16, 64)).astype(np.float32)
    expected = onnxruntime.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    ).run(None, {"x": x})[0]
    results = []
    for threads in (1, 2):
        rt.set_num_threads(threads)
        results.append(module.run(x)[0])
        np.testing.assert_allclose(results[-1], expected, rtol=1e-5, atol=1e-5)
    assert _threads.get_num_threads() == 2
