"""Resize (and Upsample, Resize's older form): separable resampling, one axis at a time.

The arithmetic is a fixed sequence of IEEE-754 float64 `+ - * /`, floor/ceil, comparisons and
indexing, so the result is bit-identical on every machine (and the same in the fast and exact
variants):

- the output size of an axis is floor(float32(input size) * float32(scale)) when scales are given
  (as onnx's shape inference and onnxruntime compute it); from sizes, the scale is
  size / input size in float64;
- axes are resampled one at a time in increasing axis order; an axis whose sample positions are
  exactly its own indices is left as it is;
- on one axis, output index y maps to a sample position x (coordinate_transformation_mode,
  computed in float64 in the order the formula is written); the taps of x are a fixed number of
  (input index, weight) pairs in increasing index order, and the resampled value is
  ((w0 * v0 + w1 * v1) + w2 * v2) + ... in that order, in float64;
- weights that are normalized (antialias, exclude_outside) are divided by their sum, added in tap
  order;
- the float64 result is rounded once to the input's type (integer types: truncated toward zero,
  as onnxruntime does, and clipped to the type's range). Nearest mode only moves data and keeps the input's type throughout.

Taps. linear: floor(x) and floor(x) + 1 with weights 1 - t and t (t = x - floor(x)). cubic (Keys,
coefficient a): floor(x) - 1 .. floor(x) + 2 with weights k(1 + t), k(t), k(1 - t), k(2 - t).
antialias=1 on an axis that shrinks (scale < 1): the filter (triangle, or Keys) is stretched by
1 / scale, so every integer position i whose weight filter((i - x) * scale) is non-zero is a tap;
the weights are then divided by their sum (a position of zero weight is not read). Growing axes,
and nearest mode, ignore antialias.
A tap outside the input reads the nearest edge sample, or with exclude_outside=1 is dropped (not
read at all) and the remaining weights are divided by their sum. With tf_crop_and_resize, an output
whose sample position falls outside [0, size - 1] on any axis is extrapolation_value.

When the output has the input's shape (whatever the scales, roi or mode), the input is returned as
it is, as onnxruntime does (no backend case has such a Resize that is not the identity).
Nearest with tf_crop_and_resize follows onnxruntime too (the backend data have no such case): the
sample positions are computed in float32 IEEE operations in a fixed order, with the integer output
size (`_crop_positions32`), and an axis whose scale is 1 is copied as it is, roi and extrapolation
ignored. The onnx reference applies the roi there.
"""

from __future__ import annotations

import numpy as np

from runtime_support._kernels import kernel
from runtime_support._limits import check_allocation

__all__ = ["resize", "resize_fast"]

_COORDINATE_MODES = (
    "half_pixel",
    "half_pixel_symmetric",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
    "tf_half_pixel_for_nn",
    "tf_crop_and_resize",
)


