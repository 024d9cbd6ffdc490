"""Tracing user functions into sub-jaxprs for control-flow primitives, and jaxpr plumbing."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from numbax._src import core
from numbax._src import tree_util as tu
from numbax._src.core import ClosedJaxpr, Jaxpr, ShapedArray, Var
from numbax._src.errors import NumbaxTypeError
from numbax._src.interpreters import partial_eval as pe


def trace_subjaxpr(fun: Callable, in_tree: tu.PyTreeDef, in_avals: Sequence[ShapedArray]):
    """Traces fun(*pytree args) at in_avals. Returns (jaxpr taking [consts..., args...] as a
    ClosedJaxpr without consts, the consts to pass as operands, the output tree)."""
    store: dict[str, tu.PyTreeDef] = {}

    def flat_fun(*args_flat):
        out = fun(*tu.tree_unflatten(in_tree, args_flat))
        out_flat, store["tree"] = tu.tree_flatten(out)
        for leaf in out_flat:
            if not core.is_array_like(leaf):
                raise NumbaxTypeError(
                    f"control flow: a traced function returned a {type(leaf).__name__}; "
                    "bodies and branches must return arrays or pytrees of arrays."
                )
        return out_flat

    jaxpr, consts = pe.trace_to_jaxpr_dynamic(flat_fun, list(in_avals))
    return ClosedJaxpr(pe.convert_constvars_jaxpr(jaxpr), []), consts, store["tree"]


def abstractify(x: Any) -> ShapedArray:
    return core.get_aval(x)


def insert_unused_inputs(closed: ClosedJaxpr, position: int,
                         avals: Sequence[ShapedArray]) -> ClosedJaxpr:
    """The same jaxpr with extra (ignored) inputs of `avals` inserted at `position`."""
    jaxpr = closed.jaxpr
    extra = [Var(a) for a in avals]
    invars = [*jaxpr.invars[:position], *extra, *jaxpr.invars[position:]]
    return ClosedJaxpr(Jaxpr(jaxpr.constvars, invars, jaxpr.eqns, jaxpr.outvars), closed.consts)


def permute_jaxpr(closed: ClosedJaxpr, in_order: Sequence[int] | None = None,
                  out_order: Sequence[int] | None = None) -> ClosedJaxpr:
    """Reorders inputs/outputs: new input k is old input in_order[k] (same for outputs)."""
    jaxpr = closed.jaxpr
    invars = jaxpr.invars if in_order is None else [jaxpr.invars[i] for i in in_order]
    outvars = jaxpr.outvars if out_order is None else [jaxpr.outvars[i] for i in out_order]
    return ClosedJaxpr(Jaxpr(jaxpr.constvars, invars, jaxpr.eqns, outvars), closed.consts)


def join_consts(closeds: Sequence[ClosedJaxpr], consts_per: Sequence[list]):
    """Makes every jaxpr take all the consts: [consts_0..., consts_1..., ..., args...]."""
    all_consts = [c for consts in consts_per for c in consts]
    avals = [core.get_aval(c) for c in all_consts]
    joined = []
    start = 0
    for closed, consts in zip(closeds, consts_per, strict=True):
        n = len(consts)
        before, after = avals[:start], avals[start + n:]
        padded = insert_unused_inputs(closed, 0, before)
        padded = insert_unused_inputs(padded, len(before) + n, after)
        joined.append(padded)
        start += n
    return joined, all_consts


def check_outputs_match(what: str, names: Sequence[str], trees: Sequence[tu.PyTreeDef],
                        avals: Sequence[Sequence[ShapedArray]]) -> None:
    """All branches (or body vs carry) must produce the same structure, shapes and dtypes."""
    for name, tree, out_avals in zip(names[1:], trees[1:], avals[1:], strict=True):
        if tree != trees[0]:
            raise NumbaxTypeError(
                f"{what}: {names[0]} and {name} must return the same pytree structure, got "
                f"{trees[0]} and {tree}."
            )
        for i, (a, b) in enumerate(zip(avals[0], out_avals, strict=True)):
            if (a.shape, a.dtype) != (b.shape, b.dtype):
                raise NumbaxTypeError(
                    f"{what}: {names[0]} and {name} must return the same types; output leaf "
                    f"{i} is {a.str_short()} in {names[0]} but {b.str_short()} in {name}."
                )


def join_weak(avals_list: Sequence[Sequence[ShapedArray]]) -> list[ShapedArray]:
    """Output avals that are weak only if weak in every branch."""
    return [a.update(weak_type=all(x.weak_type for x in group))
            for a, group in zip(avals_list[0], zip(*avals_list, strict=True), strict=True)]
