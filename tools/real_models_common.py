"""What tools/make_real_models.py (torch), tools/make_tf_models.py (tf2onnx) and
tools/make_paddle_models.py (paddle2onnx) share: running onnxruntime the way the stored outputs
were made, checking them against the framework's own outputs, the npz writer with fixed
timestamps, and tests/real_models/README.md, one section per tool.

Each tool runs in its own environment (torch in the project venv, tensorflow and paddle in venvs
of their own, since neither installs beside the other's protobuf pins), so this module needs only
numpy, onnx and onnxruntime 1.31.1.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np
import onnx

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "real_models"
# onnxruntime's outputs against the framework's own, for every feed set of every model.
FRAMEWORK_RTOL, FRAMEWORK_ATOL = 1e-3, 1e-4


def build_in_children(module: str, names: list[str], out: Path) -> list[dict]:
    """Builds each model in a process of its own (`python -m MODULE --child NAME --out OUT`,
    which prints its README row as JSON on its last line), with PYTHONHASHSEED=0: the converters
    number the names they invent with process-wide counters and walk sets of names (tf2onnx
    keeps one of each group of equal constants in set order), so a model's bytes would otherwise
    depend on the run and on which models were built before it."""
    rows = []
    for name in names:
        done = subprocess.run(
            [sys.executable, "-m", module, "--child", name, "--out", str(out)],
            cwd=ROOT,
            env={**os.environ, "PYTHONHASHSEED": "0"},
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode:
            sys.exit(f"{name}: the build failed\n{done.stderr[-4000:]}")
        row = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"{name}: {row['bytes']} bytes, {row['sizes']}", flush=True)
        rows.append(row)
    return rows


@dataclass
class Built:
    """One model: the ModelProto, its two feed sets, and the framework's outputs for them (None
    for the onnx.helper graphs and onnxruntime's rewrites), plus what the README says about it."""

    name: str
    made_by: str
    opset: int
    dynamic: str
    model: onnx.ModelProto
    feeds: list[dict[str, np.ndarray]]
    framework_outputs: list[list[np.ndarray]] | None = None


