"""runtime_support.InferenceSession against onnxruntime.InferenceSession (docs/contract.md, "The
generated module"; docs/session.md): every API point below is one function written once against
a namespace, called with `onnxruntime` and with `runtime_support` on the same model files, and the
two results must be equal (arrays to float32 rounding). An application switches by changing the
class (and its module) name, so this is what it would see."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from onnx import helper

import runtime_support
from tests import models

onnxruntime = pytest.importorskip("onnxruntime")
CPU = ["CPUExecutionProvider"]
X = models.rng(7).standard_normal((3, 4)).astype(np.float32)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The model files both sessions open, and a private compile cache for ours."""
    folder = tmp_path_factory.mktemp("session_api")
    plain = models.mlp_model()  # sets no model_version, doc strings or metadata
    rich = models.mlp_model(seed=3)
    rich.model_version = 7
    rich.domain = "ai.example.tests"
    rich.doc_string = "a two-layer perceptron\nwith a second line"
    rich.graph.doc_string = "the graph's own doc string"
    rich.producer_version = "1.2.3"
    helper.set_model_props(rich, {"author": "the tests", "license": "MIT", "empty": ""})
    paths = {
        "plain": models.save(plain, folder / "plain.onnx"),
        "rich": models.save(rich, folder / "rich.onnx"),
    }
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(runtime_support._session.CACHE_ENV, str(folder / "cache"))
        patch.chdir(folder)  # profiles are written to the current folder, as onnxruntime does
        yield paths


def session(ns, path, *args, **kwargs):
    kwargs.setdefault("providers", CPU)
    return ns.InferenceSession(str(path), *args, **kwargs)


def error_kind(call) -> str:
    """The name applications catch: onnxruntime's class name, or the builtin base for the
    errors onnxruntime raises as plain Python exceptions (ValueError, RuntimeError, TypeError)."""
    try:
        call()
    except Exception as exc:  # noqa: BLE001 - the kind is the result
        name = type(exc).__name__
        if name in ("InvalidArgument", "Fail", "NoSuchFile", "InvalidProtobuf", "InvalidGraph"):
            return name
        for base in (ValueError, TypeError, RuntimeError):
            if isinstance(exc, base):
                return base.__name__
        return name
    return "no error"


def describe(args):
    return [(a.name, a.type, list(a.shape)) for a in args]


# --- the API points: name -> function(ns, files) ----------------------------------------------

POINTS = {}


def point(name):
    def register(function):
        assert name not in POINTS, name
        POINTS[name] = function
        return function

    return register


# construction


@point("from a str path")
def _(ns, f):
    return session(ns, f["plain"]).run(None, {"x": X})


@point("from a pathlib.Path")
def _(ns, f):
    return ns.InferenceSession(Path(f["plain"]), providers=CPU).run(None, {"x": X})


@point("from model bytes")
def _(ns, f):
    return ns.InferenceSession(f["rich"].read_bytes(), providers=CPU).run(None, {"x": X})


@point("with sess_options")
def _(ns, f):
    options = ns.SessionOptions()
    options.intra_op_num_threads = 1
    options.graph_optimization_level = ns.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.execution_mode = ns.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3
    return session(ns, f["plain"], sess_options=options).run(None, {"x": X})


@point("sess_options as the second positional argument")
def _(ns, f):
    options = ns.SessionOptions()
    options.inter_op_num_threads = 1
    return ns.InferenceSession(str(f["plain"]), options, CPU).run(["hidden"], {"x": X})


@point("without providers")
def _(ns, f):
    return ns.InferenceSession(str(f["plain"])).get_providers()


@point("providers as (name, options) pairs")
def _(ns, f):
    return session(ns, f["plain"], providers=[("CPUExecutionProvider", {})]).get_providers()


@point("provider_options beside providers")
def _(ns, f):
    return session(ns, f["plain"], provider_options=[{}]).get_provider_options()


@point("an unavailable provider falls back to the CPU with a warning")
def _(ns, f):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        providers = session(ns, f["plain"], providers=["CUDAExecutionProvider", *CPU])
    return providers.get_providers(), any("CUDAExecutionProvider" in str(w.message) for w in caught)


@point("a missing file raises NoSuchFile")
def _(ns, f):
    return error_kind(lambda: ns.InferenceSession(str(f["plain"].with_name("missing.onnx"))))


@point("bytes that are no model raise InvalidProtobuf")
def _(ns, f):
    return error_kind(lambda: ns.InferenceSession(b"\xff\xfenot a model at all", providers=CPU))


