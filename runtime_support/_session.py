"""A drop-in for `onnxruntime.InferenceSession` over generated modules (docs/session.md).

`InferenceSession(path_or_bytes_or_module, sess_options=None, providers=None, ...)` takes what
onnxruntime's takes (a path, a `Path`, model bytes) and also an imported generated module (or the
path of one). A model is compiled on first use into a cache keyed by its sha256 (and that of its
external data files), the variant and the runtime's version, unless a module compiled from the
very same file sits beside it. Compiling needs the compiler (`onemodel-compile`), imported only
then: running a cached or given module needs numpy and this package alone.

What applications use of onnxruntime's session behaves the same: `get_inputs()/get_outputs()`
(names, shapes, type strings such as 'tensor(float)'), `get_modelmeta()` (with onnxruntime's
version 2**63 - 1 for a model that sets none), providers and their options, `run` with None,
chosen or reordered output names, feeds given as lists, `io_binding` for CPU memory,
`run_with_ort_values`, profiling, and errors of the same names (InvalidArgument for a wrong dtype,
rank, dim or name, a ValueError here as well).
"""

from __future__ import annotations

import enum
import hashlib
import json
import os
import re
import threading
import time
import types
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from runtime_support._importing import import_module_file
from runtime_support._model_proto import MalformedModel, ModelInfo, read_model_info
from runtime_support._validate import InvalidInput
from runtime_support._version import __version__

CPU = "CPUExecutionProvider"
VARIANTS = ("fast", "exact")
NO_MODEL_VERSION = 2**63 - 1  # what onnxruntime reports when the model sets no model_version
CACHE_ENV = "ONEMODEL_CACHE_DIR"

# numpy dtype name -> onnxruntime's type string and ONNX's TensorProto element type number.
_ORT_TYPES = {
    "float32": ("tensor(float)", 1),
    "uint8": ("tensor(uint8)", 2),
    "int8": ("tensor(int8)", 3),
    "uint16": ("tensor(uint16)", 4),
    "int16": ("tensor(int16)", 5),
    "int32": ("tensor(int32)", 6),
    "int64": ("tensor(int64)", 7),
    "str": ("tensor(string)", 8),
    "bool": ("tensor(bool)", 9),
    "float16": ("tensor(float16)", 10),
    "float64": ("tensor(double)", 11),
    "uint32": ("tensor(uint32)", 12),
    "uint64": ("tensor(uint64)", 13),
    "complex64": ("tensor(complex64)", 14),
    "complex128": ("tensor(complex128)", 15),
    "bfloat16": ("tensor(bfloat16)", 16),
}
_NUMPY_BY_ORT = {ort: name for name, (ort, _) in _ORT_TYPES.items()}


# --- errors: onnxruntime's names, Python's usual bases ------------------------------------------


class Fail(RuntimeError):
    """onnxruntime's FAIL: the session could not be created or run."""


class InvalidArgument(InvalidInput):
    """onnxruntime's INVALID_ARGUMENT (a wrong dtype, rank, dim, input or output name); also a
    ValueError, as runtime_support.InvalidInput is."""


class NoSuchFile(Fail, FileNotFoundError):
    """onnxruntime's NO_SUCHFILE: the model file does not exist."""


class InvalidProtobuf(Fail, ValueError):
    """onnxruntime's INVALID_PROTOBUF: the bytes are not an ONNX model."""


class InvalidGraph(Fail, ValueError):
    """onnxruntime's INVALID_GRAPH: the model is not valid, or the compiler cannot compile it."""


class CompilerNotInstalled(ImportError):
    """A model must be compiled and onemodel-compile is not installed."""


def _status(code: int, name: str, message: str) -> str:
    return f"[ONNXRuntimeError] : {code} : {name} : {message}"


# --- options --------------------------------------------------------------------------------


class GraphOptimizationLevel(enum.IntEnum):
    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_LAYOUT = 3
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class ExecutionOrder(enum.IntEnum):
    DEFAULT = 0
    PRIORITY_BASED = 1
    MEMORY_EFFICIENT = 2


class _ConfigEntries:
    _kind = "Options"

    def _entries(self) -> dict:
        return self.__dict__.setdefault("_config", {})

    def _add_entry(self, key: str, value: str) -> None:
        self._entries()[str(key)] = str(value)

    def _get_entry(self, key: str) -> str:
        try:
            return self._entries()[key]
        except KeyError:
            raise RuntimeError(
                f"{self._kind} does not have configuration with key: {key}"
            ) from None


