"""Sampling and geometry kernels: GridSample, AffineGrid, RoiAlign, NonMaxSuppression.

Every kernel here uses only IEEE + - * / and comparisons, floor/trunc/rint, min/max and indexing,
each a separate numpy operation in an order its docstring gives, so every result is a fixed
function of the input bits (exact; docs/exact-variant.md): AffineGrid and NonMaxSuppression;
GridSample, whose taps' weights and products are summed in float64 in the order of the taps
(innermost axis fastest), rounded once; RoiAlign, interpolating in the input's precision (float32
for float16 and bfloat16, as onnxruntime), the sample points added in the order of the grid.
A NaN position reads index 0 along its axis (a float-to-integer cast of NaN is the CPU's
choice), and every NaN of a result is np.nan (NaN signs and payloads differ between CPUs).
"""

from __future__ import annotations

import itertools

import numpy as np

from runtime_support._kernels import kernel
from runtime_support.resize import round_to

__all__ = ["affine_grid", "grid_sample", "non_max_suppression", "roi_align"]


# --- AffineGrid -------------------------------------------------------------------------------


def _base_positions(length: int, align_corners: int) -> np.ndarray:
    """The normalized positions of `length` pixels in [-1, 1]: pixel centres from -1 to 1
    (align_corners), or in the middle of `length` equal cells of [-1, 1]. A lone pixel sits at 1
    with align_corners (as in onnxruntime: the specification leaves it open), else at 0."""
    i = np.arange(length, dtype=np.float64)
    if align_corners:
        return (2 * i - (length - 1)) / (length - 1) if length > 1 else np.ones(length)
    return (2 * i + 1 - length) / length


def affine_grid(theta, size, *, align_corners=0):
    """ONNX AffineGrid: theta (N, 2, 3) or (N, 3, 4) applied to the normalized positions of the
    (H, W) or (D, H, W) grid of `size`; the grid is (N, H, W, 2) or (N, D, H, W, 3) with x (along
    W) first. Each coordinate is t0 * x + t1 * y (+ t2 * z) + t_last, in that order, in float64."""
    dims = [int(d) for d in np.asarray(size).reshape(-1)]
    spatial = dims[2:]
    rank = len(spatial)
    if theta.shape[1:] != (rank, rank + 1):
        raise ValueError(f"AffineGrid: theta {theta.shape} does not fit size {dims}")
    # positions[k] varies along spatial axis rank-1-k: x along the last axis, y before it...
    positions = []
    for k in range(rank):
        axis = rank - 1 - k
        shape = [1] * (1 + rank)
        shape[1 + axis] = spatial[axis]
        positions.append(_base_positions(spatial[axis], align_corners).reshape(shape))
    t = theta.astype(np.float64)
    out_shape = (dims[0], *spatial)
    coordinates = []
    for j in range(rank):
        row = t[:, j].reshape((-1,) + (1,) * rank + (rank + 1,))
        value = row[..., 0] * positions[0]
        for k in range(1, rank):
            value = value + row[..., k] * positions[k]
        coordinates.append(np.broadcast_to(value + row[..., rank], out_shape))
    return np.stack(coordinates, axis=-1).astype(theta.dtype)


# --- GridSample ---------------------------------------------------------------------------------


def _reflect(x, low, high):
    """Reflect x at the borders low and high until it lies between them."""
    span = high - low
    if span <= 0:
        return np.where((x < low) | (x > high), low, x)
    below, above = x < low, x > high
    distance = np.where(below, low - x, np.where(above, x - high, 0.0))
    times = np.trunc(distance / span)
    rest = distance - times * span
    even = times % 2 == 0
    from_below = np.where(even, low + rest, high - rest)
    from_above = np.where(even, high - rest, low + rest)
    return np.where(below, from_below, np.where(above, from_above, x))


