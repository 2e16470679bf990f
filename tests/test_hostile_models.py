"""Hostile models (docs/contract.md, "Reviewability"): every string that comes from the model reaches the
code only as an escaped literal or a sanitized identifier, and compiling or running an untrusted
model never runs its content.

Each model puts a list of hostile texts in one role (graph inputs, outputs, intermediate values,
initializers, node names, symbolic dims, free-text fields); the generated module must compile,
import, and compute the right outputs; its identifiers must be valid, unique and shadow nothing;
no call or import in it may come from the model; and the marker file the payloads try to create
must never appear.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import keyword
import os
import py_compile
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper

import onemodel_compile
import runtime_support
from tests import models

# Generated modules import numpy, runtime_support and harmless parts of the standard library only.
FORBIDDEN_IMPORTS = {
    "os", "sys", "subprocess", "builtins", "importlib", "shutil", "socket", "pickle", "marshal",
    "ctypes", "runpy", "code", "codeop", "pty", "multiprocessing", "threading", "signal", "io",
    "urllib", "http", "tempfile", "glob",
}  # fmt: skip
ALLOWED_IMPORTS = ({"numpy", "runtime_support"} | set(sys.stdlib_module_names)) - FORBIDDEN_IMPORTS
FORBIDDEN_CALLS = {
    "__import__", "eval", "exec", "compile", "system", "popen", "spawn", "open", "getattr",
    "setattr", "delattr", "globals", "locals", "vars", "breakpoint", "input", "import_module",
    "run_path", "loads", "load",
}  # fmt: skip
FORBIDDEN_NAMES = {"__import__", "eval", "exec", "os", "subprocess", "sys", "__builtins__"}
MODULE_LEVEL = {"np", "rt", "typing", "Path", "INPUTS", "OUTPUTS", "Outputs", "run", "run_feeds"}


def payloads(marker: Path) -> list[str]:
    """Texts that would run `touch marker` if they reached the code unescaped, in any position:
    as a statement, inside a string or docstring, a comment, or a jinja2 template."""
    call = f"__import__('os').system('touch {marker}')"
    return [
        call,
        f"\n{call}\n#",
        f'";{call};"',
        f"';{call};'",
        f'"""\n{call}\n"""',
        f"'''\n{call}\n'''",
        f"\r{call}\r#",
        f"\r\n{call}\r\n",
        f"\\\n{call}",
        f"\x0c\n{call}",
        f"{{{{ {call} }}}}",
        f"{{% if {call} %}}{{% endif %}}",
        f"\u2028{call}\u2029",
        f"x = 1; {call}",
    ]


def hostile_names(marker: Path) -> list[str]:
    names = [
        # keywords and soft keywords
        "class", "def", "lambda", "None", "True", "import", "return", "del", "yield", "await",
        "match", "case", "type", "_",
        # builtins and the generated module's own names
        "print", "len", "sum", "eval", "exec", "__import__", "np", "rt", "run", "run_feeds",
        "Outputs", "INPUTS", "OUTPUTS", "typing", "Path", "_WEIGHTS", "_check_inputs", "results",
        "feeds", "self", "__name__", "__file__", "__builtins__", "__class__", "count", "index",
        "_fields", "_asdict",
        # the same after sanitizing
        "a.b", "a_b", "a-b", "a b", "a/b", "a__b", "a:b", "a::b",
        # digits and underscores first
        "0", "1abc", "123", "__", "___x", "_0", "_1abc",
        # non-ASCII
        "é", "日本語", "naïve", "x\u200b", "\u00a0", "\U0001f600", "ℌ", "ﬁ",
        # quotes, escapes, control characters
        "'", '"', "'''", '"""', "`", "\\", "a\\", "\\n", "a\nb", "a\rb", "\r\n", "\t", "\x0c",
        "\x00", "\x1b[2J", "#", "# comment", "%s", "{0}", "{{ x }}", "{% raw %}", "${x}",
        # very long, and long names equal in their first 64 characters
        "L" * 5000, "L" * 5000 + "2", "M" * 70, "M" * 70 + "!", "N" * 64 + "_1",
    ]  # fmt: skip
    return names + payloads(marker)


@dataclass
class Case:
    model: onnx.ModelProto
    feeds: dict[str, np.ndarray]
    expected: dict[str, np.ndarray]
    hostile: list[str] = field(default_factory=list)


def _x(shape, seed) -> np.ndarray:
    return models.rng(seed).standard_normal(shape).astype(np.float32)


def inputs_case(names: list[str]) -> Case:
    """Every hostile name is a graph input; out{i} = name_i + W (W in the weights file)."""
    w = _x((3, 8), 1)
    nodes = [
        helper.make_node("Add", [n, "W"], [f"out{i}"], name=f"add{i}") for i, n in enumerate(names)
    ]
    graph = helper.make_graph(
        nodes,
        "inputs",
        [models.tensor(n, [3, 8]) for n in names],
        [models.tensor(f"out{i}", [3, 8]) for i in range(len(names))],
        [models.init("W", w)],
    )
    feeds = {n: _x((3, 8), 100 + i) for i, n in enumerate(names)}
    expected = {f"out{i}": feeds[n] + w for i, n in enumerate(names)}
    return Case(models.finish(graph), feeds, expected, names)


