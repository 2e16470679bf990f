"""runtime_support.InferenceSession's own promises (docs/session.md): the compile cache and its key,
a module compiled beside the model, the compiler imported only to compile, and the variant."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import external_data_helper

import runtime_support
from onemodel_compile import compile_model
from runtime_support import _session
from tests import models

X = models.rng(11).standard_normal((2, 4)).astype(np.float32)
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv(_session.CACHE_ENV, str(folder))
    return folder


def count_compiles(monkeypatch) -> list:
    calls = []
    real = _session._compile

    def counting(*args):
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(_session, "_compile", counting)
    return calls


def test_compiles_once_into_a_cache_keyed_by_sha256_variant_and_version(
    tmp_path, cache, monkeypatch
):
    path = models.save(models.mlp_model(), tmp_path / "mlp.onnx")
    calls = count_compiles(monkeypatch)
    first = runtime_support.InferenceSession(path)
    second = runtime_support.InferenceSession(str(path))
    assert len(calls) == 1 and first.module is second.module
    (folder,) = cache.iterdir()
    sha = __import__("hashlib").sha256(path.read_bytes()).hexdigest()
    assert folder.name == f"{sha[:32]}-fast-{runtime_support.__version__}"
    assert sorted(p.name for p in folder.iterdir()) == ["mlp.py", "mlp.weights.safetensors"]
    expected = models.mlp_reference(models.mlp_model(), X)
    np.testing.assert_allclose(first.run(["probs"], {"x": X})[0], expected["probs"], rtol=1e-5)

    exact = runtime_support.InferenceSession(path, variant="exact")
    assert len(calls) == 2 and len(list(cache.iterdir())) == 2
    assert "Variant: exact." in Path(exact.module.__file__).read_text().splitlines()[2]
    # the same bytes from memory share the compile key (the module's name differs: model.py)
    runtime_support.InferenceSession(path.read_bytes())
    assert len(calls) == 3 and len(list(cache.iterdir())) == 2


def test_a_changed_model_gets_a_new_compile(tmp_path, cache, monkeypatch):
    path = models.save(models.mlp_model(seed=1), tmp_path / "mlp.onnx")
    calls = count_compiles(monkeypatch)
    before = runtime_support.InferenceSession(path).run(None, {"x": X})
    models.save(models.mlp_model(seed=2), path)
    after = runtime_support.InferenceSession(path).run(None, {"x": X})
    assert len(calls) == 2 and len(list(cache.iterdir())) == 2
    assert not np.allclose(before[0], after[0])


def test_external_data_is_part_of_the_key(tmp_path, cache, monkeypatch):
    model = models.mlp_model()
    external_data_helper.convert_model_to_external_data(
        model, all_tensors_to_one_file=True, location="mlp.data", size_threshold=0
    )
    path = tmp_path / "mlp.onnx"
    onnx.save_model(model, path)
    calls = count_compiles(monkeypatch)
    reference = models.mlp_reference(models.mlp_model(), X)["probs"]
    got = runtime_support.InferenceSession(path).run(["probs"], {"x": X})[0]
    np.testing.assert_allclose(got, reference, rtol=1e-5)
    data = bytearray((tmp_path / "mlp.data").read_bytes())
    data[:4] = np.float32(100).tobytes()  # W1[0, 0] changes; the .onnx file does not
    (tmp_path / "mlp.data").write_bytes(bytes(data))
    changed = runtime_support.InferenceSession(path).run(["probs"], {"x": X})[0]
    assert len(calls) == 2 and not np.allclose(changed, got)


def test_a_module_compiled_beside_the_model_is_used(tmp_path, cache, monkeypatch):
    path = models.save(models.mlp_model(), tmp_path / "mlp.onnx")
    beside = compile_model(path)
    calls = count_compiles(monkeypatch)
    session = runtime_support.InferenceSession(path)
    assert calls == [] and Path(session.module.__file__) == beside
    assert session.get_modelmeta().graph_name == "mlp"
    # compiled for another variant, or from another model: compiled into the cache instead
    runtime_support.InferenceSession(path, variant="exact")
    compile_model(models.mlp_model(seed=5), beside)
    runtime_support.InferenceSession(path)
    assert len(calls) == 2


def test_a_module_file_and_a_module(tmp_path, cache, monkeypatch):
    path = models.save(models.mlp_model(), tmp_path / "mlp.onnx")
    module_path = compile_model(path, tmp_path / "build" / "mlp.py")
    calls = count_compiles(monkeypatch)
    from_file = runtime_support.InferenceSession(module_path)
    from_module = runtime_support.InferenceSession(from_file.module)
    assert calls == []
    for session in (from_file, from_module):
        np.testing.assert_array_equal(session.run(None, {"x": X})[0], from_file.module.run(X)[0])
        # the model is not beside the module: no metadata to read
        assert session.get_modelmeta().graph_name == ""


def test_metadata_of_a_module_beside_its_model(tmp_path):
    model = models.mlp_model()
    model.model_version = 4
    path = models.save(model, tmp_path / "mlp.onnx")
    module = models.import_generated(compile_model(path))
    meta = runtime_support.InferenceSession(module).get_modelmeta()
    assert (meta.graph_name, meta.version, meta.producer_name) == ("mlp", 4, "onemodel-tests")


def test_compile_errors_are_invalid_graph(tmp_path, cache):
    model = models.single_op_model("Frob", "com.example", "frob1", [("com.example", 1)])
    path = models.save(model, tmp_path / "c.onnx")
    with pytest.raises(runtime_support.InvalidGraph, match="Frob"):
        runtime_support.InferenceSession(path)
    with pytest.raises(ValueError, match="unknown variant"):
        runtime_support.InferenceSession(path, variant="slow")
    with pytest.raises(TypeError, match="model path, model bytes or a generated module"):
        runtime_support.InferenceSession(12)


# What a process without the compiler sees: onemodel_compile and onnx cannot be imported.
WITHOUT_COMPILER = """
import sys
sys.modules["onemodel_compile"] = None
sys.modules["onnx"] = None
import numpy as np
import runtime_support
assert "onnx" not in [m for m in sys.modules if sys.modules[m] is not None]
path = sys.argv[1]
try:
    runtime_support.InferenceSession(path, cache_dir=sys.argv[2])
