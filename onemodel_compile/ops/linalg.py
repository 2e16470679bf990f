"""Matrix products, Einsum, Det, MatMulInteger. BLAS sums in an order that depends on the build
and the CPU: float products are not exact; integer ones are (integer arithmetic, or float64 sums of
integers that stay below 2**53). The exact variant's float MatMul, Gemm and Einsum run through
runtime_support.exact (an error-free splitting into integer-valued float64 slices whose BLAS
products are exact), and its Det through a fixed-order elimination; see docs/exact-kernels.md."""

from __future__ import annotations

import numpy as np

from onemodel_compile.ops import pyir
from onemodel_compile.ops.common import exact_for_integers, is_float
from onemodel_compile.ops.node import NodeView, Operand
from onemodel_compile.ops.pyir import attr, binop, call, index, method, scalar
from onemodel_compile.ops.registry import emitter
from runtime_support.linalg import MAX_ROWS, MIN_MULTIPLY_ADDS, MIN_ROWS


def _shape(view: NodeView, shape) -> pyir.Expr | None:
    """`shape` as a tuple computed at run time (ints and the symbols the module read off .shape),
    or None when a dim is not known to the module."""
    dims = [view.dim(d) for d in shape]
    return None if any(d is None for d in dims) else pyir.tuple_of(dims)


@emitter("MatMul", since=1, exact=False)
def matmul(view: NodeView) -> pyir.Expr:
    """A stack of rows times one matrix, (..., M, K) @ (K, N), is one 2-D product of
    (prod(...) * M, K) rows: numpy would run one BLAS call per matrix of the stack (a third
    slower for BERT's (8, 128, 256) activations, half again as long for (4, 14, 384) @ (384, 1536)
    at one thread). The result's shape is the output's dims as the module knows them (Python ints
    and the symbols it read off .shape), else A's leading dims read at run time."""
    A, B = view.inputs[:2]
    function = "rt.matmul_weight" if _by_weight(A, B, _rows(A)) else "np.matmul"
    product = call(function, A, B)
    k = _inner(A, B)
    if A.rank is not None and A.rank >= 3 and B.rank == 2 and k:
        shape = _shape(view, view.out.shape) if view.out.rank == A.rank else None
        if shape is None:
            n = B.shape[1] if isinstance(B.shape[1], int) else index(attr(B, "shape"), 1)
            leading = index(attr(A, "shape"), pyir.Slice(None, pyir.Lit(-1)))
            shape = binop("+", leading, pyir.tuple_of([n]))
        flat = call(function, method(A, "reshape", -1, k), B)
        return _in_type(method(flat, "reshape", shape), A.dtype)
    return _in_type(product, A.dtype)


def _by_weight(A: Operand, B: Operand, rows=None) -> bool:
    """float32 activations of rank 2 or more times a constant float32 matrix (a Linear layer's
    weight) that rt.matmul_weight's own kernel may take (runtime_support/linalg.py: it skips
    OpenBLAS's per-call copy of the weight): at least MIN_MULTIPLY_ADDS with MAX_ROWS rows, and
    `rows` (the product's row count, if the module knows it) within its range. The others stay
    an inline `@`: the kernel's checks cost 1-2 us a call, a tiny MLP's whole layer."""
    if not (
        B.const is not None
        and B.const.ndim == 2
        and B.const.dtype == np.float32
        and A.dtype == np.float32
        and A.rank is not None
        and A.rank >= 2
    ):
        return False
    inner, columns = B.const.shape
    if isinstance(rows, int):
        return MIN_ROWS <= rows <= MAX_ROWS and rows * inner * columns >= MIN_MULTIPLY_ADDS
    return MAX_ROWS * inner * columns >= MIN_MULTIPLY_ADDS


def _rows(A: Operand) -> int | None:
    """The row count of A's 2-D product (its leading dims joined), if the compiler knows it."""
    if A.rank is None or any(not isinstance(d, int) for d in A.shape[:-1]):
        return None
    return int(np.prod(A.shape[:-1], dtype=np.int64))


def _in_type(product: pyir.Expr, dtype) -> pyir.Expr:
    """The product in the operands' type: numpy multiplies bfloat16 in float32."""
    if dtype is not None and dtype.name == "bfloat16":
        return method(product, "astype", dtype)
    return product


def _inner(A, B) -> int | None:
    """The contracted dim of A @ B as an int, when the compiler knows it (from either side)."""
    for dim in (A.shape[-1] if A.rank else None, B.shape[0] if B.rank == 2 else None):
        if isinstance(dim, int):
            return dim
    return None