def outputs_case(names: list[str]) -> Case:
    """Every hostile name is a graph output: name_i = x * (i + 1)."""
    nodes, inits = [], []
    for i, n in enumerate(names):
        inits.append(models.init(f"c{i}", np.array(i + 1, dtype=np.float32)))
        nodes.append(helper.make_node("Mul", ["x", f"c{i}"], [n], name=f"mul{i}"))
    graph = helper.make_graph(
        nodes,
        "outputs",
        [models.tensor("x", [3, 8])],
        [models.tensor(n, [3, 8]) for n in names],
        inits,
    )
    x = _x((3, 8), 2)
    return Case(
        models.finish(graph),
        {"x": x},
        {n: x * np.float32(i + 1) for i, n in enumerate(names)},
        names,
    )


def intermediates_case(names: list[str]) -> Case:
    """Every hostile name is an intermediate value of a chain in which two values are live at a
    time: v0 = relu(x), v1 = -x, v_i = v_{i-1} + v_{i-2}; y = v_last * W."""
    w = _x((3, 8), 3)
    nodes = [
        helper.make_node("Relu", ["x"], [names[0]], name="first"),
        helper.make_node("Neg", ["x"], [names[1]], name="second"),
    ]
    for i in range(2, len(names)):
        nodes.append(
            helper.make_node("Add", [names[i - 1], names[i - 2]], [names[i]], name=f"n{i}")
        )
    nodes.append(helper.make_node("Mul", [names[-1], "W"], ["y"], name="last"))
    graph = helper.make_graph(
        nodes,
        "intermediates",
        [models.tensor("x", [3, 8])],
        [models.tensor("y", [3, 8])],
        [models.init("W", w)],
    )
    x = _x((3, 8), 4) / 1000
    values = [np.maximum(x, np.float32(0)), -x]
    for _ in range(2, len(names)):
        values.append(values[-1] + values[-2])
    return Case(models.finish(graph), {"x": x}, {"y": values[-1] * w}, names)


def initializers_case(names: list[str]) -> Case:
    """Every hostile name is an initializer, large (weights file) and small (inline) in turn:
    t_{i+1} = t_i + name_i."""
    r = models.rng(5)
    nodes, inits, values = [], [], []
    current = "x"
    for i, n in enumerate(names):
        value = r.standard_normal((3, 8) if i % 2 == 0 else (8,)).astype(np.float32)
        values.append(value)
        inits.append(models.init(n, value))
        nodes.append(helper.make_node("Add", [current, n], [f"t{i}"], name=f"add{i}"))
        current = f"t{i}"
    graph = helper.make_graph(
        nodes, "initializers", [models.tensor("x", [3, 8])], [models.tensor(current, [3, 8])], inits
    )
    x = _x((3, 8), 6)
    result = x
    for value in values:
        result = result + value
    return Case(models.finish(graph), {"x": x}, {current: result}, names)


def node_names_case(names: list[str]) -> Case:
    """Every hostile text is a node's name and doc string."""
    w = _x((8, 8), 7)
    nodes = []
    current = "x"
    for i, n in enumerate(names):
        op = ("Relu", "Neg", "Identity")[i % 3]
        nodes.append(helper.make_node(op, [current], [f"v{i}"], name=n, doc_string=n))
        current = f"v{i}"
    nodes.append(
        helper.make_node("MatMul", [current, "W"], ["y"], name=names[0] + "!", doc_string=names[-1])
    )
    graph = helper.make_graph(
        nodes,
        "nodes",
        [models.tensor("x", [3, 8])],
        [models.tensor("y", [3, 8])],
        [models.init("W", w)],
    )
    x = _x((3, 8), 8)
    value = x
    for i in range(len(names)):
        value = (np.maximum(value, np.float32(0)), -value, value)[i % 3]
    return Case(models.finish(graph), {"x": x}, {"y": value @ w}, names)


def dims_case(names: list[str]) -> Case:
    """Every hostile text is a symbolic dim: x{i}[name_i, 3] -> relu -> y{i}[name_i, 3]."""
    nodes = [
        helper.make_node("Relu", [f"x{i}"], [f"y{i}"], name=f"relu{i}") for i in range(len(names))
    ]
    graph = helper.make_graph(
        nodes,
        "dims",
        [models.tensor(f"x{i}", [n, 3]) for i, n in enumerate(names)],
        [models.tensor(f"y{i}", [n, 3]) for i, n in enumerate(names)],
    )
    feeds = {f"x{i}": _x((1 + i % 4, 3), 200 + i) for i in range(len(names))}
    expected = {f"y{i}": np.maximum(feeds[f"x{i}"], np.float32(0)) for i in range(len(names))}
    return Case(models.finish(graph), feeds, expected, names)


