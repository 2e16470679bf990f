"""Sidecar weights: a safetensors file, written by the compiler, memory-mapped read-only at import.

Layout (https://github.com/huggingface/safetensors): 8-byte little-endian header length, a JSON
header mapping each tensor name to its dtype, shape and byte range, then the raw little-endian data.
No pickle, no code: standard tools can read the file.

The small types safetensors has no tag for (float8 E4M3FNUZ and E5M2FNUZ, float4 E2M1, int4/uint4,
int2/uint2) are stored as ONNX stores them: the 4- and 2-bit types packed two and four to a byte,
element 0 in the low bits; each as a "U8" tensor of its bytes, its type and shape in the header's
`__metadata__` (`"small:<name>": "<type> <dims...>"`), so that standard tools still read the file.
"""

from __future__ import annotations

import hashlib
import json
import mmap
from pathlib import Path

import numpy as np

from runtime_support._dtypes import PACKED_BITS, dtype_from_name

# safetensors dtype tags <-> numpy dtype names.
SAFETENSORS_DTYPES = {
    "bool": "BOOL",
    "uint8": "U8",
    "int8": "I8",
    "uint16": "U16",
    "int16": "I16",
    "uint32": "U32",
    "int32": "I32",
    "uint64": "U64",
    "int64": "I64",
    "float16": "F16",
    "bfloat16": "BF16",
    "float32": "F32",
    "float64": "F64",
    "float8_e4m3fn": "F8_E4M3",
    "float8_e5m2": "F8_E5M2",
    "float8_e8m0fnu": "F8_E8M0",
}
_NUMPY_NAMES = {tag: name for name, tag in SAFETENSORS_DTYPES.items()}
_ALIGN = 64  # the data section starts at a multiple of this
_SMALL = "small:"  # the __metadata__ key prefix of a tensor stored as its (packed) bytes


def pack(array: np.ndarray) -> np.ndarray:
    """The bytes ONNX stores for `array`: 4- and 2-bit elements packed, element 0 lowest; other
    one-byte types as they are."""
    bits = PACKED_BITS.get(array.dtype.name, 8)
    codes = np.ascontiguousarray(array).reshape(-1).view(np.uint8) & np.uint8((1 << bits) - 1)
    per_byte = 8 // bits
    codes = np.concatenate([codes, np.zeros((-codes.size) % per_byte, np.uint8)])
    grouped = codes.reshape(-1, per_byte).astype(np.uint8)
    shifts = (np.arange(per_byte, dtype=np.uint8) * bits).astype(np.uint8)
    return np.bitwise_or.reduce(grouped << shifts, axis=1).astype(np.uint8)


