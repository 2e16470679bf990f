"""runtime_support.batch on a dask.distributed.LocalCluster of two worker processes (docs/batch.md):
the module imported once per worker, its weights mapped read-only there, and the results those of
a single-process run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from onemodel_compile import compile_model
from runtime_support import batch
from tests import models

da = pytest.importorskip("dask.array")
db = pytest.importorskip("dask.bag")
distributed = pytest.importorskip("dask.distributed")
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def weights_are_mapped_read_only(module_file: str) -> bool:
    """On a worker: its module's weights are read-only views of a memory-mapped file."""
    import mmap

    def mapped(array) -> bool:
        base = array
        while isinstance(base, np.ndarray) and base.base is not None:
            base = base.base
        return isinstance(getattr(base, "obj", base), mmap.mmap)

    arrays = list(batch.import_module(module_file)._WEIGHTS.values())
    return bool(arrays) and all(not a.flags.writeable and mapped(a) for a in arrays)


@pytest.fixture(scope="module")
def client():
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


def test_map_array_and_bag_on_two_worker_processes(tmp_path, client):
    path = compile_model(models.mlp_model(), tmp_path / "mlp.py", "exact")
    module = batch.import_module(path)
    x = models.rng(5).standard_normal((40, 4)).astype(np.float32)
    lazy = batch.map_array(path, da.from_array(x, chunks=(10, 4)))
    assert lazy.shape == (40, 3) and lazy.dtype == np.float32
    on_cluster = client.compute(lazy).result()
    single = lazy.compute(scheduler="synchronous")  # the same blocks in this process
    np.testing.assert_array_equal(on_cluster, single)
    np.testing.assert_array_equal(on_cluster, module.run(x).probs)  # exact: any batch split
    hidden = client.compute(batch.map_array(path, da.from_array(x, chunks=20), "hidden")).result()
    np.testing.assert_array_equal(hidden, module.run(x).hidden)

    feeds = [{"x": x[i : i + 2]} for i in range(0, 40, 2)]
    results = client.compute(batch.map_bag(path, db.from_sequence(feeds, npartitions=4))).result()
    assert len(results) == 20
    for feed, result in zip(feeds, results):
        np.testing.assert_array_equal(result["probs"], module.run(feed["x"]).probs)

    imports = client.run(batch.imports)
    assert len(imports) == 2
    key = str(Path(path).resolve())
    assert all(seen == {key: 1} for seen in imports.values()), imports  # once per worker
    assert all(client.run(weights_are_mapped_read_only, str(path)).values())


def test_map_array_refuses_what_it_cannot_map(tmp_path):
    two = compile_model(models.two_input_model(), tmp_path / "two.py")
    with pytest.raises(ValueError, match="one input"):
        batch.map_array(two, da.zeros((4, 3), chunks=2))
    mlp = compile_model(models.mlp_model(), tmp_path / "mlp.py")
    with pytest.raises(ValueError, match="unknown output 'nope'"):
        batch.map_array(mlp, da.zeros((4, 4), chunks=2), "nope")


def test_runtime_support_does_not_import_dask():
    code = "import sys, runtime_support, runtime_support.batch; print('dask' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "False", result.stderr


def test_the_example_runs(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            str(EXAMPLES / "batch_dask.py"),
            "--build",
            str(tmp_path),
            "--images",
            "24",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "module imports per worker: [1, 1]" in result.stdout, result.stdout
