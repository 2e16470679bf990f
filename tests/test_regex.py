"""RegexFullMatch: RE2 semantics in linear time where google-re2 is installed, and a guarded
fallback to Python's re without it (runtime_support/strings.py). Expected values: onnxruntime,
whose kernel is RE2."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper

import runtime_support.strings as strings
from onemodel_compile import load_compiled
from onemodel_compile.errors import CompileError
from runtime_support import NodeError

TEXTS = np.array(
    [
        "www.google.com",
        "www.onnx.ai",
        "a@b.com",
        "user_1@host.org",
        "",
        "aaaaaaaaaaaaaaaab",
        "ABC",
        "x y",
    ],
    dtype=object,
)
PATTERNS = [
    r"www\.[\w.-]+\.\bcom\b",
    r"\w+@\w+\.(com|org)",
    r"[a-z]*",
    r"(?i)abc",
    r"\s?x\s+y",
    r"a{2,5}b?",
    r"(ab)*(cd|e)?",
    r"",
]


def _model(pattern: str) -> onnx.ModelProto:
    node = helper.make_node("RegexFullMatch", ["X"], ["Y"], name="match", pattern=pattern)
    graph = helper.make_graph(
        [node],
        "regex",
        [helper.make_tensor_value_info("X", TensorProto.STRING, ["n"])],
        [helper.make_tensor_value_info("Y", TensorProto.BOOL, ["n"])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=10)


def _onnxruntime(model: onnx.ModelProto, texts: np.ndarray) -> np.ndarray:
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    return session.run(None, {"X": texts})[0]


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("engine", ["re2", "python-re"])
def test_matches_onnxruntime(pattern, engine, request):
    if engine == "python-re":
        request.getfixturevalue("without_re2")
    model = _model(pattern)
    for variant in ("fast", "exact"):
        module = load_compiled(model, variant=variant)
        got = module.run(TEXTS).Y
        np.testing.assert_array_equal(got, _onnxruntime(model, TEXTS), err_msg=variant)


def test_nested_repeat_is_linear_with_re2():
    # (a+)+$ takes exponential time in a backtracking engine on a run of a's and a mismatch;
    # RE2 answers at once (a hang here would fail the suite's time bound, not a timing assert).
    model = _model(r"(a+)+$")
    texts = np.array(["a" * 5000 + "b", "a" * 5000], dtype=object)
    got = load_compiled(model).run(texts).Y
    np.testing.assert_array_equal(got, _onnxruntime(model, texts))


@pytest.mark.parametrize("pattern", [r"(a+)+$", r"(a|aa)*c", r"(\w*\s?)*x", r"((ab)*c)+"])
def test_hazard_without_re2_names_the_extra(pattern, without_re2):
    module = load_compiled(_model(pattern))  # compiles: the running machine may have RE2
    with pytest.raises(NodeError) as raised:
        module.run(np.array(["a" * 40 + "b"], dtype=object))
    message = str(raised.value)
    assert "match" in message and "onemodel-runtime[regex]" in message
    assert "exponential" in message


@pytest.mark.parametrize("pattern", [r"(a)\1", r"(?=a)a", r"(?<!x)y", r"(", r"a{2,1}"])
@pytest.mark.parametrize("engine", ["re2", "python-re"])
def test_invalid_pattern_is_refused_at_compile_time(pattern, engine, request):
    if engine == "python-re":
        request.getfixturevalue("without_re2")
    with pytest.raises(CompileError) as raised:
        load_compiled(_model(pattern))
    assert "match" in str(raised.value) and "pattern" in str(raised.value)
    # onnxruntime refuses these patterns too (its kernel compiles them with RE2)
    with pytest.raises(onnxruntime.capi.onnxruntime_pybind11_state.Fail):
        _onnxruntime(_model(pattern), TEXTS)


@pytest.mark.parametrize(
    "pattern, hazard",
    [
        (r"(a+)+", True),
        (r"(a*)*b", True),
        (r"(ab|a)*", True),
        (r"(a|b)*", False),  # one character class to Python's parser: nothing to backtrack over
        (r"(?:x{2,3})+", True),
        (r"a+b+c*", False),
        (r"(ab)*c", False),
        (r"(a?)*", False),
        (r"(a|b){1,3}", False),
        (r"[a-z]+(\.[a-z]+){0,4}", False),
    ],
)
def test_backtracking_hazard_rule(pattern, hazard):
    assert (strings.backtracking_hazard(pattern) is not None) is hazard


# RE2 syntax that Python's re lacks or reads otherwise ([[:alpha:]] is a character set to re)
RE2_ONLY = [r"\p{Greek}+", r"\Qa.b\E", r"(?U)a+", r"[[:alpha:]]+", r"\x{41}BC"]
RE2_TEXTS = np.array(["αβγ", "a.b", "axb", "aaa", "ABC", "abc", "", ":a"], dtype=object)


@pytest.mark.parametrize("pattern", RE2_ONLY)
def test_re2_only_syntax_matches_onnxruntime(pattern):
    model = _model(pattern)
    got = load_compiled(model).run(RE2_TEXTS).Y
    np.testing.assert_array_equal(got, _onnxruntime(model, RE2_TEXTS))


@pytest.mark.parametrize("pattern", RE2_ONLY)
def test_re2_only_syntax_without_re2_compiles_then_names_the_extra(pattern, without_re2):
    module = load_compiled(_model(pattern))  # valid RE2: the running machine may have it
    with pytest.raises(NodeError) as raised:
        module.run(RE2_TEXTS)
    assert "onemodel-runtime[regex]" in str(raised.value)
