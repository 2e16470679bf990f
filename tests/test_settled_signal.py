"""Settled semantics of the signal family (docs/contract.md, "Settled semantics"): MelWeightMatrix.

The rule: num_mel_bins + 2 edge points evenly spaced in mel (mel(f) = 2595 log10(1 + f / 700)),
starting at the lower edge, back to hertz, to spectrogram bins floor((dft_length + 1) f /
sample_rate) in double precision; filter i rises linearly from edge i to a peak of 1 at edge i + 1
and falls to edge i + 2. The spacing is (upper - lower) / (num_mel_bins + 2) in mel, so the last
point lies one step below the upper edge: that is what the backend data (and onnxruntime) give, and
a spacing ending exactly at the upper edge, (upper - lower) / (num_mel_bins + 1), does not match
them (checked below). Only float and double outputs are in scope.

The expected matrices are computed here with plain Python loops and the math module, independently
of the compiler's kernel.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from onnx import TensorProto, helper

from onemodel_compile import UnsupportedError, compile_model, load_compiled
from tests.harness import backend_cases


def _mel_weights_by_loops(num_mel_bins, dft_length, sample_rate, lower, upper, divisions=None):
    """The rule as plain loops; `divisions` is the number of mel steps between the edges
    (num_mel_bins + 2 by the rule)."""
    divisions = num_mel_bins + 2 if divisions is None else divisions
    low = 2595.0 * math.log10(1.0 + lower / 700.0)
    high = 2595.0 * math.log10(1.0 + upper / 700.0)
    step = (high - low) / divisions
    edges = []
    for k in range(num_mel_bins + 2):
        hertz = 700.0 * (10.0 ** ((low + k * step) / 2595.0) - 1.0)
        edges.append(math.floor((dft_length + 1) * hertz / sample_rate))
    rows = dft_length // 2 + 1
    matrix = [[0.0] * num_mel_bins for _ in range(rows)]
    for i in range(num_mel_bins):
        left, peak, right = edges[i], edges[i + 1], edges[i + 2]
        for j in range(rows):
            if j == peak:
                matrix[j][i] = 1.0
            elif left <= j < peak:
                matrix[j][i] = (j - left) / (peak - left)
            elif peak < j < right:
                matrix[j][i] = (right - j) / (right - peak)
    return np.array(matrix, dtype=np.float64)


def _mel_model(output_datatype: int):
    """MelWeightMatrix with its five inputs as graph inputs (int64 sizes, float edges)."""
    names = ["num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz"]
    types = [TensorProto.INT64] * 3 + [TensorProto.FLOAT] * 2
    node = helper.make_node("MelWeightMatrix", names, ["weights"], output_datatype=output_datatype)
    graph = helper.make_graph(
        [node],
        "mel",
        [helper.make_tensor_value_info(n, t, []) for n, t in zip(names, types)],
        [helper.make_tensor_value_info("weights", output_datatype, ["bins", "mel_bins"])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    return model


# (num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz)
PARAMETERS = [
    (20, 512, 16000, 125.0, 7600.0),
    (13, 400, 22050, 0.0, 11025.0),
    (5, 64, 8000, 300.0, 3000.0),
    (40, 1024, 44100, 20.0, 20000.0),
]


def test_melweightmatrix_edges_evenly_spaced_in_mel_floor_bins_peak_one() -> None:
    # The backend case: the rule reproduces its expected output, a spacing ending at the upper
    # edge does not, and the compiled module gives the rule's matrix.
    case = backend_cases.case("test_melweightmatrix")
    inputs, (expected,) = case.data_sets[0]
    sizes = [int(v) for v in inputs[:3]]
    edges = [float(v) for v in inputs[3:]]
    by_rule = _mel_weights_by_loops(*sizes, *edges)
    np.testing.assert_array_equal(by_rule.astype(np.float32), expected)
    ending_at_upper = _mel_weights_by_loops(*sizes, *edges, divisions=sizes[0] + 1)
    assert not np.array_equal(ending_at_upper.astype(np.float32), expected)
    module = load_compiled(case.model)
    np.testing.assert_array_equal(module.run(*inputs)[0], expected)

    exact = load_compiled(case.model, variant="exact")
    np.testing.assert_array_equal(exact.run(*inputs)[0], expected)

    # Other sizes, rates and edges, in double precision, in both variants.
    for variant in ("fast", "exact"):
        _check_parameters(load_compiled(_mel_model(TensorProto.DOUBLE), variant=variant))


def _check_parameters(module) -> None:
    for num_mel_bins, dft_length, sample_rate, lower, upper in PARAMETERS:
        weights = module.run(
            np.array(num_mel_bins),
            np.array(dft_length),
            np.array(sample_rate),
            np.array(lower, np.float32),
            np.array(upper, np.float32),
        ).weights
        assert weights.dtype == np.float64
        by_rule = _mel_weights_by_loops(num_mel_bins, dft_length, sample_rate, lower, upper)
        np.testing.assert_array_equal(weights, by_rule)
        # every filter whose peak falls inside the matrix peaks at exactly 1
        assert set(weights.max(axis=0)) <= {0.0, 1.0}


def test_melweightmatrix_output_types_other_than_float_and_double_are_refused(tmp_path) -> None:
    with pytest.raises(UnsupportedError, match="MelWeightMatrix.*float16"):
        compile_model(_mel_model(TensorProto.FLOAT16), tmp_path / "mel.py")


def test_signal_operators_compile_in_the_exact_variant(tmp_path) -> None:
    """DFT too, since its exact twin was admitted (docs/exact-variant.md); it calls rt.exact_dft."""
    path = tmp_path / "model.py"
    compile_model(backend_cases.case("test_dft").model, path, variant="exact")
    assert "rt.exact_dft(" in path.read_text()
