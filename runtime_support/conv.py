"""Convolution kernels (see runtime_support._windows for the geometry conventions).

- `conv` (fast): every layout chosen so the product lands in NCHW order with no transpose.
  1x1 kernels with unit strides and no pads: (M, C) @ X viewed as (N, C, H*W), no im2col.
  Otherwise `_windows.flat_taps` pads X once into a buffer split into stride phases, so each
  kernel tap is one contiguous row per (sample, channel) on a grid slightly wider than the
  output; im2col is then K contiguous row copies into (N, C, K, V), multiplied as
  (G, M/G, C/G*K) @ (N, G, C/G*K, V) (one batched BLAS call; G = 1 without groups), and the
  grid cropped to the output. Depthwise (group == C, any channel multiplier): no product;
  each tap's weights times its row, accumulated in place. Bias added once; float16 and
  bfloat16 run in float32.
- `conv_transpose`: with one or two spatial axes, one matrix product per group then Col2Im's
  accumulation; with three spatial axes, direct loops in a fixed order (input element, output
  channel, kernel tap) with no matrix product, so its bits are the same on every machine.
- `exact_conv_transpose`: the direct loops for every spatial rank (the exact variant's).
- `col2im`: additions in a fixed order (exact).
"""

from __future__ import annotations

import math

import numpy as np

from runtime_support._windows import (
    SAME,
    accumulator,
    add_windows,
    crop_grid,
    explicit_pads,
    flat_taps,
    tap_slices,
    taps,
)

__all__ = ["col2im", "conv", "conv_transpose", "exact_conv_transpose"]


