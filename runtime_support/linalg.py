"""Linear-algebra kernels numpy has no single function for.

`matmul_weight(a, w)` is a float32 product of activations by a constant weight matrix (a model's
Linear layers). numpy's BLAS (OpenBLAS) copies both operands into its panel layout on every call;
for the few-row products of transformers (batch * sequence rows of 56 to 200, weights of 0.6 to 9
MB) that copy of the weight costs a fifth of the product (docs/performance.md, "Transformers,
session 9"). OpenBLAS also ships, and exports, the AVX-512 kernels of its "small matrix" path, which
read both operands where they lie; numpy's OpenBLAS takes that path by itself only below 10^6
multiply-adds. When the loaded OpenBLAS exports `sgemm_small_kernel_b0_nn_SKYLAKEX` and runs its
SkylakeX kernels (it picked them for this CPU, which has the AVX-512 sets they are built for),
`matmul_weight` calls that kernel through ctypes; otherwise, and until a first-use self-check
against np.matmul has passed, it is np.matmul. Neither is exact (BLAS's order of summation depends
on the build and the CPU); docs/decisions.md, "Products by a constant weight".

At more than one thread (runtime_support.set_num_threads) a product under
_threads.SMALL_BLAS_WORK multiply-adds runs the kernel in the calling thread (OpenBLAS would split
it and wait for its second thread), a larger one is np.matmul with OpenBLAS's threads. With
SPLIT_MULTIPLY_ADDS set, larger products run the kernel in bands of the weight's columns over the
runtime's pool (`run_parts`; ctypes releases the GIL during the call); every element is the same
sum in the same order whatever the band it falls in, so the split result has the bits of the
whole (tests/test_linalg_weight.py). Off by default: measured slower than OpenBLAS's threads on a
quiet machine.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable

import numpy as np

from runtime_support import _threads
from runtime_support._constants import cached, value_tag
from runtime_support._kernels import kernel

__all__ = ["matmul_integer", "matmul_weight"]

# OpenBLAS's names of the cores whose kernels are the SkylakeX ones (its core names for the other
# AVX-512 CPUs have kernels of their own and are not taken: not measured).
_CORES = ("skylakex",)
_KERNEL_SYMBOL = "sgemm_small_kernel_b0_nn_SKYLAKEX"
_CORE_SYMBOLS = (
    "gotoblas_corename",
    "scipy_openblas_get_corename64_",
    "scipy_openblas_get_corename",
    "openblas_get_corename64_",
    "openblas_get_corename",
)
_CPU_FLAGS = ("avx512f", "avx512dq", "avx512bw", "avx512vl")
# ONEMODEL_BLAS_KERNEL=0 in the environment: always np.matmul.
_DISABLE_VARIABLE = "ONEMODEL_BLAS_KERNEL"
# At more than one thread, products of _threads.SMALL_BLAS_WORK multiply-adds or more go to
# np.matmul (OpenBLAS's own threads), unless SPLIT_MULTIPLY_ADDS is set: then those of at least
# that many run the kernel in bands of the weight's columns (multiples of its 64) over the
# runtime's pool. None by default: on the quiet machine the bands made the transformers 1.57-2.30x
# onnxruntime at 2 threads where OpenBLAS's threads gave 1.30-1.53 (docs/performance.md, session
# 9); under load they were 0.2-1.3x where OpenBLAS's threads waited (4-9x).
SPLIT_MULTIPLY_ADDS: int | None = None
_BAND = 64
# Above this many rows OpenBLAS's packed product is faster (its copy of the weight is amortized over
# the rows, and the kernel reads the weight once per 4 rows): np.matmul.
MAX_ROWS = 256
# Below these, the ctypes call's few microseconds outweigh the saved copy and numpy's own path
# (a matrix-vector product for one row) is faster: per call at 1 thread (load 2, session 9),
# kernel / np.matmul 5.5 at 1 x 64 x 64, 1.5 at 1 x 768 x 768, 1.9 at 4 x 256 x 256, 1.24 at
# 56 x 128 x 128 (0.9 M multiply-adds), 0.69-0.85 from 8 x 384 x 384 (1.2 M) up. The bench's
# gpt_step and tiny_mlp_b1 had gone from 0.98 and 1.44 to 2.35 and 2.36 onnxruntime's time.
MIN_ROWS = 8
MIN_MULTIPLY_ADDS = 1_000_000

_I64, _POINTER, _F32 = ctypes.c_int64, ctypes.c_void_p, ctypes.c_float
_state: dict = {"kernel": None, "checked": False, "why": "not looked up yet"}


def weight_kernel() -> str:
    """What `matmul_weight` runs: the kernel's name, or why it is np.matmul (looks it up once)."""
    _kernel()
    return _KERNEL_SYMBOL if _state["kernel"] is not None else f"np.matmul ({_state['why']})"


