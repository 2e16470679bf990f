"""Proof of bit-identity: exact modules give the same output bits in every environment.

Three steps (docs/bit-identity.md tells the method and the figures of a real run):

  compile  compile, with the public API, every backend node case that the variant compiles (a
           refused one is skipped; an unseeded generator's is left out: its bits differ per run),
           every example model of examples/ and the committed models of STORED_MODELS into a
           work folder, with each case's input data sets stored beside its module as raw bytes
           (a seeded input for the examples, the stored feed sets for the committed models);
  run      in the current interpreter and environment: import each compiled module, run it on every
           data set of its case and print one SHA-256 digest per case over all output bytes (dtype,
           shape and raw bytes; sequences element by element; None marked), an overall digest, and
           probes of numpy's own float32/float64 `exp` and float32 `@` that show whether an
           environment switch took effect. Needs only numpy and runtime_support (and ml_dtypes for
           bfloat16), so it also runs under another numpy version;
  matrix   the run step in subprocesses under each environment of ENVIRONMENTS (default, AVX-512 off,
           AVX2 and AVX-512 off, two OpenBLAS kernels, two OpenBLAS thread counts, numpy 1.26 in a
           virtual environment under .cache/), then compares the digests across environments and
           with the golden digests of tests/bit_identity/golden_exact.json.

The command line is tools/bit_identity.py (`python -m tools.bit_identity --help`).

Exit code of the matrix: 1 when an exact digest differs between environments or from the golden file
(or the set of exact-compilable cases differs from it); the fast variant's differences are reported,
not judged: they show that the matrix discriminates.

Only the standard library and numpy are imported at the top: the run step must work in the
numpy-1.26 environment, which has neither onnx nor the compiler.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import os
import shutil
import subprocess
import sys
import time
import warnings
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tests.harness.modules import import_generated

ROOT = Path(__file__).resolve().parents[2]
GOLDEN_FILE = ROOT / "tests" / "bit_identity" / "golden_exact.json"
EXAMPLES = ROOT / "examples"
# The project's committed models with their stored feed sets (NAME.npz beside NAME.onnx): case
# name prefix -> folder. Exported networks (tools/make_real_models.py) and converted scikit-learn,
# LightGBM and XGBoost models (tools/make_ml_models.py).
STORED_MODELS = {
    "real": ROOT / "tests" / "real_models",
    "ml": ROOT / "tests" / "ml_models",
}
CACHE = ROOT / ".cache"
NUMPY126_VENV = CACHE / "numpy126-venv"
# ml_dtypes 0.5.4: the newest release whose requirements admit numpy 1.26 (pip picks it). Pillow:
# ImageDecoder's decoders, at the version of the project's own environment (its bundled
# libjpeg-turbo, libwebp and openjpeg decide the decoded bits).
NUMPY126_REQUIREMENTS = ("numpy==1.26.4", "ml_dtypes==0.5.4", "pillow==13.0.0")
REGENERATE = "python -m tools.bit_identity --update-golden"

# numpy 2.x and 1.26 name the CPU features differently and silently ignore names they do not know,
# so both sets are given: X86_V4/AVX512_ICL/AVX512_SPR (2.x) and AVX512F...AVX512_CNL (1.26).
NO_AVX512 = "X86_V4 AVX512_ICL AVX512_SPR AVX512F AVX512CD AVX512_SKX AVX512_CLX AVX512_CNL"
NO_AVX2 = NO_AVX512 + " X86_V3 AVX2 FMA3"
DEFAULT = "default"
AVX2_OFF = "AVX2 and AVX-512 off"
NUMPY126 = "numpy 1.26.4"


@dataclass(frozen=True)
class Environment:
    name: str
    settings: dict = field(default_factory=dict)
    numpy126: bool = False  # run under the numpy-1.26 virtual environment's interpreter


ENVIRONMENTS = (
    Environment(DEFAULT),
    Environment("AVX-512 off", {"NPY_DISABLE_CPU_FEATURES": NO_AVX512}),
    Environment(AVX2_OFF, {"NPY_DISABLE_CPU_FEATURES": NO_AVX2}),
    Environment("OPENBLAS_CORETYPE=Haswell", {"OPENBLAS_CORETYPE": "Haswell"}),
    Environment("OPENBLAS_CORETYPE=Prescott", {"OPENBLAS_CORETYPE": "Prescott"}),
    Environment("OPENBLAS_NUM_THREADS=1", {"OPENBLAS_NUM_THREADS": "1"}),
    Environment("OPENBLAS_NUM_THREADS=2", {"OPENBLAS_NUM_THREADS": "2"}),
    Environment(NUMPY126, numpy126=True),
)


class SetupError(RuntimeError):
    """The numpy-1.26 environment could not be made."""


# --- the compile step (needs the compiler and onnx) ------------------------------------------------


def compile_cases(
    work: Path, variant: str = "exact", pattern: str | None = None, jobs: int = 2
) -> dict:
    """Compile the cases into `work` (emptied first); return and write work/manifest.json.

    The manifest maps each compiled case to its folder, and lists the cases refused by the variant
    (by design) and the cases that failed to compile otherwise (a compiler bug, reported).
    """
    from tests.harness import backend_cases

    work = Path(work)
    shutil.rmtree(work, ignore_errors=True)
    (work / "cases").mkdir(parents=True)
    names = [n for n in backend_cases.names() if not pattern or pattern in n]
    backend_cases.all_cases()  # generated once, before the workers fork
    tasks = [(name, variant, str(work)) for name in names]
    if jobs <= 1:
        outcomes = [_compile_backend_case(t) for t in tasks]
    else:
        import multiprocessing

        with multiprocessing.get_context("fork").Pool(jobs, maxtasksperchild=300) as pool:
            outcomes = pool.map(_compile_backend_case, tasks, chunksize=8)
    examples = sorted(EXAMPLES.glob("*.onnx"))
    outcomes += [
        _compile_example(path, variant, work)
        for path in examples
        if not pattern or pattern in f"example_{path.stem}"
    ]
    outcomes += [
        _compile_stored_model(prefix, path, variant, work)
        for prefix, folder in STORED_MODELS.items()
        for path in sorted(folder.glob("*.onnx"))
        if not pattern or pattern in f"{prefix}_{path.stem}"
    ]
    manifest = {"variant": variant, "cases": {}, "refused": {}, "unseeded": {}, "not compiled": {}}
    for name, status, detail in outcomes:
        key = {"compiled": "cases", "refused": "refused", "unseeded": "unseeded"}.get(
            status, "not compiled"
        )
        manifest[key][name] = detail
    (work / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))
    return manifest


def _compile_backend_case(task) -> tuple[str, str, str]:
    name, variant, work = task
    from onemodel_compile import ExactnessError, compile_model
    from tests.harness import backend_cases

    case = backend_cases.case(name)
    if _unseeded_generator(case.model):
        return name, "unseeded", "draws fresh entropy on every run: no bits to compare"
    folder = Path(work) / "cases" / name
    folder.mkdir()
    try:
        compile_model(case.model, folder / "model.py", variant)
    except ExactnessError as exc:
        shutil.rmtree(folder)
        return name, "refused", str(exc)
    except Exception as exc:  # reported as "not compiled"; the conformance run says more
        shutil.rmtree(folder)
        return name, "error", f"{type(exc).__name__}: {exc}"
    data_sets = [backend_cases.as_numpy(list(inputs)) for inputs, _ in case.data_sets]
    _write_data_sets(folder, data_sets)
    return name, "compiled", f"cases/{name}"


# The generators: without a `seed` each call draws fresh entropy (docs/decisions.md), so their
# outputs differ from run to run by definition and are left out of the matrix.
GENERATORS = frozenset(
    {
        "Bernoulli",
        "RandomUniform",
        "RandomUniformLike",
        "RandomNormal",
        "RandomNormalLike",
        "Multinomial",
    }
)


def _unseeded_generator(model) -> bool:
    return any(
        node.op_type in GENERATORS and not any(a.name == "seed" for a in node.attribute)
        for node in model.graph.node
    )


def _compile_model_file(name: str, path: Path, variant: str, work: Path, data_sets_of):
    """A model file compiled as case `name`, its data sets `data_sets_of(INPUTS)` (the module's
    inputs in order: (onnx name, dtype name, shape))."""
    from onemodel_compile import ExactnessError, compile_model

    folder = work / "cases" / name
    folder.mkdir()
    try:
        module_path = compile_model(path, folder / "model.py", variant)
    except ExactnessError as exc:
        shutil.rmtree(folder)
        return name, "refused", str(exc)
    except Exception as exc:
        shutil.rmtree(folder)
        return name, "error", f"{type(exc).__name__}: {exc}"
    inputs = import_generated(module_path, f"bit_identity_compile_{name}", register=False).INPUTS
    _write_data_sets(folder, data_sets_of(inputs))
    return name, "compiled", f"cases/{name}"


def _compile_example(path: Path, variant: str, work: Path) -> tuple[str, str, str]:
    """An example model, with two seeded data sets (every symbolic dim 1, then 3)."""

    def seeded(inputs):
        rng = np.random.default_rng(zlib.crc32(path.stem.encode()))
        return [
            [_seeded_input(rng, dtype, shape, symbolic) for _, dtype, shape in inputs]
            for symbolic in (1, 3)
        ]

    return _compile_model_file(f"example_{path.stem}", path, variant, work, seeded)


def _stored_feeds(path: Path) -> list[dict]:
    """The feed sets of NAME.npz (`<k>:input:<name>`; a map input as `<k>:mapkeys:<name>` and
    `<k>:mapvalues:<name>`): unicode arrays become object arrays of str, as the modules take them.
    """
    sets: dict[int, dict] = {}
    maps: dict[tuple[int, str], dict] = {}
    with np.load(path.with_suffix(".npz")) as data:
        for key in sorted(data.files):
            k, kind, onnx_name = key.split(":", 2)
            value = data[key]
            if kind == "input":
                feed = sets.setdefault(int(k), {})
                feed[onnx_name] = value.astype(object) if value.dtype.kind == "U" else value
            elif kind in ("mapkeys", "mapvalues"):
                maps.setdefault((int(k), onnx_name), {})[kind] = value
    for (k, onnx_name), parts in maps.items():
        keys = parts["mapkeys"].tolist()
        sets.setdefault(k, {})[onnx_name] = dict(zip(keys, parts["mapvalues"].tolist()))
    return [sets[k] for k in sorted(sets)]


def _compile_stored_model(
    prefix: str, path: Path, variant: str, work: Path
) -> tuple[str, str, str]:
    """A committed model of STORED_MODELS, run on its stored feed sets."""

    def stored(inputs):
        return [[feed[onnx_name] for onnx_name, _, _ in inputs] for feed in _stored_feeds(path)]

    return _compile_model_file(f"{prefix}_{path.stem}", path, variant, work, stored)


def _seeded_input(rng, dtype_name: str, shape, symbolic: int) -> np.ndarray:
    from runtime_support._dtypes import dtype_from_name

    dtype = dtype_from_name(dtype_name)
    shape = tuple(d if isinstance(d, int) else symbolic for d in shape)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(dtype)
    if dtype.kind in "iu":
        return rng.integers(0 if dtype.kind == "u" else -20, 20, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _write_data_sets(folder: Path, data_sets) -> None:
    """inputs.json describes every input of every data set; inputs.bin holds their bytes."""
    blob = bytearray()

    def describe(value):
        if value is None:
            return {"kind": "none"}
        if isinstance(value, list):
            return {"kind": "sequence", "items": [describe(v) for v in value]}
        if isinstance(value, dict):  # a map: its keys and values as JSON (ints, floats, str)
            return {"kind": "map", "items": [[k, v] for k, v in value.items()]}
        if isinstance(value, np.ndarray) and value.dtype.hasobject:  # strings, as JSON
            return {"kind": "strings", "shape": list(value.shape), "items": value.ravel().tolist()}
        if isinstance(value, np.ndarray):
            kind = "tensor"
        elif isinstance(value, np.generic):
            kind = "scalar"
        else:
            kind = "python"  # a bool, int or float
        array = np.asarray(value)  # (np.ascontiguousarray would make a scalar 1-d)
        spec = {
            "kind": kind,
            "dtype": array.dtype.name,
            "shape": list(array.shape),
            "offset": len(blob),
            "size": array.nbytes,
        }
        blob.extend(array.tobytes())
        return spec

    specs = [[describe(v) for v in inputs] for inputs in data_sets]
    (folder / "inputs.json").write_text(json.dumps(specs))
    (folder / "inputs.bin").write_bytes(bytes(blob))


# --- the run step (numpy and runtime_support only) -------------------------------------------------


def _read_data_sets(folder: Path) -> list[list]:
    from runtime_support._dtypes import dtype_from_name

    blob = (folder / "inputs.bin").read_bytes()

    def build(spec):
        if spec["kind"] == "none":
            return None
        if spec["kind"] == "sequence":
            return [build(s) for s in spec["items"]]
        if spec["kind"] == "map":
            return {k: v for k, v in spec["items"]}
        if spec["kind"] == "strings":
            strings = np.empty(len(spec["items"]), dtype=object)
            strings[:] = spec["items"]
            return strings.reshape(spec["shape"])
        raw = blob[spec["offset"] : spec["offset"] + spec["size"]]
        array = np.frombuffer(raw, dtype_from_name(spec["dtype"])).reshape(spec["shape"]).copy()
        if spec["kind"] == "scalar":
            return array[()]
        if spec["kind"] == "python":
            return array.item()
        return array

    return [
        [build(s) for s in inputs] for inputs in json.loads((folder / "inputs.json").read_text())
    ]


def _feed(h, value) -> None:
    """Hash one output: None marked, a sequence element by element, a tensor's dtype, shape, bytes."""
    if value is None:
        h.update(b"N;")
        return
    if isinstance(value, list):
        h.update(b"S%d;" % len(value))
        for element in value:
            _feed(h, element)
        return
    if isinstance(value, dict):  # a map: its entries in key order, each key and value hashed
        h.update(b"M%d;" % len(value))
        for key in sorted(value):
            _feed(h, np.asarray(key))
            _feed(h, np.asarray(value[key]))
        return
    array = np.asarray(value)
    if array.dtype.hasobject or array.dtype.kind == "U":  # strings: each one's UTF-8 bytes
        shape = ",".join(str(int(d)) for d in array.shape)
        h.update(f"U;{shape};".encode())
        for text in array.ravel().tolist():
            if not isinstance(text, str):
                raise TypeError(f"cannot digest an object array holding {type(text).__name__}")
            data = text.encode("utf-8", "surrogatepass")
            h.update(b"%d;" % len(data) + data)
        return
    if not array.dtype.isnative:
        raise TypeError(f"cannot digest an array of dtype {array.dtype}")
    shape = ",".join(str(int(d)) for d in array.shape)
    h.update(f"T{array.dtype.name};{shape};{array.nbytes};".encode())
    h.update(array.tobytes(order="C"))


