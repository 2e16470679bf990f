"""The command line: `onemodel-compile MODEL.onnx [-o OUT.py] [--variant fast|exact] [--name NAME]
[--input-dim NAME=N] [--verbose|--quiet] [--debug]` and `onemodel-compile verify MODEL.onnx ...`
(onemodel_compile/verify.py). This module parses arguments and prints; the work is elsewhere."""

from __future__ import annotations

import argparse
import contextlib
import io
import keyword
import sys
import threading
import time
import traceback
from pathlib import Path

from onemodel_compile.compiler import compile_model
from onemodel_compile.errors import CompileError
from onemodel_compile.report import CompileReport
from onemodel_compile.variants import VARIANTS
from onemodel_compile.version import __version__

PROG = "onemodel-compile"
PROGRESS_AFTER = 2.0  # seconds: shorter compiles show no progress line
PROGRESS_EVERY = 0.25
# verify's exit codes: 0 every value within tolerance, 1 some above, 2 could not compare
VERIFY_ABOVE_TOLERANCE = 1
VERIFY_ERROR = 2


def _input_dim(text: str) -> tuple[str, int]:
    name, equals, value = text.partition("=")
    if not equals or not name or not value.strip().isdigit():
        raise argparse.ArgumentTypeError(
            f"expected NAME=SIZE (a symbolic dim and a size), got {text!r}"
        )
    return name, int(value)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", help="the ONNX model file (.onnx)")
    parser.add_argument(
        "--variant",
        choices=tuple(VARIANTS),
        default="fast",
        help="fast: as fast as numpy allows; exact: bit-identical on every machine",
    )
    parser.add_argument(
        "--input-dim",
        action="append",
        type=_input_dim,
        default=[],
        metavar="NAME=SIZE",
        help="pin the symbolic input dim NAME to SIZE at compile time (repeatable)",
    )
    loudness = parser.add_mutually_exclusive_group()
    loudness.add_argument("-v", "--verbose", action="store_true", help="print a compile report")
    loudness.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    parser.add_argument(
        "--debug", action="store_true", help="print the full traceback of an internal error"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Compile an ONNX model into a standalone Python module (numpy + runtime_support). "
        f"`{PROG} verify MODEL.onnx --help` compares a compiled model with onnxruntime.",
    )
    _common(parser)
    parser.add_argument(
        "-o", "--output", help="the module to write (default: <model stem>.py beside the model)"
    )
    parser.add_argument(
        "--name", help="module name (an identifier), used for the default output file name"
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    return parser


def build_verify_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=f"{PROG} verify",
        description="Compile MODEL.onnx, run it and onnxruntime (or onnx's ReferenceEvaluator) on "
        "the same inputs and compare every output (with --per-node every intermediate value): max "
        "abs, max rel, max ULP, worst node. Exit code 0 when every value is within the tolerance, "
        f"{VERIFY_ABOVE_TOLERANCE} when one is above it, {VERIFY_ERROR} when the comparison "
        "could not be made.",
    )
    _common(parser)
    parser.add_argument("--inputs", metavar="FILE.npz", help="inputs by name (default: generated)")
    parser.add_argument("--against", choices=("onnxruntime", "reference"), default="onnxruntime")
    parser.add_argument("--per-node", action="store_true", help="compare every intermediate value")
    parser.add_argument("--html", metavar="FILE", help="also write an HTML report with a plot")
    parser.add_argument("--atol", type=float, help="absolute tolerance (default: by dtype)")
    parser.add_argument("--rtol", type=float, help="relative tolerance (default: by dtype)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated inputs")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["verify"]:
        args = build_verify_parser().parse_args(argv[1:])
        return _guarded(args, _verify, error_code=VERIFY_ERROR)
    args = build_parser().parse_args(argv)
    return _guarded(args, _compile, error_code=1)


def _guarded(args, command, error_code: int) -> int:
    """Run `command(args)`: a user's error is one line and `error_code`; a bug of ours one line
    too (the traceback with --debug) and exit code 2."""
    try:
        return command(args)
    except CompileError as exc:
        _fail(args, f"error: {exc}")
        return error_code
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug of ours: one line, with what to report
        if args.debug:
            traceback.print_exc(file=sys.stderr)
        _fail(
            args,
            f"internal error: {type(exc).__name__}: {exc} (please report it with the model"
            + ("" if args.debug else "; --debug prints the traceback")
            + ")",
        )
        return 2


def _compile(args) -> int:
    output = _check_output(args)
    created = _missing_folder(args, output)
    report = CompileReport()
    with _Progress(args, report), _notes(args):
        path = compile_model(
            args.model,
            output,
            args.variant,
            args.name,
            input_dims=dict(args.input_dim),
            report=report,
        )
    if args.verbose:
        for line in report.lines():
            print(f"{PROG}: {line}", file=sys.stderr)
    if created is not None and not args.quiet:
        print(f"{PROG}: created the folder {created}", file=sys.stderr)
    if not args.quiet:
        print(path)
    return 0


