"""The fast variant's short paths for small real models (docs/performance.md, "Per-node overhead,
session 9"): each new emission path or kernel path against onnxruntime 1.31.1, the oracle, on the
inputs that take it and on those that must fall back to the general code, from the same compiled
module."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import runtime_support as rt
from onemodel_compile import compile_model
from tests.harness.modules import import_generated


def _ort(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return session.run(None, feeds)


def _compiled(model: onnx.ModelProto, tmp_path, variant="fast", name="m"):
    path = compile_model(model, tmp_path / f"{name}_{variant}.py", variant)
    return import_generated(path), path.read_text()


def _read_only(a: np.ndarray) -> np.ndarray:
    """`a` as the weights file gives it: a read-only view of bytes (cached prepared weights)."""
    return np.frombuffer(a.tobytes(), a.dtype).reshape(a.shape)


# --- LSTM: one time step ------------------------------------------------------------------------


def _lstm_model(
    hidden,
    features,
    seq="seq",
    batch="batch",
    bias=True,
    states=True,
    peepholes=None,
    lengths=False,
    direction="forward",
):
    """One LSTM node; X [seq, batch, features] with symbolic dims by default; the initial states
    (and sequence_lens) graph inputs, the weights initializers."""
    rng = np.random.default_rng(3)
    directions = 2 if direction == "bidirectional" else 1
    scale = 1 / np.sqrt(hidden)
    W = (scale * rng.normal(size=(directions, 4 * hidden, features))).astype(np.float32)
    R = (scale * rng.normal(size=(directions, 4 * hidden, hidden))).astype(np.float32)
    B = rng.normal(size=(directions, 8 * hidden)).astype(np.float32)
    initializers = [numpy_helper.from_array(W, "W"), numpy_helper.from_array(R, "R")]
    names = ["X", "W", "R", "B" if bias else ""]
    if bias:
        initializers.append(numpy_helper.from_array(B, "B"))
    inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, [seq, batch, features])]
    names.append("sequence_lens" if lengths else "")
    if lengths:
        inputs.append(helper.make_tensor_value_info("sequence_lens", TensorProto.INT32, [batch]))
    if states:
        names += ["h0", "c0"]
        for state in ("h0", "c0"):
            inputs.append(
                helper.make_tensor_value_info(state, TensorProto.FLOAT, [directions, batch, hidden])
            )
    if peepholes is not None:
        names = names + [""] * (7 - len(names)) + ["P"]
        initializers.append(numpy_helper.from_array(peepholes.astype(np.float32), "P"))
    while names and names[-1] == "":
        names.pop()
    outputs = ["Y", "Y_h", "Y_c"]
    graph = helper.make_graph(
        [helper.make_node("LSTM", names, outputs, hidden_size=hidden, direction=direction)],
        "lstm",
        inputs,
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
        initializers,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)


def _lstm_feeds(model, steps, batch, seed=0, lengths=None):
    rng = np.random.default_rng(seed)
    shapes = {
        v.name: [d.dim_value or None for d in v.type.tensor_type.shape.dim]
        for v in model.graph.input
    }
    features = shapes["X"][2]
    feeds = {"X": rng.normal(size=(steps, batch, features)).astype(np.float32)}
    for state in ("h0", "c0"):
        if state in shapes:
            directions, _, hidden = shapes[state]
            feeds[state] = rng.normal(size=(directions, batch, hidden)).astype(np.float32)
    if "sequence_lens" in shapes:
        feeds["sequence_lens"] = np.array(lengths, dtype=np.int32)
    return feeds


def _check_outputs(module, model, feeds):
    expected = _ort(model, feeds)
    got = module.run_feeds(feeds)
    for name, want in zip(("Y", "Y_h", "Y_c"), expected):
        assert got[name].shape == want.shape, name
        assert got[name].flags.c_contiguous and got[name].dtype == np.float32, name
        np.testing.assert_allclose(got[name], want, rtol=1e-5, atol=1e-6, err_msg=name)
    return got


@pytest.mark.parametrize("hidden,features", [(128, 128), (5, 3)])
def test_lstm_of_a_dynamic_sequence_takes_the_one_step_path_and_matches_onnxruntime(
    tmp_path, hidden, features
):
    """An LSTM whose sequence length is unknown at compile time calls rt.lstm_step; one module
    gives onnxruntime's results for one step (the short path) and for several (rt.lstm's call),
    at batch 1 and 3, and again on a second call (the weights it concatenated once, cached)."""
    model = _lstm_model(hidden, features)
    module, source = _compiled(model, tmp_path)
    assert "rt.lstm_step(" in source and "rt.lstm(" not in source
    for steps, batch in [(1, 1), (1, 3), (4, 1), (3, 2), (1, 1)]:
        _check_outputs(module, model, _lstm_feeds(model, steps, batch, seed=steps * 10 + batch))


def test_lstm_one_step_outputs_are_separate_arrays(tmp_path):
    """Y and Y_h of a step hold the same values; the module hands them out as arrays that do not
    share memory (writing one leaves the other), as rt.lstm's outputs."""
    model = _lstm_model(4, 3)
    module, _ = _compiled(model, tmp_path)
    got = module.run_feeds(_lstm_feeds(model, 1, 1))
    assert not np.shares_memory(got["Y"], got["Y_h"])
    np.testing.assert_array_equal(got["Y"][0], got["Y_h"])


