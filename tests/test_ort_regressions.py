"""Regressions found by onnx's model tests and by exported models, each checked against
onnxruntime 1.31.1 on a model built with onnx.helper: SequenceInsert at a negative position, a
declared dim of -1 (Paddle's batch dim), float64 LayerNormalization in the fast variant, and Resize
with tf_crop_and_resize and nearest, Scan-8 with sequence_lens."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from onemodel_compile import compile_model
from tests import models

VARIANTS = ("fast", "exact")


def compiled(model, tmp_path, variant: str, stem: str = "model"):
    return models.import_generated(compile_model(model, tmp_path / f"{stem}_{variant}.py", variant))


# --- SequenceInsert -------------------------------------------------------------------------


def _sequence_insert_model(position: int | None, as_input: bool) -> tuple:
    """SequenceConstruct(a, b, c) -> SequenceInsert(., w, position) -> the sequence itself. The
    position is an int64 scalar input, or an initializer, or absent."""
    inputs = [models.tensor(name, [2]) for name in "abcw"]
    initializers = []
    node_inputs = ["seq", "w"]
    if position is not None:
        node_inputs.append("position")
        if as_input:
            inputs.append(models.tensor("position", [], TensorProto.INT64))
        else:
            initializers.append(models.init("position", np.array(position, dtype=np.int64)))
    graph = helper.make_graph(
        [
            helper.make_node("SequenceConstruct", ["a", "b", "c"], ["seq"]),
            helper.make_node("SequenceInsert", node_inputs, ["out"], name="insert"),
        ],
        "sequence_insert",
        inputs,
        [helper.make_tensor_sequence_value_info("out", TensorProto.FLOAT, [2])],
        initializers,
    )
    return models.finish(graph, 17)


POSITIONS = [(p, as_input) for p in (-3, -2, -1, 0, 1, 2, 3) for as_input in (True, False)]


@pytest.mark.parametrize("position,as_input", [*POSITIONS, (None, False)])
def test_sequence_insert_position_matches_onnxruntime(tmp_path, position, as_input):
    """A negative position p inserts at p + len(sequence), before the element p names; a run-time
    position and a constant one agree."""
    model = _sequence_insert_model(position, as_input)
    feeds = {name: np.full(2, float(i), dtype=np.float32) for i, name in enumerate("abcw")}
    if position is not None and as_input:
        feeds["position"] = np.array(position, dtype=np.int64)
    (expected,) = models.ort_session(model).run(None, feeds)
    for variant in VARIANTS:
        got = compiled(model, tmp_path, variant).run_feeds(feeds)["out"]
        assert [x.tolist() for x in got] == [x.tolist() for x in expected], (variant, got)


# --- negative declared dims ---------------------------------------------------------------


def _paddle_batch_model() -> tuple:
    """x[-1, 3, 4] -> Flatten -> MatMul W[12, 4] -> Relu -> Reshape [-1, 2, 2] -> y[-1, 2, 2]: the
    batch dim declared as dim_value -1, as Paddle exports it."""
    w = models.rng(0).standard_normal((12, 4)).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("Flatten", ["x"], ["flat"], axis=1),
            helper.make_node("MatMul", ["flat", "W"], ["h"]),
            helper.make_node("Relu", ["h"], ["r"]),
            helper.make_node("Reshape", ["r", "shape"], ["y"]),
        ],
        "paddle_batch",
        [models.tensor("x", [-1, 3, 4])],
        [models.tensor("y", [-1, 2, 2])],
        [models.init("W", w), models.init("shape", np.array([-1, 2, 2], dtype=np.int64))],
    )
    model = models.finish(graph, 17)
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_value == -1
    return model


@pytest.mark.parametrize("variant", VARIANTS)
def test_negative_declared_dim_is_unknown(tmp_path, variant):
    """onnxruntime reads a negative declared dim as unknown: the compiled module accepts any batch
    size there and computes what onnxruntime computes."""
    model = _paddle_batch_model()
    module = compiled(model, tmp_path, variant)
    ((_, _, shape),) = module.INPUTS
    assert not isinstance(shape[0], int) and tuple(shape[1:]) == (3, 4), shape
    session = models.ort_session(model)
    for batch in (1, 3):
        x = models.rng(batch).standard_normal((batch, 3, 4)).astype(np.float32)
        (expected,) = session.run(None, {"x": x})
        got = module.run(x).y
        assert got.shape == expected.shape == (batch, 2, 2)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


# --- LayerNormalization in float64 ----------------------------------------------------------

DOUBLE = TensorProto.DOUBLE


def _layer_norm64_model(shape, axis: int, bias: bool, outputs: int) -> tuple:
    """LayerNormalization-17 on float64 X, Scale and B with the default stash_type (1: Mean and
    InvStdDev are float32)."""
    normalized = list(shape[axis % len(shape) :])
    stats = [*shape[: axis % len(shape)], *[1] * len(normalized)]
    names = ["X", "Scale", "B"][: 3 if bias else 2]
    graph = helper.make_graph(
        [
            helper.make_node(
                "LayerNormalization", names, ["Y", "Mean", "InvStdDev"][:outputs], axis=axis
            )
        ],
        "layer_norm64",
        [models.tensor("X", list(shape), DOUBLE)]
        + [models.tensor(name, normalized, DOUBLE) for name in names[1:]],
        [models.tensor("Y", list(shape), DOUBLE)]
        + [models.tensor(name, stats) for name in ("Mean", "InvStdDev")][: outputs - 1],
    )
    return models.finish(graph, 17), names, normalized


@pytest.mark.parametrize(
    "shape,axis,bias,outputs",
    [
        ((3, 5, 8), -1, True, 1),
        ((3, 5, 8), -1, True, 3),
        ((2, 3, 4, 5), 1, False, 3),
        ((1, 1, 700), -1, True, 1),
        ((4, 9000), -1, True, 2),
    ],
)
def test_fast_float64_layer_normalization_is_computed_in_float64(
    tmp_path, shape, axis, bias, outputs
):
    """onnxruntime computes float64 X in float64 (the default stash_type only makes Mean and
    InvStdDev float32); float32 statistics cost up to 1e-5 relative on Y. The fast variant matches
    it at float64 precision, and its statistics are onnxruntime's, rounded to float32."""
    model, names, normalized = _layer_norm64_model(shape, axis, bias, outputs)
    r = models.rng(7)
    feeds = {"X": r.standard_normal(shape) * 3 + 1}
    for name in names[1:]:
        feeds[name] = r.standard_normal(normalized)
    expected = models.ort_session(model).run(None, feeds)
    got = compiled(model, tmp_path, "fast").run_feeds(feeds)
    assert got["Y"].dtype == np.float64
    np.testing.assert_allclose(got["Y"], expected[0], rtol=1e-12, atol=1e-12)
    for name, want in zip(("Mean", "InvStdDev")[: outputs - 1], expected[1:]):
        assert got[name].dtype == want.dtype == np.float32
        np.testing.assert_allclose(got[name], want, rtol=2**-23, atol=0)


