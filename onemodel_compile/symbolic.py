"""Symbolic dims: a small algebra of sizes the compiler knows by name but not by value.

A dim is an `int` (static), a `str` (a named symbol: a model's `dim_param`, or a name the compiler
gives an unknown input dim or a data-dependent size), an `Expr` (sums, products, floor divisions,
minima and maxima of those), or `None` (unknown). Every operation returns the simplest form: an
int when the result is constant, the bare str for a lone symbol, and an Expr otherwise, so that
equal sizes compare equal however they were computed.

An Expr is a polynomial with integer coefficients over atoms; an atom is a symbol name or an
opaque term (`a // n`, `a % n`, `min(a, b)`, `max(a, b)`) that the algebra cannot open further.
Symbols stand for sizes, so they are never negative: that settles a few comparisons (a symbol is
never -1) and makes floor and truncating division agree.
"""

from __future__ import annotations

from typing import Callable, Union

Monomial = tuple  # sorted atoms, repeated for powers; () is the constant term


class Expr:
    """A sum of integer multiples of monomials (never a constant or a lone symbol)."""

    __slots__ = ("terms", "_key")

    def __init__(self, terms: tuple[tuple[Monomial, int], ...]):
        self.terms = terms
        self._key = repr(terms)

    def __eq__(self, other) -> bool:
        return isinstance(other, Expr) and self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        return text(self)

    __str__ = __repr__


Dim = Union[int, str, Expr, None]


class Atom:
    """An opaque term: `op` applied to its operands (dims or ints)."""

    __slots__ = ("op", "operands", "_key")

    def __init__(self, op: str, operands: tuple):
        self.op, self.operands = op, operands
        self._key = f"{op}{operands!r}"

    def __eq__(self, other) -> bool:
        return isinstance(other, Atom) and self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        return self._key


def _sort_key(atom) -> str:
    return atom if isinstance(atom, str) else "\uffff" + atom._key


def _poly(dim) -> dict:
    if isinstance(dim, bool):
        raise TypeError("a truth value is not a dim")
    if isinstance(dim, int):
        return {(): dim} if dim else {}
    if isinstance(dim, str):
        return {(dim,): 1}
    if isinstance(dim, Expr):
        return dict(dim.terms)
    raise TypeError(f"not a dim: {dim!r}")


def _make(poly: dict) -> Dim:
    terms = tuple(
        sorted(((m, c) for m, c in poly.items() if c), key=lambda t: [_sort_key(a) for a in t[0]])
    )
    if not terms:
        return 0
    if len(terms) == 1:
        monomial, coefficient = terms[0]
        if monomial == ():
            return coefficient
        if coefficient == 1 and len(monomial) == 1 and isinstance(monomial[0], str):
            return monomial[0]
    return Expr(terms)


def known(*dims) -> bool:
    """Whether every dim is known (static or symbolic), not None."""
    return all(d is not None for d in dims)


def add(a: Dim, b: Dim) -> Dim:
    if not known(a, b):
        return None
    poly = _poly(a)
    for monomial, coefficient in _poly(b).items():
        poly[monomial] = poly.get(monomial, 0) + coefficient
    return _make(poly)


def neg(a: Dim) -> Dim:
    return None if a is None else _make({m: -c for m, c in _poly(a).items()})


def sub(a: Dim, b: Dim) -> Dim:
    return add(a, neg(b))


def mul(a: Dim, b: Dim) -> Dim:
    if not known(a, b):
        return None
    poly: dict = {}
    for ma, ca in _poly(a).items():
        for mb, cb in _poly(b).items():
            monomial = tuple(sorted(ma + mb, key=_sort_key))
            poly[monomial] = poly.get(monomial, 0) + ca * cb
    return _make(poly)


def product(dims) -> Dim:
    result: Dim = 1
    for d in dims:
        result = mul(result, d)
    return result


def floordiv(a: Dim, b: Dim) -> Dim:
    """a // b for sizes (a >= 0, b > 0): exact when b divides every term of a."""
    if not known(a, b):
        return None
    if isinstance(a, int) and isinstance(b, int):
        return a // b if b else None
    if b == 1:
        return a
    quotient = exact_quotient(a, b)
    if quotient is not None:
        return quotient
    return _make({(Atom("//", (a, b)),): 1})