def free_text_case(names: list[str]) -> Case:
    """The hostile texts in every free-text field: graph name, doc strings, producer, domain,
    metadata, value_info doc strings, and the graph name alone."""
    text = "".join(names)
    w = _x((3, 8), 9)
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "W"], ["y"], name="add", doc_string=text)],
        text,
        [helper.make_tensor_value_info("x", models.FLOAT, [3, 8], doc_string=text)],
        [helper.make_tensor_value_info("y", models.FLOAT, [3, 8], doc_string=text)],
        [models.init("W", w)],
        doc_string=text,
    )
    model = models.finish(graph)
    model.doc_string = text
    model.producer_name = text
    model.producer_version = text
    model.domain = text
    for i, n in enumerate(names):
        entry = model.metadata_props.add()
        entry.key, entry.value = f"{i}{n}", n
    x = _x((3, 8), 10)
    return Case(model, {"x": x}, {"y": x + w}, names)


CASES = {
    "inputs": inputs_case,
    "outputs": outputs_case,
    "intermediates": intermediates_case,
    "initializers": initializers_case,
    "node names": node_names_case,
    "symbolic dims": dims_case,
    "free text": free_text_case,
}


def collisions_case(marker: Path) -> Case:
    """Names that collide after sanitizing, spread over every role, with the module's own names
    among them, and an output that is an input passed through."""
    r = models.rng(11)
    big = {n: r.standard_normal((3, 8)).astype(np.float32) for n in ("a_b", "np", "_WEIGHTS", "W")}
    small = {"_check_inputs": r.standard_normal(8).astype(np.float32)}
    nodes = [
        helper.make_node("Add", ["a.b", "a_b"], ["a-b"], name="a.b"),
        helper.make_node("Mul", ["run", "np"], ["rt"], name="run"),
        helper.make_node("Add", ["a-b", "rt"], ["typing"], name="np"),
        helper.make_node("Relu", ["typing"], ["a b"], name="a_b"),
        helper.make_node("Add", ["INPUTS", "_check_inputs"], ["Outputs"], name="Outputs"),
        helper.make_node("Sub", ["a-b", "_WEIGHTS"], ["OUTPUTS"], name=""),
        helper.make_node("Identity", ["rt"], ["Path"], name=""),
        helper.make_node("Mul", ["w", "W"], ["run_feeds"], name="w"),
    ]
    graph = helper.make_graph(
        nodes,
        "collisions",
        [models.tensor(n, [3, 8]) for n in ("a.b", "run", "INPUTS", "w")],
        [
            models.tensor(n, [3, 8])
            for n in ("a b", "Outputs", "OUTPUTS", "Path", "run", "run_feeds")
        ],
        [models.init(n, v) for n, v in {**big, **small}.items()],
    )
    feeds = {n: _x((3, 8), 300 + i) for i, n in enumerate(("a.b", "run", "INPUTS", "w"))}
    a_minus_b = feeds["a.b"] + big["a_b"]
    rt_value = feeds["run"] * big["np"]
    expected = {
        "a b": np.maximum(a_minus_b + rt_value, np.float32(0)),
        "Outputs": feeds["INPUTS"] + small["_check_inputs"],
        "OUTPUTS": a_minus_b - big["_WEIGHTS"],
        "Path": rt_value,
        "run": feeds["run"],
        "run_feeds": feeds["w"] * big["W"],
    }
    names = ["a.b", "a_b", "a-b", "a b", "run", "np", "rt", "typing", "Outputs", "OUTPUTS", "Path"]
    return Case(models.finish(graph), feeds, expected, names)


# --- checks ---------------------------------------------------------------------------------


