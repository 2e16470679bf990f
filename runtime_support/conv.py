"""Convolution kernels (see runtime_support._windows for the geometry conventions).

- `conv` (fast): every layout chosen so the product lands in NCHW order with no transpose.
  1x1 kernels without pads: (G, M/G, C/G) @ X (every stride-th position) viewed as
  (N, G, C/G, H*W), no im2col. Non-overlapping patches (strides equal to the kernel, no pads or
  dilation: a ViT's patch embedding): one transposing copy of X is the im2col matrix, then one
  product per group. Small im2col matrices (at most _STRIDED_ELEMENTS entries): one copy of a
  strided view of the padded input, its rows over the padded width where the last stride is 1
  (`_strided_path`), or, for strided kernels with at least _PHASE_TAPS taps per stride phase
  (7x7 and 5x5 stems), one copy per phase from the input's phase planes (`_phase_path`); rows of
  at most _GATHER_ROW positions: one gather (`_gather_path`).
  Kernels of at least _WINDOWED_TAPS taps: one product of the padded input in rows of one
  stride when only the last axis has more than one tap (`_polyphase_path`), else of its sliding
  windows (`_windowed_path`).
  Stride-1 Convs with filters for at most half their channels (`_shifted_path`): one product of
  the stacked tap filters by the flat padded input, each tap's block then added at its offset.
  Otherwise im2col in blocks of output rows of about _BLOCK_BYTES
  (several whole samples when one is small), so a block is still in cache when BLAS reads it:
  each tap's rows copied from flat_taps' grid views (unit-stride reads whatever the strides),
  then one product per group written by BLAS straight into the block's columns of
  Y (N, M, H*W), and the bias added there. (One product per tap on flat_taps' rows, with no
  im2col, measured slower: K products with a K times shorter inner dimension, each followed by
  an accumulating pass over Y.) Depthwise (group == C, any channel multiplier): see
  `_depthwise`. Float16 and bfloat16 run in float32.
- Conv runs its products with BLAS at one thread (`_threads.serially`) but those of at least
  _SERIAL_TERMS multiply-adds, which at more than one thread run over BLAS's threads (the
  default) or, with runtime_support's own kernels set to split (`_threads.SPLIT_MIN`), in one
  part per thread over the runtime's own threads (`_matmul`, `_stacked`); ConvTranspose
  likewise. With own splitting on, large depthwise and 1x1 Convs also run in one part per
  thread over ranges of their channels (`_run_split`).
- `conv_transpose`: with one or two spatial axes, one matrix product per group then Col2Im's
  accumulation (a kernel equal to the strides, as in U-Net's upsampling, has tiles that never
  overlap: each tap's values are assigned, one strided copy per tap); with three spatial axes,
  direct loops in a fixed order (input element, output channel, kernel tap) with no matrix
  product, so its bits are the same on every machine.
- `exact_conv_transpose`: the direct loops for every spatial rank (the exact variant's).
- `col2im`: additions in a fixed order (exact).
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from runtime_support import _threads
from runtime_support._constants import cached
from runtime_support._kernels import kernel
from runtime_support._limits import check_allocation
from runtime_support._threads import SMALL_BLAS_WORK, serially
from runtime_support._windows import (
    SAME,
    _phase_slices,
    accumulator,
    add_windows,
    crop_grid,
    default_steps,
    flat_taps,
    gather_windows,
    settled_pads,
    tap_slices,
    taps,
    tile_view,
    tiling,
    window_index,
    window_positions,
)
from runtime_support.activation import hard_swish, relu
from runtime_support.math import clip_ufunc

__all__ = ["col2im", "conv", "conv_activation", "conv_transpose", "exact_conv_transpose"]


@kernel(fresh=True, exact=False, exact_twin="rt.exact_conv")
def conv(
    X,
    W,
    B=None,
    *,
    pads=None,
    strides=None,
    dilations=None,
    group=1,
    auto_pad="NOTSET",
    bias_column=False,
):
    """Convolution (cross-correlation) of X (N, C, *in) with W (M, C/group, *k); Y (N, M, *out).
    `auto_pad` (SAME_UPPER, SAME_LOWER) replaces `pads` when the compiler could not settle it;
    pads, strides and dilations of None are the ONNX defaults (0, 1 and 1 on every spatial axis;
    the compiler leaves them out when it does not know how many spatial axes there are).
    Float16 and bfloat16 go through float32 (BLAS). The layouts put every product directly in
    NCHW order (see the module docstring); the path and its geometry are settled once per shape
    (`_conv_plan`). With `bias_column` (a 1x1 Conv, no B; optimize.py's conv-bias-column), W is
    (M, C + 1, 1, ...): the filters with the bias as their last column (`_bias_column_conv`)."""
    if bias_column:
        return _bias_column_conv(X, W, None, pads, strides, dilations, group, auto_pad)
    return _convolve(X, W, B, pads, strides, dilations, group, auto_pad, None)


def _convolve(X, W, B, pads, strides, dilations, group, auto_pad, finish):
    """conv, then `finish` (an activation in place, or None) on the result."""
    try:
        plan = _conv_plan(X.shape, X.dtype, W.shape, pads, strides, dilations, group, auto_pad)
    except TypeError:  # lists for the geometry (a caller other than generated code)
        geometry = tuple(None if v is None else tuple(v) for v in (pads, strides, dilations))
        plan = _conv_plan(X.shape, X.dtype, W.shape, *geometry, group, auto_pad)
    return plan.run(X, W, B, finish)


def _bias_column_conv(X, W, finish, pads, strides, dilations, group, auto_pad):
    """A 1x1 Conv whose filters W (M, C + 1, 1, ...) carry the bias as their last column: for
    one float32 sample, X (C, V) is copied under a row of ones and one (M, C + 1) @ (C + 1, V)
    product adds the bias as it multiplies, so no pass over the result adds it (the copy is of
    the input, the smaller side of an expansion). Per call, thread CPU time, against product
    then bias pass: 0.65-0.9 on expansions of 4 to 6 times the channels at 36 to 3136 positions
    (16 -> 96 channels at 48x48: 170 -> 112 us); 1.1 at 9 positions or without expansion (why
    the rule takes expansions only). Any other input splits W back into filters and bias."""
    batch, channels = X.shape[:2]
    maps = W.shape[0]
    spatial = X.shape[2:]
    if (
        batch == 1
        and X.dtype == np.float32
        and W.dtype == np.float32
        and W.shape[1] == channels + 1
        and group == 1
        and not any(pads or ())
        and all(s == 1 for s in strides or ())
    ):
        size = math.prod(spatial)
        columns = np.empty((channels + 1, size), np.float32)
        columns[:channels] = X.reshape(channels, size)
        columns[channels] = 1
        filters = W.reshape(maps, channels + 1)
        Y = serially(_matmul, filters, columns)
        Y = Y.reshape((1, maps) + spatial)
        return Y if finish is None else finish(Y)
    filters = np.ascontiguousarray(W[:, :-1])
    bias = np.ascontiguousarray(W[:, -1].reshape(maps))
    return _convolve(X, filters, bias, pads, strides, dilations, group, auto_pad, finish)


def _relu(Y, low, high):
    return relu(Y, out=Y)


def _clip(Y, low, high):
    # numpy's clip with scalar bounds runs several times faster than np.maximum or np.minimum
    # with a scalar operand (numpy 2.4 on AVX-512: 20 against 70 us on 221,184 float32 values);
    # NaN stays NaN. An absent bound is an infinite one.
    f = Y.dtype.type
    low, high = (-np.inf if low is None else low), (np.inf if high is None else high)
    return clip_ufunc(Y, f(low), f(high), out=Y)


def _hard_swish(Y, low, high):
    return hard_swish(Y, out=Y)


def _silu(Y, low, high):
    """y * sigmoid(y) as y / (1 + exp(-y)): four passes and one temporary (the Sigmoid and Mul
    nodes take about ten passes and four arrays); exp(-y) overflowing to inf gives -0, the
    limit."""
    t = np.negative(Y)
    with np.errstate(over="ignore"):
        np.exp(t, out=t)
    t += Y.dtype.type(1)
    return np.divide(Y, t, out=Y)


# conv_activation's activations, applied in place to the Conv's new result
_ACTIVATIONS = {"relu": _relu, "clip": _clip, "hard_swish": _hard_swish, "silu": _silu}


@kernel(fresh=True, exact=False)
def conv_activation(
    X,
    W,
    B=None,
    *,
    activation,
    low=None,
    high=None,
    pads=None,
    strides=None,
    dilations=None,
    group=1,
    auto_pad="NOTSET",
    bias_column=False,
):
    """conv followed by its activation (the fast variant's Conv + Relu, Clip(low, high),
    HardSwish or Sigmoid-Mul (SiLU), optimize.py), applied in place to the Conv's result: one
    call and no new array for the activation. `bias_column` as for conv."""
    apply = _ACTIVATIONS[activation]

    def finish(Y):
        return apply(Y, low, high)

    if bias_column:
        return _bias_column_conv(X, W, finish, pads, strides, dilations, group, auto_pad)
    return _convolve(X, W, B, pads, strides, dilations, group, auto_pad, finish)


def _check_padded(x_shape, w_shape, plan) -> None:
    """The allocation limit applied to the padded input (pads come from the model); only pads
    larger than the input can make absurd copies of it."""
    if not plan.pads or max(plan.pads) <= min(x_shape[2:], default=0):
        return
    rank = len(plan.pads) // 2
    padded = [n + plan.pads[i] + plan.pads[i + rank] for i, n in enumerate(x_shape[2:])]
    channels = max(x_shape[1], w_shape[0])
    check_allocation([x_shape[0], channels, *(max(p, 0) for p in padded)], plan.acc, "padded input")


class _Plan:
    """One Conv geometry, settled: `run(X, W, B, finish)` calls the path chosen for it with the
    values it needs (pads, strides, dilations as tuples, the accumulation type, the path's own
    precomputed index or shapes), then `finish` (the fused activation, in place) on its result;
    with BLAS at one thread (`serially`) but for products of _SERIAL_TERMS multiply-adds or
    more (`_matmul`). At more than one thread, with runtime_support's own kernels set to split
    their work (`_threads.SPLIT_MIN` not None; None, the default, leaves every kernel in the
    calling thread), a plan with a `split` runs in parts over ranges of its channels
    (`_run_split`)."""

    __slots__ = ("path", "acc", "pads", "strides", "dilations", "group", "extra", "split")

    def __init__(self, path, acc, pads, strides, dilations, group, extra=None, split=None):
        self.path, self.acc, self.pads = path, acc, pads
        self.strides, self.dilations, self.group, self.extra = strides, dilations, group, extra
        self.split = split

    def run(self, X, W, B, finish=None):
        w = W.astype(self.acc, copy=False)
        bias = None if B is None else B.astype(self.acc, copy=False)
        if (
            self.split is not None
            and _threads.SPLIT_MIN is not None
            and _threads.get_num_threads() > 1
        ):
            Y = _run_split(self, X, w, bias, finish)
        else:
            # BLAS at one thread but for the products of _SERIAL_TERMS or more (`_matmul`)
            Y = serially(self.path, self, X, w, bias)
            if finish is not None:
                Y = finish(Y)
        return Y if Y.dtype == X.dtype else Y.astype(X.dtype)


def _run_split(plan, X, w, bias, finish):
    """The convolution in one part per thread, each over a range of the channels (`plan.split`:
    (depthwise, out shape); a depthwise part takes its input channels, any other part all of X
    and its range of the filters), run by `_threads.run_parts` with BLAS at one thread: each
    part runs the whole's path (channels last: settled again for the part's rows, the same
    path), its activation, its store into Y. numpy releases the GIL in its copies, ufuncs and
    products, so the parts overlap; the calling thread runs every part no worker has started,
    but waits for one a worker started (a worker that then loses its core costs up to a time
    slice: why the split is off by default). Every output value is computed as the whole call
    computes it, so the bits do not depend on the thread count (tests/test_fast_kernels.py)."""
    depthwise, out = plan.split
    maps = w.shape[0]
    Y = np.empty((X.shape[0], maps) + out, w.dtype)
    parts = min(_threads.get_num_threads(), maps)
    bounds = [maps * i // parts for i in range(parts + 1)]
    geometry = (plan.pads, plan.strides, plan.dilations)

    def part(i: int) -> None:
        low, high = bounds[i], bounds[i + 1]
        x = X[:, low:high] if depthwise else X
        filters = w[low:high]
        sub = plan  # the paths but channels last read nothing of the channel count off the plan
        if plan.path is _depthwise_last_path:
            sub = _conv_plan(
                x.shape, x.dtype, filters.shape, *geometry, high - low, "NOTSET", plan.path
            )
        y = sub.path(sub, x, filters, None if bias is None else bias[low:high])
        Y[:, low:high] = y if finish is None else finish(y)

    with _threads._one_blas_thread():
        _threads.run_parts(part, parts)
    return Y


# Products of fewer multiply-adds than this (under about 170 us at one thread) run in one call
# whatever the thread count, larger ones in parts (`_matmul`). Until session 9 the threshold
# applied to a whole convolution and above it OpenBLAS split the products over its own threads:
# Measured at 2 threads on the 2-core machine under load (bench models, one process, the
# threshold switched back and forth): with every product split, resnet18_w16_b2_64 took 395 ms
# and mobilenetv2_b1_96's Convs most of 636 ms (each split product of a few M multiply-adds that
# finds no free core for the second thread waits a time slice); with this threshold 1.7 and 40
# (its Gemm's split gemv is the rest), against 0.31 and 2.1 for onnxruntime. On a quiet machine
# products from about 5 M multiply-adds take 0.6 to 0.8 of one thread's time on two
# (_threads.SMALL_BLAS_WORK, the recurrent kernels' threshold too).
_SERIAL_TERMS = SMALL_BLAS_WORK


# At more than one thread, a Conv's products of at least _SERIAL_TERMS multiply-adds run over
# OpenBLAS's own threads by default, and in one part per thread over `_threads.run_parts` (BLAS
# at one thread in each) with own splitting on (`_threads.SPLIT_MIN` set). The parts suit a
# loaded machine: the calling thread takes every part no worker has started, so a worker the
# machine does not schedule costs nothing, where OpenBLAS's split waits for its second thread (a
# time slice, 4 to 20 ms, whenever the other core is busy). Session 9, 2 threads, load 8, wall
# per product, one thread / OpenBLAS's two / two parts: 16x147 by 147x2048 (ResNet-18-w16's
# stem) 403 / 16000 / 440 us, 32x288 by 288x4096 3019 / 8867 / 1681. On a quiet machine OpenBLAS
# wins (session 10, load under 1, one process, 1 thread / two parts / OpenBLAS's two, us):
# 64x576 by 576x3136 3609 / 1816 / 1485, 2048x512x49 1416 / 854 / 638, 16x147x2048 172 / 222 /
# 111; and parts lose most when OpenBLAS's idle threads, woken by any other product of the run
# (a Gemm), spin on the second core (light_resnet50: 1 thread 110 ms, parts 116, OpenBLAS 67).
# So the default is OpenBLAS's, as for every other product. Parts split the larger of the rows
# and columns at multiples of _PART_ALIGN (stacked products: each sample's and group's,
# `_stacked`), and every output value comes out as the whole product computes it (same bits,
# tested).
_PART_ALIGN = 16


def _matmul(a, b, out=None):
    """a @ b for 2-D operands (b and out may be strided views), into `out` if given, called
    with BLAS at one thread: when the thread count is above 1 and the product has at least
    _SERIAL_TERMS multiply-adds, over BLAS at the count set or, with own splitting on, in one
    part per thread, each a range of a's rows or of b's columns; else one call."""
    rows, inner = a.shape
    columns = b.shape[1]
    threads = _threads.get_num_threads()
    if threads == 1 or rows * inner * columns < _SERIAL_TERMS:
        return np.matmul(a, b, out=out)
    if _threads.SPLIT_MIN is None:  # the default: OpenBLAS's own threads (see above)
        with _threads._all_blas_threads():
            return np.matmul(a, b, out=out)
    if out is None:
        out = np.empty((rows, columns), np.result_type(a, b))
    size = max(rows, columns)
    parts = max(1, min(threads, size // _PART_ALIGN))
    bounds = [size * i // parts // _PART_ALIGN * _PART_ALIGN for i in range(parts)] + [size]
    by_columns = columns >= rows

    def part(i: int) -> None:
        span = slice(bounds[i], bounds[i + 1])
        if by_columns:
            np.matmul(a, b[:, span], out=out[:, span])
        else:
            np.matmul(a[span], b, out=out[span])

    with _threads._one_blas_thread():
        _threads.run_parts(part, parts)
    return out


def _stacked(filters, x):
    """(G, M/G, C/G) @ (N, G, C/G, V): at more than one thread, where each sample's and group's
    product has at least _SERIAL_TERMS multiply-adds, over BLAS at the count set or, with own
    splitting on, one `_matmul` per sample and group (each in parts over the threads); else
    numpy's stacked product (BLAS at one thread)."""
    groups, rows, inner = filters.shape
    if _threads.get_num_threads() == 1 or rows * inner * x.shape[-1] < _SERIAL_TERMS:
        return np.matmul(filters, x)
    if _threads.SPLIT_MIN is None:  # the default: OpenBLAS's own threads (`_matmul`)
        with _threads._all_blas_threads():
            return np.matmul(filters, x)
    Y = np.empty(x.shape[:2] + (rows, x.shape[-1]), np.result_type(filters, x))
    for n in range(x.shape[0]):
        for g in range(groups):
            _matmul(filters[g], x[n, g], out=Y[n, g])
    return Y


