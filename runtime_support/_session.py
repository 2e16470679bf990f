"""An onnxruntime-compatible facade over a generated module.

`InferenceSession(module)` offers the subset of `onnxruntime.InferenceSession` that applications
use, so switching from onnxruntime is a one-line change.
"""

from __future__ import annotations

from dataclasses import dataclass

# numpy dtype name -> onnxruntime's type string.
_ORT_TYPES = {
    "bool": "tensor(bool)",
    "uint8": "tensor(uint8)",
    "int8": "tensor(int8)",
    "uint16": "tensor(uint16)",
    "int16": "tensor(int16)",
    "uint32": "tensor(uint32)",
    "int32": "tensor(int32)",
    "uint64": "tensor(uint64)",
    "int64": "tensor(int64)",
    "float16": "tensor(float16)",
    "bfloat16": "tensor(bfloat16)",
    "float32": "tensor(float)",
    "float64": "tensor(double)",
}


@dataclass(frozen=True)
class NodeArg:
    """Like onnxruntime.NodeArg: a graph input or output's name, type string and shape."""

    name: str
    type: str
    shape: list


class InferenceSession:
    """Run a generated module through onnxruntime's `run(output_names, input_feed)` API."""

    def __init__(self, module):
        self._module = module
        self._inputs = [self._node_arg(*entry) for entry in module.INPUTS]
        self._outputs = [self._node_arg(*entry) for entry in module.OUTPUTS]

    @staticmethod
    def _node_arg(name, dtype, shape) -> NodeArg:
        return NodeArg(name, _ORT_TYPES.get(dtype, dtype), None if shape is None else list(shape))

    def get_inputs(self) -> list[NodeArg]:
        return list(self._inputs)

    def get_outputs(self) -> list[NodeArg]:
        return list(self._outputs)

    def get_providers(self) -> list[str]:
        return ["CPUExecutionProvider"]

    def run(self, output_names, input_feed, run_options=None) -> list:
        known = {arg.name for arg in self._inputs}
        unknown = sorted(set(input_feed) - known)
        if unknown:
            raise ValueError(f"unknown input name(s) {unknown}; the model has {sorted(known)}")
        missing = [arg.name for arg in self._inputs if arg.name not in input_feed]
        if missing:
            raise ValueError(f"missing input(s) {missing}")
        results = self._module.run_feeds(input_feed)
        if not output_names:
            return [results[arg.name] for arg in self._outputs]
        for name in output_names:
            if name not in results:
                raise ValueError(
                    f"unknown output name {name!r}; the model has {[a.name for a in self._outputs]}"
                )
        return [results[name] for name in output_names]