class SessionOptions(_ConfigEntries):
    """onnxruntime.SessionOptions' fields with its defaults. What each does here:

    - `intra_op_num_threads`: the thread count of BLAS and the module's kernels (0: the default),
      applied through runtime_support's thread control (docs/session.md);
    - `enable_profiling`, `profile_file_prefix`: a Chrome-trace JSON of the runs, see end_profiling;
    - `add_free_dimension_override_by_name(name, value)`: pins that symbolic input dim at compile
      time (like `onemodel-compile --input-dim`);
    - the rest is accepted and recorded, and changes nothing: there is no graph optimizer, arena,
      or parallel executor to configure (docs/session.md).
    """

    _kind = "SessionOptions"

    def __init__(self):
        self.enable_cpu_mem_arena = True
        self.enable_mem_pattern = True
        self.enable_mem_reuse = True
        self.enable_profiling = False
        self.execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self.execution_order = ExecutionOrder.DEFAULT
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.inter_op_num_threads = 0
        self.intra_op_num_threads = 0
        self.log_severity_level = -1
        self.log_verbosity_level = 0
        self.logid = ""
        self.optimized_model_filepath = ""
        self.profile_file_prefix = "onnxruntime_profile_"
        self.use_deterministic_compute = False
        self.use_per_session_threads = True
        self.free_dimension_overrides: dict[str, int] = {}

    def add_session_config_entry(self, key: str, value: str) -> None:
        self._add_entry(key, value)

    def get_session_config_entry(self, key: str) -> str:
        return self._get_entry(key)

    def add_free_dimension_override_by_name(self, dim_name: str, dim_value: int) -> None:
        self.free_dimension_overrides[str(dim_name)] = int(dim_value)

    def add_free_dimension_override_by_denotation(self, dim_denotation: str, dim_value: int):
        raise NotImplementedError(
            "free dimension overrides by denotation are not supported; "
            "use add_free_dimension_override_by_name (docs/session.md)"
        )

    def _unsupported(self, *args, **kwargs):
        raise NotImplementedError(
            "initializers, external initializers and custom operator libraries cannot be added "
            "to a compiled module; change the model and recompile (docs/session.md)"
        )

    add_initializer = add_external_initializers = register_custom_ops_library = _unsupported

    def _copy(self) -> SessionOptions:
        copy = SessionOptions()
        copy.__dict__.update(
            {k: (dict(v) if isinstance(v, dict) else v) for k, v in self.__dict__.items()}
        )
        return copy


class RunOptions(_ConfigEntries):
    """onnxruntime.RunOptions' fields with its defaults. `terminate` set before a run makes it
    fail, as onnxruntime's does; `only_execute_path_to_fetches` and the log fields change nothing
    (a generated module computes every output)."""

    _kind = "RunOptions"

    def __init__(self):
        self.log_severity_level = -1
        self.log_verbosity_level = 0
        self.logid = ""
        self.only_execute_path_to_fetches = False
        self.terminate = False

    def add_run_config_entry(self, key: str, value: str) -> None:
        self._add_entry(key, value)

    def get_run_config_entry(self, key: str) -> str:
        return self._get_entry(key)

    def add_active_adapter(self, adapter) -> None:
        raise NotImplementedError("LoRA adapters are not supported (docs/session.md)")


def get_available_providers() -> list[str]:
    return [CPU]


def get_device() -> str:
    return "CPU"


# --- the values a session hands out ---------------------------------------------------------


@dataclass(frozen=True)
class NodeArg:
    """Like onnxruntime.NodeArg: a graph input or output's name, type string and shape."""

    name: str
    type: str
    shape: list | None


@dataclass(frozen=True)
class ModelMetadata:
    """Like onnxruntime.ModelMetadata."""

    producer_name: str = ""
    graph_name: str = ""
    domain: str = ""
    description: str = ""
    graph_description: str = ""
    version: int = NO_MODEL_VERSION
    custom_metadata_map: dict | None = None

    @staticmethod
    def of(info: ModelInfo | None) -> ModelMetadata:
        if info is None:
            return ModelMetadata(custom_metadata_map={})
        return ModelMetadata(
            producer_name=info.producer_name,
            graph_name=info.graph_name,
            domain=info.domain,
            description=info.doc_string,
            graph_description=info.graph_doc_string,
            version=NO_MODEL_VERSION if info.model_version is None else info.model_version,
            custom_metadata_map=dict(info.metadata_props),
        )


