"""Implicitly differentiated solves: custom_root (f(x) = 0 given a solver) here, and
custom_linear_solve (x = A^-1 b given a matvec and a solver; its primitive, linear_solve_p,
lives in linear_solve.py). Their derivatives come from the equation, not from the solver's
iterations, so iterative solvers (while loops) differentiate too.

The functions the user passes close over arrays (f's parameters); they are traced to jaxprs
and those arrays become explicit operands of a custom_jvp function, so derivatives reach them.
Unlike JAX, there is no custom_root primitive (JAX has none either: it binds
custom_linear_solve for the tangent solve when the user's tangent_solve does)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from numbax._src import core
from numbax._src import tree_util as tu
from numbax._src.core import get_aval
from numbax._src.custom_derivatives import custom_jvp, stop_gradient
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError
from numbax._src.interpreters import ad
from numbax._src.lax import elementwise as ew
from numbax._src.lax.control_flow import common


class _Converted:
    """fun(x) for pytrees x like `example`, as a jaxpr of (consts..., leaves of x)."""

    def __init__(self, api: str, what: str, fun: Callable, example: Any) -> None:
        leaves, args_tree = tu.tree_flatten((example,))
        self.tree = tu.tree_structure(example)
        avals = [common.abstractify(x) for x in leaves]
        self.jaxpr, self.consts, self.out_tree = common.trace_subjaxpr(fun, args_tree, avals)
        if self.out_tree != self.tree:
            raise NumbaxTypeError(
                f"{api}: {what} must return the structure of its input, {self.tree}; got "
                f"{self.out_tree}.")

    def bind(self, consts: Any) -> Callable:
        """The function with its closed-over values replaced by `consts`."""
        def fun(x):
            outs = core.eval_jaxpr(self.jaxpr.jaxpr, self.jaxpr.consts, *consts,
                                   *tu.tree_leaves(x))
            return tu.tree_unflatten(self.tree, outs)
        return fun


def _tangents_of(consts: list, tangents: list) -> list:
    """Tangents for ad.jvp_flat: symbolic zeros for non-float values and zero tangents."""
    out = []
    for c, t in zip(consts, tangents, strict=True):
        float_c = kind_of(get_aval(c).dtype) in "fc"
        out.append(t if float_c and get_aval(t).dtype == get_aval(c).dtype
                   else ad.Zero.from_primal_value(c))
    return out


def _jvp_in_consts(converted: _Converted, consts: list, consts_dot: list, x: Any) -> Any:
    """d/dt fun_{consts + t * consts_dot}(x) at t = 0 (the derivative through the closure)."""
    leaves = tu.tree_leaves(x)
    _, outs_dot = ad.jvp_flat(
        lambda *cs: core.eval_jaxpr(converted.jaxpr.jaxpr, converted.jaxpr.consts, *cs,
                                    *leaves),
        list(consts), _tangents_of(consts, list(consts_dot)))
    return tu.tree_unflatten(converted.tree, [ad.instantiate_zeros(t) for t in outs_dot])


def _linear_map(converted: _Converted, consts: list, x: Any) -> Callable:
    """v -> d/dt fun(x + t v): the derivative of fun at x as a function."""
    leaves = tu.tree_leaves(x)

    def apply(v):
        _, outs_dot = ad.jvp_flat(
            lambda *xs: core.eval_jaxpr(converted.jaxpr.jaxpr, converted.jaxpr.consts,
                                        *consts, *xs),
            leaves, tu.tree_leaves(v))
        return tu.tree_unflatten(converted.tree, [ad.instantiate_zeros(t) for t in outs_dot])

    return apply


def _neg(a: Any) -> Any:
    return tu.tree_map(ew.neg, a)


def _check_solution(api: str, tree: Any, x: Any) -> None:
    if tu.tree_structure(x) != tree:
        raise NumbaxTypeError(
            f"{api}: solve returned the structure {tu.tree_structure(x)}, expected that of the "
            f"right-hand side, {tree}.")


# ----------------------------------------------------------------------------- custom_root


def custom_root(f: Callable, initial_guess: Any,
                solve: Callable[[Callable, Any], Any],
                tangent_solve: Callable[[Callable, Any], Any], has_aux: bool = False) -> Any:
    """A root of f found by `solve(f, initial_guess)`, differentiated implicitly: at the
    root x*, dx* = -tangent_solve(g, df) with g the derivative of f in x at x* and df the
    change of f through what it closes over (the implicit function theorem).

    Args:
      f: the function whose root is sought (pytree in, same structure out).
      initial_guess: the starting point (gets no derivative: the root does not depend on it).
      solve: solve(f, initial_guess) -> root (and aux with has_aux).
      tangent_solve: tangent_solve(g, y) -> x with g(x) = y, for a linear g; reverse mode
        needs it to be transposable (e.g. a custom_linear_solve).
      has_aux: whether solve also returns auxiliary data (given without derivatives).

    Returns:
      The root (and the auxiliary data).

    >>> import numbax.numpy as jnp
    >>> newton = lambda f, x: x - f(x) / 4.0  # one Newton step from 2 for x**2 - 4
    >>> float(custom_root(lambda x: x * x - 4.0, 2.0, newton, lambda g, y: y / g(1.0)))
    2.0
    """
    api = "lax.custom_root"
    converted = _Converted(api, "f", f, initial_guess)

    def run_solve(consts, guess):
        out = solve(converted.bind(consts), guess)
        root, aux = out if has_aux else (out, None)
        _check_solution(api, converted.tree, root)
        return root, aux

    @custom_jvp
    def root_of(consts, guess):
        return run_solve(consts, guess)[0]

    @root_of.defjvp
    def root_jvp(primals, tangents):
        consts, guess = primals
        consts_dot, _ = tangents
        x = root_of(consts, guess)
        change = _jvp_in_consts(converted, list(consts), list(consts_dot), x)
        x_dot = tangent_solve(_linear_map(converted, list(consts), x), _neg(change))
        _check_solution(f"{api} (tangent_solve)", converted.tree, x_dot)
        return x, x_dot

    consts = tuple(converted.consts)
    root = root_of(consts, initial_guess)
    if not has_aux:
        return root
    _, aux = run_solve(tuple(stop_gradient(c) for c in consts), stop_gradient(initial_guess))
    return root, tu.tree_map(stop_gradient, aux)


# custom_linear_solve is public from here too (numbax.lax and scipy.sparse.linalg import it)
from numbax._src.lax.control_flow.linear_solve import custom_linear_solve  # noqa: E402, F401
