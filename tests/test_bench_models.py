"""Smoke test of the benchmark's model builders (tools/bench_models.py): each model, built at a tiny
size, compiles and matches onnxruntime. Keeps the builders correct; the benchmark itself
(`make bench`) is no test."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime
import pytest

from onemodel_compile import compile_model
from tests.harness.modules import import_generated
from tools.bench_models import MODELS


@pytest.mark.parametrize("spec", MODELS, ids=lambda spec: spec.name)
def test_tiny_bench_model_compiles_and_matches_onnxruntime(spec, tmp_path: Path) -> None:
    built = spec.tiny()
    module = import_generated(compile_model(built.model, tmp_path / f"{spec.name}.py"))
    session = onnxruntime.InferenceSession(
        built.model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    expected = session.run(None, built.feeds)
    actual = module.run_feeds(built.feeds)
    assert list(actual) == [o.name for o in session.get_outputs()]
    for (name, value), reference in zip(actual.items(), expected):
        assert value.dtype == reference.dtype and value.shape == reference.shape, name
        scale = max(1.0, float(np.max(np.abs(reference)))) if reference.size else 1.0
        np.testing.assert_allclose(value, reference, rtol=1e-4, atol=1e-5 * scale, err_msg=name)