# inputs and outputs


@point("get_inputs names")
def _(ns, f):
    return [a.name for a in session(ns, f["plain"]).get_inputs()]


@point("get_inputs shapes")
def _(ns, f):
    return [a.shape for a in session(ns, f["plain"]).get_inputs()]


@point("get_inputs type strings")
def _(ns, f):
    return [a.type for a in session(ns, f["plain"]).get_inputs()]


@point("get_outputs names")
def _(ns, f):
    return [a.name for a in session(ns, f["plain"]).get_outputs()]


@point("get_outputs shapes")
def _(ns, f):
    return [a.shape for a in session(ns, f["plain"]).get_outputs()]


@point("get_outputs type strings")
def _(ns, f):
    return [a.type for a in session(ns, f["plain"]).get_outputs()]


@point("str() of a NodeArg")
def _(ns, f):
    return [str(a) for a in session(ns, f["plain"]).get_outputs()]


@point("get_overridable_initializers")
def _(ns, f):
    return session(ns, f["plain"]).get_overridable_initializers()


# metadata


def meta(ns, f, which="rich"):
    return session(ns, f[which]).get_modelmeta()


@point("get_modelmeta producer_name")
def _(ns, f):
    return meta(ns, f).producer_name


@point("get_modelmeta graph_name")
def _(ns, f):
    return meta(ns, f).graph_name


@point("get_modelmeta domain")
def _(ns, f):
    return meta(ns, f).domain


@point("get_modelmeta description (the model's doc_string)")
def _(ns, f):
    return meta(ns, f).description


@point("get_modelmeta graph_description")
def _(ns, f):
    return meta(ns, f).graph_description


@point("get_modelmeta version")
def _(ns, f):
    return meta(ns, f).version


@point("get_modelmeta version of a model that sets none (2**63 - 1)")
def _(ns, f):
    return meta(ns, f, "plain").version


@point("get_modelmeta custom_metadata_map")
def _(ns, f):
    return meta(ns, f).custom_metadata_map


@point("get_modelmeta of a model without metadata")
def _(ns, f):
    m = meta(ns, f, "plain")
    return (m.producer_name, m.domain, m.description, m.graph_description, m.custom_metadata_map)


# providers and options


@point("get_providers")
def _(ns, f):
    return session(ns, f["plain"]).get_providers()


@point("get_provider_options")
def _(ns, f):
    return session(ns, f["plain"]).get_provider_options()


@point("set_providers")
def _(ns, f):
    s = session(ns, f["plain"])
    s.set_providers(CPU)
    return s.get_providers(), s.run(["probs"], {"x": X})


@point("disable_fallback and enable_fallback")
def _(ns, f):
    s = session(ns, f["plain"])
    return s.disable_fallback(), s.enable_fallback(), s.run(None, {"x": X})


@point("get_available_providers lists the CPU provider")
def _(ns, f):
    return "CPUExecutionProvider" in ns.get_available_providers()


SESSION_FIELDS = (
    "enable_cpu_mem_arena enable_mem_pattern enable_mem_reuse enable_profiling execution_mode "
    "execution_order graph_optimization_level inter_op_num_threads intra_op_num_threads "
    "log_severity_level log_verbosity_level logid optimized_model_filepath profile_file_prefix "
    "use_deterministic_compute use_per_session_threads"
).split()


def fields(options, names):
    return {
        name: int(v) if hasattr(v, "__int__") and not isinstance(v, bool) else v
        for name in names
        for v in [getattr(options, name)]
    }


@point("SessionOptions defaults")
def _(ns, f):
    return fields(ns.SessionOptions(), SESSION_FIELDS)


@point("get_session_options gives back what was set")
def _(ns, f):
    options = ns.SessionOptions()
    options.intra_op_num_threads = 2
    options.graph_optimization_level = ns.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.logid = "tests"
    got = session(ns, f["plain"], options).get_session_options()
    return fields(got, SESSION_FIELDS), got is options


@point("session config entries")
def _(ns, f):
    options = ns.SessionOptions()
    options.add_session_config_entry("session.example", "1")
    return options.get_session_config_entry("session.example"), error_kind(
        lambda: options.get_session_config_entry("session.missing")
    )


# running


@point("run(None, feeds)")
def _(ns, f):
    return session(ns, f["plain"]).run(None, {"x": X})


@point("run([], feeds)")
def _(ns, f):
    return session(ns, f["plain"]).run([], {"x": X})


