"""Per-node overhead of generated code against onnxruntime's, in microseconds (issue #12 point 2).

    .venv/bin/python -m tools.node_overhead [--threads 1] [--budget 1.5] [--chain 33] [ONLY...]

Two tables, both sides timed in alternating blocks in one process (tools.bench_pair.interleaved):

- *Chains*: for each operator, a model of one node and one of `--chain` nodes of it in a row on a
  [1, 16] float32 tensor. The difference over the added nodes is the cost of one node (the slope),
  the one-node model's time less one slope the fixed cost of a call (input check, outputs). The
  floor is the same slope of bare numpy calls on the same tensor (`np.negative(x, out=x)`
  unrolled): what a node cannot go below in a numpy module.
- *Models*: the tiny bench models (tools/bench_models), their run time, their statements in the
  generated `run`, and microseconds per statement after a one-Identity model's cost (ours) and per
  ONNX node (onnxruntime's, its graph before its own fusions).

The machine's OPENBLAS_CORETYPE is removed as in tools.bench_pair. Timings, not a test.
"""

from __future__ import annotations

import argparse
import re
import time
from functools import partial
from pathlib import Path

from tools.bench import blas_own_choice  # noqa: E402 (imports no numpy)

blas_own_choice()

import numpy as np  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

import runtime_support  # noqa: E402
from onemodel_compile import compile_model  # noqa: E402
from tools.bench import ROOT, import_generated  # noqa: E402
from tools.bench_models import MODELS  # noqa: E402
from tools.bench_pair import interleaved, session  # noqa: E402

WIDTH = 16
# name -> (op type, extra inputs as (name, value), attributes); each node keeps [1, WIDTH] float32
CHAINS = {
    "Relu": ("Relu", (), {}),
    "Add (constant)": ("Add", (("c", np.full((WIDTH,), 0.5, np.float32)),), {}),
    "Mul (constant)": ("Mul", (("c", np.full((WIDTH,), 0.999, np.float32)),), {}),
    "Sigmoid": ("Sigmoid", (), {}),
    "Tanh": ("Tanh", (), {}),
    "Transpose": ("Transpose", (), {"perm": [1, 0]}),  # [1, 16] <-> [16, 1]
    "Reshape (constant)": ("Reshape", (("s", np.array([-1, WIDTH], np.int64)),), {}),
    "Softmax": ("Softmax", (), {"axis": -1}),
}
TINY = (
    "tiny_mlp_b1",
    "sklearn_mlp_b64",
    "lenet_b1",
    "mlp_b1",
    "gpt_step",
    "gru_tagger",
    "lstm_tagger",
)
_STATEMENT = re.compile(r"^        # (?!\+ |= )\S+ '", re.MULTILINE)  # a node's first comment line