def resize(
    X,
    roi=None,
    scales=None,
    sizes=None,
    *,
    mode="nearest",
    coordinate_transformation_mode="half_pixel",
    cubic_coeff_a=-0.75,
    exclude_outside=0,
    extrapolation_value=0.0,
    nearest_mode="round_prefer_floor",
    keep_aspect_ratio_policy="stretch",
    axes=None,
    antialias=0,
):
    """ONNX Resize (see the module's docstring for the arithmetic). `scales` or `sizes` (an empty
    tensor counts as absent) give the axes `axes` (default: all) their new size; `roi` only matters
    for tf_crop_and_resize. nearest_mode "opset10" is Resize-10's rule, which has no nearest_mode
    attribute: floor on an axis that grows, ceil on one that shrinks (onnxruntime's)."""
    if mode not in ("nearest", "linear", "cubic"):
        raise ValueError(f"Resize: unknown mode {mode!r}")
    if coordinate_transformation_mode not in _COORDINATE_MODES:
        raise ValueError(
            f"Resize: unknown coordinate_transformation_mode {coordinate_transformation_mode!r}"
        )
    rank = X.ndim
    axes = list(range(rank)) if axes is None else [int(a) % rank for a in axes]
    out_shape, scale, width = _geometry(X.shape, scales, sizes, axes, keep_aspect_ratio_policy)
    check_allocation(out_shape, np.float64 if mode != "nearest" else X.dtype)
    if 0 in out_shape:
        return np.zeros(out_shape, dtype=X.dtype)
    if X.size == 0:
        raise ValueError(f"Resize: an empty input cannot grow to shape {tuple(out_shape)}")
    starts, ends = _roi(roi, axes, rank)
    interpolate = mode != "nearest"
    nearest_crop = not interpolate and coordinate_transformation_mode == "tf_crop_and_resize"
    if tuple(out_shape) == X.shape:
        return X  # onnxruntime copies an input whose shape does not change, in every mode
    work = X.astype(np.float64) if interpolate and X.dtype != np.float64 else X
    outside_masks = []
    for axis in range(rank):
        n, out = X.shape[axis], out_shape[axis]
        if nearest_crop:
            if scale[axis] == 1.0:
                continue  # onnxruntime maps the axis one to one: no roi, no extrapolation
            x = _crop_positions32(n, out, starts[axis], ends[axis])
        else:
            x = _positions(
                coordinate_transformation_mode,
                n,
                out,
                scale[axis],
                width[axis],
                starts[axis],
                ends[axis],
            )
        if coordinate_transformation_mode == "tf_crop_and_resize":
            outside = (x < 0) | (x > n - 1)
            if outside.any():
                outside_masks.append((axis, outside))
        if out == n and np.array_equal(x, np.arange(n, dtype=np.float64)):
            continue  # the identity
        if not interpolate:
            index = _nearest(x, n, nearest_mode, scale[axis])
            work = np.take(work, index, axis=axis)
            continue
        index, weight, present = _taps(
            x, n, scale[axis], mode, float(cubic_coeff_a), bool(exclude_outside), bool(antialias)
        )
        work = _apply(work, axis, index, weight, present)
    if outside_masks:
        mask = np.zeros((1,) * rank, dtype=bool)
        for axis, outside in outside_masks:
            mask = mask | outside.reshape([-1 if a == axis else 1 for a in range(rank)])
        value = np.asarray(extrapolation_value, dtype=np.float64).astype(work.dtype)
        work = np.where(mask, value, work)
    return round_to(work, X.dtype) if interpolate else work


def _geometry(shape, scales, sizes, axes, policy):
    """Per axis: the output size, the scale, and the output width as a float (scale * size, or
    the requested size itself)."""
    out = list(shape)
    scale = [1.0] * len(shape)
    width = [float(d) for d in shape]
    if scales is not None and np.asarray(scales).size:
        values = np.asarray(scales, dtype=np.float32).reshape(-1)
        if values.size != len(axes):
            raise ValueError(f"Resize: {values.size} scales for {len(axes)} axes")
        for axis, s in zip(axes, values):
            out[axis] = int(np.floor(np.float32(shape[axis]) * s))
            scale[axis] = float(s)
            width[axis] = scale[axis] * shape[axis]
        return out, scale, width
    if sizes is None or np.asarray(sizes).size == 0:
        raise ValueError("Resize: neither scales nor sizes is given")
    requested = [int(v) for v in np.asarray(sizes).reshape(-1)]
    if len(requested) != len(axes):
        raise ValueError(f"Resize: {len(requested)} sizes for {len(axes)} axes")
    ratios = [size / shape[axis] if shape[axis] else 1.0 for axis, size in zip(axes, requested)]
    if policy == "stretch":
        for axis, size, ratio in zip(axes, requested, ratios):
            out[axis], scale[axis], width[axis] = size, ratio, float(size)
        return out, scale, width
    if policy not in ("not_larger", "not_smaller"):
        raise ValueError(f"Resize: unknown keep_aspect_ratio_policy {policy!r}")
    common = min(ratios) if policy == "not_larger" else max(ratios)
    for axis in axes:
        width[axis] = common * shape[axis]
        out[axis] = int(np.floor(width[axis] + 0.5))  # rounded half up
        scale[axis] = common
    return out, scale, width


