"""Staging and ordering: identities for numbax's arithmetic that mark places in a program
(optimization_barrier, stage, dce_sink, the tokens of create_token/after_all) and the staging
helpers platform_dependent and composite.
numbax has no side effects to order and no optimizer that reorders across them, so each
evaluates to its operands; they exist so JAX programs that use them run unchanged."""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from numbax._src import core
from numbax._src import tree_util as tu
from numbax._src.core import Primitive, ShapedArray
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.extend_core import AbstractToken, Token, abstract_token
from numbax._src.interpreters import ad, batching

# ----------------------------------------------------------------------------- optimization_barrier

optimization_barrier_p = Primitive("optimization_barrier", multiple_results=True)


def _barrier_jvp(primals, tangents):
    outs = optimization_barrier_p.bind(*primals)
    nonzero = [t for t in tangents if type(t) is not ad.Zero]
    moved = iter(optimization_barrier_p.bind(*nonzero) if nonzero else [])
    return outs, [t if type(t) is ad.Zero else next(moved) for t in tangents]


def _barrier_transpose(cts, *args):
    nonzero = [ct for ct in cts if type(ct) is not ad.Zero]
    moved = iter(optimization_barrier_p.bind(*nonzero) if nonzero else [])
    return [None if not ad.is_undefined_primal(x) else (ct if type(ct) is ad.Zero else
                                                          next(moved))
            for x, ct in zip(args, cts, strict=True)]


core.abstract_eval_rules[optimization_barrier_p] = lambda *avals: list(avals)
core.impl_rules[optimization_barrier_p] = lambda *xs: list(xs)
ad.jvp_rules[optimization_barrier_p] = _barrier_jvp
ad.transpose_rules[optimization_barrier_p] = _barrier_transpose
batching.batch_rules[optimization_barrier_p] = lambda size, vals, dims: (
    optimization_barrier_p.bind(*vals), list(dims))


def optimization_barrier(operand: Any, /) -> Any:
    """operand (any pytree of arrays) unchanged; in XLA, a fence computations are not moved
    across (numbax's compiler does not reorder across it either).

    >>> optimization_barrier((np.float64(1.0), np.arange(2)))
    (Array(1., dtype=float64), Array([0, 1], dtype=int64))
    """
    leaves, tree = tu.tree_flatten(operand)
    return tu.tree_unflatten(tree, optimization_barrier_p.bind(*leaves))


# ----------------------------------------------------------------------------- stage

stage_p = Primitive("stage")
core.abstract_eval_rules[stage_p] = lambda x: [x]
core.impl_rules[stage_p] = lambda x: [x]
ad.deflinear(stage_p, lambda cts, x: [cts[0]])
batching.defvectorized(stage_p)


def stage(x: Any, /) -> Any:
    """x lifted into the active trace (outside any transformation, a numbax Array); a value
    the trace already holds is returned as it is.

    >>> stage(2.0)
    Array(2., dtype=float64, weak_type=True)
    """
    if isinstance(x, core.Tracer):
        return x
    return stage_p.bind(x)


# ----------------------------------------------------------------------------- dce_sink

dce_sink_p = Primitive("dce_sink", multiple_results=True)
core.abstract_eval_rules[dce_sink_p] = lambda x, *, prevent_mlir_dce: []
core.impl_rules[dce_sink_p] = lambda x, *, prevent_mlir_dce: []
ad.jvp_rules[dce_sink_p] = lambda primals, tangents, **params: (
    dce_sink_p.bind(*primals, **params), [])
batching.batch_rules[dce_sink_p] = lambda size, vals, dims, **params: (
    dce_sink_p.bind(*vals, **params), [])


def dce_sink(val: Any, *, prevent_mlir_dce: bool = False) -> None:
    """Uses val without producing anything, so it counts as used (returns None).

    >>> dce_sink(1.0) is None
    True
    """
    for leaf in tu.tree_leaves(val):
        dce_sink_p.bind(leaf, prevent_mlir_dce=bool(prevent_mlir_dce))


# ----------------------------------------------------------------------------- tokens

create_token_p = Primitive("create_token")
core.abstract_eval_rules[create_token_p] = lambda *avals: [abstract_token]
core.impl_rules[create_token_p] = lambda *xs: [Token.new()]
ad.non_differentiable.add(create_token_p)
batching.batch_rules[create_token_p] = lambda size, vals, dims: (
    [create_token_p.bind(*vals)], [None])


def create_token(_: Any = None) -> Token:
    """A new token (JAX orders side effects with them; numbax has none to order).

    >>> create_token()
    Token()
    """
    return create_token_p.bind()


after_all_p = Primitive("after_all")


def _after_all_abstract_eval(*avals: ShapedArray) -> list:
    if any(not isinstance(a, AbstractToken) for a in avals):
        raise NumbaxTypeError(
            "Arguments to after_all must be tokens; got "
            f"{', '.join(a.str_short() for a in avals)}. Make them with lax.create_token().")
    return [abstract_token]


core.abstract_eval_rules[after_all_p] = _after_all_abstract_eval
core.impl_rules[after_all_p] = lambda *xs: [Token.new()]
ad.non_differentiable.add(after_all_p)
batching.batch_rules[after_all_p] = lambda size, vals, dims: ([after_all_p.bind(*vals)], [None])


def after_all(*operands: Any) -> Token:
    """A token that comes after all the given tokens.

    >>> after_all(create_token(), create_token())
    Token()
    """
    return after_all_p.bind(*operands)



# ---------------------------------------------------------------------- platforms, composites

_PLATFORMS = ("cpu", "cuda", "rocm", "tpu")


def platform_dependent(*args: Any, default: Callable | None = None,
                       **per_platform: Callable) -> Any:
    """Calls the branch for the platform the program runs on with args: numbax traces for
    the CPU, so the 'cpu' branch runs, else `default`.

    Args:
      *args: the operands of every branch.
      default: the branch for platforms without one of their own.
      **per_platform: branches by platform name ('cpu', 'cuda', 'rocm', 'tpu').

    Returns:
      The chosen branch's result.

    >>> platform_dependent(2.0, cpu=lambda x: x * 3, default=lambda x: x)
    6.0
    """
    for name in per_platform:
        if name == "gpu":
            raise NumbaxValueError("Use 'cuda' or 'rocm' for lax.platform_dependent.")
        if name not in _PLATFORMS:
            raise NumbaxValueError(
                f"lax.platform_dependent: unknown platform {name!r}; expected one of "
                f"{_PLATFORMS}.")
    branch = per_platform.get("cpu", default)
    if branch is None:
        raise NotImplementedError(
            f"lax.platform_dependent: no branch for platform 'cpu' among {sorted(per_platform)} "
            "and no default; numbax runs programs on the CPU. Pass cpu= or default=.")
    return branch(*args)


def composite(decomposition: Callable, name: str, version: int = 0) -> Callable:
    """decomposition, marked as the composite operation `name` (XLA may swap in a kernel for
    it; numbax runs the decomposition).

    Unlike JAX, there is no composite equation in the jaxpr and the result is differentiable
    (JAX raises for derivatives of a composite).

    >>> fma = composite(lambda x, y: x * y + 1.0, name="my.fma")
    >>> fma(2.0, 3.0)
    7.0
    """
    if not isinstance(name, str) or not name:
        raise NumbaxTypeError(f"lax.composite: name has {name!r}, expected a non-empty string.")
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise NumbaxTypeError(
            f"lax.composite: version has {version!r}, expected a non-negative integer.")

    @functools.wraps(decomposition)
    def call(*args: Any, **attributes: Any) -> Any:
        return decomposition(*args, **attributes)

    return call