def _ort_type(dtype: str) -> str:
    """'float32' -> 'tensor(float)', 'sequence(int64)' -> 'seq(tensor(int64))'."""
    for ours, theirs in (("sequence(", "seq("), ("optional(", "optional(")):
        if dtype.startswith(ours) and dtype.endswith(")"):
            return theirs + _ort_type(dtype[len(ours) : -1]) + ")"
    if dtype in _ORT_TYPES:
        return _ORT_TYPES[dtype][0]
    return "tensor(string)" if dtype in ("object", "string") else dtype


class OrtValue:
    """Like onnxruntime.OrtValue, for CPU memory: a holder of one numpy array (or a list of them
    for a sequence)."""

    def __init__(self, value):
        self._value = value

    @staticmethod
    def ortvalue_from_numpy(numpy_obj, device_type="cpu", device_id=0, vendor_id=-1) -> OrtValue:
        _cpu_only(device_type)
        return OrtValue(np.asarray(numpy_obj))

    @staticmethod
    def ortvalue_from_shape_and_type(
        shape, element_type=np.float32, device_type="cpu", device_id=0, vendor_id=-1
    ) -> OrtValue:
        _cpu_only(device_type)
        return OrtValue(np.empty(tuple(shape), dtype=_element_dtype(element_type)))

    def numpy(self):
        return self._value

    def shape(self) -> list[int]:
        return list(np.shape(self._value))

    def data_type(self) -> str:
        if isinstance(self._value, list):
            inner = self._value[0].dtype.name if self._value else "float32"
            return f"seq({_ort_type(inner)})"
        return _ort_type(_dtype_name(self._value.dtype))

    def element_type(self) -> int:
        return _ORT_TYPES[_dtype_name(self._value.dtype)][1]

    def device_name(self) -> str:
        return "cpu"

    def is_tensor(self) -> bool:
        return isinstance(self._value, np.ndarray)

    def is_tensor_sequence(self) -> bool:
        return isinstance(self._value, list)

    def is_sparse_tensor(self) -> bool:
        return False

    def has_value(self) -> bool:
        return self._value is not None

    def data_ptr(self) -> int:
        return self._value.ctypes.data

    def tensor_size_in_bytes(self) -> int:
        return self._value.nbytes

    def update_inplace(self, np_arr) -> None:
        np.copyto(self._value, np_arr)


def _dtype_name(dtype: np.dtype) -> str:
    return "str" if dtype.kind in "OUS" else dtype.name


def _element_dtype(element_type) -> np.dtype:
    """numpy dtype of onnxruntime's element_type argument (a numpy type or an ONNX number)."""
    if isinstance(element_type, int):
        for name, (_, number) in _ORT_TYPES.items():
            if number == element_type and name != "str":
                return np.dtype(name)
        raise InvalidArgument(f"unknown element type {element_type}")
    return np.dtype(element_type)


def _cpu_only(device_type) -> None:
    if str(device_type).lower() != "cpu":
        raise InvalidArgument(
            f"device {device_type!r} is not supported: generated modules run on the CPU"
        )