def unpack(data: np.ndarray, dtype: np.dtype, shape) -> np.ndarray:
    """`pack`'s inverse: an array of `dtype` and `shape` from its stored bytes (read-only)."""
    bits = PACKED_BITS.get(dtype.name, 8)
    count = int(np.prod(shape, dtype=np.int64))
    if bits == 8:
        array = data[:count].view(dtype)
    else:
        shifts = (np.arange(8 // bits, dtype=np.uint8) * bits).astype(np.uint8)
        codes = ((data[:, None] >> shifts) & np.uint8((1 << bits) - 1)).reshape(-1)[:count]
        if dtype.name.startswith("int"):  # sign-extend two's complement
            values = codes.astype(np.int8) - ((codes >> (bits - 1)) << bits).astype(np.int8)
            array = values.astype(dtype)
        elif dtype.name.startswith("uint"):
            array = codes.astype(dtype)
        else:  # float4 E2M1: ml_dtypes reads the code from a byte's low bits
            array = codes.view(dtype)
    array = array.reshape(shape)
    array.flags.writeable = False
    return array


class WeightsError(RuntimeError):
    """The weights file is missing, altered or malformed."""


def encode_weights(tensors: dict[str, np.ndarray]) -> bytes:
    """Serialise `tensors` to safetensors bytes; deterministic.

    The format wants the tensors' byte ranges to cover the data section exactly, with no gaps. So
    tensors are laid out by decreasing element size (in the given order within one size), after a
    header padded to a multiple of 64 bytes: every tensor then starts at a multiple of its own
    element size, and the memory-mapped arrays are aligned.
    """
    header: dict[str, dict] = {}
    metadata: dict[str, str] = {}
    chunks: list[bytes] = []
    offset = 0
    ordered = sorted(tensors.items(), key=lambda item: -np.asarray(item[1]).dtype.itemsize)
    for name, array in ordered:
        array = np.ascontiguousarray(array)
        tag = SAFETENSORS_DTYPES.get(array.dtype.name)
        shape = list(array.shape)
        if tag is None:  # a small type without a safetensors tag: its ONNX bytes
            metadata[_SMALL + name] = " ".join([array.dtype.name, *map(str, array.shape)])
            array = pack(array)
            tag, shape = "U8", [array.size]
        data = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {
            "dtype": tag,
            "shape": shape,
            "data_offsets": [offset, offset + len(data)],  # relative to the data section
        }
        chunks.append(data)
        offset += len(data)
    if metadata:
        header = {"__metadata__": metadata, **header}
    header_bytes = json.dumps(header, sort_keys=False, separators=(",", ":")).encode()
    header_bytes += b" " * ((-(8 + len(header_bytes))) % _ALIGN)
    return len(header_bytes).to_bytes(8, "little") + header_bytes + b"".join(chunks)


def load_weights(path: str | Path, *, sha256: str) -> dict[str, np.ndarray]:
    """Map the weights file read-only and return its tensors as zero-copy, read-only arrays.

    The file must hash to `sha256` (recorded in the generated module): a file that was altered or
    belongs to another compile is refused rather than silently giving wrong results.
    """
    path = Path(path)
    try:
        with open(path, "rb") as handle:
            buffer = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except FileNotFoundError:
        raise WeightsError(f"weights file {path.name!r} not found next to the module") from None
    except ValueError:  # an empty file cannot be mapped
        raise WeightsError(f"weights file {path.name!r} is empty") from None
    digest = hashlib.sha256(buffer).hexdigest()
    if digest != sha256:
        raise WeightsError(
            f"weights file {path.name!r} does not match this module "
            f"(sha256 {digest[:16]}..., expected {sha256[:16]}...); recompile the model"
        )
    header_length = int.from_bytes(buffer[:8], "little")
    header = json.loads(bytes(buffer[8 : 8 + header_length]))
    data_start = 8 + header_length
    tensors = {}
    metadata = header.get("__metadata__") or {}
    for name, entry in header.items():
        if name == "__metadata__":  # the format's optional free-text entry
            continue
        begin, end = entry["data_offsets"]
        dtype = dtype_from_name(_NUMPY_NAMES[entry["dtype"]]).newbyteorder("<")
        count = (end - begin) // dtype.itemsize
        array = np.frombuffer(buffer, dtype=dtype, count=count, offset=data_start + begin)
        small = metadata.get(_SMALL + name)
        if small is not None:
            type_name, *dims = small.split()
            tensors[name] = unpack(array, dtype_from_name(type_name), [int(d) for d in dims])
        else:
            tensors[name] = array.reshape(entry["shape"])
    return tensors


def read_only(array: np.ndarray) -> np.ndarray:
    """`array`, made read-only: a small constant the fast variant builds once at import (a
    literal in `run` was one np.array call per run, about 0.7 us) and `run` must never hand out
    or write."""
    array.flags.writeable = False
    return array


def filled(shape: tuple, value: np.ndarray) -> np.ndarray:
    """A read-only array of `shape` whose elements all equal the 0-d `value`.

    Materialized once at import, not a zero-stride broadcast view: numpy hands no zero-stride
    operand to BLAS, so a uniform weight of a MatMul, Gemm or Conv kept as a view ran numpy's
    naive product on every call (alexnet's fc6 2.7x slower). The memory is what any runtime
    holding the initializer pays."""
    array = np.full(shape, value, dtype=value.dtype)
    array.flags.writeable = False
    return array
