"""Sharding rules: the layout of each primitive's outputs from its operands' layouts, as JAX's
explicit-sharding rules give them (each output dimension takes the consensus of the operand
dimensions it comes from; a reduced or contracted dimension drops its axes).

A layout here is a `Layout`: one tuple of mesh-axis names per dimension (() when the dimension
is not split). The same rules serve three places: explicit-mode types (installed into
core.abstract_eval, so jax.typeof shows `f32[8@X,4@Y]` under jit too), the layout of eager
results computed from sharded arrays, and the output shardings of jit on sharded arguments.
In explicit mode an ambiguous rule raises ShardingTypeError, as JAX's does; elsewhere it picks
one answer (the first operand's), since only the layout, never a value, depends on it."""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from numbax._src import core
from numbax._src.compiler import registry
from numbax._src.errors import ShardingTypeError
from numbax._src.lax import convert, dot, reductions, shape_ops, sharding_ops
from numbax._src.lax import select as lselect
from numbax._src.lax.shard_map import shard_map_p
from numbax._src.sharding.shardings import NamedSharding, PartitionSpec, explicit_part

Layout = tuple  # tuple[tuple[str, ...], ...], one entry per dimension

_RULES: dict[core.Primitive, Callable] = {}


def layout_of(sharding: Any, ndim: int) -> Layout:
    if isinstance(sharding, NamedSharding):
        return sharding.spec._normalized(ndim)
    return ((),) * ndim


def to_spec(layout: Layout) -> PartitionSpec:
    """The PartitionSpec of a computed layout, trailing unsplit dimensions dropped (as JAX
    reports the shardings of computed results: P('x') rather than P('x', None))."""
    entries = [None if not e else e[0] if len(e) == 1 else e for e in layout]
    while entries and entries[-1] is None:
        entries.pop()
    return PartitionSpec(*entries)


def _show(layout: Layout, aval: core.ShapedArray) -> str:
    dims = [str(d) + ("@" + (e[0] if len(e) == 1 else f"({','.join(e)})") if e else "")
            for d, e in zip(aval.shape, layout, strict=True)]
    return f"{aval.str_short().split('[')[0]}[{','.join(dims)}]"


class _Ctx:
    """One rule application: the primitive, its operands' avals and layouts, strictness."""

    def __init__(self, prim, avals, layouts, strict):
        self.prim, self.avals, self.layouts, self.strict = prim, avals, layouts, strict

    def fail(self, why: str) -> None:
        inputs = ", ".join(_show(x, a) for x, a in zip(self.layouts, self.avals, strict=True))
        raise ShardingTypeError(f"{self.prim.name} operation with inputs: {inputs} {why}")

    def consensus(self, entries: Sequence[tuple]) -> tuple:
        named = [e for e in entries if e]
        if not named:
            return ()
        if self.strict and any(e != named[0] for e in named):
            self.fail(f"has conflicting shardings {named[0]} and "
                      f"{next(e for e in named if e != named[0])} for one dimension. Reshard an "
                      "operand first, or use auto_axes with an out_sharding.")
        return named[0]

    def checked(self, layout: Layout, aval: core.ShapedArray) -> Layout:
        names = [n for e in layout for n in e]
        if len(names) == len(set(names)):
            return layout
        if self.strict:
            self.fail(f"produces an illegally sharded result: {_show(layout, aval)}")
        seen: set = set()
        out = []
        for e in layout:
            out.append(tuple(n for n in e if n not in seen))
            seen.update(e)
        return tuple(out)


def _elementwise(ctx: _Ctx, params, out_avals) -> list[Layout]:
    ndim = out_avals[0].ndim
    same = [lay for lay, a in zip(ctx.layouts, ctx.avals, strict=True) if a.ndim == ndim]
    layout = tuple(ctx.consensus([lay[d] for lay in same]) for d in range(ndim))
    return [ctx.checked(layout, a) for a in out_avals]


def _broadcast_in_dim(ctx, params, out_avals):
    (x,), (aval,) = ctx.layouts, ctx.avals
    out = [()] * out_avals[0].ndim
    for i, d in enumerate(params["broadcast_dimensions"]):
        if aval.shape[i] == out_avals[0].shape[d]:
            out[d] = x[i]
    return [tuple(out)]


def _reduce(ctx, params, out_avals):
    (x,) = ctx.layouts
    axes = set(params["axes"])
    return [tuple(e for i, e in enumerate(x) if i not in axes)] * len(out_avals)


def _transpose(ctx, params, out_avals):
    (x,) = ctx.layouts
    return [tuple(x[p] for p in params["permutation"])]


def _squeeze(ctx, params, out_avals):
    (x,) = ctx.layouts
    dims = set(params["dimensions"])
    return [tuple(e for i, e in enumerate(x) if i not in dims)]


def _concatenate(ctx, params, out_avals):
    dim = params["dimension"]
    out = [ctx.consensus([lay[d] for lay in ctx.layouts]) for d in range(out_avals[0].ndim)]
    out[dim] = ()
    return [tuple(out)]


def _dot_general(ctx, params, out_avals):
    (lhs, rhs), (la, ra) = ctx.layouts, ctx.avals
    (lc, rc), (lb, rb) = params["dimension_numbers"]
    if ctx.strict and any(lhs[i] and rhs[j] for i, j in zip(lc, rc, strict=True)):
        ctx.fail("has sharded contracting dimensions: it is ambiguous how the output should "
                 "be sharded. Please specify the output sharding via the `out_sharding` "
                 f"parameter. Got lhs_contracting_spec={tuple(lhs[i] for i in lc)} and "
                 f"rhs_contracting_spec={tuple(rhs[j] for j in rc)}")
    batch = [ctx.consensus([lhs[i], rhs[j]]) for i, j in zip(lb, rb, strict=True)]
    lfree = [lhs[i] for i in range(la.ndim) if i not in (*lc, *lb)]
    rfree = [rhs[j] for j in range(ra.ndim) if j not in (*rc, *rb)]
    return [ctx.checked((*batch, *lfree, *rfree), out_avals[0])]