def check_source(source: str, hostile: list[str], marker: Path) -> ast.Module:
    """Nothing from the model is code: every payload sits inside a literal or a comment, no call,
    import or name comes from it, and identifiers are valid, unique and shadow nothing."""
    tree = ast.parse(source)
    spans = models.literal_spans(source)
    # Text that cannot be part of an identifier or an attribute chain appears only in literals.
    texts = [t for t in hostile if len(t) >= 2 and not re.fullmatch(r"[\w.\s]*", t, re.ASCII)]
    for text in sorted(set(texts) | set(payloads(marker))):
        start = source.find(text)
        while start != -1:
            end = start + len(text)
            assert any(
                a <= start and end <= b for a, b in spans
            ), f"payload {text!r} appears outside a string literal or comment at offset {start}"
            start = source.find(text, start + 1)

    for token in models.code_tokens(source):
        assert (
            token.string not in FORBIDDEN_NAMES
        ), f"name {token.string!r} in code, line {token.start[0]}"

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                assert alias.name.split(".")[0] in ALLOWED_IMPORTS, ast.unparse(node)
        elif isinstance(node, ast.ImportFrom):
            assert (node.module or "").split(".")[0] in ALLOWED_IMPORTS, ast.unparse(node)
        elif isinstance(node, ast.Call):
            func = node.func
            called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            assert called not in FORBIDDEN_CALLS, f"call {ast.unparse(node)[:120]}"

    # Module level: a docstring, imports, the API check, assignments, Outputs, run, run_feeds.
    statements = tree.body
    assert isinstance(statements[0], ast.Expr) and isinstance(statements[0].value, ast.Constant)
    top_names = []
    for statement in statements[1:]:
        if isinstance(statement, ast.Expr):
            call = statement.value
            assert isinstance(call, ast.Call) and ast.unparse(call.func).startswith(
                "rt."
            ), f"a module-level expression: {ast.unparse(statement)[:200]}"
        elif isinstance(statement, (ast.Assign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            for target in targets:
                assert isinstance(target, ast.Name), ast.unparse(statement)[:200]
                top_names.append(target.id)
        elif isinstance(statement, (ast.FunctionDef, ast.ClassDef)):
            top_names.append(statement.name)
        else:
            assert isinstance(statement, (ast.Import, ast.ImportFrom)), ast.unparse(statement)[:200]
    assert len(top_names) == len(set(top_names)), "a module-level name is bound twice"
    assert {n for n in top_names if n in MODULE_LEVEL} >= {
        "INPUTS",
        "OUTPUTS",
        "Outputs",
        "run",
        "run_feeds",
    }

    run = models.function_def(tree, "run")
    parameters = [a.arg for a in run.args.args]
    reserved = set(keyword.kwlist) | set(keyword.softkwlist) | set(dir(builtins)) | MODULE_LEVEL
    for name in parameters:
        assert name.isidentifier() and name not in reserved, name
        assert name not in top_names, f"parameter {name!r} shadows a module-level name"
    assert len(parameters) == len(set(parameters))

    # Inside run, every value is bound once (the input check rebinds the parameters).
    bound: list[str] = []
    for node in ast.walk(run):
        if isinstance(node, ast.Assign):
            value = node.value
            if isinstance(value, ast.Call) and ast.unparse(value.func) == "_check_inputs":
                continue
            for target in node.targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        bound.append(name.id)
    duplicates = sorted({n for n in bound if bound.count(n) > 1} - {"_"})
    assert not duplicates, f"names bound twice in run(): {duplicates}"
    for name in bound:
        assert name not in reserved or name == "_", f"run() binds reserved name {name!r}"
        assert name not in top_names, f"run() binds {name!r}, a module-level name"
        assert name not in parameters, f"run() rebinds its parameter {name!r}"
    return tree


def check_module(path: Path, case: Case, marker: Path) -> None:
    assert not marker.exists(), "compiling ran model content"
    py_compile.compile(str(path), cfile=str(path.with_suffix(".pyc")), doraise=True)
    source = path.read_text(encoding="utf-8")
    check_source(source, case.hostile, marker)

    module = models.import_generated(path)
    assert not marker.exists(), "importing ran model content"
    graph = case.model.graph
    initializers = {t.name for t in graph.initializer}
    input_names = [i.name for i in graph.input if i.name not in initializers]
    output_names = [o.name for o in graph.output]
    assert [entry[0] for entry in module.INPUTS] == input_names
    assert [entry[0] for entry in module.OUTPUTS] == output_names

    results = module.run_feeds(dict(case.feeds))
    assert list(results) == output_names
    for name in output_names:
        np.testing.assert_allclose(
            results[name], case.expected[name], rtol=1e-5, atol=1e-6, err_msg=repr(name)
        )

    outputs = module.run(*[case.feeds[name] for name in input_names])
    assert isinstance(outputs, tuple) and type(outputs) is module.Outputs
    fields = type(outputs)._fields
    assert len(fields) == len(output_names) == len(set(fields))
    for name in fields:
        assert (
            name.isidentifier() and not keyword.iskeyword(name) and not name.startswith("_")
        ), name
        assert name not in ("count", "index")
    for name, value in zip(output_names, outputs):
        np.testing.assert_allclose(
            value, case.expected[name], rtol=1e-5, atol=1e-6, err_msg=repr(name)
        )
    parameters = list(inspect.signature(module.run).parameters)
    assert len(parameters) == len(input_names)
    assert not marker.exists(), "running ran model content"


@pytest.mark.parametrize("role", sorted(CASES))
def test_hostile_names(tmp_path, role):
    marker = tmp_path / "pwned"
    case = CASES[role](hostile_names(marker))
    onnx.checker.check_model(case.model)
    path = onemodel_compile.compile_model(case.model, tmp_path / "out" / "hostile.py")
    check_module(path, case, marker)


def test_hostile_names_match_onnxruntime(tmp_path):
    """The references above are numpy; onnxruntime agrees on a model mixing the roles."""
    marker = tmp_path / "pwned"
    names = [n for n in hostile_names(marker) if "\x00" not in n]
    case = intermediates_case(names)
    path = onemodel_compile.compile_model(case.model, tmp_path / "hostile.py")
    module = models.import_generated(path)
    expected = models.ort_run(case.model, case.feeds)
    for name, value in module.run_feeds(case.feeds).items():
        np.testing.assert_allclose(value, expected[name], rtol=1e-5, atol=1e-6)


def test_names_colliding_across_roles(tmp_path):
    marker = tmp_path / "pwned"
    case = collisions_case(marker)
    path = onemodel_compile.compile_model(case.model, tmp_path / "collisions.py")
    check_module(path, case, marker)
    module = models.import_generated(path)
    results = module.run_feeds(case.feeds)
    assert not np.shares_memory(results["run"], case.feeds["run"]), "an input handed back as output"


def test_hostile_model_file_and_output_names(tmp_path):
    marker = tmp_path / "pwned"
    case = inputs_case(["x"])
    folder = tmp_path / f"dir '\"{chr(10)}x"
    model_path = models.save(case.model, folder / "m'o\"d\\e\nl.onnx")
    path = onemodel_compile.compile_model(model_path, folder / 'out\'s "mod"\\ule.py')
    check_module(path, case, marker)
    assert str(folder) not in path.read_text()


@pytest.mark.parametrize("attribute", ["auto_pad", "approximate"])
def test_hostile_attribute_strings(tmp_path, attribute):
    """Attribute strings come from the model too: refused cleanly or escaped, never run."""
    marker = tmp_path / "pwned"
    for payload in payloads(marker):
        if attribute == "auto_pad":
            node = helper.make_node("Conv", ["x", "W"], ["y"], name="conv", auto_pad=payload)
            shape, opset = [1, 1, 4, 4], 17
        else:
            node = helper.make_node("Gelu", ["x"], ["y"], name="gelu", approximate=payload)
            shape, opset = [1, 1, 4, 4], 20
        graph = helper.make_graph(
            [node],
            "attrs",
            [models.tensor("x", shape)],
            [models.tensor("y", None)],
            (
                [models.init("W", np.ones((1, 1, 3, 3), np.float32))]
                if attribute == "auto_pad"
                else []
            ),
        )
        model = models.finish(graph, opset)
        try:
            path = onemodel_compile.compile_model(model, tmp_path / "attrs.py")
        except onemodel_compile.CompileError as exc:
            assert "\n" not in str(exc) or payload not in str(exc).split("\n", 1)[0]
            assert not marker.exists()
            continue
        source = path.read_text()
        check_source(source, [payload], marker)
        try:
            module = models.import_generated(path)
            module.run(np.ones(shape, np.float32))
        except Exception:
            pass  # an unknown mode may fail at run time; it must not run the payload
        assert not marker.exists()


def test_hostile_opset_domain_stays_in_the_comment(tmp_path):
    marker = tmp_path / "pwned"
    for i, payload in enumerate(payloads(marker)):
        case = inputs_case(["x"])
        case.model.opset_import.append(helper.make_opsetid(f"evil{payload}", 1))
        path = onemodel_compile.compile_model(case.model, tmp_path / f"opsets{i}.py")
        check_module(path, case, marker)


# --- resources: sizes known before allocation (issue #17) -------------------------------------

TERA = 10**12


def _int64(name: str, *values) -> onnx.TensorProto:
    return models.init(name, np.array(values if len(values) != 1 else values[0], dtype=np.int64))


def _bomb(nodes, inputs, inits, output_type=models.FLOAT) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, "bomb", inputs, [helper.make_tensor_value_info("y", output_type, None)], inits
    )
    return models.finish(graph)


# The resource cases of issue #17 and their kin: (model, feeds, the node the error names).
BOMBS = {
    "ConstantOfShape of 10^12 elements": (
        lambda: _bomb(
            [helper.make_node("ConstantOfShape", ["s"], ["y"], name="big")],
            [],
            [models.init("s", np.array([TERA], np.int64))],
        ),
        {},
        "ConstantOfShape 'big'",
    ),
    "Reshape of such a ConstantOfShape": (
        lambda: _bomb(
            [
                helper.make_node("ConstantOfShape", ["s"], ["c"], name="big"),
                helper.make_node("Reshape", ["c", "r"], ["y"], name="flat"),
            ],
            [],
            [
                models.init("s", np.array([10**6, 10**6], np.int64)),
                models.init("r", np.array([-1], np.int64)),
            ],
        ),
        {},
        "ConstantOfShape 'big'",
    ),
    "ConstantOfShape added to an input": (
        lambda: _bomb(
            [
                helper.make_node("ConstantOfShape", ["s"], ["c"], name="big"),
                helper.make_node("Add", ["c", "x"], ["y"], name="add"),
            ],
            [models.tensor("x", [1])],
            [models.init("s", np.array([10**6, 10**6], np.int64))],
        ),
        {"x": np.ones(1, np.float32)},
        "ConstantOfShape 'big'",
    ),
    "Range to 10^12": (
        lambda: _bomb(
            [helper.make_node("Range", ["a", "b", "c"], ["y"], name="count")],
            [],
            [_int64("a", 0), _int64("b", TERA), _int64("c", 1)],
            onnx.TensorProto.INT64,
        ),
        {},
        "Range 'count'",
    ),
    "float Range to 10^12": (
        lambda: _bomb(
            [helper.make_node("Range", ["a", "b", "c"], ["y"], name="count")],
            [],
            [models.init(n, np.array(v, np.float32)) for n, v in (("a", 0), ("b", 1e12), ("c", 1))],
        ),
        {},
        "Range 'count'",
    ),
    "Tile of a constant by 10^6 x 10^6": (
        lambda: _bomb(
            [helper.make_node("Tile", ["x", "r"], ["y"], name="tiles")],
            [],
            [models.init("x", np.ones((2, 2), np.float32)), _int64("r", 10**6, 10**6)],
        ),
        {},
        "Tile 'tiles'",
    ),
    "Tile of an input, its declared type lying": (
        lambda: _lying(
            _bomb(
                [helper.make_node("Tile", ["x", "r"], ["y"], name="tiles")],
                [models.tensor("x", [2, 2])],
                [_int64("r", 10**6, 10**6)],
            )
        ),
        {"x": np.ones((2, 2), np.float32)},
        "Tile 'tiles'",
    ),
    "Expand to 10^6 x 10^6": (
        lambda: _bomb(
            [helper.make_node("Expand", ["x", "s"], ["y"], name="wide")],
            [models.tensor("x", [1])],
            [_int64("s", 10**6, 10**6)],
        ),
        {"x": np.ones(1, np.float32)},
        "Expand 'wide'",
    ),
    "Expand of a constant, its declared type lying": (
        lambda: _lying(
            _bomb(
                [helper.make_node("Expand", ["x", "s"], ["y"], name="wide")],
                [],
                [models.init("x", np.arange(3, dtype=np.float32)), _int64("s", 10**6, 10**6, 3)],
            )
        ),
        {},
        "Expand 'wide'",
    ),
    "Pad by 10^12": (
        lambda: _bomb(
            [helper.make_node("Pad", ["x", "p"], ["y"], name="margin")],
            [],
            [models.init("x", np.ones(2, np.float32)), _int64("p", TERA, TERA)],
        ),
        {},
        "Pad 'margin'",
    ),
    "OneHot of depth 10^12": (
        lambda: _bomb(
            [helper.make_node("OneHot", ["i", "d", "v"], ["y"], name="hot")],
            [],
            [_int64("i", 1, 2), _int64("d", TERA), models.init("v", np.array([0, 1], np.float32))],
        ),
        {},
        "OneHot 'hot'",
    ),
    "Resize by 10^6": (
        lambda: _bomb(
            [helper.make_node("Resize", ["x", "", "s"], ["y"], name="zoom")],
            [models.tensor("x", [1, 1, 2, 2])],
            [models.init("s", np.array([1, 1, 1e6, 1e6], np.float32))],
        ),
        {"x": np.ones((1, 1, 2, 2), np.float32)},
        "Resize 'zoom'",
    ),
    "Conv with pads of 10^6": (
        lambda: _bomb(
            [helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[10**6] * 4)],
            [models.tensor("x", [1, 1, 4, 4])],
            [models.init("w", np.ones((1, 1, 3, 3), np.float32))],
        ),
        {"x": np.ones((1, 1, 4, 4), np.float32)},
        "Conv 'conv'",
    ),
}