def digest_outputs(results_per_data_set) -> str:
    """SHA-256 over the outputs of every data set, in order."""
    h = hashlib.sha256()
    for index, outputs in enumerate(results_per_data_set):
        h.update(b"D%d;%d;" % (index, len(outputs)))
        for value in outputs:
            _feed(h, value)
    return h.hexdigest()


def overall_digest(digests: dict[str, str]) -> str:
    text = "".join(f"{name} {digests[name]}\n" for name in sorted(digests))
    return hashlib.sha256(text.encode()).hexdigest()


def run_cases(work: Path) -> dict:
    """Run every compiled case of `work` here; the digests, the errors, the probes, the timings."""
    work = Path(work)
    manifest = json.loads((work / "manifest.json").read_text())
    digests, errors, seconds = {}, {}, {}
    for name, relative in sorted(manifest["cases"].items()):
        start = time.perf_counter()
        folder = work / relative
        try:
            module = import_generated(folder / "model.py", f"bit_identity_{name}", register=False)
            results = []
            for inputs in _read_data_sets(folder):
                with warnings.catch_warnings(), np.errstate(all="ignore"):
                    warnings.simplefilter("ignore")
                    results.append(list(module.run(*inputs)))
            digests[name] = digest_outputs(results)
        except Exception as exc:
            # An error is part of the result: it must be the same error everywhere.
            errors[name] = f"{type(exc).__name__}: {exc}"[:300]
            digests[name] = hashlib.sha256(b"E" + type(exc).__name__.encode()).hexdigest()
        seconds[name] = round(time.perf_counter() - start, 4)
    return {
        "variant": manifest["variant"],
        "numpy": np.__version__,
        "ml_dtypes": _version_of("ml_dtypes"),
        "python": sys.version.split()[0],
        "cpu": _cpu_dispatch(),
        "blas": _blas_info(),
        "settings": {
            k: v for k, v in sorted(os.environ.items()) if k.startswith(("NPY_", "OPENBLAS_"))
        },
        "probes": probes(),
        "digests": digests,
        "errors": errors,
        "seconds": seconds,
        "overall": overall_digest(digests),
    }


