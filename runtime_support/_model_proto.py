"""What InferenceSession needs from an .onnx file without onnx: its metadata and the external data
files it names, read straight from the protobuf wire format.

Only a handful of fields are read (onnx.proto numbers): ModelProto producer_name 2, domain 4,
model_version 5, doc_string 6, graph 7, metadata_props 14; GraphProto name 2, initializer 5,
doc_string 10; TensorProto external_data 13, data_location 14; StringStringEntryProto key 1,
value 2. Everything else is skipped by its wire type, so the reader never interprets the graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field

_VARINT, _FIXED64, _LENGTH, _FIXED32 = 0, 1, 2, 5
_EXTERNAL = 1  # TensorProto.DataLocation.EXTERNAL


class MalformedModel(ValueError):
    """The bytes are not a protobuf message of the shape a ModelProto has."""


@dataclass
class ModelInfo:
    producer_name: str = ""
    domain: str = ""
    model_version: int | None = None  # None: the model sets none
    doc_string: str = ""
    graph_name: str = ""
    graph_doc_string: str = ""
    metadata_props: dict[str, str] = field(default_factory=dict)
    external_data: list[str] = field(default_factory=list)  # locations, in initializer order


def _varint(data: bytes, position: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if position >= len(data):
            raise MalformedModel("truncated varint")
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, position
        shift += 7
        if shift > 63:
            raise MalformedModel("varint longer than 10 bytes")


def _fields(data: bytes, start: int = 0, end: int | None = None):
    """(field number, wire type, value) of each field of the message in data[start:end]; value is
    an int for a varint, a (begin, end) span for a length-delimited field, None otherwise."""
    end = len(data) if end is None else end
    position = start
    while position < end:
        key, position = _varint(data, position)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise MalformedModel("field number 0")
        value: int | tuple[int, int] | None
        if wire == _VARINT:
            value, position = _varint(data, position)
        elif wire == _LENGTH:
            length, position = _varint(data, position)
            value = (position, position + length)
            position += length
        elif wire in (_FIXED64, _FIXED32):
            value, position = None, position + (8 if wire == _FIXED64 else 4)
        else:
            raise MalformedModel(f"unsupported wire type {wire}")
        if position > end:
            raise MalformedModel("field runs past the end of its message")
        yield number, wire, value


def _text(data: bytes, span) -> str:
    return data[span[0] : span[1]].decode("utf-8", errors="replace")


def _entry(data: bytes, span) -> tuple[str, str]:
    key = value = ""
    for number, wire, item in _fields(data, *span):
        if wire == _LENGTH and number == 1:
            key = _text(data, item)
        elif wire == _LENGTH and number == 2:
            value = _text(data, item)
    return key, value


def _external_location(data: bytes, span) -> str | None:
    location, external = None, False
    for number, wire, item in _fields(data, *span):
        if number == 14 and wire == _VARINT:
            external = item == _EXTERNAL
        elif number == 13 and wire == _LENGTH:
            key, value = _entry(data, item)
            if key == "location":
                location = value
    return location if external else None


def read_model_info(data: bytes) -> ModelInfo:
    """The metadata of the serialized ModelProto `data`; MalformedModel if it is not one."""
    info = ModelInfo()
    saw_graph = False
    for number, wire, value in _fields(data):
        if wire == _LENGTH and number == 2:
            info.producer_name = _text(data, value)
        elif wire == _LENGTH and number == 4:
            info.domain = _text(data, value)
        elif wire == _VARINT and number == 5:
            info.model_version = value - (1 << 64) if value >= 1 << 63 else value
        elif wire == _LENGTH and number == 6:
            info.doc_string = _text(data, value)
        elif wire == _LENGTH and number == 14:
            key, text = _entry(data, value)
            info.metadata_props[key] = text
        elif wire == _LENGTH and number == 7:
            saw_graph = True
            for inner, inner_wire, item in _fields(data, *value):
                if inner_wire != _LENGTH:
                    continue
                if inner == 2:
                    info.graph_name = _text(data, item)
                elif inner == 10:
                    info.graph_doc_string = _text(data, item)
                elif inner == 5:
                    location = _external_location(data, item)
                    if location is not None and location not in info.external_data:
                        info.external_data.append(location)
    if not saw_graph:
        raise MalformedModel("no graph")
    return info
