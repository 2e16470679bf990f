"""Matrix products. BLAS sums in an order that depends on the build and the CPU: not exact."""

from __future__ import annotations

from onemodel_compile.ops.code import scalar
from onemodel_compile.ops.node import NodeView
from onemodel_compile.ops.registry import emitter


@emitter("MatMul", since=1, exact=False)
def matmul(view: NodeView) -> str:
    return f"np.matmul({view.inputs[0]}, {view.inputs[1]})"


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
