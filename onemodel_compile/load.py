"""Stage 1: read an ONNX model (path or ModelProto), check it, and settle its opset."""

from __future__ import annotations

import hashlib
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import onnx
import onnx.version_converter

from onemodel_compile.errors import ModelError, UnsupportedError

MIN_OPSET = 7
MAX_OPSET = 28
MIN_CONVERTIBLE_OPSET = 1  # opsets 1 to 6 are converted to MIN_OPSET at load
DEFAULT_DOMAINS = ("", "ai.onnx")
# Other domains and the opsets of theirs the compiler reads (onnxruntime 1.31.1's ranges).
DOMAIN_OPSETS = {"ai.onnx.ml": (1, 5), "com.microsoft": (1, 1)}
# Operators onnxruntime defines in the default domain where onnx has no schema (at that opset):
# its transformer optimizer writes them (docs/com-microsoft.md). onnx's checker sees them in a
# domain of their own; ops/microsoft.py compiles them.
ONNXRUNTIME_DEFAULT_DOMAIN = (
    "SimplifiedLayerNormalization",
    "LayerNormalization",
    "Affine",
    "Crop",
    "DynamicSlice",
    "ImageScaler",
    "MeanVarianceNormalization",
    "ParametricSoftplus",
    "ScaledTanh",
    "Scale",
    "ThresholdedRelu",
)
ONNXRUNTIME_CHECK_DOMAIN = "onnxruntime.default"
# The compiler's own domain (ops/fused.py): what its rewrites create, never read from a model.
INTERNAL_DOMAINS = ("onemodel.fused",)


@dataclass
class LoadedModel:
    proto: onnx.ModelProto
    source_name: str  # file name (never an absolute path) or "<ModelProto>"
    sha256: str  # of the serialized model
    opset: int | None  # of the default domain; None when the model imports none


def load(model: str | Path | onnx.ModelProto | LoadedModel) -> LoadedModel:
    """Read and check `model`; external data is resolved relative to the model file. A model
    loaded before is taken as it is (tests use this to alter what the later stages see)."""
    if isinstance(model, LoadedModel):
        return model
    if isinstance(model, onnx.ModelProto):
        proto, source_name = model, "<ModelProto>"
        serialized = proto.SerializeToString()
    else:
        path = Path(model)
        if not path.exists():
            raise ModelError(f"{path}: no such file")
        if not path.is_file():
            raise ModelError(f"{path}: not a file")
        try:
            serialized = path.read_bytes()
            proto = onnx.load_model_from_string(serialized)
            if _has_external_data(proto):
                with warnings.catch_warnings():  # (unknown keys: a warning of two lines)
                    warnings.simplefilter("ignore")
                    onnx.load_external_data_for_model(proto, str(path.parent))
        except (OSError, ValueError, onnx.onnx_cpp2py_export.checker.ValidationError) as exc:
            raise ModelError(f"{path}: cannot read the model: {_one_line(exc)}") from None
        except Exception as exc:  # protobuf's DecodeError and friends
            raise ModelError(f"{path}: not an ONNX model ({_one_line(exc)})") from None
        source_name = path.name
    label = source_name
    if not proto.HasField("graph"):
        raise ModelError(f"{label}: not an ONNX model (no graph)")
    _check_text(proto, label)
    opset = default_opset(proto, label)
    _check_domain_opsets(proto, label)
    try:
        onnx.checker.check_model(_onnxruntime_ops_aside(_with_shape_fields(proto)))
    except onnx.checker.ValidationError as exc:
        raise ModelError(f"{label}: invalid model: {_one_line(exc)}") from None
    if opset is not None and opset < MIN_OPSET:
        proto, opset = _convert(proto, opset, label), MIN_OPSET
    # The recorded sha256 is the original file's (or ModelProto's), even when converted.
    return LoadedModel(proto, source_name, hashlib.sha256(serialized).hexdigest(), opset)


def _with_shape_fields(proto: onnx.ModelProto) -> onnx.ModelProto:
    """`proto` for onnx's checker, which wants a shape on every main-graph input and output:
    onnxruntime runs models that declare none (rank unknown), and so does the compiler. Where one
    is missing, a copy gets an empty shape field, only for the check."""
    infos = list(proto.graph.input) + list(proto.graph.output)
    if all(_has_shape(info.type) for info in infos):
        return proto
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    for info in list(copy.graph.input) + list(copy.graph.output):
        tensor = info.type.tensor_type if info.type.HasField("tensor_type") else None
        if tensor is not None and not tensor.HasField("shape"):
            tensor.shape.SetInParent()
    return copy


