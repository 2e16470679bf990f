"""Operator oracle: single-operator models, run by onnxruntime and by the compiled module, compared.

Each case of CASES (data, not code) names an operator, an opset, attributes and input specs. From
the case's seed the harness draws the named dims of its shapes and the input values, builds a
one-node ONNX model, runs it with onnxruntime (CPUExecutionProvider, default graph optimizations) and
with the module onemodel-compile generates for the requested variant, and compares every output:

- dtype and shape must be identical, and the module must return numpy arrays;
- floats agree within the case's rtol/atol (float32 default rtol 1e-4, atol 1e-5; looser only
  where a case says why), NaN where and only where onnxruntime gives NaN, infinities with their sign;
- integers and booleans are identical;
- the module leaves its input arrays untouched.

onnxruntime is the oracle: no expected value is written down here. Where onnxruntime disagrees with
the ONNX specification or its backend test data, the case carries `divergence` (the reason) and is
expected to mismatch; a compiler bug that is reported but not fixed yet carries `known_bug`. A marked
case that stops failing is reported ("divergence gone", "bug fixed"), so marks cannot go stale.

In the exact variant, a compile refused with ExactnessError is an expected outcome ("refused"),
provided the message names the operator.

Cases come from one table per operator family in oracle_cases/ ("foundation" first). The command
line is tools/ops_coverage_oracle.py:

    python -m tools.ops_coverage_oracle [--variant fast] [-k pattern] [--table NAME] [--seed-offset N] [-v]

prints one line per case and exits non-zero when a case fails. `--seed-offset` re-draws every
case's random shapes and values (a cheap fuzzer); the default run is the one the tests pin.
"""

from __future__ import annotations

import functools
import importlib
import tempfile
import traceback
import warnings
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

import numpy as np
import onnx
from onnx import helper, numpy_helper

from runtime_support._dtypes import dtype_from_name
from tests.harness import conformance
from tests.harness.compare import compare
from tests.harness.modules import import_generated

# onnx 1.23.2 writes IR version 14; onnxruntime 1.31.1 loads IR versions up to 13 (probed: 13 loads
# at every opset used here, 14 is refused). Models get the lowest IR version their opset needs,
# at least 4 (from IR 4 on, an initializer need not be a graph input: it is a constant) and at
# most this.
ORT_MAX_IR_VERSION = 13
MIN_IR_VERSION = 4

# Default tolerances per element type: (rtol, atol).
TOLERANCE = {
    "float16": (2e-3, 1e-3),  # a float16 ulp is 2**-10 relative: one rounding step apart
    "float32": (1e-4, 1e-5),
    "float64": (1e-9, 1e-12),
}

STATUSES = (
    "pass",
    "refused",
    "divergence",
    "known bug",
    "mismatch",
    "divergence gone",
    "bug fixed",
    "compile error",
    "runtime error",
    "oracle error",
)
# Outcomes that do not fail a run: a refusal the exact variant is allowed, and failures the table
# records (divergences of onnxruntime, reported compiler bugs). A marked case that starts passing
# fails the run, so that its mark gets removed.
OK_STATUSES = ("pass", "refused", "divergence", "known bug")


# --- the case table's vocabulary --------------------------------------------------------------


@dataclass(frozen=True)
class Input:
    """One input of a case's node.

    shape: ints and dim names (drawn from the case's `dims`); ignored when `value` is given.
    gen: how values are drawn: "normal" (times `scale`), "uniform" (in [low, high)), "int" (in
      [low, high]), "nonzero" (int in [low, high] without 0), "bool", "index" (ints in [-n, n-1]
      with n the size of axis `index_of[1]` of input `index_of[0]`), "words" (strings, dtype
      "object": three words of WORDS with joins of WORD_JOINS).
    special: plant NaN, +inf, -inf, +0.0 and -0.0 among float values ("inf": all but NaN).
    value: an explicit array (axes, shapes, scalars); `dtype` applies to it too.
    init: an initializer (known at compile time) rather than a graph input.
    dynamic: declare the named dims of a graph input as symbolic dims (by their names).
    """

    shape: tuple = ()
    dtype: str = "float32"
    gen: str = "normal"
    low: float = -10
    high: float = 10
    scale: float = 1.0
    special: bool | str = False
    value: object = None
    init: bool = False
    dynamic: bool = False
    index_of: tuple | None = None