def conv(X, W, B=None, *, pads=None, strides, dilations, group=1, auto_pad="NOTSET"):
    """Convolution (cross-correlation) of X (N, C, *in) with W (M, C/group, *k); Y (N, M, *out).
    `auto_pad` (SAME_UPPER, SAME_LOWER) replaces `pads` when the compiler could not settle it.
    Float16 and bfloat16 go through float32 (BLAS). The layouts put every product directly in
    NCHW order (see the module docstring)."""
    acc = accumulator(X.dtype)
    w = W.astype(acc, copy=False)
    batch, channels = X.shape[:2]
    maps, kernel_shape = w.shape[0], w.shape[2:]
    pads = explicit_pads(X, kernel_shape, strides, dilations, pads, auto_pad)
    if all(k == 1 for k in kernel_shape) and all(s == 1 for s in strides) and not any(pads):
        grid = out = X.shape[2:]  # 1x1: the input is the im2col matrix already
        views = [X.astype(acc, copy=False).reshape(batch, channels, math.prod(out))]
    else:
        views, grid, out = flat_taps(X, pads, 0, kernel_shape, strides, dilations, dtype=acc)
    if group == channels and group > 1:
        Y = _depthwise(views, w)
    else:
        columns = views[0]
        if len(views) > 1:
            columns = np.empty((batch, channels, len(views), views[0].shape[-1]), acc)
            for t, view in enumerate(views):
                columns[:, :, t] = view
        # (G, M/G, C/G*K) @ (N, G, C/G*K, V); one plain product without groups
        rows = channels // group * len(views)
        filters = w.reshape(group, maps // group, rows)
        Y = np.matmul(filters, columns.reshape(batch, group, rows, views[0].shape[-1]))
    Y = crop_grid(Y.reshape(batch, maps, math.prod(grid)), grid, out)
    if B is not None:
        bias = B.astype(acc, copy=False).reshape((maps,) + (1,) * len(out))
        Y = np.add(Y, bias, out=Y if Y.flags.c_contiguous else None)
    return np.ascontiguousarray(Y).astype(X.dtype, copy=False)


def _depthwise(views, w):
    """Depthwise convolution (one input channel per group, M = C * multiplier) from flat_taps'
    views: no matrix product; each tap's weights times that tap's view, accumulated in place in
    C order of the taps. Returns (N, C, V), or (N, C, multiplier, V) with a multiplier."""
    batch, channels, size = views[0].shape
    multiplier = w.shape[0] // channels
    # (K, C, 1) or (K, C, multiplier, 1): the weights of one tap broadcast over the row
    weights = w.reshape(channels, multiplier, len(views)).transpose(2, 0, 1)[..., None]
    if multiplier == 1:
        weights = weights[:, :, 0]
    else:
        views = [view[:, :, None] for view in views]
    Y = np.empty((batch,) + weights.shape[1:-1] + (size,), w.dtype)
    term = np.empty_like(Y)
    for t, view in enumerate(views):
        np.multiply(view, weights[t], out=Y if t == 0 else term)
        if t:
            Y += term
    return Y


def _transpose_geometry(
    in_spatial, kernel_shape, *, strides, dilations, pads, output_padding, output_shape, auto_pad
):
    """(begins, out): where ConvTranspose's output starts inside the full result (the padding
    removed at the beginning of each axis) and the output's spatial shape.

    The full result has (in - 1) * stride + (kernel - 1) * dilation + 1 + output_padding positions.
    With `output_shape`, or auto_pad SAME_* (output in * stride), the difference between the full
    size and the output is the total padding: SAME_UPPER removes total // 2 at the beginning, the
    other modes the larger half; an output larger than the full result gets zeros at the end
    (as onnxruntime does; the ONNX backend data agree). Otherwise `pads` (zeros with VALID) are
    removed."""
    rank = len(kernel_shape)
    full = [
        (n - 1) * s + (k - 1) * d + 1 + p
        for n, k, s, d, p in zip(in_spatial, kernel_shape, strides, dilations, output_padding)
    ]
    if output_shape is not None or auto_pad in SAME:
        if output_shape is not None:
            out = [int(v) for v in output_shape][-rank:]  # the spatial dims (N, C may lead)
        else:
            out = [n * s for n, s in zip(in_spatial, strides)]
        begins = []
        for f, o in zip(full, out):
            total = f - o
            if total <= 0:
                begins.append(0)
            else:
                begins.append(total // 2 if auto_pad == "SAME_UPPER" else total - total // 2)
        return begins, out
    if auto_pad == "VALID" or pads is None:
        pads = [0] * (2 * rank)
    out = [f - pads[i] - pads[i + rank] for i, f in enumerate(full)]
    if min(out, default=1) < 0:
        raise ValueError(f"ConvTranspose: pads {list(pads)} leave a negative output shape {out}")
    return list(pads[:rank]), out


def conv_transpose(
    X,
    W,
    B=None,
    *,
    auto_pad="NOTSET",
    dilations=None,
    group=1,
    output_padding=None,
    output_shape=None,
    pads=None,
    strides=None,
):
    """ConvTranspose of X (N, C, *in) with W (C, M/group, *k); Y (N, M, *out). Geometry as ONNX
    (see `_transpose_geometry`). Float16 and bfloat16 accumulate in float32."""
    options = (auto_pad, dilations, group, output_padding, output_shape, pads, strides)
    return _conv_transpose(X, W, B, *options, direct=X.ndim == 5)


def exact_conv_transpose(
    X,
    W,
    B=None,
    *,
    auto_pad="NOTSET",
    dilations=None,
    group=1,
    output_padding=None,
    output_shape=None,
    pads=None,
    strides=None,
):
    """conv_transpose with every spatial rank through the direct loops (see
    _conv_transpose_direct: one IEEE multiplication and one addition per term, in a fixed order),
    the bias added last: exact."""
    options = (auto_pad, dilations, group, output_padding, output_shape, pads, strides)
    return _conv_transpose(X, W, B, *options, direct=True)


def _conv_transpose(
    X, W, B, auto_pad, dilations, group, output_padding, output_shape, pads, strides, direct
):
    rank = X.ndim - 2
    kernel_shape = W.shape[2:]
    strides = tuple(strides or (1,) * rank)
    dilations = tuple(dilations or (1,) * rank)
    begins, out = _transpose_geometry(
        X.shape[2:],
        kernel_shape,
        strides=strides,
        dilations=dilations,
        pads=pads,
        output_padding=tuple(output_padding or (0,) * rank),
        output_shape=output_shape,
        auto_pad=auto_pad,
    )
    batch, channels = X.shape[:2]
    maps = W.shape[1] * group
    acc = accumulator(X.dtype)
    Y = np.zeros((batch, maps, *out), dtype=acc)
    if direct:
        _conv_transpose_direct(Y, X, W, group, strides, dilations, begins)
    else:
        # (G, M/G * K, C/G) @ (N, G, C/G, L): every input element times every filter tap.
        in_per_group = channels // group
        filters = W.astype(acc).reshape(group, in_per_group, -1).transpose(0, 2, 1)
        positions = math.prod(X.shape[2:])
        products = filters @ X.astype(acc).reshape(batch, group, in_per_group, positions)
        columns = products.reshape((batch, maps) + kernel_shape + X.shape[2:])
        add_windows(Y, columns, strides, dilations, begins)
    if B is not None:
        Y += B.astype(acc).reshape((maps,) + (1,) * rank)
    return Y.astype(X.dtype, copy=False)


def _conv_transpose_direct(Y, X, W, group, strides, dilations, begins):
    """Y += every input element times every filter tap, as direct loops in a fixed order: input
    element, then output channel, then kernel tap, each product (one IEEE multiplication) added
    (one IEEE addition) to the output element it lands on.

    Vectorized over the batch, the output channels of the group and the input positions: for
    each input channel, the taps run in reverse C order, so that each output element receives its
    terms in increasing C order of the input elements (c, i1, i2, i3), the order the loops give."""
    channels = X.shape[1]
    in_per_group = channels // group
    maps_per_group = W.shape[1]
    spatial = X.shape[2:]
    acc = Y.dtype
    every = (slice(None), slice(None))
    reversed_taps = taps(W.shape[2:])[::-1]
    for c in range(channels):
        g = c // in_per_group
        maps = slice(g * maps_per_group, (g + 1) * maps_per_group)
        x = X[:, c : c + 1].astype(acc)  # (N, 1, *in)
        for tap in reversed_taps:
            where = tap_slices(tap, spatial, Y.shape[2:], strides, dilations, begins)
            if where is None:
                continue
            inputs, outputs = where
            w = (
                W[(c, slice(None)) + tap]
                .astype(acc)
                .reshape((maps_per_group,) + (1,) * len(spatial))
            )
            Y[(slice(None), maps) + outputs] += x[every + inputs] * w


def col2im(data, image_shape, block_shape, *, dilations=None, pads=None, strides=None):
    """Col2Im: data (N, C * prod(block_shape), L), one column per block position, summed into an
    image (N, C, *image_shape). L must be the number of block positions the image, its pads, the
    strides and dilations allow."""
    image_shape = tuple(int(v) for v in np.asarray(image_shape).reshape(-1))
    block_shape = tuple(int(v) for v in np.asarray(block_shape).reshape(-1))
    rank = len(image_shape)
    strides = tuple(strides or (1,) * rank)
    dilations = tuple(dilations or (1,) * rank)
    pads = tuple(pads or (0,) * (2 * rank))
    batch, rows, length = data.shape
    kernel_size = int(np.prod(block_shape))
    blocks = tuple(
        (image_shape[i] + pads[i] + pads[i + rank] - (block_shape[i] - 1) * dilations[i] - 1)
        // strides[i]
        + 1
        for i in range(rank)
    )
    if rows % kernel_size or length != int(np.prod(blocks)) or min(blocks) < 1:
        raise ValueError(
            f"Col2Im: input of shape {data.shape} does not hold blocks {block_shape} at the "
            f"{blocks} positions that image {image_shape} allows"
        )
    columns = data.reshape((batch, rows // kernel_size) + block_shape + blocks)
    image = np.zeros((batch, rows // kernel_size) + image_shape, dtype=data.dtype)
    return add_windows(image, columns, strides, dilations, pads[:rank])