def chain_model(op: str, extra, attributes, length: int):
    """x [1, WIDTH] -> `length` nodes of `op`, each on the previous one's output -> y."""
    nodes, initializers, previous = [], [], "x"
    for name, value in extra:
        initializers.append(helper.make_tensor(name, _onnx_type(value), value.shape, value.ravel()))
    for i in range(length):
        output = "y" if i == length - 1 else f"t{i}"
        inputs = [previous, *(name for name, _ in extra)]
        nodes.append(helper.make_node(op, inputs, [output], name=f"n{i}", **attributes))
        previous = output
    shape = [1, WIDTH] if op != "Transpose" or length % 2 == 0 else [WIDTH, 1]
    graph = helper.make_graph(
        nodes,
        f"chain_{op}_{length}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, WIDTH])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _onnx_type(value: np.ndarray) -> int:
    return TensorProto.INT64 if value.dtype == np.int64 else TensorProto.FLOAT


def statements(path: Path) -> int:
    """Nodes that remain statements of the generated `run` (fused and folded ones do not)."""
    return len(_STATEMENT.findall(path.read_text()))


def compiled(model, cache: Path, name: str):
    path = Path(compile_model(model, cache / f"{name}.py"))
    return import_generated(path), statements(path)


def _unrolled(length: int, scratch: np.ndarray):
    """`length` bare numpy calls in a row (np.negative in place), as a function: the floor."""
    body = "".join("    negative(x, out=x)\n" for _ in range(length))
    scope = {"negative": np.negative, "x": scratch}
    exec(f"def calls():\n{body}", scope)  # noqa: S102 (our own text, no model content)
    return scope["calls"]


def chains(cache: Path, threads: int, length: int, budget: float, only) -> list[str]:
    x = np.linspace(-1, 1, WIDTH, dtype=np.float32).reshape(1, WIDTH)
    rows = [
        f"| node (chain of {length} on [1, {WIDTH}] float32) | ours us/node | onnxruntime us/node "
        "| ours / ort | numpy floor us | ours fixed us | ort fixed us | statements |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, (op, extra, attributes) in CHAINS.items():
        if only and not any(o.lower() in label.lower() for o in only):
            continue
        (one, _), (many, kept) = (
            compiled(chain_model(op, extra, attributes, n), cache, f"chain_{op}_{n}")
            for n in (1, length)
        )
        short, long = (
            session(chain_model(op, extra, attributes, n).SerializeToString(), threads)
            for n in (1, length)
        )
        feeds = {"x": x}
        for module, sess in ((one, short), (many, long)):  # same values as onnxruntime's
            np.testing.assert_allclose(module.run(x)[0], sess.run(None, feeds)[0], rtol=1e-5)
        (ours1, ours_n, ort1, ort_n, floor1, floor_n), _ = interleaved(
            [
                partial(one.run, x),
                partial(many.run, x),
                partial(short.run, None, feeds),
                partial(long.run, None, feeds),
                _unrolled(1, x.copy()),
                _unrolled(length, x.copy()),
            ],
            budget,
        )
        ours, ort = (ours_n - ours1) / (length - 1), (ort_n - ort1) / (length - 1)
        floor = (floor_n - floor1) / (length - 1)
        rows.append(
            f"| {label} | {1e6 * ours:.2f} | {1e6 * ort:.2f} | {ours / ort:.2f} "
            f"| {1e6 * floor:.2f} | {1e6 * (ours1 - ours):.2f} | {1e6 * (ort1 - ort):.2f} "
            f"| {kept} |"
        )
    return rows


def models(cache: Path, threads: int, budget: float, only, fixed: float) -> list[str]:
    rows = [
        "| model | ours us | onnxruntime us | ratio | ONNX nodes | our statements "
        "| ours us/statement | ort us/node |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for spec in MODELS:
        if spec.name not in TINY or (only and not any(o in spec.name for o in only)):
            continue
        built = spec.build()
        module, kept = compiled(built.model, cache, spec.name)
        sess = session(built.model.SerializeToString(), threads)
        arguments = [built.feeds[name] for name, _, _ in module.INPUTS]
        (ours, ort), _ = interleaved(
            [partial(module.run, *arguments), partial(sess.run, None, built.feeds)], budget
        )
        nodes = len(built.model.graph.node)
        rows.append(
            f"| {spec.name} | {1e6 * ours:.1f} | {1e6 * ort:.1f} | {ours / ort:.2f} | {nodes} "
            f"| {kept} | {1e6 * (ours - fixed) / max(kept, 1):.2f} | {1e6 * ort / nodes:.2f} |"
        )
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("only", nargs="*", help="chains or models whose name contains one")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--budget", type=float, default=1.5)
    parser.add_argument("--chain", type=int, default=33)
    parser.add_argument("--cache", type=Path, default=ROOT / ".cache" / "node-overhead")
    args = parser.parse_args(argv)
    runtime_support.set_num_threads(args.threads)
    args.cache.mkdir(parents=True, exist_ok=True)
    started = time.strftime("%H:%M UTC", time.gmtime())
    print(f"threads {args.threads}; started {started}; load {_load()}\n")
    table = chains(args.cache, args.threads, args.chain, args.budget, args.only)
    print("\n".join(table), flush=True)
    fixed = _fixed_cost(args.cache)
    print(f"\nFixed cost of a call of ours (a one-Identity model): {1e6 * fixed:.2f} us\n")
    print("\n".join(models(args.cache, args.threads, args.budget, args.only, fixed)))
    print(f"\nload at the end {_load()}")
    return 0


def _fixed_cost(cache: Path) -> float:
    """A generated module's cost of a call that computes nothing: Identity of its input (the
    input check, the output's ownership copy and the Outputs tuple)."""
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"], name="n0")],
        "identity",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, WIDTH])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, WIDTH])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    module, _ = compiled(model, cache, "identity")
    x = np.zeros((1, WIDTH), np.float32)
    (median,), _ = interleaved([partial(module.run, x)], 0.5)
    return median


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


if __name__ == "__main__":
    raise SystemExit(main())
