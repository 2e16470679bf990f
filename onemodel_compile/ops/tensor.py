"""Tensor operators: shapes, slicing, padding and tiling, block rearrangements, triangles, casts
and constants. All exact: data movement, and casts (correctly rounded conversions)."""

from __future__ import annotations

import typing

import numpy as np

from onemodel_compile import ir
from onemodel_compile.errors import CompileError, UnsupportedError
from onemodel_compile.ops import pyir
from onemodel_compile.ops.common import (
    RunTime,
    ints_from,
    is_float,
    normalize_axis,
    optional_arguments,
    span,
)
from onemodel_compile.ops.node import NodeView, Operand
from onemodel_compile.ops.pyir import attr, call, index, method, tuple_of
from onemodel_compile.ops.registry import emitter
from runtime_support._dtypes import ML_DTYPES
from runtime_support.tensor import clamp_bound


def _static(shape) -> bool:
    return shape is not None and all(isinstance(d, int) for d in shape)


# --- constants -------------------------------------------------------------------------------

_CONSTANT_ATTRIBUTES = {
    "value": lambda v: v,
    "value_float": lambda v: np.array(v, dtype=np.float32),
    "value_floats": lambda v: np.array(v, dtype=np.float32),
    "value_int": lambda v: np.array(v, dtype=np.int64),
    "value_ints": lambda v: np.array(v, dtype=np.int64),
}


def _constant_value(view: NodeView) -> np.ndarray:
    for name, convert in _CONSTANT_ATTRIBUTES.items():
        if name in view.attrs:
            return convert(view.attrs[name])
    present = ", ".join(sorted(view.attrs)) or "none"
    raise UnsupportedError(f"{view.node.label}: unsupported Constant attribute ({present})")


@emitter("Constant", since=1, exact=True, fold=lambda view: [_constant_value(view)])
def constant(view: NodeView) -> pyir.Expr:
    return pyir.Const(_constant_value(view), view.out.name)  # never reached: the fold applies


def _fill_value(view: NodeView) -> np.ndarray:
    value = view.attr("value")
    return np.zeros(1, dtype=np.float32) if value is None else np.asarray(value).reshape(-1)


def _fold_constant_of_shape(view: NodeView):
    """A known shape folds to a broadcast view of the one value: no memory, however large (the
    emit stage rebuilds it the same way instead of storing it)."""
    shape = view.const(0)
    if shape is None:
        return None
    return [np.broadcast_to(_fill_value(view)[0], tuple(int(d) for d in shape))]


@emitter("ConstantOfShape", since=9, exact=True, fold=_fold_constant_of_shape)
def constant_of_shape(view: NodeView) -> pyir.Expr:
    value = _fill_value(view)
    shape = view.const(0)
    target: tuple[int, ...] | pyir.Expr
    if shape is not None:
        target = tuple(int(d) for d in shape)
    else:
        target = _values_tuple(view.inputs[0]) or call("tuple", view.inputs[0])
    return call("rt.constant_of_shape", target, value[0].item(), dtype=value.dtype)  # size checked


def _values_tuple(operand) -> pyir.Tuple | None:
    """A shape value's elements as a tuple of Python ints (resolve's shape arithmetic), or None
    when the operand is not one."""
    return None if operand.values is None else tuple_of(operand.value_nodes)


# --- identity, casts -------------------------------------------------------------------------


@emitter("Identity", since=1, exact=True)
def identity(view: NodeView) -> pyir.Expr:
    return pyir.expr(view.inputs[0])


# A float to integer conversion out of the target's range (NaN and infinities included) is
# undefined in ONNX: the fast variant gives numpy's (on x86-64 what onnxruntime gives too), the
# exact variant defines it (rt.cast: truncation, NaN to 0, saturation) so that every machine
# agrees. To and from the small types (float8, float4, 4- and 2-bit integers, ml_dtypes' arrays)
# rt.cast_small converts, with `saturate` and `round_mode` (float8 targets only).
SMALL_TYPES = frozenset(ML_DTYPES) - {"bfloat16"}


def _cast(view: NodeView, target) -> pyir.Expr:
    X = view.inputs[0]
    if target.name in SMALL_TYPES or (X.dtype is not None and X.dtype.name in SMALL_TYPES):
        keywords = {}
        if target.name.startswith("float8") and not view.attr("saturate"):
            keywords["saturate"] = False
        if target.name == "float8_e8m0fnu":
            keywords["round_mode"] = view.attr("round_mode")
        return call("rt.cast_small", X, to=target, **keywords)
    if view.variant.exact and is_float(X.dtype) and target.kind in "iu":
        return call("rt.cast", X, to=target)
    if X.dtype == target:
        return pyir.expr(X)  # a cast to its own type is the identity (astype would copy)
    return method(X, "astype", target)