class SessionIOBinding:
    """Like onnxruntime.IOBinding for CPU memory: inputs bound as arrays, OrtValues or raw CPU
    pointers; outputs bound by name (allocated by the run) or to memory given in advance."""

    def __init__(self, session: InferenceSession):
        self._session = session
        self._inputs: dict[str, object] = {}
        self._outputs: dict[str, np.ndarray | None] = {}
        self._results: list = []

    def bind_cpu_input(self, name: str, arr_on_cpu) -> None:
        self._inputs[name] = arr_on_cpu

    def bind_input(self, name, device_type, device_id, element_type, shape, buffer_ptr) -> None:
        _cpu_only(device_type)
        self._inputs[name] = _wrap_pointer(buffer_ptr, element_type, shape)

    def bind_ortvalue_input(self, name: str, ortvalue) -> None:
        self._inputs[name] = ortvalue.numpy()

    def bind_output(
        self, name, device_type="cpu", device_id=0, element_type=None, shape=None, buffer_ptr=None
    ) -> None:
        _cpu_only(device_type)
        target = None if buffer_ptr is None else _wrap_pointer(buffer_ptr, element_type, shape)
        self._outputs[name] = target

    def bind_ortvalue_output(self, name: str, ortvalue) -> None:
        self._outputs[name] = ortvalue.numpy()

    def clear_binding_inputs(self) -> None:
        self._inputs.clear()

    def clear_binding_outputs(self) -> None:
        self._outputs.clear()
        self._results = []

    def synchronize_inputs(self) -> None:
        """Nothing to wait for: CPU memory."""

    def synchronize_outputs(self) -> None:
        """Nothing to wait for: CPU memory."""

    def get_outputs(self) -> list[OrtValue]:
        return [OrtValue(value) for value in self._results]

    get_outputs_as_ortvaluevector = get_outputs

    def copy_outputs_to_cpu(self) -> list:
        return [np.array(value, copy=True) for value in self._results]

    def _run(self, run_options) -> None:
        names = list(self._outputs) or None
        results = self._session.run(names, self._inputs, run_options)
        for name, value in zip(names or (), results):
            target = self._outputs[name]
            if target is not None:
                if target.shape != value.shape or target.dtype != value.dtype:
                    raise InvalidArgument(
                        _status(
                            2,
                            "INVALID_ARGUMENT",
                            f"output {name!r} is {value.dtype} {list(value.shape)}; the memory "
                            f"bound to it is {target.dtype} {list(target.shape)}",
                        )
                    )
                np.copyto(target, value)
        self._results = [
            value if self._outputs.get(name) is None else self._outputs[name]
            for name, value in zip(names or self._session._output_names, results)
        ]


def _wrap_pointer(buffer_ptr: int, element_type, shape) -> np.ndarray:
    """An array over `shape` elements of `element_type` at CPU address `buffer_ptr`."""
    import ctypes

    dtype = _element_dtype(element_type)
    shape = tuple(int(d) for d in shape)
    count = int(np.prod(shape, dtype=np.int64))
    buffer = (ctypes.c_char * (count * dtype.itemsize)).from_address(int(buffer_ptr))
    return np.frombuffer(memoryview(buffer), dtype=dtype, count=count).reshape(shape)


# --- finding, compiling and importing the module ---------------------------------------------

_HEADER_SOURCE = re.compile(r"^# Source: (?P<source>'.*'|\".*\"), sha256 (?P<sha>[0-9a-f]{64})$")
_HEADER_VARIANT = re.compile(r"Variant: (?P<variant>\w+)\.$")
_LOADED: dict[str, types.ModuleType] = {}
_LOCK = threading.Lock()


def default_cache_dir() -> Path:
    """$ONEMODEL_CACHE_DIR, else $XDG_CACHE_HOME/onemodel-compile, else ~/.cache/onemodel-compile."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "onemodel-compile"


def _module_header(path: Path) -> tuple[str, str, str] | None:
    """(source file name, model sha256, variant) from a generated module's first lines."""
    try:
        with open(path, encoding="utf-8") as handle:
            lines = [handle.readline().rstrip("\n") for _ in range(3)]
    except (OSError, UnicodeDecodeError):
        return None
    source = _HEADER_SOURCE.match(lines[1])
    variant = _HEADER_VARIANT.search(lines[2])
    if not (lines[0].startswith("# Generated by onemodel-compile") and source and variant):
        return None
    import ast

    return ast.literal_eval(source["source"]), source["sha"], variant["variant"]


def _import_file(path: Path) -> types.ModuleType:
    """Import the generated module at `path` once per process (weights are mapped once)."""
    key = str(path.resolve())
    with _LOCK:
        if key in _LOADED:
            return _LOADED[key]
        digest = hashlib.sha256(key.encode()).hexdigest()[:16]
        name = f"onemodel_session_{digest}_{re.sub(r'[^0-9A-Za-z_]', '_', path.stem)}"
        module = import_module_file(path, name)
        _LOADED[key] = module
        return module


