"""The variants a model compiles to: one object each, holding everything that differs between them.

A stage asks its variant (`variant.exact`, `variant.reuse_buffers`, ...) instead of comparing
names, and a call is printed through the variant's kernel namespace (`function`): the exact
variant calls each function's declared exact twin (runtime_support._kernels). A new variant (a
float64 reference, another array library) is one more `Variant` and, if it needs them, its own
kernels declared as twins; no stage and no operator family changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

import runtime_support
from onemodel_compile.errors import CompileError
from onemodel_compile.optimize import optimize
from runtime_support._kernels import KernelProperties, properties

NAMESPACES = {"np": np, "rt": runtime_support}


@dataclass(frozen=True)
class Variant:
    name: str
    # Bit-identical results everywhere: operators without an exact implementation are refused,
    # calls go to exact twins, and no rewrite changes the order of operations.
    exact: bool
    # Rewrites of the resolved graph (optimize.py) run in this order.
    passes: tuple[Callable, ...]
    # `out=` into an operand that dies at its node, saving an allocation (emit.py).
    reuse_buffers: bool
    # Single-element constants as module-level arrays built once at import: a name lookup per
    # call instead of building the array (emit.ModuleConstants).
    hoist_scalars: bool

    def function(self, name: str) -> str:
        """The function generated code calls for `name` in this variant."""
        if not self.exact:
            return name
        kernel = kernel_properties(name)
        if kernel.exact_twin is not None:
            return kernel.exact_twin
        if kernel.exact is False:
            raise CompileError(
                f"internal error: the exact variant calls {name}, which is not exact"
            )
        return name

    def __str__(self) -> str:
        return self.name


def kernel_properties(name: str) -> KernelProperties:
    return properties(name, NAMESPACES)


# The exact variant computes every node as written: a rewrite rounds differently from the nodes
# it replaces.
FAST = Variant("fast", exact=False, passes=(optimize,), reuse_buffers=True, hoist_scalars=True)
EXACT = Variant("exact", exact=True, passes=(), reuse_buffers=False, hoist_scalars=False)
VARIANTS = {variant.name: variant for variant in (FAST, EXACT)}


def variant_named(name: "str | Variant") -> Variant:
    """The variant called `name` (a Variant passes through); an unknown name is a CompileError."""
    if isinstance(name, Variant):
        return name
    if name not in VARIANTS:
        raise CompileError(f"unknown variant {name!r}; choose one of {', '.join(VARIANTS)}")
    return VARIANTS[name]
