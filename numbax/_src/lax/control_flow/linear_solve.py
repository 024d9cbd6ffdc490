"""custom_linear_solve and its primitive, linear_solve_p (JAX's `custom_linear_solve`): x =
solve(matvec, b) for the linear map A = matvec, differentiated through the equation A x = b
rather than through the solver's iterations: dx = A^-1 (db - dA x) in forward mode, and in
reverse mode a solve with the transpose (transpose_solve on vecmat, A's transpose).

The equation holds four jaxprs (matvec, vecmat, solve, transpose_solve), each taking its
closed-over values first; its operands are those values, in that order, then b's leaves. Its
outputs are x's leaves, then solve's auxiliary outputs (has_aux)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from numbax._src import core
from numbax._src import tree_util as tu
from numbax._src.core import ClosedJaxpr, Primitive, ShapedArray, get_aval
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import ad, batching
from numbax._src.interpreters import partial_eval as pe
from numbax._src.lax import elementwise as ew
from numbax._src.lax.control_flow import common


class _LinearSolveTuple(NamedTuple):
    """One entry per jaxpr of the equation (JAX's name, so params print as in JAX)."""

    matvec: Any
    vecmat: Any
    solve: Any
    transpose_solve: Any

    def transpose(self) -> _LinearSolveTuple:
        return _LinearSolveTuple(self.vecmat, self.matvec, self.transpose_solve, self.solve)


def _split(args: list, const_lengths: _LinearSolveTuple) -> tuple[_LinearSolveTuple, list]:
    """The operands as (closed-over values of each jaxpr, b's leaves)."""
    parts, at = [], 0
    for n in const_lengths:
        parts.append(list(args[at:at + n]))
        at += n
    return _LinearSolveTuple(*parts), list(args[at:])


def _call(jaxpr: ClosedJaxpr, *args: Any) -> list:
    return core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *args)


linear_solve_p = Primitive("custom_linear_solve", multiple_results=True)


def _linear_solve_abstract_eval(*avals: ShapedArray, const_lengths, jaxprs) -> list:
    return list(jaxprs.solve.out_avals)


def _linear_solve_impl(*args, const_lengths, jaxprs) -> list:
    consts, b = _split(list(args), const_lengths)
    return _call(jaxprs.solve, *consts.solve, *b)


def _linear_solve_jvp(primals, tangents, *, const_lengths, jaxprs):
    # A x = b, so dA x + A dx = db: dx = A^-1 (db - dA x)
    params = dict(const_lengths=const_lengths, jaxprs=jaxprs)
    outs = linear_solve_p.bind(*primals, **params)
    consts, b = _split(list(primals), const_lengths)
    consts_dot, b_dot = _split(list(tangents), const_lengths)
    x = outs[:len(b)]
    zero_aux = [ad.Zero.from_primal_value(a) for a in outs[len(b):]]
    rhs = list(b_dot)
    if any(type(t) is not ad.Zero for t in consts_dot.matvec):
        _, dax = ad.jvp_flat(lambda *a: _call(jaxprs.matvec, *a), [*consts.matvec, *x],
                             [*consts_dot.matvec, *(ad.Zero.from_primal_value(v) for v in x)])
        rhs = [ew.neg(ad.instantiate_zeros(d)) if type(t) is ad.Zero else
               t if type(d) is ad.Zero else ew.sub(t, d) for t, d in zip(rhs, dax, strict=True)]
    if all(type(t) is ad.Zero for t in rhs):
        return outs, [ad.Zero.from_primal_value(v) for v in x] + zero_aux
    rhs = [ad.instantiate_zeros(t) for t in rhs]
    flat_consts = [c for part in consts for c in part]
    x_dot = linear_solve_p.bind(*flat_consts, *rhs, **params)
    return outs, x_dot[:len(b)] + zero_aux