def _keys(t):
    """Keys' cubic kernel, a = -0.75 (as GridSample specifies)."""
    a = -0.75
    t = np.abs(t)
    near = ((a + 2) * t - (a + 3)) * t * t + 1
    far = ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    return np.where(t <= 1, near, np.where(t < 2, far, 0.0))


def _one_nan(x: np.ndarray) -> np.ndarray:
    """x with every NaN as np.nan (its sign and payload are the CPU's choice)."""
    return np.where(np.isnan(x), x.dtype.type(np.nan), x) if x.dtype.kind == "f" else x


def _index(position: np.ndarray, length: int) -> np.ndarray:
    """Integer-valued float positions as indices in [0, length); NaN as 0."""
    clipped = np.clip(np.where(np.isnan(position), 0.0, position), 0, length - 1)
    return clipped.astype(np.intp)


@kernel(exact=True)
def grid_sample(X, grid, *, mode="linear", padding_mode="zeros", align_corners=0):
    """ONNX GridSample of X (N, C, d1..dr) at grid (N, o1..or, r), whose last axis lists the
    normalized coordinates innermost axis first (x, y, z).

    A coordinate maps to x = (g + 1) / 2 * (d - 1) (align_corners) or ((g + 1) * d - 1) / 2;
    nearest rounds it half to even. In nearest and linear mode a position outside the borders
    ([0, d - 1] with align_corners, [-0.5, d - 0.5] without) is first clamped to [0, d - 1]
    (border) or reflected at the borders (reflection); cubic mode keeps the position (as
    onnxruntime: clamping it first would change the result). Taps: nearest 1, linear 2 (floor and
    the next), cubic 4 (Keys, a = -0.75); a tap outside the input reads 0 (zeros), the edge
    (border) or its reflection at the borders. Linear and cubic sum the taps' products in float64,
    innermost axis fastest: w = w_x * w_y (* w_z) in that order, total = ((t_0 + t_1) + t_2)...
    of t = value * w; taps outside with zeros padding add +0.0. A NaN coordinate reads pixel 0:
    outside with zeros padding (0), Keys weights 0 (cubic: 0), linear weights NaN (NaN)."""
    mode = {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
    if mode not in ("nearest", "linear", "cubic"):
        raise ValueError(f"GridSample: unknown mode {mode!r}")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"GridSample: unknown padding_mode {padding_mode!r}")
    spatial = X.shape[2:]
    rank = len(spatial)
    if grid.shape[-1] != rank or grid.shape[0] != X.shape[0]:
        raise ValueError(f"GridSample: grid {grid.shape} does not fit input {X.shape}")
    g = grid.astype(np.float64)
    taps_per_axis = []  # per spatial axis: list of (index, weight or None, valid or None)
    for axis, length in enumerate(spatial):
        normalized = g[..., rank - 1 - axis]
        if align_corners:
            x = (normalized + 1) / 2 * (length - 1)
            low, high = 0.0, length - 1.0
        else:
            x = ((normalized + 1) * length - 1) / 2
            low, high = -0.5, length - 0.5
        if mode == "nearest":
            x = np.rint(x)
        if padding_mode == "border" and mode != "cubic":
            x = np.where((x < low) | (x > high), np.clip(x, 0, length - 1), x)
        elif padding_mode == "reflection" and mode != "cubic":
            x = _reflect(x, low, high)
        if mode == "nearest":
            taps = [(x, None)]
        else:
            first = np.floor(x)
            t = x - first
            if mode == "linear":
                taps = [(first, 1 - t), (first + 1, t)]
            else:
                taps = [(first + k, _keys(t - k)) for k in (-1, 0, 1, 2)]
        taps_per_axis.append(
            [_pixel(i, weight, length, padding_mode, low, high) for i, weight in taps]
        )

    channels_last = np.moveaxis(X, 1, -1)  # (N, d1..dr, C)
    batch = np.arange(X.shape[0]).reshape((-1,) + (1,) * (grid.ndim - 2))
    total = None
    for combination in itertools.product(*taps_per_axis):
        index = tuple(i for i, _, _ in combination)
        values = channels_last[(batch,) + index]
        valid = None
        for _, _, v in combination:
            if v is not None:
                valid = v if valid is None else valid & v
        if mode == "nearest":
            total = values if valid is None else np.where(valid[..., None], values, 0)
            break
        weight = combination[0][1]
        for _, w, _ in combination[1:]:
            weight = weight * w
        term = values.astype(np.float64) * weight[..., None]
        if valid is not None:
            term = np.where(valid[..., None], term, 0.0)
        total = term if total is None else total + term
    Y = np.moveaxis(total, -1, 1)
    return _one_nan(np.ascontiguousarray(Y if mode == "nearest" else round_to(Y, X.dtype)))


