"""The command line: `onemodel-compile MODEL.onnx [-o OUT.py] [--variant fast|exact] [--name NAME]`."""

from __future__ import annotations

import argparse
import sys

from onemodel_compile.compiler import compile_model
from onemodel_compile.errors import CompileError
from onemodel_compile.ops.registry import VARIANTS
from onemodel_compile.version import __version__

PROG = "onemodel-compile"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Compile an ONNX model into a standalone Python module (numpy + runtime_support).",
    )
    parser.add_argument("model", help="the ONNX model file (.onnx)")
    parser.add_argument(
        "-o", "--output", help="the module to write (default: <model stem>.py beside the model)"
    )
    parser.add_argument(
        "--variant",
        choices=VARIANTS,
        default="fast",
        help="fast: as fast as numpy allows; exact: bit-identical on every machine",
    )
    parser.add_argument("--name", help="module name, used for the default output file name")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        path = compile_model(args.model, args.output, args.variant, args.name)
    except CompileError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug of ours: one line, with what to report
        print(
            f"{PROG}: internal error: {type(exc).__name__}: {exc} "
            f"(please report it with the model)",
            file=sys.stderr,
        )
        return 2
    print(path)
    return 0
