"""The pipeline end to end: load -> ir -> resolve -> the variant's passes -> emit, and writing
the files."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import onnx

from onemodel_compile import ir
from onemodel_compile.emit import EmittedModule, emit_module
from onemodel_compile.errors import CompileError
from onemodel_compile.load import LoadedModel, load, pin_input_dims, source_files
from onemodel_compile.names import sanitize
from onemodel_compile.report import CompileReport
from onemodel_compile.resolve import resolve
from onemodel_compile.variants import Variant, variant_named
from runtime_support._importing import import_module_file

WEIGHTS_SUFFIX = ".weights.safetensors"


def generate(
    model: str | Path | onnx.ModelProto | LoadedModel,
    variant: str | Variant = "fast",
    weights_name: str = "model" + WEIGHTS_SUFFIX,
    input_dims: dict[str, int] | None = None,
    report: CompileReport | None = None,
) -> EmittedModule:
    """Compile `model` to source text and weights bytes, writing nothing. `input_dims` pins
    symbolic input dims by name; `report`, when given, is filled in (`--verbose`)."""
    variant = variant_named(variant)
    report = report if report is not None else CompileReport()
    with report.stage("load"):
        loaded = pin_input_dims(load(model), input_dims)
    with report.stage("ir"):
        graph = ir.from_onnx(loaded)
    with report.stage("resolve"):
        resolved = resolve(graph, variant)
    for rewrite in variant.passes:
        with report.stage("optimize"):
            resolved = rewrite(resolved)
    report.note_graph(graph, resolved)
    with report.stage("emit"):
        emitted = emit_module(graph, resolved, variant, weights_name)
    report.note_emitted(emitted)
    return emitted


def compile_model(
    model: str | Path | onnx.ModelProto | LoadedModel,
    output: str | Path | None = None,
    variant: str | Variant = "fast",
    name: str | None = None,
    *,
    input_dims: dict[str, int] | None = None,
    report: CompileReport | None = None,
) -> Path:
    """Compile `model` and write `<output>.py` (and its weights file beside it); return the path.

    Default output: `<name or model stem>.py` beside the model (the current folder for a
    ModelProto; a LoadedModel is verify's, already read). Files are written atomically: a failed
    compile leaves existing files untouched. `input_dims` pins symbolic input dims by name;
    `report` is filled in when given.
    """
    output = _output_path(model, output, name)
    _refuse_overwriting_model(model, output)
    emitted = generate(model, variant, output.stem + WEIGHTS_SUFFIX, input_dims, report)
    files = [(output, emitted.source.encode("utf-8"))]
    if emitted.weights is not None and emitted.weights_name is not None:
        # The weights go in place first: should moving the module then fail, the earlier module
        # refuses the new weights at import (their sha256 differs) instead of running with them.
        files.insert(0, (output.with_name(emitted.weights_name), emitted.weights))
        _refuse_overwriting_model(model, files[0][0])
    _write_all(files)
    if emitted.weights is None:
        # the module now in place needs no weights: an earlier compile's file would be stale
        stale = output.with_name(output.stem + WEIGHTS_SUFFIX)
        if stale.is_file() and not _is_model(model, stale):
            stale.unlink()
    return output


def _is_model(model, path: Path) -> bool:
    """Whether `path` is the model file or one of its external data files."""
    if not isinstance(model, (str, Path)):
        return False
    if Path(model).resolve() == path.resolve():
        return True
    return path.exists() and path.resolve() in source_files(model)


def load_compiled(model: str | Path | onnx.ModelProto, variant: str = "fast"):
    """Compile `model` into a fresh temporary folder and return the imported module. The folder
    is removed when the interpreter exits (the module's weights stay mapped until then)."""
    folder = Path(tempfile.mkdtemp(prefix="onemodel-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    stem = "model" if isinstance(model, onnx.ModelProto) else sanitize(Path(model).stem, "model")
    path = compile_model(model, folder / f"{stem}.py", variant)
    module_name = f"onemodel_generated.{folder.name.replace('-', '_')}.{stem}"
    return import_module_file(path, module_name)


def _output_path(model, output, name) -> Path:
    if output is not None:
        output = Path(output)
        if output.suffix != ".py":
            raise CompileError(f"{output}: the output must be a .py file")
        return output
    stem = name or (Path(model).stem if isinstance(model, (str, Path)) else "model")
    folder = Path(model).parent if isinstance(model, (str, Path)) else Path.cwd()
    return folder / f"{sanitize(stem, 'model')}.py"


def _refuse_overwriting_model(model, path: Path) -> None:
    if _is_model(model, path):
        raise CompileError(f"{path}: the output would overwrite the model")


def _write_all(files: list[tuple[Path, bytes]]) -> None:
    """Write every file or, as far as the file system allows, none: each content goes to a
    temporary file beside its target first, and only then are they moved into place."""
    folder = files[0][0].parent
    for parent in (folder, *folder.parents):
        if parent.exists():
            if not parent.is_dir():
                raise CompileError(
                    f"{parent}: cannot write {files[-1][0].name} there: not a folder"
                )
            break
    staged: list[tuple[str, Path]] = []
    target = folder
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for target, _ in files:
            if target.is_dir():
                raise CompileError(f"{target}: cannot write: a folder is in the way")
        for target, data in files:
            staged.append((_write_temporary(target, data), target))
        for temporary, target in staged:
            os.replace(temporary, target)
    except OSError as exc:
        raise CompileError(f"{target}: cannot write: {exc.strerror or exc}") from None
    finally:
        for temporary, _ in staged:
            Path(temporary).unlink(missing_ok=True)


def _write_temporary(path: Path, data: bytes) -> str:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.chmod(temporary, 0o644)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return temporary