@pytest.mark.parametrize(
    "kwargs",
    [
        {"bias": False},
        {"states": False},
        {"bias": False, "states": False},
        {"direction": "reverse"},
    ],
)
def test_lstm_one_step_without_bias_or_states_matches_onnxruntime(tmp_path, kwargs):
    """Absent B (zeros), absent initial states (zeros) and the reverse direction (one step: the
    same step) on the short path."""
    model = _lstm_model(6, 4, **kwargs)
    module, source = _compiled(model, tmp_path)
    assert "rt.lstm_step(" in source
    for steps, batch in [(1, 2), (3, 2)]:
        _check_outputs(module, model, _lstm_feeds(model, steps, batch))


def test_lstm_one_step_falls_back_for_lengths_and_peepholes(tmp_path):
    """sequence_lens other than all ones, and non-zero peepholes, take rt.lstm's call from the
    same rt.lstm_step: onnxruntime's results (zero peepholes and lengths of ones stay short)."""
    model = _lstm_model(5, 3, lengths=True)
    module, _ = _compiled(model, tmp_path)
    _check_outputs(module, model, _lstm_feeds(model, 1, 2, lengths=[1, 1]))
    _check_outputs(module, model, _lstm_feeds(model, 1, 2, lengths=[1, 0]))
    _check_outputs(module, model, _lstm_feeds(model, 3, 2, lengths=[3, 1]))
    for peepholes in (np.zeros((1, 15)), np.random.default_rng(1).normal(size=(1, 15))):
        model = _lstm_model(5, 3, peepholes=peepholes)
        module, _ = _compiled(model, tmp_path, name="p")
        _check_outputs(module, model, _lstm_feeds(model, 1, 2))


def test_lstm_known_steps_keep_the_time_loop_and_exact_keeps_its_kernel(tmp_path):
    """A sequence length known above 1, two directions, or the exact variant: rt.lstm (the exact
    variant's rt.exact_lstm, whose bits golden_exact.json pins), never the step."""
    _, source = _compiled(_lstm_model(4, 3, seq=5), tmp_path, name="five")
    assert "rt.lstm(" in source and "lstm_step" not in source
    _, source = _compiled(_lstm_model(4, 3, direction="bidirectional"), tmp_path, name="bi")
    assert "rt.lstm(" in source and "lstm_step" not in source
    model = _lstm_model(4, 3, seq=1)
    _, source = _compiled(model, tmp_path, name="one")
    assert "rt.lstm_step(" in source
    module, source = _compiled(model, tmp_path, variant="exact", name="one")
    assert "rt.exact_lstm(" in source and "lstm_step" not in source
    feeds = _lstm_feeds(model, 1, 2)
    for have, want in zip(module.run(*feeds.values()), _ort(model, feeds)):
        np.testing.assert_allclose(have, want, rtol=1e-5, atol=1e-6)