def x(*shape, dtype="float32", **options) -> Input:
    """A graph input."""
    return Input(tuple(shape), dtype, **options)


def w(*shape, dtype="float32", **options) -> Input:
    """An initializer (constant at compile time) drawn at random."""
    return Input(tuple(shape), dtype, init=True, **options)


def c(value, dtype="int64") -> Input:
    """An explicit constant initializer (axes, shapes, pads, scalars)."""
    return Input(dtype=dtype, value=value, init=True)


def v(value, dtype="int64") -> Input:
    """An explicit value fed as a graph input (known only at run time)."""
    return Input(dtype=dtype, value=value, init=False)


@dataclass(frozen=True)
class Case:
    """One single-operator model. `inputs` holds Input specs, None for an omitted optional input.
    `outputs` is how many of the schema's outputs the node lists; `skip_outputs` leaves some of
    them unnamed (optional outputs not asked for). `seed` defaults to a hash of the name."""

    name: str
    op: str
    opset: int
    inputs: tuple
    attrs: Mapping = field(default_factory=dict)
    dims: Mapping = field(default_factory=dict)
    outputs: int = 1
    skip_outputs: tuple = ()
    seed: int | None = None
    rtol: float | None = None
    atol: float | None = None
    note: str = ""  # why the tolerance is looser than the default
    divergence: str = ""  # why onnxruntime is expected to differ (spec/backend data vs ORT)
    known_bug: str = ""  # a reported compiler bug not fixed yet: expected to fail until it is

    @property
    def base_seed(self) -> int:
        return self.seed if self.seed is not None else zlib.crc32(self.name.encode())

    def tolerance(self, dtype: np.dtype) -> tuple[float, float]:
        rtol, atol = TOLERANCE.get(np.dtype(dtype).name, (0.0, 0.0))
        return (
            self.rtol if self.rtol is not None else rtol,
            self.atol if self.atol is not None else atol,
        )


# Tolerance notes for case tables (`note=`).
TRANSCENDENTAL = "float32 transcendental functions: onnxruntime's and numpy's differ by a few ulps"
DOT = (
    "float32 dot products: BLAS/MLAS and numpy sum the terms in different orders, so a result "
    "near zero can differ by a few ulps of the terms' magnitude"
)

FLOAT_MAX = float(np.finfo(np.float32).max)
INT64_MAX = int(np.iinfo(np.int64).max)
INT64_MIN = int(np.iinfo(np.int64).min)

# --- building a case's model and inputs -------------------------------------------------------


def _io_names(op: str, opset: int, count: int, outputs: bool) -> list[str]:
    """Names from the operator's schema (X, W, B; variadic ones numbered)."""
    try:
        schema = onnx.defs.get_schema(op, opset, "")
    except onnx.defs.SchemaError:
        return [f"{'out' if outputs else 'in'}{i}" for i in range(count)]
    formals = list(schema.outputs if outputs else schema.inputs)
    if not formals:
        return [f"{'out' if outputs else 'in'}{i}" for i in range(count)]
    names = []
    for i in range(count):
        formal = formals[min(i, len(formals) - 1)]
        variadic = formal.option == onnx.defs.OpSchema.FormalParameterOption.Variadic
        names.append(f"{formal.name}_{i - formals.index(formal)}" if variadic else formal.name)
    if outputs:  # never reuse an input's name for an output
        names = [f"{n}_out" if n in _io_names(op, opset, 8, False) else n for n in names]
    return names