# --- Resize: nearest with tf_crop_and_resize ------------------------------------------------

NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _crop_resize_model(shape, roi, scales=None, sizes=None, nearest_mode="round_prefer_floor"):
    """Resize-13, mode nearest, tf_crop_and_resize, extrapolation_value 10; roi, scales and sizes
    are initializers."""
    initializers = [models.init("roi", np.array(roi, dtype=np.float32))]
    inputs = ["X", "roi", "scales"]
    if scales is not None:
        initializers.append(models.init("scales", np.array(scales, dtype=np.float32)))
    else:
        initializers.append(models.init("scales", np.array([], dtype=np.float32)))
        initializers.append(models.init("sizes", np.array(sizes, dtype=np.int64)))
        inputs.append("sizes")
    node = helper.make_node(
        "Resize",
        inputs,
        ["Y"],
        mode="nearest",
        coordinate_transformation_mode="tf_crop_and_resize",
        nearest_mode=nearest_mode,
        extrapolation_value=10.0,
    )
    graph = helper.make_graph(
        [node],
        "crop_resize",
        [models.tensor("X", list(shape))],
        [models.tensor("Y", [f"d{i}" for i in range(len(shape))])],
        initializers,
    )
    return models.finish(graph, 13)


CROP_CASES = {
    # 1x1x4x4 -> 1x1x4x6: H keeps its size (scale 1), so onnxruntime leaves it alone and ignores
    # its roi; W is cropped to [0.2, 0.9] (12 of the 24 values used to differ, by up to 2.55)
    "scale_1_axis": dict(
        shape=(1, 1, 4, 4), roi=[0, 0, 0.3, 0.2, 1, 1, 0.8, 0.9], scales=[1, 1, 1, 1.5]
    ),
    "scale_1_axis_sizes": dict(
        shape=(1, 1, 4, 4), roi=[0, 0, 0.3, 0.1, 1, 1, 0.8, 0.8], sizes=[1, 1, 4, 6]
    ),
    # the same shape out as in: onnxruntime copies the input whatever the roi and scales
    "same_shape": dict(
        shape=(1, 1, 2, 5), roi=[0, 0, 0.4, 0.3, 1, 1, 1.3, 0.9], scales=[1, 1, 1.25, 1]
    ),
    "same_shape_rank1": dict(shape=(4,), roi=[0.7, 1.7], sizes=[4]),
    # float32 positions: 1.2 + 0.3 is 1.5 exactly there (1.5000000447 in float64)
    "float32_tie": dict(
        shape=(1, 1, 4, 4), roi=[0, 0, 0.4, 0.6, 1, 1, 0.6, 0.8], sizes=[1, 1, 3, 3]
    ),
    "extrapolation": dict(
        shape=(1, 1, 4, 4), roi=[0, 0, 0.4, 0.6, 1, 1, 1.2, 1.7], sizes=[1, 1, 3, 3]
    ),
    "one_output": dict(
        shape=(1, 1, 5, 4), roi=[0, 0, 0.2, 0.1, 1, 1, 0.9, 0.8], sizes=[1, 1, 1, 6]
    ),
    "downsample": dict(
        shape=(1, 2, 6, 5), roi=[0, 0, 0.1, 0.0, 1, 1, 0.9, 0.7], scales=[1, 1, 0.5, 0.6]
    ),
}


