"""One compiled module run from several Python threads at once (issue #17, docs/robustness.md):
each caller gets its own correct result. The fast variant writes into dead buffers (`out=`) and
runtime_support keeps plans and prepared weight slices in caches; none of it may be shared between
calls.

Per model: 4 threads x 100 runs, every run with its own inputs (the stored feed sets' shapes, the
values drawn anew), all threads released at once by a barrier; each result is compared with the
result of the same inputs computed beforehand on one thread. The models cover the in-place buffer
reuse (an MLP, a transformer encoder), convolutions (a ResNet), recurrent layers (LSTM, GRU; the GRU
also in the exact variant, whose products cache their weights' slices) and a Loop.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from onemodel_compile import compile_model
from tests.harness.modules import import_generated
from tests.test_real_models import FOLDER, load_feeds

THREADS = 4
RUNS = 100
MODELS = [
    ("mlp_legacy_op14", "fast"),
    ("bert_legacy_op14", "fast"),
    ("resnet_legacy_op14", "fast"),
    ("lstm_tagger_legacy_op14", "fast"),
    ("gru_tagger_legacy_op17", "fast"),
    ("gru_tagger_legacy_op17", "exact"),
    ("paddle_loop_op13", "fast"),
]


def _varied(feeds: dict[str, np.ndarray], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Inputs like `feeds` (same shapes and dtypes), with new values: floats perturbed, integers
    (token ids, masks) drawn within the range the stored feeds use."""
    varied = {}
    for name, value in feeds.items():
        if value.dtype.kind == "f":
            noise = rng.standard_normal(value.shape).astype(value.dtype)
            varied[name] = value + noise * value.dtype.type(0.5)
        elif value.dtype.kind in "iu":
            low, high = int(value.min()), int(value.max())
            varied[name] = rng.integers(low, high + 1, value.shape).astype(value.dtype)
        else:
            varied[name] = value.copy()
    return varied


@pytest.mark.parametrize("name,variant", MODELS, ids=[f"{n}-{v}" for n, v in MODELS])
def test_concurrent_runs_match_single_threaded(tmp_path, name, variant):
    module = import_generated(compile_model(FOLDER / f"{name}.onnx", tmp_path / "m.py", variant))
    stored = [inputs for inputs, _ in load_feeds(name)]
    rng = np.random.default_rng(17)
    work = [
        [_varied(stored[(t + r) % len(stored)], rng) for r in range(RUNS)] for t in range(THREADS)
    ]
    expected = [[module.run_feeds(dict(feeds)) for feeds in runs] for runs in work]

    barrier = threading.Barrier(THREADS)
    results: list[list] = [[] for _ in range(THREADS)]
    errors: list[BaseException] = []

    def caller(index: int) -> None:
        try:
            barrier.wait()
            for feeds in work[index]:
                results[index].append(module.run_feeds(dict(feeds)))
        except BaseException as exc:  # reported below, with the thread's number
            errors.append(exc)

    threads = [threading.Thread(target=caller, args=(i,)) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, f"a thread raised: {errors[0]!r}"

    for t in range(THREADS):
        assert len(results[t]) == RUNS
        for r, (got, want) in enumerate(zip(results[t], expected[t])):
            assert list(got) == list(want)
            for output in want:
                where = f"thread {t}, run {r}, output {output!r}"
                if variant == "exact":  # the same bits, whatever the threads do
                    np.testing.assert_array_equal(got[output], want[output], err_msg=where)
                else:  # BLAS may split a product differently when called concurrently
                    np.testing.assert_allclose(
                        got[output], want[output], rtol=1e-5, atol=1e-6, err_msg=where
                    )