def _compile(model: Path | bytes, target: Path, variant: str, dims: dict[str, int]) -> None:
    """Compile `model` (a path, or serialized bytes) into `target` with onemodel-compile, imported
    here and only here: everything else in this package runs without it."""
    try:
        import onemodel_compile
    except ImportError as exc:
        raise CompilerNotInstalled(
            "compiling an ONNX model needs the compiler: install onemodel-compile, or compile the "
            "model beforehand (`onemodel-compile model.onnx`) and pass the imported module or "
            f"its .py file to runtime_support.InferenceSession ({exc})"
        ) from None
    import onnx

    source = onnx.load_model_from_string(model) if isinstance(model, bytes) else model
    try:
        onemodel_compile.compile_model(source, target, variant, input_dims=dims or None)
    except onemodel_compile.CompileError as exc:
        raise InvalidGraph(_status(10, "INVALID_GRAPH", str(exc))) from exc


def _cache_key(data: bytes, folder: Path | None, info: ModelInfo, variant, dims) -> str:
    """sha256 of the model's bytes, extended with its external data files' and pinned dims when
    it has any, then the variant and this runtime's version."""
    digest = hashlib.sha256(data).hexdigest()
    if info.external_data or dims:
        combined = hashlib.sha256(digest.encode())
        for location in info.external_data:
            path = (folder or Path.cwd()) / location
            combined.update(location.encode() + b"\0")
            if path.is_file():
                combined.update(_file_sha256(path).encode())
        combined.update(json.dumps(sorted(dims.items())).encode())
        digest = combined.hexdigest()
    return f"{digest[:32]}-{variant}-{__version__}"


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _read_info(data: bytes, where: str) -> ModelInfo:
    try:
        return read_model_info(data)
    except MalformedModel as exc:
        raise InvalidProtobuf(
            _status(7, "INVALID_PROTOBUF", f"{where}: not an ONNX model ({exc})")
        ) from None


def _open_model(source, variant: str, dims: dict[str, int], cache_dir: Path | None):
    """(module, ModelInfo or None) for what InferenceSession was given."""
    if isinstance(source, types.ModuleType):
        return source, _info_beside_module(source)
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        info = _read_info(data, "model bytes")
        target = (cache_dir or default_cache_dir()) / _cache_key(data, None, info, variant, dims)
        return _compiled(data, target / "model.py", variant, dims), info
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError(
            "InferenceSession takes a model path, model bytes or a generated module, "
            f"not {type(source).__name__}"
        )
    path = Path(source)
    if not path.is_file():
        raise NoSuchFile(_status(3, "NO_SUCHFILE", f"model file {str(path)!r} does not exist"))
    if path.suffix == ".py":  # a module compiled beforehand
        module = _import_file(path)
        return module, _info_beside_module(module)
    data = path.read_bytes()
    info = _read_info(data, str(path))
    sha = hashlib.sha256(data).hexdigest()
    beside = path.with_suffix(".py")
    if not dims and beside.is_file() and _module_header(beside) == (path.name, sha, variant):
        try:
            return _import_file(beside), info
        except ImportError:  # written for another runtime API: compile a fresh one
            pass
    target = (cache_dir or default_cache_dir()) / _cache_key(data, path.parent, info, variant, dims)
    return _compiled(path, target / f"{_safe_stem(path.stem)}.py", variant, dims), info


def _safe_stem(stem: str) -> str:
    stem = re.sub(r"[^0-9A-Za-z_]", "_", stem).lstrip("_") or "model"
    return f"m_{stem}" if stem[0].isdigit() else stem


def _compiled(model: Path | bytes, target: Path, variant: str, dims) -> types.ModuleType:
    if not target.is_file():
        _compile(model, target, variant, dims)
    return _import_file(target)


def _info_beside_module(module) -> ModelInfo | None:
    """The metadata of the model a module was compiled from, when that very file (same sha256)
    sits beside the module; None otherwise."""
    path = getattr(module, "__file__", None)
    header = _module_header(Path(path)) if path else None
    if path is None or header is None:
        return None
    source, sha, _ = header
    model = Path(path).with_name(Path(source).name)
    if not model.is_file() or model.suffix == ".py":
        return None
    data = model.read_bytes()
    if hashlib.sha256(data).hexdigest() != sha:
        return None
    try:
        return read_model_info(data)
    except MalformedModel:
        return None


