"""Settled semantics of the normalization operators, one test per rule, each failing when the rule
is broken. docs/contract.md settles that LpNormalization and MeanVarianceNormalization give zeros, not
NaN, where the norm is zero (an all-zero slice; a constant slice, whose deviation is zero).

Expected values come from plain-Python loops written here (in float64), never from the code under
test. Each input mixes zero-norm slices with ordinary ones, so a kernel that returned zeros
everywhere would fail too.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from onnx import helper

from onemodel_compile import load_compiled

IR_VERSION = 10


def _model(op, x, attrs, opset):
    node = helper.make_node(op, ["X"], ["Y"], **attrs)
    elem = helper.np_dtype_to_tensor_dtype(x.dtype)
    graph = helper.make_graph(
        [node],
        op,
        [helper.make_tensor_value_info("X", elem, x.shape)],
        [helper.make_tensor_value_info("Y", elem, x.shape)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = IR_VERSION
    return model


def _run(op, x, attrs, opset):
    (y,) = load_compiled(_model(op, x, attrs, opset)).run(x)
    assert y.dtype == x.dtype and y.shape == x.shape
    return y


def _rows(x: np.ndarray):
    """The slices along the last axis, as lists of Python floats with their positions."""
    for index in np.ndindex(x.shape[:-1]):
        yield index, [float(v) for v in x[index]]


# Rows along the last axis: all zeros (zero norm), constants whose mean does not round back to
# themselves in float32 and float64 (seven times 0.1, divided by seven, is not 0.1 in binary), and
# ordinary values.
_SLICES = np.array(
    [
        [[0.0] * 7, [0.1] * 7, [1.5, -2.0, 0.25, 3.0, -1.0, 0.5, 2.0]],
        [[-0.7] * 7, [0.0] * 7, [4.0, 1.0, -0.5, 2.0, 3.0, -2.0, 0.125]],
    ]
)


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_lpnormalization_zero_norm_gives_zeros(p, dtype):
    x = _SLICES.astype(dtype)
    y = _run("LpNormalization", x, {"p": p, "axis": -1}, 22)
    assert not np.isnan(y).any()
    for index, row in _rows(x):
        norm = sum(abs(v) for v in row) if p == 1 else math.sqrt(sum(v * v for v in row))
        expected = [0.0] * len(row) if norm == 0 else [v / norm for v in row]
        tolerance = 1e-3 if dtype == "float16" else 1e-6
        np.testing.assert_allclose(y[index].astype(np.float64), expected, atol=tolerance)
    assert (y[0, 0] == 0).all() and (y[1, 1] == 0).all()


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_meanvariancenormalization_zero_norm_gives_zeros(dtype):
    x = _SLICES.astype(dtype)
    y = _run("MeanVarianceNormalization", x, {"axes": [2]}, 13)
    assert not np.isnan(y).any()
    for index, row in _rows(x):
        mean = sum(row) / len(row)
        std = math.sqrt(sum((v - mean) ** 2 for v in row) / len(row))
        if len(set(row)) == 1:  # a constant slice: zero deviation
            expected = [0.0] * len(row)
        else:
            expected = [(v - mean) / (std + 1e-9) for v in row]
        tolerance = 1e-2 if dtype == "float16" else 1e-5
        np.testing.assert_allclose(y[index].astype(np.float64), expected, atol=tolerance)
    for index, row in _rows(x):
        if len(set(row)) == 1:
            assert (y[index] == 0).all(), f"constant slice {row} gave {y[index]}"


def test_meanvariancenormalization_zero_norm_gives_zeros_over_several_axes():
    """A slice over axes (0, 2) that is constant: zeros; the other channel normalized."""
    x = np.empty((7, 2, 1), dtype=np.float32)
    x[:, 0, :] = 0.1  # channel 0 constant across batch and positions
    x[:, 1, 0] = [1.0, 2.0, 3.0, 4.0, 5.0, 7.0, -1.5]
    y = _run("MeanVarianceNormalization", x, {"axes": [0, 2]}, 13)
    assert (y[:, 0, :] == 0).all()
    values = [float(v) for v in x[:, 1, :].reshape(-1)]
    mean = sum(values) / len(values)
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    expected = [(v - mean) / (std + 1e-9) for v in values]
    np.testing.assert_allclose(y[:, 1, :].reshape(-1), expected, rtol=1e-5)
