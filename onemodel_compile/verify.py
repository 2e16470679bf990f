"""`onemodel-compile verify`: compile a model, run it beside onnxruntime (or onnx's
ReferenceEvaluator) on the same inputs, and compare every output, and with `per_node` every
intermediate value of the main graph (docs/verify.md).

Per node: a copy of the model lists every intermediate value it has a type for as a graph output;
that copy is compiled and run on both sides. (A value that is a graph output is kept, so the fast
variant does not fuse across it: the outputs row of the table always comes from the module
compiled from the model as it is.) The worst node is the first node, in graph order, whose output
exceeds the tolerance (the error starts there; later nodes inherit it), or when none does the node
with the largest error in ULPs.
"""

from __future__ import annotations

import html
import math
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx

from onemodel_compile.compiler import compile_model
from onemodel_compile.errors import CompileError
from onemodel_compile.load import LoadedModel, load, pin_input_dims
from runtime_support._importing import import_module_file

AGAINST = ("onnxruntime", "reference")
ORT_MAX_IR_VERSION = 13  # onnxruntime 1.31.1 reads IR versions up to 13

# Default tolerance by dtype: |ours - theirs| <= atol + rtol * |theirs|, elementwise.
TOLERANCES = {
    "float64": (1e-9, 1e-7),
    "float32": (1e-5, 1e-4),
    "float16": (1e-3, 1e-2),
    "bfloat16": (1e-2, 1e-2),
}
EXACT_TYPES = (0.0, 0.0)  # integers, bools, strings: equal or not


class VerifyError(CompileError):
    """verify could not compare (bad inputs, the other side failed): one line says why."""


@dataclass
class Comparison:
    """One value compared: where it comes from and how far apart the two results are."""

    name: str
    node: str  # "OpType 'name'" of the producing node, "" for a graph input
    depth: int  # the node's depth: 1 + the deepest node it reads (graph inputs are 0)
    dtype: str
    shape: list
    max_abs: float = 0.0
    max_rel: float = 0.0
    max_ulp: float = 0.0
    atol: float = 0.0
    rtol: float = 0.0
    problem: str = ""  # a shape or dtype mismatch, a value missing on one side
    ok: bool = True
    used: float = 0.0  # the largest |ours - theirs| / (atol + rtol * |theirs|): 1 is the limit


@dataclass
class Verification:
    model: str
    variant: str
    against: str
    inputs: dict[str, np.ndarray]
    generated: bool  # inputs made up from the seed, not read from a file
    seed: int
    outputs: list[Comparison] = field(default_factory=list)
    nodes: list[Comparison] = field(default_factory=list)  # with per_node, in graph order
    skipped: list[str] = field(default_factory=list)  # intermediate values with no known type

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.outputs + self.nodes)

    @property
    def worst(self) -> Comparison | None:
        candidates = self.nodes or self.outputs
        failing = [c for c in candidates if not c.ok]
        if failing:
            return min(failing, key=lambda c: c.depth) if not self.nodes else failing[0]
        return max(candidates, key=lambda c: c.used, default=None)