@emitter("Cast", since=6, exact=True)
def cast(view: NodeView) -> pyir.Expr:
    return _cast(view, ir.element_dtype(view.attr("to"), view.node.label))


@emitter("CastLike", since=15, exact=True)
def cast_like(view: NodeView) -> pyir.Expr:
    like = view.inputs[1]
    if like.dtype is None:  # known only at run time (a function body's CastLike): numpy's cast
        return method(view.inputs[0], "astype", attr(like, "dtype"))
    return _cast(view, like.dtype)


@emitter("BitCast", since=26, exact=True)
def bit_cast(view: NodeView) -> pyir.Expr:
    X = view.inputs[0]
    target = ir.element_dtype(view.attr("to"), view.node.label)
    if X.dtype is not None and X.dtype.itemsize != target.itemsize:
        raise CompileError(
            f"{view.node.label}: BitCast from {X.dtype} to {target} changes the element size"
        )
    return method(X, "view", target)


@emitter("Dropout", since=7, exact=True, foldable=False)
def dropout(view: NodeView) -> pyir.Expr:
    X, training = view.inputs[0], view.input(2)
    wants_mask = view.output(1) is not None
    if training is None or (training.const is not None and not bool(training.const)):
        if not wants_mask:
            return pyir.expr(X)  # inference: the identity
        mask_dtype = view.outputs[1].dtype or np.dtype(bool)
        return tuple_of([X, call("np.ones", attr(X, "shape"), dtype=mask_dtype)])
    # Training mode (opset 12+): the mask comes from numpy's seeded legacy generator.
    args, keywords = optional_arguments(view, {1: "ratio", 2: "training_mode"})
    keywords["seed"] = view.attr("seed")
    if wants_mask:
        keywords["with_mask"] = True
    return call("rt.dropout", *args, **keywords)


# --- shapes ------------------------------------------------------------------------------------


def _shape_bounds(view: NodeView) -> tuple[int, int | None]:
    """Shape's `start` and `end` (from opset 15). ONNX clamps them as a Python slice does."""
    if view.opset < 15:
        return 0, None
    return view.attr("start"), view.attr("end")


def _fold_shape(view: NodeView):
    shape = view.inputs[0].shape
    if not _static(shape):
        return None
    start, end = _shape_bounds(view)
    return [np.array(shape[start:end], dtype=np.int64)]


@emitter("Shape", since=1, exact=True, fold=_fold_shape)
def shape(view: NodeView) -> pyir.Expr:
    X = view.inputs[0]
    start, end = _shape_bounds(view)
    dims = attr(X, "shape")
    if start == 0 and end is None:
        return call("np.array", dims, dtype=np.int64)
    return call("np.array", index(dims, span(start or None, end)), dtype=np.int64)


def _fold_size(view: NodeView):
    shape = view.inputs[0].shape
    return [np.array(int(np.prod(shape)), dtype=np.int64)] if _static(shape) else None


@emitter("Size", since=1, exact=True, fold=_fold_size)
def size(view: NodeView) -> pyir.Expr:
    return call("np.array", attr(view.inputs[0], "size"), dtype=np.int64)


@emitter("Reshape", since=5, exact=True)
def reshape(view: NodeView) -> pyir.Expr:
    X, target_operand = view.inputs[:2]
    allowzero = view.attr("allowzero", 0)
    target = view.const(1)
    if target is None and target_operand.values is not None:
        # elements computed from dims: a 0 element is the size 0, not a copy of X's dim
        # (docs/decisions.md); a literal 0 still copies
        dims = [
            index(attr(X, "shape"), i) if d == 0 and not allowzero else code
            for i, (d, code) in enumerate(zip(target_operand.values, target_operand.value_nodes))
        ]
        return method(X, "reshape", tuple_of(dims))
    if target is None:
        return call("rt.reshape", X, target_operand, allowzero=allowzero)
    dims = [int(d) for d in target]
    if not allowzero and 0 in dims:
        if X.shape is None or len(dims) > len(X.shape):
            return call("rt.reshape", X, target_operand, allowzero=0)
        dims = [X.shape[i] if d == 0 else d for i, d in enumerate(dims)]
        if not all(isinstance(d, int) for d in dims):  # copied dims read at run time
            codes = [
                d if isinstance(d, int) else view.dim(d) or index(attr(X, "shape"), i)
                for i, d in enumerate(dims)
            ]
            return method(X, "reshape", tuple_of(codes))
    return method(X, "reshape", tuple(dims))