@point("run with one chosen output")
def _(ns, f):
    return session(ns, f["plain"]).run(["hidden"], {"x": X})


@point("run with reordered outputs")
def _(ns, f):
    return session(ns, f["plain"]).run(["hidden", "probs"], {"x": X})


@point("run with an output named twice")
def _(ns, f):
    return session(ns, f["plain"]).run(["probs", "probs"], {"x": X})


@point("run with a tuple of output names")
def _(ns, f):
    return session(ns, f["plain"]).run(("probs",), {"x": X})


@point("run with run_options")
def _(ns, f):
    options = ns.RunOptions()
    options.log_severity_level = 3
    options.logid = "tests"
    options.only_execute_path_to_fetches = True
    return session(ns, f["plain"]).run(["probs"], {"x": X}, options)


@point("RunOptions defaults and config entries")
def _(ns, f):
    options = ns.RunOptions()
    options.add_run_config_entry("run.example", "yes")
    names = ("log_severity_level", "log_verbosity_level", "logid", "only_execute_path_to_fetches")
    return fields(options, names + ("terminate",)), options.get_run_config_entry("run.example")


@point("run_options.terminate fails the run")
def _(ns, f):
    options = ns.RunOptions()
    options.terminate = True
    return error_kind(lambda: session(ns, f["plain"]).run(None, {"x": X}, options))


@point("a feed given as nested lists")
def _(ns, f):
    return session(ns, f["plain"]).run(None, {"x": X.tolist()})


@point("outputs are fresh writable arrays")
def _(ns, f):
    s = session(ns, f["plain"])
    first = s.run(None, {"x": X})
    flags = [(a.flags.writeable, type(a).__name__) for a in first]
    first[0][...] = -1
    return flags, s.run(None, {"x": X})


# errors


@point("a wrong dtype raises InvalidArgument")
def _(ns, f):
    return error_kind(lambda: session(ns, f["plain"]).run(None, {"x": X.astype(np.float64)}))


@point("a wrong rank raises InvalidArgument")
def _(ns, f):
    return error_kind(lambda: session(ns, f["plain"]).run(None, {"x": X[None]}))


@point("a wrong static dim raises InvalidArgument")
def _(ns, f):
    return error_kind(lambda: session(ns, f["plain"]).run(None, {"x": X[:, :3]}))


@point("an unknown input name raises InvalidArgument")
def _(ns, f):
    return error_kind(lambda: session(ns, f["plain"]).run(None, {"x": X, "extra": X}))


@point("a missing input raises ValueError")
def _(ns, f):
    return error_kind(lambda: session(ns, f["plain"]).run(None, {}))


@point("an unknown output name raises InvalidArgument")
def _(ns, f):
    return error_kind(lambda: session(ns, f["plain"]).run(["nope"], {"x": X}))


# io_binding and OrtValue


@point("io_binding: bind_cpu_input, bind_output, copy_outputs_to_cpu")
def _(ns, f):
    s = session(ns, f["plain"])
    binding = s.io_binding()
    binding.bind_cpu_input("x", X)
    binding.bind_output("probs")
    binding.bind_output("hidden", "cpu")
    binding.synchronize_inputs()
    s.run_with_iobinding(binding)
    binding.synchronize_outputs()
    return binding.copy_outputs_to_cpu()


@point("io_binding: get_outputs as OrtValues")
def _(ns, f):
    s = session(ns, f["plain"])
    binding = s.io_binding()
    binding.bind_cpu_input("x", X)
    binding.bind_output("hidden")
    s.run_with_iobinding(binding)
    return [(v.numpy(), v.shape(), v.data_type(), v.device_name()) for v in binding.get_outputs()]


@point("io_binding: OrtValue input and preallocated output")
def _(ns, f):
    s = session(ns, f["plain"])
    binding = s.io_binding()
    binding.bind_ortvalue_input("x", ns.OrtValue.ortvalue_from_numpy(X))
    out = ns.OrtValue.ortvalue_from_shape_and_type([3, 3], np.float32)
    binding.bind_ortvalue_output("probs", out)
    s.run_with_iobinding(binding)
    return out.numpy()


@point("io_binding: inputs and outputs as CPU pointers")
def _(ns, f):
    s = session(ns, f["plain"])
    x = np.ascontiguousarray(X)
    hidden = np.zeros((3, 8), np.float32)
    binding = s.io_binding()
    binding.bind_input("x", "cpu", 0, np.float32, list(x.shape), x.ctypes.data)
    binding.bind_output("hidden", "cpu", 0, np.float32, list(hidden.shape), hidden.ctypes.data)
    s.run_with_iobinding(binding)
    return hidden


