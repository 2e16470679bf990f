"""The weights sidecar (docs/contract.md, "Weights"): a safetensors file that standard tools can read,
memory-mapped read-only and zero-copy, checked against the sha256 the module records, so that an
altered, truncated, missing or foreign file is refused at import with an error naming it."""

from __future__ import annotations

import hashlib
import json
import mmap
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import onemodel_compile
import runtime_support
from tests import models

# The safetensors format's dtype tags and their numpy types (from the format's specification).
SAFETENSORS_DTYPES = {
    "BOOL": np.dtype(bool),
    "U8": np.dtype(np.uint8),
    "I8": np.dtype(np.int8),
    "U16": np.dtype("<u2"),
    "I16": np.dtype("<i2"),
    "U32": np.dtype("<u4"),
    "I32": np.dtype("<i4"),
    "U64": np.dtype("<u8"),
    "I64": np.dtype("<i8"),
    "F16": np.dtype("<f2"),
    "F32": np.dtype("<f4"),
    "F64": np.dtype("<f8"),
}
TAG_OF = {dtype.name: tag for tag, dtype in SAFETENSORS_DTYPES.items()}


def parse_safetensors(data: bytes) -> dict[str, np.ndarray]:
    """Read a safetensors file by the format's rules, independently of runtime_support: an 8-byte
    little-endian header size, a JSON object, then a data buffer that the tensors' data_offsets
    (relative to the buffer) cover completely, in order, without holes or overlaps."""
    assert len(data) >= 8, "shorter than the header size field"
    size = int.from_bytes(data[:8], "little")
    assert 8 + size <= len(data), "the header runs past the end of the file"
    text = data[8 : 8 + size].decode("utf-8")
    assert text.startswith("{"), "the header must be a JSON object"
    header = json.loads(text)
    assert isinstance(header, dict)
    buffer = data[8 + size :]
    metadata = header.pop("__metadata__", {})
    assert isinstance(metadata, dict)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())
    tensors = {}
    spans = []
    for name, entry in header.items():
        assert set(entry) == {"dtype", "shape", "data_offsets"}, (name, entry)
        assert entry["dtype"] in SAFETENSORS_DTYPES, (name, entry["dtype"])
        dtype = SAFETENSORS_DTYPES[entry["dtype"]]
        shape = entry["shape"]
        assert isinstance(shape, list) and all(isinstance(d, int) and d >= 0 for d in shape)
        begin, end = entry["data_offsets"]
        assert isinstance(begin, int) and isinstance(end, int) and 0 <= begin <= end
        count = int(np.prod(shape, dtype=np.int64))
        assert end - begin == count * dtype.itemsize, (name, "byte range does not fit the shape")
        spans.append((begin, end, name))
        tensors[name] = np.frombuffer(buffer, dtype=dtype, count=count, offset=begin).reshape(shape)
    position = 0
    for begin, end, name in sorted(spans):
        assert begin == position, f"tensor {name!r} starts at {begin}, expected {position}"
        position = end
    assert position == len(
        buffer
    ), f"the data buffer has {len(buffer) - position} bytes no tensor covers"
    return tensors


def mixed_dtype_model():
    """One weight per element type, each with an odd number of elements, so that no tensor's size
    is a multiple of another's alignment."""
    r = models.rng(7)
    specs = [
        ("float32", TensorProto.FLOAT, 17, "Add"),
        ("float64", TensorProto.DOUBLE, 19, "Add"),
        ("int64", TensorProto.INT64, 18, "Add"),
        ("float16", TensorProto.FLOAT16, 21, "Add"),
        ("int32", TensorProto.INT32, 23, "Mul"),
        ("uint8", TensorProto.UINT8, 25, "Add"),
        ("int8", TensorProto.INT8, 27, "Add"),
        ("bool", TensorProto.BOOL, 33, "And"),
    ]
    inputs, outputs, inits, nodes, weights = [], [], [], [], {}
    for dtype, code, size, op in specs:
        if dtype == "bool":
            value = r.integers(0, 2, size).astype(bool)
        elif np.dtype(dtype).kind == "f":
            value = r.standard_normal(size).astype(dtype)
        else:
            value = r.integers(-5 if np.dtype(dtype).kind == "i" else 0, 9, size).astype(dtype)
        weights[f"w_{dtype}"] = value
        inits.append(numpy_helper.from_array(value, f"w_{dtype}"))
        inputs.append(helper.make_tensor_value_info(f"x_{dtype}", code, [size]))
        outputs.append(helper.make_tensor_value_info(f"y_{dtype}", code, [size]))
        nodes.append(
            helper.make_node(op, [f"x_{dtype}", f"w_{dtype}"], [f"y_{dtype}"], name=f"{op}_{dtype}")
        )
    graph = helper.make_graph(nodes, "dtypes", inputs, outputs, inits)
    return models.finish(graph, 17), weights