# The fewest multiply-adds a 1x1 Conv, and output values times taps a depthwise Conv, must have
# to run in parts over the threads at more than one thread (`_run_split`); below, one thread.
_SPLIT_TERMS = 1_000_000
_SPLIT_DEPTHWISE = 200_000


@functools.lru_cache(maxsize=512)
def _conv_plan(
    x_shape, x_dtype, w_shape, pads, strides, dilations, group, auto_pad, path=None
) -> _Plan:
    """The plan for one geometry; with `path`, that path's (a part of a split plan keeps the
    whole's path: a part's fewer channels could pick another) and no split of its own."""
    plan = _settle_plan(x_shape, x_dtype, w_shape, pads, strides, dilations, group, auto_pad, path)
    _check_padded(x_shape, w_shape, plan)  # raises at every call: lru_cache keeps no exception
    if path is None and x_dtype == np.float32:
        out = plan.extra[0] if plan.path is _depthwise_last_path else None
        if plan.path is _pointwise_path and group == 1:
            terms = math.prod(x_shape[:2]) * w_shape[0] * math.prod(_pointwise_out(x_shape, plan))
            if terms >= _SPLIT_TERMS:
                plan.split = (False, _pointwise_out(x_shape, plan))
        elif plan.path in (_depthwise_path, _depthwise_last_path) and w_shape[0] == x_shape[1]:
            if out is None:
                out = _depthwise_out(x_shape, w_shape, plan)
            if (
                x_shape[0] * w_shape[0] * math.prod(out) * math.prod(w_shape[2:])
                >= _SPLIT_DEPTHWISE
            ):
                plan.split = (True, out)
    return plan