@emitter("Flatten", since=1, exact=True)
def flatten(view: NodeView) -> pyir.Expr:
    X = view.inputs[0]
    rank = X.rank
    axis = view.attr("axis")
    if rank is None:  # the kernel normalizes the axis against the run-time rank
        return call("rt.flatten", X, axis=axis)
    axis = axis + rank if axis < 0 else axis
    outer, inner = X.shape[:axis], X.shape[axis:]
    if _static(outer) and _static(inner):
        return method(X, "reshape", int(np.prod(outer)), int(np.prod(inner)))
    if _static(inner) and np.prod(inner) > 0:  # -1 is only unambiguous for a non-empty side
        return method(X, "reshape", -1, int(np.prod(inner)))
    if _static(outer) and np.prod(outer) > 0:
        return method(X, "reshape", int(np.prod(outer)), -1)
    dims = attr(X, "shape")
    outer_size = call("int", call("np.prod", index(dims, span(stop=axis))))
    inner_size = call("int", call("np.prod", index(dims, span(start=axis))))
    return method(X, "reshape", outer_size, inner_size)


@emitter("Transpose", since=1, exact=True)
def transpose(view: NodeView) -> pyir.Expr:
    X = view.inputs[0]
    perm = view.attr("perm")
    if not perm and X.rank is None:
        return method(X, "transpose")  # numpy's default, as ONNX's: the axes reversed
    perm = perm or list(reversed(range(X.rank)))
    return method(X, "transpose", tuple(int(p) for p in perm))


# Unsqueeze and Squeeze of a known rank are subscripts (`x[:, None]`, `x[:, 0]`): the same view
# for a tenth of np.expand_dims's or np.squeeze's cost (about 1.5 us of axis normalization each),
# which exporters' shape plumbing pays many times per run.


@emitter("Unsqueeze", since=1, exact=True)
def unsqueeze(view: NodeView) -> pyir.Expr:
    X = view.inputs[0]
    axes = ints_from(view, "axes", 1, since=13)  # a scalar axes input is one axis
    if isinstance(axes, RunTime):
        return call("rt.unsqueeze", X, axes)
    if X.rank is None and not view.variant.exact and axes and min(axes) >= 0:
        # the fast variant, rank unknown (a value out of an If): non-negative axes count from
        # the front, so the subscript is the same for any rank (`x[None]` for axis 0)
        new = set(axes)
        if len(new) == len(axes):
            items = [pyir.Lit(None) if axis in new else span() for axis in range(max(new) + 1)]
            return index(X, _subscript(items))
    if X.rank is None and not view.variant.exact and axes and max(axes) < 0:
        # negative axes count from the back, so the subscript after an Ellipsis is the same for
        # any rank (`x[..., None]` for axis -1; silero-vad's decoder: 4.6 us as np.expand_dims)
        new = set(axes)
        if len(new) == len(axes):
            items = [pyir.Lit(None) if axis in new else span() for axis in range(min(new), 0)]
            return index(X, _subscript([pyir.ELLIPSIS, *items]))
    if X.rank is None:
        return call("np.expand_dims", X, tuple(axes))
    rank = X.rank + len(axes)
    new = {normalize_axis(a, rank, view) for a in axes}
    if len(new) != len(axes):
        return call("np.expand_dims", X, tuple(axes))  # numpy's error for a repeated axis
    items = [pyir.Lit(None) if axis in new else span() for axis in range(max(new) + 1)]
    return index(X, _subscript(items))


@emitter("Squeeze", since=1, exact=True)
def squeeze(view: NodeView) -> pyir.Expr:
    X = view.inputs[0]
    axes = ints_from(view, "axes", 1, since=13)
    if isinstance(axes, RunTime):
        return call("rt.squeeze", X, axes)
    if not axes:
        return call("np.squeeze", X)
    if X.shape is not None:
        dropped = {normalize_axis(a, X.rank, view) for a in axes}
        # only dims known to be 1: indexing a longer axis would take its first element where
        # np.squeeze raises
        if all(X.shape[a] == 1 for a in dropped) and len(dropped) == len(axes):
            if len(dropped) == X.rank:
                return method(X, "reshape", ())  # (an int subscript of every axis: a scalar)
            items = [0 if axis in dropped else span() for axis in range(max(dropped) + 1)]
            return index(X, _subscript(items))
    return call("np.squeeze", X, tuple(axes))