except runtime_support.CompilerNotInstalled as exc:
    print("refused:", exc)
else:
    print("ran")
"""


def test_without_the_compiler(tmp_path):
    path = models.save(models.mlp_model(), tmp_path / "mlp.onnx")
    cache = tmp_path / "cache"

    def run():
        result = subprocess.run(
            [sys.executable, "-c", WITHOUT_COMPILER, str(path), str(cache)],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        return result.stdout

    refused = run()
    assert refused.startswith("refused:"), refused
    for hint in ("install onemodel-compile", "pass the imported module"):
        assert hint in refused, refused
    runtime_support.InferenceSession(path, cache_dir=cache)  # compiled here, with the compiler
    assert run() == "ran\n"


def test_importing_runtime_support_imports_neither_onnx_nor_the_compiler():
    code = (
        "import sys, runtime_support; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('onnx', 'onemodel_compile')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert result.stdout.strip() == "[]", result.stdout + result.stderr


def test_free_dimension_override_pins_the_dim_at_compile_time(tmp_path, cache):
    path = models.save(models.mlp_model(), tmp_path / "mlp.onnx")
    options = runtime_support.SessionOptions()
    options.add_free_dimension_override_by_name("N", 2)
    pinned = runtime_support.InferenceSession(path, options)
    assert pinned.get_inputs()[0].shape == [2, 4]
    free = runtime_support.InferenceSession(path)
    assert free.get_inputs()[0].shape == ["N", 4] and len(list(cache.iterdir())) == 2
    np.testing.assert_array_equal(pinned.run(None, {"x": X})[0], free.run(None, {"x": X})[0])
    with pytest.raises(runtime_support.InvalidArgument, match="'x'"):
        pinned.run(None, {"x": X[:1]})


def test_intra_op_num_threads_reaches_the_thread_control(tmp_path, cache, monkeypatch):
    """One call site: runtime_support.set_num_threads(n) when the option is set (0: untouched).
    The thread control itself is issue #12's; a recorder stands in for it here."""
    path = models.save(models.mlp_model(), tmp_path / "mlp.onnx")
    calls = []
    monkeypatch.setattr(runtime_support, "set_num_threads", calls.append, raising=False)
    options = runtime_support.SessionOptions()
    runtime_support.InferenceSession(path, options)
    options.intra_op_num_threads = 3
    session = runtime_support.InferenceSession(path, options)
    assert calls == [3] and session.get_session_options().intra_op_num_threads == 3


def test_onnxruntime_session_options_are_accepted(tmp_path, cache):
    onnxruntime = pytest.importorskip("onnxruntime")
    path = models.save(models.mlp_model(), tmp_path / "mlp.onnx")
    theirs = onnxruntime.SessionOptions()
    theirs.intra_op_num_threads = 1
    theirs.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
    got = runtime_support.InferenceSession(path, theirs).get_session_options()
    assert got.intra_op_num_threads == 1
    assert got.graph_optimization_level == runtime_support.GraphOptimizationLevel.ORT_ENABLE_BASIC
