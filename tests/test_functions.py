"""Functions: model-local FunctionProtos are inlined, and an operator the ONNX standard defines as
a function compiles through its body when no emitter handles it."""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper

from onemodel_compile import generate, load_compiled
from onemodel_compile.ops import registry
from tests.harness import conformance


def local_function_model():
    """y = Scaled(AddRelu(x, x)), Scaled using an attribute reference with a default, nested in a
    second function that calls the first."""
    add_relu = helper.make_function(
        "local",
        "AddRelu",
        ["a", "b"],
        ["c"],
        [helper.make_node("Add", ["a", "b"], ["s"]), helper.make_node("Relu", ["s"], ["c"])],
        [helper.make_opsetid("", 17)],
    )
    scale = helper.make_node("LeakyRelu", ["a"], ["c"])
    scale.attribute.append(helper.make_attribute_ref("alpha", helper.AttributeProto.FLOAT))
    scaled = helper.make_function(
        "local", "Scaled", ["a"], ["c"], [scale], [helper.make_opsetid("", 17)], ["alpha"]
    )
    both = helper.make_function(
        "local",
        "Both",
        ["a"],
        ["c"],
        [
            helper.make_node("AddRelu", ["a", "a"], ["t"], domain="local"),
            helper.make_node("Neg", ["t"], ["u"]),
            helper.make_node("Scaled", ["u"], ["c"], domain="local", alpha=0.25),
        ],
        [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)],
    )
    graph = helper.make_graph(
        [helper.make_node("Both", ["x"], ["y"], domain="local", name="call")],
        "functions",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
    )
    return helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)],
        functions=[add_relu, scaled, both],
        ir_version=8,
    )


def test_local_functions_are_inlined_and_match_onnxruntime() -> None:
    model = local_function_model()
    x = np.array([[-1.0, 0.5, 2.0], [3.0, -0.25, 0.0]], np.float32)
    expected = onnxruntime.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]
    np.testing.assert_allclose(load_compiled(model).run(x).y, expected, rtol=0, atol=0)
    source = generate(model).source
    assert "LeakyRelu" in source and "local" in source  # provenance of the inlined nodes


@pytest.mark.parametrize(
    "op,case",
    [
        ("Celu", "test_celu"),
        ("LayerNormalization", "test_layer_normalization_4d_axis1"),
        ("Gelu", "test_gelu_tanh_1"),
        ("HardSwish", "test_hardswish"),
    ],
)
def test_standard_function_body_is_used_without_an_emitter(monkeypatch, op, case) -> None:
    monkeypatch.delitem(registry._REGISTRY, ("", op))
    outcome = conformance.run_case(case, "fast")
    assert outcome.status == "pass", outcome.detail


def test_operator_without_emitter_or_body_is_still_unsupported(monkeypatch) -> None:
    monkeypatch.delitem(registry._REGISTRY, ("", "Relu"))  # Relu has no function body
    outcome = conformance.run_case("test_relu", "fast")
    assert outcome.status == "unsupported" and "Relu" in outcome.detail
