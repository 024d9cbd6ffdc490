"""sparse.sparsify: runs a function written for dense arrays on BCOO arguments.

The function is traced to a jaxpr with each sparse argument standing as a dense array of its
shape, then the jaxpr is interpreted: an equation with no sparse operand binds its primitive
as eval_jaxpr does (so outer jit/grad/vmap traces see ordinary primitives), one with a sparse
operand runs its rule from rules.sparse_rules, whose result may be sparse again.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from numbax._src import core
from numbax._src import tree_util as tu
from numbax._src.api import flatten_fun
from numbax._src.avals import ShapedArray, literal_value
from numbax._src.interpreters import partial_eval as pe
from numbax._src.sparse.bcoo import BCOO
from numbax._src.sparse.rules import sparse_rules


def _is_sparse(x: Any) -> bool:
    from numbax._src.sparse.bcsr import BCSR

    return isinstance(x, (BCOO, BCSR))


def _as_bcoo(x: Any) -> Any:
    """A BCSR operand enters as the BCOO of the same entries."""
    return x if isinstance(x, BCOO) or not _is_sparse(x) else x.to_bcoo()


def eval_sparse(jaxpr: core.Jaxpr, consts: Sequence[Any], args: Sequence[Any]) -> list:
    """Interprets `jaxpr` on values of which some are BCOO arrays."""
    env: dict[core.Var, Any] = {}

    def read(x: Any) -> Any:
        return literal_value(x.val, x.aval) if isinstance(x, core.Literal) else env[x]

    for v, val in zip(jaxpr.constvars, consts, strict=True):
        env[v] = val
    for v, val in zip(jaxpr.invars, args, strict=True):
        env[v] = val
    for eqn in jaxpr.eqns:
        vals = [read(x) for x in eqn.invars]
        if any(isinstance(v, BCOO) for v in vals):
            rule = sparse_rules.get(eqn.primitive)
            if rule is None:
                raise NotImplementedError(
                    f"sparsify: sparse rule for {eqn.primitive.name} is not implemented. If a "
                    "dense result is intended, convert the sparse operands with .todense() "
                    "(sparse.todense) first.")
            outs = rule(*vals, **eqn.params)
        else:
            outs = core.bind(eqn.primitive, *vals, **eqn.params)
        for v, out in zip(eqn.outvars, outs, strict=True):
            env[v] = out
    return [read(v) for v in jaxpr.outvars]


def sparsify(f: Callable, use_tracer: bool = False) -> Callable:
    """f, made to accept BCOO (and BCSR) arrays wherever it takes arrays.

    Args:
      f: a function of arrays written with numbax.numpy / numbax.lax.
      use_tracer: accepted for JAX's signature; numbax always interprets the jaxpr.

    Returns:
      A function with f's signature: sparse arguments stay sparse through the zero-preserving
      operations (products, sums, transposes, reshapes, scaling, zero-preserving unary
      functions), and results are BCOO where they stay sparse.

    Unlike JAX: BCSR arguments are computed on as BCOO (results are BCOO), and control flow
    (cond, while_loop, scan) on sparse operands raises NotImplementedError.

    >>> import numbax.numpy as jnp
    >>> from numbax._src.sparse.bcoo import bcoo_fromdense
    >>> m = bcoo_fromdense(jnp.array([[0., 1.], [2., 0.]]))
    >>> sparsify(lambda a, v: 2 * (a.T @ v) + 1)(m, jnp.array([1., 1.])).tolist()
    [5.0, 3.0]
    """
    del use_tracer

    @functools.wraps(f)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        leaves, in_tree = tu.tree_flatten((args, kwargs), is_leaf=_is_sparse)
        leaves = [_as_bcoo(x) for x in leaves]
        in_avals = [ShapedArray(x.shape, x.dtype) if isinstance(x, BCOO) else core.get_aval(x)
                    for x in leaves]
        flat_fun, out_tree = flatten_fun(f, in_tree)
        jaxpr, consts = pe.trace_to_jaxpr_dynamic(flat_fun, in_avals)
        outs = eval_sparse(jaxpr, consts, leaves)
        return tu.tree_unflatten(out_tree(), outs)

    return wrapped