def verify(
    model: str | Path,
    inputs: str | Path | dict | None = None,
    against: str = "onnxruntime",
    variant: str = "fast",
    per_node: bool = False,
    input_dims: dict[str, int] | None = None,
    atol: float | None = None,
    rtol: float | None = None,
    seed: int = 0,
    report=None,
) -> Verification:
    """Compare the compiled `model` with `against` (see the module's docstring); `report`, a
    CompileReport, is filled in by the compile of the model as it is."""
    if against not in AGAINST:
        raise VerifyError(f"unknown reference {against!r}; choose one of {', '.join(AGAINST)}")
    loaded = pin_input_dims(load(model), input_dims)
    proto = loaded.proto
    with tempfile.TemporaryDirectory(prefix="onemodel-verify-") as folder:
        module = _compile_and_import(loaded, Path(folder) / "model.py", variant, "model", report)
        feeds, generated = _feeds(module, inputs, seed, loaded.source_name)
        ours = _run_ours(module, feeds)
        theirs = _run_reference(proto, feeds, against, loaded.source_name)
        producers, depths = _graph_order(proto.graph)
        result = Verification(loaded.source_name, variant, against, feeds, generated, seed)
        for name, _, _ in module.OUTPUTS:
            result.outputs.append(
                _compare(name, ours.get(name), theirs.get(name), producers, depths, atol, rtol)
            )
        if per_node:
            wide, result.skipped = _every_value_an_output(proto)
            wide_loaded = LoadedModel(wide, loaded.source_name, loaded.sha256, loaded.opset)
            wide_module = _compile_and_import(
                wide_loaded, Path(folder) / "wide.py", variant, "wide"
            )
            ours_all = _run_ours(wide_module, feeds)
            theirs_all = _run_reference(wide, feeds, against, loaded.source_name)
            position = {o: i for i, n in enumerate(proto.graph.node) for o in n.output}
            for name in sorted(
                (n for n, _, _ in wide_module.OUTPUTS), key=lambda n: position.get(n, -1)
            ):
                result.nodes.append(
                    _compare(
                        name,
                        ours_all.get(name),
                        theirs_all.get(name),
                        producers,
                        depths,
                        atol,
                        rtol,
                    )
                )
    return result


# --- compiling and running both sides -------------------------------------------------------


def _compile_and_import(loaded: LoadedModel, path: Path, variant: str, stem: str, report=None):
    compile_model(loaded, path, variant, report=report)
    name = f"onemodel_verify_{id(path):x}_{stem}"
    return import_module_file(path, name)


def _run_ours(module, feeds) -> dict:
    return module.run_feeds(feeds)


