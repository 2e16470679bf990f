"""Where a generated module's run spends its time, per statement: every simple statement of `run`
(and of the functions nested in it: If branches, Loop bodies) timed by itself.

    .venv/bin/python -m tools.line_times NAME_OR_MODEL.onnx [--threads 1] [--runs 300] [--top 25]

NAME is a benchmark model of tools/bench_models (or a light_*.onnx of tools/bench); a path to an
.onnx file gets the feeds of tools.heldout_models when it is one of those models, else seeded
random feeds of its input types (symbolic dims 1). The module is compiled into .cache/line-times/,
its source parsed, and each simple statement `S` of run wrapped as `_lt.enter(); S; _lt.leave(n)`
(what the module's code object then runs, compiled under its own file name); `leave` books the
statement's time less the time of the statements nested in it (a branch's statements inside the
If's assignment), so the times add up to the run. The cost of one empty wrapped statement is
measured first and taken off each statement's figure (the tool's own floor, about 0.2-0.4 us);
a statement at the numpy floor shows about 0.3-1 us.

Why not sys.settrace: a line event costs about as much as the tiny statements it times, and its
overhead falls unevenly on the lines (the statement after a call pays for the return event).
Timings, not a test; the figures are per run, the median over blocks of runs.
"""

from __future__ import annotations

import argparse
import ast
import statistics
import sys
import time
from pathlib import Path

from tools.bench import blas_own_choice  # noqa: E402 (imports no numpy)

blas_own_choice()  # OpenBLAS picks its kernels, before numpy loads

import numpy as np  # noqa: E402

import runtime_support  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
_SIMPLE = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Delete, ast.Return)


class LineTimer:
    """enter/leave around each statement: exclusive seconds per statement number."""

    def __init__(self, count: int) -> None:
        self.seconds = [0.0] * count
        self.children = [0] * count  # nested statements run (each adds the tool's cost)
        self.stack: list[list[float]] = []
        self.clock = time.perf_counter

    def enter(self) -> None:
        self.stack.append([self.clock(), 0.0, 0])

    def leave(self, number: int) -> None:
        now = self.clock()
        start, nested, children = self.stack.pop()
        elapsed = now - start
        self.seconds[number] += elapsed - nested
        self.children[number] += children
        if self.stack:
            self.stack[-1][1] += elapsed
            self.stack[-1][2] += 1 + children

    def reset(self) -> None:
        self.seconds = [0.0] * len(self.seconds)
        self.children = [0] * len(self.children)


class _Wrap(ast.NodeTransformer):
    """Wraps the simple statements of every body in enter/leave; records each one's line."""

    def __init__(self) -> None:
        self.lines: list[int] = []

    def _body(self, body: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for statement in body:
            if isinstance(statement, _SIMPLE):
                number = len(self.lines)
                self.lines.append(statement.lineno)
                out.append(ast.parse("_lt.enter()").body[0])
                if isinstance(statement, ast.Return):
                    # the value is computed, then left: return it from a temporary
                    value = statement.value or ast.Constant(None)
                    out.append(ast.Assign([ast.Name("_lt_value", ast.Store())], value))
                    out.append(ast.parse(f"_lt.leave({number})").body[0])
                    out.append(ast.Return(ast.Name("_lt_value", ast.Load())))
                    continue
                out.append(statement)
                out.append(ast.parse(f"_lt.leave({number})").body[0])
            else:
                out.append(self.visit(statement))
        return out

    def generic_visit(self, node):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                setattr(node, field, self._body(body))
        for handler in getattr(node, "handlers", ()):
            handler.body = self._body(handler.body)
        return node


def instrument(module) -> tuple[LineTimer, list[int]]:
    """Replaces module.run by its wrapped copy; returns the timer and each statement's line."""
    path = Path(module.__file__)
    tree = ast.parse(path.read_text())
    run = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "run")
    wrap = _Wrap()
    run.body = wrap._body(run.body)
    run.decorator_list = []
    single = ast.Module(body=[run], type_ignores=[])
    ast.fix_missing_locations(single)
    timer = LineTimer(len(wrap.lines))
    module.__dict__["_lt"] = timer
    exec(compile(single, str(path), "exec"), module.__dict__)
    return timer, wrap.lines


def _node_of_lines(source: list[str]) -> dict[int, str]:
    """line -> the provenance comment above it (the node the statement belongs to)."""
    owner, current = {}, "(module)"
    for number, text in enumerate(source, start=1):
        stripped = text.strip()
        if stripped.startswith("# ") and "(opset" in stripped:
            current = stripped[2:]
        elif stripped.startswith("def "):
            current = stripped
        owner[number] = current
    return owner


