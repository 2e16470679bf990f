"""docs/contract.md's settled semantics for tensor operators: Unique and scalar Squeeze/Unsqueeze axes.
Expected values are computed here in plain Python, never by the code under test."""

from __future__ import annotations

import math

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from onemodel_compile import load_compiled


def _unique_model(x_shape, outputs, axis=None, elem=TensorProto.FLOAT):
    attrs = {} if axis is None else {"axis": axis}
    node = helper.make_node("Unique", ["x"], outputs, sorted=1, **attrs)
    out_types = [elem] + [TensorProto.INT64] * (len(outputs) - 1)
    y_shape = ["u"] + list(x_shape[1:]) if axis == 0 else ["u"]
    out_shapes = [y_shape, ["u"], [x_shape[0] if axis == 0 else "n"], ["u"]]
    graph = helper.make_graph(
        [node],
        "unique",
        [helper.make_tensor_value_info("x", elem, x_shape)],
        [
            helper.make_tensor_value_info(n, t, s)
            for n, t, s in zip(outputs, out_types, out_shapes)
            if n
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])


def test_unique_sorted_order_compares_slices_element_by_element() -> None:
    x = np.array([[2, 1, 0], [1, 9, 9], [2, 0, 5], [1, 9, 9], [1, 2, 3]], np.float32)
    module = load_compiled(_unique_model([5, 3], ["y", "indices", "inverse", "counts"], axis=0))
    y, indices, inverse, counts = module.run(x)
    rows = [tuple(r) for r in x.tolist()]
    distinct = sorted(set(rows))  # Python compares tuples element by element
    assert [tuple(r) for r in y.tolist()] == distinct
    assert indices.tolist() == [rows.index(r) for r in distinct]
    assert inverse.tolist() == [distinct.index(r) for r in rows]
    assert counts.tolist() == [rows.count(r) for r in distinct]


def test_unique_nan_never_equals_nan() -> None:
    x = np.array([3.0, np.nan, 1.0, np.nan, 3.0], np.float32)
    module = load_compiled(_unique_model([5], ["y", "", "", "counts"]))
    y, counts = module.run(x)
    # Each NaN is its own value: two of them, after the numbers, each counted once.
    assert y[:2].tolist() == [1.0, 3.0]
    assert len(y) == 4 and all(math.isnan(v) for v in y[2:].tolist())
    assert counts.tolist() == [1, 2, 1, 1]


@pytest.mark.parametrize(
    "outputs", [["y"], ["y", "indices"], ["y", "", "inverse"], ["y", "", "", "c"]]
)
def test_unique_index_outputs_are_optional(outputs) -> None:
    x = np.array([4, 4, 2, 7, 2], np.int64)
    module = load_compiled(_unique_model([5], outputs, elem=TensorProto.INT64))
    results = module.run(x)
    assert results[0].tolist() == [2, 4, 7]
    assert len(results) == len([n for n in outputs if n])


def _axes_model(op, rank_in, axes_value, as_input):
    axes = numpy_helper.from_array(np.array(axes_value, dtype=np.int64), "axes")
    graph = helper.make_graph(
        [helper.make_node(op, ["x", "axes"], ["y"])],
        op.lower(),
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 1, 3][:rank_in])]
        + ([helper.make_tensor_value_info("axes", TensorProto.INT64, [])] if as_input else []),
        [
            helper.make_tensor_value_info(
                "y", TensorProto.FLOAT, ["d0", "d1", "d2", "d3"][: 4 if op == "Unsqueeze" else 2]
            )
        ],
        [] if as_input else [axes],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("as_input", [False, True], ids=["constant", "run-time"])
def test_squeeze_unsqueeze_scalar_axes_is_one_axis(as_input: bool) -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 1, 3)
    axis = np.array(-1, dtype=np.int64)
    unsqueeze = load_compiled(_axes_model("Unsqueeze", 3, -1, as_input))
    squeeze = load_compiled(_axes_model("Squeeze", 3, 1, as_input))
    args_u = (x, axis) if as_input else (x,)
    args_s = (x, np.array(1, dtype=np.int64)) if as_input else (x,)
    assert unsqueeze.run(*args_u).y.shape == (2, 1, 3, 1)
    assert squeeze.run(*args_s).y.shape == (2, 3)
