"""What the compiler knows about each function generated code calls, declared once: beside a kernel
with `@kernel(...)`, or in `NUMPY` for numpy's functions.

- `out`: it takes `out=` and may write its result into one of its own operands, so the fast
  variant can reuse a buffer that dies at the node instead of allocating;
- `fresh`: it returns a new array (or a tuple of them) that shares memory with none of its operands
  and that nothing else holds, a buffer a later `out=` may reuse (tests/test_generated_module.py
  checks this for the kernels);
- `exact`: its bits are the same on every machine (True), or they are not (False; the exact
  variant never calls it); None when only the emitter's declaration says;
- `exact_twin`: the function the exact variant calls in its place (same arguments, exact bits).

The compiler reads these through `properties`; nothing here is used at run time.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KernelProperties:
    out: bool = False
    fresh: bool = False
    exact: bool | None = None
    exact_twin: str | None = None  # its name in generated code: "rt.exact_exp"


UNDECLARED = KernelProperties()


def kernel(*, out: bool = False, fresh: bool = False, exact: bool | None = None, exact_twin=None):
    """Declare a runtime_support kernel's properties (see the module docstring)."""

    def declare(function):
        function.__kernel__ = KernelProperties(out, fresh, exact, exact_twin)
        return function

    return declare


def _ufunc(exact: bool = True, exact_twin: str | None = None) -> KernelProperties:
    return KernelProperties(out=True, fresh=True, exact=exact, exact_twin=exact_twin)


# numpy's functions, by their name in generated code. Transcendental ufuncs differ across SIMD
# levels and numpy versions: not exact; their twins are the library's own polynomials.
NUMPY = {
    **{
        name: _ufunc()
        for name in (
            "add", "subtract", "multiply", "divide", "maximum", "minimum", "negative", "abs",
            "absolute", "sqrt", "reciprocal",
        )
    },
    "exp": _ufunc(False, "rt.exact_exp"),
    "log": _ufunc(False, "rt.exact_log"),
    "tanh": _ufunc(False, "rt.exact_tanh"),
    "sinh": KernelProperties(exact=False, exact_twin="rt.exact_sinh"),
    "cosh": KernelProperties(exact=False, exact_twin="rt.exact_cosh"),
    "arcsinh": KernelProperties(exact=False, exact_twin="rt.exact_asinh"),
    "arccosh": KernelProperties(exact=False, exact_twin="rt.exact_acosh"),
    "arctanh": KernelProperties(exact=False, exact_twin="rt.exact_atanh"),
    "sin": KernelProperties(exact=False, exact_twin="rt.exact_sin"),
    "cos": KernelProperties(exact=False, exact_twin="rt.exact_cos"),
    "tan": KernelProperties(exact=False, exact_twin="rt.exact_tan"),
    "arcsin": KernelProperties(exact=False, exact_twin="rt.exact_asin"),
    "arccos": KernelProperties(exact=False, exact_twin="rt.exact_acos"),
    "arctan": KernelProperties(exact=False, exact_twin="rt.exact_atan"),
    "logaddexp": KernelProperties(exact=False),
    # exact on integers, not on floats: the emitter's exactness rule decides (Pow)
    "power": KernelProperties(),
    "matmul": KernelProperties(fresh=True),
}  # fmt: skip


def properties(function: str, namespaces: dict) -> KernelProperties:
    """The properties of `function`, a name as generated code writes it (`np.add`, `rt.softmax`),
    looked up in `namespaces` (prefix -> module: {"np": numpy, "rt": runtime_support})."""
    prefix, _, name = function.partition(".")
    if prefix == "np":
        return NUMPY.get(name, UNDECLARED)
    module = namespaces.get(prefix)
    found = getattr(module, name, None) if module is not None and name else None
    return getattr(found, "__kernel__", UNDECLARED)
