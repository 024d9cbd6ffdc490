"""jax.ad_checkpoint.print_saved_residuals: the values reverse-mode differentiation of a
function keeps for its backward pass, each with where it comes from (an argument, a constant,
or the primitive and source line that computed it), so checkpoint policies can be checked."""
from __future__ import annotations

import inspect
from collections.abc import Callable, Collection, Sequence
from typing import Any

from numbax._src import core, source_info
from numbax._src import tree_util as tu
from numbax._src.checkpoint_policies import name_p
from numbax._src.core import Literal, ShapedArray, Var
from numbax._src.errors import NumbaxTypeError
from numbax._src.interpreters import ad
from numbax._src.interpreters import partial_eval as pe


def _arg_names(fun: Callable, args: tuple, kwargs: dict) -> list[str]:
    """One name per flat argument leaf, as JAX's debug info: the parameter name followed by
    the leaf's key path (`params['w']`, `args[0]`)."""
    try:
        bound = inspect.signature(fun).bind(*args, **kwargs)
    except (TypeError, ValueError):
        bound = None
    names = []
    if bound is None:
        leaves = tu.tree_flatten_with_path((args, kwargs))[0]
        return [f"args{tu.keystr(path)}" for path, _ in leaves]
    params = inspect.signature(fun).parameters
    for name, value in bound.arguments.items():
        kind = params[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            value = tuple(value)
        for path, _ in tu.tree_flatten_with_path(value)[0]:
            names.append(f"{name}{tu.keystr(path)}")
    return names


def saved_residuals(f: Callable, *args: Any, **kwargs: Any) -> list[tuple[ShapedArray, str]]:
    """(aval, description) of each value `vjp(f, *args)` saves for the backward pass."""
    if not callable(f):
        raise NumbaxTypeError(f"saved_residuals: f is a {type(f).__name__}, expected a "
                              "callable.")
    flat, in_tree = tu.tree_flatten((args, kwargs))
    names = _arg_names(f, args, kwargs)
    if len(names) != len(flat):  # a signature that reorders its keyword arguments
        names = [f"at flattened index {i}" for i in range(len(flat))]

    def flat_f(*xs):
        a, kw = tu.tree_unflatten(in_tree, xs)
        return tu.tree_leaves(f(*a, **kw))

    store = {}

    def residuals(*xs):
        res = ad.linearize_flat(flat_f, xs)[2]
        moved = source_info.offloaded()
        store["offloaded"] = [any(r is m for m in moved) for r in res]
        return res

    with source_info.recording() as sources:
        jaxpr, _ = pe.trace_to_jaxpr_dynamic(residuals, [core.get_aval(x) for x in flat])
    offloaded = {v for v, o in zip(jaxpr.outvars, store["offloaded"], strict=True) if o}
    return describe(jaxpr, names, sources, offloaded)


def describe(jaxpr: core.Jaxpr, arg_names: Sequence[str], sources: dict[Var, str],
             offloaded: Collection[Any] = ()) -> list[tuple[ShapedArray, str]]:
    """Describes the outputs of `jaxpr` (the residuals), in JAX's order: literals,
    constants, arguments, then equation outputs in program order. A residual a checkpoint
    policy offloads is described as JAX's device_put to host memory."""
    res_vars = {x for x in jaxpr.outvars if isinstance(x, Var)}
    out = [(x.aval, "from a literal") for x in jaxpr.outvars if isinstance(x, Literal)]
    out += [(v.aval, "from a constant") for v in jaxpr.constvars if v in res_vars]
    out += [(v.aval, f"from the argument {arg_names[i]}")
            for i, v in enumerate(jaxpr.invars) if v in res_vars]
    for eqn in jaxpr.eqns:
        for v in eqn.outvars:
            if v not in res_vars:
                continue
            src = sources.get(v, "unknown")
            if v in offloaded:
                out.append((_HostAval(v.aval), "output of device_put from "))
            elif eqn.primitive is name_p:
                out.append((v.aval, f"named '{eqn.params['name']}' from {src}"))
            else:
                out.append((v.aval, f"output of {eqn.primitive.name} from {src}"))
    return out


class _HostAval(ShapedArray):
    """A residual's aval in host memory (an offloaded one), printed as JAX's `f32<host>[n]`."""

    def __init__(self, aval: ShapedArray) -> None:
        super().__init__(aval.shape, aval.dtype, aval.weak_type)

    def str_short(self) -> str:
        text = super().str_short()
        cut = text.index("[")
        return f"{text[:cut]}<host>{text[cut:]}"


def print_saved_residuals(f: Callable, *args: Any, **kwargs: Any) -> None:
    """Prints the values `vjp(f, *args, **kwargs)` keeps for the backward pass, one per line:
    type, then where it comes from.

    >>> import numbax, numbax.numpy as jnp
    >>> print_saved_residuals(numbax.checkpoint(lambda x: jnp.sin(jnp.sin(x))), 1.0)
    f64[] from the argument x
    """
    for aval, src in saved_residuals(f, *args, **kwargs):
        print(f"{aval.str_short()} {src}")