def _linear_solve_transpose(cts, *primals, const_lengths, jaxprs):
    if jaxprs.transpose_solve is None:
        raise NumbaxTypeError(
            "transpose_solve required for backwards mode automatic differentiation of "
            "custom_linear_solve (or pass symmetric=True when the matrix is symmetric).")
    consts, b = _split(list(primals), const_lengths)
    if any(ad.is_undefined_primal(c) for part in consts for c in part):
        raise NotImplementedError(
            "custom_linear_solve: transposing with respect to the linear map's closed-over "
            "values is not supported (they enter only through the jvp, as in JAX).")
    if any(type(ct) is not ad.Zero for ct in cts[len(b):]):
        raise NotImplementedError("custom_linear_solve: auxiliary outputs have no cotangent.")
    flipped = consts.transpose()
    ct_b = linear_solve_p.bind(*(c for part in flipped for c in part),
                               *(ad.instantiate_zeros(ct) for ct in cts[:len(b)]),
                               const_lengths=const_lengths.transpose(),
                               jaxprs=jaxprs.transpose())
    return [None] * sum(const_lengths) + ct_b[:len(b)]


def _linear_solve_batch(axis_size, vals, dims, *, const_lengths, jaxprs):
    """Which of x and b are batched is a fixpoint over the four jaxprs (each maps one to the
    other), as in JAX's rule; the batched jaxprs then take every batched value at axis 0."""
    axis_data = batching.AxisData(axis_size, None)
    consts_bat, b0_bat = _split([d is not None for d in dims], const_lengths)
    matvec, vecmat, solve, solve_t = jaxprs
    n_x = len(matvec.out_avals)
    n_aux = len(solve.out_avals) - n_x
    b_bat, x_bat = list(b0_bat), [False] * len(solve.out_avals)
    for _ in range(2 + len(b_bat) + len(x_bat)):
        solve_b, solve_x_bat = batching.batch_jaxpr(solve, axis_data, consts_bat.solve + b_bat,
                                                    x_bat)
        x_out = list(solve_x_bat)
        vecmat_b = None
        if vecmat is not None:
            vecmat_b, vx = batching.batch_jaxpr(vecmat, axis_data, consts_bat.vecmat + b_bat,
                                                b_bat)
            x_out = [a or c for a, c in zip(vx + [True] * n_aux, solve_x_bat, strict=True)]
        matvec_b, mb = batching.batch_jaxpr(matvec, axis_data, consts_bat.matvec + x_out[:n_x],
                                            b_bat)
        b_out = [m or o for m, o in zip(mb, b0_bat, strict=True)]
        solve_t_b = None
        if solve_t is not None:
            solve_t_b, tb = batching.batch_jaxpr(solve_t, axis_data,
                                                 consts_bat.transpose_solve + x_out[:n_x], x_out)
            b_out = [m or t for m, t in zip(b_out, tb[:len(b_out)], strict=True)]
        if x_out == x_bat and b_out == b_bat:
            break
        x_bat, b_bat = x_out, b_out
    consts, b = _split(list(vals), const_lengths)
    consts_dims, b_dims = _split(list(dims), const_lengths)
    moved = [batching.bdim_at_front(c, d, axis_size) if d is not None else c
             for part, pdims in zip(consts, consts_dims, strict=True)
             for c, d in zip(part, pdims, strict=True)]
    new_b = [batching.bdim_at_front(v, d, axis_size) if now else v
             for v, d, now in zip(b, b_dims, b_bat, strict=True)]
    outs = linear_solve_p.bind(
        *moved, *new_b, const_lengths=const_lengths,
        jaxprs=_LinearSolveTuple(matvec_b, vecmat_b, solve_b, solve_t_b))
    return outs, [0 if bat else None for bat in solve_x_bat]


def expand_linear_solve(eqn: core.JaxprEqn) -> ClosedJaxpr:
    """The equation as its solve jaxpr alone (under jit the derivative rules have run)."""
    params = eqn.params
    return pe.trace_to_closed_jaxpr(lambda *xs: _linear_solve_impl(*xs, **params),
                                    [x.aval for x in eqn.invars])


core.abstract_eval_rules[linear_solve_p] = _linear_solve_abstract_eval
core.impl_rules[linear_solve_p] = _linear_solve_impl
ad.jvp_rules[linear_solve_p] = _linear_solve_jvp
ad.transpose_rules[linear_solve_p] = _linear_solve_transpose
batching.batch_rules[linear_solve_p] = _linear_solve_batch


# ----------------------------------------------------------------------------- the wrapper