def _roi(roi, axes, rank):
    """Start and end of the region of interest on each axis (0 and 1 where not given). The roi
    lists the starts, then the ends, of `axes` (or of every axis)."""
    starts, ends = [0.0] * rank, [1.0] * rank
    if roi is None or np.asarray(roi).size == 0:
        return starts, ends
    values = np.asarray(roi).astype(np.float64).reshape(-1)
    listed = axes if values.size == 2 * len(axes) else range(rank)
    half = values.size // 2
    for i, axis in enumerate(listed):
        starts[axis], ends[axis] = float(values[i]), float(values[half + i])
    return starts, ends


def _positions(mode, n, out, scale, width, start, end):
    """Sample position in the input (float64) of each output index on one axis."""
    y = np.arange(out, dtype=np.float64)
    if mode == "asymmetric":
        return y / scale
    if mode == "half_pixel":
        return (y + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return (y + 0.5) / scale - 0.5 if out > 1 else np.zeros(out)
    if mode == "tf_half_pixel_for_nn":
        return (y + 0.5) / scale
    if mode == "half_pixel_symmetric":
        offset = (n / 2) * (1 - out / width)
        return offset + (y + 0.5) / scale - 0.5
    if mode == "align_corners":
        return y * (n - 1) / (width - 1) if out > 1 else np.zeros(out)
    # tf_crop_and_resize
    if out > 1:
        return start * (n - 1) + y * (end - start) * (n - 1) / (width - 1)
    return np.full(out, 0.5 * (start + end) * (n - 1))


def _crop_positions32(n, out, start, end):
    """tf_crop_and_resize sample positions for nearest mode, as onnxruntime computes them: in
    float32, start * (n - 1) + (y * (end - start) * (n - 1)) / (out - 1) in that order, with the
    integer output size `out`; for one output, float32(0.5 * float32(start + end) * (n - 1)) with
    the products in float64. Float32 positions decide the ties of the rounding modes (float64
    ones put 1.5000000447 where onnxruntime has 1.5). Returned as float64 (exactly those values);
    numpy's float32 ufuncs round each operation once, so they are the same on every machine."""
    f32 = np.float32
    start, end = f32(start), f32(end)
    if out > 1:
        y = np.arange(out, dtype=np.float32)
        moved = np.multiply(y, end - start)
        np.multiply(moved, f32(n - 1), out=moved)
        np.divide(moved, f32(out - 1), out=moved)
        return np.add(start * f32(n - 1), moved).astype(np.float64)
    return np.full(out, float(f32(0.5 * float(start + end) * (n - 1))))


def _nearest(x, n, nearest_mode, scale):
    if nearest_mode == "opset10":
        nearest_mode = "floor" if scale >= 1 else "ceil"
    low = np.floor(x)
    if nearest_mode == "round_prefer_floor":
        index = low + (x - low > 0.5)
    elif nearest_mode == "round_prefer_ceil":
        index = low + (x - low >= 0.5)
    elif nearest_mode == "floor":
        index = low
    elif nearest_mode == "ceil":
        index = np.ceil(x)
    else:
        raise ValueError(f"Resize: unknown nearest_mode {nearest_mode!r}")
    return np.clip(index, 0, n - 1).astype(np.intp)


def _triangle(t):
    return np.maximum(1 - np.abs(t), 0.0)


def _keys(t, a):
    """Keys' cubic convolution kernel with coefficient a."""
    t = np.abs(t)
    near = ((a + 2) * t - (a + 3)) * t * t + 1
    far = ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    return np.where(t <= 1, near, np.where(t < 2, far, 0.0))


def _taps(x, n, scale, mode, a, exclude_outside, antialias):
    """(index, weight, present) of the taps of each sample position, shape (len(x), taps).
    `present` is False where a window position is not a tap: dropped by exclude_outside, or in
    a stretched (antialias) window, of zero weight."""
    low = np.floor(x)
    shrinking = antialias and scale < 1
    if shrinking:
        reach = (1.0 if mode == "linear" else 2.0) / scale
        count = int(np.ceil(2 * reach)) + 2
        positions = np.floor(x - reach)[:, None] + np.arange(count, dtype=np.float64)
        t = (positions - x[:, None]) * scale
        weight = _triangle(t) if mode == "linear" else _keys(t, a)
    elif mode == "linear":
        t = (x - low)[:, None]
        positions = low[:, None] + np.arange(2, dtype=np.float64)
        weight = np.concatenate([1 - t, t], axis=1)
    else:
        t = (x - low)[:, None]
        positions = low[:, None] + np.arange(-1, 3, dtype=np.float64)
        weight = np.concatenate([_keys(1 + t, a), _keys(t, a), _keys(1 - t, a), _keys(2 - t, a)], 1)
    # Every position of the fixed linear and cubic windows is a tap (a zero weight times an
    # infinity gives NaN, as in onnxruntime); a stretched window only holds non-zero weights.
    present = weight != 0 if shrinking else np.ones(weight.shape, dtype=bool)
    if exclude_outside:
        present &= (positions >= 0) & (positions <= n - 1)
        weight = np.where(present, weight, 0.0)
    if shrinking or exclude_outside:
        total = weight[:, 0]
        for k in range(1, weight.shape[1]):
            total = total + weight[:, k]
        weight = weight / np.where(total == 0, 1.0, total)[:, None]
    index = np.clip(positions, 0, n - 1).astype(np.intp)
    return index, weight, present


def _apply(data, axis, index, weight, present):
    """Resample float64 `data` along `axis`: the sum of the taps' weighted values, in tap order."""
    shape = [-1 if a == axis else 1 for a in range(data.ndim)]
    total = None
    for k in range(index.shape[1]):
        column = present[:, k]
        if not column.any():
            continue
        term = np.take(data, index[:, k], axis=axis)  # a new array: updated in place below
        with np.errstate(invalid="ignore"):  # 0 * inf where a tap is absent
            term *= weight[:, k].reshape(shape)
        if not column.all():
            term[np.broadcast_to(~column.reshape(shape), term.shape)] = 0.0
        if total is None:
            total = term
        else:
            total += term
    if total is None:  # no position has a tap
        out_shape = list(data.shape)
        out_shape[axis] = index.shape[0]
        return np.zeros(out_shape, dtype=np.float64)
    return total


def round_to(values, dtype):
    """Float64 `values` rounded once to `dtype`: floats correctly rounded; integers truncated
    toward zero (as onnxruntime's integer kernels do) and clipped to the type's range; booleans:
    non-zero after truncation."""
    dtype = np.dtype(dtype)
    if dtype == values.dtype:
        return values
    if dtype.kind == "b":
        return np.trunc(values) != 0
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        high = float(info.max) if dtype.itemsize < 8 else np.nextafter(float(info.max), 0.0)
        return np.clip(np.trunc(values), float(info.min), high).astype(dtype)
    return values.astype(dtype)


# --- the fast variant's Resize -----------------------------------------------------------------

# Plans of resize_fast by (input shape, dtype, scales, sizes, attributes): the sample tables are
# computed once per shape. Bounded: cleared when full (a model has few distinct shapes).
_PLANS: dict = {}
_PLAN_LIMIT = 256
_FAST_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


@kernel(fresh=True, exact=False, exact_twin="rt.resize")
def resize_fast(
    X,
    roi=None,
    scales=None,
    sizes=None,
    *,
    mode="nearest",
    coordinate_transformation_mode="half_pixel",
    cubic_coeff_a=-0.75,
    nearest_mode="round_prefer_floor",
    keep_aspect_ratio_policy="stretch",
    axes=None,
):
    """The fast variant's Resize without tf_crop_and_resize, exclude_outside or antialias (the
    emitter keeps those on `resize`): the same sample positions and taps as `resize`, tabled once
    per input shape, and each resampled axis computed in the input's float type as gathers of whole
    slices and one weighted sum (linear: w0 * X[i0] + w1 * X[i1]; cubic: four taps), as
    onnxruntime computes in float32. Nearest mode gathers (a strided slice where the indices step
    evenly). Always a new array. Other dtypes go to `resize` (`roi` is not read: only
    tf_crop_and_resize uses it)."""
    key = (
        X.shape,
        X.dtype,
        None if scales is None else tuple(np.asarray(scales).ravel().tolist()),
        None if sizes is None else tuple(np.asarray(sizes).ravel().tolist()),
        mode,
        coordinate_transformation_mode,
        cubic_coeff_a,
        nearest_mode,
        keep_aspect_ratio_policy,
        axes,
    )
    plan = _PLANS.get(key)
    if plan is None:
        plan = _fast_plan(X, scales, sizes, key)
        if plan is None:  # not a case for the tables: the general kernel decides (and raises)
            result = resize(
                X,
                None,
                scales,
                sizes,
                mode=mode,
                coordinate_transformation_mode=coordinate_transformation_mode,
                cubic_coeff_a=cubic_coeff_a,
                nearest_mode=nearest_mode,
                keep_aspect_ratio_policy=keep_aspect_ratio_policy,
                axes=axes,
            )
            return result.copy() if result is X else result
        if len(_PLANS) >= _PLAN_LIMIT:
            _PLANS.clear()
        _PLANS[key] = plan
    work = X
    for step in plan:
        kind = step[0]
        if kind == "slice":
            work = work[step[1]]
        elif kind == "take":
            work = np.take(work, step[2], axis=step[1])
        else:  # "taps": axis, then (index, weight) per tap
            axis, taps = step[1], step[2]
            index, weight = taps[0]
            total = np.take(work, index, axis=axis)
            total *= weight
            for index, weight in taps[1:]:
                term = np.take(work, index, axis=axis)
                term *= weight
                total += term
            work = total
    if work is X or work.base is not None:  # the input, or a view of it: copied
        work = work.copy()
    return work


def _fast_plan(X, scales, sizes, key):
    """The steps of resize_fast for one key, or None for what only `resize` does: other dtypes,
    empty tensors and invalid geometry (its errors are raised there)."""
    _, dtype, _, _, mode, transform, a, nearest_mode, policy, axes = key
    if dtype not in _FAST_DTYPES or X.size == 0 or mode not in ("nearest", "linear", "cubic"):
        return None
    if transform not in _COORDINATE_MODES or transform == "tf_crop_and_resize":
        return None
    rank = X.ndim
    try:
        axes = list(range(rank)) if axes is None else [int(v) % rank for v in axes]
        out_shape, scale, width = _geometry(X.shape, scales, sizes, axes, policy)
    except ValueError:
        return None
    if 0 in out_shape:
        return None
    check_allocation(out_shape, dtype)
    if tuple(out_shape) == X.shape:
        return ()  # onnxruntime copies an input whose shape does not change
    steps: list = []
    slices: list = [slice(None)] * rank
    for axis in range(rank):
        n, out = X.shape[axis], out_shape[axis]
        x = _positions(transform, n, out, scale[axis], width[axis], 0.0, 1.0)
        if out == n and np.array_equal(x, np.arange(n, dtype=np.float64)):
            continue
        shape = [-1 if d == axis else 1 for d in range(rank)]
        if mode == "nearest":
            index = _nearest(x, n, nearest_mode, scale[axis])
            stride = int(index[1] - index[0]) if out > 1 else 1
            if stride > 0 and np.array_equal(index, index[0] + stride * np.arange(out)):
                slices[axis] = slice(int(index[0]), int(index[-1]) + 1, stride)
            else:
                steps.append(("take", axis, index))
            continue
        index, weight, _ = _taps(x, n, scale[axis], mode, float(a), False, False)
        taps = tuple(
            (index[:, k].copy(), weight[:, k].astype(dtype).reshape(shape))
            for k in range(index.shape[1])
        )
        steps.append(("taps", axis, taps))
    if any(s != slice(None) for s in slices):
        steps.insert(0, ("slice", tuple(slices)))  # slices first: they only shrink
    return tuple(steps)