def _kernel():
    """The ctypes function of the small-matrix kernel, checked, or None (then np.matmul)."""
    if not _state["checked"]:
        _state["checked"] = True
        function, why = _find_kernel()
        if function is not None and not _self_check(function):
            function, why = None, "its results differed from np.matmul's in the self-check"
        _state["kernel"], _state["why"] = function, why
    return _state["kernel"]


def _find_kernel():
    """(the kernel, "") when the loaded OpenBLAS exports it and runs its SkylakeX kernels on a
    CPU with their instruction sets, else (None, the reason)."""
    if os.environ.get(_DISABLE_VARIABLE, "").strip() == "0":
        return None, f"{_DISABLE_VARIABLE}=0"
    for path in _threads._loaded_libraries():
        if "openblas" not in path.name.lower():
            continue
        library = _threads._already_loaded(path)
        function = getattr(library, _KERNEL_SYMBOL, None) if library is not None else None
        if function is None:
            continue
        core = _core_name(library)
        if core is None or core.lower() not in _CORES:
            return None, f"OpenBLAS runs its {core or 'unknown'} kernels"
        if not _cpu_has_flags():
            return None, "the CPU lacks an AVX-512 set the kernel is built for"
        # int CNAME(M, N, K, A, lda, alpha, B, ldb, C, ldc): column-major C = alpha A B, C only
        # written (the kernel without beta: the one with it reads C even when beta is 0)
        function.argtypes = [_I64, _I64, _I64, _POINTER, _I64, _F32, _POINTER, _I64, _POINTER]
        function.argtypes += [_I64]
        function.restype = ctypes.c_int
        return function, ""
    return None, "numpy's BLAS is not an OpenBLAS that exports the kernel"


def _core_name(library) -> str | None:
    for symbol in _CORE_SYMBOLS:
        function = getattr(library, symbol, None)
        if function is not None:
            function.argtypes, function.restype = [], ctypes.c_char_p
            name = function()
            return name.decode("ascii", "replace") if name else None
    return None


def _cpu_has_flags() -> bool:
    """The AVX-512 sets in /proc/cpuinfo's flags (Linux); elsewhere OpenBLAS's choice of its
    SkylakeX kernels, made from the CPU's own report, is taken as the answer."""
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return all(flag in flags for flag in _CPU_FLAGS)
    except OSError:
        return True
    return True


def _self_check(function) -> bool:
    """The kernel against a float64 product on shapes that reach every tail of its loops (rows
    of 64, 32, 16 and masked ones; columns in sixes, fours, twos and one), split and whole."""
    rng = np.random.default_rng(12)
    for m, k, n in ((7, 33, 133), (1, 5, 64), (13, 64, 1)):
        a = rng.standard_normal((m, k), dtype=np.float32)
        w = rng.standard_normal((k, n), dtype=np.float32)
        bound = np.abs(a).astype(np.float64) @ np.abs(w).astype(np.float64)
        exact = a.astype(np.float64) @ w.astype(np.float64)
        for bands in (n, 64):
            product = np.full((m, n), np.nan, np.float32)  # the kernel must write every element
            for start in range(0, n, bands):
                _call(function, a, w, product, start, min(n, start + bands))
            if not np.all(np.abs(product - exact) <= 2.0**-18 * bound):
                return False
    return True


def _call(function, a, w, out, start: int, stop: int) -> None:
    """out[:, start:stop] = a @ w[:, start:stop]: in the kernel's column-major terms out^T =
    w^T a^T, with w^T an (n, k) matrix of leading dimension n and a^T a (k, m) one of k."""
    m, k = a.shape
    n = w.shape[1]
    offset = start * 4  # float32 bytes
    function(
        stop - start, m, k, w.ctypes.data + offset, n, 1.0, a.ctypes.data, k,
        out.ctypes.data + offset, n,
    )  # fmt: skip