def exact_quotient(a: Dim, b: Dim) -> Dim:
    """a / b when b divides a term by term (an int dividing every coefficient, or a monomial
    dividing every monomial), else None."""
    if not known(a, b) or b == 0:
        return None
    pb = _poly(b)
    if len(pb) != 1:
        return 1 if a == b else None
    ((mb, cb),) = pb.items()
    poly = {}
    for ma, ca in _poly(a).items():
        rest = list(ma)
        for atom in mb:
            if atom not in rest:
                return None
            rest.remove(atom)
        if ca % cb:
            return None
        poly[tuple(rest)] = ca // cb
    return _make(poly)


def mod(a: Dim, b: Dim) -> Dim:
    if not known(a, b):
        return None
    if isinstance(a, int) and isinstance(b, int):
        return a % b if b else None
    if exact_quotient(a, b) is not None:
        return 0
    return _make({(Atom("%", (a, b)),): 1})


def minimum(a: Dim, b: Dim) -> Dim:
    return _extremum("min", a, b)


def maximum(a: Dim, b: Dim) -> Dim:
    return _extremum("max", a, b)


def _extremum(op: str, a: Dim, b: Dim) -> Dim:
    if not known(a, b):
        return None
    if isinstance(a, int) and isinstance(b, int):
        return min(a, b) if op == "min" else max(a, b)
    if a == b:
        return a
    difference = sub(a, b)
    if isinstance(difference, int):  # a = b + c: the larger is plain to see
        return (b if difference > 0 else a) if op == "min" else (a if difference > 0 else b)
    if isinstance(a, int) and a <= 0 or isinstance(b, int) and b <= 0:
        small, other = (a, b) if isinstance(a, int) else (b, a)
        return small if op == "min" else other  # a size is never below 0
    first, second = sorted((a, b), key=lambda d: text(d))
    return _make({(Atom(op, (first, second)),): 1})


def nonnegative(a: Dim) -> bool:
    """Whether `a` is known never to be negative (every coefficient of a polynomial in sizes is
    >= 0, and opaque terms of sizes are sizes)."""
    if a is None:
        return False
    return all(c >= 0 for c in _poly(a).values())


def atoms(dim: Dim) -> set[str]:
    """The symbol names `dim` depends on."""
    found: set[str] = set()
    if isinstance(dim, str):
        found.add(dim)
    elif isinstance(dim, Expr):
        for monomial, _ in dim.terms:
            for atom in monomial:
                if isinstance(atom, str):
                    found.add(atom)
                else:
                    for operand in atom.operands:
                        found |= atoms(operand)
    return found


def text(dim: Dim) -> str:
    """A readable form for documentation (`batch*seq + 1`)."""
    return code(dim, lambda name: name)


def code(dim: Dim, symbol: Callable[[str], str]) -> str:
    """Python source computing `dim` from Python ints, `symbol(name)` giving each symbol's
    identifier."""
    if dim is None:
        raise ValueError("an unknown dim has no code")
    if isinstance(dim, int):
        return str(dim)
    if isinstance(dim, str):
        return symbol(dim)
    parts: list[str] = []
    for monomial, coefficient in dim.terms:
        factors = [_atom_code(a, symbol) for a in monomial]
        if coefficient != 1 or not factors:
            factors.insert(
                0, str(abs(coefficient)) if parts or coefficient > 0 else str(coefficient)
            )
        if coefficient < 0 and parts:
            if abs(coefficient) == 1 and len(factors) > 1:
                factors = factors[1:]
            parts.append(" - " + " * ".join(factors))
        else:
            parts.append((" + " if parts else "") + " * ".join(factors))
    return "".join(parts)


def _atom_code(atom, symbol) -> str:
    if isinstance(atom, str):
        return symbol(atom)
    operands = [code(o, symbol) for o in atom.operands]
    if atom.op in ("//", "%"):
        return f"({_grouped(operands[0])} {atom.op} {_grouped(operands[1])})"
    return f"{atom.op}({', '.join(operands)})"


def _grouped(source: str) -> str:
    return source if source.isidentifier() or source.lstrip("-").isdigit() else f"({source})"