def _own_options(options) -> SessionOptions:
    """A copy of `options`: ours, or any object with onnxruntime's fields (onnxruntime's own
    SessionOptions, when an application still builds those)."""
    if options is None:
        return SessionOptions()
    if isinstance(options, SessionOptions):
        return options._copy()
    copy = SessionOptions()
    for name, default in vars(SessionOptions()).items():
        if name != "free_dimension_overrides":
            value = getattr(options, name, default)
            setattr(
                copy,
                name,
                type(default)(int(value)) if isinstance(default, enum.IntEnum) else value,
            )
    return copy


def _providers(providers, provider_options) -> list[str]:
    """onnxruntime's rule: providers that are not available are dropped with a warning; the CPU
    provider is always there."""
    for entry in providers or ():
        name = entry[0] if isinstance(entry, (tuple, list)) else entry
        if name != CPU:
            warnings.warn(
                f"Specified provider {name!r} is not in available provider names. "
                f"Available providers: '{CPU}'",
                UserWarning,
                stacklevel=3,
            )
    return [CPU]


def _apply_threads(count: int) -> None:
    """The one place the session sets thread counts: runtime_support's thread control, when this
    runtime has it (docs/session.md)."""
    import runtime_support

    set_num_threads = getattr(runtime_support, "set_num_threads", None)
    if count and set_num_threads is not None:
        set_num_threads(count)


# --- the session ----------------------------------------------------------------------------