def run_onnxruntime(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """CPUExecutionProvider, one thread, every graph optimization level left at its default."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return session.run(None, feeds)


def write_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """np.savez with fixed timestamps and order, so the bytes depend on the arrays alone."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for key, value in arrays.items():
            member = io.BytesIO()
            # not ascontiguousarray, which makes a 0-d array 1-d
            np.lib.format.write_array(member, np.asarray(value, order="C"), allow_pickle=False)
            info = zipfile.ZipInfo(f"{key}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, member.getvalue())
    path.write_bytes(buffer.getvalue())


def shape_text(feeds: dict[str, np.ndarray]) -> str:
    return ", ".join(f"{name} {list(value.shape)}" for name, value in feeds.items())


def all_nodes(graph: onnx.GraphProto) -> Iterator[onnx.NodeProto]:
    for node in graph.node:
        yield node
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                yield from all_nodes(attribute.g)
            for sub in attribute.graphs:
                yield from all_nodes(sub)


def save_built(built: Built, out: Path, framework: str) -> dict:
    """Runs onnxruntime on both feed sets, checks its outputs against the framework's (named
    `framework` in the message), writes NAME.onnx and NAME.npz, and returns the README row."""
    name, model = built.name, built.model
    arrays: dict[str, np.ndarray] = {}
    output_names = [o.name for o in model.graph.output]
    for k, feeds in enumerate(built.feeds):
        results = run_onnxruntime(model, feeds)
        if built.framework_outputs is not None:
            theirs_all = built.framework_outputs[k]
            assert len(theirs_all) == len(results), (name, len(theirs_all), len(results))
            for output, ours, theirs in zip(output_names, results, theirs_all):
                np.testing.assert_allclose(
                    ours,
                    theirs,
                    rtol=FRAMEWORK_RTOL,
                    atol=FRAMEWORK_ATOL,
                    err_msg=f"{name} feed set {k} output {output}: onnxruntime against {framework}",
                    strict=True,
                )
        for input_name, value in feeds.items():
            arrays[f"{k}:input:{input_name}"] = value
        for output_name, value in zip(output_names, results):
            arrays[f"{k}:output:{output_name}"] = np.asarray(value)
    onnx_path = out / f"{name}.onnx"
    onnx_path.write_bytes(model.SerializeToString())
    write_npz(out / f"{name}.npz", arrays)
    return {
        "name": name,
        "made_by": built.made_by,
        "opset": built.opset,
        "dynamic": built.dynamic,
        "sizes": " / ".join(shape_text(f) for f in built.feeds),
        "bytes": onnx_path.stat().st_size,
        "ops": sorted({n.op_type for n in all_nodes(model.graph)}),
    }


# --------------------------------------------------------------------------------------------
# tests/real_models/README.md: an introduction, then one section per tool, each written by its
# tool alone (a tool rewrites its own section and leaves the others' as they are).

README_INTRO = [
    "# Real exported models",
    "",
    "Checked by `tests/test_real_models.py`. `NAME.npz` holds two feed sets `k` = 0, 1 as "
    "`<k>:input:<name>` and onnxruntime 1.31.1's outputs as `<k>:output:<name>` (one thread, "
    "CPUExecutionProvider); where a framework made the model, its own outputs agree with "
    "onnxruntime's at rtol 1e-3, atol 1e-4 on both feed sets. Each section below is written by "
    "the tool it names (`tools/real_models_common.py` holds what they share).",
]
SECTION = re.compile(r"^## Built by `(tools/[a-z_]+\.py)`", re.M)


def readme_sections(out: Path) -> dict[str, str]:
    """The sections of the README as it is, keyed by the tool that wrote each."""
    path = out / "README.md"
    if not path.exists():
        return {}
    text = path.read_text()
    marks = list(SECTION.finditer(text))
    sections = {}
    for index, mark in enumerate(marks):
        end = marks[index + 1].start() if index + 1 < len(marks) else len(text)
        sections[mark.group(1)] = text[mark.start() : end].rstrip("\n") + "\n"
    return sections


def section_models(section: str) -> set[str]:
    """The model names of a section's table."""
    return set(re.findall(r"^\| ([A-Za-z0-9_]+) \|", section, re.M)) - {"model"}


def write_readme_section(out: Path, tool: str, about: list[str], rows: list[dict]) -> set[str]:
    """Rewrites `tool`'s section (its `about` lines, the table of `rows`, their operator types)
    and returns the models the old section listed that `rows` no longer has (stale files)."""
    sections = readme_sections(out)
    stale = section_models(sections.get(tool, "")) - {row["name"] for row in rows}
    lines = [f"## Built by `{tool}`", "", *about, ""]
    lines += [
        "| model | made by | opset | dynamic axes | feed sets (0 / 1) | .onnx bytes |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['name']} | {row['made_by']} | {row['opset']} | {row['dynamic']} | "
            f"{row['sizes']} | {row['bytes']} |"
        )
    lines += ["", f"### Operator types ({tool})", ""]
    for row in rows:
        lines.append(f"- {row['name']}: {' '.join(row['ops'])}")
    sections[tool] = "\n".join(lines) + "\n"
    order = ["tools/make_real_models.py", "tools/make_tf_models.py", "tools/make_paddle_models.py"]
    keys = [k for k in order if k in sections] + sorted(set(sections) - set(order))
    text = "\n".join(README_INTRO) + "\n\n" + "\n".join(sections[k] for k in keys)
    (out / "README.md").write_text(text)
    return stale


def remove_models(out: Path, names: set[str]) -> None:
    for stem in sorted(names):
        (out / f"{stem}.onnx").unlink(missing_ok=True)
        (out / f"{stem}.npz").unlink(missing_ok=True)