def _lying(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` with its output declared [1]: folding must not trust a declared size."""
    del model.graph.output[:]
    model.graph.output.append(models.tensor("y", [1]))
    return model


@pytest.mark.parametrize("variant", ["fast", "exact"])
@pytest.mark.parametrize("case", sorted(BOMBS))
def test_resource_bomb_compiles_and_fails_cleanly_at_run_time(tmp_path, case, variant):
    """Compiling takes well under the memory a constant would; importing allocates nothing the
    size of the bomb; running fails naming the node and the size, before numpy is asked."""
    import tracemalloc

    build, feeds, node = BOMBS[case]
    model = build()
    tracemalloc.start()
    try:
        path = onemodel_compile.compile_model(model, tmp_path / "bomb.py", variant)
        module = models.import_generated(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 200 << 20, f"compiling and importing traced {peak >> 20} MiB"
    weights = list(tmp_path.glob("*.safetensors"))
    assert sum(p.stat().st_size for p in weights) < 1 << 20
    with pytest.raises(runtime_support.NodeError) as caught:
        module.run_feeds(feeds)
    message = str(caught.value)
    assert node in message, message
    assert isinstance(caught.value.__cause__, runtime_support.AllocationError), message
    assert "TiB" in message and "allocation limit" in message, message


def test_the_allocation_limit_can_be_lowered_and_raised(tmp_path):
    """An Expand to 1000 x 1000 float32 (3.8 MiB) fails under a 1 MiB limit, naming the node and
    the size, and runs once the limit is raised again."""
    model = BOMBS["Expand to 10^6 x 10^6"][0]()
    model.graph.initializer[0].CopyFrom(_int64("s", 1000, 1000))
    module = models.import_generated(onemodel_compile.compile_model(model, tmp_path / "m.py"))
    x = np.full(1, 2.5, np.float32)
    previous = runtime_support.set_allocation_limit(1 << 20)
    try:
        assert runtime_support.allocation_limit() == 1 << 20
        with pytest.raises(runtime_support.NodeError, match=r"Expand 'wide'.*3\.81 MiB.*1 MiB"):
            module.run(x)
        runtime_support.set_allocation_limit(8 << 20)
        np.testing.assert_array_equal(module.run(x)[0], np.full((1000, 1000), 2.5, np.float32))
    finally:
        runtime_support.set_allocation_limit(previous)
    with pytest.raises(ValueError):
        runtime_support.set_allocation_limit(0)


def test_the_allocation_limit_from_the_environment():
    import subprocess

    code = "import runtime_support as rt; print(rt.allocation_limit())"
    for text, value in (("2G", 2 << 30), ("1536", 1536), ("0.5M", 1 << 19), ("3GiB", 3 << 30)):
        env = {**os.environ, "ONEMODEL_ALLOCATION_LIMIT": text}
        result = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
        )
        assert result.stdout.strip() == str(value), result.stderr
    for text in ("lots", "-1G", "0"):  # refused at import, naming the variable
        env = {**os.environ, "ONEMODEL_ALLOCATION_LIMIT": text}
        result = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
        )
        assert result.returncode != 0 and "ONEMODEL_ALLOCATION_LIMIT" in result.stderr, text


def test_small_constant_shapes_still_fold(tmp_path):
    """The limits leave ordinary folding alone: a small ConstantOfShape, Tile and Range are
    constants of the module, not nodes of run."""
    model = _bomb(
        [
            helper.make_node("ConstantOfShape", ["s"], ["c"], name="zeros"),
            helper.make_node("Tile", ["c", "r"], ["t"], name="tiles"),
            helper.make_node("Range", ["a", "b", "d"], ["n"], name="count"),
            helper.make_node("Cast", ["n"], ["f"], name="cast", to=models.FLOAT),
            helper.make_node("Add", ["t", "f"], ["u"], name="add"),
            helper.make_node("Add", ["u", "x"], ["y"], name="input"),
        ],
        [models.tensor("x", [4, 6])],
        [_int64("s", 4, 3), _int64("r", 1, 2), _int64("a", 0), _int64("b", 6), _int64("d", 1)],
    )
    path = onemodel_compile.compile_model(model, tmp_path / "m.py")
    source = path.read_text()
    for kernel in ("rt.constant_of_shape", "rt.tile", "rt.arange", "rt.range_"):
        assert kernel not in source, kernel
    x = _x((4, 6), 12)
    np.testing.assert_allclose(models.import_generated(path).run(x)[0], x + np.arange(6.0))


def test_a_large_constant_of_shape_folds_as_a_uniform_constant(tmp_path):
    """A ConstantOfShape past FOLD_LIMIT elements but under CONSTANT_BYTES_LIMIT is built once at
    import (rt.filled), not in every run: its result is uniform whatever its shape input (the
    light models' 9 to 67 MB filled weights were filled again on every run)."""
    from onemodel_compile import resolve

    rows = resolve.FOLD_LIMIT // 512 + 1  # (rows, 1024): past FOLD_LIMIT
    value = onnx.helper.make_tensor("v", models.FLOAT, [1], [0.5])
    model = _bomb(
        [
            helper.make_node("ConstantOfShape", ["s"], ["w"], name="weight", value=value),
            helper.make_node("MatMul", ["x", "w"], ["y"], name="product"),
        ],
        [models.tensor("x", [2, rows])],
        [_int64("s", rows, 1024)],
    )
    path = onemodel_compile.compile_model(model, tmp_path / "m.py")
    source = path.read_text()
    assert "rt.filled((%d, 1024)" % rows in source and "rt.constant_of_shape" not in source
    x = _x((2, rows), 14)
    expected = np.repeat(x.astype(np.float64).sum(axis=1, keepdims=True) * 0.5, 1024, axis=1)
    got = models.import_generated(path).run(x)[0]
    np.testing.assert_allclose(got, expected, rtol=1e-4)


def test_the_module_total_of_folded_bytes_is_bounded(tmp_path, monkeypatch):
    """Past MODULE_FOLD_BYTES, results stay at run time: a limit of 3000 bytes lets one of three
    1600-byte Tiles fold, and the module still computes all three."""
    from onemodel_compile import resolve

    monkeypatch.setattr(resolve, "MODULE_FOLD_BYTES", 3000)
    nodes, outputs = [], []
    for i in range(3):
        nodes.append(helper.make_node("Tile", ["w", f"r{i}"], [f"t{i}"], name=f"tile{i}"))
        nodes.append(helper.make_node("Add", [f"t{i}", "x"], [f"y{i}"], name=f"add{i}"))
        outputs.append(models.tensor(f"y{i}", [20, 20]))
    w = _x((10, 10), 13)
    graph = helper.make_graph(
        nodes,
        "total",
        [models.tensor("x", [20, 20])],
        outputs,
        [models.init("w", w)] + [_int64(f"r{i}", 2, 2) for i in range(3)],
    )
    path = onemodel_compile.compile_model(models.finish(graph), tmp_path / "m.py")
    assert path.read_text().count("rt.tile(") == 2  # 1600 bytes fit, 3200 do not
    x = _x((20, 20), 14)
    for result in models.import_generated(path).run(x):
        np.testing.assert_array_equal(result, np.tile(w, (2, 2)) + x)


def test_an_absurd_shape_arithmetic_is_not_followed(tmp_path):
    """A chain of Muls squaring a dim would double its symbolic expression at every node: past
    a bounded size the compiler stops reasoning about it, and the module computes it at run
    time (here 40 squarings of batch: about a trillion terms otherwise)."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("Add", ["s", "one"], ["d0"], name="plus1"),
    ]
    for i in range(40):
        nodes.append(helper.make_node("Mul", [f"d{i}", f"d{i}"], [f"d{i + 1}"], name=f"sq{i}"))
    nodes.append(helper.make_node("Identity", ["d40"], ["y"], name="out"))
    graph = helper.make_graph(
        nodes,
        "squares",
        [models.tensor("x", ["batch"])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.INT64, [1])],
        [_int64("one", 1)],
    )
    path = onemodel_compile.compile_model(models.finish(graph), tmp_path / "m.py")
    value = models.import_generated(path).run(np.ones(1, np.float32))[0]
    expected = np.array([2], np.int64)
    with np.errstate(over="ignore"):
        for _ in range(40):
            expected = expected * expected  # int64 wraps, as onnxruntime's does
    np.testing.assert_array_equal(value, expected)


# --- no silent data loss on output (issue #17) ------------------------------------------------


def _external_model(folder: Path, data_name: str, values: np.ndarray) -> Path:
    """m.onnx whose initializer W (values) lives in the external data file `data_name`."""
    tensor = models.init("W", values)
    tensor.ClearField("raw_data")
    tensor.data_location = onnx.TensorProto.EXTERNAL
    for key, value in (("location", data_name), ("offset", "0"), ("length", str(values.nbytes))):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "W"], ["y"], name="add")],
        "external",
        [models.tensor("x", list(values.shape))],
        [models.tensor("y", list(values.shape))],
        [tensor],
    )
    folder.mkdir(parents=True, exist_ok=True)
    (folder / data_name).write_bytes(values.tobytes())
    return models.save(models.finish(graph), folder / "m.onnx")


@pytest.mark.parametrize("size", [64, 4], ids=["weights file", "inline constant"])
def test_the_models_external_data_is_never_overwritten_or_removed(tmp_path, size):
    """A model keeping its data in the very file our weights would take (m.weights.safetensors
    beside m.py): a module needing weights is refused, naming the file; one that needs none
    compiles, and the stale-weights clean-up leaves the model's data alone."""
    values = np.arange(size, dtype=np.float32) / 4  # short enough to be written inline
    model_path = _external_model(tmp_path, "m.weights.safetensors", values)
    data = (tmp_path / "m.weights.safetensors").read_bytes()
    if size > 16:
        with pytest.raises(onemodel_compile.CompileError, match="m.weights.safetensors"):
            onemodel_compile.compile_model(model_path)
        assert not (tmp_path / "m.py").exists()
    else:
        path = onemodel_compile.compile_model(model_path)
        x = _x((size,), 16)
        np.testing.assert_array_equal(models.import_generated(path).run(x)[0], x + values)
    assert (tmp_path / "m.weights.safetensors").read_bytes() == data
    assert model_path.exists()


def test_a_compile_failing_while_writing_leaves_the_earlier_files(tmp_path, monkeypatch):
    """The module and its weights are staged as temporary files and moved into place only when
    both are written: a write failing on the second leaves the earlier module and weights as
    they were, and no temporary file behind."""
    from onemodel_compile import compiler

    path = onemodel_compile.compile_model(models.mlp_model(seed=1), tmp_path / "net.py")
    weights = path.with_name("net" + compiler.WEIGHTS_SUFFIX)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    original, calls = compiler._write_temporary, []

    def failing(target, data):
        calls.append(target)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return original(target, data)

    monkeypatch.setattr(compiler, "_write_temporary", failing)
    with pytest.raises(onemodel_compile.CompileError, match="No space left"):
        onemodel_compile.compile_model(models.mlp_model(seed=2), path)
    assert calls == [weights, path]
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    x = _x((2, 4), 17)
    expected = models.mlp_reference(models.mlp_model(seed=1), x)["probs"]
    np.testing.assert_allclose(models.import_generated(path).run(x)[0], expected, rtol=1e-5)
