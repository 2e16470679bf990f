"""Settled semantics of the sampling family (docs/contract.md, "Settled semantics"): Resize with
antialias=1, and RoiAlign.

Resize, antialias=1 (linear, cubic): on an axis with scale < 1 the filter reach grows to 1/scale
times its half-width (1 linear, 2 cubic); every integer position i with non-zero weight
filter((i - x) * scale) around the sample position x gets that weight; positions outside the input
read the nearest edge sample (with exclude_outside=1 they are dropped); weights are divided by their
sum. Growing axes and nearest mode are unchanged. Fast and exact give the same bits.

RoiAlign: coordinate_transformation_mode defaults to half_pixel from opset 16 and to
output_half_pixel before; sampling_ratio 0 uses ceil(region size / bins) sample points per bin;
in max mode each of the four weighted neighbours of a sample point competes on its own and the
largest wins.

The expected values are computed here with plain Python loops and the math module, independently of
the compiler's kernels, and the loops are checked against the backend data where a backend case
exists.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from onnx import TensorProto, helper

from onemodel_compile import load_compiled
from tests.harness import backend_cases

# --- Resize, antialias -------------------------------------------------------------------------


def _triangle(t: float) -> float:
    return max(0.0, 1.0 - abs(t))


def _keys(t: float, a: float = -0.75) -> float:
    t = abs(t)
    if t <= 1:
        return (a + 2) * t**3 - (a + 3) * t**2 + 1
    if t < 2:
        return a * t**3 - 5 * a * t**2 + 8 * a * t - 4 * a
    return 0.0


def _antialias_matrix(n_in, n_out, scale, mode, exclude_outside=False):
    """Rows: the weights each output (half_pixel) gives the inputs, by the settled rule."""
    filt, half_width = (_triangle, 1.0) if mode == "linear" else (_keys, 2.0)
    stretch = min(scale, 1.0)  # growing axes keep the plain filter
    reach = half_width / stretch
    matrix = [[0.0] * n_in for _ in range(n_out)]
    for y in range(n_out):
        x = (y + 0.5) / scale - 0.5
        total = 0.0
        taps = []
        for i in range(math.floor(x - reach) - 1, math.ceil(x + reach) + 2):
            weight = filt((i - x) * stretch)
            if weight == 0:
                continue
            if not 0 <= i < n_in:
                if exclude_outside:
                    continue
                i = min(max(i, 0), n_in - 1)  # the nearest edge sample
            taps.append((i, weight))
            total += weight
        for i, weight in taps:
            matrix[y][i] += weight / total
    return np.array(matrix)


def _antialias_expected(X, scales, mode, exclude_outside=False):
    """Resize of a (1, 1, H, W) input on its last two axes, by the rule."""
    (height, width), (scale_h, scale_w) = X.shape[2:], scales
    out_h, out_w = int(height * scale_h), int(width * scale_w)
    rows = _antialias_matrix(height, out_h, scale_h, mode, exclude_outside)
    cols = _antialias_matrix(width, out_w, scale_w, mode, exclude_outside)
    return (rows @ X[0, 0].astype(np.float64) @ cols.T)[None, None]


def _resize_model(mode, antialias=1, exclude_outside=0, opset=19, scales_input=True):
    """Resize with X and scales as graph inputs (scales known only at run time)."""
    attrs = {"mode": mode, "antialias": antialias}
    if exclude_outside:
        attrs["exclude_outside"] = 1
    node = helper.make_node("Resize", ["X", "", "scales"], ["Y"], **attrs)
    inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["n", "c", "h", "w"])]
    inputs.append(helper.make_tensor_value_info("scales", TensorProto.FLOAT, [4]))
    graph = helper.make_graph(
        [node],
        "resize",
        inputs,
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [None] * 4)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    return model


def _run_resize(model, X, scales, variant="fast"):
    module = load_compiled(model, variant=variant)
    return module.run(X, np.array([1.0, 1.0, *scales], dtype=np.float32))[0]


def _f32(scales):
    """The scales as the model carries them (float32), as Python floats."""
    return [float(np.float32(s)) for s in scales]


def _backend(name):
    case = backend_cases.case(name)
    inputs, outputs = case.data_sets[0]
    return case, [np.asarray(i) for i in inputs], np.asarray(outputs[0])


@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_resize_antialias_backend_data_follows_the_rule(mode) -> None:
    # The rule, written as loops above, reproduces the backend cases (scales and sizes).
    _, (X, scales), expected = _backend(f"test_resize_downsample_scales_{mode}_antialias")
    got = _antialias_expected(X, _f32(scales[2:]), mode)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    _, (X, sizes), expected = _backend(f"test_resize_downsample_sizes_{mode}_antialias")
    ratios = [sizes[2] / X.shape[2], sizes[3] / X.shape[3]]
    np.testing.assert_allclose(_antialias_expected(X, ratios, mode), expected, rtol=1e-5, atol=1e-6)


def test_resize_antialias_linear_downscale_widens_the_filter() -> None:
    rng = np.random.default_rng(1)
    X = rng.standard_normal((1, 1, 9, 17)).astype(np.float32)
    scales = _f32([0.45, 0.3])  # reach 1 / 0.45 and 1 / 0.3 input samples on either side
    got = _run_resize(_resize_model("linear"), X, scales)
    np.testing.assert_allclose(got, _antialias_expected(X, scales, "linear"), rtol=1e-5, atol=1e-6)
    # The filter is wider than linear's two taps: up to 2 * ceil(1 / 0.3) = 8 inputs per output.
    widest = max(np.count_nonzero(r) for r in _antialias_matrix(17, 5, scales[1], "linear"))
    assert widest > 4
    plain = _run_resize(_resize_model("linear", antialias=0), X, scales)
    assert not np.allclose(got, plain, rtol=1e-3)


def test_resize_antialias_cubic_downscale_widens_the_filter() -> None:
    rng = np.random.default_rng(2)
    X = rng.standard_normal((1, 1, 12, 10)).astype(np.float32)
    scales = _f32([0.5, 0.35])
    got = _run_resize(_resize_model("cubic"), X, scales)
    np.testing.assert_allclose(got, _antialias_expected(X, scales, "cubic"), rtol=1e-5, atol=1e-6)
    widest = max(np.count_nonzero(r) for r in _antialias_matrix(10, 3, scales[1], "cubic"))
    assert widest > 8  # plain cubic has 4 taps
    plain = _run_resize(_resize_model("cubic", antialias=0), X, scales)
    assert not np.allclose(got, plain, rtol=1e-3)


@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_resize_antialias_outside_taps_read_the_edge(mode) -> None:
    # An edge sample much larger than the rest shows how often it is read: outside taps read it.
    X = np.ones((1, 1, 1, 12), dtype=np.float32)
    X[0, 0, 0, 0] = 1000.0
    scales = _f32([1.0, 0.25])
    got = _run_resize(_resize_model(mode), X, scales)
    expected = _antialias_expected(X, scales, mode)
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    dropped = _antialias_expected(X, scales, mode, exclude_outside=True)
    assert not np.allclose(expected, dropped, rtol=1e-3)


@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_resize_antialias_exclude_outside_drops_outside_taps(mode) -> None:
    X = np.ones((1, 1, 1, 12), dtype=np.float32)
    X[0, 0, 0, 0] = 1000.0
    X[0, 0, 0, 7] = -50.0
    scales = _f32([1.0, 0.25])
    got = _run_resize(_resize_model(mode, exclude_outside=1), X, scales)
    expected = _antialias_expected(X, scales, mode, exclude_outside=True)
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    assert not np.allclose(expected, _antialias_expected(X, scales, mode), rtol=1e-3)


def test_resize_antialias_zero_weight_positions_are_not_taps() -> None:
    # With scale 1/3, the position 3 samples away from a sample position has weight 0: an infinity
    # there must not reach that output (0 * inf would make it NaN).
    X = np.arange(12, dtype=np.float32).reshape(1, 1, 1, 12)
    X[0, 0, 0, 4] = np.inf
    scale = float(np.float32(1 / 3))
    got = _run_resize(_resize_model("linear"), X, [1.0, scale])[0, 0, 0]
    matrix = _antialias_matrix(12, 4, scale, "linear")
    expected = [sum(w * X[0, 0, 0, i] for i, w in enumerate(row) if w) for row in matrix]
    assert matrix[0, 4] == 0 and matrix[1, 4] > 0
    assert np.isfinite(got[0]) and got[1] == np.inf
    np.testing.assert_allclose(got, expected, rtol=1e-6)


@pytest.mark.parametrize("mode", ["linear", "cubic", "nearest"])
def test_resize_antialias_leaves_growing_axes_and_nearest_mode_unchanged(mode) -> None:
    rng = np.random.default_rng(3)
    X = rng.standard_normal((1, 1, 5, 6)).astype(np.float32)
    scales = [1.75, 2.5] if mode != "nearest" else [0.6, 1.5]
    # Bit for bit in the exact variant; the fast variant computes a Resize without antialias in
    # float32 (rt.resize_fast), so there the two agree to float32 rounding.
    with_antialias = _run_resize(_resize_model(mode), X, scales, "exact")
    without = _run_resize(_resize_model(mode, antialias=0), X, scales, "exact")
    assert np.array_equal(with_antialias.view(np.uint32), without.view(np.uint32))
    fast = _run_resize(_resize_model(mode, antialias=0), X, scales)
    np.testing.assert_allclose(fast, without, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    "mode,exclude_outside,scales",
    [("linear", 0, [0.45, 0.3]), ("cubic", 0, [0.6, 0.35]), ("cubic", 1, [0.3, 1.7]),
     ("linear", 1, [0.7, 0.2])],
)  # fmt: skip
def test_resize_antialias_fast_and_exact_give_the_same_bits(mode, exclude_outside, scales) -> None:
    rng = np.random.default_rng(4)
    X = (rng.standard_normal((2, 3, 13, 11)) * 100).astype(np.float32)
    model = _resize_model(mode, exclude_outside=exclude_outside)
    fast = _run_resize(model, X, scales, "fast")
    exact = _run_resize(model, X, scales, "exact")
    assert fast.dtype == exact.dtype == np.float32
    assert np.array_equal(fast.view(np.uint32), exact.view(np.uint32))
    rule = np.concatenate(
        [
            _antialias_expected(X[n : n + 1, c : c + 1], _f32(scales), mode, bool(exclude_outside))
            for n in range(2)
            for c in range(3)
        ]
    ).reshape(exact.shape)
    np.testing.assert_allclose(exact, rule, rtol=1e-5, atol=1e-4)


# --- RoiAlign -----------------------------------------------------------------------------------


def _roi_align_loops(X, rois, batch_indices, *, output_height, output_width, sampling_ratio,
                     spatial_scale, half_pixel, mode="avg", grid=None):  # fmt: skip
    """RoiAlign by the rule, one output value at a time. `grid(region, bins)` gives the number of
    sample points per bin along an axis when sampling_ratio is 0 (the rule: ceil). mode "avg",
    "max" (the rule) or "largest point" (not the rule: the largest interpolated point)."""
    grid = grid or (lambda region, bins: math.ceil(region / bins))
    _, channels, height, width = X.shape
    out = np.zeros((len(rois), channels, output_height, output_width))
    offset = 0.5 if half_pixel else 0.0
    for r, roi in enumerate(rois):
        x1, y1, x2, y2 = (float(v) * spatial_scale - offset for v in roi)
        roi_w, roi_h = x2 - x1, y2 - y1
        if not half_pixel:
            roi_w, roi_h = max(roi_w, 1.0), max(roi_h, 1.0)
        bin_h, bin_w = roi_h / output_height, roi_w / output_width
        grid_h = sampling_ratio if sampling_ratio > 0 else grid(roi_h, output_height)
        grid_w = sampling_ratio if sampling_ratio > 0 else grid(roi_w, output_width)
        image = X[int(batch_indices[r])].astype(np.float64)
        for c in range(channels):
            for ph in range(output_height):
                for pw in range(output_width):
                    points = []
                    for iy in range(grid_h):
                        y = y1 + ph * bin_h + (iy + 0.5) * bin_h / grid_h
                        for ix in range(grid_w):
                            x = x1 + pw * bin_w + (ix + 0.5) * bin_w / grid_w
                            points.append(_neighbours(image[c], y, x, height, width))
                    if mode == "avg":
                        total = sum(sum(w * v for w, v in p) for p in points)
                        out[r, c, ph, pw] = total / max(grid_h * grid_w, 1)
                    elif mode == "max":  # each weighted neighbour competes on its own
                        out[r, c, ph, pw] = max((w * v for p in points for w, v in p), default=0)
                    else:  # "largest point", the other reading: interpolated points compete
                        out[r, c, ph, pw] = max(
                            (sum(w * v for w, v in p) for p in points), default=0
                        )
    return out


def _neighbours(plane, y, x, height, width):
    """The four (weight, value) neighbours of a sample point (zero weights outside [-1, size])."""
    if y < -1.0 or y > height or x < -1.0 or x > width:
        return [(0.0, 0.0)] * 4
    y, x = max(y, 0.0), max(x, 0.0)
    y_low, x_low = int(y), int(x)
    if y_low >= height - 1:
        y_low = y_high = height - 1
        y = float(y_low)
    else:
        y_high = y_low + 1
    if x_low >= width - 1:
        x_low = x_high = width - 1
        x = float(x_low)
    else:
        x_high = x_low + 1
    ly, lx = y - y_low, x - x_low
    hy, hx = 1.0 - ly, 1.0 - lx
    return [
        (hy * hx, plane[y_low, x_low]),
        (hy * lx, plane[y_low, x_high]),
        (ly * hx, plane[y_high, x_low]),
        (ly * lx, plane[y_high, x_high]),
    ]


def _roi_align_model(opset, **attrs):
    node = helper.make_node("RoiAlign", ["X", "rois", "batch_indices"], ["Y"], **attrs)
    graph = helper.make_graph(
        [node],
        "roi_align",
        [
            helper.make_tensor_value_info("X", TensorProto.FLOAT, ["n", "c", "h", "w"]),
            helper.make_tensor_value_info("rois", TensorProto.FLOAT, ["r", 4]),
            helper.make_tensor_value_info("batch_indices", TensorProto.INT64, ["r"]),
        ],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [None] * 4)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _roi_inputs(seed=5):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((2, 3, 10, 12)).astype(np.float32)
    rois = np.array(
        [[0.0, 0.0, 9.0, 9.0], [1.5, 2.0, 7.25, 4.0], [5.0, 5.0, 11.5, 8.0], [-2.0, -1.0, 3.0, 13.0],
         [3.0, 3.0, 3.5, 3.25]],
        dtype=np.float32,
    )  # fmt: skip
    return X, rois, np.array([0, 1, 1, 0, 1], dtype=np.int64)


@pytest.mark.parametrize("name,half_pixel", [("test_roialign_aligned_true", True),
                                             ("test_roialign_aligned_false", False),
                                             ("test_roialign_mode_max", False)])  # fmt: skip
def test_roialign_backend_data_follows_the_rules(name, half_pixel) -> None:
    case, (X, rois, batch_indices), expected = _backend(name)
    attrs = {a.name: helper.get_attribute_value(a) for a in case.model.graph.node[0].attribute}
    got = _roi_align_loops(
        X, rois, batch_indices, output_height=attrs["output_height"],
        output_width=attrs["output_width"], sampling_ratio=attrs["sampling_ratio"],
        spatial_scale=attrs["spatial_scale"], half_pixel=half_pixel,
        mode=attrs.get("mode", b"avg").decode(),
    )  # fmt: skip
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-4)  # the data has 4 decimals


def test_roialign_default_coordinate_mode_by_opset() -> None:
    X, rois, batch_indices = _roi_inputs()
    geometry = dict(output_height=3, output_width=4, sampling_ratio=2, spatial_scale=0.75)
    half = _roi_align_loops(X, rois, batch_indices, half_pixel=True, **geometry)
    output_half = _roi_align_loops(X, rois, batch_indices, half_pixel=False, **geometry)
    assert not np.allclose(half, output_half, rtol=1e-2)  # the rule can tell them apart
    for opset, expected in ((10, output_half), (16, half), (22, half)):
        model = _roi_align_model(opset, **geometry)  # no coordinate_transformation_mode
        got = load_compiled(model).run(X, rois, batch_indices)[0]
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5, err_msg=f"opset {opset}")


def test_roialign_sampling_ratio_zero_uses_ceil_of_region_over_bins() -> None:
    X, rois, batch_indices = _roi_inputs(6)
    # Region sizes over bins that are not whole numbers (7 / 2 = 3.5, 5.25 / 3 = 1.75...), where
    # ceil, floor and rounding disagree.
    rois = np.array([[0.0, 0.0, 7.0, 5.25], [1.0, 2.0, 8.5, 9.0], [2.0, 1.0, 4.2, 3.9]],
                    dtype=np.float32)  # fmt: skip
    batch_indices = np.array([0, 1, 0], dtype=np.int64)
    geometry = dict(output_height=3, output_width=2, sampling_ratio=0, spatial_scale=1.0)
    for opset, half_pixel in ((10, False), (16, True)):
        expected = _roi_align_loops(X, rois, batch_indices, half_pixel=half_pixel, **geometry)
        for other in (lambda r, b: max(math.floor(r / b), 1), lambda r, b: max(round(r / b), 1)):
            wrong = _roi_align_loops(
                X, rois, batch_indices, half_pixel=half_pixel, grid=other, **geometry
            )
            assert not np.allclose(expected, wrong, rtol=1e-3)
        got = load_compiled(_roi_align_model(opset, **geometry)).run(X, rois, batch_indices)[0]
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_roialign_max_mode_neighbours_compete_separately() -> None:
    X, rois, batch_indices = _roi_inputs(7)
    geometry = dict(output_height=3, output_width=3, sampling_ratio=2, spatial_scale=1.0)
    expected = _roi_align_loops(X, rois, batch_indices, half_pixel=True, mode="max", **geometry)
    # The other reading, the largest interpolated sample point, gives other values.
    other = _roi_align_loops(
        X, rois, batch_indices, half_pixel=True, mode="largest point", **geometry
    )
    assert not np.allclose(expected, other, rtol=1e-3)
    model = _roi_align_model(16, mode="max", **geometry)
    got = load_compiled(model).run(X, rois, batch_indices)[0]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_roialign_backend_max_case_is_not_the_largest_interpolated_point() -> None:
    # The backend case for max mode rejects the other reading (largest interpolated point).
    case, (X, rois, batch_indices), expected = _backend("test_roialign_mode_max")
    got = load_compiled(case.model).run(X, rois, batch_indices)[0]
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-4)
    other = _roi_align_loops(
        X, rois, batch_indices, output_height=5, output_width=5, sampling_ratio=2,
        spatial_scale=1.0, half_pixel=False, mode="largest point",
    )  # fmt: skip
    assert not np.allclose(other, expected, rtol=1e-3)