def _shape_nodes(view: NodeView, shape) -> pyir.Tuple | None:
    """`shape` computed at run time (NodeView.dim for each dim), or None when a dim cannot be."""
    dims = None if shape is None else [view.dim(d) for d in shape]
    return None if dims is None or None in dims else tuple_of(dims)


@emitter("Expand", since=8, exact=True)
def expand(view: NodeView) -> pyir.Expr:
    X = view.inputs[0]
    target = view.const(1)
    if target is not None and _static(X.shape):
        out = np.broadcast_shapes(tuple(X.shape), tuple(int(d) for d in target))
        return call("rt.expand", X, out)  # the kernel checks the size first
    dims = _shape_nodes(view, view.out.shape) if view.inputs[1].values is not None else None
    return call("rt.expand", X, view.inputs[1] if dims is None else dims)


@emitter("Concat", since=4, exact=True)
def concat(view: NodeView) -> pyir.Expr:
    parts = [x for x in view.inputs if x is not None]
    return call("np.concatenate", tuple_of(parts), axis=view.attr("axis"))


def _split_sizes(view: NodeView, sizes: list[int] | None, dim, count: int) -> list[int]:
    """The sizes of the parts: `sizes` as given, else equal parts of the static `dim`."""
    if sizes:
        return sizes
    if not isinstance(dim, int):
        raise CompileError(f"{view.node.label}: the split axis must have a static size")
    if view.opset >= 18 and view.attr("num_outputs") is not None:
        chunk = -(-dim // count)
        return [min(chunk, dim - i * chunk) for i in range(count)]
    if dim % count:
        raise CompileError(f"{view.node.label}: {dim} does not split into {count} equal parts")
    return [dim // count] * count


def _split(view: NodeView, parts) -> pyir.Expr:
    """Split: a copy for one output, rt.split when the sizes are known only at run time, else
    `parts(X, axis, bounds)` with the static bounds between the parts."""
    X = view.inputs[0]
    axis = view.attr("axis")
    if X.rank is not None:
        axis = normalize_axis(axis, X.rank, view)
    count = len(view.outputs)
    if count == 1:
        return method(X, "copy")
    sizes = ints_from(view, "split", 1, since=13)
    dim = X.shape[axis] if X.shape is not None else None
    if isinstance(sizes, RunTime) or (not sizes and not isinstance(dim, int)):
        split_sizes = [sizes] if isinstance(sizes, RunTime) else []  # none: equal parts
        return call("rt.split", X, *split_sizes, axis=axis, outputs=count)
    bounds = [int(b) for b in np.cumsum(_split_sizes(view, sizes, dim, count))[:-1]]
    return parts(X, axis, bounds)


def _split_slices(X, axis: int, bounds: list[int]) -> pyir.Expr:
    """The parts as basic slices, `X[:, 256:512]`: the same views np.split makes, without its
    Python-level set-up (about 7 us for three parts of a small tensor)."""
    if axis < 0:  # rank unknown: np.split counts the axis from the end
        return call("np.split", X, bounds, axis=axis)
    edges = [None, *bounds, None]
    return tuple_of(
        index(X, _subscript([span()] * axis + [span(start, stop)]))
        for start, stop in zip(edges, edges[1:])
    )


def _subscript(items: list) -> pyir.Expr:
    """Subscript items as a key: one item alone (`X[1:3]`), more as a tuple (`X[:, 1:3]`)."""
    return items[0] if len(items) == 1 else tuple_of(items)


@emitter("Split", since=2, exact=True)
def split(view: NodeView) -> pyir.Expr:
    return _split(view, _split_slices)


@emitter("Split", since=2, variant="exact", exact=True)
def split_exact(view: NodeView) -> pyir.Expr:
    """The exact variant's code as it was (the same views as the fast variant's slices)."""
    return _split(view, lambda X, axis, bounds: call("np.split", X, bounds, axis=axis))


_SLICE_INPUTS = ("starts", "ends", "axes", "steps")


def _slice_parts(view: NodeView):
    if view.opset < 10:
        starts, ends = view.attr("starts"), view.attr("ends")
        axes, steps = view.attr("axes"), None
    else:
        given = [ints_from(view, name, i, since=10) for i, name in enumerate(_SLICE_INPUTS, 1)]
        if any(isinstance(v, RunTime) for v in given):
            return None
        starts, ends, axes, steps = typing.cast("list[list[int] | None]", given)
    rank = view.inputs[0].rank  # known: slice_ asks only then
    axes = list(range(len(starts))) if not axes else [normalize_axis(a, rank, view) for a in axes]
    steps = steps or [1] * len(starts)
    return rank, list(zip(axes, starts, ends, steps))


_BEYOND_ANY_DIM = 2**62  # an end bound at least this is past the end of every axis


@emitter("Slice", since=1, exact=True)
def slice_(view: NodeView) -> pyir.Expr:
    X = view.inputs[0]
    found = _slice_parts(view) if X.rank is not None else None
    if found is None:  # bounds or rank known only at run time
        if view.opset < 10:
            bounds = [view.attr(name) for name in ("starts", "ends", "axes")]
            return call("rt.slice_", X, *[b for b in bounds if b is not None])
        args, keywords = optional_arguments(view, {3: "axes", 4: "steps"})
        return call("rt.slice_", *args, **keywords)
    rank, parts = found
    items = [span()] * rank
    for axis, start, end, step in parts:
        if step == 0:
            raise CompileError(f"{view.node.label}: a slice step cannot be 0")
        dim = X.shape[axis] if X.shape is not None else None
        if isinstance(dim, int):
            start, end = clamp_bound(start, dim, step, False), clamp_bound(end, dim, step, True)
            if step > 0 and end == dim:
                end = None
        if step > 0 and start == 0:
            start = None
        if step > 0 and end is not None and end >= _BEYOND_ANY_DIM:
            end = None  # exporters' "to the end" (INT64_MAX): Python clamps the same way
        items[axis] = span(start, end, step if step != 1 else None)
    while items and items[-1] == span():
        items.pop()
    # a slice that keeps everything is the value itself, as Identity (a view either way)
    return index(X, _subscript(items)) if items else pyir.expr(X)


def _range(view: NodeView, stash) -> pyir.Expr:
    start, limit, delta = view.inputs[:3]
    dtype = start.dtype
    if not is_float(dtype) and all(x.rank == 0 for x in (start, limit, delta)):
        bounds = [
            x.value_nodes[0] if x.values is not None else int(x.const) if x.const is not None else x
            for x in (start, limit, delta)
        ]
        return call("rt.arange", *bounds, dtype=dtype)  # the kernel checks the size first
    if stash is None:
        return call("rt.range_", start, limit, delta)
    bounds = [method(x, "astype", stash) for x in (start, limit, delta)]
    return method(call("rt.range_", *bounds), "astype", dtype)


@emitter("Range", since=11, until=26, exact=True)
def range_(view: NodeView) -> pyir.Expr:
    return _range(view, None)


@emitter("Range", since=27, exact=True)
def range_stashed(view: NodeView) -> pyir.Expr:
    """float16 and bfloat16 are computed in `stash_type` (float32 by default)."""
    low_precision = view.inputs[0].dtype.name in ("float16", "bfloat16")
    stash = ir.element_dtype(view.attr("stash_type"), view.node.label) if low_precision else None
    return _range(view, stash)


# --- tiling, padding, cropping -----------------------------------------------------------------


@emitter("Tile", since=6, exact=True)
def tile(view: NodeView) -> pyir.Expr:
    X, repeats = view.inputs[:2]
    if repeats.const is not None:  # the kernel checks the size first
        return call("rt.tile", X, tuple(int(r) for r in repeats.const.reshape(-1)))
    return call("rt.tile", X, _values_tuple(repeats) or repeats)


@emitter("Pad", since=2, exact=True)
def pad(view: NodeView) -> pyir.Expr:
    X = view.inputs[0]
    mode = view.attr("mode")
    pads: list[int] | RunTime | None
    axes: list[int] | RunTime | None
    value: pyir.Expr | Operand | None
    if view.opset < 11:
        pads, axes = list(view.attr("pads")), None
        value = pyir.scalar(view.attr("value"), X.dtype)
    else:
        pads = ints_from(view, "pads", 1, since=11)
        axes = ints_from(view, "axes", 3, since=18)
        value = view.input(2)
    reflected = _reflect_one_axis(view, X, mode, pads, axes)
    if reflected is not None:
        return reflected
    # one kernel call whatever is known: rt.pad checks the result's size before allocating it
    args: list[object] = [X, pads]
    keywords = {}
    if value is not None:
        args.append(value)
    if axes is not None and value is None:
        keywords["axes"] = axes  # no constant value before it: a keyword
    elif axes is not None:
        args.append(axes)
    return call("rt.pad", *args, **keywords, mode=mode)


def _reflect_one_axis(view: NodeView, X, mode, pads, axes) -> pyir.Expr | None:
    """The fast variant's reflect Pad of one axis whose size is known, pads shorter than it (an
    STFT's framing pad of audio): the pad planned at compile time as one np.concatenate of the
    mirrored views and X (`np.concatenate((x[:, 3:0:-1], x, x[:, -2:-8:-1]), axis=1)`, 2-3 us)
    where rt.pad's run-time plan and its border assignments took 8-14 us. The same values
    (data movement); the exact variant keeps rt.pad's call. An axis of unknown size:
    rt.pad_reflect_axis, the same plan with the sizes checked at run time."""
    if view.variant.exact or mode != "reflect" or not isinstance(pads, list) or X.shape is None:
        return None
    if isinstance(axes, RunTime) or min(pads, default=0) < 0:
        return None
    rank, half = X.rank, len(pads) // 2
    try:
        chosen = range(rank) if axes is None else [normalize_axis(a, rank, view) for a in axes]
    except CompileError:
        return None
    widths = {axis: (pads[i], pads[half + i]) for i, axis in enumerate(chosen) if i < half}
    padded = [(axis, b, e) for axis, (b, e) in widths.items() if b or e]
    if len(padded) != 1 or len(pads) != 2 * len(list(chosen)):
        return None
    axis, b, e = padded[0]
    dim = X.shape[axis]
    if not isinstance(dim, int):  # the sizes checked at run time
        return call("rt.pad_reflect_axis", X, axis, b, e)
    if b >= dim or e >= dim:
        return None
    lead = [span()] * axis
    parts = []
    if b:
        parts.append(index(X, _subscript([*lead, span(b, 0, -1)])))
    parts.append(X)
    if e:
        parts.append(index(X, _subscript([*lead, span(-2, -2 - e, -1)])))
    return call("np.concatenate", tuple_of(parts), axis=axis)


@emitter("CenterCropPad", since=18, exact=True)
def center_crop_pad(view: NodeView) -> pyir.Expr:
    X, shape = view.inputs[:2]
    axes = view.attr("axes")
    keywords = {} if axes is None else {"axes": tuple(axes)}
    return call("rt.center_crop_pad", X, shape, **keywords)


# --- block rearrangements, triangles, identity matrices ----------------------------------------


@emitter("DepthToSpace", since=1, exact=True)
def depth_to_space(view: NodeView) -> pyir.Expr:
    mode = view.attr("mode") or "DCR"
    blocksize = view.attr("blocksize")
    return call("rt.depth_to_space", view.inputs[0], blocksize=blocksize, mode=mode)


@emitter("SpaceToDepth", since=1, exact=True)
def space_to_depth(view: NodeView) -> pyir.Expr:
    mode = view.attr("mode") or "DCR"  # an attribute from opset 28; DCR before
    blocksize = view.attr("blocksize")
    return call("rt.space_to_depth", view.inputs[0], blocksize=blocksize, mode=mode)


@emitter("Trilu", since=14, exact=True)
def trilu(view: NodeView) -> pyir.Expr:
    X, k = view.inputs[0], view.input(1)
    function = "np.triu" if view.attr("upper") else "np.tril"
    if k is None:
        return call(function, X)
    if k.const is not None:
        return call(function, X, int(k.const.reshape(-1)[0]))
    return call(function, X, call("int", k))


@emitter("EyeLike", since=9, exact=True)
def eye_like(view: NodeView) -> pyir.Expr:
    X = view.inputs[0]
    code = view.attr("dtype")
    dtype = X.dtype if code is None else ir.element_dtype(code, view.node.label)
    shape = X.shape if _static(X.shape) else [index(attr(X, "shape"), i) for i in (0, 1)]
    k = view.attr("k")
    keywords = {"k": k} if k else {}
    return call("np.eye", shape[0], shape[1], **keywords, dtype=dtype)
