"""What custom derivative rules see with `symbolic_zeros=True`: SymbolicZero stands for a
tangent or cotangent known to be zero (an input not being differentiated, an output nobody
uses), CustomVJPPrimal pairs a custom_vjp fwd argument with whether it is perturbed."""
from __future__ import annotations

import dataclasses
from typing import Any

from numbax._src import tree_util as tu
from numbax._src.core import ShapedArray, get_aval
from numbax._src.interpreters import ad


class SymbolicZero:
    """A zero (co)tangent of type `aval`, passed to custom rules instead of an array of zeros.
    Its shape, dtype, ndim, size come from the aval; it is not an array (jnp functions refuse
    it): test `type(t) is SymbolicZero` and skip the work."""

    def __init__(self, aval: ShapedArray) -> None:
        self.aval = aval

    def __repr__(self) -> str:
        return type(self).__name__

    def __getattr__(self, name: str) -> Any:
        if name == "aval":  # not yet set (copy/unpickle): no recursion through the aval
            raise AttributeError(name)
        try:
            return getattr(self.aval, name)
        except AttributeError:
            raise AttributeError(f"{type(self).__name__} has no attribute {name}") from None

    @staticmethod
    def from_primal_value(val: Any) -> SymbolicZero:
        return SymbolicZero(ad.tangent_aval(get_aval(val)))


def zero_from_primal(val: Any, symbolic_zeros: bool = False) -> Any:
    """The zero tangent of each leaf of `val`: SymbolicZero when `symbolic_zeros`, else an
    array of zeros of the tangent type (float0 for integer and boolean leaves).

    >>> zero_from_primal((1.0, 2.0), symbolic_zeros=True)
    (SymbolicZero, SymbolicZero)
    """
    def zero(x: Any) -> Any:
        aval = ad.tangent_aval(get_aval(x))
        return SymbolicZero(aval) if symbolic_zeros else ad.zeros_like_aval(aval)

    return tu.tree_map(zero, val)


@dataclasses.dataclass
class CustomVJPPrimal:
    """An argument of a custom_vjp fwd rule under `symbolic_zeros=True`: the primal value and
    whether it is perturbed (being differentiated)."""

    value: Any
    perturbed: bool


def custom_vjp_primal_tree_values(tree: Any) -> Any:
    """The values of a tree of CustomVJPPrimal leaves (what a symbolic-zeros fwd rule gets).

    >>> custom_vjp_primal_tree_values((CustomVJPPrimal(1.0, True),))
    (1.0,)
    """
    def value(leaf: Any) -> Any:
        if type(leaf) is not CustomVJPPrimal:
            raise TypeError(f"unexpected leaf type {type(leaf)}")
        return leaf.value

    return tu.tree_map(value, tree, is_leaf=lambda x: type(x) is CustomVJPPrimal)


def to_symbolic(t: Any) -> Any:
    """An internal ad.Zero as the user-facing SymbolicZero (other values unchanged)."""
    return SymbolicZero(t.aval) if type(t) is ad.Zero else t


def from_symbolic(t: Any) -> Any:
    """A rule's SymbolicZero (or None) back as the internal ad.Zero."""
    return ad.Zero(t.aval) if type(t) is SymbolicZero else t