# The "words" generator's vocabulary: mixed case, accents, digits, an empty word, and the joins
# that StringSplit and RegexFullMatch cases look for.
WORDS = ("Monday", "monday", "TUESDAY", "été", "x1", "", "a.b", "Zürich", "42", "ok")
WORD_JOINS = (" ", "  ", ".", "-", "", "@")


def _draw(
    spec: Input, shape: tuple[int, ...], rng: np.random.Generator, arrays: list
) -> np.ndarray:
    dtype = dtype_from_name(spec.dtype)
    if spec.gen == "normal":
        data = rng.standard_normal(shape) * spec.scale
    elif spec.gen == "uniform":
        data = rng.uniform(spec.low, spec.high, shape)
    elif spec.gen == "int":
        data = rng.integers(int(spec.low), int(spec.high), shape, endpoint=True)
    elif spec.gen == "nonzero":
        data = rng.integers(int(spec.low), int(spec.high), shape, endpoint=True)
        data[data == 0] = 1
    elif spec.gen == "bool":
        data = rng.random(shape) < 0.5
    elif spec.gen == "words":  # strings: words of WORDS joined by WORD_JOINS
        count = int(np.prod(shape, dtype=np.int64))
        picks = rng.integers(0, len(WORDS), (count, 3))
        joins = rng.integers(0, len(WORD_JOINS), (count, 2))
        text = [
            WORDS[a] + WORD_JOINS[j] + WORDS[b] + WORD_JOINS[k] + WORDS[c]
            for (a, b, c), (j, k) in zip(picks, joins)
        ]
        data = np.array(text + [""], dtype=object)[:count].reshape(shape)
    elif spec.gen == "index":
        source, axis = spec.index_of
        size = arrays[source].shape[axis]
        data = rng.integers(-size, size - 1, shape, endpoint=True)
    else:
        raise ValueError(f"unknown generator {spec.gen!r}")
    data = np.asarray(data).astype(dtype)
    if spec.special and dtype.kind == "f" and data.size:
        specials = (
            [np.inf, -np.inf, 0.0, -0.0]
            if spec.special == "inf"
            else [np.nan, np.inf, -np.inf, 0.0, -0.0]
        )
        specials = np.array(specials, dtype=dtype)
        flat = data.reshape(-1)  # a view: data is contiguous
        spots = rng.choice(flat.size, size=min(flat.size, len(specials)), replace=False)
        flat[spots] = specials[: len(spots)]
    return data


def case_arrays(case: Case, seed_offset: int = 0) -> tuple[dict[str, int], list]:
    """The drawn dims and one array (or None for an omitted input) per input spec."""
    rng = np.random.default_rng(case.base_seed + seed_offset)
    dims = {
        name: int(rng.integers(low, high, endpoint=True))
        for name, (low, high) in sorted(case.dims.items())
    }
    arrays: list = []
    for spec in case.inputs:
        if spec is None:
            arrays.append(None)
        elif spec.value is not None:
            arrays.append(np.array(spec.value, dtype=spec.dtype))
        else:
            shape = tuple(dims[d] if isinstance(d, str) else d for d in spec.shape)
            arrays.append(_draw(spec, shape, rng, arrays))
    return dims, arrays


def _attribute(value):
    return numpy_helper.from_array(value) if isinstance(value, np.ndarray) else value


def ir_version_for(opset: int) -> int:
    needed = helper.find_min_ir_version_for([helper.make_opsetid("", opset)])
    return min(max(needed, MIN_IR_VERSION), ORT_MAX_IR_VERSION)