def _run_reference(proto: onnx.ModelProto, feeds, against: str, label: str) -> dict:
    if against == "reference":
        from onnx.reference import ReferenceEvaluator

        try:
            evaluator = ReferenceEvaluator(proto)
            results = evaluator.run(None, feeds)
        except Exception as exc:  # the evaluator's own failures
            raise VerifyError(
                f"{label}: onnx's ReferenceEvaluator failed: {_one_line(exc)}"
            ) from None
        return dict(zip([o.name for o in proto.graph.output], results))
    try:
        import onnxruntime
    except ImportError:
        raise VerifyError(
            "onnxruntime is not installed: `pip install onnxruntime`, or compare with onnx's "
            "ReferenceEvaluator: --against reference"
        ) from None
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    copy.ir_version = min(copy.ir_version, ORT_MAX_IR_VERSION)
    try:
        session = onnxruntime.InferenceSession(
            copy.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        results = session.run(None, feeds)
    except Exception as exc:  # onnxruntime's errors
        raise VerifyError(f"{label}: onnxruntime failed: {_one_line(exc)}") from None
    return dict(zip([o.name for o in session.get_outputs()], results))


def _every_value_an_output(proto: onnx.ModelProto) -> tuple[onnx.ModelProto, list[str]]:
    """A copy of `proto` whose graph outputs are its own, then every node output of the main graph
    with a type (from the model's value_info or onnx's shape inference), in graph order; and the
    names left out for want of one."""
    wide = onnx.ModelProto()
    wide.CopyFrom(proto)
    try:
        inferred = onnx.shape_inference.infer_shapes(proto)
    except Exception:  # inference failures leave only the model's own value_info
        inferred = proto
    infos = {v.name: v for v in [*inferred.graph.value_info, *proto.graph.value_info]}
    present = {o.name for o in proto.graph.output}
    skipped = []
    for node in proto.graph.node:
        for name in node.output:
            if not name or name in present:
                continue
            info = infos.get(name)
            if info is None or not info.type.HasField("tensor_type"):
                skipped.append(name)
                continue
            wide.graph.output.append(info)
            present.add(name)
    return wide, skipped


def _graph_order(graph: onnx.GraphProto) -> tuple[dict[str, str], dict[str, int]]:
    """value name -> "OpType 'node'" of its producer, and -> the producer's depth."""
    producers: dict[str, str] = {}
    depths: dict[str, int] = {}
    for node in graph.node:
        depth = 1 + max((depths.get(name, 0) for name in node.input if name), default=0)
        label = f"{node.op_type} {node.name!r}" if node.name else node.op_type
        for name in node.output:
            if name:
                producers[name], depths[name] = label, depth
    return producers, depths


# --- inputs ---------------------------------------------------------------------------------


def _feeds(module, inputs, seed: int, label: str) -> tuple[dict, bool]:
    """The inputs from a .npz file (or a dict) keyed by input name, or generated from `seed`."""
    if inputs is None:
        rng = np.random.default_rng(seed)
        return {name: _generate(rng, dtype, shape) for name, dtype, shape in module.INPUTS}, True
    if not isinstance(inputs, dict):
        try:
            with np.load(inputs, allow_pickle=False) as archive:
                inputs = {name: archive[name] for name in archive.files}
        except (OSError, ValueError) as exc:
            raise VerifyError(f"{inputs}: cannot read the inputs: {_one_line(exc)}") from None
    names = [name for name, _, _ in module.INPUTS]
    missing = [n for n in names if n not in inputs]
    unknown = sorted(set(inputs) - set(names))
    if missing or unknown:
        raise VerifyError(
            f"{label}: the inputs file must hold exactly the model's inputs {names}"
            + (f"; missing {missing}" if missing else "")
            + (f"; unknown {unknown}" if unknown else "")
        )
    return {name: inputs[name] for name in names}, False


def _generate(rng: np.random.Generator, dtype: str, shape) -> np.ndarray:
    """A random input: standard normal floats, integers in [0, 3), random bools. A dim that is
    still symbolic or unknown is 1 (pin it with --input-dim)."""
    if dtype.startswith(("sequence(", "optional(")) or dtype == "?":
        raise VerifyError(
            f"cannot generate an input of type {dtype}: give the inputs with --inputs FILE.npz"
        )
    dims = tuple(d if isinstance(d, int) else 1 for d in (shape or ()))
    np_dtype = np.dtype(dtype) if dtype != "bfloat16" else None
    if dtype == "bool":
        return rng.random(dims) < 0.5
    if np_dtype is not None and np_dtype.kind in "iu":
        return rng.integers(0, 3, dims).astype(np_dtype)
    values = rng.standard_normal(dims)
    if dtype == "bfloat16":
        import ml_dtypes

        return values.astype(ml_dtypes.bfloat16)
    return values.astype(np_dtype)


# --- comparing ------------------------------------------------------------------------------


def _compare(name, ours, theirs, producers, depths, atol, rtol) -> Comparison:
    ref = theirs if theirs is not None else ours
    dtype = str(getattr(ref, "dtype", type(ref).__name__))
    shape = list(np.shape(ref)) if isinstance(ref, np.ndarray) else []
    default_atol, default_rtol = TOLERANCES.get(dtype, EXACT_TYPES)
    c = Comparison(
        name,
        producers.get(name, ""),
        depths.get(name, 0),
        dtype,
        shape,
        atol=default_atol if atol is None else atol,
        rtol=default_rtol if rtol is None else rtol,
    )
    if isinstance(theirs, list) or isinstance(ours, list):  # sequences: element by element
        if not (isinstance(theirs, list) and isinstance(ours, list) and len(ours) == len(theirs)):
            return _mismatch(c, "sequence lengths differ")
        parts = [_compare(name, o, t, producers, depths, atol, rtol) for o, t in zip(ours, theirs)]
        for part in parts:
            c.max_abs, c.max_rel = max(c.max_abs, part.max_abs), max(c.max_rel, part.max_rel)
            c.max_ulp = max(c.max_ulp, part.max_ulp)
            c.problem = c.problem or part.problem
        c.ok = all(part.ok for part in parts)
        c.dtype, c.shape = f"sequence of {len(parts)}", []
        return c
    if ours is None or theirs is None:
        return c if ours is None and theirs is None else _mismatch(c, "missing on one side")
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    if ours.shape != theirs.shape:
        return _mismatch(c, f"shape {list(ours.shape)}, expected {list(theirs.shape)}")
    if ours.dtype != theirs.dtype:
        return _mismatch(c, f"dtype {ours.dtype}, expected {theirs.dtype}")
    if ours.size == 0:
        return c
    if ours.dtype.kind in "OUSb" or ours.dtype.kind in "iu":
        if ours.dtype.kind in "iub":
            diff = np.abs(ours.astype(np.float64) - theirs.astype(np.float64))
            c.max_abs = c.max_ulp = float(diff.max())
            scale = np.maximum(np.abs(theirs.astype(np.float64)), 1.0)
            c.max_rel = float((diff / scale).max())
        else:
            c.max_abs = c.max_ulp = float(np.count_nonzero(ours != theirs))
        c.ok = c.max_abs == 0
        c.used = 0.0 if c.ok else math.inf
        return c
    a, b = ours.astype(np.float64), theirs.astype(np.float64)
    both_nan = np.isnan(a) & np.isnan(b)
    equal = (a == b) | both_nan
    diff = np.where(equal, 0.0, np.abs(a - b))
    diff = np.where(np.isnan(diff), np.inf, diff)
    c.max_abs = float(diff.max())
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(equal, 0.0, diff / np.abs(b))
    c.max_rel = float(np.nan_to_num(rel, nan=np.inf).max())
    c.max_ulp = float(np.where(equal, 0.0, _ulp_distance(ours, theirs)).max())
    limit = c.atol + c.rtol * np.abs(b)
    c.ok = bool(np.all(equal | (diff <= limit)))
    with np.errstate(divide="ignore", invalid="ignore"):
        c.used = float(np.where(equal, 0.0, np.nan_to_num(diff / limit, nan=np.inf)).max())
    return c


def _ulp_distance(ours: np.ndarray, theirs: np.ndarray) -> np.ndarray:
    """How many representable values of their type lie between the two (inf where a NaN is)."""
    bits = {2: np.int16, 4: np.int32, 8: np.int64}[ours.dtype.itemsize]
    ordered = []
    for values in (ours, theirs):
        raw = np.ascontiguousarray(values).view(bits).astype(np.float64)
        # sign-magnitude to a monotonic integer scale: negative floats count down from -0
        ordered.append(np.where(raw < 0, -(raw + 2.0 ** (8 * ours.dtype.itemsize - 1)), raw))
    distance = np.abs(ordered[0] - ordered[1])
    nan = np.isnan(ours.astype(np.float64)) | np.isnan(theirs.astype(np.float64))
    return np.where(nan, np.inf, distance)


def _mismatch(c: Comparison, problem: str) -> Comparison:
    c.problem, c.ok = problem, False
    c.max_abs = c.max_rel = c.max_ulp = c.used = math.inf
    return c


# --- reporting ------------------------------------------------------------------------------


def _number(x: float) -> str:
    if x == 0:
        return "0"
    if math.isinf(x):
        return "inf"
    return f"{x:.3g}" if x < 1e6 or x != int(x) else f"{int(x)}"


def table(rows: list[Comparison]) -> list[str]:
    header = ("value", "node", "dtype", "shape", "max abs", "max rel", "max ULP", "ok")
    body = [
        (
            r.name,
            r.node or "(input)",
            r.dtype,
            str(r.shape),
            _number(r.max_abs),
            _number(r.max_rel),
            _number(r.max_ulp),
            "yes" if r.ok else f"NO {r.problem}".rstrip(),
        )
        for r in rows
    ]
    widths = [max(len(str(row[i])) for row in [header, *body]) for i in range(len(header))]
    return [
        "  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip()
        for row in [header, *body]
    ]


def summary(result: Verification) -> list[str]:
    """What the command prints: the set-up, the tolerance, the tables and the verdict."""
    where = "generated (seed {})".format(result.seed) if result.generated else "from the file"
    shown = ", ".join(
        f"{name} {getattr(v, 'dtype', type(v).__name__)} {list(np.shape(v))}"
        for name, v in result.inputs.items()
    )
    tolerances = sorted({(r.dtype, r.atol, r.rtol) for r in result.outputs + result.nodes})
    lines = [
        f"verify {result.model}: {result.variant} variant against {result.against}",
        f"inputs {where}: {shown or 'none'}",
        "tolerance: |ours - theirs| <= atol + rtol * |theirs| elementwise; "
        + "; ".join(f"{d}: atol {a:g}, rtol {r:g}" for d, a, r in tolerances),
        "",
        "outputs:",
        *table(result.outputs),
    ]
    if result.nodes:
        lines += ["", f"every intermediate value ({len(result.nodes)}), in graph order:"]
        lines += table(result.nodes)
        if result.skipped:
            lines.append(f"not compared (no type known): {', '.join(result.skipped)}")
    worst = result.worst
    if worst is not None:
        lines += [
            "",
            f"worst node: {worst.node or '(input)'} -> {worst.name!r} (max abs "
            f"{_number(worst.max_abs)}, max ULP {_number(worst.max_ulp)}"
            + (
                ", the first above the tolerance"
                if not worst.ok
                else f", {worst.used:.2g} of its tolerance"
            )
            + ")",
        ]
    values = {r.name: r for r in result.outputs + result.nodes}  # an output is also a node's
    failing = [r for r in values.values() if not r.ok]
    lines.append(
        "OK: every value within tolerance"
        if not failing
        else f"FAIL: {len(failing)} of {len(values)} values above tolerance"
    )
    return lines


def write_html(result: Verification, path: str | Path) -> Path:
    """A standalone page: the summary, and an inline SVG of the error (max ULP, log scale) of
    every compared value against its node's depth; values above the tolerance in red."""
    path = Path(path)
    rows = result.nodes or result.outputs
    svg = _svg(rows)
    text = "\n".join(summary(result))
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>verify {html.escape(result.model)}</title>
<style>body {{ font-family: sans-serif; margin: 2em; }} pre {{ font-size: 13px; }}
svg text {{ font-size: 12px; }}</style></head>
<body>
<h1>verify {html.escape(result.model)}: {"OK" if result.ok else "FAIL"}</h1>
<h2>Error by node depth</h2>
{svg}
<h2>Comparison</h2>
<pre>{html.escape(text)}</pre>
</body></html>
"""
    try:
        path.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise VerifyError(f"{path}: cannot write the report: {exc.strerror or exc}") from None
    return path


def _svg(rows: list[Comparison], width: int = 720, height: int = 360) -> str:
    left, right, top, bottom = 60, 20, 20, 40
    depth_max = max((r.depth for r in rows), default=1) or 1

    def error(r: Comparison) -> float:  # log10(1 + ULP), mismatches on top
        return math.log10(1 + r.max_ulp) if math.isfinite(r.max_ulp) else math.nan

    finite = [error(r) for r in rows if not math.isnan(error(r))]
    top_value = max(max(finite, default=1.0), 1.0)
    plot_w, plot_h = width - left - right, height - top - bottom

    def x(depth):
        return left + plot_w * depth / depth_max

    def y(value):
        return top + plot_h * (1 - (top_value if math.isnan(value) else value) / top_value)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="max ULP error by node depth">',
        f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" '
        'stroke="#999"/>',
        f'<text x="{left + plot_w / 2}" y="{height - 8}" text-anchor="middle">node depth</text>',
        f'<text x="14" y="{top + plot_h / 2}" text-anchor="middle" '
        f'transform="rotate(-90 14 {top + plot_h / 2})">log10(1 + max ULP)</text>',
    ]
    for tick in range(0, int(math.ceil(top_value)) + 1):
        if tick <= top_value:
            parts.append(
                f'<text x="{left - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick}</text>'
            )
    for depth in sorted({0, depth_max, *range(0, depth_max + 1, max(1, depth_max // 8))}):
        parts.append(
            f'<text x="{x(depth):.1f}" y="{top + plot_h + 16}" text-anchor="middle">{depth}</text>'
        )
    for r in rows:
        colour = "#1f77b4" if r.ok else "#d62728"
        label = html.escape(f"{r.node} -> {r.name}: max ULP {_number(r.max_ulp)}")
        parts.append(
            f'<circle cx="{x(r.depth):.1f}" cy="{y(error(r)):.1f}" r="4" fill="{colour}">'
            f"<title>{label}</title></circle>"
        )
    parts.append("</svg>")
    return "\n".join(parts)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
