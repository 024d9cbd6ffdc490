"""jax.custom_batching: `custom_vmap` (a function whose batching rule the user writes) and
`sequential_vmap` (batched by a loop over the examples).

A call binds `custom_vmap_call` with the function traced to a jaxpr (its closed-over values
first, as inputs) and the user's rule as a param. Outside `vmap` the jaxpr runs; under `vmap`
the rule gets the axis size, which inputs are batched (a pytree of bools shaped like the
arguments) and the arguments, their batch axes moved in front, and returns the outputs and
which of them are batched. A closed-over value that is batched is not the rule's to see: the
function itself is vmapped then, as custom_jvp does with a closed-over tangent.

Forward mode differentiates through the rule, as JAX does: the JVP of a call is another
custom_vmap call, of the function's JVP, whose rule is the JVP of the user's rule (every
primal and tangent batched). Reverse mode is refused, as in JAX: combine custom_vmap with
custom_vjp for that."""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from numbax._src import core
from numbax._src import tree_util as tu
from numbax._src.core import ClosedJaxpr, Primitive, get_aval
from numbax._src.custom_derivatives import (
    _batch_all,
    _flat_pair,
    _Rule,
    _trace_primal,
    _vmap_all,
)
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import ad, batching
from numbax._src.interpreters import partial_eval as pe

custom_vmap_call_p = Primitive("custom_vmap_call", multiple_results=True)


def _abstract_eval(*avals, call_jaxpr, rule, num_consts, in_tree, out_tree):
    return list(call_jaxpr.out_avals)


def _run_primal(call_jaxpr: ClosedJaxpr) -> Callable:
    return lambda *xs: core.eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *xs)


def _impl(*args, call_jaxpr, rule, num_consts, in_tree, out_tree):
    return [core.to_numpy(x) for x in _run_primal(call_jaxpr)(*args)]


def _batch(axis_size, vals, dims, *, call_jaxpr, rule, num_consts, in_tree, out_tree):
    if any(d is not None for d in dims[:num_consts]):  # a closed-over value is batched
        outs = _vmap_all(_run_primal(call_jaxpr), axis_size)(*_batch_all(axis_size, vals, dims))
        return outs, [0] * len(outs)
    args = vals[num_consts:]  # (unbatched closed-over values: the rule closes over them too)
    arg_dims = dims[num_consts:]
    args = [x if d is None else batching.moveaxis(x, d, 0) for x, d in zip(args, arg_dims,
                                                                            strict=True)]
    in_batched = tu.tree_unflatten(in_tree, [d is not None for d in arg_dims])
    outs, out_batched = rule(axis_size, in_batched, *tu.tree_unflatten(in_tree, args))
    outs_flat, tree = tu.tree_flatten(outs)
    if tree != out_tree:
        raise NumbaxTypeError(
            f"custom_vmap: the vmap rule returned outputs of structure {tree}, but the "
            f"function returns {out_tree}. Return the batched outputs in the function's "
            "structure.")
    flags = _batched_flags(out_batched, out_tree)
    for x, batched, aval in zip(outs_flat, flags, call_jaxpr.out_avals, strict=True):
        want = (axis_size, *aval.shape) if batched else aval.shape
        if tuple(get_aval(x).shape) != want:
            raise NumbaxValueError(
                f"custom_vmap: the vmap rule returned an output of shape "
                f"{tuple(get_aval(x).shape)} marked {'' if batched else 'not '}batched; "
                f"expected {want} (the function's output shape {aval.shape}"
                f"{f' after a batch axis of {axis_size}' if batched else ''}).")
    return outs_flat, [0 if b else None for b in flags]


def _batched_flags(out_batched: Any, out_tree: Any) -> list[bool]:
    """out_batched (a pytree of bools shaped like the outputs, or one bool for all) as one
    flag per output leaf."""
    if isinstance(out_batched, (bool, np.bool_)):
        return [bool(out_batched)] * out_tree.num_leaves
    flags, tree = tu.tree_flatten(out_batched)
    if tree != out_tree or not all(isinstance(f, (bool, np.bool_)) for f in flags):
        raise NumbaxTypeError(
            f"custom_vmap: the vmap rule's second result must be a pytree of bools with the "
            f"structure of the outputs ({out_tree}), or one bool; got {out_batched!r}.")
    return [bool(f) for f in flags]


def _jvp(primals, tangents, *, call_jaxpr, rule, num_consts, in_tree, out_tree):
    tangents = [ad.instantiate_zeros(t) for t in tangents]
    n = len(primals)

    def jvp_of_function(*xs):
        return _flat_pair(ad.jvp_flat(_run_primal(call_jaxpr), xs[:n], xs[n:]))

    def jvp_of_rule(axis_size, in_batched, *xs):
        flags = tu.tree_leaves(in_batched)
        xs = [x if b else batching.broadcast_batched(x, axis_size, 0)
              for x, b in zip(xs, flags, strict=True)]
        if num_consts:  # closed-over values the rule cannot see (nor their tangents)
            return _vmap_all(jvp_of_function, axis_size)(*xs), True
        everything = tu.tree_unflatten(in_tree, [True] * n)

        def batched_rule(*ps):
            outs, out_batched = rule(axis_size, everything, *tu.tree_unflatten(in_tree, ps))
            flat = tu.tree_leaves(outs)
            return [x if b else batching.broadcast_batched(x, axis_size, 0)
                    for x, b in zip(flat, _batched_flags(out_batched, out_tree), strict=True)]

        return _flat_pair(ad.jvp_flat(batched_rule, xs[:n], xs[n:])), True

    closed, consts, tree = _trace_primal(jvp_of_function, [*primals, *tangents])
    outs = custom_vmap_call_p.bind(
        *consts, *primals, *tangents, call_jaxpr=closed, rule=_Rule(jvp_of_rule, "jvp_rule"),
        num_consts=len(consts), in_tree=tu.tree_structure([0] * (2 * n)), out_tree=tree)
    half = len(outs) // 2
    return outs[:half], outs[half:]


