"""Tracing user functions into sub-jaxprs for control-flow primitives, and jaxpr plumbing."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from numbax._src import core, dtypes
from numbax._src import tree_util as tu
from numbax._src.core import ClosedJaxpr, Jaxpr, ShapedArray, Var
from numbax._src.errors import NumbaxTypeError
from numbax._src.interpreters import partial_eval as pe
from numbax._src.lax import elementwise as ew


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


def as_primitive_outputs(outs: Sequence[Any], avals: Sequence[ShapedArray]) -> list:
    """A branch run inline (a concrete predicate) returning what binding cond would: Arrays
    of the joined avals, not the Python scalars or numpy arrays the branch passes through
    (JAX binds cond even for a concrete predicate)."""
    from numbax._src.array import Array  # Array sits above lax
    from numbax._src.lax.convert import convert_element_type_p

    fixed = []
    for out, aval in zip(outs, avals, strict=True):
        if isinstance(out, (Array, core.Tracer)) and core.get_aval(out) == aval:
            fixed.append(out)
        else:
            fixed.append(convert_element_type_p.bind(out, new_dtype=aval.dtype,
                                                     weak_type=aval.weak_type))
    return fixed


# ----------------------------------------------------------------------------- loop carries


def check_carry(api: str, init_tree, init_avals, out_tree, out_avals, what: str) -> None:
    if out_tree != init_tree:
        raise NumbaxTypeError(
            f"{api}: {what} must have the same pytree structure as the initial carry; "
            f"got {out_tree} for the initial carry {init_tree}.")
    for i, (a, b) in enumerate(zip(init_avals, out_avals, strict=True)):
        if (a.shape, a.dtype) != (b.shape, b.dtype):
            raise NumbaxTypeError(
                f"{api}: {what} leaf {i} has type {b.str_short()} but the initial carry has "
                f"{a.str_short()}; the carry must keep its shape and dtype (cast with astype "
                "or lax.convert_element_type).")


def carry_avals(init_flat: list) -> list[ShapedArray]:
    """The carry's avals, weak types kept (tracers too, as JAX: grad and jit keep them)."""
    return [core.get_aval(x) for x in init_flat]


def promote_weak_inits(init_flat: list, avals: list[ShapedArray],
                       out_avals: list[ShapedArray]) -> list | None:
    """JAX's second tracing pass: a weakly typed initial carry whose body output has another
    dtype (0. carried through x + jnp.float16(1)) is cast to the two's promoted dtype, and
    the caller traces the body again. None when no carry changes."""
    if len(avals) != len(out_avals):
        return None  # check_carry names the mismatch
    promoted, changed = list(init_flat), False
    for i, (a, o) in enumerate(zip(avals, out_avals, strict=True)):
        if a.weak_type and a.dtype != o.dtype and a.shape == o.shape:
            dtype, _ = dtypes.result_type((a.dtype, True), (o.dtype, o.weak_type))
            promoted[i], changed = ew.convert_element_type(init_flat[i], dtype), True
    return promoted if changed else None


def cast_weak_outputs(closed: ClosedJaxpr, avals: list[ShapedArray],
                      start: int = 0) -> ClosedJaxpr:
    """Makes carry outputs strong where the input carry is (an output may stay strong where
    the input is weak: as in JAX, the loop then returns the body's strong type, so
    fori_loop(0, 3, lambda i, x: x + jnp.float32(i), 0.) is a strong float32)."""
    outs = closed.out_avals[start:start + len(avals)]
    if all(o == a or a.weak_type for o, a in zip(outs, avals, strict=True)):
        return closed

    def f(*args):
        res = core.eval_jaxpr(closed.jaxpr, closed.consts, *args)
        fixed = [r if a.weak_type else ew.convert_element_type(r, a.dtype, False)
                 for r, a in zip(res[start:start + len(avals)], avals, strict=True)]
        return [*res[:start], *fixed, *res[start + len(avals):]]

    jaxpr, consts = pe.trace_to_jaxpr_dynamic(f, closed.in_avals)
    return pe.hoist_consts(ClosedJaxpr(jaxpr, consts))