def probes() -> dict[str, str]:
    """Digests of numpy's own (inexact) computations: they show whether a switch took effect.

    The operands are built from integers by single IEEE operations, so they are the same bits under
    every numpy version and environment.
    """
    x64 = np.arange(-(1 << 17), 1 << 17, dtype=np.int64).astype(np.float64) * (80.0 / (1 << 17))
    x32 = x64.astype(np.float32)
    i = np.arange(192, dtype=np.int64)
    a = (((i[:, None] * 7919 + i[None, :] * 104729) % 2003) - 1001).astype(np.float32) / np.float32(
        997
    )
    with np.errstate(all="ignore"):
        computed = {
            "exp float32": np.exp(x32),
            "exp float64": np.exp(x64),
            "matmul float32": a @ a.T,
        }
    return {k: hashlib.sha256(v.tobytes()).hexdigest() for k, v in computed.items()}


def _version_of(module_name: str) -> str | None:
    try:
        return importlib.import_module(module_name).__version__
    except ImportError:
        return None


def _cpu_dispatch() -> list[str]:
    """numpy's SIMD dispatch targets in effect here (NPY_DISABLE_CPU_FEATURES removes some)."""
    try:
        from numpy._core import _multiarray_umath as umath  # numpy 2
    except ImportError:
        from numpy.core import _multiarray_umath as umath  # numpy 1.26
    features = umath.__cpu_features__
    return [t for t in umath.__cpu_dispatch__ if features.get(t)]


