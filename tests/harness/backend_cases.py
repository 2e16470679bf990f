"""The ONNX backend node test cases, generated from the installed onnx (its wheel lacks the data).

`collect_testcases` runs every case's export function (a few seconds); the result is cached per
process. The scope is every node case of onnx 1.23.2 (`names`, issue #14); `tests/conformance/
scope.json` keeps the seed's classification ("in" or the reason it was out of scope) as history.
"""

from __future__ import annotations

import functools
import json
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCOPE_FILE = ROOT / "tests" / "conformance" / "scope.json"


@functools.cache
def scope() -> dict[str, str]:
    return json.loads(SCOPE_FILE.read_text())


def in_scope_names() -> list[str]:
    """The seed's 1,614 in-scope cases (history: the scope is now every case, `names`)."""
    return sorted(name for name, verdict in scope().items() if verdict == "in")


def names() -> list[str]:
    """Every node case of the installed onnx: the conformance runner's and CI's scope."""
    return sorted(all_cases())


@functools.cache
def all_cases() -> dict:
    """Every node test case of the installed onnx, by name.

    Pillow is hidden while they are generated: with Pillow importable, onnx's ImageDecoder cases
    encode and decode their images with it (the decoder under test, whatever its version) instead
    of using the frozen data onnx ships (decoded by the Pillow of onnx's release), which are the
    independent expected values."""
    import numpy as np
    from onnx.backend.test.case import node

    hidden = {name: sys.modules.get(name) for name in ("PIL", "PIL.Image")}
    sys.modules.update(dict.fromkeys(hidden))  # None: `import PIL.Image` raises ImportError
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            cases = node.collect_testcases(None)
    finally:
        for name, module in hidden.items():
            if module is None:
                del sys.modules[name]
            else:
                sys.modules[name] = module
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