def _check_text(message, label: str, where: str = "model") -> None:
    """Refuse a text field that is not valid UTF-8: protobuf hands such a field to Python as
    bytes, not str, which no later stage expects (onnx's checker fails on it with a traceback)."""
    for field, value in message.ListFields():
        items = value if _repeated(field) else [value]
        if field.type == field.TYPE_MESSAGE:
            for item in items:
                _check_text(item, label, f"{where}.{field.name}")
        elif field.type == field.TYPE_STRING:
            if any(isinstance(item, bytes) for item in items):
                raise ModelError(f"{label}: not an ONNX model ({where}.{field.name} is not UTF-8)")


def _repeated(field) -> bool:
    if hasattr(field, "is_repeated"):  # protobuf 6 and later
        return field.is_repeated
    return field.label == field.LABEL_REPEATED


def _onnxruntime_ops_aside(proto: onnx.ModelProto) -> onnx.ModelProto:
    """`proto` for onnx's checker, or a copy where the default-domain nodes onnx has no schema for
    but onnxruntime defines (ONNXRUNTIME_DEFAULT_DOMAIN) sit in a domain of their own, which the
    checker does not know and so does not check."""
    opset = next((e.version for e in proto.opset_import if e.domain in DEFAULT_DOMAINS), None)

    def unknown_to_onnx(node: onnx.NodeProto) -> bool:
        if node.domain not in DEFAULT_DOMAINS or node.op_type not in ONNXRUNTIME_DEFAULT_DOMAIN:
            return False
        try:
            onnx.defs.get_schema(node.op_type, opset or 1, "")
        except onnx.defs.SchemaError:
            return True
        return False

    def graphs(graph: onnx.GraphProto):
        yield graph
        for node in graph.node:
            for attribute in node.attribute:
                if attribute.HasField("g"):
                    yield from graphs(attribute.g)
                for sub in attribute.graphs:
                    yield from graphs(sub)

    if not any(unknown_to_onnx(n) for g in graphs(proto.graph) for n in g.node):
        return proto
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    for graph in graphs(copy.graph):
        for node in graph.node:
            if unknown_to_onnx(node):
                node.domain = ONNXRUNTIME_CHECK_DOMAIN
    copy.opset_import.append(onnx.helper.make_opsetid(ONNXRUNTIME_CHECK_DOMAIN, 1))
    return copy


def _has_shape(type_proto: onnx.TypeProto) -> bool:
    return not type_proto.HasField("tensor_type") or type_proto.tensor_type.HasField("shape")


def _convert(proto: onnx.ModelProto, opset: int, label: str) -> onnx.ModelProto:
    """`proto` (a checked model at default-domain opset 1 to 6) converted to MIN_OPSET by
    onnx.version_converter, said in one line on stderr; a conversion that fails is one line."""
    how = f"opset {MIN_OPSET} with onnx.version_converter"
    try:
        converted = onnx.version_converter.convert_version(proto, MIN_OPSET)
        onnx.checker.check_model(converted)
    except Exception as exc:  # the converter's RuntimeError (a C++ assertion), checker errors
        raise UnsupportedError(
            f"{label}: opset {opset} cannot be converted to {how}: {_converter_reason(exc)}"
        ) from None
    print(f"{label}: opset {opset} converted to {how}", file=sys.stderr)
    return converted


def default_opset(proto: onnx.ModelProto, label: str) -> int | None:
    """The default domain's opset, None when the model imports none (onnxmltools writes XGBoost
    models that use ai.onnx.ml alone); one outside the supported range is refused."""
    seen: dict[str, int] = {}
    for entry in proto.opset_import:  # the stages read one version per domain: which one?
        domain = "" if entry.domain in DEFAULT_DOMAINS else entry.domain
        if seen.setdefault(domain, entry.version) != entry.version:
            raise ModelError(
                f"{label}: invalid model: it imports domain {domain or 'ai.onnx'!r} twice, at "
                f"opsets {seen[domain]} and {entry.version}"
            )
    versions = {entry.domain: entry.version for entry in proto.opset_import}
    opset = next((versions[d] for d in DEFAULT_DOMAINS if d in versions), None)
    if opset is None:
        return None
    if not MIN_CONVERTIBLE_OPSET <= opset <= MAX_OPSET:
        raise UnsupportedError(
            f"{label}: opset {opset} is outside the supported range {MIN_OPSET} to {MAX_OPSET} "
            f"(opsets {MIN_CONVERTIBLE_OPSET} to {MIN_OPSET - 1} are converted to {MIN_OPSET})"
        )
    return opset