def _pixel(position, weight, length, padding_mode, low, high):
    """(index, weight, valid) of a tap at integer-valued `position`: zeros padding marks taps
    outside the input invalid, border clamps them, reflection reflects them at the borders."""
    if padding_mode == "zeros":
        valid = (position >= 0) & (position <= length - 1)
        return _index(position, length), weight, valid
    if padding_mode == "reflection":
        position = np.trunc(_reflect(position, low, high))
    return _index(position, length), weight, None


# --- RoiAlign -----------------------------------------------------------------------------------


def _bilinear_axis(position, length):
    """Per sample coordinate: (low index, high index, weight of low, weight of high, valid).
    A coordinate outside [-1, length] (or NaN) is invalid; one below 0 counts as 0; one at or past
    the last pixel reads the last pixel only."""
    valid = (position >= -1) & (position <= length)
    position = np.where(valid, np.maximum(position, 0), 0)  # an invalid one reads pixel 0
    low = np.trunc(position).astype(np.int64)
    last = low >= length - 1
    low = np.where(last, length - 1, low)
    high = np.where(last, length - 1, low + 1)
    position = np.where(last, low.astype(position.dtype), position)
    frac = position - low.astype(position.dtype)
    return low, high, 1 - frac, frac, valid


_MAX_GRID_SIDE = 2**20  # sampling points along one side of a bin (an infinite region asks 2**62)


