"""A model with symbolic batch and sequence dims compiles once and runs at any sizes that satisfy
them: shape arithmetic (Shape -> Gather -> Concat -> Reshape) happens at run time, static dims are
still folded, and inputs that break a symbolic dim's consistency get a clear error."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

from onemodel_compile import load_compiled
from runtime_support import InvalidInput

HIDDEN, HEADS = 16, 2


def self_attention_model() -> onnx.ModelProto:
    """x [batch, seq, 16] -> one self-attention head block with LayerNorm; mask [batch, seq]."""
    rng = np.random.default_rng(7)

    def weight(name, *shape):
        return numpy_helper.from_array(rng.normal(0, 0.3, shape).astype(np.float32), name)

    def const(name, values):
        return numpy_helper.from_array(np.array(values, dtype=np.int64), name)

    nodes = [
        helper.make_node("MatMul", ["x", "w_q"], ["q"]),
        helper.make_node("MatMul", ["x", "w_k"], ["k"]),
        helper.make_node("MatMul", ["x", "w_v"], ["v"]),
        # heads shape [batch, seq, heads, hidden/heads] from the run-time shape of x
        helper.make_node("Shape", ["x"], ["x_shape"]),
        helper.make_node("Gather", ["x_shape", "zero"], ["batch"], axis=0),
        helper.make_node("Gather", ["x_shape", "one"], ["seq"], axis=0),
        helper.make_node("Concat", ["batch", "seq", "head_dims"], ["split_shape"], axis=0),
        helper.make_node("Reshape", ["q", "split_shape"], ["q4"]),
        helper.make_node("Reshape", ["k", "split_shape"], ["k4"]),
        helper.make_node("Reshape", ["v", "split_shape"], ["v4"]),
        helper.make_node("Transpose", ["q4"], ["qh"], perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["k4"], ["kt"], perm=[0, 2, 3, 1]),
        helper.make_node("Transpose", ["v4"], ["vh"], perm=[0, 2, 1, 3]),
        helper.make_node("MatMul", ["qh", "kt"], ["scores"]),
        helper.make_node("Mul", ["scores", "scale"], ["scaled"]),
        # additive mask: (mask - 1) * 10000, broadcast over heads and queries
        helper.make_node("Sub", ["mask", "one_f"], ["mask_shift"]),
        helper.make_node("Mul", ["mask_shift", "big"], ["mask_add"]),
        helper.make_node("Unsqueeze", ["mask_add", "axes_12"], ["mask4"]),
        helper.make_node("Add", ["scaled", "mask4"], ["masked"]),
        helper.make_node("Softmax", ["masked"], ["probs"], axis=-1),
        helper.make_node("MatMul", ["probs", "vh"], ["context"]),
        helper.make_node("Transpose", ["context"], ["context_t"], perm=[0, 2, 1, 3]),
        helper.make_node("Concat", ["batch", "seq", "hidden"], ["merge_shape"], axis=0),
        helper.make_node("Reshape", ["context_t", "merge_shape"], ["merged"]),
        helper.make_node("Add", ["merged", "x"], ["residual"]),
        helper.make_node("LayerNormalization", ["residual", "gamma", "beta"], ["y"], axis=-1),
        helper.make_node("ReduceMean", ["y"], ["pooled"], axes=[1], keepdims=0),
    ]
    initializers = [
        weight("w_q", HIDDEN, HIDDEN),
        weight("w_k", HIDDEN, HIDDEN),
        weight("w_v", HIDDEN, HIDDEN),
        weight("gamma", HIDDEN),
        weight("beta", HIDDEN),
        const("zero", [0]),
        const("one", [1]),
        const("head_dims", [HEADS, HIDDEN // HEADS]),
        const("hidden", [HIDDEN]),
        const("axes_12", [1, 2]),
        numpy_helper.from_array(np.array(1 / np.sqrt(HIDDEN // HEADS), np.float32), "scale"),
        numpy_helper.from_array(np.array(1.0, np.float32), "one_f"),
        numpy_helper.from_array(np.array(10000.0, np.float32), "big"),
    ]
    graph = helper.make_graph(
        nodes,
        "dynamic_attention",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", HIDDEN]),
            helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["batch", "seq"]),
        ],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", HIDDEN]),
            helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["batch", HIDDEN]),
        ],
        initializers,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.fixture(scope="module")
def compiled():
    model = self_attention_model()
    session = onnxruntime.InferenceSession(model.SerializeToString())
    return load_compiled(model), session


def test_symbolic_dims_are_kept_in_the_signature(compiled) -> None:
    module, _ = compiled
    assert module.INPUTS == (
        ("x", "float32", ("batch", "seq", HIDDEN)),
        ("mask", "float32", ("batch", "seq")),
    )


@pytest.mark.parametrize("batch,seq", [(1, 1), (1, 7), (3, 5), (2, 33), (4, 0)])
def test_runs_at_every_size_and_matches_onnxruntime(compiled, batch: int, seq: int) -> None:
    module, session = compiled
    rng = np.random.default_rng(batch * 100 + seq)
    x = rng.normal(size=(batch, seq, HIDDEN)).astype(np.float32)
    mask = (rng.random((batch, seq)) > 0.2).astype(np.float32)
    expected = session.run(None, {"x": x, "mask": mask})
    got = module.run(x, mask)
    for name, want, have in zip(("y", "pooled"), expected, got):
        assert have.shape == want.shape, name
        np.testing.assert_allclose(have, want, rtol=1e-4, atol=1e-5, err_msg=name)


def test_shape_arithmetic_is_python_ints(compiled) -> None:
    """The head split's target shape is a tuple of Python ints: the constant part literal, batch
    and seq read once off the input; the Shape/Gather/Concat nodes that computed it leave `run`
    (their provenance comments stay)."""
    module, _ = compiled
    source = open(module.__file__).read()
    assert "batch = x.shape[0]" in source and "seq = x.shape[1]" in source
    assert "q.reshape((batch, seq, 2, 8))" in source
    assert "merged = context_t.reshape((batch, seq, 16))" in source
    assert "Shape (opset 17), as shape arithmetic" in source
    assert ".shape, dtype=np.int64)" not in source  # no Shape node computed at run time


def test_projection_of_symbolic_rows_is_one_2d_product(compiled) -> None:
    """(batch, seq, 16) @ (16, 16) runs as one BLAS product of batch * seq rows (numpy would run
    one per batch entry), reshaped back to the dims the module knows; (4, 0) above covers no rows.
    The weight is a constant, but 16 x 16 is too small for rt.matmul_weight's kernel at any row
    count (runtime_support.linalg.MIN_MULTIPLY_ADDS): np.matmul, without the kernel's checks.
    """
    module, _ = compiled
    source = open(module.__file__).read()
    assert "k = np.matmul(x.reshape(-1, 16), w_k).reshape((batch, seq, 16))" in source


def test_inconsistent_symbolic_dims_are_refused_naming_the_input(compiled) -> None:
    module, _ = compiled
    x = np.zeros((2, 5, HIDDEN), np.float32)
    with pytest.raises(InvalidInput, match=r"mask.*'seq'.*x|mask.*seq"):
        module.run(x, np.zeros((2, 4), np.float32))
    with pytest.raises(InvalidInput, match="batch"):
        module.run(x, np.zeros((3, 5), np.float32))