def _verify(args) -> int:
    from onemodel_compile import verify  # onnxruntime and the reference load only here

    report = CompileReport()
    with _Progress(args, report, "verifying"), _notes(args):
        result = verify.verify(
            args.model,
            inputs=args.inputs,
            against=args.against,
            variant=args.variant,
            per_node=args.per_node,
            input_dims=dict(args.input_dim),
            atol=args.atol,
            rtol=args.rtol,
            seed=args.seed,
            report=report,
        )
    if args.verbose:
        for line in report.lines():
            print(f"{PROG}: {line}", file=sys.stderr)
    lines = verify.summary(result)
    if args.html:
        lines.append(f"report: {verify.write_html(result, args.html)}")
    if not args.quiet:
        print("\n".join(_one_line(line) for line in lines))
    elif not result.ok:
        print(f"{PROG}: {_one_line(lines[-1])}", file=sys.stderr)
    return 0 if result.ok else VERIFY_ABOVE_TOLERANCE


def _check_output(args) -> Path | None:
    """Module names that could not be imported are refused before anything is compiled."""
    if args.name is not None and not _importable(args.name):
        raise CompileError(f"--name {args.name!r}: {_why_not_importable(args.name)}")
    if args.output is None:
        return None
    output = Path(args.output)
    if output.suffix == ".py" and not _importable(output.stem):
        raise CompileError(
            f"{output}: {_why_not_importable(output.stem)}; the module could not be imported "
            "under that file name"
        )
    return output


def _importable(name: str) -> bool:
    return name.isidentifier() and not keyword.iskeyword(name)


def _why_not_importable(name: str) -> str:
    if keyword.iskeyword(name):
        return f"{name!r} is a Python keyword, not a module name"
    return f"{name!r} is not a Python identifier (letters, digits and _, not starting with a digit)"


def _missing_folder(args, output: Path | None) -> Path | None:
    """The first missing folder of `-o` (compile_model creates it: docs/decisions.md), to say so."""
    if output is None:
        return None
    missing = None
    folder = output.parent
    while folder != folder.parent and not folder.exists():
        missing, folder = folder, folder.parent
    return missing


@contextlib.contextmanager
def _notes(args):
    """--quiet: the compiler's notes on stderr (an opset conversion) are not shown."""
    if not args.quiet:
        yield
        return
    with contextlib.redirect_stderr(io.StringIO()):
        yield


class _Progress:
    """A progress line on stderr while a compile runs longer than PROGRESS_AFTER seconds:
    `onemodel-compile: compiling model.onnx: resolve (3 s)`, rewritten in place and erased at
    the end. Only on a terminal (nothing in pipes or logs) and never with --quiet."""

    def __init__(self, args, report: CompileReport, verb: str = "compiling"):
        self.stream = sys.stderr
        self.enabled = not args.quiet and _is_tty(self.stream)
        self.report, self.label = report, f"{PROG}: {verb} {Path(args.model).name}"
        self.done = threading.Event()
        self.shown = False

    def __enter__(self):
        if self.enabled:
            self.started = time.monotonic()
            self.thread = threading.Thread(target=self._show, daemon=True)
            self.thread.start()
        return self

    def __exit__(self, *exc_info):
        if self.enabled:
            self.done.set()
            self.thread.join()
            if self.shown:
                self.stream.write("\r\x1b[K")
                self.stream.flush()

    def _show(self) -> None:
        if self.done.wait(PROGRESS_AFTER):
            return
        last = ""
        while not self.done.is_set():
            elapsed = time.monotonic() - self.started
            line = f"{self.label}: {self.report.current or 'running'} ({elapsed:.0f} s)"
            if line != last:  # rewritten only when it changes
                self.stream.write(f"\r\x1b[K{line}")
                self.stream.flush()
                self.shown, last = True, line
            self.done.wait(PROGRESS_EVERY)


def _is_tty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _fail(args: argparse.Namespace, message: str) -> None:
    """Print `message` as one line that names the file at fault: messages about a node name no
    file, so they get the model's."""
    output = getattr(args, "output", None)
    files = [args.model, Path(args.model).name] + ([output] if output else [])
    if not any(name and name in message for name in files):
        kind, _, text = message.partition(": ")
        message = f"{kind}: {args.model}: {text}"
    print(f"{PROG}: {_one_line(message)}", file=sys.stderr)


def _one_line(text: str) -> str:
    """`text` with line breaks and other control characters (model text can hold any) escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