@point("io_binding: clear_binding_outputs")
def _(ns, f):
    s = session(ns, f["plain"])
    binding = s.io_binding()
    binding.bind_cpu_input("x", X)
    binding.bind_output("probs")
    binding.clear_binding_outputs()
    binding.bind_output("hidden")
    s.run_with_iobinding(binding)
    return binding.copy_outputs_to_cpu()


@point("run_with_ort_values")
def _(ns, f):
    s = session(ns, f["plain"])
    values = s.run_with_ort_values(["hidden"], {"x": ns.OrtValue.ortvalue_from_numpy(X)})
    return [
        (v.numpy(), v.shape(), v.data_type(), v.element_type(), v.is_tensor(), v.has_value())
        for v in values
    ]


@point("OrtValue.ortvalue_from_shape_and_type")
def _(ns, f):
    value = ns.OrtValue.ortvalue_from_shape_and_type([2, 5], np.int64)
    return value.shape(), value.data_type(), value.element_type(), value.numpy().dtype


# profiling


@point("end_profiling without profiling")
def _(ns, f):
    return session(ns, f["plain"]).end_profiling()


@point("end_profiling writes a JSON trace")
def _(ns, f):
    options = ns.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = f"profile_{ns.__name__}"
    s = session(ns, f["plain"], options)
    s.run(None, {"x": X})
    name = s.end_profiling()
    trace = json.loads(Path(name).read_text())
    Path(name).unlink()
    return (
        name.startswith(options.profile_file_prefix) and name.endswith(".json"),
        isinstance(trace, list) and all("ph" in e and "dur" in e for e in trace),
        any(e["name"] == "model_run" for e in trace),
    )


@point("get_profiling_start_time_ns")
def _(ns, f):
    return isinstance(session(ns, f["plain"]).get_profiling_start_time_ns(), int)


# --- the test ---------------------------------------------------------------------------------


def same(ours, theirs, where="") -> None:
    if isinstance(theirs, np.ndarray):
        assert isinstance(ours, np.ndarray), (where, type(ours))
        assert (ours.dtype, ours.shape) == (theirs.dtype, theirs.shape), where
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6, err_msg=where)
    elif isinstance(theirs, (list, tuple)):
        assert isinstance(ours, (list, tuple)) and len(ours) == len(theirs), (where, ours, theirs)
        for i, (o, t) in enumerate(zip(ours, theirs)):
            same(o, t, f"{where}[{i}]")
    elif isinstance(theirs, dict):
        assert isinstance(ours, dict) and ours.keys() == theirs.keys(), (where, ours, theirs)
        for key in theirs:
            same(ours[key], theirs[key], f"{where}[{key!r}]")
    else:
        assert ours == theirs, (where, ours, theirs)


def test_there_are_at_least_48_points():
    assert len(POINTS) >= 48, len(POINTS)


@pytest.mark.parametrize("name", sorted(POINTS))
def test_api_point_behaves_like_onnxruntime(files, name):
    theirs = POINTS[name](onnxruntime, files)
    ours = POINTS[name](runtime_support, files)
    same(ours, theirs, name)


# --- what only ours promises -------------------------------------------------------------------


def test_errors_are_value_errors_too(files):
    s = runtime_support.InferenceSession(str(files["plain"]))
    for feeds in ({"x": X.astype(np.float64)}, {"x": X[None]}, {"x": X, "y": X}):
        with pytest.raises(ValueError) as info:
            s.run(None, feeds)
        assert isinstance(info.value, runtime_support.InvalidArgument)
        assert isinstance(info.value, runtime_support.InvalidInput)
        assert "'x'" in str(info.value) or "'y'" in str(info.value), str(info.value)


def test_a_module_still_works(files, tmp_path):
    """InferenceSession(module), as before: no model beside it, so empty metadata."""
    import onemodel_compile

    path = onemodel_compile.compile_model(files["plain"], tmp_path / "plain.py")
    s = runtime_support.InferenceSession(models.import_generated(path))
    same(s.run(None, {"x": X}), session(onnxruntime, files["plain"]).run(None, {"x": X}))
    assert s.get_modelmeta().version == 2**63 - 1 and s.get_modelmeta().graph_name == ""
    assert describe(s.get_inputs()) == describe(session(onnxruntime, files["plain"]).get_inputs())