def test_lstm_step_kernel_at_two_threads_and_with_read_only_weights():
    """The kernel itself at 1 and 2 threads, on writable and read-only (cached) weights: the
    same values as rt.lstm's time loop to float32 rounding."""
    rng = np.random.default_rng(5)
    hidden, features, batch = 16, 8, 2
    W = rng.normal(size=(1, 4 * hidden, features)).astype(np.float32) / 4
    R = rng.normal(size=(1, 4 * hidden, hidden)).astype(np.float32) / 4
    B = rng.normal(size=(1, 8 * hidden)).astype(np.float32)
    X = rng.normal(size=(1, batch, features)).astype(np.float32)
    h, c = (rng.normal(size=(1, batch, hidden)).astype(np.float32) for _ in range(2))
    expected = rt.lstm(X, W, R, B, None, h, c)
    for threads in (1, 2):
        with rt.threads(threads):
            for weights in [(W, R, B)] + 2 * [tuple(_read_only(a) for a in (W, R, B))]:
                got = rt.lstm_step(X, *weights, None, h, c)
                for have, want in zip(got, expected):
                    np.testing.assert_allclose(have, want, rtol=1e-5, atol=1e-6)


# --- Pad: reflect of one axis planned at compile time -----------------------------------------


def _pad_model(shape, pads, mode="reflect", axes=None, opset=18):
    inputs = ["x", "pads"] + (["", "axes"] if axes is not None else [])
    initializers = [numpy_helper.from_array(np.array(pads, dtype=np.int64), "pads")]
    if axes is not None:
        initializers.append(numpy_helper.from_array(np.array(axes, dtype=np.int64), "axes"))
    graph = helper.make_graph(
        [helper.make_node("Pad", inputs, ["y"], mode=mode)],
        "pad",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializers,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


@pytest.mark.parametrize(
    "shape,pads,axes,planned",
    [
        ((1, 576), (0, 0, 0, 64), None, True),  # silero-vad's STFT framing pad
        ((2, 3, 7), (0, 0, 3, 0, 0, 6), None, True),  # both sides, the longest pads allowed
        ((5, 2), (4, 0, 0, 0), None, True),  # the first axis, the lower side only
        ((2, 5), (1, 2), [-1], True),  # through axes, negative
        (("batch", 9), (0, 2, 0, 3), None, True),  # a symbolic dim not padded
        ((3, 4), (1, 1, 1, 1), None, False),  # two axes: rt.pad (corners)
        ((2, 4), (0, 4, 0, 0), None, False),  # a pad as long as the axis: rt.pad
        (("batch", "n"), (0, 2, 0, 3), None, "rt.pad_reflect_axis("),  # the size unknown
    ],
)
def test_reflect_pad_of_one_axis_is_one_concatenate_matching_onnxruntime(
    tmp_path, shape, pads, axes, planned
):
    """The fast variant writes a reflect Pad of one known axis as np.concatenate of mirrored
    views; its values are onnxruntime's (and the exact variant keeps rt.pad, the same values)."""
    model = _pad_model(shape, pads, axes=axes)
    module, source = _compiled(model, tmp_path)
    if isinstance(planned, str):
        assert planned in source and "rt.pad(" not in source
    else:
        assert ("np.concatenate(" in source) == planned and ("rt.pad(" in source) != planned
    _, exact_source = _compiled(model, tmp_path, variant="exact")
    assert "rt.pad(" in exact_source
    dims = [d if isinstance(d, int) else 6 + i for i, d in enumerate(shape)]
    x = np.random.default_rng(0).normal(size=dims).astype(np.float32)
    if not planned and max(pads) >= min(dims):
        return  # onnxruntime refuses pads as long as the axis (rt.pad's own tests cover it)
    (want,) = _ort(model, {"x": x})
    got = module.run(x)[0]
    np.testing.assert_array_equal(got, want)
    assert got.flags.c_contiguous and not np.shares_memory(got, x)


# --- inputs of unknown rank: Unsqueeze as a subscript, reduction axes as literals ---------------


def _unranked_model(op_type, opset=13, axes=None, **attrs):
    """One node on an input whose rank the model does not give (as a value out of an If)."""
    inputs, initializers = ["x"], []
    if axes is not None:
        inputs.append("axes")
        initializers.append(numpy_helper.from_array(np.array(axes, dtype=np.int64), "axes"))
    graph = helper.make_graph(
        [helper.make_node(op_type, inputs, ["y"], **attrs)],
        "unranked",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializers,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


@pytest.mark.parametrize("axes", [[0], [1], [0, 2], [3, 1], [-1], [-2], [-1, -3], [-4, -2]])
@pytest.mark.parametrize("shape", [(4,), (2, 3), (2, 1, 3)])
def test_unsqueeze_of_unknown_rank_is_a_subscript_matching_onnxruntime(tmp_path, axes, shape):
    """Axes of one sign on an input of unknown rank: a subscript in the fast variant (one module,
    inputs of several ranks; negative axes after an Ellipsis), onnxruntime's values and shapes;
    axes of both signs keep np.expand_dims, and so does the exact variant."""
    model = _unranked_model("Unsqueeze", axes=axes)
    module, source = _compiled(model, tmp_path)
    assert "np.expand_dims(" not in source and "y = x[" in source
    _, exact_source = _compiled(model, tmp_path, variant="exact")
    assert "np.expand_dims(" in exact_source
    if max(axes) >= len(shape) + len(axes) or min(axes) < -(len(shape) + len(axes)):
        return  # beyond the output's rank: invalid for this input
    x = np.random.default_rng(0).normal(size=shape).astype(np.float32)
    (want,) = _ort(model, {"x": x})
    got = module.run(x)[0]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    _, mixed = _compiled(_unranked_model("Unsqueeze", axes=[-1, 0]), tmp_path, name="mixed")
    assert "np.expand_dims(" in mixed


@pytest.mark.parametrize("op_type", ["ReduceMean", "ReduceSum", "ReduceMax"])
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("axes", [[1], [2, 0]])
def test_reductions_of_unknown_rank_take_literal_axes_matching_onnxruntime(
    tmp_path, op_type, keepdims, axes
):
    """Non-negative axes on an input of unknown rank: a literal tuple in the fast variant (no
    rt.normalize_axes at run time; ReduceMean's kernel then sums and divides directly); the exact
    variant keeps its run-time normalization. Values as onnxruntime's, float32 and float64."""
    opset = 18 if op_type != "ReduceSum" else 13
    model = _unranked_model(op_type, opset=opset, axes=axes, keepdims=keepdims)
    module, source = _compiled(model, tmp_path)
    assert "normalize_axes" not in source
    _, exact_source = _compiled(model, tmp_path, variant="exact")
    assert "normalize_axes" in exact_source
    for shape in [(2, 3, 4), (3, 5, 2, 2)]:
        x = np.random.default_rng(1).normal(size=shape).astype(np.float32)
        (want,) = _ort(model, {"x": x})
        got = module.run(x)[0]
        assert got.shape == want.shape and got.dtype == want.dtype and type(got) is np.ndarray
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_reduce_mean_kernel_with_tuple_axes_is_the_general_paths_mean():
    """rt.reduce_mean's short path (literal axes, float32/float64, non-empty) gives the values,
    shapes and types of its general path; an empty input still means 0 (onnxruntime's)."""
    from runtime_support import reduction

    rng = np.random.default_rng(2)
    for dtype in (np.float32, np.float64):
        x = rng.normal(size=(3, 4, 5)).astype(dtype)
        for axes in [(1,), (0, 2), (0, 1, 2), (-1,)]:
            for keepdims in (0, 1):
                short = rt.reduce_mean(x, axes, keepdims=keepdims)
                general = reduction._reduce(reduction._mean, x, list(axes), keepdims, 0)
                assert type(short) is np.ndarray and short.dtype == general.dtype
                np.testing.assert_array_equal(short, general)
    empty = rt.reduce_mean(np.zeros((2, 0, 3), np.float32), (1,), keepdims=0)
    np.testing.assert_array_equal(empty, np.zeros((2, 3), np.float32))


@pytest.mark.parametrize("length", [9, 4, 3, 1])
def test_reflect_pad_of_an_axis_of_unknown_size_matches_onnxruntime(tmp_path, length):
    """rt.pad_reflect_axis (the padded axis's size symbolic): one module, inputs whose axis is
    longer than the pads (the concatenate) and not (rt.pad's call: onnxruntime refuses those, so
    np.pad's reflection is the reference there)."""
    model = _pad_model(("batch", "n"), (0, 2, 0, 3))
    module, source = _compiled(model, tmp_path)
    assert "rt.pad_reflect_axis(" in source
    x = np.random.default_rng(length).normal(size=(2, length)).astype(np.float32)
    got = module.run(x)[0]
    if length > 3:
        (want,) = _ort(model, {"x": x})
    else:
        want = np.pad(x, [(0, 0), (2, 3)], mode="reflect")
    np.testing.assert_array_equal(got, want)