def _pointwise_out(x_shape, plan):
    return tuple(-(-n // s) for n, s in zip(x_shape[2:], plan.strides))


def _depthwise_out(x_shape, w_shape, plan):
    rank = len(w_shape) - 2
    padded = [n + plan.pads[i] + plan.pads[i + rank] for i, n in enumerate(x_shape[2:])]
    return tuple(window_positions(padded, w_shape[2:], plan.strides, plan.dilations))


def _settle_plan(x_shape, x_dtype, w_shape, pads, strides, dilations, group, auto_pad, path):
    acc = accumulator(x_dtype)
    batch, channels = x_shape[:2]
    kernel_shape = tuple(w_shape[2:])
    strides, dilations = (tuple(v) for v in default_steps(kernel_shape, strides, dilations))
    pads = tuple(settled_pads(x_shape[2:], kernel_shape, strides, dilations, pads, auto_pad))
    rank = len(kernel_shape)
    padded = [n + pads[i] + pads[i + rank] for i, n in enumerate(x_shape[2:])]
    out = tuple(max(o, 0) for o in window_positions(padded, kernel_shape, strides, dilations))
    plan = functools.partial(
        _Plan,
        acc=acc,
        pads=pads,
        strides=strides,
        dilations=dilations,
    )
    if batch == 0 or math.prod(out) == 0 or channels == 0:
        return plan(_empty_path, group=group, extra=out)
    if (group == channels and group > 1) or path in (_depthwise_path, _depthwise_last_path):
        grid = math.prod(-(-p // s) for p, s in zip(padded, strides))  # flat_taps' planes
        products = channels >= _DEPTHWISE_PRODUCT_CHANNELS  # _depthwise's way, per plan
        if path is _depthwise_path:
            return plan(_depthwise_path, group=group, extra=products)
        runs = _depthwise_chunk(out, batch * channels, strides) is not None
        if (
            w_shape[0] == channels
            and (
                path is _depthwise_last_path
                or math.prod(out) <= _DEPTHWISE_LAST_POSITIONS
                or math.prod(out) <= _DEPTHWISE_LAST_SHARE * grid
                or (
                    math.prod(out) <= _DEPTHWISE_LAST_WIDE_POSITIONS
                    and batch * channels
                    >= (_DEPTHWISE_LAST_RUN_ROWS if runs else _DEPTHWISE_LAST_ROWS)
                )
                or (
                    math.prod(kernel_shape) >= _DEPTHWISE_LAST_TAPS
                    and (runs or batch * channels >= _DEPTHWISE_LAST_TAPS_ROWS)
                    and all(s == 1 for s in strides)
                )
            )
            and min(pads, default=0) >= 0
        ):
            rows = batch * channels
            itemsize = np.dtype(acc).itemsize
            steps = [itemsize * rows * math.prod(padded[a + 1 :]) for a in range(rank)]
            # (*kernel, *out, N * C) windows of the padded (*padded, N * C) buffer; with a
            # `chunk` R, out's last axis is (out[-1] / R, R * N * C): R output columns' rows
            # side by side, contiguous at unit stride (see _depthwise_chunk)
            chunk = _depthwise_chunk(out, rows, strides)
            positions, position_steps = out, tuple(z * s for z, s in zip(steps, strides))
            if chunk is not None:
                positions = out[:-1] + (out[-1] // chunk, chunk * rows)
                position_steps = position_steps[:-1] + (position_steps[-1] * chunk,)
            view = (
                tuple(kernel_shape) + positions + (() if chunk else (rows,)),
                tuple(z * d for z, d in zip(steps, dilations)) + position_steps + (itemsize,),
            )
            tap_axes, out_axes = _LETTERS[:rank], _LETTERS[rank : 2 * rank]
            sum_of_taps = f"{tap_axes}{out_axes}z,{tap_axes}z->{out_axes}z"
            bands = rank and _tap_bands(
                x_shape[2], kernel_shape[0], pads[0], strides[0], dilations[0], out[0],
                math.prod(out[1:]),
            ) or None  # fmt: skip
            extra = (out, view, sum_of_taps, bands, chunk)
            return plan(_depthwise_last_path, group=group, extra=extra)
        return plan(_depthwise_path, group=group, extra=products)
    if all(k == 1 for k in kernel_shape) and not any(pads):
        every = None  # the index of every stride-th position, if a stride is not 1
        if any(s != 1 for s in strides):
            every = (slice(None), slice(None)) + tuple(slice(None, None, s) for s in strides)
        positions = tuple(-(-n // s) for n, s in zip(x_shape[2:], strides))
        return plan(_pointwise_path, group=group, extra=(every, positions, math.prod(positions)))
    if tiling(kernel_shape, strides, dilations, pads):
        return plan(_patch_path, group=group)
    if (
        group == 1
        and math.prod(kernel_shape) >= _WINDOWED_TAPS
        and all(d == 1 for d in dilations)
        and min(pads, default=0) >= 0
    ):
        if (
            all(k == 1 for k in kernel_shape[:-1])
            and all(s == 1 for s in strides[:-1])
            and not any(pads[a] or pads[a + rank] for a in range(rank - 1))
        ):
            step = strides[-1]
            phases = -(-kernel_shape[-1] // step)
            extra = (step, phases, out[-1] + phases - 1, out[-1])
            return plan(_polyphase_path, group=group, extra=extra)
        return plan(_windowed_path, group=group)
    columns = channels * math.prod(kernel_shape) * batch * math.prod(out)
    if min(pads, default=0) >= 0 and out[-1] <= _GATHER_ROW and columns <= _GATHER_ELEMENTS:
        index = window_index(x_shape, kernel_shape, pads, strides, dilations, "ctno")
        index = index.reshape(channels * math.prod(kernel_shape), -1)
        return plan(_gather_path, group=group, extra=(index, out))
    if min(pads, default=0) >= 0 and columns <= _STRIDED_ELEMENTS:
        if _phase_rows(x_shape, w_shape, strides, dilations, out, padded):
            extra = _phase_geometry(x_shape, kernel_shape, pads, strides, out, padded, acc)
            return plan(_phase_path, group=group, extra=extra)
        extra = _strided_geometry(
            x_shape, w_shape[0], kernel_shape, pads, strides, dilations, out, acc
        )
        return plan(_strided_path, group=group, extra=extra)
    if _shifted_fits(x_shape, w_shape, pads, strides, group, padded, out):
        extra = _shifted_geometry(x_shape, kernel_shape, pads, dilations, padded, out)
        return plan(_shifted_path, group=group, extra=extra)
    return plan(_im2col_path, group=group)


def _empty_path(plan, X, w, bias):
    return np.zeros(X.shape[:1] + w.shape[:1] + plan.extra, w.dtype)


def _depthwise_path(plan, X, w, bias):
    batch, maps = X.shape[0], w.shape[0]
    kernel_shape = w.shape[2:]
    views, grid, out = flat_taps(
        X, plan.pads, 0, kernel_shape, plan.strides, plan.dilations, dtype=w.dtype
    )
    Y = _depthwise(views, w, plan.extra).reshape(batch, maps, math.prod(grid))
    Y = crop_grid(Y, grid, out)
    if bias is not None:
        return np.add(Y, bias.reshape((maps,) + (1,) * len(out)), order="C")
    return np.ascontiguousarray(Y)


def _pointwise_path(plan, X, w, bias):
    """1x1 without pads: the input (every stride-th position) is the im2col matrix already.
    One sample, one group: one (M, C) @ (C, V) product. Several samples on a small map (under
    _POINTWISE_JOINED positions): the samples side by side, (M, C) @ (C, N * V), one product
    that reads the filters once (ResNet's strided 1x1 shortcuts), moved back to (N, M, V) with
    the bias added in the same pass. One position a sample (a squeeze-and-excitation block's
    Convs after its global pooling): (N, C) @ (M, C)^T, the bias added in place (session 13,
    per call, against the joined product's column copy and moving add: 2 x 88 -> 22 channels
    5.8 -> 2.5 us, 2 x 200 -> 50 6.8 -> 3.0, 512 -> 128 at batch 1 6.3 -> 4.9). Otherwise
    (G, M/G, C/G) @ (N, G, C/G, V)."""
    batch, channels = X.shape[:2]
    maps, group = w.shape[0], plan.group
    every, out, size = plan.extra  # settled per shape: a few us of Python on the smallest
    x = X if every is None else X[every]
    spatial = (1,) * len(out)
    if group == 1 and size == 1:  # one position a sample: (N, C) @ (C, M), no moves
        filters = w.reshape(maps, channels)
        rows = np.ascontiguousarray(x, dtype=w.dtype).reshape(batch, channels)
        Y = _matmul(rows, filters.T)
        if bias is not None:
            Y += bias
        return Y.reshape((batch, maps) + out)
    if group == 1 and (batch == 1 or size < _POINTWISE_JOINED):
        filters = w.reshape(maps, channels)
        if batch == 1:
            Y = _matmul(filters, np.ascontiguousarray(x, dtype=w.dtype).reshape(channels, size))
            if bias is not None:
                Y += bias.reshape(maps, 1)
            return Y.reshape((1, maps) + out)
        columns = np.empty((channels, batch) + out, w.dtype)
        columns[...] = x.swapaxes(0, 1)
        Y = _matmul(filters, columns.reshape(channels, batch * size)).reshape(maps, batch, size)
        if bias is None:
            return np.ascontiguousarray(Y.swapaxes(0, 1)).reshape((batch, maps) + out)
        moved = np.add(Y.swapaxes(0, 1), bias.reshape(maps, 1), order="C")
        return moved.reshape((batch, maps) + out)
    filters = w.reshape(group, maps // group, channels // group)
    x = np.ascontiguousarray(x, dtype=w.dtype).reshape(batch, group, channels // group, size)
    Y = _stacked(filters, x).reshape((batch, maps) + out)
    if bias is not None:
        Y += bias.reshape((maps,) + spatial)
    return Y


# Several samples of a 1x1 Conv on fewer positions than this share one product (see
# _pointwise_path): each per-sample product would read the whole filter matrix again.
_POINTWISE_JOINED = 16


def _patch_path(plan, X, w, bias):
    return _patch_product(X, w, bias, plan.group)


def _polyphase_path(plan, X, w, bias):
    """A long filter along the last axis only (an audio front end's learned filter bank, a
    resampler's 80-tap low-pass at stride 6), in polyphase form: for stride s, tap t = q s + r
    reads padded position (o + q) s + r, so with the padded input cut into rows of s values
    (phase r the column), one product (M * Q, C * s) @ (C * s, J) gives every (filter, tap block
    q, row j) term, and output o sums block q of row o + q over the Q blocks: Q shifted additions
    of the output's size. The im2col matrix of the windowed path is K / s times the input; this
    one is the input itself (a view of the padded copy for one channel). Thread CPU time, per
    call, against the windowed path: 0.16-0.28 on single filters (an 80-tap resampler at stride 6
    on 2 x 16000 samples 327 -> 76 us, 160 taps at stride 3 1516 -> 242), 0.56-0.82 on filter banks
    of 2 to 80 filters, 0.98 on a 402-filter STFT of 400 taps at hop 160."""
    step, phases, rows_out, size = plan.extra  # s, Q, J (rows of the padded input), O
    batch, channels, maps = X.shape[0], X.shape[1], w.shape[0]
    lines = math.prod(X.shape[2:-1])  # the axes of kernel 1: more samples, as it were
    length, begin = X.shape[-1], plan.pads[len(plan.strides) - 1]
    padded = np.zeros((batch, channels, lines, rows_out * step), w.dtype)
    kept = max(0, min(length, rows_out * step - begin))
    padded[..., begin : begin + kept] = X.reshape(batch, channels, lines, length)[..., :kept]
    # (N * lines, C * s, J): row j of phase r is padded position j s + r (a view for one channel)
    columns = padded.reshape(batch, channels, lines, rows_out, step).transpose(0, 2, 1, 4, 3)
    columns = columns.reshape(batch * lines, 1, channels * step, rows_out)
    filters = cached(
        (w,), ("polyphase filters", step, phases), lambda: _polyphase_filters(w, step, phases)
    )
    terms = _stacked(filters, columns).reshape(batch * lines, maps, phases, rows_out)
    Y = np.array(terms[:, :, 0, :size])  # a new array: the first block, then the others added
    for q in range(1, phases):
        Y += terms[:, :, q, q : q + size]
    if bias is not None:
        Y += bias.reshape(maps, 1)
    Y = Y.reshape((batch, lines, maps, size)).swapaxes(1, 2)
    return np.ascontiguousarray(Y).reshape((batch, maps) + X.shape[2:-1] + (size,))


def _polyphase_filters(w, step, phases):
    """(1, M * Q, C * s): row m Q + q holds filter m's taps q s .. q s + s - 1 of every channel
    (channel-major, as the columns), zeros past the last tap."""
    maps, channels, taps = w.shape[0], w.shape[1], w.shape[-1]
    blocks = np.zeros((maps, channels, phases * step), w.dtype)
    blocks[:, :, :taps] = w.reshape(maps, channels, taps)
    blocks = blocks.reshape(maps, channels, phases, step).transpose(0, 2, 1, 3)
    return np.ascontiguousarray(blocks).reshape(1, maps * phases, channels * step)


# A stride-1 Conv too large for the strided path whose filters are at most _SHIFTED_MAPS_SHARE
# of its input channels (the narrowing Convs of FPN necks, U-Net decoders, PP-OCR heads), on maps
# whose padding adds at most _SHIFTED_WASTE to the positions, multiplies the padded input itself
# (`_shifted_path`): one product of every tap's filters stacked (K * M, C) by the flat padded
# input (C, positions), then each tap's block added at its offset. The im2col matrix is C * K by
# the positions; this writes K * M by the padded positions, and BLAS gets K * M rows where im2col
# gives it M. (Unlike the per-tap products the module docstring rejects, it is one product with
# the whole inner dimension C.) Thread CPU time, hot, against the im2col path (session 14): 16
# filters of 64 x 3 x 3 on 40 x 56 889 -> 585 us, 16 of 32 on 80 x 112 1565 -> 1189, 32 of 128 on
# 2 x 16 x 16 762 -> 572, 32 of 64 x 5 x 5 on 64 x 64 6716 -> 5637, 64 of 128 on 56 x 56 6362 ->
# 5958; at 0.75 of the channels 0.91-1.03, at 1.0 up to 1.31 (64 of 64 on 56 x 56). Against the
# strided path (smaller matrices) it ties or loses (512 channels on 7 x 7: 867 -> 1373).
_SHIFTED_MAPS_SHARE = 0.5
_SHIFTED_WASTE = 1.3
# ... and so does one with as many filters as channels when the channels are few and the map
# large (U-Net's first and last stages), where im2col's product has an inner dimension of only
# C * K: 16 of 16 on 128 x 128 1634 -> 1309 us, 8 of 8 638 -> 473, 32 of 32 on 64 x 64 1257 ->
# 1045; on 56 x 56 it ties (32 of 32 898 -> 879, 24 of 24 545 -> 567), and 64 of 64 on 32 x 32
# too (1030 -> 1044).
_SHIFTED_FEW_CHANNELS = 32
_SHIFTED_MANY_POSITIONS = 4096


def _shifted_fits(x_shape, w_shape, pads, strides, group, padded, out) -> bool:
    """Whether `_shifted_path` suits this geometry (see _SHIFTED_MAPS_SHARE and
    _SHIFTED_FEW_CHANNELS)."""
    taps_count = math.prod(w_shape[2:])
    return (
        group == 1
        and len(out) >= 1
        and taps_count > 1
        and all(s == 1 for s in strides)
        and min(pads, default=0) >= 0
        and math.prod(padded) <= _SHIFTED_WASTE * math.prod(out)
        and (
            w_shape[0] <= _SHIFTED_MAPS_SHARE * x_shape[1]
            or (
                w_shape[0] <= x_shape[1] <= _SHIFTED_FEW_CHANNELS
                and math.prod(out) >= _SHIFTED_MANY_POSITIONS
            )
        )
    )


def _shifted_geometry(x_shape, kernel_shape, pads, dilations, padded, out):
    """_shifted_path's constants: each sample's segment of the flat padded input (its padded
    size and the room the last taps read past it), the interior's slices, each tap's offset
    in C order, the span of flat positions each tap block covers (out's first axis by the
    padded size of the others) and the crop of the span to out."""
    rank = len(kernel_shape)
    steps = [math.prod(padded[a + 1 :]) for a in range(rank)]
    room = sum((k - 1) * d * z for k, d, z in zip(kernel_shape[1:], dilations[1:], steps[1:]))
    segment = math.prod(padded) + room
    interior = tuple(slice(pads[a], pads[a] + n) for a, n in enumerate(x_shape[2:]))
    offsets = tuple(
        sum(t * d * z for t, d, z in zip(tap, dilations, steps)) for tap in taps(kernel_shape)
    )
    span = out[0] * steps[0]
    crop = (slice(None), slice(None), slice(None)) + tuple(slice(0, o) for o in out[1:])
    return tuple(padded), segment, interior, offsets, span, (out[0],) + tuple(padded[1:]), crop


def _shifted_path(plan, X, w, bias):
    """The product of the stacked tap filters (K * M, C) with the flat padded input (C, N *
    segment), then Y = the sum over taps of each tap's (M, N, span) block read at its offset
    (in tap order, the bias first), cropped to out and moved to (N, M, *out); see
    _SHIFTED_MAPS_SHARE."""
    padded, segment, interior, offsets, span, grid, crop = plan.extra
    batch, channels, maps = X.shape[0], X.shape[1], w.shape[0]
    source = np.zeros((channels, batch, segment), w.dtype)
    inside = source[:, :, : math.prod(padded)].reshape((channels, batch) + padded)
    inside[(slice(None), slice(None)) + interior] = X.swapaxes(0, 1)
    filters = cached((w,), ("shifted filters",), lambda: _shifted_filters(w))
    terms = _matmul(filters, source.reshape(channels, batch * segment))
    terms = terms.reshape(len(offsets), maps, batch, segment)
    first = terms[0, :, :, offsets[0] : offsets[0] + span]
    if bias is None:
        Y = np.array(first)
    else:
        Y = np.add(first, bias.reshape(maps, 1, 1))
    for tap, offset in enumerate(offsets[1:], start=1):
        Y += terms[tap, :, :, offset : offset + span]
    Y = Y.reshape((maps, batch) + grid)[crop]
    return np.ascontiguousarray(Y.swapaxes(0, 1))


def _shifted_filters(w):
    """(K * M, C): row k M + m holds filter m's tap k (C order) of every channel."""
    maps, channels = w.shape[:2]
    stacked = w.reshape(maps, channels, -1).transpose(2, 0, 1)
    return np.ascontiguousarray(stacked).reshape(-1, channels)


def _windowed_path(plan, X, w, bias):
    return np.ascontiguousarray(_windowed_product(X, w, bias, plan.pads, plan.strides))


def _im2col_path(plan, X, w, bias):
    return _im2col_product(X, w, bias, plan.pads, plan.strides, plan.dilations, plan.group)


# Output rows of at most this many positions (small, late maps), whose im2col matrix has at most
# _GATHER_ELEMENTS entries, take the matrix with one gather through an index settled per shape:
# the tap copies would run one short inner loop per row (ResNet-18's 3x3 Convs at 4x4 and 2x2,
# batch 2: 70 -> 35 and 66 -> 18 us for the copies).
_GATHER_ROW = 6
_GATHER_ELEMENTS = 1 << 18


def _gather_path(plan, X, w, bias):
    """im2col by one gather (`window_index`'s index), then `_columns_product`."""
    index, out = plan.extra
    columns = gather_windows(X, index, 0, w.dtype)
    return _columns_product(columns, w, bias, plan.group, X.shape[0], out)


def _columns_product(columns, w, bias, group, batch, out, width=None):
    """Y (N, M, *out) from the im2col matrix `columns` (C * K, N * positions), rows in (channel,
    tap) order and columns in (sample, position) order: one product per group, the result moved
    to (N, M, *out) with the bias added in the same pass (with one sample, no move). With a
    `width`, the positions' last axis has that many (the padded width): cropped in the move."""
    maps = w.shape[0]
    if group == 1:  # a 2-D product: numpy's stacked one costs a few us more
        Y = _matmul(w.reshape(maps, -1), columns)
    else:
        span = columns.shape[0] // group
        filters = w.reshape(group, maps // group, span)
        Y = _stacked(filters, columns.reshape(1, group, span, -1))[0]
    if width is not None:
        rows = Y.reshape((maps, batch) + tuple(out[:-1]) + (width,))[..., : out[-1]]
        moved = rows.transpose((1, 0) + tuple(range(2, 2 + len(out))))
        if bias is None:
            return np.ascontiguousarray(moved)
        return np.add(moved, bias.reshape((maps,) + (1,) * len(out)), order="C")
    Y = Y.reshape(maps, batch, -1)
    shape = (batch, maps) + out
    if batch == 1:
        if bias is not None:
            Y += bias.reshape(maps, 1, 1)
        return Y.reshape(shape)
    moved = Y.transpose(1, 0, 2)
    if bias is None:
        return np.ascontiguousarray(moved).reshape(shape)
    return np.add(moved, bias.reshape(maps, 1), order="C").reshape(shape)


# An im2col matrix of at most this many entries (small maps: LeNet's, ResNet-18's at a quarter of
# its widths, stems on small images) is one copy of a strided view of the padded input
# (`_strided_path`): one call where the blocked tap copies take one per tap plus flat_taps' phase
# planes. Thread CPU time, hot: LeNet's 1x28x28 5x5 49 -> 13 us, 6x14x14 57 -> 21, 16 channels
# at 2x16x16 76 -> 58, the 3x64x64 7x7/2 stem at batch 2 250 -> 201, 64 channels at 24x24 (331 K
# entries) 337 -> 332; at 1.2 M entries (32 channels at 64x64) the blocks, each still in cache when
# BLAS reads it, win (929 against 1070 us).
_STRIDED_ELEMENTS = 1 << 19


# ... and when its last axis has stride 1, the im2col rows run over the padded width, the
# windows' pad columns riding along (computed, then cropped in the store that moves Y to (N, M,
# *out)), so that the copy runs one long inner loop per (channel, tap, sample, row) instead of one
# per output row; taken when the extra product, maps * (padded width - out width) multiply-adds per
# output position of a row, is at most _PADDED_ROW_TERMS times out width. Thread CPU time, hot:
# 16 channels at 2x16x16 52 -> 38 us, 32 at 2x8x8 45 -> 38, 64 at 2x16x16 366 -> 285, LeNet's
# 1x28x28 5x5 12.8 -> 10.2; 128 channels at 12x12 (extra 21) 293 against 307.
_PADDED_ROW_TERMS = 12


def _strided_geometry(x_shape, maps, kernel_shape, pads, strides, dilations, out, acc):
    """_strided_path's constants for one shape: the padded input's shape and its size with the
    room the padded rows read past its end, the slices of its interior, the shape and byte
    strides of the (C, *kernel, N, *out) windows view of it (out's last axis the padded width
    when the rows run over it), and that width (None if not)."""
    rank = len(kernel_shape)
    batch, channels = x_shape[:2]
    padded = (batch, channels) + tuple(
        n + pads[i] + pads[i + rank] for i, n in enumerate(x_shape[2:])
    )
    interior = (slice(None), slice(None)) + tuple(
        slice(pads[i], pads[i] + n) for i, n in enumerate(x_shape[2:])
    )
    width = padded[-1]
    if strides[-1] != 1 or maps * (width - out[-1]) > _PADDED_ROW_TERMS * out[-1]:
        width = None
    room = 0 if width is None else (kernel_shape[-1] - 1) * dilations[-1]
    itemsize = np.dtype(acc).itemsize
    steps = [itemsize * math.prod(padded[i + 1 :]) for i in range(len(padded))]  # C order
    spatial = steps[2:]
    columns = tuple(out) if width is None else tuple(out[:-1]) + (width,)
    shape = (channels,) + tuple(kernel_shape) + (batch,) + columns
    view_strides = (
        (steps[1],)
        + tuple(z * d for z, d in zip(spatial, dilations))
        + (steps[0],)
        + tuple(z * s for z, s in zip(spatial, strides))
    )
    return padded, math.prod(padded) + room, interior, shape, view_strides, out, width


def _strided_path(plan, X, w, bias):
    """im2col as one copy: the padded input (X itself without pads, unless the rows read past
    its end) viewed through byte strides as (C, *kernel, N, *out) or with out's last axis the
    padded width, every window position a view element, then reshaped to the (C * K, N *
    positions) matrix, which copies it once; then `_columns_product`."""
    padded, size, interior, shape, view_strides, out, width = plan.extra
    if width is None and padded == X.shape and X.dtype == w.dtype and X.flags.c_contiguous:
        source = X
    else:
        source = np.zeros(size, w.dtype)
        source[: math.prod(padded)].reshape(padded)[interior] = X
    # a read-only use of source's memory through strides settled from its shape (ndarray's own
    # constructor: about 0.4 us, np.lib.stride_tricks.as_strided 2 to 4)
    windows = np.ndarray(shape, w.dtype, source, 0, view_strides)
    columns = windows.reshape(-1, math.prod(shape[-len(out) - 1 :]))  # the copy
    return _columns_product(columns, w, bias, plan.group, X.shape[0], out, width)


# A strided Conv whose kernel has at least _PHASE_TAPS taps per stride phase (7x7 and 5x5 stems
# at stride 2) builds its im2col matrix from the padded input split into phase planes
# (`_phase_path`): each tap then reads its plane at unit stride, and the matrix's rows run over
# the plane's width, so one phase's copy runs one long inner loop per (channel, taps, sample)
# where the strided view of `_strided_path` runs one of out-width elements read at the stride
# (the pad columns computed and cropped in the store, as for _PADDED_ROW_TERMS). Session 13,
# thread CPU time, the im2col copy alone / with the product and store: ResNet-18-w16's stem (2 x
# 3 x 64 x 64, 16 filters of 7x7 at stride 2) 119 -> 46 / 276 -> 198 us, 64 filters 634 -> 511,
# 16 filters of 5x5 189 -> 115; 3x3 kernels (2.25 taps a phase) lose 0-20%. With one sample the
# store's crop is a move the strided path does not make: 64 filters of 3 x 7 x 7 on 96 x 96 tie
# (564 -> 548), hence _PHASE_MAPS.
_PHASE_TAPS = 6
_PHASE_MAPS = 4


def _phase_rows(x_shape, w_shape, strides, dilations, out, padded):
    """Whether `_phase_path` takes this geometry: strided, undilated, at least _PHASE_TAPS taps
    per phase, several samples or filters at most a _PHASE_MAPS-th of the im2col rows, and the
    pad columns' extra product within _PADDED_ROW_TERMS of the out width."""
    kernel_shape = w_shape[2:]
    if not out or all(s == 1 for s in strides) or any(d != 1 for d in dilations):
        return False
    if math.prod(kernel_shape) < _PHASE_TAPS * math.prod(strides):
        return False
    rows = math.prod(w_shape[1:])
    if x_shape[0] == 1 and w_shape[0] * _PHASE_MAPS > rows:
        return False
    width = -(-padded[-1] // strides[-1])
    return w_shape[0] * (width - out[-1]) <= _PADDED_ROW_TERMS * out[-1]


def _phase_geometry(x_shape, kernel_shape, pads, strides, out, padded, acc):
    """_phase_path's constants for one shape: the phase buffer's shape (one row per phase, room
    past the planes for the rows that read beyond them), the planes' shape, each phase's slices
    of the input (`_windows._phase_slices`), each phase's (C, *taps of the phase, N, *out[:-1],
    plane width) view of its row (shape, byte strides) and its place among the im2col rows
    (C, *kernel, N, ...), the matrix's shape, out and the plane width."""
    rank = len(kernel_shape)
    batch, channels = x_shape[:2]
    planes = tuple(-(-p // s) for p, s in zip(padded, strides))
    size = math.prod(planes)
    steps = [math.prod(planes[i + 1 :]) for i in range(rank)]  # flat step of each axis
    itemsize = np.dtype(acc).itemsize
    phases = list(itertools.product(*(range(min(s, k)) for s, k in zip(strides, kernel_shape))))
    copies, views = [], []
    for phase in phases:
        copies.append(_phase_slices(phase, x_shape[2:], pads[:rank], strides, planes))
        counts = tuple(-(-(k - a) // s) for k, a, s in zip(kernel_shape, phase, strides))
        shape = (channels,) + counts + (batch,) + tuple(out[:-1]) + (planes[-1],)
        taps_strides = tuple(z * itemsize for z in steps)
        view_strides = (size * itemsize,) + taps_strides + (channels * size * itemsize,)
        view_strides += taps_strides
        rows = (slice(None),) + tuple(slice(a, None, s) for a, s in zip(phase, strides))
        views.append((shape, view_strides, rows))
    room = sum((-(-k // s) - 1) * z for k, s, z in zip(kernel_shape, strides, steps))
    used = batch * channels * size
    matrix = (channels,) + tuple(kernel_shape) + (batch,) + tuple(out[:-1]) + (planes[-1],)
    return (len(phases), used + room), planes, tuple(copies), tuple(views), matrix, out


def _phase_path(plan, X, w, bias):
    """im2col from phase planes (see _PHASE_TAPS): the padded input split into its stride
    phases, one row of a buffer per phase; each phase's taps copied into their rows of the
    (C, *kernel, N, *out[:-1], plane width) matrix by one copy of a strided view of its row
    (unit stride along the positions); then `_columns_product`, which crops the plane width's
    extra columns in its store."""
    buffer_shape, planes, copies, views, matrix, out = plan.extra
    buffer = np.zeros(buffer_shape, w.dtype)
    lead = X.shape[:2]
    used = math.prod(lead + planes)
    every = (slice(None), slice(None))
    for k, inside in enumerate(copies):
        if inside is not None:
            buffer[k, :used].reshape(lead + planes)[every + inside[0]] = X[every + inside[1]]
    columns = np.empty(matrix, w.dtype)
    for k, (shape, view_strides, rows) in enumerate(views):
        # a read-only view of the phase's row through strides settled from its shape
        columns[rows] = np.ndarray(shape, w.dtype, buffer[k], 0, view_strides)
    columns = columns.reshape(-1, math.prod(matrix[1 + len(out) :]))
    return _columns_product(columns, w, bias, plan.group, X.shape[0], out, planes[-1])


# Depthwise maps with at most this many output positions per sample (late maps: 3x3 to 8x8) are
# computed channels last (`_depthwise_last_path`): rows of N * C values instead of one short row
# per channel. Session 5, taps accumulated one by one, the limit then 36: MobileNetV2's 960
# channels at 3x3: 74 -> 45 us (before: one gather and one product over all taps, columns K times
# the result); against the per-channel products, 384 channels at 6x6 67 -> 58, EfficientNet's 672
# at 6x6 with 5x5 taps 253 -> 187. Session 7, with the einsum below (thread CPU time, the two
# paths interleaved, channels last / per-channel products): 7x7 outputs 0.50 (576 channels), 0.53
# (960), 0.53 (288 at 14x14, stride 2), 0.75 (64), 0.83 (32).
_DEPTHWISE_LAST_POSITIONS = 64
# ... and so are maps of at most _DEPTHWISE_LAST_WIDE_POSITIONS outputs with at least
# _DEPTHWISE_LAST_ROWS rows (N * C): the per-channel products' fixed cost per channel then
# outweighs the channels-last copies. Session 7, channels last / products: 14x14 outputs 0.99
# (128 channels), 0.92 (160), 0.86 (200), 0.83 (240), 0.79 (480); 12x12 0.93 (128), 0.87 (192),
# 0.88 (144 at 24x24, stride 2); fewer rows tie or lose: 1.06 (120 at 14x14), 1.24 (64), 0.95
# (100 at 12x12), 0.84 (96 with 5x5 taps: more taps favour channels last, left unmeasured beyond
# it); 24x24 outputs lose (1.37 for 144 channels).
_DEPTHWISE_LAST_WIDE_POSITIONS = 196
_DEPTHWISE_LAST_ROWS = 128
# (With the runs of _depthwise_chunk, session 13, channels last / the products, 3x3 taps at
# unit strides: 14x14 outputs 0.86 (32 channels), 0.83 (48), 0.88 (64), 0.75 (120); 12x12 0.75
# (100); so from _DEPTHWISE_LAST_RUN_ROWS rows when the runs apply; 28x28 1.05-1.09, 24x24 1.04
# and larger maps 1.1-1.3 stay on the products.)
_DEPTHWISE_LAST_RUN_ROWS = 32
# ... and so are unit-stride maps of any size with at least _DEPTHWISE_LAST_TAPS taps and
# _DEPTHWISE_LAST_TAPS_ROWS rows: the einsum's cost grows with the taps as the products' does,
# but not its buffer. Session 8, 5x5 taps, channels last / the blocked products (thread CPU
# time, load 8-12): 0.70-0.85 (240 channels at 12x40, PP-OCRv4_rec's), 0.78-0.81 (240 at
# 24x24), 0.90-0.93 (144 at 24x24); with fewer rows the products win (1.0 for 96 at 24x24, 1.4
# for 64, 2.4 for 40 at 56x56).
# With the runs of _depthwise_chunk, any rows (session 13, 5x5 taps at unit strides, channels
# last / the products): 0.50 (16 channels at 56x56), 0.48 (24 at 56x56), 0.72 (40 at 56x56),
# 0.64 (64 at 24x24), 0.71 (96 at 24x24), 0.78 (64 at 40x56, PP-OCRv6 tiny det's), 0.45 (2 x 16
# at 32x100), 0.83 (16 at 112x112).
_DEPTHWISE_LAST_TAPS = 25
_DEPTHWISE_LAST_TAPS_ROWS = 144
# ... and so are maps whose outputs are at most this share of the padded grid the per-channel
# products run over (short, wide maps with wide pads, as in OCR models: 200 channels of 2x96 with
# 5x5 taps, 192 outputs on a 600-position grid: 1832 -> 517 us; 0.41 of the grid: 762 -> 325;
# about even at 0.55; at 0.73 the products win, 92 against 138).
_DEPTHWISE_LAST_SHARE = 0.6
# (Figures above with one multiply and one add per tap. With the one einsum over the windows
# view, session 6: 960 channels at 3x3 67 -> 34 us, 576 at 6x6 82 -> 58, 672 at 6x6 with 5x5
# taps 219 -> 123. Both thresholds measured again then: channels last at 12x12 with 192
# channels even with the products, 86 against 88; at 24x24 slower, 274 against 265, but for
# 240 channels with 5x5 taps, 813 against 1111: a rule for that case is still to measure.)


def _depthwise_last_path(plan, X, w, bias):
    """Depthwise Conv (multiplier 1) with the samples and channels last: X padded into
    (*padded, N * C), viewed through strides as its (*kernel, *out, N * C) windows, times the
    taps' weights (*kernel, N * C) summed over the taps by one einsum, then moved back to
    (N, C, *out) with the bias added. With runs of R output columns (`_depthwise_chunk`) the
    windows' last axes are (out[-1] / R, R * N * C) and the weights' last R * N * C long."""
    out, (shape, view_strides), sum_of_taps, bands, chunk = plan.extra
    batch, channels = X.shape[:2]
    rank = len(out)
    pads = plan.pads
    padded = tuple(n + pads[i] + pads[i + rank] for i, n in enumerate(X.shape[2:]))
    buffer = np.zeros(padded + (batch, channels), w.dtype)
    interior = tuple(slice(pads[i], pads[i] + n) for i, n in enumerate(X.shape[2:]))
    buffer[interior] = X.transpose(tuple(range(2, 2 + rank)) + (0, 1))
    buffer = buffer.reshape(padded + (batch * channels,))
    weights = cached(
        (w,),
        ("depthwise taps", batch, chunk),
        lambda: _depthwise_last_weights(w, batch, chunk or 1, shape[:rank] + shape[-1:]),
    )
    windows = np.ndarray(shape, w.dtype, buffer, 0, view_strides)  # read only
    # every tap's product summed in one pass of einsum's own loop (no optimize: no BLAS, no
    # temporaries), where one multiply and one add per tap took 1.7 to 2 times as long
    if bands is None:
        Y = np.einsum(sum_of_taps, windows, weights)
    else:  # each band of output rows over the kernel rows that reach into the input
        Y = np.empty(shape[rank:], w.dtype)
        rest = (slice(None),) * (rank - 1)
        for first, stop, low, high in bands:
            taps_window = windows[(slice(low, high),) + rest + (slice(first, stop),)]
            np.einsum(sum_of_taps, taps_window, weights[low:high], out=Y[first:stop])
    # (positions, N * C) -> (N * C, positions): one transposing pass, the bias added in it
    Y = Y.reshape(-1, batch * channels).T
    shape = (batch, channels) + out
    if bias is None:
        return np.ascontiguousarray(Y).reshape(shape)
    bias = np.tile(bias, batch) if batch > 1 else bias
    return np.add(Y, bias.reshape(-1, 1), order="C").reshape(shape)


def _depthwise_last_weights(w, batch, chunk, shape):
    """_depthwise_last_path's weights: (K, C) (one contiguous row per tap), repeated for each
    sample and then for each of the `chunk` output columns a row of the windows view holds,
    as `shape` (*kernel, chunk * N * C)."""
    weights = w.reshape(w.shape[0], -1).T
    return np.ascontiguousarray(np.tile(weights, (1, batch * chunk))).reshape(shape)


# _depthwise_last_path's einsum runs its inner loop over the last axis of the windows view, the
# N * C rows of one output position: 96 to 400 values on the OCR models' maps, where the loop's
# fixed cost per call outweighs its multiply-adds. With unit stride along the last spatial axis
# the rows of consecutive output columns lie side by side in the padded buffer, so R of them
# are one contiguous run (the weights repeated R times): the view's last axes become
# (out[-1] / R, R * N * C), R the least divisor of out[-1] giving at least _DEPTHWISE_RUN
# values (at most _DEPTHWISE_RUN_MAX), for fewer than _DEPTHWISE_RUN_ROWS rows (960 rows at 3x3
# lost 6% in runs of 3, 512 at 7x7 1%). Session 13, the einsum alone over 5x5 taps (thread CPU
# time, us, one row per position / runs of R): 5x80 positions of 96 rows 244 / 128 (R 16), 3x96
# of 176 rows 246 / 171 (R 8), 6x96 of 64 rows 289 / 128 (R 16), 14x14 of 256 172 / 173 (R 7),
# 7x7 of 512 95 / 88 (R 7); at 400 rows 294 / 256-267 whatever R.
_DEPTHWISE_RUN = 1024
_DEPTHWISE_RUN_MAX = 8 * _DEPTHWISE_RUN
_DEPTHWISE_RUN_ROWS = 512


def _depthwise_chunk(out, rows, strides):
    """R for `_depthwise_last_path`'s runs (see _DEPTHWISE_RUN), or None (one position a row:
    rows long enough already, a strided last axis, one spatial axis, where the bands of
    `_tap_bands` slice the axis the runs are made of)."""
    if len(out) < 2 or strides[-1] != 1 or rows >= _DEPTHWISE_RUN_ROWS or out[-1] < 2:
        return None
    divisors = [r for r in range(2, out[-1] + 1) if out[-1] % r == 0]
    chunk = next((r for r in divisors if r * rows >= _DEPTHWISE_RUN), out[-1])
    if chunk * rows > _DEPTHWISE_RUN_MAX:  # a prime width: a shorter run, the weights' copy small
        chunk = max((r for r in divisors if r * rows <= _DEPTHWISE_RUN_MAX), default=None)
    return chunk


# Where the kernel rows that reach into the input (not only the zero padding) leave out at least
# _BAND_SAVING of the einsum's terms (_BAND_SAVING_WIDE on output rows of at least _BAND_WIDE
# positions), _depthwise_last_path sums each band of output rows over its own kernel rows
# (`_tap_bands`): the short maps of OCR models and the late maps of EfficientNet, where a 5x5
# kernel's outer rows read padding for the outer output rows. Session 8, per call, bands / one
# einsum (thread CPU time, three rounds, load 12): 2 x 200 channels at 2x96 with 5x5 taps
# (saving 0.6) 0.60-0.64, 2 x 88 at 3x96 (0.4) 0.70-0.78, 1152 at 3x3 (0.4) 0.66-0.91, 480 at
# 3x40 0.68-0.78, 480 at 6x40 (0.2) 0.65-0.90; 0.2 on short rows ties or loses, one einsum call
# per band: 672 at 6x6 0.93-1.40, 192 at 6x8 1.03-1.07.
_BAND_SAVING = 0.3
_BAND_SAVING_WIDE = 0.2
_BAND_WIDE = 32


@functools.lru_cache(maxsize=512)
def _tap_bands(size, kernel, pad, stride, dilation, count, width):
    """The output rows along the first spatial axis in bands of equal reach: (first, stop, low,
    high) with kernel rows low..high-1 the only ones reading the input for outputs first..stop-1,
    or None when the bands would leave out too few of the terms (`count` output rows of `width`
    positions; `pad` the padding before the first input row)."""
    bands: list[list[int]] = []
    for i in range(count):
        start = i * stride - pad
        low = min(kernel, max(0, -(start // dilation)))  # first tap at a row >= 0: ceil(-start / d)
        high = max(low, min(kernel, (size - 1 - start) // dilation + 1))  # past the last < size
        if bands and bands[-1][2:] == [low, high]:
            bands[-1][1] = i + 1
        else:
            bands.append([i, i + 1, low, high])
    terms = sum((stop - first) * (high - low) for first, stop, low, high in bands)
    saving = _BAND_SAVING_WIDE if width >= _BAND_WIDE else _BAND_SAVING
    if count == 0 or terms > (1 - saving) * count * kernel:
        return None
    return tuple(tuple(b) for b in bands)


# einsum's axis letters for _depthwise_last_path (taps, then output positions; z the rows)
_LETTERS = "abcdefghijklmnopqrstuvwxy"


# Kernels with at least this many taps (an audio front end's 256- or 400-sample filters, a
# learned STFT) build the im2col matrix with one strided copy of sliding windows instead of one
# copy per tap: silero-vad's STFT Conv (256 taps, 4 positions) 570 -> 23 us. With few taps the
# per-tap copies of _im2col_product read memory better.
_WINDOWED_TAPS = 64


def _windowed_product(x, w, bias, pads, strides):
    """Y (N, M, *out) in w's type as one product: the padded input's sliding windows at every
    stride-th position, (N, positions, C * K), times the filters (M, C * K) transposed."""
    rank = len(strides)
    kernel_shape = w.shape[2:]
    spatial = tuple(range(2, 2 + rank))
    widths = [(0, 0), (0, 0)] + [(pads[i], pads[i + rank]) for i in range(rank)]
    padded = np.pad(x.astype(w.dtype, copy=False), widths)
    windows = np.lib.stride_tricks.sliding_window_view(padded, kernel_shape, axis=spatial)
    windows = windows[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in strides)]
    batch, out = windows.shape[0], windows.shape[2 : 2 + rank]
    order = (0, *range(2, 2 + rank), 1, *range(2 + rank, 2 + 2 * rank))
    columns = windows.transpose(order).reshape(batch, math.prod(out), -1)
    filters = w.reshape(w.shape[0], -1).T
    Y = np.empty((batch, math.prod(out), w.shape[0]), w.dtype)  # (N, positions, M)
    for n in range(batch):
        _matmul(columns[n], filters, out=Y[n])
    if bias is not None:
        Y += bias
    return Y.transpose(0, 2, 1).reshape((batch, w.shape[0]) + out)


def _patch_product(X, w, bias, group):
    """conv when the windows are non-overlapping patches: X (cropped to whole patches) viewed as
    (N, C, o1, k1, o2, k2, ...) is the im2col matrix after one transposing copy to
    (N, C, k1, k2, ..., o1, o2, ...); then (G, M/G, C/G*K) @ (N, G, C/G*K, V), as for 1x1. (The
    im2col path copies every tap through flat_taps' padded grid: 6.5x onnxruntime on a ViT's
    16x16 patches of a 224x224 image, against about 2x for this one product.)"""
    batch, channels = X.shape[:2]
    maps, kernel_shape = w.shape[0], w.shape[2:]
    out = tuple(n // k for n, k in zip(X.shape[2:], kernel_shape))
    if batch == 0 or math.prod(out) == 0:
        return np.zeros((batch, maps) + out, w.dtype)
    rank = len(out)
    order = (0, 1) + tuple(3 + 2 * i for i in range(rank)) + tuple(2 + 2 * i for i in range(rank))
    tiles = tile_view(X, kernel_shape, out)
    columns = np.ascontiguousarray(tiles.transpose(order), dtype=w.dtype)
    columns = columns.reshape(batch, group, -1, math.prod(out))
    filters = w.reshape(group, maps // group, -1)
    Y = _stacked(filters, columns).reshape((batch, maps) + out)
    if bias is not None:
        Y += bias.reshape((maps,) + (1,) * rank)
    return Y


# im2col in blocks of about this many bytes, so each block is still in cache when BLAS reads it;
# a block spans at least _MIN_COLUMNS output positions, so each product stays efficient.
_BLOCK_BYTES = 1 << 21
_MIN_COLUMNS = 512


def _im2col_product(x, w, bias, pads, strides, dilations, group):
    """Y (N, M, *out), in w's type, of a convolution through im2col in blocks of output rows
    (or of whole samples when one sample's columns are small): each block's columns (C * K,
    positions) are copied tap by tap from flat_taps' grid views (the padded input split into
    stride phases, so every copy reads rows with a unit stride), then one product per group
    lands in the block's place in Y (a strided slice BLAS writes directly), the bias added while
    the block is in cache. No buffer of the whole im2col matrix and no crop of Y."""
    batch, channels = x.shape[:2]
    maps, kernel_shape = w.shape[0], w.shape[2:]
    rank = len(kernel_shape)
    padded = [n + pads[i] + pads[i + rank] for i, n in enumerate(x.shape[2:])]
    out = tuple(max(o, 0) for o in window_positions(padded, kernel_shape, strides, dilations))
    if batch == 0 or math.prod(out) == 0:
        return np.empty((batch, maps) + out, w.dtype)
    views, grid, out = flat_taps(x, pads, 0, kernel_shape, strides, dilations, dtype=w.dtype)
    samples, rows, blocks = _im2col_plan(x.shape, out, len(views), w.dtype.itemsize)
    size = math.prod(out)
    Y = np.empty((batch, maps, size), w.dtype)
    # (C, N, *grid) per tap: a block's samples and rows, the grid's extra columns left out
    sources = [view.reshape(x.shape[:2] + tuple(grid)).swapaxes(0, 1) for view in views]
    crop = tuple(slice(0, o) for o in out[1:])
    K = len(views)
    inner = size // out[0]
    buffer = np.empty(channels * K * samples * rows * inner, w.dtype)
    span = channels // group * K
    filters = w.reshape(group, maps // group, span)
    if bias is not None:
        bias = bias.reshape(maps, 1)
    for n, count, first, stop in blocks:
        shape = (channels, K, count, stop - first) + out[1:]
        block = buffer[: math.prod(shape)].reshape(shape)
        where = (slice(None), slice(n, n + count), slice(first, stop)) + crop
        for t, source in enumerate(sources):
            block[:, t] = source[where]
        matrix = block.reshape(channels * K, count * (stop - first) * inner)
        if count == 1:
            target = Y[n, :, first * inner : stop * inner]
            for g in range(group):
                rows_g = slice(g * maps // group, (g + 1) * maps // group)
                _matmul(filters[g], matrix[g * span : (g + 1) * span], out=target[rows_g])
            if bias is not None:
                target += bias
        else:
            product = np.empty((maps, matrix.shape[1]), w.dtype)
            for g in range(group):
                rows_g = slice(g * maps // group, (g + 1) * maps // group)
                _matmul(filters[g], matrix[g * span : (g + 1) * span], out=product[rows_g])
            if bias is not None:
                product += bias
            Y[n : n + count] = product.reshape(maps, count, size).swapaxes(0, 1)
    return Y.reshape((batch, maps) + out)


@functools.lru_cache(maxsize=1024)
def _im2col_plan(shape, out, taps_count, itemsize):
    """_im2col_product's blocks, settled once per shape: (samples per block, output rows per
    block, the blocks as (first sample, samples, first row, stop row))."""
    batch, channels = shape[:2]
    inner = math.prod(out[1:])
    per_row = channels * taps_count * inner * itemsize
    rows = max(1, min(out[0], _BLOCK_BYTES // max(per_row, 1)))
    rows = max(rows, min(out[0], -(-_MIN_COLUMNS // max(inner, 1))))
    samples = 1
    if rows == out[0] and out[0]:
        samples = max(1, min(batch, _BLOCK_BYTES // max(per_row * out[0], 1)))
    blocks = []
    for n in range(0, batch, samples):
        for first in range(0, out[0], rows):
            blocks.append((n, min(samples, batch - n), first, min(first + rows, out[0])))
    return samples, rows, tuple(blocks)


# Depthwise with at least this many channels: the taps copied into (N, C, K, V) columns and one
# small product per channel; with fewer (long rows), the taps accumulated in place. Measured on
# MobileNet and ShuffleNet layers: 16 channels at 112x112 favour accumulation, 32 and more the
# products (20-35% faster: one pass per tap instead of two, and no per-row weight broadcast).
_DEPTHWISE_PRODUCT_CHANNELS = 32


# The per-channel products' columns (K taps x N x C x V) past this many bytes run in blocks of
# channels of about _DEPTHWISE_BLOCK_BYTES: at 5x5 taps the whole buffer outgrows the cache and
# its copies and products run at memory speed. Session 8, blocks / whole (thread CPU time, load
# 8-12): 0.38 (96 channels at 48x48, 26 MB), 0.48 (240 at 12x40, PP-OCRv4_rec's, 17 MB), 0.48
# (40 at 56x56, 14 MB), 0.53 (144 at 24x24, 11 MB); 1.0-1.1 at 6.5 MB (72 at 28x28, 96 at
# 24x24), 1.05-1.15 at 4.3 MB (64 at 24x24); 3x3 layers of 1-1.8 MB lose 1.1-2x in blocks.
_DEPTHWISE_WHOLE_BYTES = 8 << 20
_DEPTHWISE_BLOCK_BYTES = 2 << 20


def _depthwise(views, w, products):
    """Depthwise convolution (one input channel per group, M = C * multiplier) from flat_taps'
    views: (N, C, multiplier, V) by per-channel products (`products`, for at least
    _DEPTHWISE_PRODUCT_CHANNELS channels), or (N, C, V) by accumulation without a multiplier."""
    batch, channels, size = views[0].shape
    multiplier = w.shape[0] // channels
    if products:
        # tap-major (K, N, C, V): each tap's copy writes one contiguous block (about 30% faster
        # than (N, C, K, V)'s short rows); the products read it as (N, C, K, V) with row stride
        # N * C * V, which BLAS takes as is
        filters = w.reshape(channels, multiplier, len(views))
        per_channel = len(views) * batch * size * w.dtype.itemsize
        if per_channel * channels <= _DEPTHWISE_WHOLE_BYTES:
            columns = np.empty((len(views), batch, channels, size), w.dtype)
            for t, view in enumerate(views):
                columns[t] = view
            # (C, multiplier, K) @ (N, C, K, V): one (multiplier, K) @ (K, V) product per channel
            return np.matmul(filters, columns.transpose(1, 2, 0, 3))
        # the same in blocks of channels, each block's columns still in cache for its products
        block = max(1, _DEPTHWISE_BLOCK_BYTES // per_channel)
        Y = np.empty((batch, channels, multiplier, size), w.dtype)
        buffer = np.empty((len(views), batch, block, size), w.dtype)
        for first in range(0, channels, block):
            stop = min(first + block, channels)
            columns = buffer[:, :, : stop - first]
            for t, view in enumerate(views):
                columns[t] = view[:, first:stop]
            np.matmul(filters[first:stop], columns.transpose(1, 2, 0, 3), out=Y[:, first:stop])
        return Y
    # each tap's weights times that tap's view, accumulated in place in C order of the taps;
    # (K, C, 1) or (K, C, multiplier, 1): the weights of one tap broadcast over the row
    weights = w.reshape(channels, multiplier, len(views)).transpose(2, 0, 1)[..., None]
    if multiplier == 1:
        weights = weights[:, :, 0]  # three-dimensional: fewer broadcast axes per tap
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


@kernel(exact=False, exact_twin="rt.exact_conv_transpose")
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
    # BLAS at one thread, a large product in parts over the threads (`_stacked`), as for conv
    return serially(_conv_transpose, X, W, B, *options, X.ndim == 5)


@kernel(exact=True)
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
    Y = np.zeros(check_allocation((batch, maps, *out), acc), dtype=acc)
    if direct:
        _conv_transpose_direct(Y, X, W, group, strides, dilations, begins)
    else:
        # (G, M/G * K, C/G) @ (N, G, C/G, L): every input element times every filter tap.
        in_per_group = channels // group
        filters = W.astype(acc).reshape(group, in_per_group, -1).transpose(0, 2, 1)
        positions = math.prod(X.shape[2:])
        products = _stacked(filters, X.astype(acc).reshape(batch, group, in_per_group, positions))
        columns = products.reshape((batch, maps) + kernel_shape + X.shape[2:])
        if kernel_shape == strides and all(d == 1 for d in dilations):
            _place_tiles(Y, columns, strides, begins)
        else:
            add_windows(Y, columns, strides, dilations, begins)
    if B is not None:
        Y += B.astype(acc).reshape((maps,) + (1,) * rank)
    return Y.astype(X.dtype, copy=False)


def _place_tiles(Y, columns, strides, begins):
    """add_windows when the kernel equals the strides (no dilation): the taps' tiles never
    overlap, so each tap's values are assigned to Y (zeros) rather than added, a strided copy per
    tap (several times faster than one transposing copy of the whole result)."""
    rank = Y.ndim - 2
    kernel_shape, spatial = columns.shape[2 : 2 + rank], columns.shape[2 + rank :]
    every = (slice(None), slice(None))
    ones = (1,) * rank
    for tap in taps(kernel_shape):
        where = tap_slices(tap, spatial, Y.shape[2:], strides, ones, begins)
        if where is not None:
            Y[every + where[1]] = columns[every + tap + where[0]]


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
    image = np.zeros(
        check_allocation((batch, rows // kernel_size) + image_shape, data.dtype), dtype=data.dtype
    )
    return add_windows(image, columns, strides, dilations, pads[:rank])


# --- DeformConv ------------------------------------------------------------------------------------

__all__ += ["deform_conv", "exact_deform_conv"]


def _deform_geometry(X, W, offset, pads, strides, dilations, offset_group):
    """(pads, strides, dilations, output dims) of a DeformConv, the defaults along every spatial
    axis of the run-time input; the offset's shape must be the one the geometry gives."""
    rank = X.ndim - 2
    if rank < 1 or W.ndim != X.ndim:
        raise ValueError(f"DeformConv: X {X.shape} and W {W.shape} need equal ranks of 3 or more")
    kernel_shape = W.shape[2:]
    pads = tuple(pads) if pads is not None else (0,) * (2 * rank)
    strides = tuple(strides) if strides is not None else (1,) * rank
    dilations = tuple(dilations) if dilations is not None else (1,) * rank
    padded = [n + pads[i] + pads[i + rank] for i, n in enumerate(X.shape[2:])]
    out = tuple(max(o, 0) for o in window_positions(padded, kernel_shape, strides, dilations))
    expected = (X.shape[0], offset_group * math.prod(kernel_shape) * rank) + out
    if tuple(offset.shape) != expected or X.shape[1] % offset_group:
        raise ValueError(
            f"DeformConv: offset {offset.shape} does not fit X {X.shape}, W {W.shape} and "
            f"offset_group {offset_group} (expected {expected})"
        )
    return pads, strides, dilations, out


def _deform_columns(
    X, offset, mask, kernel_shape, pads, strides, dilations, out, offset_group, work
):
    """The sampled windows (N, C, prod(kernel), prod(out)) in the type `work`: each tap's point
    (o * stride - pad_begin + k * dilation + its offset, per axis) read by linear interpolation
    between its 2**rank neighbours, a neighbour outside the input reading 0, times the tap's mask.
    Every step is one correctly rounded elementwise operation in a fixed order (the neighbours'
    weights multiplied axis by axis, the neighbours added in the order of their corner bits), so
    in float64 the bits are the same everywhere (the exact variant's columns)."""
    batch, channels = X.shape[:2]
    spatial, rank = X.shape[2:], len(kernel_shape)
    taps, positions = math.prod(kernel_shape), math.prod(out)
    per_group = channels // offset_group
    source = X.astype(work, copy=False).reshape(batch, offset_group, per_group, math.prod(spatial))
    shifts = offset.astype(work, copy=False).reshape(batch, offset_group, taps, rank, positions)
    tap_index = np.indices(kernel_shape).reshape(rank, taps, 1)
    out_index = np.indices(out).reshape(rank, 1, positions)
    floors, fractions = [], []
    for a in range(rank):
        base = out_index[a] * strides[a] - pads[a] + tap_index[a] * dilations[a]  # (K, P) ints
        point = shifts[:, :, :, a] + base.astype(work)
        floor = np.floor(point)
        floors.append(floor.astype(np.int64))
        fractions.append(point - floor)
    sampled = None
    for corner in np.ndindex(*(2,) * rank):
        weight, flat = None, None
        inside = np.ones(floors[0].shape, bool)
        for a, bit in enumerate(corner):
            index = floors[a] + bit
            inside &= (index >= 0) & (index < spatial[a])
            factor = fractions[a] if bit else 1 - fractions[a]
            weight = factor if weight is None else weight * factor
            flat = index if flat is None else flat * spatial[a] + index
        flat = np.where(inside, flat, 0).reshape(batch, offset_group, 1, taps * positions)
        values = np.take_along_axis(source, flat, axis=3)
        values = np.where(inside.reshape(flat.shape), values, 0)
        term = values * weight.reshape(flat.shape)
        sampled = term if sampled is None else sampled + term
    sampled = sampled.reshape(batch, offset_group, per_group, taps, positions)
    if mask is not None:
        sampled = sampled * mask.astype(work, copy=False).reshape(
            batch, offset_group, 1, taps, positions
        )
    return sampled.reshape(batch, channels, taps, positions)


def _deform_conv(X, W, offset, B, mask, pads, strides, dilations, group, offset_group, work, mm):
    X, W, offset = np.asarray(X), np.asarray(W), np.asarray(offset)
    pads, strides, dilations, out = _deform_geometry(
        X, W, offset, pads, strides, dilations, offset_group
    )
    batch, channels, maps = X.shape[0], X.shape[1], W.shape[0]
    if channels != W.shape[1] * group or maps % group:
        raise ValueError(f"DeformConv: X {X.shape} and W {W.shape} do not fit group {group}")
    if mask is not None:
        mask = np.asarray(mask)
        expected = (batch, offset.shape[1] // len(out)) + out
        if tuple(mask.shape) != expected:
            raise ValueError(
                f"DeformConv: mask {mask.shape} does not fit offset (expected {expected})"
            )
    check_allocation(
        (batch, channels, math.prod(W.shape[2:]), math.prod(out)),
        np.dtype(work),
        "DeformConv columns",
    )
    columns = _deform_columns(
        X, offset, mask, W.shape[2:], pads, strides, dilations, out, offset_group, work
    )
    columns = columns.reshape(batch, group, -1, math.prod(out))
    filters = W.astype(work, copy=False).reshape(group, maps // group, -1)
    Y = mm(filters, columns).reshape((batch, maps) + out)
    if B is not None:
        Y = Y + np.asarray(B).astype(Y.dtype).reshape((maps,) + (1,) * len(out))
    return Y


@kernel(fresh=True, exact=False, exact_twin="rt.exact_deform_conv")
def deform_conv(
    X, W, offset, B=None, mask=None, *, pads=None, strides=None, dilations=None, group=1,
    offset_group=1,
):  # fmt: skip
    """ONNX DeformConv, X (N, C, *in), W (M, C/group, *k), offset (N, offset_group * prod(k) *
    rank, *out), mask (N, offset_group * prod(k), *out): the windows sampled by
    _deform_columns in float32 (float64 for float64), then one BLAS product per group."""
    work = np.float64 if np.asarray(X).dtype == np.float64 else np.float32
    Y = _deform_conv(
        X, W, offset, B, mask, pads, strides, dilations, group, offset_group, work, np.matmul
    )
    return Y.astype(np.asarray(X).dtype, copy=False)


@kernel(exact=True)
def exact_deform_conv(
    X, W, offset, B=None, mask=None, *, pads=None, strides=None, dilations=None, group=1,
    offset_group=1,
):  # fmt: skip
    """deform_conv's exact twin: the columns sampled in float64 (_deform_columns: fixed-order
    correctly rounded steps), multiplied by the filters as exact_matmul computes its float64 value
    (integer-valued slices, whose BLAS sums are exact in any order), the bias added in float64,
    rounded once to X's type."""
    from runtime_support.exact import _matmul64, _rounded

    Y = _deform_conv(
        X, W, offset, B, mask, pads, strides, dilations, group, offset_group, np.float64, _matmul64
    )
    return _rounded(Y, np.asarray(X).dtype)


# --- CausalConvWithState ---------------------------------------------------------------------------

__all__ += ["causal_conv_with_state", "exact_causal_conv_with_state"]


def _causal_conv_with_state(X, W, B, past_state, activation, convolve, sigmoid):
    """(output, present_state) of CausalConvWithState as its ONNX function body computes them:
    the past state (zeros when absent) and the input concatenated along the length, a depthwise
    Conv of that (group = channels, no pads), SiLU y * sigmoid(y) in float32 (float64 for float64
    inputs) and back to the input's type; the present state is the last k - 1 positions of the
    concatenation. Ranks are read off the arrays: nothing about them need be known at compile
    time."""
    X, W = np.asarray(X), np.asarray(W)
    if X.ndim != 3 or W.ndim != 3 or W.shape[0] != X.shape[1] or W.shape[1] != 1:
        raise ValueError(
            f"CausalConvWithState: input {X.shape} (batch, channels, length) and weight "
            f"{W.shape} (channels, 1, k) do not fit"
        )
    if activation not in ("none", "silu", "swish"):
        raise ValueError(f"CausalConvWithState: unknown activation {activation!r}")
    keep = W.shape[2] - 1
    if past_state is None:
        past_state = np.zeros(X.shape[:2] + (keep,), X.dtype)
    past_state = np.asarray(past_state)
    if past_state.shape != X.shape[:2] + (keep,):
        raise ValueError(
            f"CausalConvWithState: past_state {past_state.shape} is not (batch, channels, k - 1) "
            f"= {X.shape[:2] + (keep,)}"
        )
    padded = np.concatenate([past_state.astype(X.dtype, copy=False), X], axis=2)
    Y = convolve(padded, W, B, group=X.shape[1])
    if activation != "none":
        y = Y.astype(np.float64 if X.dtype == np.float64 else np.float32)
        Y = (y * sigmoid(y)).astype(X.dtype)
    return Y, np.array(padded[:, :, padded.shape[2] - keep :])


@kernel(exact=False, exact_twin="rt.exact_causal_conv_with_state")
def causal_conv_with_state(input, weight, bias=None, past_state=None, *, activation="none"):
    """ONNX CausalConvWithState (see _causal_conv_with_state): rt.conv and numpy's sigmoid."""
    from runtime_support.math import sigmoid

    return _causal_conv_with_state(input, weight, bias, past_state, activation, conv, sigmoid)


@kernel(exact=True)
def exact_causal_conv_with_state(input, weight, bias=None, past_state=None, *, activation="none"):
    """causal_conv_with_state's exact twin: the same steps through exact_conv, exact_sigmoid and
    correctly rounded products (the bits of the function body's exact-variant code)."""
    from runtime_support.exact import exact_conv
    from runtime_support.exact_math import exact_sigmoid

    return _causal_conv_with_state(
        input, weight, bias, past_state, activation, exact_conv, exact_sigmoid
    )
