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

    module = models.import_module(path)
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
    module = models.import_module(path)
    expected = models.ort_run(case.model, case.feeds)
    for name, value in module.run_feeds(case.feeds).items():
        np.testing.assert_allclose(value, expected[name], rtol=1e-5, atol=1e-6)


def test_names_colliding_across_roles(tmp_path):
    marker = tmp_path / "pwned"
    case = collisions_case(marker)
    path = onemodel_compile.compile_model(case.model, tmp_path / "collisions.py")
    check_module(path, case, marker)
    module = models.import_module(path)
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
            module = models.import_module(path)
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