def _split_groups(src: Sequence[int], dst: Sequence[int]) -> list[tuple[list, list]] | None:
    """Pairs of consecutive groups of non-singleton dimensions with equal products (reshape's
    correspondence), as indices into src and dst; size-1 dimensions belong to no group."""
    si = [k for k, s in enumerate(src) if s != 1]
    di = [k for k, s in enumerate(dst) if s != 1]
    groups, i, j = [], 0, 0
    while i < len(si) and j < len(di):
        gi, gj = [si[i]], [di[j]]
        a, b = src[si[i]], dst[di[j]]
        i, j = i + 1, j + 1
        while a != b:
            if a < b and i < len(si):
                a *= src[si[i]]
                gi.append(si[i])
                i += 1
            elif b < a and j < len(di):
                b *= dst[di[j]]
                gj.append(di[j])
                j += 1
            else:
                return None
        groups.append((gi, gj))
    return groups if i == len(si) and j == len(di) else None


def _reshape(ctx, params, out_avals):
    (x,), (aval,) = ctx.layouts, ctx.avals
    new = tuple(params["new_sizes"])
    groups = _split_groups(aval.shape, new)
    out = [()] * len(new)
    if groups is None:
        return [tuple(out)]
    for gi, gj in groups:
        named = [d for d in gi if x[d]]
        if not named:
            continue
        if named != gi[:1]:  # only a group's outermost dimension may be split
            if ctx.strict:
                ctx.fail(f"reshapes sharded dimensions into {new}; reshard first, or pass "
                         "out_sharding.")
            continue
        k = math.prod(ctx_mesh_size(ctx, x[gi[0]]))
        if new[gj[0]] % k:
            if ctx.strict:
                ctx.fail(f"splits a dimension sharded {k} ways into {new[gj[0]]}.")
            continue
        out[gj[0]] = x[gi[0]]
    return [tuple(out)]


def ctx_mesh_size(ctx: _Ctx, names: tuple) -> list[int]:
    sizes = getattr(ctx, "mesh_sizes", {})
    return [sizes.get(n, 1) for n in names]


def _sharding_constraint(ctx, params, out_avals):
    return [layout_of(params["sharding"], out_avals[0].ndim)]


def _shard_map(ctx, params, out_avals):
    return [layout_of(NamedSharding(params["mesh"], s), a.ndim)
            for s, a in zip(params["out_specs"], out_avals, strict=True)]


def _default(ctx: _Ctx, params, out_avals) -> list[Layout]:
    """Unary ops that keep the shape keep the layout; anything else is unsharded."""
    if len(ctx.avals) == 1 and all(a.shape == ctx.avals[0].shape for a in out_avals):
        return [ctx.layouts[0]] * len(out_avals)
    return [((),) * a.ndim for a in out_avals]


def _rule(prim: core.Primitive) -> Callable:
    found = _RULES.get(prim)
    if found is not None:
        return found
    entry = registry.lowering(prim, "cpu")
    if entry is not None and entry.fusion == registry.Fusion.ELEMENTWISE:
        return _elementwise
    return _default


_RULES.update({
    shape_ops.broadcast_in_dim_p: _broadcast_in_dim,
    shape_ops.transpose_p: _transpose,
    shape_ops.squeeze_p: _squeeze,
    shape_ops.concatenate_p: _concatenate,
    shape_ops.reshape_p: _reshape,
    dot.dot_general_p: _dot_general,
    convert.convert_element_type_p: _elementwise,
    lselect.select_n_p: _elementwise,
    sharding_ops.sharding_constraint_p: _sharding_constraint,
    shard_map_p: _shard_map,
})
for _p in (reductions.reduce_sum_p, reductions.reduce_max_p, reductions.reduce_min_p,
           reductions.reduce_prod_p, reductions.reduce_and_p, reductions.reduce_or_p,
           reductions.reduce_xor_p, reductions.argmax_p, reductions.argmin_p):
    _RULES[_p] = _reduce


def apply(prim: core.Primitive, avals: Sequence, layouts: Sequence[Layout], params: dict,
          out_avals: Sequence, strict: bool = False,
          mesh_sizes: dict | None = None) -> list[Layout]:
    """The layouts of `prim`'s outputs (strict: explicit mode, ambiguity raises)."""
    ctx = _Ctx(prim, list(avals), list(layouts), strict)
    ctx.mesh_sizes = mesh_sizes or {}
    return list(_rule(prim)(ctx, params, list(out_avals)))


# ----------------------------------------------------------------------------- explicit types


def _typed_outputs(prim: core.Primitive, avals: Sequence, params: dict, outs: list) -> list:
    """core.abstract_eval's hook: gives outputs the explicit sharding their rule says."""
    mesh = next(a._sharding.mesh for a in avals if getattr(a, "_sharding", None) is not None)
    layouts = [layout_of(getattr(a, "_sharding", None), a.ndim) for a in avals]
    new = apply(prim, avals, layouts, params, outs, strict=True, mesh_sizes=dict(mesh.shape))
    typed = []
    for aval, layout in zip(outs, new, strict=True):
        sharding = explicit_part(NamedSharding(mesh, to_spec(layout)), aval.ndim) \
            if any(layout) else None
        typed.append(core.ShapedArray(aval.shape, aval.dtype, aval.weak_type, sharding))
    return typed


core.sharding_rules[:] = [_typed_outputs]
