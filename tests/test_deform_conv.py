"""DeformConv beyond what onnxruntime runs: one and three spatial axes (onnxruntime 1.31.1 takes
4-D inputs only; the ONNX operator is N-D), checked against a plain-Python reference written here
(each output element's taps sampled one at a time by multilinear interpolation, zeros outside the
input), never against the code under test. The 2-D cases are in the oracle table
(tests/harness/oracle_cases/conv_pool.py, against onnxruntime) and the backend data.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from onemodel_compile import load_compiled
from runtime_support import NodeError
from tests.test_settled_conv_pool import _model


def _sample(image, point):
    """Multilinear interpolation of `image` (spatial dims only) at `point`, zeros outside."""
    floors = [math.floor(p) for p in point]
    total = 0.0
    for corner in itertools.product((0, 1), repeat=len(point)):
        index = [f + b for f, b in zip(floors, corner)]
        if all(0 <= i < n for i, n in zip(index, image.shape)):
            weight = 1.0
            for p, f, b in zip(point, floors, corner):
                weight *= (p - f) if b else 1 - (p - f)
            total += weight * float(image[tuple(index)])
    return total


def _reference(X, W, offset, B, mask, pads, strides, dilations, group, offset_group):
    batch, channels = X.shape[:2]
    maps, kernel = W.shape[0], W.shape[2:]
    rank = len(kernel)
    out = offset.shape[2:]
    offsets = offset.reshape((batch, offset_group) + kernel + (rank,) + out)
    masks = None if mask is None else mask.reshape((batch, offset_group) + kernel + out)
    Y = np.zeros((batch, maps) + out)
    per_group, maps_per_group = channels // group, maps // group
    for n, m, o in itertools.product(range(batch), range(maps), np.ndindex(*out)):
        g = m // maps_per_group
        total = 0.0 if B is None else float(B[m])
        for c in range(g * per_group, (g + 1) * per_group):
            og = c // (channels // offset_group)
            for k in np.ndindex(*kernel):
                shift = offsets[(n, og) + k + (slice(None),) + o]
                point = [
                    o[a] * strides[a] - pads[a] + k[a] * dilations[a] + float(shift[a])
                    for a in range(rank)
                ]
                value = _sample(X[n, c], point) * float(W[(m, c - g * per_group) + k])
                if masks is not None:
                    value *= float(masks[(n, og) + k + o])
                total += value
        Y[(n, m) + o] = total
    return Y


CASES = {
    "1d_strides_pads_bias_mask": dict(
        x=(2, 4, 9), w=(4, 2, 3), pads=[1, 2], strides=[2], dilations=[1], group=2, og=2
    ),
    "3d_dilations_offset_groups": dict(
        x=(1, 2, 4, 5, 4), w=(2, 2, 2, 2, 2), pads=[0, 1, 0, 1, 0, 1], strides=[1, 2, 1],
        dilations=[2, 1, 1], group=1, og=2,
    ),
}  # fmt: skip


@pytest.mark.parametrize("variant", ["fast", "exact"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_deform_conv_other_ranks_match_reference(name, variant, tmp_path) -> None:
    spec = CASES[name]
    rng = np.random.default_rng(len(name))
    X = rng.standard_normal(spec["x"]).astype(np.float32)
    W = rng.standard_normal(spec["w"]).astype(np.float32)
    rank, kernel = len(spec["w"]) - 2, spec["w"][2:]
    padded = [n + spec["pads"][i] + spec["pads"][i + rank] for i, n in enumerate(spec["x"][2:])]
    out = tuple(
        (p - (k - 1) * d - 1) // s + 1
        for p, k, s, d in zip(padded, kernel, spec["strides"], spec["dilations"])
    )
    taps = spec["og"] * math.prod(kernel)
    offset = (rng.standard_normal((X.shape[0], taps * rank) + out) * 1.5).astype(np.float32)
    mask = rng.uniform(0, 1, (X.shape[0], taps) + out).astype(np.float32)
    B = rng.standard_normal(W.shape[0]).astype(np.float32)
    attrs = {
        "pads": spec["pads"],
        "strides": spec["strides"],
        "dilations": spec["dilations"],
        "group": spec["group"],
        "offset_group": spec["og"],
    }
    model = _model(
        "DeformConv", [("X", X), ("W", W), ("offset", offset), ("B", B), ("mask", mask)], attrs
    )
    module = load_compiled(model, variant=variant)
    (got,) = module.run(X, W, offset, B, mask)
    expected = _reference(
        X, W, offset, B, mask, spec["pads"], spec["strides"], spec["dilations"], spec["group"],
        spec["og"],
    )  # fmt: skip
    assert got.dtype == np.float32 and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_deform_conv_offset_of_wrong_shape_names_the_node() -> None:
    X = np.zeros((1, 1, 4, 4), np.float32)
    W = np.zeros((1, 1, 2, 2), np.float32)
    offset = np.zeros((1, 8, 3, 3), np.float32)
    model = _model("DeformConv", [("X", X), ("W", W), ("offset", offset)])
    model.graph.node[0].name = "deform"
    for dim in model.graph.input[2].type.tensor_type.shape.dim[2:]:
        dim.dim_param = "positions"  # known at run time only: the kernel checks it
    module = load_compiled(model)
    with pytest.raises(NodeError, match="DeformConv 'deform'.*offset"):
        module.run(X, W, np.zeros((1, 8, 2, 2), np.float32))
