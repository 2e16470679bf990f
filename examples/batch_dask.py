"""Batch inference on a Dask cluster: the compiled tiny classifier mapped over a Dask array of
images and over a Dask bag of feeds, with runtime_support.batch (docs/batch.md).

Each worker process imports the module once and maps its weights file read-only; what the tasks
carry is the module's path. Here the cluster is a LocalCluster of two worker processes; on a real
cluster, point a dask.distributed.Client at its scheduler and put the two compiled files where
every worker sees them at the same path.

Usage: python examples/batch_dask.py [--images N] [--chunk C] [--build FOLDER]
(needs dask[array,distributed], a test and example extra: pip install "dask[array,distributed]")
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import app  # examples/app.py: compiles the model into the build folder if needed
import numpy as np

from runtime_support import batch


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=64)
    parser.add_argument("--chunk", type=int, default=16)
    parser.add_argument("--build", type=Path, default=app.BUILD)
    args = parser.parse_args(argv)

    import dask.array as da
    import dask.bag as db
    from dask.distributed import Client, LocalCluster

    module = app.import_classifier(args.build)  # compiles once if needed
    module_file = module.__file__
    images = app.sample_images(args.images, seed=1)

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as client:  # fmt: skip
        # a Dask array of images, chunked along the batch axis
        lazy = batch.map_array(module_file, da.from_array(images, chunks=(args.chunk, 3, 32, 32)))
        probabilities = lazy.compute()
        # a Dask bag of feeds, one dict per image
        bag = db.from_sequence([{"image": images[i : i + 1]} for i in range(8)], npartitions=4)
        from_bag = [r["probabilities"][0] for r in batch.map_bag(module_file, bag).compute()]
        per_worker = client.run(batch.imports)

    single = module.run(images).probabilities  # the same in one process
    print(f"{args.images} images in chunks of {args.chunk} on 2 worker processes")
    print(f"module imports per worker: {sorted(len(v) for v in per_worker.values())}")
    difference = float(np.max(np.abs(probabilities - single)))
    print(f"largest difference from a single-process run: {difference:.3g}")
    print(f"bag of 8 feeds: classes {[int(np.argmax(p)) for p in from_bag]}")
    if not difference <= 1e-6:
        print("error: the cluster and the single process disagree", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