class InferenceSession:
    """Run a generated module through onnxruntime's session API.

    `path_or_bytes`: an .onnx path (str or Path), serialized model bytes, an imported generated
    module, or the path of one (.py). `sess_options`, `providers` and `provider_options` as in
    onnxruntime. Keywords of our own: `variant` ('fast' or 'exact', for models compiled here) and
    `cache_dir` (default: default_cache_dir()).
    """

    def __init__(
        self,
        path_or_bytes,
        sess_options: SessionOptions | None = None,
        providers=None,
        provider_options=None,
        *,
        variant: str = "fast",
        cache_dir: str | os.PathLike | None = None,
        **kwargs,
    ):
        if variant not in VARIANTS:
            raise ValueError(f"unknown variant {variant!r}; choose one of {', '.join(VARIANTS)}")
        self._options = _own_options(sess_options)
        self._providers = _providers(providers, provider_options)
        dims = dict(getattr(self._options, "free_dimension_overrides", {}))
        cache = Path(cache_dir) if cache_dir is not None else None
        self._module, info = _open_model(path_or_bytes, variant, dims, cache)
        self._meta = ModelMetadata.of(info)
        module = self._module
        self._inputs = [self._node_arg(*entry) for entry in module.INPUTS]
        self._outputs = [self._node_arg(*entry) for entry in module.OUTPUTS]
        self._input_names = [arg.name for arg in self._inputs]
        self._output_names = [arg.name for arg in self._outputs]
        self._output_index = {name: i for i, name in enumerate(self._output_names)}
        self._dtypes = {name: dtype for name, dtype, _ in module.INPUTS}
        self._fallback = True
        self._profile: list[dict] | None = [] if self._options.enable_profiling else None
        self._profile_start_ns = time.time_ns()
        _apply_threads(self._options.intra_op_num_threads)

    @staticmethod
    def _node_arg(name, dtype, shape) -> NodeArg:
        return NodeArg(name, _ort_type(dtype), None if shape is None else list(shape))

    # -- what the model is --

    def get_inputs(self) -> list[NodeArg]:
        return list(self._inputs)

    def get_outputs(self) -> list[NodeArg]:
        return list(self._outputs)

    def get_overridable_initializers(self) -> list[NodeArg]:
        return []  # initializers are compiled into the module

    def get_modelmeta(self) -> ModelMetadata:
        return self._meta

    @property
    def module(self) -> types.ModuleType:
        """The generated module this session runs."""
        return self._module

    # -- providers and options --

    def get_providers(self) -> list[str]:
        return list(self._providers)

    def get_provider_options(self) -> dict:
        return {CPU: {}}

    def set_providers(self, providers=None, provider_options=None) -> None:
        self._providers = _providers(providers, provider_options)

    def get_session_options(self) -> SessionOptions:
        return self._options._copy()

    def disable_fallback(self) -> None:
        self._fallback = False

    def enable_fallback(self) -> None:
        self._fallback = True

    # -- running --

    def run(self, output_names, input_feed, run_options: RunOptions | None = None) -> list:
        if run_options is not None and run_options.terminate:
            raise Fail(_status(1, "FAIL", "Exiting due to terminate flag being set to true."))
        started = time.perf_counter_ns() if self._profile is not None else 0
        values = self._ordered_feeds(input_feed)
        wanted = self._wanted(output_names)
        try:
            results = self._module.run(*values)
        except InvalidArgument:
            raise
        except InvalidInput as exc:  # the module's checks: dtype, rank, dims
            raise InvalidArgument(_status(2, "INVALID_ARGUMENT", str(exc))) from None
        outputs = [results[i] for i in wanted]
        if self._profile is not None:
            self._profile.append(
                {
                    "cat": "Session",
                    "pid": os.getpid(),
                    "tid": threading.get_ident(),
                    "dur": (time.perf_counter_ns() - started) // 1000,
                    "ts": (time.time_ns() - self._profile_start_ns) // 1000,
                    "ph": "X",
                    "name": "model_run",
                    "args": {},
                }
            )
        return outputs

    def _ordered_feeds(self, input_feed) -> list:
        if not hasattr(input_feed, "keys"):
            raise TypeError(
                f"input_feed must be a dict of input name -> value, not {type(input_feed).__name__}"
            )
        unknown = [name for name in input_feed if name not in self._dtypes]
        if unknown:
            raise InvalidArgument(
                _status(
                    2,
                    "INVALID_ARGUMENT",
                    f"Invalid input name: {unknown[0]!r} (the model's inputs: {self._input_names})",
                )
            )
        missing = [name for name in self._input_names if name not in input_feed]
        if missing:
            raise InvalidInput(
                f"Required inputs ({missing}) are missing from input feed ({list(input_feed)})."
            )
        return [self._as_value(name, input_feed[name]) for name in self._input_names]

    def _as_value(self, name: str, value):
        """numpy arrays pass as they are (the module checks them); other values (lists, numbers)
        become arrays of the input's declared type, as onnxruntime converts them."""
        if isinstance(value, np.ndarray) or value is None:
            return value
        dtype = self._dtypes[name]
        if hasattr(value, "numpy") and callable(value.numpy):  # an OrtValue, ours or theirs
            return value.numpy()
        if dtype.startswith(("sequence(", "optional(")):
            return value
        try:
            return np.asarray(value, dtype=None if dtype in ("?", "str") else dtype)
        except (TypeError, ValueError) as exc:
            raise InvalidArgument(
                _status(2, "INVALID_ARGUMENT", f"input {name!r}: cannot convert to {dtype}: {exc}")
            ) from None

    def _wanted(self, output_names) -> list[int]:
        if not output_names:
            return list(range(len(self._output_names)))
        if isinstance(output_names, str):
            raise TypeError("output_names must be a list of output names or None, not a str")
        wanted = []
        for name in output_names:
            if name not in self._output_index:
                raise InvalidArgument(
                    _status(
                        2,
                        "INVALID_ARGUMENT",
                        f"Invalid output name: {name!r} (the model's outputs: {self._output_names})",
                    )
                )
            wanted.append(self._output_index[name])
        return wanted

    def run_with_ort_values(self, output_names, input_dict_ort_values, run_options=None) -> list:
        feeds = {name: value.numpy() for name, value in input_dict_ort_values.items()}
        return [OrtValue(value) for value in self.run(output_names, feeds, run_options)]

    def io_binding(self) -> SessionIOBinding:
        return SessionIOBinding(self)

    def run_with_iobinding(self, iobinding: SessionIOBinding, run_options=None) -> None:
        iobinding._run(run_options)

    # -- profiling --

    def end_profiling(self) -> str:
        """Write the runs' profile (Chrome trace JSON, one event per run) and return its file
        name, as onnxruntime does; '' when profiling is off."""
        if self._profile is None:
            return ""
        stamp = time.strftime("%Y-%m-%d_%H-%M-%S")
        name = f"{self._options.profile_file_prefix}_{stamp}.json"
        with open(name, "w", encoding="utf-8") as handle:
            json.dump(self._profile, handle)
        self._profile = None
        return name

    def get_profiling_start_time_ns(self) -> int:
        return self._profile_start_ns
