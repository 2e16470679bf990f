"""The operator registry: every registered operator is covered at every opset its schema exists
at, from 7 to 28, in every variant it claims, and lookups fail with messages naming what is missing.
"""

from __future__ import annotations

import onnx
import pytest

import onemodel_compile
from onemodel_compile import UnsupportedError
from onemodel_compile.load import INTERNAL_DOMAINS, MAX_OPSET, MIN_OPSET
from onemodel_compile.ops import fused, lookup, microsoft, registered
from onemodel_compile.variants import VARIANTS


def _schema_versions(op_type: str, domain: str) -> list[int]:
    versions = []
    for opset in range(MIN_OPSET, MAX_OPSET + 1):
        try:
            onnx.defs.get_schema(op_type, opset, domain)
        except onnx.defs.SchemaError:
            continue
        versions.append(opset)
    return versions


# The project's own domain (ops/fused.py) has no ONNX schema: its operators come from rewrites.
# onnxruntime's own operators (ops/microsoft.py: com.microsoft, and the default-domain ones onnx
# has no schema for at their opsets) are checked against onnxruntime's schemas in
# tests/test_microsoft.py.
OPS = sorted(
    {
        (e.domain, e.op_type)
        for e in registered()
        if e.domain not in (fused.DOMAIN, microsoft.DOMAIN)
        and e.emit.__module__ != microsoft.__name__
    }
)


@pytest.mark.parametrize("domain,op_type", OPS, ids=[f"{d}:{o}" if d else o for d, o in OPS])
def test_every_opset_of_the_schema_has_an_emitter(domain: str, op_type: str) -> None:
    versions = _schema_versions(op_type, domain)
    assert versions, f"{op_type} has no schema between opsets {MIN_OPSET} and {MAX_OPSET}"
    for opset in versions:
        lookup(op_type, domain, opset, "fast", "test")


@pytest.mark.parametrize("domain,op_type", OPS, ids=[f"{d}:{o}" if d else o for d, o in OPS])
def test_range_boundaries_are_schema_versions(domain: str, op_type: str) -> None:
    """An emitter's first opset is one where the operator's schema changed, so a range never
    splits one spec version in two."""
    for entry in registered():
        if (entry.domain, entry.op_type) != (domain, op_type) or entry.since <= MIN_OPSET:
            continue
        schema = onnx.defs.get_schema(op_type, entry.since, domain)
        assert schema.since_version == entry.since, (op_type, entry.since, schema.since_version)


def test_own_domain_operators_are_made_only_by_rewrites() -> None:
    """No model may use the project's own domain: its operators are registered for opset 1 only,
    and the loader's opset check refuses a model importing the domain."""
    own = [e for e in registered() if e.domain == fused.DOMAIN]
    assert own and all(e.since == 1 and e.until is None for e in own)
    assert fused.DOMAIN in INTERNAL_DOMAINS


def test_a_model_importing_the_own_domain_is_refused() -> None:
    from onnx import helper

    node = helper.make_node("ScaleShift", ["x", "x", "x"], ["y"], domain=fused.DOMAIN)
    value = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])
    out = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])
    graph = helper.make_graph([node], "g", [value], [out])
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(fused.DOMAIN, 1)]
    )
    with pytest.raises(UnsupportedError, match="compiler's own"):
        onemodel_compile.generate(model)


def test_every_registered_variant_override_names_a_variant() -> None:
    assert {e.variant for e in registered()} <= {None, *VARIANTS}


def test_unknown_operator_names_itself() -> None:
    with pytest.raises(UnsupportedError, match="NoSuchOp"):
        lookup("NoSuchOp", "", 13, "fast", "NoSuchOp node 'n'")


def test_uncovered_opset_names_op_version_and_variant() -> None:
    with pytest.raises(UnsupportedError, match=r"Gelu.*opset 19.*fast"):
        lookup("Gelu", "", 19, "fast", "Gelu node 'g'")


def test_resolve_leaves_the_ir_it_is_given_as_it_was():
    """resolve refines types in a copy (its ResolvedGraph's graph), bodies included: the ir.Model
    it reads keeps the types load and ir gave it."""
    import copy

    from onemodel_compile import ir
    from onemodel_compile.load import load
    from onemodel_compile.resolve import resolve
    from onemodel_compile.variants import FAST
    from tests.harness import backend_cases

    def types_of(graph):
        found = [dict(graph.types)]
        for node in graph.nodes:
            for value in node.attrs.values():
                if isinstance(value, ir.Graph):
                    found += types_of(value)
        return found

    for name in ("test_loop11", "test_if_seq", "test_reshape_reordered_all_dims"):
        model = ir.from_onnx(load(backend_cases.case(name).model))
        before = copy.deepcopy(types_of(model.graph))
        resolved = resolve(model, FAST)
        assert types_of(model.graph) == before, name
        assert resolved.graph is not model.graph
