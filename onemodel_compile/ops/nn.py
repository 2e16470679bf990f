"""Convolution, pooling, normalization and softmax.

Spatial geometry (auto_pad, kernel shape, default strides and dilations) is settled here at compile
time, so the kernels in runtime_support receive explicit pads, strides and dilations.
"""

from __future__ import annotations

from onemodel_compile.errors import CompileError, UnsupportedError
from onemodel_compile.ops.common import along_axis_rule, need_rank
from onemodel_compile.ops.code import py
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.registry import emitter


def spatial_geometry(view: NodeView, kernel_shape) -> tuple[list[int], list[int], list[int]]:
    """(pads, strides, dilations) with auto_pad resolved against the input's spatial shape."""
    X = view.inputs[0]
    rank = len(kernel_shape)
    strides = list(view.attr("strides") or [1] * rank)
    dilations = list(view.attr("dilations") or [1] * rank)
    auto_pad = view.attr("auto_pad", "NOTSET")
    if auto_pad in ("NOTSET", ""):
        pads = list(view.attr("pads") or [0] * (2 * rank))
    elif auto_pad == "VALID":
        pads = [0] * (2 * rank)
    elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        spatial = X.shape[2:] if X.shape is not None else None
        if spatial is None or not all(isinstance(d, int) for d in spatial):
            raise CompileError(f"{view.node.label}: auto_pad {auto_pad} needs static spatial dims")
        begins, ends = [], []
        for size, k, s, d in zip(spatial, kernel_shape, strides, dilations):
            out = -(-size // s)
            total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
            small, large = total // 2, total - total // 2
            begins.append(small if auto_pad == "SAME_UPPER" else large)
            ends.append(large if auto_pad == "SAME_UPPER" else small)
        pads = begins + ends
    else:
        raise CompileError(f"{view.node.label}: unknown auto_pad {auto_pad!r}")
    return pads, strides, dilations


def _geometry_keywords(pads, strides, dilations) -> str:
    return f"pads={py(pads)}, strides={py(strides)}, dilations={py(dilations)}"


@emitter("Conv", since=1, exact=False)
def conv(view: NodeView) -> str:
    X, W, B = view.inputs[0], view.inputs[1], view.input(2)
    kernel_shape = view.attr("kernel_shape") or (W.shape[2:] if W.shape is not None else None)
    if kernel_shape is None or not all(isinstance(k, int) for k in kernel_shape):
        raise CompileError(f"{view.node.label}: the kernel shape must be static")
    pads, strides, dilations = spatial_geometry(view, kernel_shape)
    bias = f", {B}" if B is not None else ""
    return (
        f"rt.conv({X}, {W}{bias}, {_geometry_keywords(pads, strides, dilations)}, "
        f"group={view.attr('group', 1)})"
    )


@emitter("MaxPool", since=1, exact=True)
def max_pool(view: NodeView) -> str:
    kernel_shape = list(view.attr("kernel_shape"))
    pads, strides, dilations = spatial_geometry(view, kernel_shape)
    keywords = (
        f"kernel_shape={py(kernel_shape)}, {_geometry_keywords(pads, strides, dilations)}, "
        f"ceil_mode={view.attr('ceil_mode', 0)}"
    )
    if view.output(1) is not None:
        keywords += f", storage_order={view.attr('storage_order', 0)}, with_indices=True"
    return f"rt.max_pool({view.inputs[0]}, {keywords})"


@emitter("AveragePool", since=1, exact=False)
def average_pool(view: NodeView) -> str:
    kernel_shape = list(view.attr("kernel_shape"))
    pads, strides, dilations = spatial_geometry(view, kernel_shape)
    return (
        f"rt.average_pool({view.inputs[0]}, kernel_shape={py(kernel_shape)}, "
        f"{_geometry_keywords(pads, strides, dilations)}, ceil_mode={view.attr('ceil_mode', 0)}, "
        f"count_include_pad={view.attr('count_include_pad', 0)})"
    )


def _global_rule(function: str):
    def emit(view: NodeView) -> str:
        axes = tuple(range(2, need_rank(view)))
        return f"{function}({view.inputs[0]}, axis={py(axes)}, keepdims=True)"

    return emit


emitter("GlobalAveragePool", since=1, exact=False)(_global_rule("np.mean"))
emitter("GlobalMaxPool", since=1, exact=True)(_global_rule("np.max"))


@emitter("BatchNormalization", since=7, exact=False)
def batch_normalization(view: NodeView) -> str:
    training = view.attr("training_mode", 0)
    if training or len([o for o in view.outputs if o is not None]) > 1:
        raise UnsupportedError(
            f"{view.node.label}: BatchNormalization in training mode is not supported"
        )
    X, scale, B, mean, var = view.inputs[:5]
    return f"rt.batch_normalization({X}, {scale}, {B}, {mean}, {var}, epsilon={view.attr('epsilon')!r})"


@emitter("LayerNormalization", since=17, exact=False)
def layer_normalization(view: NodeView) -> str:
    X, scale, B = view.inputs[0], view.inputs[1], view.input(2)
    bias = f", {B}" if B is not None else ""
    call = (
        f"rt.layer_normalization({X}, {scale}{bias}, axis={view.attr('axis')}, "
        f"epsilon={view.attr('epsilon')!r}, stash_type={view.attr('stash_type')})"
    )
    count = len(view.outputs)
    return f"{call}[0]" if count == 1 else call if count == 3 else f"{call}[:{count}]"


emitter("Softmax", since=1, exact=False)(along_axis_rule("softmax"))
emitter("LogSoftmax", since=1, exact=False)(along_axis_rule("log_softmax"))