def build(case: Case, seed_offset: int = 0) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """The case's one-node model and its feeds (graph inputs by name, in graph order)."""
    _, arrays = case_arrays(case, seed_offset)
    names = _io_names(case.op, case.opset, len(case.inputs), outputs=False)
    node_inputs, graph_inputs, initializers, feeds = [], [], [], {}
    for name, spec, array in zip(names, case.inputs, arrays):
        if spec is None:
            node_inputs.append("")
            continue
        node_inputs.append(name)
        if spec.init:
            initializers.append(numpy_helper.from_array(array, name))
            continue
        declared = list(array.shape)
        if spec.dynamic and spec.value is None:
            declared = [d if isinstance(d, str) else n for d, n in zip(spec.shape, array.shape)]
        elem = helper.np_dtype_to_tensor_dtype(array.dtype)
        graph_inputs.append(helper.make_tensor_value_info(name, elem, declared))
        feeds[name] = array
    out_names = _io_names(case.op, case.opset, case.outputs, outputs=True)
    out_names = ["" if i in case.skip_outputs else n for i, n in enumerate(out_names)]
    attrs = {key: _attribute(value) for key, value in case.attrs.items()}
    node = helper.make_node(case.op, node_inputs, out_names, name=case.name, **attrs)
    outputs = [helper.make_empty_tensor_value_info(n) for n in out_names if n]
    graph = helper.make_graph([node], case.name, graph_inputs, outputs, initializer=initializers)
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", case.opset)],
        producer_name="ops_coverage_oracle",
    )
    model.ir_version = ir_version_for(case.opset)
    # Declare the outputs as an exporter would: the types onnx's inference gives them. Where it
    # knows no shape (a shape known only at run time), the rank of onnxruntime's result with
    # unknown dims (the checker wants a shape on every graph output); where it knows no type,
    # onnxruntime's.
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    types = {info.name: info for info in inferred.graph.output}
    ranks = None
    declared = []
    for position, name in enumerate(n for n in out_names if n):
        info = types.get(name)
        tensor_type = info.type.tensor_type if info is not None else None
        if tensor_type is None or not tensor_type.elem_type or not tensor_type.HasField("shape"):
            if ranks is None:
                ranks = [
                    (helper.np_dtype_to_tensor_dtype(r.dtype), r.ndim)
                    for r in run_onnxruntime(model, feeds)
                ]
            elem = (
                tensor_type.elem_type
                if tensor_type is not None and tensor_type.elem_type
                else ranks[position][0]
            )
            if tensor_type is not None and tensor_type.HasField("shape"):
                info = helper.make_tensor_value_info(name, elem, None)
                info.type.tensor_type.shape.CopyFrom(tensor_type.shape)
            else:
                info = helper.make_tensor_value_info(name, elem, [None] * ranks[position][1])
        declared.append(info)
    del model.graph.output[:]
    model.graph.output.extend(declared)
    onnx.checker.check_model(model, full_check=True)
    return model, feeds


# --- running and comparing --------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    case: str
    variant: str
    status: str
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.status in OK_STATUSES