def _blas_info() -> dict:
    """OpenBLAS's kernel (core) name and thread count, read from the loaded library; best effort."""
    import ctypes

    np.ones((2, 2)) @ np.ones((2, 2))  # make sure the library is loaded
    try:
        with open("/proc/self/maps") as maps:
            paths = sorted(
                {line.split()[-1] for line in maps if "openblas" in line and ".so" in line}
            )
    except OSError:
        return {}
    for path in paths:
        library = ctypes.CDLL(path)
        for prefix in ("scipy_openblas_", "openblas_"):
            for suffix in ("64_", ""):
                corename = getattr(library, f"{prefix}get_corename{suffix}", None)
                threads = getattr(library, f"{prefix}get_num_threads{suffix}", None)
                if corename is not None and threads is not None:
                    corename.restype = ctypes.c_char_p
                    return {"core": corename().decode(), "threads": int(threads())}
    return {}


# --- the matrix ------------------------------------------------------------------------------------


@contextlib.contextmanager
def _locked(path: Path):
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def other_numpy_python() -> str:
    """A Python with another numpy major version, for tests that compare bits across versions:
    ONEMODEL_OTHER_NUMPY_PYTHON when set, else the numpy-1.26 environment of the matrix."""
    return os.environ.get("ONEMODEL_OTHER_NUMPY_PYTHON") or str(ensure_numpy126_python())


