"""Batch inference on Dask: a compiled module mapped over a Dask array or bag (docs/batch.md).

A generated module is a pure function of numpy arrays whose weights are a memory-mapped,
read-only file, so it fits Dask as it is. What travels to the workers is the module's file path,
never the module: each worker process imports it once (`import_module`, cached per process) and
maps its weights file read-only, so the processes of a machine share one copy of the weights in
the page cache. Every worker needs the module's two files at the same path (a shared file system,
or the same image) and numpy plus onemodel-runtime; Dask itself is the application's dependency,
not this package's: it is imported only by the functions below.

    from runtime_support import batch
    probabilities = batch.map_array("build/tiny_classifier.py", images)   # a dask array
    outputs = batch.map_bag("build/tiny_classifier.py", feeds)            # a bag of dicts
"""

from __future__ import annotations

from pathlib import Path

from runtime_support._session import _import_file

_IMPORTS: dict[str, int] = {}  # module file -> times this process imported it (tests read it)


def import_module(module_file: str | Path):
    """The generated module at `module_file`, imported once per process."""
    key = str(Path(module_file).resolve())
    module = _import_file(Path(key))
    if key not in _IMPORTS:
        _IMPORTS[key] = 1
    return module


def imports() -> dict[str, int]:
    """Module files this process imported (each once)."""
    return dict(_IMPORTS)


def _run_block(block, module_file: str, output_index: int):
    return import_module(module_file).run(block)[output_index]


def map_array(module_file: str | Path, array, output: str | None = None):
    """`module.run` over a Dask array holding the batch of a one-input model, block by block
    along axis 0 (the other axes are made one chunk each). Returns a Dask array of the output
    `output` (default: the first); its dims beyond the batch axis must be static."""
    import dask.array as da

    module_file = str(Path(module_file).resolve())
    module = import_module(module_file)  # here too, for INPUTS and OUTPUTS
    if len(module.INPUTS) != 1:
        raise ValueError(
            f"map_array needs a model with one input; this one has {len(module.INPUTS)} "
            "(use map_bag with a dict of inputs per element)"
        )
    names = [name for name, _, _ in module.OUTPUTS]
    index = 0 if output is None else _index(names, output)
    _, dtype, shape = module.OUTPUTS[index]
    rest = tuple(shape[1:]) if shape else ()
    if shape is None or not all(isinstance(d, int) for d in rest):
        raise ValueError(
            f"output {names[index]!r} has shape {shape}: map_array needs its dims after the batch "
            "axis to be static (compile with --input-dim to pin them, or use map_bag)"
        )
    array = array.rechunk({axis: -1 for axis in range(1, array.ndim)})
    return da.map_blocks(
        _run_block,
        array,
        module_file,
        index,
        dtype=dtype,
        chunks=(array.chunks[0], *((d,) for d in rest)),
        drop_axis=list(range(1 + len(rest), array.ndim)) or None,
        new_axis=list(range(array.ndim, 1 + len(rest))) or None,
    )


def _index(names: list[str], output: str) -> int:
    if output not in names:
        raise ValueError(f"unknown output {output!r}; the model's outputs are {names}")
    return names.index(output)


def _run_partition(feeds_list, module_file: str):
    module = import_module(module_file)
    return [module.run_feeds(feeds) for feeds in feeds_list]


def map_bag(module_file: str | Path, bag):
    """`module.run_feeds` over a Dask bag whose elements are dicts of inputs by ONNX name; the
    result is a bag of dicts of outputs by ONNX name."""
    module_file = str(Path(module_file).resolve())
    return bag.map_partitions(_run_partition, module_file)
