"""The thread count (runtime_support/_threads.py): set_num_threads reaches numpy's BLAS, threads()
restores the count before it, the default is 1 unless the environment chose a count, a BLAS
without a thread call is a quiet no-op, and results do not depend on the count (the fast variant
within onnxruntime's tolerance at each count, the exact variant bit for bit).

The BLAS count is read back here with this file's own ctypes lookup of the loaded OpenBLAS, not
through the code under test."""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import numpy as np
import onnxruntime
import pytest
from onnx import helper

import runtime_support as rt
from onemodel_compile import compile_model
from runtime_support import _threads
from tests import models

ROOT = Path(__file__).resolve().parent.parent


def _openblas_get():
    """The loaded OpenBLAS's get_num_threads, found in /proc/self/maps; skips the test on a numpy
    without OpenBLAS (nothing to read back there)."""
    np.ones((2, 2)) @ np.ones((2, 2))
    try:
        with open("/proc/self/maps") as maps:
            paths = sorted({line.split()[-1] for line in maps if "openblas" in line.lower()})
    except OSError:
        paths = []
    for path in paths:
        library = ctypes.CDLL(path)
        for name in (
            "scipy_openblas_get_num_threads64_",
            "scipy_openblas_get_num_threads",
            "openblas_get_num_threads64_",
            "openblas_get_num_threads",
        ):
            function = getattr(library, name, None)
            if function is not None:
                function.restype = ctypes.c_int
                return function
    pytest.skip("numpy's BLAS is not OpenBLAS here: no thread count to read back")


@pytest.fixture
def restore_count():
    before = rt.get_num_threads()
    yield
    rt.set_num_threads(before)


def test_set_num_threads_reaches_blas_and_reads_back(restore_count):
    blas_threads = _openblas_get()
    for count in (2, 1, 3, 1):
        rt.set_num_threads(count)
        assert blas_threads() == count
        assert rt.get_num_threads() == count


def test_threads_restores_the_count_before_it_even_after_an_error(restore_count):
    blas_threads = _openblas_get()
    rt.set_num_threads(1)
    with rt.threads(2):
        assert blas_threads() == 2 and rt.get_num_threads() == 2
        with rt.threads(3):
            assert blas_threads() == 3
        assert blas_threads() == 2
    assert blas_threads() == 1 and rt.get_num_threads() == 1
    with pytest.raises(KeyError):
        with rt.threads(2):
            raise KeyError("inside")
    assert blas_threads() == 1 and rt.get_num_threads() == 1


def test_small_work_runs_at_one_blas_thread_and_the_count_comes_back(restore_count):
    """blas_threads_for: one BLAS thread inside for work below SMALL_BLAS_WORK at a count above
    1 (the count itself unchanged), the count again after it, also after an error; large work
    and a count of 1 leave BLAS alone. A recurrent kernel's call runs inside it."""
    blas_threads = _openblas_get()
    rt.set_num_threads(2)
    with _threads.blas_threads_for(_threads.SMALL_BLAS_WORK - 1):
        assert blas_threads() == 1 and rt.get_num_threads() == 2
    assert blas_threads() == 2
    with pytest.raises(KeyError):
        with _threads.blas_threads_for(10):
            raise KeyError("inside")
    assert blas_threads() == 2
    with _threads.blas_threads_for(_threads.SMALL_BLAS_WORK):
        assert blas_threads() == 2
    seen = []
    tanh = np.tanh

    def spy(*args, **kwargs):
        seen.append(blas_threads())
        return tanh(*args, **kwargs)

    X = np.ones((3, 2, 4), np.float32)
    W, R = np.ones((1, 9, 4), np.float32), np.ones((1, 9, 3), np.float32)
    np.tanh = spy
    try:
        rt.gru(X, W, R)
    finally:
        np.tanh = tanh
    assert seen and set(seen) == {1} and blas_threads() == 2
    rt.set_num_threads(1)
    with _threads.blas_threads_for(10):
        assert blas_threads() == 1


@pytest.mark.parametrize("value", [-1, 1.5, "2", None, True])
def test_a_bad_count_is_refused_naming_it(value, restore_count):
    with pytest.raises(ValueError, match=repr(value).replace("(", r"\(").replace(".", r"\.")):
        rt.set_num_threads(value)