def _floor(runs: int) -> tuple[float, float]:
    """Seconds an empty wrapped statement books for itself, and what one empty wrapped statement
    nested in it adds to its own figure (a branch's If assignment pays that per statement of
    the branch), both measured as the wrapped module runs them."""
    timer = LineTimer(2)
    for _ in range(runs):
        timer.enter()
        timer.enter()
        timer.leave(0)
        timer.leave(1)
    nested, outer = (s / runs for s in timer.seconds)
    return nested, outer - nested


def _random_feeds(model) -> dict[str, np.ndarray]:
    from onnx import helper

    rng = np.random.default_rng(0)
    initializers = {i.name for i in model.graph.initializer}
    feeds = {}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        tensor = value.type.tensor_type
        dtype = helper.tensor_dtype_to_np_dtype(tensor.elem_type)
        shape = [d.dim_value if d.HasField("dim_value") else 1 for d in tensor.shape.dim]
        if np.issubdtype(dtype, np.floating):
            feeds[value.name] = rng.standard_normal(shape).astype(dtype)
        else:
            feeds[value.name] = rng.integers(0, 2, shape).astype(dtype)
    return feeds


def model_and_feeds(name: str):
    """(ModelProto or path, feeds) of a bench name or an .onnx path."""
    import onnx

    if name.endswith(".onnx"):
        from tools import heldout_models

        key = heldout_models._key(Path(name))
        if key is not None:
            return Path(name), heldout_models.FEEDS[key](np.random.default_rng(0))
        return Path(name), _random_feeds(onnx.load(name))
    from tools.bench_pair import models

    for model_name, build in models():
        if model_name == name:
            built = build()
            return built.model, built.feeds
    raise SystemExit(f"no benchmark model named {name!r}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.line_times", description=__doc__)
    parser.add_argument("model")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--blocks", type=int, default=5)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--variant", default="fast", choices=("fast", "exact"))
    args = parser.parse_args(argv)

    from onemodel_compile import compile_model
    from tools.bench import import_generated

    model, feeds = model_and_feeds(args.model)
    folder = ROOT / ".cache" / "line-times"
    folder.mkdir(parents=True, exist_ok=True)
    stem = "lt_" + "".join(c if c.isalnum() else "_" for c in Path(args.model).stem)
    path = compile_model(model, folder / f"{stem}.py", args.variant)
    module = import_generated(path)
    source = path.read_text().splitlines()
    owners = _node_of_lines(source)
    with runtime_support.threads(args.threads):
        for _ in range(20):
            module.run_feeds(feeds)
        plain = []
        for _ in range(args.blocks):
            started = time.perf_counter()
            for _ in range(args.runs):
                module.run_feeds(feeds)
            plain.append((time.perf_counter() - started) / args.runs)
        timer, lines = instrument(module)
        for _ in range(20):
            module.run_feeds(feeds)
        blocks = []
        for _ in range(args.blocks):
            timer.reset()
            for _ in range(args.runs):
                module.run_feeds(feeds)
            blocks.append([s / args.runs for s in timer.seconds])
    floor, around = _floor(100_000)
    per_statement = [
        statistics.median(column)
        - floor
        - (children / args.runs) * around  # the last block's counts
        for column, children in zip(zip(*blocks), timer.children)
    ]
    total = sum(per_statement)
    print(
        f"{args.model}: run {statistics.median(plain) * 1e6:.1f} us uninstrumented; "
        f"{len(lines)} statements timed, their sum {total * 1e6:.1f} us after the tool's floor "
        f"of {floor * 1e6:.2f} us each; {args.threads} thread(s)"
    )
    by_node: dict[str, float] = {}
    for line, seconds in zip(lines, per_statement):
        by_node[owners.get(line, "?")] = by_node.get(owners.get(line, "?"), 0.0) + seconds
    order = sorted(range(len(lines)), key=lambda i: -per_statement[i])
    print(f"\n{'us':>8}  line  statement (its node)")
    for i in order[: args.top]:
        text = source[lines[i] - 1].strip()
        print(
            f"{per_statement[i] * 1e6:8.2f}  {lines[i]:4d}  {text[:70]}  ({owners[lines[i]][:60]})"
        )
    print(f"\n{'us':>8}  node")
    for node, seconds in sorted(by_node.items(), key=lambda item: -item[1])[: args.top]:
        print(f"{seconds * 1e6:8.2f}  {node[:100]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