def ensure_numpy126_python() -> Path:
    """The interpreter of .cache/numpy126-venv, created (from PyPI) when missing or outdated.

    The compiled modules need only numpy and runtime_support (ml_dtypes for bfloat16): the venv has
    numpy and ml_dtypes; the repository root goes on PYTHONPATH for runtime_support and tools.
    """
    python = NUMPY126_VENV / "bin" / "python"
    stamp = NUMPY126_VENV / ".bit-identity-ready"
    wanted = " ".join(NUMPY126_REQUIREMENTS)
    with _locked(CACHE / "numpy126-venv.lock"):
        if python.exists() and stamp.exists() and stamp.read_text() == wanted:
            return python
        shutil.rmtree(NUMPY126_VENV, ignore_errors=True)
        check = (
            "import numpy, ml_dtypes\n"
            "assert numpy.__version__ == '1.26.4', numpy.__version__\n"
            "x = numpy.arange(4, dtype=numpy.float32).astype(ml_dtypes.bfloat16)\n"
            "assert (x * x).astype(numpy.float32).tolist() == [0, 1, 4, 9]\n"
        )
        pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        steps = [
            [sys.executable, "-m", "venv", str(NUMPY126_VENV)],
            [*pip, *NUMPY126_REQUIREMENTS],
            [str(python), "-c", check],
        ]
        for step in steps:
            try:
                done = subprocess.run(step, capture_output=True, text=True, timeout=900)
            except (OSError, subprocess.TimeoutExpired) as exc:
                done = subprocess.CompletedProcess(step, -1, "", str(exc))
            if done.returncode != 0:
                shutil.rmtree(NUMPY126_VENV, ignore_errors=True)
                raise SetupError(
                    f"could not create the numpy-1.26 environment {NUMPY126_VENV} (needs PyPI for "
                    f"{wanted}): `{' '.join(step)}` failed:\n{(done.stderr or done.stdout)[-2000:]}"
                )
        stamp.write_text(wanted)
    return python