def _fresh_process(environment: dict, code: str = "") -> list:
    """[get_num_threads(), the BLAS count] in a new interpreter after `import runtime_support`
    and `code`."""
    script = (
        "import json, runtime_support as rt\n"
        "from tests.test_threads import _openblas_get\n"
        f"{code}\n"
        "print(json.dumps([rt.get_num_threads(), _openblas_get()()]))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in _threads.THREAD_VARIABLES}
    env.update(environment)
    env["PYTHONPATH"] = str(ROOT)
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_the_default_is_one_thread_unless_the_environment_chose():
    _openblas_get()  # skips without OpenBLAS
    # numpy's OpenBLAS alone would start with every usable CPU (2 or more here)
    assert _fresh_process({}) == [1, 1]
    assert _fresh_process({"OPENBLAS_NUM_THREADS": "2"}) == [2, 2]
    assert _fresh_process({"OMP_NUM_THREADS": "2"}) == [2, 2]


def test_zero_returns_to_the_default():
    _openblas_get()
    assert _fresh_process({}, "rt.set_num_threads(2); rt.set_num_threads(0)") == [1, 1]
    two = {"OPENBLAS_NUM_THREADS": "2"}
    assert _fresh_process(two, "rt.set_num_threads(1); rt.set_num_threads(0)") == [2, 2]


def test_without_a_controllable_blas_the_count_is_kept_quietly(restore_count, monkeypatch):
    monkeypatch.setattr(_threads, "_loaded_libraries", lambda: [])
    monkeypatch.setitem(_threads._state, "blas", None)  # found again, from no library
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rt.set_num_threads(3)
        with rt.threads(2):
            assert rt.get_num_threads() == 2
    assert rt.get_num_threads() == 3
    assert not _threads._blas().found and _threads._blas().get() is None
    monkeypatch.setitem(_threads._state, "blas", None)  # the real BLAS for the fixture's reset


def test_serially_runs_blas_at_one_thread_then_restores_the_count(restore_count):
    blas_threads = _openblas_get()
    seen = []

    def product(a, b):
        seen.append(blas_threads())
        return a @ b

    a = np.arange(6.0).reshape(2, 3)
    for count in (2, 1):
        rt.set_num_threads(count)
        np.testing.assert_array_equal(_threads.serially(product, a, a.T), a @ a.T)
        assert seen[-1] == 1 and blas_threads() == count and rt.get_num_threads() == count
    rt.set_num_threads(2)
    with pytest.raises(ValueError):  # restored after an error too
        _threads.serially(product, a, a)
    assert blas_threads() == 2


def test_run_parts_runs_every_part_once_on_the_pool_and_raises_their_errors(restore_count):
    seen = {}
    meeting = threading.Barrier(2, timeout=30)

    def part(index):
        seen.setdefault(index, []).append(threading.get_ident())
        if index < 2:
            meeting.wait()  # parts 0 and 1 run at once, so two threads ran them

    rt.set_num_threads(2)
    _threads.run_parts(part, 5)
    assert sorted(seen) == [0, 1, 2, 3, 4] and all(len(t) == 1 for t in seen.values())
    assert seen[0] != seen[1] and len({t[0] for t in seen.values()}) == 2
    rt.set_num_threads(1)
    seen.clear()
    _threads.run_parts(lambda index: seen.setdefault(index, threading.get_ident()), 3)
    assert sorted(seen) == [0, 1, 2] and set(seen.values()) == {threading.get_ident()}

    def failing(index):
        if index == 2:
            raise ArithmeticError("part 2")

    rt.set_num_threads(2)
    with pytest.raises(ArithmeticError, match="part 2"):
        _threads.run_parts(failing, 3)


def test_run_parts_does_not_wait_for_a_worker_that_gets_no_core(restore_count, monkeypatch):
    """A worker the machine does not schedule (here: never started) leaves its parts to the
    calling thread instead of holding the call up."""

    class Unscheduled:
        def submit(self, function, *args):
            return None

    monkeypatch.setattr(_threads, "_pool", lambda size: Unscheduled())
    rt.set_num_threads(2)
    seen = []
    _threads.run_parts(seen.append, 4)
    assert seen == [0, 1, 2, 3]


def _large(seed, shape, scale=3.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


# runtime_support's own kernels that split large arrays across the threads. Elementwise work,
# and rows of row-wise work, give the same bits however they are split.
_SPLIT_KERNELS = {
    "gelu": lambda: rt.gelu(_large(1, (197, 3072))),
    "gelu_tanh": lambda: rt.gelu(_large(2, (128, 1536)), approximate="tanh"),
    "erf": lambda: rt.erf(_large(3, (3, 70_001), 1.0)),
    "layer_normalization": lambda: rt.layer_normalization(
        _large(4, (1, 197, 384)) + 5, _large(5, (384,)), _large(6, (384,)), axis=2
    ),
    "layer_normalization_long_rows": lambda: rt.layer_normalization(
        _large(7, (2, 40, 10_000)), _large(8, (10_000,)), None, axis=2, stats=False
    ),
    "attention_heads": lambda: rt.attention_heads(
        _large(9, (1, 6, 197, 64), 0.3),
        _large(10, (1, 6, 64, 197), 0.3),
        _large(11, (1, 6, 197, 64)),
        mask=np.where(_large(12, (1, 1, 1, 197)) > 2, np.float32(-1e4), np.float32(0)),
    ),
    # a sixth of the query rows 40 below the others: gathered, each with its own maximum
    "attention_heads_low_rows": lambda: rt.attention_heads(
        _large(13, (1, 6, 197, 64), 0.3),
        _large(14, (1, 6, 64, 197), 0.3),
        _large(15, (1, 6, 197, 64)),
        mask=np.where(_large(16, (1, 1, 197, 1)) > 3, np.float32(-40), np.float32(0)),
    ),
}


@pytest.mark.parametrize("name", sorted(_SPLIT_KERNELS))
def test_split_kernels_give_the_bits_of_one_run(name, restore_count, monkeypatch):
    """At 2 and 3 threads each kernel splits its work into one part per thread and gets the bits
    it gets unsplit (its own split off, BLAS at the same count: BLAS's own threads may change a
    product's bits, which is not this split's doing)."""
    real_run_parts, real_count = _threads.run_parts, _threads.get_num_threads
    parts = []

    def recording(function, count):
        parts.append(count)
        return real_run_parts(function, count)

    def as_tuple(result):
        return result if isinstance(result, tuple) else (result,)

    monkeypatch.setattr(_threads, "run_parts", recording)
    monkeypatch.setattr(_threads, "SPLIT_MIN", _threads.SPLIT_SIZE)  # off by default
    for count in (2, 3):
        rt.set_num_threads(count)
        parts.clear()
        split = as_tuple(_SPLIT_KERNELS[name]())
        assert max(parts, default=1) >= count  # at least one part per thread
        monkeypatch.setattr(_threads, "get_num_threads", lambda: 1)  # the split off only
        whole = as_tuple(_SPLIT_KERNELS[name]())
        monkeypatch.setattr(_threads, "get_num_threads", real_count)
        assert [r.tobytes() for r in split] == [r.tobytes() for r in whole]
    parts.clear()
    monkeypatch.setattr(_threads, "SPLIT_MIN", None)  # the default: nothing splits
    _SPLIT_KERNELS[name]()
    assert not parts


def _conv_model():
    """Conv (3x3, bias), Relu, a 1x1 Conv and a MatMul: BLAS products of several sizes."""
    rng = np.random.default_rng(4)
    weights = {
        "w1": rng.standard_normal((32, 8, 3, 3)).astype(np.float32) * 0.2,
        "b1": rng.standard_normal(32).astype(np.float32),
        "w2": rng.standard_normal((16, 32, 1, 1)).astype(np.float32) * 0.2,
        "m": rng.standard_normal((20, 24)).astype(np.float32) * 0.2,
    }
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"]),
        helper.make_node("MatMul", ["c2", "m"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "threads",
        [models.tensor("x", [2, 8, 20, 20])],
        [models.tensor("y", [2, 16, 20, 24])],
        [models.init(name, value) for name, value in weights.items()],
    )
    feeds = {"x": rng.standard_normal((2, 8, 20, 20)).astype(np.float32)}
    return models.finish(graph, opset=17), feeds


def test_results_do_not_depend_on_the_thread_count(tmp_path, restore_count):
    model, feeds = _conv_model()
    expected = onnxruntime.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    ).run(None, feeds)[0]
    fast = models.import_generated(compile_model(model, tmp_path / "fast.py"))
    exact = models.import_generated(compile_model(model, tmp_path / "exact.py", variant="exact"))
    exact_bits = []
    for count in (1, 2, 3):
        with rt.threads(count):
            got = fast.run(feeds["x"]).y
            exact_bits.append(exact.run(feeds["x"]).y.tobytes())
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    assert exact_bits[0] == exact_bits[1] == exact_bits[2]


def test_the_sessions_intra_op_num_threads_sets_the_count(tmp_path, restore_count):
    blas_threads = _openblas_get()
    model, feeds = _conv_model()
    module = models.import_generated(compile_model(model, tmp_path / "session.py"))
    rt.set_num_threads(1)
    options = rt.SessionOptions()
    options.intra_op_num_threads = 2
    session = rt.InferenceSession(module, sess_options=options)
    assert blas_threads() == 2 and rt.get_num_threads() == 2
    session.run(None, feeds)
    default = rt.InferenceSession(module)  # 0: the count in effect stays
    assert blas_threads() == 2
    default.run(None, feeds)


def _recurrent_case(op, batch, hidden, layout, directions, seed):
    """Arguments of rt.lstm / rt.gru / rt.rnn at 8 steps and input 64, with initial states and
    uneven sequence lengths (layout 1: batch first)."""
    rng = np.random.default_rng(seed)
    gates = {"lstm": 4, "gru": 3, "rnn": 1}[op]
    steps, size = 8, 64

    def normal(*shape, scale=0.1):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    X = normal(steps, batch, size, scale=1.0)
    states = [normal(directions, batch, hidden) for _ in range(2 if op == "lstm" else 1)]
    if layout == 1:
        X, states = X.swapaxes(0, 1).copy(), [s.swapaxes(0, 1).copy() for s in states]
    arguments = dict(
        X=X,
        W=normal(directions, gates * hidden, size),
        R=normal(directions, gates * hidden, hidden),
        B=normal(directions, 2 * gates * hidden),
        sequence_lens=rng.integers(1, steps + 1, batch).astype(np.int32),
        initial_h=states[0],
        layout=layout,
        direction="bidirectional" if directions == 2 else "forward",
    )
    if op == "lstm":
        arguments["initial_c"] = states[1]
    if op == "gru":
        arguments["linear_before_reset"] = 1
    return arguments


@pytest.mark.parametrize(
    "op, batch, hidden, layout, directions",
    [
        ("lstm", 16, 128, 0, 1),
        ("lstm", 16, 128, 1, 2),
        ("gru", 24, 128, 0, 1),
        ("rnn", 17, 256, 1, 1),
    ],
)
def test_recurrent_layers_split_their_batch_over_the_threads(
    op, batch, hidden, layout, directions, restore_count, monkeypatch
):
    """With the batch split on (recurrent.BATCH_SPLIT_STEP, off by default), a fast recurrent
    layer of large work at 2 and 3 threads runs its batch in parts over the
    threads (recurrent._by_batch over run_parts, BLAS at one thread) and gives what one call
    gives at one thread, every output in its shape, to float32 rounding (OpenBLAS's products of
    fewer columns may round the last bit differently: up to 2e-6 seen); at one thread, and
    below the work threshold, it is one call."""
    from runtime_support import recurrent

    real_run_parts, parts = recurrent.run_parts, []

    def recording(function, count):
        parts.append(count)
        return real_run_parts(function, count)

    monkeypatch.setattr(recurrent, "run_parts", recording)
    monkeypatch.setattr(recurrent, "BATCH_SPLIT_STEP", 500_000)  # off by default
    kernel = getattr(rt, op)
    arguments = _recurrent_case(op, batch, hidden, layout, directions, seed=batch + layout)
    rt.set_num_threads(1)
    whole = kernel(**arguments)
    assert not parts
    for count in (2, 3):
        rt.set_num_threads(count)
        split = kernel(**arguments)
        assert 2 <= parts[-1] <= count  # as many parts as the threads and the work allow
        assert [(a.shape, a.dtype) for a in split] == [(a.shape, a.dtype) for a in whole]
        for a, b in zip(split, whole):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    parts.clear()
    kernel(**_recurrent_case(op, 2, 8, layout, directions, seed=1))
    assert not parts


def test_recurrent_layers_do_not_split_their_batch_by_default(restore_count, monkeypatch):
    """BATCH_SPLIT_STEP is None by default (the split lost on the quiet machine): a layer the
    split would cut (lstm, batch 16, hidden 128) runs as one call at 2 threads."""
    from runtime_support import recurrent

    assert recurrent.BATCH_SPLIT_STEP is None
    parts = []
    monkeypatch.setattr(recurrent, "run_parts", lambda function, count: parts.append(count))
    rt.set_num_threads(2)
    rt.lstm(**_recurrent_case("lstm", 16, 128, 0, 1, seed=16))
    assert not parts


def test_recurrent_layers_of_small_products_run_them_at_one_blas_thread(restore_count):
    """A recurrent layer above SMALL_BLAS_WORK in all whose batch does not split (a tagger's:
    32 steps x batch 4, hidden 128, a 3 M multiply-add projection) runs every product at one
    BLAS thread at a count of 2 (the count itself unchanged), and the count comes back."""
    from runtime_support import recurrent

    blas_threads = _openblas_get()
    rt.set_num_threads(2)
    arguments = _recurrent_case("lstm", 4, 128, 0, 1, seed=3)
    arguments["X"] = np.concatenate([arguments["X"]] * 4)  # 32 steps
    arguments["sequence_lens"] = None
    X, W, R = arguments["X"], arguments["W"], arguments["R"]
    assert recurrent._multiply_adds(X, W, R) >= _threads.SMALL_BLAS_WORK
    seen, tanh = [], np.tanh

    def spy(*args, **kwargs):
        seen.append((blas_threads(), rt.get_num_threads()))
        return tanh(*args, **kwargs)

    np.tanh = spy
    try:
        rt.lstm(**arguments)
    finally:
        np.tanh = tanh
    assert seen and set(seen) == {(1, 2)} and blas_threads() == 2
