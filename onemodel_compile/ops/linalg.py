"""Matrix products, Einsum, Det, MatMulInteger. BLAS sums in an order that depends on the build
and the CPU: float products are not exact; integer ones are (integer arithmetic, or float64 sums of
integers that stay below 2**53). The exact variant's float MatMul, Gemm and Einsum run through
runtime_support.exact (an error-free splitting into integer-valued float64 slices whose BLAS
products are exact), and its Det through a fixed-order elimination; see docs/exact-kernels.md."""

from __future__ import annotations

import numpy as np

from onemodel_compile.ops.code import dtype_expr, element, py, scalar
from onemodel_compile.ops.common import exact_for_integers, is_float
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.registry import emitter


@emitter("MatMul", since=1, exact=False)
def matmul(view: NodeView) -> str:
    """A stack of rows times one matrix, (..., M, K) @ (K, N), is one 2-D product of
    (prod(...) * M, K) rows: numpy would run one BLAS call per matrix of the stack (a third
    slower for BERT's (8, 128, 256) activations, half again as long for (4, 14, 384) @ (384, 1536)
    at one thread). The result's shape is the output's dims as the module knows them (Python ints
    and the symbols it read off .shape), else A's leading dims read at run time."""
    A, B = view.inputs[:2]
    product = f"np.matmul({A}, {B})"
    k = _inner(A, B)
    if A.rank is not None and A.rank >= 3 and B.rank == 2 and k:
        shape = view.shape_code(view.out.shape) if view.out.rank == A.rank else None
        if shape is None:
            n = B.shape[1] if isinstance(B.shape[1], int) else f"{B}.shape[1]"
            shape = f"{A}.shape[:-1] + ({n},)"
        product = f"np.matmul({A}.reshape(-1, {k}), {B}).reshape({shape})"
    if A.dtype is not None and A.dtype.name == "bfloat16":  # numpy multiplies bfloat16 in float32
        return f"{product}.astype({dtype_expr(A.dtype)})"
    return product


def _inner(A, B) -> int | None:
    """The contracted dim of A @ B as an int, when the compiler knows it (from either side)."""
    for dim in (A.shape[-1] if A.rank else None, B.shape[0] if B.rank == 2 else None):
        if isinstance(dim, int):
            return dim
    return None


@emitter("Gemm", since=7, exact=False)
def gemm(view: NodeView) -> str:
    A, B, C = view.inputs[0], view.inputs[1], view.input(2)
    a = f"{A}.T" if view.attr("transA") else str(A)
    b = f"{B}.T" if view.attr("transB") else str(B)
    alpha, beta = float(view.attr("alpha")), float(view.attr("beta"))
    product = f"({a} @ {b})"
    if alpha != 1.0:
        product = f"{scalar(alpha, A.dtype)} * {product}"
    if C is None or beta == 0.0:
        return product
    addend = str(C) if beta == 1.0 else f"{scalar(beta, A.dtype)} * {C}"
    return f"{product} + {addend}"


@emitter("MatMul", since=1, variant="exact", exact=True)
def matmul_exact(view: NodeView) -> str:
    """Floats through rt.exact_matmul; integers are integer arithmetic already."""
    A, B = view.inputs[0], view.inputs[1]
    if is_float(A.dtype):
        return f"rt.exact_matmul({A}, {B})"
    return matmul(view)


@emitter("Gemm", since=7, variant="exact", exact=True)
def gemm_exact(view: NodeView) -> str:
    """Floats through rt.exact_gemm (one rounding of alpha * A'B' + beta * C); integers as in the
    fast variant."""
    A, B, C = view.inputs[0], view.inputs[1], view.input(2)
    if not is_float(A.dtype):
        return gemm(view)
    operands = [str(A), str(B)] + ([str(C)] if C is not None else [])
    keywords = [
        f"{name}={element(view.attr(name), np.float32)}"
        for name in ("alpha", "beta")
        if view.attr(name) != 1.0
    ] + [f"{name}=1" for name in ("transA", "transB") if view.attr(name)]
    return f"rt.exact_gemm({', '.join(operands + keywords)})"


def _half(dtype) -> bool:
    return is_float(dtype) and np.dtype(dtype).itemsize == 2


_integers_only = exact_for_integers("BLAS sums in a machine-dependent order")


@emitter("Einsum", since=12, exact=_integers_only)
def einsum(view: NodeView) -> str:
    """numpy's einsum with its contraction-order optimizer (BLAS where it can); float16 and
    bfloat16 operands are computed in float32 and rounded back."""
    equation = view.attr("equation").replace(" ", "")
    dtype = view.inputs[0].dtype
    operands = [str(x) for x in view.inputs]
    if _half(dtype):
        operands = [f"{x}.astype(np.float32)" for x in operands]
    call = f"np.einsum({py(equation)}, {', '.join(operands)}, optimize=True)"
    return f"{call}.astype({dtype_expr(dtype)})" if _half(dtype) else call


@emitter("Einsum", since=12, variant="exact", exact=True)
def einsum_exact(view: NodeView) -> str:
    """Floats through rt.exact_einsum (operands folded in from the left, each contraction an
    exact matrix product rounded to the type); integers as in the fast variant."""
    if not is_float(view.inputs[0].dtype):
        return einsum(view)
    operands = ", ".join(str(x) for x in view.inputs)
    return f"rt.exact_einsum({py(view.attr('equation').replace(' ', ''))}, {operands})"


@emitter("Det", since=11, exact=False)
def det(view: NodeView) -> str:
    X = view.inputs[0]
    if _half(X.dtype):
        return f"np.linalg.det({X}.astype(np.float32)).astype({dtype_expr(X.dtype)})"
    return f"np.linalg.det({X})"


@emitter("Det", since=11, variant="exact", exact=True)
def det_exact(view: NodeView) -> str:
    """Gaussian elimination with partial pivoting in float64, in a fixed order."""
    return f"rt.exact_det({view.inputs[0]})"


@emitter("MatMulInteger", since=10, exact=True)
def matmul_integer(view: NodeView) -> str:
    """Exact: the kernel's float64 products and sums stay integers below 2**53."""
    args = [str(view.inputs[0]), str(view.inputs[1])]
    for index, name in ((2, "a_zero_point"), (3, "b_zero_point")):
        if view.input(index) is not None:
            args.append(f"{name}={view.input(index)}")
    return f"rt.matmul_integer({', '.join(args)})"
