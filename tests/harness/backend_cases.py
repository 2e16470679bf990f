"""The ONNX backend node test cases, generated from the installed onnx (its wheel lacks the data).

`collect_testcases` runs every case's export function (a few seconds); the result is cached per
process. Scope comes from `tests/conformance/scope.json`, a copy of the project's classification of
onnx 1.23.2's node tests ("in" or the reason it is out of scope).
"""

from __future__ import annotations

import functools
import json
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCOPE_FILE = ROOT / "tests" / "conformance" / "scope.json"


@functools.cache
def scope() -> dict[str, str]:
    return json.loads(SCOPE_FILE.read_text())


def in_scope_names() -> list[str]:
    return sorted(name for name, verdict in scope().items() if verdict == "in")


@functools.cache
def all_cases() -> dict:
    """Every node test case of the installed onnx, by name."""
    import numpy as np
    from onnx.backend.test.case import node

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        cases = node.collect_testcases(None)
    return {case.name: case for case in cases}


def case(name: str):
    return all_cases()[name]


def operators(name: str) -> list[str]:
    """The operator types a case's model uses (main graph and subgraphs), sorted."""
    found: set[str] = set()

    def walk(graph):
        for n in graph.node:
            found.add(n.op_type)
            for attribute in n.attribute:
                if attribute.HasField("g"):
                    walk(attribute.g)
                for sub in attribute.graphs:
                    walk(sub)

    walk(case(name).model.graph)
    return sorted(found)


def as_numpy(value):
    """Backend data holds some tensors as TensorProto (bfloat16, float16); sequences as lists."""
    import onnx
    from onnx import numpy_helper

    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    if isinstance(value, list):
        return [as_numpy(v) for v in value]
    return value