@kernel(fresh=True, exact=False)
def matmul_weight(a, w):
    """a @ w for a 2-D `a` (M, K) and a 2-D constant weight `w` (K, N): OpenBLAS's small-matrix
    kernel where it is usable (see the module docstring), else np.matmul. Any other operands
    (not float32, not C-contiguous, empty) go to np.matmul."""
    function = _kernel()
    if (
        function is None
        or a.dtype != np.float32
        or w.dtype != np.float32
        or a.ndim != 2
        or w.ndim != 2
        or a.shape[1] != w.shape[0]
        or a.size == 0
        or w.size == 0
        or not MIN_ROWS <= a.shape[0] <= MAX_ROWS
        or a.shape[0] * a.shape[1] * w.shape[1] < MIN_MULTIPLY_ADDS
        or not a.flags.c_contiguous
        or not w.flags.c_contiguous
    ):
        return np.matmul(a, w)
    m, k = a.shape
    n = w.shape[1]
    threads, work = _threads.get_num_threads(), m * n * k
    large = threads > 1 and work >= _threads.SMALL_BLAS_WORK
    if large and SPLIT_MULTIPLY_ADDS is None:
        return np.matmul(a, w)  # OpenBLAS's own threads
    out = np.empty((m, n), np.float32)
    if not large or work < SPLIT_MULTIPLY_ADDS or n < 2 * _BAND:
        _call(function, a, w, out, 0, n)
        return out
    step = -(-n // (2 * threads * _BAND)) * _BAND
    _threads.run_parts(
        lambda part: _call(function, a, w, out, part * step, min(n, (part + 1) * step)),
        -(-n // step),
    )
    return out


# float32 holds every integer up to 2**24 exactly: a product of integers whose every partial sum
# stays below that, in whatever order BLAS adds (FMA included), is exact in float32 too.
_FLOAT32_INTEGERS = 2**24


def integer_span(dtype) -> int:
    """The largest |x - zero_point| for x and zero_point of integer type `dtype` (max - min): a
    bound that holds whatever the zero point, which DynamicQuantizeLinear computes per run."""
    info = np.iinfo(dtype)
    return int(info.max) - int(info.min)


def integer_sum_type(bound: int, line_sums: np.ndarray) -> type:
    """float32 when every sum of products of a factor bounded by `bound` with one line of the
    other operand (whose sums of magnitudes are `line_sums`) stays below 2**24, else float64
    (exact below 2**53 for any reduction shorter than 10**11 terms of 8-bit integers). Either way
    every partial sum is an exact integer, so the result's bits do not depend on the type."""
    largest = float(line_sums.max()) if line_sums.size else 0.0
    return np.float32 if bound * largest < _FLOAT32_INTEGERS else np.float64


def shifted_integers(w, zero_point, bound: int, lines: Callable[[np.ndarray], np.ndarray]):
    """w - zero_point as exact integers in the type integer_sum_type picks for products with a
    factor bounded by `bound` (`lines` gives the sums of magnitudes of w's lines). Derived once per
    constant w (runtime_support._constants)."""

    def make():
        shifted = w.astype(np.float64)
        if zero_point is not None:
            shifted -= zero_point
        result = shifted.astype(integer_sum_type(bound, lines(np.abs(shifted))), copy=False)
        result.flags.writeable = False  # shared by every later run when cached
        return result

    return cached((w,), ("shifted integers", bound, lines, value_tag(zero_point)), make)


def wrapped_int32(sums: np.ndarray) -> np.ndarray:
    """Exact integer sums (of shifted_integers' type) as int32, wrapping as integer arithmetic
    does. float32 sums lie below 2**24 (integer_sum_type), so they convert directly: the int64
    route, needed for float64's wider sums, took 121 against 18 us on 184,320 values."""
    if sums.dtype == np.float32:
        return sums.astype(np.int32)
    return sums.astype(np.int64).astype(np.int32)


def _column_sums(magnitudes: np.ndarray) -> np.ndarray:
    return magnitudes.sum(axis=-2)


def matmul_integer(A, B, a_zero_point=None, b_zero_point=None):
    """ONNX MatMulInteger: (A - a_zero_point) @ (B - b_zero_point) as int32. A zero point is a
    scalar, or one per row of A (a_zero_point) or per column of B (b_zero_point).

    The product runs through BLAS on exact integers: in float32 when every partial sum provably
    stays below 2**24 (integer_sum_type: |A - a_zero_point| is bounded by A's type, B's column
    sums of magnitudes are computed), else in float64. A constant B is shifted and converted once.
    A 2-D B multiplies A's rows as one 2-D product (not one per stack of A). The int32 result
    wraps as integer arithmetic does."""
    zero_b = None if b_zero_point is None else np.asarray(b_zero_point, dtype=np.float64)
    b = shifted_integers(B, zero_b, integer_span(A.dtype), _column_sums)
    a = A.astype(b.dtype)
    if a_zero_point is not None:
        zero = np.asarray(a_zero_point, dtype=b.dtype)
        a -= zero.reshape(-1, 1) if zero.ndim == 1 and a.ndim > 1 else zero
    if b.ndim == 2 and a.ndim >= 2:
        # one 2-D product, by matmul_weight's kernel where it applies (float32; it falls back to
        # np.matmul otherwise): sums of integers below 2**24 are exact in any order, so its order
        # is as good as BLAS's (ddddocr's 23 x 1024 by 1024 x 8210 7.8 -> 7.1 ms)
        rows = matmul_weight(a.reshape(-1, a.shape[-1]), b)
        product = rows.reshape(a.shape[:-1] + b.shape[-1:])
    else:
        product = np.matmul(a, b)
    return wrapped_int32(product)
