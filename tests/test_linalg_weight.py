"""rt.matmul_weight, the fast variant's product by a constant weight (runtime_support/linalg.py):
OpenBLAS's small-matrix kernel through ctypes where the loaded BLAS exports it and runs its
SkylakeX kernels, np.matmul otherwise. Expected values: float64 products of the same float32
operands (each element within a bound of sum |a||w|), np.matmul for the fallback, onnxruntime
for compiled models. The kernel's own cases are skipped (not passed) where it is not usable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnxruntime
import pytest
from onnx import helper

import runtime_support as rt
from onemodel_compile import compile_model
from runtime_support import _threads, linalg
from tests import models

ROOT = Path(__file__).resolve().parents[1]
KERNEL = linalg._kernel()
needs_kernel = pytest.mark.skipif(
    KERNEL is None, reason=f"kernel not usable: {linalg.weight_kernel()}"
)

# (rows, inner, columns): the transformers' shapes and every tail of the kernel's loops (rows
# of the weight's columns in 64s, 32s, 16s and masked; activation rows in sixes, fours, twos, one)
SHAPES = [
    (56, 384, 1536),
    (56, 1536, 384),
    (14, 384, 384),
    (1, 128, 512),
    (7, 33, 133),
    (13, 64, 1),
    (5, 1, 70),
    (197, 768, 129),
    (256, 48, 1000),
]


@pytest.fixture
def restore(monkeypatch):
    """The settings back after the test; the kernel taken down to one row and one multiply-add,
    so that the small shapes reach every tail of its loops."""
    before_count, before_state = rt.get_num_threads(), dict(linalg._state)
    before_split = linalg.SPLIT_MULTIPLY_ADDS
    monkeypatch.setattr(linalg, "MIN_ROWS", 1)
    monkeypatch.setattr(linalg, "MIN_MULTIPLY_ADDS", 0)
    yield
    rt.set_num_threads(before_count)
    linalg._state.update(before_state)
    linalg.SPLIT_MULTIPLY_ADDS = before_split


@pytest.mark.parametrize("m,k,n", [(1, 768, 768), (4, 256, 256), (56, 128, 128), (7, 384, 384)])
def test_small_products_go_to_np_matmul(m, k, n):
    """Under MIN_ROWS rows or MIN_MULTIPLY_ADDS multiply-adds the ctypes call costs more than it
    saves: np.matmul's bits (one row: its matrix-vector product)."""
    a, w = _operands(m, k, n, seed=5)
    np.testing.assert_array_equal(rt.matmul_weight(a, w), np.matmul(a, w))


def _operands(m, k, n, seed=0):
    r = models.rng(seed)
    return (
        r.standard_normal((m, k)).astype(np.float32),
        r.standard_normal((k, n)).astype(np.float32),
    )


def _within_bound(product, a, w):
    exact = a.astype(np.float64) @ w.astype(np.float64)
    bound = np.abs(a).astype(np.float64) @ np.abs(w).astype(np.float64)
    # float32 sums of k terms: (k + 1) units of 2^-24 of sum |a||w| (the usual a-priori bound)
    return np.all(np.abs(product - exact) <= (a.shape[1] + 1) * 2.0**-24 * bound)


@needs_kernel
@pytest.mark.parametrize("m,k,n", SHAPES)
def test_the_kernel_is_within_the_float32_bound_of_the_float64_product(m, k, n, restore):
    rt.set_num_threads(1)
    a, w = _operands(m, k, n)
    product = rt.matmul_weight(a, w)
    assert product.shape == (m, n) and product.dtype == np.float32
    assert _within_bound(product, a, w)
    # the kernel ran: its bits differ from OpenBLAS's packed product somewhere on large shapes
    # (not asserted), and it equals its own direct call
    direct = np.full((m, n), np.nan, np.float32)
    linalg._call(KERNEL, a, w, direct, 0, n)
    np.testing.assert_array_equal(product, direct)


@needs_kernel
@pytest.mark.parametrize("m,k,n", SHAPES)
@pytest.mark.parametrize("threads", [2, 3])
def test_split_over_threads_gives_the_bits_of_one_thread(m, k, n, threads, restore, monkeypatch):
    a, w = _operands(m, k, n, seed=1)
    rt.set_num_threads(1)
    whole = rt.matmul_weight(a, w)
    monkeypatch.setattr(_threads, "SMALL_BLAS_WORK", 0)
    linalg.SPLIT_MULTIPLY_ADDS = 0  # split whatever the size (bands of 64 columns)
    rt.set_num_threads(threads)
    np.testing.assert_array_equal(rt.matmul_weight(a, w), whole)


@needs_kernel
def test_at_two_threads_small_products_run_the_kernel_large_ones_np_matmul(restore):
    rt.set_num_threads(2)
    small, large = _operands(14, 128, 512, seed=8), _operands(56, 384, 1536, seed=8)
    direct = np.full((14, 512), np.nan, np.float32)
    linalg._call(KERNEL, *small, direct, 0, 512)
    np.testing.assert_array_equal(rt.matmul_weight(*small), direct)
    np.testing.assert_array_equal(rt.matmul_weight(*large), np.matmul(*large))


@pytest.mark.parametrize("m,k,n", SHAPES[:5])
def test_forced_fallback_is_np_matmul(m, k, n, restore):
    linalg._state.update(kernel=None, checked=True, why="forced by the test")
    a, w = _operands(m, k, n, seed=2)
    np.testing.assert_array_equal(rt.matmul_weight(a, w), np.matmul(a, w))
    assert linalg.weight_kernel() == "np.matmul (forced by the test)"