def run_onnxruntime(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
    import onnxruntime

    options = onnxruntime.SessionOptions()  # graph optimizations stay at their default
    options.log_severity_level = 3
    options.intra_op_num_threads = 1
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return session.run(None, feeds)


def compile_and_import(model: onnx.ModelProto, variant: str, folder: Path, label: str):
    from onemodel_compile import compile_model

    path = compile_model(model, folder / "model.py", variant)
    return import_generated(path, f"oracle_{label}_{variant}", register=False)


def _same(before: np.ndarray, after: np.ndarray) -> bool:
    return before.shape == after.shape and np.array_equal(
        before, after, equal_nan=before.dtype.kind == "f"
    )


def run_case(
    case: Case,
    variant: str = "fast",
    seed_offset: int = 0,
    hide_shapes: bool = False,
    model_of: Callable[[Case, int], tuple[onnx.ModelProto, dict[str, np.ndarray]]] | None = None,
) -> Outcome:
    """pass, refused (exact variant only), divergence, known bug, or what went wrong, for the
    model and feeds `model_of` makes of the case (this table's one-node models by default; the com.microsoft
    oracle passes its own). With `hide_shapes`, the module is compiled from the model with its
    graph's shapes hidden (conformance.hide_shapes: every rank unknown to the compiler)."""
    from onemodel_compile import ExactnessError

    def outcome(status: str, detail: str = "") -> Outcome:
        if status == "pass" and case.divergence:
            return Outcome(
                case.name,
                variant,
                "divergence gone",
                f"matches onnxruntime although marked divergent ({case.divergence})",
            )
        if status == "mismatch" and case.divergence:
            return Outcome(case.name, variant, "divergence", f"{case.divergence} [{detail}]")
        if status == "pass" and case.known_bug:
            return Outcome(
                case.name,
                variant,
                "bug fixed",
                f"passes although marked as a known bug ({case.known_bug})",
            )
        if status in ("mismatch", "compile error", "runtime error") and case.known_bug:
            return Outcome(
                case.name, variant, "known bug", f"{case.known_bug} [{status}: {detail}]"
            )
        return Outcome(case.name, variant, status, detail)

    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            model, feeds = (model_of or build)(case, seed_offset)
            expected = run_onnxruntime(model, feeds)
    except Exception as exc:
        return Outcome(case.name, variant, "oracle error", f"{type(exc).__name__}: {_line(exc)}")

    with tempfile.TemporaryDirectory(prefix="oracle-") as folder:
        try:
            compiled = conformance.hide_shapes(model) if hide_shapes else model
            module = compile_and_import(compiled, variant, Path(folder), case.name)
        except ExactnessError as exc:
            if variant == "exact":
                return Outcome(case.name, variant, "refused", str(exc))
            return outcome("compile error", f"ExactnessError: {exc}")
        except Exception as exc:
            return outcome("compile error", f"{type(exc).__name__}: {_line(exc)}")
        given = {name: array.copy() for name, array in feeds.items()}
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                results = module.run(*feeds.values())
        except Exception as exc:
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            return outcome(
                "runtime error",
                f"{type(exc).__name__}: {_line(exc)} ({Path(frame.filename).name}:{frame.lineno})",
            )
    for name, array in feeds.items():
        if not _same(given[name], array):
            return outcome("mismatch", f"the module modified its input {name!r}")
    if len(results) != len(expected):
        return outcome("mismatch", f"{len(results)} outputs, onnxruntime gives {len(expected)}")
    for position, (e, a) in enumerate(zip(expected, results)):
        rtol, atol = case.tolerance(e.dtype)
        problem = compare(e, a, rtol, atol)
        if problem:
            return outcome(
                "mismatch", f"output {position} ({results._fields[position]}): {problem}"
            )
    return outcome("pass")


def _line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# The case tables, one module per operator family, written in this module's vocabulary: each of
# oracle_cases/<family>.py defines OPERATORS (what it covers) and CASES. "foundation" comes first.
CASE_TABLES = Path(__file__).resolve().with_name("oracle_cases")


@functools.cache
def tables() -> dict[str, tuple[tuple[str, ...], tuple[Case, ...]]]:
    """Every case table by name: (operators it covers, its cases), in a stable order."""
    found = {}
    stems = sorted(path.stem for path in CASE_TABLES.glob("*.py") if not path.stem.startswith("_"))
    for stem in sorted(stems, key=lambda stem: stem != "foundation"):
        module = importlib.import_module(f"tests.harness.oracle_cases.{stem}")
        found[stem] = (tuple(module.OPERATORS), tuple(module.CASES))
    return found


def all_cases() -> list[Case]:
    return [case for _, cases in tables().values() for case in cases]


def select(pattern: str | None = None, table: str | None = None) -> list[Case]:
    """Cases whose name contains `pattern` or whose operator is `pattern`, of one table or all."""
    cases = tables()[table][1] if table else all_cases()
    return [case for case in cases if not pattern or pattern in case.name or pattern == case.op]
