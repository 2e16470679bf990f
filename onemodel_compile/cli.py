"""The command line: `onemodel-compile MODEL.onnx [-o OUT.py] [--variant fast|exact] [--name NAME]`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from onemodel_compile.compiler import compile_model
from onemodel_compile.errors import CompileError
from onemodel_compile.variants import VARIANTS
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
        choices=tuple(VARIANTS),
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
        _fail(args, f"error: {exc}")
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug of ours: one line, with what to report
        _fail(
            args,
            f"internal error: {type(exc).__name__}: {exc} (please report it with the model)",
        )
        return 2
    print(path)
    return 0


def _fail(args: argparse.Namespace, message: str) -> None:
    """Print `message` as one line that names the file at fault: messages about a node name no
    file, so they get the model's."""
    files = [args.model, Path(args.model).name] + ([args.output] if args.output else [])
    if not any(name and name in message for name in files):
        kind, _, text = message.partition(": ")
        message = f"{kind}: {args.model}: {text}"
    print(f"{PROG}: {_one_line(message)}", file=sys.stderr)


def _one_line(text: str) -> str:
    """`text` with line breaks and other control characters (model text can hold any) escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
