"""The fast variant's Resize (rt.resize_fast) against onnxruntime: coordinate transformation modes,
scales and sizes, NCHW and NHWC axes, odd sizes, dynamic H/W, batch > 1, linear, cubic, nearest."""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper

from onemodel_compile import load_compiled

TRANSFORMS = [
    "half_pixel",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
    "tf_half_pixel_for_nn",
    "half_pixel_symmetric",
]

# Where onnxruntime's scales path and the project's settled rule (rt.resize, checked against the
# backend data) differ, the fast variant is held to rt.resize: shrinking axes, and these.
SETTLED = {"align_corners", "tf_half_pixel_for_nn"}


def _model(mode, transform, by, layout, nearest_mode="round_prefer_floor"):
    """Resize-19 with X (dynamic batch and spatial sizes) and scales or sizes as graph inputs."""
    attrs = {"mode": mode, "coordinate_transformation_mode": transform}
    if mode == "nearest":
        attrs["nearest_mode"] = nearest_mode
    if layout == "nhwc":
        attrs["axes"] = [1, 2]
        dims = ["n", "h", "w", 3]
    else:
        dims = ["n", 3, "h", "w"]
    inputs = ["X", "", "scales", ""] if by == "scales" else ["X", "", "", "sizes"]
    node = helper.make_node("Resize", inputs, ["Y"], **attrs)
    count = 2 if layout == "nhwc" else 4
    second = (
        helper.make_tensor_value_info("scales", TensorProto.FLOAT, [count])
        if by == "scales"
        else helper.make_tensor_value_info("sizes", TensorProto.INT64, [count])
    )
    graph = helper.make_graph(
        [node],
        "resize_fast",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, dims), second],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [None] * 4)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    return model


def _check(model, X, second, rtol=1e-5, atol=1e-5, oracle=True):
    """The fast variant against onnxruntime (oracle) or, where onnxruntime and the project's
    settled rule differ (see runtime_support/resize.py), against the exact variant's rt.resize."""
    if oracle:
        session = onnxruntime.InferenceSession(
            model.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        name = session.get_inputs()[1].name
        expected = session.run(None, {"X": X, name: second})[0]
    else:
        expected = load_compiled(model, variant="exact").run(X, second)[0]
    module = load_compiled(model, variant="fast")
    with open(module.__file__) as generated:
        assert "rt.resize_fast(" in generated.read()
    got = module.run(X, second)[0]
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)
    again = module.run(X, second)[0]  # the tabled plan, second call
    np.testing.assert_array_equal(again, got)


@pytest.mark.parametrize("mode", ["linear", "cubic", "nearest"])
@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
def test_resize_fast_scales_matches_onnxruntime(mode, transform, layout) -> None:
    rng = np.random.default_rng(5)
    model = _model(mode, transform, "scales", layout)
    refused = mode == "cubic" and layout == "nhwc"  # onnxruntime runs no cubic over NHWC axes
    cases = [((1, 6, 8), (2.0, 2.0)), ((2, 9, 5), (1.5, 3.0)), ((2, 7, 11), (0.5, 0.6))]
    for shape, factors in cases:
        n, h, w = shape
        X = rng.standard_normal((n, 3, h, w) if layout == "nchw" else (n, h, w, 3))
        X = X.astype(np.float32)
        scales = np.array(factors if layout == "nhwc" else (1.0, 1.0, *factors), np.float32)
        _check(
            model, X, scales, oracle=min(factors) >= 1 and transform not in SETTLED and not refused
        )


@pytest.mark.parametrize("mode", ["linear", "cubic", "nearest"])
@pytest.mark.parametrize("transform", ["half_pixel", "align_corners", "asymmetric"])
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
def test_resize_fast_sizes_matches_onnxruntime(mode, transform, layout) -> None:
    rng = np.random.default_rng(6)
    model = _model(mode, transform, "sizes", layout)
    for shape, out in [((1, 6, 8), (12, 16)), ((3, 9, 5), (18, 10)), ((2, 7, 11), (4, 13))]:
        n, h, w = shape
        X = rng.standard_normal((n, 3, h, w) if layout == "nchw" else (n, h, w, 3))
        X = X.astype(np.float32)
        sizes = np.array(out if layout == "nhwc" else (n, 3, *out), np.int64)
        _check(model, X, sizes, oracle=not (mode == "cubic" and layout == "nhwc"))


@pytest.mark.parametrize(
    "nearest_mode", ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]
)
def test_resize_fast_nearest_modes_match_onnxruntime(nearest_mode) -> None:
    rng = np.random.default_rng(7)
    model = _model("nearest", "asymmetric", "sizes", "nchw", nearest_mode)
    X = rng.standard_normal((2, 3, 9, 5)).astype(np.float32)
    for out in [(18, 10), (4, 2), (9, 5), (27, 7)]:  # integer factors (slices), odd, identity
        _check(model, X, np.array((2, 3, *out), np.int64), rtol=0, atol=0)


def test_resize_fast_returns_a_new_array() -> None:
    import runtime_support as rt

    X = np.arange(24, dtype=np.float32).reshape(1, 1, 4, 6)
    same = rt.resize_fast(X, sizes=np.array([1, 1, 4, 6]), mode="linear")
    np.testing.assert_array_equal(same, X)
    assert not np.shares_memory(same, X)
    strided = rt.resize_fast(X, sizes=np.array([1, 1, 2, 3]), mode="nearest")
    assert not np.shares_memory(strided, X) and strided.flags.c_contiguous
