"""Completeness of onnxruntime's own operators (issue #14, point 4): every kernel onnxruntime
1.31.1 registers for its CPUExecutionProvider beyond onnx's schemas (the com.microsoft domain, the
layout optimizer's com.microsoft.nchwc, and the default-domain / ai.onnx.ml kernels at opsets onnx
defines no schema for) is either compiled (a registration covers every opset of the kernel's
range) or listed in NOT_COMPILED with its reason, the table docs/com-microsoft.md shows under
"Not compiled yet".

The kernel list is onnxruntime's own (`get_all_opkernel_def()`), not written here: when a new
onnxruntime registers a kernel the compiler neither compiles nor lists, the test fails naming it.
"""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

from onemodel_compile.errors import UnsupportedError
from onemodel_compile.ops.registry import lookup

DOCS = Path(__file__).resolve().parent.parent / "docs" / "com-microsoft.md"
CONTRIB_DOMAINS = ("com.microsoft", "com.microsoft.nchwc")
ONNX_DOMAINS = ("", "ai.onnx.ml")
LAST = 2**31 - 1  # onnxruntime's "still current" end of a version range

NCHWC = (
    "onnxruntime's NCHWc layout transformer writes it (ORT_ENABLE_ALL), in blocked layouts "
    "sized for the CPU it ran on; no exporter writes it and a saved model of it is "
    "machine-specific"
)
# (domain, operator) -> why the compiler does not compile it.
NOT_COMPILED = {
    ("com.microsoft", "SparseAttention"): (
        "its CPU kernel runs only when past and present are one buffer (onnxruntime-genai's "
        "in-place cache): an ordinary session fails, so there is nothing to compare with"
    ),
    ("com.microsoft", "MatMulFpQ4"): "deprecated (MatMulNBits replaced it)",
    ("com.microsoft", "SparseToDenseMatMul"): "sparse tensors are outside the compiler's scope",
    ("com.microsoft", "SampleOp"): "onnxruntime's example of a contrib operator, in no model",
    **{
        ("com.microsoft.nchwc", op): NCHWC
        for op in (
            "AveragePool",
            "Conv",
            "GlobalAveragePool",
            "GlobalMaxPool",
            "MaxPool",
            "ReorderInput",
            "ReorderOutput",
            "Upsample",
        )
    },
    ("", "MemcpyFromHost"): (
        "the session inserts it between devices; it is in no model and the CPU provider alone "
        "never needs it"
    ),
    ("", "MemcpyToHost"): (
        "the session inserts it between devices; it is in no model and the CPU provider alone "
        "never needs it"
    ),
}


def _onnx_defines(domain: str, op_type: str, since: int) -> bool:
    """Whether onnx has a schema of `op_type` that starts at opset `since`."""
    try:
        return onnx.defs.get_schema(op_type, since, domain).since_version == since
    except onnx.defs.SchemaError:
        return False


def _kernels() -> dict[tuple[str, str], list[tuple[int, int]]]:
    """onnxruntime's CPU kernels beyond onnx's schemas: (domain, operator) -> version ranges."""
    from onnxruntime.capi import onnxruntime_pybind11_state as ort

    found: dict[tuple[str, str], set[tuple[int, int]]] = {}
    for kernel in ort.get_all_opkernel_def():
        if kernel.provider != "CPUExecutionProvider":
            continue
        since, until = kernel.version_range
        if kernel.domain in ONNX_DOMAINS and _onnx_defines(kernel.domain, kernel.op_name, since):
            continue  # onnx's own operator: the other families' (tests/test_conformance.py)
        found.setdefault((kernel.domain, kernel.op_name), set()).add((since, until))
    return {key: sorted(ranges) for key, ranges in sorted(found.items())}


KERNELS = _kernels()


def _opsets(domain: str, since: int, until: int) -> range:
    if domain in CONTRIB_DOMAINS:
        last = 1
    elif domain == "":
        last = onnx.defs.onnx_opset_version()
    else:  # ai.onnx.ml
        last = max(s.since_version for s in onnx.defs.get_all_schemas() if s.domain == domain)
    return range(since, min(until, last) + 1)


def _compiled(domain: str, op_type: str, ranges: list[tuple[int, int]]) -> list[int]:
    """The opsets of `ranges` no registration covers (empty: compiled)."""
    missing = []
    for since, until in ranges:
        for opset in _opsets(domain, since, until):
            try:
                lookup(op_type, domain, opset, "fast", op_type)
            except UnsupportedError:
                missing.append(opset)
    return missing


def test_onnxruntime_lists_its_kernels():
    """The enumeration itself finds what it must (so an empty list cannot pass vacuously)."""
    assert ("com.microsoft", "MatMulNBits") in KERNELS
    assert ("", "SimplifiedLayerNormalization") in KERNELS
    assert KERNELS[("", "LayerNormalization")] == [(1, 16)]
    assert ("", "Relu") not in KERNELS  # onnx's own
    assert len([k for k in KERNELS if k[0] == "com.microsoft"]) >= 80


@pytest.mark.parametrize("key", list(KERNELS), ids=lambda k: f"{k[0] or 'ai.onnx'}:{k[1]}")
def test_every_kernel_is_compiled_or_listed(key):
    missing = _compiled(*key, KERNELS[key])
    if key in NOT_COMPILED:
        assert missing, f"{key} compiles now: take it out of NOT_COMPILED and the docs' table"
        return
    assert not missing, (
        f"onnxruntime 1.31.1 registers a CPU kernel {key[1]} (domain {key[0] or 'ai.onnx'!r}) "
        f"at opsets {missing} that the compiler neither compiles nor lists in NOT_COMPILED"
    )


def test_the_list_names_only_onnxruntime_s_kernels():
    assert not set(NOT_COMPILED) - set(KERNELS), sorted(set(NOT_COMPILED) - set(KERNELS))
    assert all(reason.strip() for reason in NOT_COMPILED.values())


def _documented() -> dict[tuple[str, str], str]:
    """The rows of docs/com-microsoft.md's "Not compiled yet" table: | operator | domain | why |."""
    text = DOCS.read_text()
    section = text.split("## Not compiled yet", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 3 or cells[0] in ("operator", "") or set(cells[0]) <= set("-"):
            continue
        operator, domain = cells[0].strip("`"), cells[1].strip("`")
        rows[("" if domain == "ai.onnx" else domain, operator)] = cells[2]
    return rows


def test_the_docs_table_is_this_list():
    documented = _documented()
    assert set(documented) == set(NOT_COMPILED), (
        sorted(set(NOT_COMPILED) - set(documented)),
        sorted(set(documented) - set(NOT_COMPILED)),
    )
    for key, reason in documented.items():
        assert reason == NOT_COMPILED[key], (key, reason)


def markdown() -> str:
    """The docs' table (python -m tests.test_microsoft_completeness)."""
    lines = ["| operator | domain | why |", "|---|---|---|"]
    for (domain, operator), reason in sorted(NOT_COMPILED.items()):
        lines.append(f"| {operator} | {domain or 'ai.onnx'} | {reason} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown())