@pytest.fixture
def compiled(tmp_path):
    model = models.mlp_model(seed=0)
    path = onemodel_compile.compile_model(model, tmp_path / "out" / "net.py")
    weights = path.with_name("net.weights.safetensors")
    assert weights.is_file()
    return model, path, weights


# --- tampering ------------------------------------------------------------------------------


def _flip_data_byte(weights: Path, tmp_path: Path) -> None:
    data = bytearray(weights.read_bytes())
    data[-3] ^= 0x01
    weights.write_bytes(bytes(data))


def _flip_header_byte(weights: Path, tmp_path: Path) -> None:
    data = bytearray(weights.read_bytes())
    position = data.index(b'"shape"') + 2
    data[position] ^= 0x20  # "shape" -> "sHape": still JSON, another key
    weights.write_bytes(bytes(data))


def _truncate(weights: Path, tmp_path: Path) -> None:
    weights.write_bytes(weights.read_bytes()[:-1])


def _truncate_to_header(weights: Path, tmp_path: Path) -> None:
    data = weights.read_bytes()
    weights.write_bytes(data[: 8 + int.from_bytes(data[:8], "little")])


def _empty(weights: Path, tmp_path: Path) -> None:
    weights.write_bytes(b"")


def _append(weights: Path, tmp_path: Path) -> None:
    weights.write_bytes(weights.read_bytes() + b"\0")


def _missing(weights: Path, tmp_path: Path) -> None:
    weights.unlink()


def _foreign(weights: Path, tmp_path: Path) -> None:
    """The weights of another compile (same architecture, other values) under the same name."""
    other = onemodel_compile.compile_model(models.mlp_model(seed=1), tmp_path / "other" / "net.py")
    foreign = other.with_name("net.weights.safetensors")
    assert foreign.read_bytes() != weights.read_bytes()
    shutil.copyfile(foreign, weights)


TAMPERING = {
    "one data byte flipped": _flip_data_byte,
    "one header byte flipped": _flip_header_byte,
    "truncated by one byte": _truncate,
    "truncated to its header": _truncate_to_header,
    "empty": _empty,
    "one byte appended": _append,
    "missing": _missing,
    "another compile's weights": _foreign,
}


@pytest.mark.parametrize("case", sorted(TAMPERING))
def test_tampered_weights_are_refused_at_import(compiled, tmp_path, case):
    _, path, weights = compiled
    TAMPERING[case](weights, tmp_path)
    with pytest.raises(runtime_support.WeightsError) as info:
        models.import_generated(path)
    message = str(info.value)
    assert weights.name in message, message
    assert "\n" not in message.strip()


def test_weights_of_an_identical_compile_are_accepted(compiled, tmp_path):
    model, path, weights = compiled
    again = onemodel_compile.compile_model(model, tmp_path / "again" / "net.py")
    shutil.copyfile(again.with_name(weights.name), weights)
    module = models.import_generated(path)
    x = np.ones((2, 4), dtype=np.float32)
    np.testing.assert_allclose(
        module.run(x).probs, models.mlp_reference(model, x)["probs"], rtol=1e-5, atol=1e-6
    )


def test_load_weights_checks_the_digest(compiled):
    _, _, weights = compiled
    digest = hashlib.sha256(weights.read_bytes()).hexdigest()
    tensors = runtime_support.load_weights(weights, sha256=digest)
    assert tensors
    wrong = ("0" if digest[0] != "0" else "1") + digest[1:]
    with pytest.raises(runtime_support.WeightsError, match=weights.name.replace(".", r"\.")):
        runtime_support.load_weights(weights, sha256=wrong)


# --- read-only, zero-copy -------------------------------------------------------------------


def _mapping_of(array: np.ndarray):
    """The mmap at the end of `array`'s base chain, or None."""
    base = array
    while isinstance(base, np.ndarray):
        base = base.base
    while isinstance(base, memoryview):
        base = base.obj
    return base if isinstance(base, mmap.mmap) else None


def _weight_arrays(module) -> dict[str, np.ndarray]:
    """Arrays of the module backed by a memory map: globals, or values of global dicts."""
    found: dict[tuple, tuple[str, np.ndarray]] = {}
    for name, value in vars(module).items():
        candidates = value.items() if isinstance(value, dict) else [(name, value)]
        for key, array in candidates:
            if isinstance(array, np.ndarray) and _mapping_of(array) is not None:
                # a global and its dict entry are the same data: count it once
                where = (array.__array_interface__["data"][0], array.shape, array.dtype.str)
                found.setdefault(where, (str(key), array))
    return dict(found.values())


