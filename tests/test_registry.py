"""The operator registry: every registered operator is covered at every opset its schema exists
at, from 7 to 28, in every variant it claims, and lookups fail with messages naming what is missing.
"""

from __future__ import annotations

import onnx
import pytest

from onemodel_compile import UnsupportedError
from onemodel_compile.load import MAX_OPSET, MIN_OPSET
from onemodel_compile.ops import lookup, registered


def _schema_versions(op_type: str, domain: str) -> list[int]:
    versions = []
    for opset in range(MIN_OPSET, MAX_OPSET + 1):
        try:
            onnx.defs.get_schema(op_type, opset, domain)
        except onnx.defs.SchemaError:
            continue
        versions.append(opset)
    return versions


OPS = sorted({(e.domain, e.op_type) for e in registered()})


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


def test_unknown_operator_names_itself() -> None:
    with pytest.raises(UnsupportedError, match="NoSuchOp"):
        lookup("NoSuchOp", "", 13, "fast", "NoSuchOp node 'n'")


def test_uncovered_opset_names_op_version_and_variant() -> None:
    with pytest.raises(UnsupportedError, match=r"Gelu.*opset 19.*fast"):
        lookup("Gelu", "", 19, "fast", "Gelu node 'g'")
