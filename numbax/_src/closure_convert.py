"""closure_convert (hoist the traced values a function closes over into explicit arguments, so
custom derivative rules can see them) and custom_gradient (TensorFlow's one-function form of a
custom VJP), which closure-converts the gradient function the forward pass returns."""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from numbax._src import core, dtypes
from numbax._src import tree_util as tu
from numbax._src.core import Jaxpr, get_aval
from numbax._src.custom_derivatives import custom_vjp
from numbax._src.errors import NumbaxTypeError
from numbax._src.interpreters import ad
from numbax._src.interpreters import partial_eval as pe


def _maybe_perturbed(x: Any) -> bool:
    """Whether `x` may carry a nonzero tangent (JAX's heuristic): concrete values and JVP
    tracers with a zero tangent cannot; values being traced to a jaxpr may later be."""
    if not isinstance(x, core.Tracer):
        return False
    if isinstance(x, ad.JVPTracer) and type(x.tangent) is ad.Zero:
        return _maybe_perturbed(x.primal)
    if isinstance(x, pe.DynamicJaxprTracer):
        return dtypes.is_inexact(x.aval.dtype)
    return True


def _flat_trace(fun: Callable, in_tree: tu.PyTreeDef, avals: list) -> tuple[Jaxpr, list, Any]:
    store: dict[str, Any] = {}

    def flat(*xs):
        out_flat, store["tree"] = tu.tree_flatten(fun(*tu.tree_unflatten(in_tree, xs)))
        return out_flat

    jaxpr, consts = pe.trace_to_jaxpr_dynamic(flat, avals)
    return jaxpr, consts, store["tree"]


def closure_convert(fun: Callable, *example_args: Any) -> tuple[Callable, list[Any]]:
    """`fun` specialized to the types of `example_args`, with the traced values it closes over
    (those that may be differentiated) hoisted out as extra trailing arguments.

    Returns (converted, hoisted): `converted(*args, *hoisted)` computes `fun(*args)`; pass
    `hoisted` across a custom_vjp boundary so its bwd rule can give their cotangents.

    >>> import numbax, numbax.numpy as jnp
    >>> def outer(a):
    ...     f, consts = closure_convert(lambda x: x * a, 1.0)
    ...     return f(3.0, *consts)
    >>> float(numbax.grad(outer)(2.0))
    3.0
    """
    if not callable(fun):
        raise NumbaxTypeError(f"closure_convert: fun is a {type(fun).__name__}, expected a "
                              "callable.")
    flat, in_tree = tu.tree_flatten(example_args)
    for i, x in enumerate(flat):
        if not core.is_array_like(x):
            raise NumbaxTypeError(f"closure_convert: example argument leaf {i} is a "
                                  f"{type(x).__name__}, expected an array or a scalar.")
    jaxpr, consts, out_tree = _flat_trace(fun, in_tree, [get_aval(x) for x in flat])
    hoist = [_maybe_perturbed(c) for c in consts]
    kept = [c for c, h in zip(consts, hoist, strict=True) if not h]
    hoisted = [c for c, h in zip(consts, hoist, strict=True) if h]

    def converted(*args_and_consts: Any) -> Any:
        n_args = len(args_and_consts) - len(hoisted)
        args, given = args_and_consts[:n_args], iter(args_and_consts[n_args:])
        args_flat, tree = tu.tree_flatten(tuple(args))
        if tree != in_tree:
            raise NumbaxTypeError(
                "The inputs to the closure produced by closure_convert must have the same "
                "Pytree structure as the example arguments passed when closure_convert was "
                f"called. Expected {in_tree}, but got {tree}")
        kept_it = iter(kept)
        all_consts = [next(given) if h else next(kept_it) for h in hoist]
        return tu.tree_unflatten(out_tree, core.eval_jaxpr(jaxpr, all_consts, *args_flat))

    return converted, hoisted


class _GradRule:
    """custom_gradient's residuals: the traced gradient function (static) and the values it
    closes over (the pytree's leaves)."""

    def __init__(self, jaxpr: Jaxpr, in_tree: Any, out_tree: Any, consts: list) -> None:
        self.jaxpr, self.in_tree, self.out_tree, self.consts = jaxpr, in_tree, out_tree, consts


tu.register_pytree_node(
    _GradRule, lambda r: (r.consts, (r.jaxpr, r.in_tree, r.out_tree)),
    lambda aux, consts: _GradRule(*aux, list(consts)))


def custom_gradient(fun: Callable) -> Callable:
    """A function with a custom reverse-mode derivative, as TensorFlow's custom_gradient:
    `fun(*args)` returns `(output, grad_fn)`, where `grad_fn(output_cotangent)` returns one
    cotangent per argument (a tuple, or the bare cotangent of a one-argument function).
    `grad_fn` may close over values of the forward pass; it may not branch on them.

    >>> import numbax
    >>> @custom_gradient
    ... def f(x):
    ...     return x ** 2, lambda g: (g * x,)
    >>> float(f(3.0)), float(numbax.grad(f)(3.0))
    (9.0, 3.0)
    """
    if not callable(fun):
        raise NumbaxTypeError(f"custom_gradient: fun is a {type(fun).__name__}, expected a "
                              "callable.")

    def _pair(args: tuple) -> tuple[Any, Callable]:
        out = fun(*args)
        if not (isinstance(out, (tuple, list)) and len(out) == 2 and callable(out[1])):
            raise NumbaxTypeError(
                f"custom_gradient: {getattr(fun, '__name__', 'fun')} must return a pair "
                f"(output, gradient function), got {type(out).__name__}.")
        return out[0], out[1]

    @custom_vjp
    def wrapped(*args: Any) -> Any:
        return _pair(args)[0]

    def fwd(*args: Any) -> tuple[Any, _GradRule]:
        ans, rule = _pair(args)
        ans_flat, out_tree = tu.tree_flatten((ans,))
        avals = [ad.tangent_aval(get_aval(x)) for x in ans_flat]
        jaxpr, consts, in_tree = _flat_trace(rule, out_tree, avals)
        return ans, _GradRule(jaxpr, in_tree, out_tree, list(consts))

    def bwd(res: _GradRule, ct: Any) -> tuple:
        cts_flat, tree = tu.tree_flatten((ct,))
        if tree != res.out_tree:
            raise NumbaxTypeError(f"custom_gradient: the output cotangent has structure {tree}, "
                                  f"expected {res.out_tree}.")
        cts_in = tu.tree_unflatten(res.in_tree, core.eval_jaxpr(res.jaxpr, res.consts,
                                                                *cts_flat))
        return (cts_in,) if tu.treedef_is_leaf(res.in_tree) else cts_in

    wrapped.defvjp(fwd, bwd)
    return functools.wraps(fun)(lambda *args: wrapped(*args))