def _trace(api: str, what: str, fun: Callable, tree: Any, b_avals: list,
           has_aux: bool) -> tuple[ClosedJaxpr, list, Any]:
    """fun(x) for x structured as b, traced at b's avals: (jaxpr taking its closed-over
    values first, those values, the aux tree). Its result must have b's structure and
    shapes."""
    aux_tree: dict = {}

    def checked(x):
        out = fun(x)
        y, aux = out if has_aux else (out, None)
        leaves, y_tree = tu.tree_flatten(y)
        shapes = [get_aval(v).shape for v in leaves]
        if shapes != [a.shape for a in b_avals]:  # JAX's order and classes
            raise NumbaxValueError(
                f"{api}: {what}() output shapes must match b, got {shapes} and "
                f"{[a.shape for a in b_avals]}.")
        if y_tree != tree:
            raise NumbaxTypeError(
                f"{api}: {what}() output pytree structure must match b, got {y_tree} and "
                f"{tree}.")
        aux_leaves, aux_tree["tree"] = tu.tree_flatten(aux)
        return (*leaves, *aux_leaves) if has_aux else tuple(leaves)

    in_tree = tu.tree_structure((tu.tree_unflatten(tree, [0] * len(b_avals)),))
    closed, consts, _ = common.trace_subjaxpr(checked, in_tree, b_avals)
    return closed, list(consts), aux_tree.get("tree")


def _transposed(matvec: Callable, tree: Any, b_avals: list) -> Callable:
    """vecmat, the transpose of the linear matvec (by reverse mode at zero)."""
    def vecmat(ct):
        zeros = [ad.zeros_like_aval(a) for a in b_avals]
        _, pullback = ad.vjp_flat(lambda *xs: tu.tree_leaves(matvec(tu.tree_unflatten(
            tree, xs))), zeros)
        cts = pullback(*tu.tree_leaves(ct))
        return tu.tree_unflatten(tree, [ad.instantiate_zeros(c) for c in cts])
    return vecmat


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

    >>> import numpy as np
    >>> a = np.array([[2.0, 1.0], [1.0, 3.0]])
    >>> x = custom_linear_solve(lambda v: a @ v, np.array([3.0, 5.0]),
    ...                         lambda mv, r: np.linalg.solve(a, r), symmetric=True)
    >>> x
    Array([0.8, 1.4], dtype=float64)
    """
    api = "lax.custom_linear_solve"
    if transpose_solve is None and symmetric:
        transpose_solve = solve
    b_flat, tree = tu.tree_flatten(b)
    b_avals = [common.abstractify(x) for x in b_flat]
    matvec_jaxpr, matvec_consts, _ = _trace(api, "matvec", matvec, tree, b_avals, False)
    solve_jaxpr, solve_consts, aux_tree = _trace(api, "solve", lambda x: solve(matvec, x),
                                                 tree, b_avals, has_aux)
    vecmat_jaxpr = tr_jaxpr = None
    vecmat_consts: list = []
    tr_consts: list = []
    if transpose_solve is not None:
        if symmetric:
            vecmat, vecmat_jaxpr, vecmat_consts = matvec, matvec_jaxpr, matvec_consts
        else:
            vecmat = _transposed(matvec, tree, b_avals)
            vecmat_jaxpr, vecmat_consts, _ = _trace(api, "vecmat", vecmat, tree, b_avals, False)
        tr_jaxpr, tr_consts, _ = _trace(api, "transpose_solve",
                                        lambda x: transpose_solve(vecmat, x), tree, b_avals,
                                        has_aux)
    all_consts = [matvec_consts, vecmat_consts, solve_consts, tr_consts]
    outs = linear_solve_p.bind(
        *(c for part in all_consts for c in part), *b_flat,
        const_lengths=_LinearSolveTuple(*(len(c) for c in all_consts)),
        jaxprs=_LinearSolveTuple(matvec_jaxpr, vecmat_jaxpr, solve_jaxpr, tr_jaxpr))
    x = tu.tree_unflatten(tree, outs[:len(b_flat)])
    if not has_aux:
        return x
    return x, tu.tree_unflatten(aux_tree, outs[len(b_flat):])