def test_module_weights_are_read_only_zero_copy_views_of_the_file(compiled):
    model, path, weights = compiled
    module = models.import_generated(path)
    arrays = _weight_arrays(module)
    initializers = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    on_file = parse_safetensors(weights.read_bytes())
    assert len(arrays) == len(on_file) >= 2
    for name in ("W1", "W2"):  # the large initializers
        matches = [
            a
            for a in arrays.values()
            if a.shape == initializers[name].shape and np.array_equal(a, initializers[name])
        ]
        assert len(matches) == 1, f"initializer {name} is not bound to a weights-file array"
    for name, array in arrays.items():
        assert not array.flags.writeable, name
        assert array.flags.aligned, f"{name} is not aligned to its element size"
        mapping = _mapping_of(array)
        assert np.shares_memory(array, np.frombuffer(mapping, dtype=np.uint8)), name
        with pytest.raises(ValueError):
            array[(0,) * array.ndim] = 1
    # the memory map is the file itself, not a copy of it
    mapping = _mapping_of(next(iter(arrays.values())))
    assert len(mapping) == weights.stat().st_size
    assert mapping[:] == weights.read_bytes()


def test_load_weights_arrays_are_read_only_and_share_the_map(tmp_path):
    model, values = mixed_dtype_model()
    path = onemodel_compile.compile_model(model, tmp_path / "dtypes.py")
    weights = path.with_name("dtypes.weights.safetensors")
    digest = hashlib.sha256(weights.read_bytes()).hexdigest()
    tensors = runtime_support.load_weights(weights, sha256=digest)
    assert len(tensors) == len(values)
    for name, array in tensors.items():
        assert not array.flags.writeable, name
        assert array.flags.aligned, f"{name} ({array.dtype}) is not aligned to its element size"
        mapping = _mapping_of(array)
        assert mapping is not None, f"{name} is not a view of the memory map"
        assert np.shares_memory(array, np.frombuffer(mapping, dtype=np.uint8))
    assert sorted(tuple(sorted(a.tobytes() for a in tensors.values()))) == sorted(
        v.astype(v.dtype.newbyteorder("<")).tobytes() for v in values.values()
    )


# --- the file format ------------------------------------------------------------------------


def test_weights_file_is_valid_safetensors(compiled):
    model, _, weights = compiled
    tensors = parse_safetensors(weights.read_bytes())
    initializers = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for name in ("W1", "W2"):
        want = initializers[name]
        assert any(
            t.dtype == want.dtype and t.shape == want.shape and np.array_equal(t, want)
            for t in tensors.values()
        ), name


def test_weights_file_with_every_dtype_is_valid_safetensors(tmp_path):
    model, values = mixed_dtype_model()
    path = onemodel_compile.compile_model(model, tmp_path / "dtypes.py")
    data = path.with_name("dtypes.weights.safetensors").read_bytes()
    tensors = parse_safetensors(data)
    header = json.loads(data[8 : 8 + int.from_bytes(data[:8], "little")])
    assert len(tensors) == len(values)
    for want in values.values():
        found = [
            name
            for name, t in tensors.items()
            if t.shape == want.shape and t.dtype == want.dtype and np.array_equal(t, want)
        ]
        assert len(found) == 1, f"no {want.dtype} tensor of the right values"
        assert header[found[0]]["dtype"] == TAG_OF[want.dtype.name]

    module = models.import_generated(path)
    feeds = {
        f"x_{dtype}": np.ones_like(value)
        for dtype, value in ((k[2:], v) for k, v in values.items())
    }
    expected = models.ort_run(model, feeds)
    got = module.run_feeds(feeds)
    for name, want in expected.items():
        np.testing.assert_array_equal(got[name], want, err_msg=name)


def test_weights_are_never_pickled(compiled):
    _, path, weights = compiled
    assert not weights.read_bytes().startswith(b"\x80"), "pickle protocol header"
    sources = [path.read_text()] + [
        p.read_text() for p in Path(runtime_support.__file__).parent.glob("*.py")
    ]
    for text in sources:
        assert not re.search(r"^\s*(import|from)\s+(c?pickle|joblib|dill)\b", text, re.M)
        assert "pickle.load" not in text and "allow_pickle=True" not in text


def test_recompiling_without_weights_removes_the_stale_file(compiled):
    """A model with only inline constants compiled over a module that had weights: the old
    weights file goes once the new module is written, and the new module imports and runs."""
    _, path, weights = compiled
    onemodel_compile.compile_model(models.relu_model(), path)
    assert not weights.exists()
    module = models.import_generated(path)
    x = np.array([[-1.0, 2.0, 0.5], [3.0, -4.0, 0.0]], dtype=np.float32)
    np.testing.assert_array_equal(module.run(x)[0], np.maximum(x, 0))


def test_a_failed_compile_keeps_the_previous_weights(compiled):
    _, path, weights = compiled
    before = weights.read_bytes()
    broken = models.relu_model()
    broken.graph.node[0].op_type = "NoSuchOperator"
    with pytest.raises(onemodel_compile.CompileError):
        onemodel_compile.compile_model(broken, path)
    assert weights.read_bytes() == before