@kernel(exact=True)
def roi_align(
    X,
    rois,
    batch_indices,
    *,
    mode="avg",
    output_height=1,
    output_width=1,
    sampling_ratio=0,
    spatial_scale=1.0,
    coordinate_transformation_mode="half_pixel",
):
    """ONNX RoiAlign. Each roi (x1, y1, x2, y2) is scaled by spatial_scale and, with half_pixel,
    shifted by -0.5 (output_half_pixel keeps it and makes the region at least 1 x 1). The region
    splits into output_height x output_width bins; each bin is sampled on a grid of
    sampling_ratio x sampling_ratio points, or with sampling_ratio 0 of ceil(region height /
    output_height) x ceil(region width / output_width) points, at the centres of the grid's
    cells. A point is bilinearly interpolated from its four neighbours (a point outside
    [-1, size] is 0). avg: the mean over the points of the sum of the weighted neighbours; max:
    the largest weighted neighbour of any point, each of the four competing on its own.
    Computed in the input's precision (float32 for float16 and bfloat16), each operation in the
    order written below (positions start + bin * size + (k + 0.5) * size / grid; a point's value
    ((n_00 + n_01) + n_10) + n_11; avg adds the points in grid order, row-major, then divides
    once), rounded once to the input's type. A NaN region samples nothing."""
    if mode not in ("avg", "max"):
        raise ValueError(f"RoiAlign: unknown mode {mode!r}")
    if coordinate_transformation_mode not in ("half_pixel", "output_half_pixel"):
        raise ValueError(
            f"RoiAlign: unknown coordinate_transformation_mode {coordinate_transformation_mode!r}"
        )
    compute = X.dtype if X.dtype in (np.float32, np.float64) else np.dtype(np.float32)
    height, width = X.shape[2], X.shape[3]
    boxes = rois.astype(compute)
    scale = compute.type(spatial_scale)
    offset = compute.type(0.5 if coordinate_transformation_mode == "half_pixel" else 0.0)
    start_w, start_h = boxes[:, 0] * scale - offset, boxes[:, 1] * scale - offset
    end_w, end_h = boxes[:, 2] * scale - offset, boxes[:, 3] * scale - offset
    roi_w, roi_h = end_w - start_w, end_h - start_h
    if coordinate_transformation_mode == "output_half_pixel":
        roi_w, roi_h = np.maximum(roi_w, compute.type(1)), np.maximum(roi_h, compute.type(1))
    bin_h, bin_w = roi_h / compute.type(output_height), roi_w / compute.type(output_width)
    if sampling_ratio > 0:
        grid_h = np.full(boxes.shape[0], sampling_ratio, dtype=np.int64)
        grid_w = grid_h
    else:
        grid_h = _index(np.ceil(roi_h / compute.type(output_height)), 2**62).astype(np.int64)
        grid_w = _index(np.ceil(roi_w / compute.type(output_width)), 2**62).astype(np.int64)
    side = int(max(grid_h.max(initial=0), grid_w.max(initial=0)))
    if side > _MAX_GRID_SIDE:
        raise ValueError(
            f"RoiAlign: a region needs {side} sampling points along one side of a bin (at most "
            f"{_MAX_GRID_SIDE}); give sampling_ratio or smaller regions"
        )
    count = np.maximum(grid_h * grid_w, 1).astype(compute)

    values = np.moveaxis(X, 1, -1).astype(compute)  # (N, H, W, C)
    batch = np.asarray(batch_indices).astype(np.intp).reshape(-1, 1, 1)
    bins_h = np.arange(output_height, dtype=compute)
    bins_w = np.arange(output_width, dtype=compute)

    def samples(start, size, grid, bins, k, length):
        with np.errstate(divide="ignore", invalid="ignore"):
            position = (
                start[:, None]
                + bins[None, :] * size[:, None]
                + compute.type(k + 0.5) * size[:, None] / grid[:, None].astype(compute)
            )
        return _bilinear_axis(position, length)

    shape = (boxes.shape[0], output_height, output_width, X.shape[1])
    total = np.zeros(shape, dtype=compute) if mode == "avg" else np.full(shape, -np.inf, compute)
    sampled = np.zeros(shape[:3], dtype=bool)
    for iy in range(int(grid_h.max(initial=0))):
        y_low, y_high, hy, ly, y_valid = samples(start_h, bin_h, grid_h, bins_h, iy, height)
        for ix in range(int(grid_w.max(initial=0))):
            x_low, x_high, hx, lx, x_valid = samples(start_w, bin_w, grid_w, bins_w, ix, width)
            rows_low, rows_high = y_low[:, :, None], y_high[:, :, None]
            cols_low, cols_high = x_low[:, None, :], x_high[:, None, :]
            neighbours = (
                (hy[:, :, None] * hx[:, None, :])[..., None] * values[batch, rows_low, cols_low],
                (hy[:, :, None] * lx[:, None, :])[..., None] * values[batch, rows_low, cols_high],
                (ly[:, :, None] * hx[:, None, :])[..., None] * values[batch, rows_high, cols_low],
                (ly[:, :, None] * lx[:, None, :])[..., None] * values[batch, rows_high, cols_high],
            )
            inside = y_valid[:, :, None] & x_valid[:, None, :]
            counted = (iy < grid_h)[:, None, None] & (ix < grid_w)[:, None, None]
            if mode == "avg":
                point = neighbours[0] + neighbours[1] + neighbours[2] + neighbours[3]
                total = total + np.where((inside & counted)[..., None], point, compute.type(0))
            else:
                point = np.maximum(
                    np.maximum(neighbours[0], neighbours[1]),
                    np.maximum(neighbours[2], neighbours[3]),
                )
                point = np.where(inside[..., None], point, compute.type(0))
                total = np.where(counted[..., None], np.maximum(total, point), total)
                sampled |= counted
    if mode == "avg":
        total = total / count[:, None, None, None]
    else:
        total = np.where(sampled[..., None], total, compute.type(0))
    return _one_nan(np.ascontiguousarray(np.moveaxis(total, -1, 1)).astype(X.dtype))


