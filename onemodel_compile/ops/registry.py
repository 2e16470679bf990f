"""The operator registry: one emitter per op type and opset range, with an optional variant override.

An emitter declares, beside its emit rule:
- its exactness: True (bit-identical everywhere), False (refused by the exact variant), or a
  function of the node returning a refusal reason or None;
- optionally a `fold` rule that computes outputs from input types alone (Shape, Size), and
  whether it may run at compile time on constant inputs (`foldable`).
Shape rules live in shapes.py (the compiler's own inference), not with the emitters; no input is
required to be a compile-time constant: what is not known is computed at run time.
Lookup takes the registration whose opset range holds the model's opset, preferring one made for the
variant; anything else is an error naming the operator, the opset and the variant.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Union

from onemodel_compile.errors import UnsupportedError

if TYPE_CHECKING:
    from onemodel_compile.ops.node import NodeView

Exactness = Union[bool, Callable[["NodeView"], Union[str, None]]]


@dataclass(frozen=True)
class Emitter:
    op_type: str
    domain: str
    since: int
    until: int | None  # inclusive; None: still current
    variant: str | None  # a variant's name (onemodel_compile.variants); None: every variant
    exact: Exactness
    emit: Callable
    fold: Callable | None = None
    foldable: bool = True  # may run at compile time when every input is constant

    def covers(self, opset: int) -> bool:
        return self.since <= opset and (self.until is None or opset <= self.until)

    def refusal(self, view) -> str | None:
        """Why this emitter cannot give exact results for `view` (None if it can)."""
        if self.exact is True:
            return None
        if self.exact is False:
            return "has no exact implementation"
        return self.exact(view)


_REGISTRY: dict[tuple[str, str], list[Emitter]] = {}


def emitter(
    *op_types: str,
    since: int = 1,
    until: int | None = None,
    domain: str = "",
    variant: str | None = None,
    exact: Exactness = False,
    fold: Callable | None = None,
    foldable: bool = True,
):
    """Register the decorated emit rule for each of `op_types` over opsets since..until."""

    def register(emit: Callable) -> Callable:
        for op_type in op_types:
            entry = Emitter(op_type, domain, since, until, variant, exact, emit, fold, foldable)
            for other in _REGISTRY.setdefault((domain, op_type), []):
                if other.variant == variant and (other.covers(since) or entry.covers(other.since)):
                    raise ValueError(f"{op_type}: overlapping registrations at opset {since}")
            _REGISTRY[(domain, op_type)].append(entry)
        return emit

    return register


def lookup(op_type: str, domain: str, opset: int, variant, label: str) -> Emitter:
    variant = str(variant)  # a Variant prints as its name
    entries = _REGISTRY.get((domain, op_type))
    where = f"{op_type} (domain {domain or 'ai.onnx'!r})"
    if not entries:
        raise UnsupportedError(f"{label}: operator {where} is not supported")
    matches = [e for e in entries if e.covers(opset) and e.variant in (None, variant)]
    if not matches:
        raise UnsupportedError(
            f"{label}: operator {where} is not supported at opset {opset} in the {variant} variant"
        )
    return min(matches, key=lambda e: e.variant is None)  # a variant override wins


def registered() -> list[Emitter]:
    """Every registration, in a stable order (for coverage tables and tests)."""
    return [e for key in sorted(_REGISTRY) for e in _REGISTRY[key]]