@pytest.mark.parametrize("nearest_mode", NEAREST_MODES)
@pytest.mark.parametrize("case", sorted(CROP_CASES))
def test_nearest_tf_crop_and_resize_matches_onnxruntime(tmp_path, case, nearest_mode):
    """Nearest Resize with tf_crop_and_resize selects the very elements onnxruntime selects (the
    backend data have no nearest tf_crop_and_resize case, so onnxruntime decides)."""
    model = _crop_resize_model(nearest_mode=nearest_mode, **CROP_CASES[case])
    shape = CROP_CASES[case]["shape"]
    x = models.rng(3).standard_normal(shape).astype(np.float32)
    (expected,) = models.ort_session(model).run(None, {"X": x})
    for variant in VARIANTS:
        got = compiled(model, tmp_path, variant).run(x).Y
        assert got.shape == expected.shape, (variant, got.shape, expected.shape)
        np.testing.assert_array_equal(got, expected, err_msg=variant)


@pytest.mark.parametrize(
    "mode,transform,roi,scales",
    [
        ("linear", "tf_crop_and_resize", [0, 0, 0.2, 0.1, 1, 1, 0.9, 0.8], [1, 1, 1, 1]),
        ("linear", "half_pixel", [], [1, 1, 1.25, 1]),
        ("cubic", "half_pixel", [], [1, 1, 1.25, 1.1]),
        ("nearest", "tf_crop_and_resize", [0, 0, 0.2, 0.1, 1, 1, 0.9, 0.8], [1, 1, 1.25, 1.1]),
    ],
)
def test_resize_to_the_same_shape_returns_the_input(tmp_path, mode, transform, roi, scales):
    """onnxruntime returns the input of a Resize whose output has its shape (here 1x1x2x5, with
    scales that round back to it), whatever the mode, roi or coordinate transformation."""
    node = helper.make_node(
        "Resize", ["X", "roi", "scales"], ["Y"], mode=mode, coordinate_transformation_mode=transform
    )
    graph = helper.make_graph(
        [node],
        "same_shape",
        [models.tensor("X", [1, 1, 2, 5])],
        [models.tensor("Y", ["a", "b", "c", "d"])],
        [
            models.init("roi", np.array(roi, dtype=np.float32)),
            models.init("scales", np.array(scales, dtype=np.float32)),
        ],
    )
    model = models.finish(graph, 13)
    x = models.rng(4).standard_normal((1, 1, 2, 5)).astype(np.float32)
    (expected,) = models.ort_session(model).run(None, {"X": x})
    np.testing.assert_array_equal(expected, x)  # what onnxruntime does, checked
    for variant in VARIANTS:
        np.testing.assert_array_equal(compiled(model, tmp_path, variant).run(x).Y, expected)


# --- Scan (opset 8) with sequence_lens --------------------------------------------------------


def _scan8_model(reverse: bool):
    """Scan-8 over a batch of sequences: a running sum as state, the sums as scan output."""
    vec = [helper.make_tensor_value_info(name, TensorProto.FLOAT, [2]) for name in "sx"]
    body = helper.make_graph(
        [helper.make_node("Add", ["s", "x"], ["t"]), helper.make_node("Identity", ["t"], ["y"])],
        "body",
        vec,
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, [2]) for name in "ty"],
    )
    attributes = {"directions": [1]} if reverse else {}
    scan = helper.make_node(
        "Scan", ["lens", "init", "xs"], ["final", "ys"], body=body, num_scan_inputs=1, **attributes
    )
    graph = helper.make_graph(
        [scan],
        "scan8",
        [
            models.tensor("lens", [3], TensorProto.INT64),
            models.tensor("init", [3, 2]),
            models.tensor("xs", [3, 5, 2]),
        ],
        [models.tensor("final", [3, 2]), models.tensor("ys", [3, 5, 2])],
    )
    return models.finish(graph, 8)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("reverse", [False, True])
def test_scan8_sequence_lens_matches_onnxruntime(tmp_path, variant, reverse):
    """Each batch entry is scanned over its own length; its scan outputs are zero after its last
    step (entries of different lengths stacked once failed)."""
    model = _scan8_model(reverse)
    rng = np.random.default_rng(0)
    feeds = {
        "lens": np.array([4, 2, 3], dtype=np.int64),
        "init": rng.normal(size=(3, 2)).astype(np.float32),
        "xs": rng.normal(size=(3, 5, 2)).astype(np.float32),
    }
    expected = models.ort_run(model, feeds)
    got = compiled(model, tmp_path, variant).run_feeds(feeds)
    for name, want in expected.items():
        np.testing.assert_allclose(got[name], want, rtol=1e-6, atol=1e-6)