# --- NonMaxSuppression --------------------------------------------------------------------------


def _scalar(value, default):
    if value is None or np.asarray(value).size == 0:
        return default
    return np.asarray(value).reshape(-1)[0]


def non_max_suppression(
    boxes,
    scores,
    max_output_boxes_per_class=None,
    iou_threshold=None,
    score_threshold=None,
    *,
    center_point_box=0,
):
    """ONNX NonMaxSuppression: per batch and class, the boxes scoring above score_threshold (all
    without one) are taken by decreasing score (ties: lower index first); a box is kept unless its
    IoU with a box kept before exceeds iou_threshold, until max_output_boxes_per_class are kept.
    Boxes are [y1, x1, y2, x2] (any two opposite corners) or, with center_point_box,
    [x_center, y_center, width, height]. Two boxes overlap only with a positive intersection, both
    areas and the union positive. Arithmetic in the boxes' type, comparisons exact.
    Returns (selected, 3) int64 rows [batch, class, box]."""
    limit = max(int(_scalar(max_output_boxes_per_class, 0)), 0)
    dtype = boxes.dtype
    threshold = np.asarray(_scalar(iou_threshold, 0.0)).astype(dtype)
    floor = _scalar(score_threshold, None)
    selected = []
    if limit == 0:
        return np.zeros((0, 3), dtype=np.int64)
    for b in range(boxes.shape[0]):
        box = boxes[b]
        if center_point_box:
            half_w, half_h = box[:, 2] / dtype.type(2), box[:, 3] / dtype.type(2)
            x_min, x_max = box[:, 0] - half_w, box[:, 0] + half_w
            y_min, y_max = box[:, 1] - half_h, box[:, 1] + half_h
        else:
            y_min, y_max = np.minimum(box[:, 0], box[:, 2]), np.maximum(box[:, 0], box[:, 2])
            x_min, x_max = np.minimum(box[:, 1], box[:, 3]), np.maximum(box[:, 1], box[:, 3])
        area = (x_max - x_min) * (y_max - y_min)

        def overlaps(i):
            """Whether each box overlaps box i by more than the threshold."""
            left, right = np.maximum(x_min, x_min[i]), np.minimum(x_max, x_max[i])
            top, bottom = np.maximum(y_min, y_min[i]), np.minimum(y_max, y_max[i])
            intersection = (right - left) * (bottom - top)
            union = area[i] + area - intersection
            with np.errstate(divide="ignore", invalid="ignore"):
                iou = intersection / union
            return (
                (right > left)
                & (bottom > top)
                & (intersection > 0)
                & (area[i] > 0)
                & (area > 0)
                & (union > 0)
                & (iou > threshold)
            )

        for c in range(scores.shape[1]):
            score = scores[b, c]
            candidates = np.arange(score.shape[0])
            if floor is not None:
                candidates = candidates[score > np.asarray(floor).astype(score.dtype)]
            order = candidates[np.argsort(-score[candidates], kind="stable")]
            suppressed = np.zeros(score.shape[0], dtype=bool)
            kept = 0
            for i in order:
                if suppressed[i]:
                    continue
                selected.append((b, c, int(i)))
                kept += 1
                if kept == limit:
                    break
                suppressed |= overlaps(i)
    return np.array(selected, dtype=np.int64).reshape(-1, 3)