@pytest.mark.parametrize(
    "a,w",
    [
        (np.ones((4, 6), np.float64), np.ones((6, 5), np.float64)),  # not float32
        (np.ones((6, 4), np.float32).T, np.ones((6, 5), np.float32)),  # not C-contiguous
        (np.ones((4, 6), np.float32), np.ones((12, 5), np.float32)[::2]),  # strided weight
        (np.ones((0, 6), np.float32), np.ones((6, 5), np.float32)),  # empty
        (np.ones((linalg.MAX_ROWS + 1, 6), np.float32), np.ones((6, 5), np.float32)),
    ],
)
def test_operands_the_kernel_does_not_take_go_to_np_matmul(a, w):
    result = rt.matmul_weight(a, w)
    np.testing.assert_array_equal(result, np.matmul(a, w))
    assert result.dtype == np.matmul(a, w).dtype


def test_a_missing_symbol_or_another_core_means_np_matmul(restore, monkeypatch):
    a, w = _operands(7, 33, 133, seed=3)
    for attribute, value, reason in (
        ("_KERNEL_SYMBOL", "sgemm_no_such_kernel_SKYLAKEX", "exports the kernel"),
        ("_CORES", ("no_such_core",), "kernels"),
    ):
        with monkeypatch.context() as patch:
            patch.setattr(linalg, attribute, value)
            linalg._state.update(kernel=None, checked=False)
            np.testing.assert_array_equal(rt.matmul_weight(a, w), np.matmul(a, w))
            assert linalg._state["kernel"] is None and reason in linalg.weight_kernel()
    linalg._state.update(kernel=None, checked=False)


def test_a_kernel_that_computes_wrong_fails_the_self_check():
    assert not linalg._self_check(lambda *arguments: 0)  # writes nothing: NaN stays
    if KERNEL is not None:
        assert linalg._self_check(KERNEL)


def _fresh_process(environment: dict) -> dict:
    script = (
        "import json, numpy as np, runtime_support as rt\n"
        "from runtime_support import linalg\n"
        "r = np.random.default_rng(4)\n"
        "a = r.standard_normal((56, 96)).astype(np.float32)\n"
        "w = r.standard_normal((96, 200)).astype(np.float32)\n"
        "same = bool(np.array_equal(rt.matmul_weight(a, w), np.matmul(a, w)))\n"
        "print(json.dumps({'kernel': linalg.weight_kernel(), 'same_as_numpy': same}))\n"
    )
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OPENBLAS_CORETYPE", "ONEMODEL_BLAS_KERNEL")
    }
    env.update(environment, PYTHONPATH=str(ROOT))
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_the_environment_can_turn_the_kernel_off():
    seen = _fresh_process({"ONEMODEL_BLAS_KERNEL": "0"})
    assert seen == {"kernel": "np.matmul (ONEMODEL_BLAS_KERNEL=0)", "same_as_numpy": True}


@needs_kernel
def test_openblas_on_other_kernels_means_np_matmul():
    """OpenBLAS made to run its Haswell (AVX2) kernels: the SkylakeX kernel is not called."""
    seen = _fresh_process({"OPENBLAS_CORETYPE": "Haswell"})
    assert seen["same_as_numpy"] and seen["kernel"].startswith("np.matmul (OpenBLAS runs its")


def _linear_model(batch: int, tokens: int, k: int, n: int, seed: int):
    r = models.rng(seed)
    weight = (r.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
    bias = r.standard_normal(n).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["product"], name="dense/MatMul"),
            helper.make_node("Add", ["product", "b"], ["y"], name="dense/Add"),
            helper.make_node("MatMul", ["y", "x_t"], ["z"], name="activations/MatMul"),
        ],
        "linear",
        [models.tensor("x", ["batch", tokens, k]), models.tensor("x_t", ["batch", n, 3])],
        [models.tensor("y", ["batch", tokens, n]), models.tensor("z", ["batch", tokens, 3])],
        [models.init("w", weight), models.init("b", bias)],
    )
    return models.finish(graph, opset=17)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("forced_fallback", [False, True])
def test_compiled_linear_layer_matches_onnxruntime(tmp_path, threads, forced_fallback, restore):
    model = _linear_model(4, 14, 384, 1536, seed=5)
    path = compile_model(model, tmp_path / "linear.py")
    source = Path(path).read_text()
    assert "rt.matmul_weight(" in source  # the constant weight's product
    assert source.count("rt.matmul_weight(") == 1  # not the product of two activations
    module = models.import_generated(Path(path))
    if forced_fallback:
        linalg._state.update(kernel=None, checked=True, why="forced by the test")
    rt.set_num_threads(threads)
    r = models.rng(6)
    x = r.standard_normal((4, 14, 384)).astype(np.float32)
    x_t = r.standard_normal((4, 1536, 3)).astype(np.float32)
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    expected = session.run(None, {"x": x, "x_t": x_t})
    for actual, reference in zip(module.run(x, x_t), expected):
        assert actual.shape == reference.shape and actual.dtype == reference.dtype
        np.testing.assert_allclose(
            actual, reference, rtol=1e-5, atol=1e-5 * np.abs(reference).max()
        )


def test_exact_variant_does_not_call_it(tmp_path):
    path = compile_model(_linear_model(1, 3, 8, 5, seed=7), tmp_path / "linear.py", variant="exact")
    assert "matmul_weight" not in Path(path).read_text()