@emitter("Gemm", since=7, exact=False)
def gemm(view: NodeView) -> pyir.Expr:
    A, B, C = view.inputs[0], view.inputs[1], view.input(2)
    a = attr(A, "T") if view.attr("transA") else A
    b = attr(B, "T") if view.attr("transB") else B
    alpha, beta = float(view.attr("alpha")), float(view.attr("beta"))
    product: pyir.Expr
    if not view.attr("transA") and not view.attr("transB") and _by_weight(A, B, _rows(A)):
        product = call("rt.matmul_weight", A, B)
    else:
        product = binop("@", a, b)
    if alpha != 1.0:
        product = binop("*", scalar(alpha, A.dtype), product)
    if C is None or beta == 0.0:
        return product
    addend = C if beta == 1.0 else binop("*", scalar(beta, A.dtype), C)
    return binop("+", product, addend)


@emitter("MatMul", since=1, variant="exact", exact=True)
def matmul_exact(view: NodeView) -> pyir.Expr:
    """Floats through rt.exact_matmul; integers are integer arithmetic already. (Not a twin of
    the fast rule's np.matmul: that one is reshaped and cast around.) An operand of unknown type
    (a Scan body's value: LinearAttention's function body) goes to rt.exact_matmul too, which
    leaves integers to np.matmul: the fast rule's BLAS float product would not be exact."""
    A, B = view.inputs[0], view.inputs[1]
    if A.dtype is None or is_float(A.dtype):
        return call("rt.exact_matmul", A, B)
    return matmul(view)


def _float32(value) -> float:
    """A float attribute as the shortest decimal that rounds to the same float32."""
    return float(str(np.float32(value)))


@emitter("Gemm", since=7, variant="exact", exact=True)
def gemm_exact(view: NodeView) -> pyir.Expr:
    """Floats through rt.exact_gemm (one rounding of alpha * A'B' + beta * C); integers as in the
    fast variant. An operand of unknown type (a Scan body's) goes to rt.exact_gemm, which takes
    integers the fast way: the fast rule's BLAS float product would not be exact."""
    A, B, C = view.inputs[0], view.inputs[1], view.input(2)
    if A.dtype is not None and not is_float(A.dtype):
        return gemm(view)
    operands = [A, B] + ([C] if C is not None else [])
    keywords = {
        name: _float32(view.attr(name)) for name in ("alpha", "beta") if view.attr(name) != 1.0
    }
    keywords.update({name: 1 for name in ("transA", "transB") if view.attr(name)})
    return call("rt.exact_gemm", *operands, **keywords)


def _half(dtype) -> bool:
    return is_float(dtype) and np.dtype(dtype).itemsize == 2


_integers_only = exact_for_integers("BLAS sums in a machine-dependent order")


@emitter("Einsum", since=12, exact=_integers_only)
def einsum(view: NodeView) -> pyir.Expr:
    """numpy's einsum with its contraction-order optimizer (BLAS where it can); float16 and
    bfloat16 operands are computed in float32 and rounded back."""
    equation = view.attr("equation").replace(" ", "")
    dtype = view.inputs[0].dtype
    operands: list[Operand | pyir.Expr] = list(view.inputs)
    if _half(dtype):
        operands = [method(x, "astype", np.float32) for x in operands]
    result = call("np.einsum", equation, *operands, optimize=True)
    return method(result, "astype", dtype) if _half(dtype) else result


@emitter("Einsum", since=12, variant="exact", exact=True)
def einsum_exact(view: NodeView) -> pyir.Expr:
    """Floats through rt.exact_einsum (operands folded in from the left, each contraction an
    exact matrix product rounded to the type); integers as in the fast variant, also when the type
    is unknown at compile time (rt.exact_einsum takes them so)."""
    dtype = view.inputs[0].dtype
    if dtype is not None and not is_float(dtype):
        return einsum(view)
    return call("rt.exact_einsum", view.attr("equation").replace(" ", ""), *view.inputs)


@emitter("Det", since=11, exact=False)
def det(view: NodeView) -> pyir.Expr:
    X = view.inputs[0]
    if _half(X.dtype):
        return method(call("np.linalg.det", method(X, "astype", np.float32)), "astype", X.dtype)
    return call("np.linalg.det", X)


@emitter("Det", since=11, variant="exact", exact=True)
def det_exact(view: NodeView) -> pyir.Expr:
    """Gaussian elimination with partial pivoting in float64, in a fixed order."""
    return call("rt.exact_det", view.inputs[0])


@emitter("MatMulInteger", since=10, exact=True)
def matmul_integer(view: NodeView) -> pyir.Expr:
    """Exact: the kernel's float64 products and sums stay integers below 2**53."""
    zero_points = {
        name: view.input(position)
        for position, name in ((2, "a_zero_point"), (3, "b_zero_point"))
        if view.input(position) is not None
    }
    return call("rt.matmul_integer", view.inputs[0], view.inputs[1], **zero_points)