def _partial_eval(trace, tracers, **params):
    """Linearizing (grad, vjp, linearize) splits the JVP call into known primal outputs and a
    linear tangent part, which a custom rule's JVP does not separate: refused, as in JAX."""
    raise NumbaxValueError(
        "custom_vmap: a function with a custom vmap rule has no reverse-mode derivative (as "
        "in JAX: grad, vjp and linearize need one; jvp works). To differentiate it in reverse "
        "mode, wrap it in custom_vjp as well (@jax.custom_vjp above "
        "@jax.custom_batching.custom_vmap) and define its backward rule.")


core.abstract_eval_rules[custom_vmap_call_p] = _abstract_eval
core.impl_rules[custom_vmap_call_p] = _impl
batching.batch_rules[custom_vmap_call_p] = _batch
ad.jvp_rules[custom_vmap_call_p] = _jvp
pe.partial_eval_rules[custom_vmap_call_p] = _partial_eval


class custom_vmap:  # noqa: N801  (JAX's name)
    """A function whose behaviour under `vmap` is the rule given to `def_vmap` (JAX's
    jax.custom_batching.custom_vmap). Called outside vmap it is the function itself.

    >>> @custom_vmap
    ... def f(x, y):
    ...     return x + y
    >>> @f.def_vmap
    ... def rule(axis_size, in_batched, xs, ys):
    ...     return xs * ys, True
    """

    def __init__(self, fun: Callable) -> None:
        if not callable(fun):
            raise NumbaxTypeError(f"custom_vmap: expected a function, got {fun!r}.")
        functools.update_wrapper(self, fun)
        # underscored: functools.wraps copies an instance's __dict__ into wrappers (jit, grad)
        self._cvmap_fun = fun
        self._cvmap_rule: Callable | None = None

    @property
    def fun(self) -> Callable:
        return self._cvmap_fun

    @property
    def vmap_rule(self) -> Callable | None:
        return self._cvmap_rule

    def def_vmap(self, vmap_rule: Callable) -> Callable:
        """Sets the rule: vmap_rule(axis_size, in_batched, *args) -> (outputs, out_batched).
        Returns vmap_rule unchanged."""
        if not callable(vmap_rule):
            raise NumbaxTypeError(f"custom_vmap.def_vmap: expected a function, got "
                                  f"{vmap_rule!r}.")
        self._cvmap_rule = vmap_rule
        return vmap_rule

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            raise NumbaxTypeError(
                f"custom_vmap: {self.__name__} was called with keyword arguments "
                f"{sorted(kwargs)}; a custom_vmap function takes positional arguments only.")
        if self._cvmap_rule is None:
            raise AttributeError(
                f"custom_vmap: no vmap rule is defined for {self.__name__}; define one with "
                f"@{self.__name__}.def_vmap before calling it.")
        args_flat, in_tree = tu.tree_flatten(args)
        for i, x in enumerate(args_flat):
            if not core.is_array_like(x):
                raise NumbaxTypeError(
                    f"custom_vmap: argument leaf {i} of {self.__name__} is a "
                    f"{type(x).__name__}, not an array. Pass arrays or Python scalars.")
        closed, consts, out_tree = _trace_primal(
            lambda *xs: self._cvmap_fun(*tu.tree_unflatten(in_tree, xs)), args_flat)
        user_rule = self._cvmap_rule
        outs = custom_vmap_call_p.bind(
            *consts, *args_flat, call_jaxpr=closed, rule=_Rule(user_rule, repr(user_rule)),
            num_consts=len(consts), in_tree=in_tree, out_tree=out_tree)
        return tu.tree_unflatten(out_tree, outs)


def sequential_vmap(f: Callable) -> custom_vmap:
    """f as a custom_vmap function batched by a loop over the examples (`lax.map`): for
    functions with no batched form (JAX's jax.custom_batching.sequential_vmap)."""
    from numbax._src.lax.control_flow import loops

    wrapped = custom_vmap(f)

    @wrapped.def_vmap
    def rule(axis_size, in_batched, *args):
        flags, tree = tu.tree_flatten(in_batched)
        leaves = tu.tree_leaves(args)

        def one(batched_leaves):
            it = iter(batched_leaves)
            full = [next(it) if b else x for x, b in zip(leaves, flags, strict=True)]
            return f(*tu.tree_unflatten(tree, full))

        outs = loops.map(one, [x for x, b in zip(leaves, flags, strict=True) if b])
        return outs, True

    return wrapped
