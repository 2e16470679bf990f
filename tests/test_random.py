"""The random generators (ops/random.py) by their distributions, in both variants: the backend's
Bernoulli cases are one draw each, which no implementation reproduces, so the conformance runner
checks only their dtype, shape and support; here large samples are held to the distributions'
own moments (bounds of five standard errors: a false failure about once in 10**6 runs)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from onemodel_compile import compile_model
from tests.harness.modules import import_generated

VARIANTS = ("fast", "exact")
N = 40_000


def _module(tmp_path, variant, node, inputs, output_type, output_shape):
    graph = helper.make_graph(
        [node], "g", inputs, [helper.make_tensor_value_info("y", output_type, output_shape)]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    model.ir_version = 10
    onnx.checker.check_model(model)
    return import_generated(compile_model(model, tmp_path / f"m_{variant}.py", variant))


@pytest.mark.parametrize("variant", VARIANTS)
def test_bernoulli_frequencies_follow_the_probabilities(tmp_path, variant):
    node = helper.make_node("Bernoulli", ["x"], ["y"])
    x_info = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, N])
    module = _module(tmp_path, variant, node, [x_info], TensorProto.FLOAT, [3, N])
    p = np.array([0.1, 0.5, 0.9], np.float32)
    y = module.run(np.repeat(p[:, None], N, axis=1)).y
    assert y.dtype == np.float32 and y.shape == (3, N)
    assert np.isin(y, (0.0, 1.0)).all()
    frequency = y.mean(axis=1)
    bound = 5 * np.sqrt(p * (1 - p) / N)
    assert (np.abs(frequency - p) < bound).all(), (frequency, p)


@pytest.mark.parametrize("variant", VARIANTS)
def test_uniform_range_and_moments(tmp_path, variant):
    node = helper.make_node("RandomUniform", [], ["y"], low=-2.0, high=3.0, shape=[N])
    module = _module(tmp_path, variant, node, [], TensorProto.FLOAT, [N])
    y = module.run().y
    assert y.dtype == np.float32 and y.shape == (N,)
    assert ((y >= -2.0) & (y <= 3.0)).all()
    assert abs(y.mean() - 0.5) < 5 * 5 / np.sqrt(12 * N)
    assert abs(y.var() - 25 / 12) < 5 * 25 / 12 * np.sqrt(0.8 / N)  # var of a uniform's S^2


@pytest.mark.parametrize("variant", VARIANTS)
def test_normal_moments(tmp_path, variant):
    node = helper.make_node(
        "RandomNormalLike", ["x"], ["y"], mean=1.0, scale=2.0, dtype=TensorProto.DOUBLE
    )
    x_info = helper.make_tensor_value_info("x", TensorProto.FLOAT, [N])
    module = _module(tmp_path, variant, node, [x_info], TensorProto.DOUBLE, [N])
    y = module.run(np.zeros(N, np.float32)).y
    assert y.dtype == np.float64 and y.shape == (N,)
    assert abs(y.mean() - 1.0) < 5 * 2.0 / np.sqrt(N)
    assert abs(y.std() - 2.0) < 5 * 2.0 / np.sqrt(2 * N)
    # normal tails: about 4.55% of the values lie beyond two standard deviations
    beyond = np.mean(np.abs(y - 1.0) > 4.0)
    assert abs(beyond - 0.0455) < 5 * np.sqrt(0.0455 * 0.9545 / N)


@pytest.mark.parametrize("variant", VARIANTS)
def test_seeded_nodes_repeat_and_unseeded_ones_do_not(tmp_path, variant):
    seeded = helper.make_node("RandomNormal", [], ["y"], shape=[64], seed=7.0)
    module = _module(tmp_path, variant, seeded, [], TensorProto.FLOAT, [64])
    assert np.array_equal(module.run().y, module.run().y)
    other = helper.make_node("RandomNormal", [], ["y"], shape=[64], seed=8.0)
    assert not np.array_equal(
        _module(tmp_path / "other", variant, other, [], TensorProto.FLOAT, [64]).run().y,
        module.run().y,
    )
    unseeded = helper.make_node("RandomUniform", [], ["y"], shape=[64])
    fresh = _module(tmp_path / "unseeded", variant, unseeded, [], TensorProto.FLOAT, [64])
    assert not np.array_equal(fresh.run().y, fresh.run().y)


def test_exact_normal_is_box_muller_of_the_same_draws(tmp_path):
    """The exact twin differs from the fast kernel only in log and cos: a few ulps at most."""
    node = helper.make_node("RandomNormal", [], ["y"], shape=[1000], seed=3.0)
    fast = _module(tmp_path, "fast", node, [], TensorProto.FLOAT, [1000]).run().y
    exact = _module(tmp_path, "exact", node, [], TensorProto.FLOAT, [1000]).run().y
    np.testing.assert_allclose(exact, fast, rtol=1e-5, atol=1e-6)


_LOGITS = np.array([[0.0, 1.0, -1.0, 2.0], [3.0, 3.0, -50.0, 0.5]], np.float32)


def _softmax(x):  # the independent reference: probabilities from the log-probabilities
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _frequencies(draws, classes):
    return np.stack([np.bincount(row, minlength=classes) / row.size for row in draws])


def _multinomial_module(tmp_path, variant, **attrs):
    node = helper.make_node("Multinomial", ["x"], ["y"], sample_size=N, **attrs)
    x_info = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(_LOGITS.shape))
    kind = attrs.get("dtype", TensorProto.INT32)
    return _module(tmp_path, variant, node, [x_info], kind, [_LOGITS.shape[0], N])


@pytest.mark.parametrize("variant", VARIANTS)
def test_multinomial_frequencies_follow_the_softmax_of_the_input(tmp_path, variant):
    module = _multinomial_module(tmp_path, variant)
    y = module.run(_LOGITS).y
    assert y.dtype == np.int32 and y.shape == (2, N)
    assert ((y >= 0) & (y < 4)).all()
    p = _softmax(_LOGITS)
    bound = 5 * np.sqrt(p * (1 - p) / N) + 1e-12
    assert (np.abs(_frequencies(y, 4) - p) <= bound).all(), (_frequencies(y, 4), p)
    assert not (y[1] == 2).any()  # probability e**-53: never drawn


@pytest.mark.parametrize("variant", VARIANTS)
def test_multinomial_seeded_repeats_and_int64(tmp_path, variant):
    module = _multinomial_module(tmp_path, variant, seed=3.0, dtype=TensorProto.INT64)
    first, second = module.run(_LOGITS).y, module.run(_LOGITS).y
    assert first.dtype == np.int64
    np.testing.assert_array_equal(first, second)


def test_multinomial_reads_its_input_as_onnxruntime_does(tmp_path):
    """onnxruntime's draws (another generator) follow the same distribution: the input is
    unnormalized log-probabilities, as the operator's definition says."""
    import onnxruntime

    node = helper.make_node("Multinomial", ["x"], ["y"], sample_size=N)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(_LOGITS.shape))],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [2, N])],
    )
    # opset 15: onnxruntime 1.31.1 registers Multinomial-7 only (not -22, which adds types)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    model.ir_version = 10
    session = onnxruntime.InferenceSession(model.SerializeToString())
    (theirs,) = session.run(None, {"x": _LOGITS})
    ours = _multinomial_module(tmp_path, "fast").run(_LOGITS).y
    p = _softmax(_LOGITS)
    bound = 5 * np.sqrt(p * (1 - p) / N) + 1e-12
    for draws in (theirs, ours):
        assert (np.abs(_frequencies(draws, 4) - p) <= bound).all(), _frequencies(draws, 4)