def clean_environment(settings: dict) -> dict[str, str]:
    """This process's environment without any NPY_ or OPENBLAS_ switch (nor PYTHONHOME), plus
    `settings`, with the repository on PYTHONPATH: what every matrix subprocess runs under."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENBLAS_", "NPY_"))}
    env.pop("PYTHONHOME", None)
    env.update(settings)
    env["PYTHONPATH"] = str(ROOT)
    return env


def run_json_script(script: str, settings: dict, python: str | Path = sys.executable) -> dict:
    """Run `script`, which prints one JSON document, in a subprocess under `settings`."""
    done = subprocess.run(
        [str(python), "-c", script],
        env=clean_environment(settings),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the script failed under {settings} ({python}):\n{done.stderr[-2000:]}")
    return json.loads(done.stdout)


def run_environment(work: Path, environment: Environment, python: str | Path) -> dict:
    """The run step in a subprocess under `environment`; its result (the digests and probes)."""
    env = clean_environment(environment.settings)
    out = Path(work) / "runs" / f"{environment.name.replace(' ', '_').replace('=', '-')}.json"
    out.parent.mkdir(exist_ok=True)
    start = time.perf_counter()
    done = subprocess.run(
        [str(python), "-m", "tools.bit_identity", "run", str(work), "--out", str(out), "--quiet"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"the run step failed under {environment.name!r} ({python}):\n{done.stderr[-3000:]}"
        )
    result = json.loads(out.read_text())
    result["wall seconds"] = round(time.perf_counter() - start, 1)
    return result


def run_matrix(
    work: Path, environments=ENVIRONMENTS, jobs: int = 2, numpy126_python: Path | None = None
) -> dict[str, dict]:
    """The run step under every environment, `jobs` subprocesses at a time; results by name."""
    if numpy126_python is None and any(e.numpy126 for e in environments):
        numpy126_python = ensure_numpy126_python()

    def one(environment):
        python = numpy126_python if environment.numpy126 else sys.executable
        return run_environment(work, environment, python)

    with ThreadPoolExecutor(max(1, jobs)) as pool:
        results = list(pool.map(one, environments))
    return {e.name: r for e, r in zip(environments, results)}


@dataclass
class Verdict:
    problems: list[str]  # each names the cases and environments; empty when all is well
    case_set_changed: bool  # the compiled cases are not those of the golden file
    differing: dict[str, list[str]]  # environment -> cases whose digest differs from default
    probe_changes: dict[str, list[str]]  # environment -> probes that differ from default


def _names(names, limit: int = 12) -> str:
    names = sorted(names)
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def judge(results: dict[str, dict], golden: dict | None) -> Verdict:
    """Compare every environment's digests with the default environment's and with `golden`.

    A problem names the case and the environments; the golden file's case set is checked apart
    from its digests, since that set grows as operators are made exact.
    """
    base = results[DEFAULT]
    problems, differing, probe_changes = [], {}, {}
    where_differing: dict[str, list[str]] = {}
    for name, result in results.items():
        if set(result["digests"]) != set(base["digests"]):
            problems.append(f"{name}: ran other cases than the default environment")
        differing[name] = sorted(
            c for c, d in result["digests"].items() if base["digests"].get(c, d) != d
        )
        probe_changes[name] = sorted(
            p for p, d in result["probes"].items() if base["probes"].get(p) != d
        )
        for case in differing[name]:
            where_differing.setdefault(case, []).append(f"{name} (numpy {result['numpy']})")
        raising = set(result["errors"]) ^ set(base["errors"])
        if raising:
            problems.append(
                f"{name}: these cases raise here but not in the default environment, or the "
                f"reverse: {_names(raising)}"
            )
    problems += _capped(
        f"case {case}: digest differs from the default environment's under {', '.join(where)}"
        for case, where in sorted(where_differing.items())
    )
    case_set_changed = False
    if golden is not None:
        expected, got = golden["digests"], base["digests"]
        new, gone = set(got) - set(expected), set(expected) - set(got)
        if new or gone:
            case_set_changed = True
            problems.insert(
                0,
                f"the SET of exact-compilable cases differs from the golden file "
                f"({len(new)} new: {_names(new) or '-'}; {len(gone)} no longer compiled: "
                f"{_names(gone) or '-'}). If operators were deliberately made exact (or refused), "
                f"regenerate the golden digests with `{REGENERATE}` and commit "
                f"tests/bit_identity/golden_exact.json.",
            )
        off_golden = {
            case: [n for n, r in results.items() if r["digests"].get(case) != expected[case]]
            for case in sorted(set(got) & set(expected))
        }
        off_golden = {case: where for case, where in off_golden.items() if where}
        problems += _capped(
            f"case {case}: digest differs from the golden file under {', '.join(where)}"
            for case, where in off_golden.items()
        )
        if off_golden:
            problems.append(
                "a digest that differs from the golden file means that this machine computes "
                "other bits, or that a kernel's definition changed: regenerate the golden file "
                f"(`{REGENERATE}`) only when the change is deliberate (docs/bit-identity.md)"
            )
    return Verdict(problems, case_set_changed, differing, probe_changes)


def _capped(lines, limit: int = 40) -> list[str]:
    lines = list(lines)
    if len(lines) > limit:
        return lines[:limit] + [f"... and {len(lines) - limit} more cases"]
    return lines


def load_golden(path: Path = GOLDEN_FILE) -> dict | None:
    return json.loads(path.read_text()) if path.exists() else None


def golden_growth_problems(result: dict, golden: dict | None) -> list[str]:
    """Why `result` may not be written as the golden file over `golden`: the golden file only
    grows. A case it holds whose digest changed, or that no longer compiles, is a bug to report
    (a kernel computing other bits), never a digest to overwrite (docs/bit-identity.md)."""
    if golden is None:
        return []
    expected, got = golden["digests"], result["digests"]
    changed = sorted(c for c in set(expected) & set(got) if expected[c] != got[c])
    gone = sorted(set(expected) - set(got))
    problems = [f"case {c}: its digest differs from the golden file's" for c in changed]
    problems += [f"case {c}: in the golden file, no longer compiled and run" for c in gone]
    return problems


def write_golden(result: dict, manifest: dict, path: Path = GOLDEN_FILE) -> None:
    golden = {
        "about": "SHA-256 digests of every exact-compilable backend case and example model's "
        "outputs (tests/harness/bit_identity.py); every environment must reproduce them. Regenerate with "
        f"`{REGENERATE}` only when the set of exact cases or a kernel's definition deliberately "
        "changes (docs/bit-identity.md).",
        "cases": len(result["digests"]),
        "refused": len(manifest["refused"]),
        "overall": result["overall"],
        "digests": result["digests"],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")


def describe_run(results: dict[str, dict], verdict: Verdict) -> list[str]:
    """One line per environment: numpy, SIMD, BLAS, time, probes changed, cases differing."""
    lines = []
    for name, r in results.items():
        blas = r["blas"]
        blas_text = f"OpenBLAS {blas['core']}, {blas['threads']} threads" if blas else "BLAS ?"
        top = r["cpu"][-1] if r["cpu"] else "baseline"
        lines.append(
            f"  {name:28} numpy {r['numpy']:7} top SIMD {top:11} {blas_text:30} "
            f"{r['wall seconds']:6.1f} s  probes changed: "
            f"{', '.join(verdict.probe_changes[name]) or 'none':38} "
            f"cases differing: {len(verdict.differing[name])}"
        )
    return lines