def source_files(model) -> set[Path]:
    """The files compiling `model` reads, resolved: the model file and the external data files it
    names (none for a ModelProto). The compiler never writes over or removes one of them."""
    if not isinstance(model, (str, Path)):
        return set()
    path, found = Path(model), set()
    try:
        found.add(path.resolve())
        proto = onnx.load_model(str(path), load_external_data=False)
        for tensor in onnx.external_data_helper._get_all_tensors(proto):
            if tensor.data_location == onnx.TensorProto.EXTERNAL:
                found.update(
                    (path.parent / entry.value).resolve()
                    for entry in tensor.external_data
                    if entry.key == "location" and entry.value
                )
    except Exception:  # unreadable: compiling it fails before anything is written
        pass
    return found


def _check_domain_opsets(proto: onnx.ModelProto, label: str) -> None:
    """Refuse an opset of a known non-default domain outside the range the compiler reads, and
    the compiler's own domain."""
    for entry in proto.opset_import:
        if entry.domain in INTERNAL_DOMAINS:
            raise UnsupportedError(
                f"{label}: the model imports domain {entry.domain!r}, which is the compiler's "
                f"own (its operators exist only inside the compiler)"
            )
        low, high = DOMAIN_OPSETS.get(entry.domain, (None, None))
        if low is not None and not low <= entry.version <= high:
            raise UnsupportedError(
                f"{label}: {entry.domain} opset {entry.version} is outside the supported range "
                f"{low} to {high}"
            )


def _has_external_data(proto: onnx.ModelProto) -> bool:
    return any(
        tensor.data_location == onnx.TensorProto.EXTERNAL
        for tensor in onnx.external_data_helper._get_all_tensors(proto)
    )


def _converter_reason(exc: BaseException) -> str:
    """The converter's message without the C++ file, line and assertion text before it:
    `.../BaseConverter.h:66: adapter_lookup: Assertion `false` failed: No Adapter From Version $1
    for Split` -> `No Adapter From Version $1 for Split`."""
    message = _one_line(exc)
    return message.rsplit(" failed: ", 1)[-1] if " failed: " in message else message


def _one_line(exc: BaseException) -> str:
    """The exception's message on one line (checker messages span several)."""
    return " ".join(str(exc).split()) or type(exc).__name__


def pin_input_dims(loaded: LoadedModel, dims: dict[str, int] | None) -> LoadedModel:
    """`loaded` with the symbolic dims named in `dims` set to those sizes wherever the main graph
    declares them (inputs, outputs, value_info), before resolve sees them (`--input-dim`). The
    caller's ModelProto is left as it was; a name no graph input uses is an error."""
    if not dims:
        return loaded
    declared = {
        dim.dim_param
        for info in loaded.proto.graph.input
        if info.type.HasField("tensor_type")
        for dim in info.type.tensor_type.shape.dim
        if dim.dim_param
    }
    unknown = sorted(set(dims) - declared)
    if unknown:
        raise ModelError(
            f"{loaded.source_name}: --input-dim {unknown[0]}: no graph input has a symbolic dim of "
            f"that name (the inputs' symbolic dims: {', '.join(sorted(declared)) or 'none'})"
        )
    for name, size in dims.items():
        if not isinstance(size, int) or size < 0:
            raise ModelError(f"{loaded.source_name}: --input-dim {name}={size}: not a size")
    proto = onnx.ModelProto()
    proto.CopyFrom(loaded.proto)
    graph = proto.graph
    for info in [*graph.input, *graph.output, *graph.value_info]:
        if info.type.HasField("tensor_type"):
            for dim in info.type.tensor_type.shape.dim:
                if dim.dim_param in dims:
                    dim.dim_value = dims[dim.dim_param]  # clears dim_param (a oneof)
    return LoadedModel(proto, loaded.source_name, loaded.sha256, loaded.opset)
