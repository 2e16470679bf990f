"""Every case of the operator oracle (tests/harness/oracle.py and the family tables of
tests/harness/oracle_cases/), in every variant, against onnxruntime 1.31.1; plus checks that the tables
cover what they promise and that the harness can fail.

No expected value is written here: onnxruntime computes it. Cases the table marks as divergent
(onnxruntime disagrees with the ONNX spec or its backend data) or as known compiler bugs xfail, and
fail once they stop failing, so the marks cannot go stale.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

from onemodel_compile import ExactnessError
from onemodel_compile.load import MIN_OPSET
from tests.harness import oracle
from tests.harness.compare import compare
from tools import ops_coverage_oracle

# The variants under test. The exact variant joins by being listed here; in it, a compile refused
# with ExactnessError is an expected outcome, provided the message names the operator.
VARIANTS = ("fast", "exact")

# Opsets where an operator's semantics changed: the table must hold a case on each side.
SEMANTIC_CHANGES = {
    "Softmax": (13,),  # coerced to 2-D at axis (default 1) -> along axis (default -1)
    "LogSoftmax": (13,),
    "Clip": (11,),  # min/max attributes -> optional inputs
    "Split": (13, 18),  # split attribute -> input -> num_outputs
    "Slice": (10,),  # attributes -> inputs with steps
    "ReduceSum": (13,),  # axes attribute -> input
    "ReduceMean": (18,),
    "ReduceMax": (18,),
    "Unsqueeze": (13,),
    "Squeeze": (13,),
    "Shape": (15,),  # start/end
    "Reshape": (14,),  # allowzero
    "Dropout": (12,),  # ratio attribute -> ratio and training_mode inputs
}


ALL_CASES = oracle.all_cases()
FOUNDATION = oracle.tables()["foundation"][1]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("case", ALL_CASES, ids=lambda case: case.name)
def test_operator_matches_onnxruntime(case, variant):
    outcome = oracle.run_case(case, variant)
    if outcome.status == "refused":
        assert variant == "exact", f"the {variant} variant refused: {outcome.detail}"
        assert case.op in outcome.detail, f"the refusal does not name {case.op}: {outcome.detail}"
        return
    if outcome.status == "divergence":
        pytest.xfail(f"onnxruntime diverges: {outcome.detail}")
    if outcome.status == "known bug":
        pytest.xfail(f"known compiler bug: {outcome.detail}")
    assert outcome.status == "pass", f"{outcome.status}: {outcome.detail}"


# --- the table ----------------------------------------------------------------------------------


def test_table_size_and_names():
    assert len(FOUNDATION) >= 60
    names = [case.name for case in ALL_CASES]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    assert not duplicates, f"case names must be unique across tables (test ids): {duplicates}"


@pytest.mark.parametrize("table", sorted(oracle.tables()))
def test_table_covers_its_operators(table):
    """Every operator a table lists has a case there (a table may test others on the way)."""
    operators, cases = oracle.tables()[table]
    missing = set(operators) - {case.op for case in cases}
    assert not missing, f"{table}: no case for {sorted(missing)}"
    unknown = {case.op for case in cases} - {
        op for ops, _ in oracle.tables().values() for op in ops
    }
    assert not unknown, f"{table}: cases of operators no table lists: {sorted(unknown)}"


@pytest.mark.parametrize("op", sorted(SEMANTIC_CHANGES))
def test_table_covers_semantic_changes(op):
    opsets = sorted({case.opset for case in ALL_CASES if case.op == op})
    bounds = [MIN_OPSET, *SEMANTIC_CHANGES[op], 10**6]
    for low, high in zip(bounds, bounds[1:]):
        assert any(low <= o < high for o in opsets), f"{op}: no case at opsets {low}..{high - 1}"


def test_table_covers_conv_geometry():
    convs = [case for case in FOUNDATION if case.op == "Conv"]
    pads = {case.attrs.get("auto_pad", "NOTSET") for case in convs}
    assert pads >= {"NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"}
    ranks = {len(case.inputs[1].shape) - 2 for case in convs}
    assert ranks >= {1, 2, 3}
    for attribute in ("group", "dilations", "strides", "pads"):
        assert any(attribute in case.attrs for case in convs), attribute


def test_table_covers_edge_shapes():
    _, arrays = zip(*[oracle.case_arrays(case) for case in FOUNDATION])
    empty = [
        case.op
        for case, values in zip(FOUNDATION, arrays)
        if any(
            a is not None and a.size == 0 and a.ndim > 0 and spec.value is None
            for a, spec in zip(values, case.inputs)
        )
    ]
    assert len(set(empty)) >= 10, f"empty tensors only for {sorted(set(empty))}"
    assert any(spec is not None and spec.dynamic for case in FOUNDATION for spec in case.inputs)
    assert sum(1 for case in FOUNDATION if case.divergence) < len(FOUNDATION) // 10


def test_looser_tolerances_say_why():
    for case in ALL_CASES:
        for dtype in ("float16", "float32", "float64"):
            default = oracle.TOLERANCE[dtype]
            looser = any(mine > base for mine, base in zip(case.tolerance(dtype), default))
            used = any(spec is not None and spec.dtype == dtype for spec in case.inputs)
            if looser and used:
                assert case.note, f"{case.name}: a looser {dtype} tolerance needs a note"


def test_cases_are_reproducible():
    for case in ALL_CASES:
        try:
            model_a, feeds_a = oracle.build(case)
        except Exception:  # reported as an oracle error by the case's own test
            continue
        model_b, feeds_b = oracle.build(case)
        assert model_a.SerializeToString() == model_b.SerializeToString(), case.name
        assert feeds_a.keys() == feeds_b.keys()
        for name in feeds_a:
            assert np.array_equal(
                feeds_a[name], feeds_b[name], equal_nan=feeds_a[name].dtype.kind == "f"
            )
    case = oracle.select("conv2d_pads_strides", "foundation")[0]
    redrawn, _ = oracle.build(case, seed_offset=1)  # other dims and values
    assert redrawn.SerializeToString() != oracle.build(case)[0].SerializeToString()


def test_ir_version_cap_is_onnxruntime_s():
    """The cap is the highest IR version onnxruntime loads: update it when onnxruntime moves."""
    import onnxruntime

    def loads(ir_version: int) -> bool:
        node = helper.make_node("Abs", ["x"], ["y"])
        info = helper.make_tensor_value_info
        graph = helper.make_graph(
            [node],
            "g",
            [info("x", onnx.TensorProto.FLOAT, [2])],
            [info("y", onnx.TensorProto.FLOAT, [2])],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = ir_version
        try:
            onnxruntime.InferenceSession(
                model.SerializeToString(), providers=["CPUExecutionProvider"]
            )
        except Exception:
            return False
        return True

    assert loads(oracle.ORT_MAX_IR_VERSION)
    assert not loads(oracle.ORT_MAX_IR_VERSION + 1)
    assert all(oracle.ir_version_for(case.opset) <= oracle.ORT_MAX_IR_VERSION for case in ALL_CASES)


# --- the harness can fail -----------------------------------------------------------------------


def test_compare_catches_differences():
    f32 = np.array([1.0, np.nan, np.inf, -0.0], dtype=np.float32)
    assert compare(f32, f32.copy(), 1e-4, 1e-5) is None
    assert compare(f32, f32.astype(np.float64), 1e-4, 1e-5)  # dtype
    assert compare(f32, f32.reshape(2, 2), 1e-4, 1e-5)  # shape
    assert compare(f32, list(f32), 1e-4, 1e-5)  # not an array
    nan_moved = np.array([np.nan, 1.0, np.inf, 0.0], dtype=np.float32)
    assert compare(f32, nan_moved, 1e-4, 1e-5)
    nan_gained = np.array([np.nan, np.nan, np.inf, 0.0], dtype=np.float32)
    assert compare(f32, nan_gained, 1e-4, 1e-5)
    assert compare(f32, np.array([1.0, np.nan, -np.inf, 0.0], np.float32), 1e-4, 1e-5)
    assert compare(f32, np.array([1.001, np.nan, np.inf, 0.0], np.float32), 1e-4, 1e-5)
    assert compare(f32, np.array([1.00001, np.nan, np.inf, 0.0], np.float32), 1e-4, 1e-5) is None
    ints = np.array([3, -4], dtype=np.int64)
    assert compare(ints, np.array([3, -3], dtype=np.int64), 1.0, 1.0)  # ints are exact
    assert compare(np.array([True]), np.array([False]), 0, 0)
    assert compare(np.array(2.0, np.float32), np.float32(2.0), 0, 0)  # a scalar, not 0-d


def test_run_case_reports_a_wrong_module(monkeypatch):
    case = oracle.select("add_broadcast")[0]
    real = oracle.compile_and_import

    def off_by_one(model, variant, folder, label):
        module = real(model, variant, folder, label)
        run = module.run
        module.run = lambda *args: type(run(*args))(*(r + 1 for r in run(*args)))
        return module

    monkeypatch.setattr(oracle, "compile_and_import", off_by_one)
    outcome = oracle.run_case(case, "fast")
    assert outcome.status == "mismatch", outcome


def test_run_case_reports_a_module_that_writes_its_input(monkeypatch):
    case = oracle.select("relu_special")[0]
    real = oracle.compile_and_import

    def scribbler(model, variant, folder, label):
        module = real(model, variant, folder, label)
        run = module.run

        def run_and_scribble(*args):
            results = run(*args)
            args[0][...] = 0
            return results

        module.run = run_and_scribble
        return module

    monkeypatch.setattr(oracle, "compile_and_import", scribbler)
    outcome = oracle.run_case(case, "fast")
    assert outcome.status == "mismatch" and "modified its input" in outcome.detail, outcome


@pytest.mark.parametrize("variant", ["fast", "exact"])
def test_exactness_refusal_is_expected_only_in_exact(monkeypatch, variant):
    case = oracle.select("exp_special")[0]

    def refuse(model, variant, folder, label):
        raise ExactnessError("Exp node 'exp_special': Exp has no exact implementation")

    monkeypatch.setattr(oracle, "compile_and_import", refuse)
    outcome = oracle.run_case(case, variant)
    assert outcome.status == ("refused" if variant == "exact" else "compile error"), outcome


def test_stale_marks_fail(monkeypatch):
    case = oracle.select("abs_special")[0]
    diverging = oracle.Case(**{**case.__dict__, "divergence": "pretend"})
    assert oracle.run_case(diverging, "fast").status == "divergence gone"
    buggy = oracle.Case(**{**case.__dict__, "known_bug": "pretend"})
    assert oracle.run_case(buggy, "fast").status == "bug fixed"


def test_command_line(capsys):
    assert ops_coverage_oracle.main(["-k", "abs_special", "--table", "foundation"]) == 0
    out = capsys.readouterr().out
    assert "PASS abs_special" in out and "1 pass" in out
