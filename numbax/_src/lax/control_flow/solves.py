"""Implicitly differentiated solves: custom_linear_solve (x = A^-1 b given a matvec and a
solver) and custom_root (f(x) = 0 given a solver). Their derivatives come from the equation,
not from the solver's iterations, so iterative solvers (while loops) differentiate too.

The functions the user passes close over arrays (the matrix, f's parameters); they are traced
to jaxprs and those arrays become explicit operands of custom_jvp/custom_vjp functions, so
derivatives reach them. Unlike JAX, there is no linear_solve_p equation: the solve runs as
the user's solver, wrapped in numbax's custom_jvp_call/custom_vjp_call."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from numbax._src import core
from numbax._src import tree_util as tu
from numbax._src.core import get_aval
from numbax._src.custom_derivatives import custom_jvp, custom_vjp, stop_gradient
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError
from numbax._src.interpreters import ad
from numbax._src.interpreters import partial_eval as pe
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


def _sub(a: Any, b: Any) -> Any:
    return tu.tree_map(ew.sub, a, b)


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


# ----------------------------------------------------------------------------- custom_linear_solve


def custom_linear_solve(matvec: Callable, b: Any,
                        solve: Callable[[Callable, Any], Any],
                        transpose_solve: Callable[[Callable, Any], Any] | None = None,
                        symmetric: bool = False, has_aux: bool = False) -> Any:
    """x = solve(matvec, b) with A x = b for the linear map A = matvec, differentiated
    through the equation: dx = A^-1 (db - dA x) in forward mode; reverse mode solves with
    the transpose (transpose_solve(vecmat, ct), or solve itself when symmetric).

    Args:
      matvec: the linear map x -> A x (pytree in, same structure out).
      b: the right-hand side.
      solve: solve(matvec, b) -> x (and aux with has_aux).
      transpose_solve: transpose_solve(vecmat, b) -> x with A^T x = b; needed for reverse
        mode unless symmetric.
      symmetric: A is symmetric, so solve also solves with A^T.
      has_aux: whether solve also returns auxiliary data (given without derivatives).

    Returns:
      The solution (and the auxiliary data).

    >>> a = np.array([[2.0, 1.0], [1.0, 3.0]])
    >>> x = custom_linear_solve(lambda v: a @ v, np.array([3.0, 5.0]),
    ...                         lambda mv, r: np.linalg.solve(a, r), symmetric=True)
    >>> x
    Array([0.8, 1.4], dtype=float64)
    """
    api = "lax.custom_linear_solve"
    converted = _Converted(api, "matvec", matvec, b)
    tree = converted.tree
    if transpose_solve is None and symmetric:
        transpose_solve = solve

    def run_solve(consts, rhs):
        out = solve(converted.bind(consts), rhs)
        x, aux = out if has_aux else (out, None)
        _check_solution(api, tree, x)
        return x, aux

    @custom_vjp
    def solve_linear(consts, rhs):
        """A^-1 rhs with a reverse rule by the transposed solve (the jvp's tangent path)."""
        return run_solve(consts, rhs)[0]

    def solve_linear_fwd(consts, rhs):
        x = solve_linear(consts, rhs)
        return x, (consts, x)

    def solve_linear_bwd(res, ct):
        consts, x = res
        if transpose_solve is None:
            raise NumbaxTypeError(
                f"{api}: transpose_solve is required for reverse-mode differentiation (or "
                "pass symmetric=True when the matrix is symmetric).")
        mv = converted.bind(consts)
        zeros = tu.tree_map(lambda v: ad.zeros_like_aval(get_aval(v)), x)
        vecmat = _vjp_of_linear(mv, zeros)
        ct_rhs = transpose_solve(vecmat, ct)
        _check_solution(f"{api} (transpose_solve)", tree, ct_rhs)
        ct_consts = _consts_cotangent(converted, consts, x, ct_rhs)
        return ct_consts, ct_rhs

    solve_linear.defvjp(solve_linear_fwd, solve_linear_bwd)

    @custom_jvp
    def solve_with_rules(consts, rhs):
        return run_solve(consts, rhs)[0]

    def tangent_solve(consts, rhs):
        """A^-1 rhs for a tangent rhs. Staged for reverse mode (linearize), it goes through
        solve_linear's rules, so the linear jaxpr transposes by transpose_solve; evaluated
        in forward mode, it is the user's solve."""
        leaves = tu.tree_leaves(rhs)
        if not any(isinstance(t, pe.PartialEvalTracer) and not t.pval.is_known for t in leaves):
            return run_solve(consts, rhs)[0]
        zeros = [ad.zeros_like_aval(get_aval(t)) for t in leaves]
        _, outs = ad.jvp_flat(
            lambda *r: tu.tree_leaves(solve_linear(consts, tu.tree_unflatten(tree, r))),
            zeros, leaves)
        return tu.tree_unflatten(tree, [ad.instantiate_zeros(t) for t in outs])

    @solve_with_rules.defjvp
    def solve_jvp(primals, tangents):
        consts, rhs = primals
        consts_dot, rhs_dot = tangents
        x = solve_with_rules(consts, rhs)
        change = _jvp_in_consts(converted, list(consts), list(consts_dot), x)
        return x, tangent_solve(consts, _sub(rhs_dot, change))

    consts = tuple(converted.consts)
    x = solve_with_rules(consts, b)
    if not has_aux:
        return x
    _, aux = run_solve(tuple(stop_gradient(c) for c in consts), tu.tree_map(stop_gradient, b))
    return x, tu.tree_map(stop_gradient, aux)


def _vjp_of_linear(fun: Callable, point: Any) -> Callable:
    """The transpose of the linear fun, as a function of the cotangent."""
    leaves, tree = tu.tree_flatten(point)
    _, f_vjp = ad.vjp_flat(lambda *xs: tu.tree_leaves(fun(tu.tree_unflatten(tree, xs))),
                           leaves)

    def vecmat(ct):
        cts = f_vjp(*tu.tree_leaves(ct))
        return tu.tree_unflatten(tree, [ad.instantiate_zeros(c) for c in cts])

    return vecmat


def _consts_cotangent(converted: _Converted, consts: tuple, x: Any, u: Any) -> tuple:
    """-(d/dconsts <u, A_consts x>): how the solution moves with the matrix's entries."""
    leaves_x = tu.tree_leaves(x)
    float_consts = [kind_of(get_aval(c).dtype) in "fc" for c in consts]
    _, f_vjp = ad.vjp_flat(
        lambda *cs: core.eval_jaxpr(converted.jaxpr.jaxpr, converted.jaxpr.consts, *cs,
                                    *leaves_x), list(consts))
    cts = f_vjp(*tu.tree_leaves(u))
    out = []
    for c, ct, is_float in zip(consts, cts, float_consts, strict=True):
        out.append(ew.neg(ad.instantiate_zeros(ct)) if is_float else
                   ad.zeros_like_aval(ad.tangent_aval(get_aval(c))))
    return tuple(out)
