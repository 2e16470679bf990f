"""Settled semantics of the convolution and pooling operators, one test per rule, each failing when
the rule is broken. docs/contract.md settles MaxUnpool with `output_shape` and the three-dimensional
ConvTranspose; the others are the choices the kernels document (runtime_support/conv.py, pool.py),
taken from the ONNX backend data or, where they are silent, onnxruntime 1.31.1's output.

Expected values come from the ONNX backend data or from plain-Python loops written here, never from
the code under test.
"""

from __future__ import annotations

import importlib
import itertools
import math

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from onemodel_compile import load_compiled
from tests.harness import backend_cases

IR_VERSION = 10


def _model(op, inputs, attrs=None, opset=22, constants=None, outputs=("Y",)):
    """A one-node model: `inputs` are (name, array) graph inputs, `constants` (name, array)
    initializers, in the node's input order after the graph inputs."""
    constants = constants or []
    node = helper.make_node(
        op, [n for n, _ in inputs] + [n for n, _ in constants], list(outputs), **(attrs or {})
    )
    graph = helper.make_graph(
        [node],
        op,
        [
            helper.make_tensor_value_info(
                name, helper.np_dtype_to_tensor_dtype(array.dtype), array.shape
            )
            for name, array in inputs
        ],
        [helper.make_empty_tensor_value_info(name) for name in outputs],
        [numpy_helper.from_array(array, name) for name, array in constants],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = IR_VERSION
    # declare the outputs as an exporter would: the types onnx infers, else X's type and rank
    inferred = {i.name: i for i in onnx.shape_inference.infer_shapes(model).graph.output}
    first = inputs[0][1]
    del model.graph.output[:]
    for name in outputs:
        info = inferred.get(name)
        if info is None or not info.type.tensor_type.HasField("shape"):
            elem = helper.np_dtype_to_tensor_dtype(first.dtype if name == "Y" else np.int64)
            info = helper.make_tensor_value_info(name, elem, [None] * first.ndim)
        model.graph.output.append(info)
    return model


def _run(model, *arrays, variant="fast"):
    return load_compiled(model, variant).run(*arrays)


def _backend(name):
    case = backend_cases.case(name)
    inputs, outputs = case.data_sets[0]
    return case.model, [np.asarray(a) for a in inputs], [np.asarray(a) for a in outputs]


def _bits(array):
    return np.ascontiguousarray(array).view(np.uint8)


# --- MaxUnpool ---------------------------------------------------------------------------------


def _pooled_indices(shape, kernel, seed):
    """Flat indices into `shape` (N, C, H, W) a 2-D MaxPool with stride = kernel could give."""
    rng = np.random.default_rng(seed)
    n, c, h, w = shape
    kh, kw = kernel
    indices = np.zeros((n, c, h // kh, w // kw), dtype=np.int64)
    for b, ch, i, j in itertools.product(*(range(d) for d in indices.shape)):
        row = i * kh + int(rng.integers(kh))
        col = j * kw + int(rng.integers(kw))
        indices[b, ch, i, j] = ((b * c + ch) * h + row) * w + col
    return indices


def _unpool_loops(X, I, pooled_shape, output_shape):
    """Each value at its index's coordinates in `pooled_shape`, written into `output_shape`."""
    Y = np.zeros(output_shape, dtype=X.dtype)
    for value, index in zip(X.reshape(-1), I.reshape(-1)):
        coordinates = []
        for dim in reversed(pooled_shape):
            index, position = divmod(int(index), dim)
            coordinates.append(position)
        Y[tuple(reversed(coordinates))] = value
    return Y


def test_maxunpool_output_shape_rebases_indices_from_the_pooled_shape():
    model, inputs, (expected,) = _backend("test_maxunpool_export_with_output_shape")
    (got,) = _run(model, *inputs)
    np.testing.assert_array_equal(got, expected)

    pooled_shape, output_shape = (2, 3, 4, 6), (2, 3, 5, 9)
    X = np.random.default_rng(0).standard_normal((2, 3, 2, 3)).astype(np.float32)
    I = _pooled_indices(pooled_shape, (2, 2), seed=1)
    expected = _unpool_loops(X, I, pooled_shape, output_shape)
    attrs = {"kernel_shape": [2, 2], "strides": [2, 2]}
    shape = np.array(output_shape, dtype=np.int64)
    at_compile_time = _model("MaxUnpool", [("X", X), ("I", I)], attrs, constants=[("S", shape)])
    at_run_time = _model("MaxUnpool", [("X", X), ("I", I), ("S", shape)], attrs)
    np.testing.assert_array_equal(_run(at_compile_time, X, I)[0], expected)
    np.testing.assert_array_equal(_run(at_run_time, X, I, shape)[0], expected)
    # not a flat position in output_shape (onnxruntime's reading)
    flat = np.zeros(output_shape, np.float32).reshape(-1)
    flat[I.reshape(-1)] = X.reshape(-1)
    assert not np.array_equal(flat.reshape(output_shape), expected)


def test_maxunpool_index_outside_the_shape_is_an_error():
    X = np.ones((1, 1, 2, 2), dtype=np.float32)
    attrs = {"kernel_shape": [2, 2], "strides": [2, 2]}  # pooled shape (1, 1, 4, 4): 16 positions
    without_shape = _model("MaxUnpool", [("X", X), ("I", np.zeros((1, 1, 2, 2), np.int64))], attrs)
    for outside in (16, -1):
        I = np.array([[[[0, 5], [10, outside]]]], dtype=np.int64)
        with pytest.raises(ValueError, match="outside"):
            _run(without_shape, X, I)
    # inside the pooled shape, beyond output_shape (1, 1, 3, 5): position (3, 1)
    smaller = np.array([1, 1, 3, 5], dtype=np.int64)
    with_shape = _model(
        "MaxUnpool",
        [("X", X), ("I", np.zeros((1, 1, 2, 2), np.int64)), ("S", smaller)],
        attrs,
    )
    with pytest.raises(ValueError, match="outside"):
        _run(with_shape, X, np.array([[[[0, 2], [9, 13]]]], np.int64), smaller)
    # the same shape takes indices that stay inside it
    got = _run(with_shape, X, np.array([[[[0, 2], [9, 11]]]], np.int64), smaller)[0]
    expected = np.zeros((1, 1, 3, 5), np.float32)
    expected[0, 0, 0, 0] = expected[0, 0, 0, 2] = expected[0, 0, 2, 1] = expected[0, 0, 2, 3] = 1
    np.testing.assert_array_equal(got, expected)


# --- ConvTranspose -----------------------------------------------------------------------------


def _conv_transpose_loops(X, W, B, strides, dilations, begins, group, out_shape):
    """ConvTranspose as direct loops: for each input element (n, c, i in C order), each output
    channel of its group, each kernel tap, Y[o] += x * w with o = i * stride + tap * dilation -
    begin; one IEEE multiplication and one addition in X's type each. The bias is added last."""
    real = X.dtype.type
    batch, channels = X.shape[:2]
    maps_per_group = W.shape[1]
    in_per_group = channels // group
    Y = np.zeros((batch, maps_per_group * group, *out_shape), dtype=X.dtype)
    for n, c in itertools.product(range(batch), range(channels)):
        g = c // in_per_group
        for i in itertools.product(*(range(d) for d in X.shape[2:])):
            x = X[(n, c) + i]
            for m in range(g * maps_per_group, (g + 1) * maps_per_group):
                for tap in itertools.product(*(range(k) for k in W.shape[2:])):
                    o = tuple(
                        i[a] * strides[a] + tap[a] * dilations[a] - begins[a]
                        for a in range(len(tap))
                    )
                    if all(0 <= o[a] < out_shape[a] for a in range(len(o))):
                        product = real(x * W[(c, m - g * maps_per_group) + tap])
                        Y[(n, m) + o] = real(Y[(n, m) + o] + product)
    if B is not None:
        for m in range(Y.shape[1]):
            Y[:, m] = Y[:, m] + B[m]
    return Y


def _wide(rng, shape):
    """float32 values spread over eight orders of magnitude: sums in another order round
    differently."""
    values = rng.standard_normal(shape) * 10.0 ** rng.uniform(-4, 4, shape)
    return values.astype(np.float32)


THREE_D = [
    # (X shape, W shape, attributes, begins, output spatial shape)
    ((1, 3, 3, 4, 3), (3, 2, 3, 3, 2), {}, (0, 0, 0), (5, 6, 4)),
    (
        (2, 4, 2, 3, 3),
        (4, 1, 2, 3, 2),
        {
            "group": 2,
            "strides": [2, 1, 2],
            "dilations": [1, 2, 1],
            "pads": [1, 0, 1, 0, 2, 0],
            "output_padding": [1, 0, 1],
        },
        (1, 0, 1),
        (4, 5, 6),
    ),
    # full result 6x6x3: one position removed at the beginning of axis 1, one zero added at the
    # end of axis 2
    (
        (1, 2, 3, 3, 2),
        (2, 2, 2, 2, 2),
        {"strides": [2, 2, 1], "output_shape": [5, 7, 3]},
        (1, 0, 0),
        (5, 7, 3),
    ),
]


@pytest.mark.parametrize("x_shape,w_shape,attrs,begins,out", THREE_D)
def test_convtranspose_3d_uses_direct_loops_in_a_fixed_order_and_is_exact(
    x_shape, w_shape, attrs, begins, out
):
    rng = np.random.default_rng(sum(x_shape) + len(attrs))
    X, W = _wide(rng, x_shape), _wide(rng, w_shape)
    B = _wide(rng, (w_shape[1] * attrs.get("group", 1),))
    strides = attrs.get("strides", [1, 1, 1])
    dilations = attrs.get("dilations", [1, 1, 1])
    expected = _conv_transpose_loops(
        X, W, B, strides, dilations, begins, attrs.get("group", 1), out
    )
    model = _model("ConvTranspose", [("X", X)], attrs, constants=[("W", W), ("B", B)])
    for variant in ("fast", "exact"):  # the exact variant takes it: no refusal
        (got,) = _run(model, X, variant=variant)
        assert got.dtype == np.float32 and got.shape == expected.shape
        assert np.array_equal(_bits(got), _bits(expected)), variant
    if attrs.get("group", 1) == 1:
        # the data tell orders apart: the same terms with the input channels in reverse order
        # give other bits
        flipped = _conv_transpose_loops(
            X[:, ::-1].copy(), W[::-1].copy(), B, strides, dilations, begins, 1, out
        )
        assert not np.array_equal(_bits(flipped), _bits(expected))


def test_convtranspose_3d_backend_case_in_the_exact_variant():
    model, inputs, (expected,) = _backend("test_convtranspose_3d")
    (got,) = _run(model, *inputs, variant="exact")
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


def test_convtranspose_with_fewer_than_three_spatial_axes_in_the_exact_variant():
    """The exact variant runs one and two spatial axes through the same direct loops."""
    model, inputs, (expected,) = _backend("test_convtranspose")
    (got,) = _run(model, *inputs, variant="exact")
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


def test_convtranspose_output_shape_longer_than_the_full_result_adds_zeros_at_the_end():
    model, inputs, (expected,) = _backend("test_convtranspose_output_shape")  # full 9x7 -> 10x8
    np.testing.assert_array_equal(_run(model, *inputs)[0], expected)
    rng = np.random.default_rng(3)
    X = rng.integers(-8, 8, (1, 2, 3, 2)).astype(np.float32)  # small integers: sums are exact
    W = rng.integers(-8, 8, (2, 1, 2, 3)).astype(np.float32)
    attrs = {"strides": [3, 3], "output_shape": [8, 7]}  # full 8x6
    full = _conv_transpose_loops(X, W, None, [3, 3], [1, 1], [0, 0], 1, (8, 6))
    expected = np.concatenate([full, np.zeros((1, 1, 8, 1), np.float32)], axis=3)
    got = _run(_model("ConvTranspose", [("X", X)], attrs, constants=[("W", W)]), X)[0]
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize(
    "auto_pad,begin", [("NOTSET", 2), ("SAME_LOWER", 2), ("SAME_UPPER", 1), ("VALID", 2)]
)
def test_convtranspose_output_shape_removes_the_larger_half_first_unless_same_upper(
    auto_pad, begin
):
    rng = np.random.default_rng(4)
    X = rng.integers(-8, 8, (1, 1, 4)).astype(np.float32)
    W = rng.integers(-8, 8, (1, 2, 3)).astype(np.float32)
    full = _conv_transpose_loops(X, W, None, [2], [1], [0], 1, (9,))  # 9 positions, 6 kept
    attrs = {"strides": [2], "output_shape": [6], "auto_pad": auto_pad, "pads": [0, 0]}
    if auto_pad != "NOTSET":
        del attrs["pads"]
    got = _run(_model("ConvTranspose", [("X", X)], attrs, constants=[("W", W)]), X)[0]
    np.testing.assert_array_equal(got, full[:, :, begin : begin + 6])


def test_convtranspose_same_output_is_input_times_stride_even_past_the_full_result():
    X = np.arange(1, 4, dtype=np.float32).reshape(1, 1, 3)
    W = np.array([[[2.0]]], dtype=np.float32)  # reach 1 < stride 3: full result 7 positions
    attrs = {"auto_pad": "SAME_UPPER", "strides": [3]}
    got = _run(_model("ConvTranspose", [("X", X)], attrs, constants=[("W", W)]), X)[0]
    np.testing.assert_array_equal(got, [[[2, 0, 0, 4, 0, 0, 6, 0, 0]]])


# --- Col2Im ------------------------------------------------------------------------------------


def test_col2im_adds_in_a_fixed_order_and_is_exact():
    rng = np.random.default_rng(5)
    image, block, strides, dilations, pads = (5, 6), (3, 2), (1, 2), (1, 1), (1, 0, 1, 1)
    blocks = [
        (image[a] + pads[a] + pads[a + 2] - (block[a] - 1) * dilations[a] - 1) // strides[a] + 1
        for a in range(2)
    ]
    data = _wide(rng, (2, 2 * math.prod(block), math.prod(blocks)))
    expected = np.zeros((2, 2) + image, dtype=np.float32)
    for n, c in itertools.product(range(2), range(2)):
        for t, tap in enumerate(itertools.product(*(range(k) for k in block))):  # taps in C order
            for b, at in enumerate(itertools.product(*(range(k) for k in blocks))):
                o = [at[a] * strides[a] + tap[a] * dilations[a] - pads[a] for a in range(2)]
                if all(0 <= o[a] < image[a] for a in range(2)):
                    value = data[n, c * math.prod(block) + t, b]
                    expected[n, c, o[0], o[1]] = np.float32(expected[n, c, o[0], o[1]] + value)
    attrs = {"strides": list(strides), "dilations": list(dilations), "pads": list(pads)}
    constants = [("image", np.array(image, np.int64)), ("block", np.array(block, np.int64))]
    model = _model("Col2Im", [("data", data)], attrs, opset=18, constants=constants)
    for variant in ("fast", "exact"):
        assert np.array_equal(_bits(_run(model, data, variant=variant)[0]), _bits(expected))


# --- AveragePool, MaxPool, MaxRoiPool ----------------------------------------------------------


def test_averagepool_adds_the_taps_in_a_fixed_order_and_is_exact():
    rng = np.random.default_rng(7)
    X = _wide(rng, (2, 3, 6, 7))
    kernel, strides, pads = (3, 2), (2, 1), (1, 0, 1, 1)
    attrs = {"kernel_shape": list(kernel), "strides": list(strides), "pads": list(pads)}
    out = [(X.shape[2 + a] + pads[a] + pads[a + 2] - kernel[a]) // strides[a] + 1 for a in (0, 1)]
    expected = np.zeros((2, 3, *out), np.float32)
    for n, c, i, j in itertools.product(range(2), range(3), range(out[0]), range(out[1])):
        total, count = None, 0
        for a, b in itertools.product(range(kernel[0]), range(kernel[1])):  # taps in C order
            row, col = i * strides[0] + a - pads[0], j * strides[1] + b - pads[1]
            inside = 0 <= row < X.shape[2] and 0 <= col < X.shape[3]
            value = X[n, c, row, col] if inside else np.float32(0)
            total = value if total is None else np.float32(total + value)
            count += inside
        expected[n, c, i, j] = np.float32(total / np.float32(count))
    model = _model("AveragePool", [("X", X)], attrs)
    for variant in ("fast", "exact"):
        assert np.array_equal(_bits(_run(model, X, variant=variant)[0]), _bits(expected))


def test_maxpool_index_is_the_first_maximum_inside_the_input():
    X = np.full((1, 1, 3, 3), -128, dtype=np.int8)  # ties everywhere, padding equal to the data
    X[0, 0, 2, 2] = 5
    attrs = {"kernel_shape": [2, 2], "pads": [1, 1, 0, 0]}
    model = _model("MaxPool", [("X", X)], attrs, outputs=("Y", "I"))
    Y, I = _run(model, X)
    expected = np.zeros((1, 1, 3, 3), np.int64)
    for i, j in itertools.product(range(3), range(3)):
        window = [(r, c) for r in (i - 1, i) for c in (j - 1, j) if r >= 0 and c >= 0]
        best = max(X[0, 0, r, c] for r, c in window)
        r, c = next((r, c) for r, c in window if X[0, 0, r, c] == best)
        expected[0, 0, i, j] = r * 3 + c
    np.testing.assert_array_equal(I, expected)
    assert (X.reshape(-1)[I] == Y).all()


def _c_round(value: float) -> int:
    magnitude = abs(value)
    whole = math.floor(magnitude)
    if magnitude - whole >= 0.5:
        whole += 1
    return whole if value >= 0 else -whole


def test_maxroipool_rounds_corners_half_away_from_zero():
    rng = np.random.default_rng(6)
    X = rng.uniform(-10, 10, (1, 2, 8, 9)).astype(np.float32)
    rois = np.array([[0, 0.5, 1.5, 4.5, 6.5], [0, 2.5, 0.5, 8.5, 2.5]], dtype=np.float32)
    pooled = (3, 2)
    expected = np.zeros((2, 2) + pooled, np.float32)
    for r, (_, x1, y1, x2, y2) in enumerate(rois.tolist()):
        x1, y1, x2, y2 = (_c_round(v) for v in (x1, y1, x2, y2))
        bin_h = np.float32(max(y2 - y1 + 1, 1)) / np.float32(pooled[0])
        bin_w = np.float32(max(x2 - x1 + 1, 1)) / np.float32(pooled[1])
        for i, j in itertools.product(range(pooled[0]), range(pooled[1])):
            top = min(max(math.floor(np.float32(i) * bin_h) + y1, 0), 8)
            bottom = min(max(math.ceil(np.float32(i + 1) * bin_h) + y1, 0), 8)
            left = min(max(math.floor(np.float32(j) * bin_w) + x1, 0), 9)
            right = min(max(math.ceil(np.float32(j + 1) * bin_w) + x1, 0), 9)
            for ch in range(2):
                cells = [X[0, ch, a, b] for a in range(top, bottom) for b in range(left, right)]
                expected[r, ch, i, j] = max(cells) if cells else 0
    model = _model(
        "MaxRoiPool", [("X", X), ("rois", rois)], {"pooled_shape": list(pooled)}, opset=21
    )
    for variant in ("fast", "exact"):
        np.testing.assert_array_equal(_run(model, X, rois, variant=variant)[0], expected)
    # (round half to even would start the first region at 0 and 2, not 1 and 2: other maxima)
    assert _c_round(0.5) == 1 and _c_round(2.5) == 3 and _c_round(-0.5) == -1


# --- Fast kernels against plain loops ----------------------------------------------------------
# The fast conv (im2col in blocks of output rows or samples, per-channel products for depthwise),
# the separable MaxPool and ConvTranspose's tile placement, called directly on geometries that
# reach each of their paths; the references are loops written here.


def _conv_loops(X, W, B, pads, strides, dilations, group):
    """Convolution by loops over the kernel taps, in float64."""
    rank = X.ndim - 2
    padded = np.zeros(
        X.shape[:2] + tuple(n + pads[a] + pads[a + rank] for a, n in enumerate(X.shape[2:]))
    )
    padded[
        (slice(None), slice(None))
        + tuple(slice(pads[a], pads[a] + n) for a, n in enumerate(X.shape[2:]))
    ] = X
    kernel = W.shape[2:]
    out = [
        (padded.shape[2 + a] - (kernel[a] - 1) * dilations[a] - 1) // strides[a] + 1
        for a in range(rank)
    ]
    Y = np.zeros((X.shape[0], W.shape[0], *out))
    cin, cout = X.shape[1] // group, W.shape[0] // group
    for g in range(group):
        for tap in itertools.product(*(range(k) for k in kernel)):
            window = tuple(
                slice(
                    tap[a] * dilations[a],
                    tap[a] * dilations[a] + (out[a] - 1) * strides[a] + 1,
                    strides[a],
                )
                for a in range(rank)
            )
            x = padded[(slice(None), slice(g * cin, (g + 1) * cin)) + window]
            w = W[(slice(g * cout, (g + 1) * cout), slice(None)) + tap].astype(np.float64)
            for m in range(cout):
                for c in range(cin):
                    Y[:, g * cout + m] += w[m, c] * x[:, c]
    if B is not None:
        Y += B.astype(np.float64).reshape((-1,) + (1,) * rank)
    return Y


CONV_GEOMETRIES = [
    # (N, C, spatial, M, kernel, strides, dilations, pads, group)
    (1, 5, (11, 9), 7, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 1),
    (3, 4, (6, 7), 5, (3, 2), (2, 1), (1, 2), (1, 0, 2, 1), 1),  # several samples a block
    (2, 6, (9, 8), 4, (3, 3), (1, 2), (1, 1), (0, 1, 1, 0), 2),  # groups
    (1, 3, (13,), 2, (4,), (3,), (2,), (2, 1), 1),
    (2, 3, (9, 10), 4, (3, 2), (2, 3), (2, 1), (0, 0, 0, 0), 1),  # no pads: X itself viewed
    (1, 3, (7, 9), 4, (3, 3), (1, 1), (1, 2), (0, 0, 0, 0), 1),  # rows read past X's end
    (2, 3, (11,), 4, (3,), (1,), (2,), (1, 2), 1),
    (2, 2, (4, 5, 6), 3, (2, 3, 2), (1, 2, 1), (2, 1, 1), (1, 0, 1, 0, 1, 1), 1),
    (1, 4, (8, 8), 6, (1, 1), (2, 2), (1, 1), (0, 0, 0, 0), 1),  # strided 1x1
    (2, 6, (5, 6), 6, (1, 1), (1, 1), (1, 1), (0, 0, 0, 0), 3),  # grouped 1x1, no im2col
    (2, 40, (7, 6), 40, (3, 3), (2, 1), (1, 1), (1, 1, 1, 1), 40),  # depthwise, products
    (1, 32, (5, 5), 64, (3, 3), (1, 1), (2, 2), (2, 2, 2, 2), 32),  # depthwise, multiplier 2
    (2, 8, (6, 7), 16, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 8),  # depthwise, accumulated
    (2, 3, (32, 30), 6, (8, 8), (8, 8), (1, 1), (0, 0, 0, 0), 1),  # patches (ViT), cropped
    (1, 4, (9, 8), 6, (2, 4), (2, 4), (1, 1), (0, 0, 0, 0), 2),  # grouped patches
    (2, 2, (4, 6, 6), 3, (2, 3, 2), (2, 3, 2), (1, 1, 1), (0,) * 6, 1),  # 3-D patches
    (2, 24, (4, 5), 24, (3, 3), (1, 2), (2, 1), (2, 1, 2, 0), 24),  # depthwise, a small map
    (3, 16, (5,), 16, (3,), (1,), (1,), (1, 1), 16),  # depthwise, one spatial axis
    (2, 6, (3, 4), 8, (2, 3), (1, 1), (1, 1), (0, 2, 1, 0), 2),  # groups, a small map
    (1, 3, (0, 5), 4, (1, 3), (1, 1), (1, 1), (0, 1, 0, 1), 1),  # no positions
    (2, 5, (6, 7), 7, (1, 1), (2, 2), (1, 1), (0, 0, 0, 0), 1),  # 1x1, samples side by side
    (3, 2, (17, 16), 3, (1, 1), (1, 1), (1, 1), (0, 0, 0, 0), 1),  # 1x1, a product per sample
]


# The kernel's path thresholds, set so that each geometry takes each path its shape allows: im2col
# tap copies one row a block (64 bytes) or in large blocks, with no gather, no strided view and
# the depthwise per-channel products; then every small geometry gathered and every depthwise one
# channels last; then every geometry through one copy of a strided view, its rows over the padded
# width wherever the last stride is 1, then never.
NO_SMALL_PATHS = {
    "_GATHER_ROW": 0,
    "_STRIDED_ELEMENTS": 0,
    "_DEPTHWISE_LAST_POSITIONS": 0,
    "_DEPTHWISE_LAST_WIDE_POSITIONS": 0,
}
CONV_PATHS = {
    "rows": {"_BLOCK_BYTES": 64, **NO_SMALL_PATHS},
    "blocks": {"_BLOCK_BYTES": 1 << 21, **NO_SMALL_PATHS},
    "gather": {"_GATHER_ROW": 1 << 30, "_DEPTHWISE_LAST_POSITIONS": 1 << 30},
    "strided rows": {**NO_SMALL_PATHS, "_STRIDED_ELEMENTS": 1 << 30, "_PADDED_ROW_TERMS": 1 << 30},
    "strided": {**NO_SMALL_PATHS, "_STRIDED_ELEMENTS": 1 << 30, "_PADDED_ROW_TERMS": -1},
}


@pytest.mark.parametrize("geometry", CONV_GEOMETRIES)
@pytest.mark.parametrize("paths", CONV_PATHS)
def test_fast_conv_matches_loops_on_every_path(geometry, paths, monkeypatch):
    conv_module = importlib.import_module("runtime_support.conv")  # the package exports conv()
    for name, value in CONV_PATHS[paths].items():
        monkeypatch.setattr(conv_module, name, value)
    monkeypatch.setattr(conv_module, "_MIN_COLUMNS", 1)
    conv_module._im2col_plan.cache_clear()
    conv_module._conv_plan.cache_clear()
    N, C, spatial, M, kernel, strides, dilations, pads, group = geometry
    rng = np.random.default_rng(len(spatial) * 100 + C)
    X = rng.standard_normal((N, C, *spatial)).astype(np.float32)
    W = rng.standard_normal((M, C // group, *kernel)).astype(np.float32)
    B = rng.standard_normal(M).astype(np.float32)
    for bias in (B, None):
        got = conv_module.conv(
            X,
            W,
            bias,
            pads=list(pads),
            strides=list(strides),
            dilations=list(dilations),
            group=group,
        )
        expected = _conv_loops(X, W, bias, pads, strides, dilations, group)
        assert got.dtype == np.float32 and got.flags.c_contiguous
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    conv_module._im2col_plan.cache_clear()
    conv_module._conv_plan.cache_clear()


def _max_pool_loops(X, kernel, strides, dilations, pads, ceil_mode):
    """Each window's maximum over the positions inside X, by loops: the taps combined in C order
    by np.maximum (NaN if the window holds one; on a tie such as -0 and +0 the later tap's value,
    as before the separable kernel); the output shape by the ONNX formula, a window starting in
    the end padding dropped."""
    rank = X.ndim - 2
    out = []
    for a in range(rank):
        span = X.shape[2 + a] + pads[a] + pads[a + rank] - ((kernel[a] - 1) * dilations[a] + 1)
        count = (-(-span // strides[a]) if ceil_mode else span // strides[a]) + 1
        if ceil_mode and (count - 1) * strides[a] >= X.shape[2 + a] + pads[a]:
            count -= 1
        out.append(count)
    Y = np.empty(X.shape[:2] + tuple(out), X.dtype)
    for position in itertools.product(*(range(o) for o in out)):
        values = []
        for tap in itertools.product(*(range(k) for k in kernel)):
            where = [
                position[a] * strides[a] + tap[a] * dilations[a] - pads[a] for a in range(rank)
            ]
            if all(0 <= where[a] < X.shape[2 + a] for a in range(rank)):
                values.append(X[(slice(None), slice(None)) + tuple(where)])
        result = values[0]
        for value in values[1:]:
            result = np.maximum(result, value)
        Y[(slice(None), slice(None)) + position] = result
    return Y


@pytest.fixture(params=["by size", "flat passes"])
def pool_paths(request, monkeypatch):
    """Each pooling test twice: with the kernels' own choice of path (small maps take the per-tap
    ones), and with the flat passes (_flat_separable) for every map they can take."""
    from runtime_support import pool

    if request.param == "flat passes":
        monkeypatch.setattr(pool, "_FLAT_MIN_SIZE", 0)
    pool._max_pool_plan.cache_clear()  # max_pool settles its path per shape
    yield request.param
    pool._max_pool_plan.cache_clear()


@pytest.mark.parametrize("seed", range(24))
def test_fast_maxpool_is_each_windows_maximum_bit_for_bit(seed, pool_paths):
    from runtime_support.pool import max_pool

    rng = np.random.default_rng(seed)
    rank = 1 + seed % 3
    kernel = [int(rng.integers(1, 4)) for _ in range(rank)]
    strides = [int(rng.integers(1, 4)) for _ in range(rank)]
    if seed >= 12:  # windows one axis at a time: a stride equal to the kernel, or many taps
        kernel = [int(rng.integers(2, 5)) for _ in range(rank)]
        strides = list(kernel) if seed % 2 else [1] * rank
    dilations = [int(rng.integers(1, 3)) for _ in range(rank)]
    pads = [int(rng.integers(0, k)) for k in kernel] * 2
    if seed >= 18:  # no padding, strides up to the window: the flat passes at any stride
        kernel = [int(rng.integers(2, 4)) for _ in range(rank)]
        strides = [int(rng.integers(1, k + 1)) for k in kernel]
        pads = [0] * (2 * rank)
    spatial = [int(rng.integers((k - 1) * d + 1, 9)) for k, d in zip(kernel, dilations)]
    dtype = (np.float32, np.float64, np.int8, np.float16)[seed % 4]
    channels = 40 if 6 <= seed < 12 else 3  # 40: few outputs per channel, channels last
    X = (rng.standard_normal([2, channels] + spatial) * 50).astype(dtype)
    if X.dtype.kind == "f":
        X = -np.abs(X)  # no positive values, so the zeros below are the maxima of most windows
        zeros = rng.integers(0, X.size, X.size // 2)  # ties of +0 and -0
        X.reshape(-1)[zeros] = np.where(rng.random(zeros.size) < 0.5, -0.0, 0.0).astype(dtype)
        X.reshape(-1)[rng.integers(0, X.size, 2)] = np.nan
    before = X.copy()
    ceil_mode = seed % 2
    got = max_pool(
        X, kernel_shape=kernel, pads=pads, strides=strides, dilations=dilations, ceil_mode=ceil_mode
    )
    expected = _max_pool_loops(X, kernel, strides, dilations, pads, ceil_mode)
    assert got.dtype == X.dtype and got.flags.c_contiguous
    assert np.array_equal(_bits(got), _bits(expected))
    assert np.array_equal(_bits(X), _bits(before))  # the input is only read


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"pads": (1, 0, 0, 1)},
        {"output_padding": (1, 1)},
        {"output_shape": (9, 5)},  # longer than the full result: zeros at the end
        {"auto_pad": "SAME_LOWER"},
    ],
)
def test_fast_convtranspose_with_kernel_equal_to_strides_matches_loops(options):
    from runtime_support.conv import conv_transpose

    rng = np.random.default_rng(9)
    X = rng.standard_normal((2, 4, 3, 2)).astype(np.float32)
    W = rng.standard_normal((4, 3, 3, 2)).astype(np.float32)  # kernel (3, 2) = strides
    B = rng.standard_normal(3).astype(np.float32)
    strides = (3, 2)
    full = np.zeros((2, 3, 9, 4))
    for n, c, i, j, m, a, b in itertools.product(
        range(2), range(4), range(3), range(2), range(3), range(3), range(2)
    ):
        full[n, m, i * 3 + a, j * 2 + b] += float(X[n, c, i, j]) * float(W[c, m, a, b])
    if "pads" in options:
        expected = full[:, :, 1:9, 0:3]
    elif "output_padding" in options:
        expected = np.pad(full, ((0, 0), (0, 0), (0, 1), (0, 1)))
    elif "output_shape" in options:
        expected = np.pad(full, ((0, 0), (0, 0), (0, 0), (0, 1)))
    else:
        expected = full  # SAME: output in * stride, the full result here
    got = conv_transpose(X, W, B, strides=strides, **options)
    np.testing.assert_allclose(got, expected + B.reshape(3, 1, 1), rtol=1e-5, atol=1e-5)


def _c_order_average(X, kernel, strides, pads):
    """AveragePool (count_include_pad 0) with each window's taps added in C order in float32."""
    shape = X.shape
    out = [(shape[2 + a] + pads[a] + pads[a + 2] - kernel[a]) // strides[a] + 1 for a in (0, 1)]
    expected = np.zeros(shape[:2] + tuple(out), np.float32)
    for n, c, i, j in itertools.product(range(shape[0]), range(shape[1]), *map(range, out)):
        total, count = None, 0
        for a, b in itertools.product(range(kernel[0]), range(kernel[1])):
            row, col = i * strides[0] + a - pads[0], j * strides[1] + b - pads[1]
            inside = 0 <= row < shape[2] and 0 <= col < shape[3]
            value = X[n, c, row, col] if inside else np.float32(0)
            total = value if total is None else np.float32(total + value)
            count += inside
        expected[n, c, i, j] = np.float32(total / np.float32(count))
    return expected


AVERAGE_LAYOUTS = [
    ((1, 40, 5, 6), (3, 2), (2, 2), (1, 0, 1, 1)),  # few outputs, many channels: channels last
    ((2, 3, 7, 6), (3, 3), (1, 2), (1, 1, 0, 1)),  # flat_taps' rows
    ((1, 64, 4, 4), (4, 4), (1, 1), (0, 0, 0, 0)),  # one window over the whole map
    ((2, 5, 9, 8), (3, 3), (1, 1), (1, 1, 1, 1)),  # stride 1: the fast kernel's flat passes
    ((1, 6, 8, 10), (2, 2), (2, 2), (0, 0, 0, 0)),  # no padding: flat passes, then strides
]


@pytest.mark.parametrize("shape, kernel, strides, pads", AVERAGE_LAYOUTS)
def test_exact_averagepool_adds_the_taps_in_c_order_in_either_layout(shape, kernel, strides, pads):
    from runtime_support.pool import exact_average_pool

    X = _wide(np.random.default_rng(8), shape)
    expected = _c_order_average(X, kernel, strides, pads)
    got = exact_average_pool(
        X, kernel_shape=list(kernel), pads=list(pads), strides=list(strides), dilations=[1, 1]
    )
    assert got.flags.c_contiguous
    assert np.array_equal(_bits(got), _bits(expected))


@pytest.mark.parametrize("shape, kernel, strides, pads", AVERAGE_LAYOUTS)
def test_fast_averagepool_is_the_c_order_average_within_a_few_roundings(
    shape, kernel, strides, pads, pool_paths
):
    """The fast kernel sums rows first (or the whole plane by numpy's sum): another order of
    the same additions, so within a few units in the last place of the largest tap (the inputs
    have a wide range of magnitudes, _wide); a new contiguous array."""
    from runtime_support.pool import average_pool

    X = _wide(np.random.default_rng(8), shape)
    expected = _c_order_average(X, kernel, strides, pads)
    got = average_pool(
        X, kernel_shape=list(kernel), pads=list(pads), strides=list(strides), dilations=[1, 1]
    )
    assert got.flags.c_contiguous and got.dtype == np.float32 and not np.shares_memory(got, X)
    tolerance = 4 * np.finfo(np.float32).eps * np.abs(X).max()
    np.testing.assert_allclose(got, expected, rtol=0, atol=tolerance)
