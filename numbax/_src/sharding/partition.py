"""A small SPMD partitioner for jit on sharded arguments: the global jaxpr rewritten as one
per-device program over each device's blocks, with collectives where the math needs them.

Each equation runs on blocks when its operands' layouts allow it: elementwise operations on
equally laid out operands (a replicated operand is sliced to the block the others have),
broadcasts, transposes, reshapes that keep the split dimension outermost, reductions (a
reduced split dimension adds a psum/pmax/pmin over its mesh axes), dot_general (a split
contracting dimension adds a psum), sharding constraints that split further, shard_map bodies
(inlined), and anything whose operands are replicated (computed on every device). Anything else
would need a device's block of another device's data (a gather): `localize` raises NeedsGather
and jit runs the global program in one process instead (docs/sharp_bits.md); with one global
buffer per array that needs no data movement."""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax._src import core, dtypes
from numbax._src.compiler import registry
from numbax._src.custom_derivatives import stop_gradient_p
from numbax._src.interpreters import partial_eval as pe
from numbax._src.lax import convert, dot, indexing, reductions, shape_ops, sharding_ops
from numbax._src.lax import elementwise as ew
from numbax._src.lax import parallel as lparallel
from numbax._src.lax import select as lselect
from numbax._src.lax import shard_map as lsm
from numbax._src.sharding import rules
from numbax._src.sharding.rules import Layout, layout_of


class NeedsGather(Exception):  # noqa: N818 - a signal, caught by the jit path
    """This program cannot run block by block without moving another device's data."""


def propagate(jaxpr: core.Jaxpr, in_layouts: Sequence[Layout], sizes: dict) -> list[Layout]:
    """The layouts of the outputs of `jaxpr` (the rules, not strict)."""
    env: dict = {}

    def read(v):
        return ((),) * v.aval.ndim if isinstance(v, core.Literal) else env[v]

    for v, lay in zip(jaxpr.invars, in_layouts, strict=True):
        env[v] = lay
    for v in jaxpr.constvars:
        env[v] = ((),) * v.aval.ndim
    for eqn in jaxpr.eqns:
        avals = [v.aval for v in eqn.invars]
        outs = rules.apply(eqn.primitive, avals, [read(v) for v in eqn.invars], eqn.params,
                           [v.aval for v in eqn.outvars], mesh_sizes=sizes)
        for v, lay in zip(eqn.outvars, outs, strict=True):
            env[v] = lay
    return [read(v) for v in jaxpr.outvars]


# ----------------------------------------------------------------------------- per-device program


class _Local:
    """The rewrite of one global jaxpr for a mesh: values are (block, layout) pairs."""

    def __init__(self, mesh) -> None:
        self.mesh = mesh
        self.sizes = dict(zip(mesh.axis_names, mesh.axis_sizes, strict=True))

    def factor(self, names: tuple) -> int:
        return math.prod(self.sizes[n] for n in names)

    def block_shape(self, shape: tuple, layout: Layout) -> tuple:
        return tuple(s // self.factor(e) for s, e in zip(shape, layout, strict=True))

    def relayout(self, x: Any, have: Layout, want: Layout) -> Any:
        """x (laid out `have`) laid out `want`: only splitting replicated dimensions."""
        for d, (h, w) in enumerate(zip(have, want, strict=True)):
            if h == w:
                continue
            if h:
                raise NeedsGather(f"dimension {d} split over {h} is wanted over {w or 'none'}")
            size = core.get_aval(x).shape[d] // self.factor(w)
            index = lparallel.axis_index(w if len(w) > 1 else w[0])
            start = ew.mul(index, np.array(size, dtypes.default_int_dtype()))
            x = indexing.dynamic_slice_in_dim(x, start, size, d)
        return x

    def consensus(self, layouts: Sequence[Layout]) -> Layout:
        ndim = max(len(lay) for lay in layouts)
        out = []
        for d in range(ndim):
            named = {lay[d] for lay in layouts if len(lay) == ndim and lay[d]}
            if len(named) > 1:
                raise NeedsGather(f"operands split dimension {d} differently: {sorted(named)}")
            out.append(named.pop() if named else ())
        if len({n for e in out for n in e}) != sum(len(e) for e in out):
            raise NeedsGather("one mesh axis would split two dimensions")
        return tuple(out)


def _elementwise(loc: _Local, eqn, vals, lays):
    target = loc.consensus(lays)
    vals = [loc.relayout(v, lay, target) if len(lay) == len(target) else v
            for v, lay in zip(vals, lays, strict=True)]
    return core.bind(eqn.primitive, *vals, **eqn.params), [target] * len(eqn.outvars)


def _replicated(loc: _Local, eqn, vals, lays):
    if any(any(lay) for lay in lays):
        raise NeedsGather(f"{eqn.primitive.name} of split operands")
    return core.bind(eqn.primitive, *vals, **eqn.params), \
        [((),) * v.aval.ndim for v in eqn.outvars]


def _broadcast_in_dim(loc: _Local, eqn, vals, lays):
    (out_aval,) = [v.aval for v in eqn.outvars]
    (lay,) = rules.apply(eqn.primitive, [v.aval for v in eqn.invars], lays, eqn.params,
                         [out_aval], mesh_sizes=loc.sizes)
    params = dict(eqn.params, shape=loc.block_shape(out_aval.shape, lay))
    return core.bind(eqn.primitive, *vals, **params), [lay]


def _reshape(loc: _Local, eqn, vals, lays):
    (out_aval,) = [v.aval for v in eqn.outvars]
    (lay,) = rules.apply(eqn.primitive, [v.aval for v in eqn.invars], lays, eqn.params,
                         [out_aval], mesh_sizes=loc.sizes)
    if sum(len(e) for e in lay) != sum(len(e) for e in lays[0]):
        raise NeedsGather("a reshape merges or splits a split dimension")
    params = dict(eqn.params, new_sizes=loc.block_shape(out_aval.shape, lay))
    return core.bind(eqn.primitive, *vals, **params), [lay]


def _same_params(loc: _Local, eqn, vals, lays):
    outs = rules.apply(eqn.primitive, [v.aval for v in eqn.invars], lays, eqn.params,
                       [v.aval for v in eqn.outvars], mesh_sizes=loc.sizes)
    return core.bind(eqn.primitive, *vals, **eqn.params), outs


_COLLECTIVE = {reductions.reduce_sum_p: lparallel.psum, reductions.reduce_max_p: lparallel.pmax,
               reductions.reduce_min_p: lparallel.pmin}


def _reduce(loc: _Local, eqn, vals, lays):
    (lay,) = lays
    names = tuple(n for a in eqn.params["axes"] for n in lay[a])
    if names and eqn.primitive not in _COLLECTIVE:
        raise NeedsGather(f"{eqn.primitive.name} over a split dimension")
    (out,) = core.bind(eqn.primitive, *vals, **eqn.params)
    if names:
        out = _COLLECTIVE[eqn.primitive](out, names)
    kept = tuple(e for i, e in enumerate(lay) if i not in set(eqn.params["axes"]))
    return [out], [kept]


def _dot_general(loc: _Local, eqn, vals, lays):
    (lhs, rhs), (ll, rl) = vals, lays
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    lwant, rwant = list(ll), list(rl)
    summed: list = []
    for i, j in [*zip(lb, rb, strict=True), *zip(lc, rc, strict=True)]:
        if ll[i] and rl[j] and ll[i] != rl[j]:
            raise NeedsGather("dot_general operands split a paired dimension differently")
        lwant[i] = rwant[j] = ll[i] or rl[j]
    for i in lc:
        summed.extend(lwant[i])
    lhs = loc.relayout(lhs, ll, tuple(lwant))
    rhs = loc.relayout(rhs, rl, tuple(rwant))
    lfree = [lwant[i] for i in range(len(ll)) if i not in (*lc, *lb)]
    rfree = [rwant[j] for j in range(len(rl)) if j not in (*rc, *rb)]
    out_lay = (*[lwant[i] for i in lb], *lfree, *rfree)
    if len({n for e in out_lay for n in e}) != sum(len(e) for e in out_lay):
        raise NeedsGather("one mesh axis would split two dimensions of the product")
    (out,) = core.bind(eqn.primitive, lhs, rhs, **eqn.params)
    if summed:
        out = lparallel.psum(out, tuple(summed))
    return [out], [out_lay]


def _concatenate(loc: _Local, eqn, vals, lays):
    dim = eqn.params["dimension"]
    target = list(loc.consensus(lays))
    if target[dim]:
        raise NeedsGather("concatenate along a split dimension")
    vals = [loc.relayout(v, lay, tuple(target)) for v, lay in zip(vals, lays, strict=True)]
    return core.bind(eqn.primitive, *vals, **eqn.params), [tuple(target)]


def _constraint(loc: _Local, eqn, vals, lays):
    want = layout_of(eqn.params["sharding"], eqn.invars[0].aval.ndim)
    return [loc.relayout(vals[0], lays[0], want)], [want]


def _shard_map(loc: _Local, eqn, vals, lays):
    p = eqn.params
    if p["mesh"] != loc.mesh:
        raise NeedsGather("a shard_map over another mesh")
    want = [layout_of(rules.NamedSharding(loc.mesh, s), v.aval.ndim)
            for s, v in zip(p["in_specs"], eqn.invars, strict=True)]
    vals = [loc.relayout(v, h, w) for v, h, w in zip(vals, lays, want, strict=True)]
    outs = core.eval_jaxpr(p["jaxpr"].jaxpr, p["jaxpr"].consts, *vals)
    return outs, [layout_of(rules.NamedSharding(loc.mesh, s), v.aval.ndim)
                  for s, v in zip(p["out_specs"], eqn.outvars, strict=True)]


_LOCAL = {
    shape_ops.broadcast_in_dim_p: _broadcast_in_dim,
    shape_ops.reshape_p: _reshape,
    shape_ops.transpose_p: _same_params,
    shape_ops.squeeze_p: _same_params,
    shape_ops.concatenate_p: _concatenate,
    shape_ops.copy_p: _elementwise,
    convert.convert_element_type_p: _elementwise,
    lselect.select_n_p: _elementwise,
    stop_gradient_p: _elementwise,
    dot.dot_general_p: _dot_general,
    sharding_ops.sharding_constraint_p: _constraint,
    lsm.shard_map_p: _shard_map,
}
for _p in _COLLECTIVE:
    _LOCAL[_p] = _reduce
for _p in (reductions.reduce_prod_p, reductions.reduce_and_p, reductions.reduce_or_p,
           reductions.reduce_xor_p, reductions.argmax_p, reductions.argmin_p):
    _LOCAL[_p] = _reduce


def _rule(prim: core.Primitive):
    found = _LOCAL.get(prim)
    if found is not None:
        return found
    entry = registry.lowering(prim, "cpu")
    if entry is not None and entry.fusion == registry.Fusion.ELEMENTWISE:
        return _elementwise
    return _replicated


def localize(closed: core.ClosedJaxpr, in_layouts: Sequence[Layout],
             mesh) -> tuple[core.ClosedJaxpr, list[Layout]]:
    """The per-device program of `closed` for inputs laid out by `in_layouts` on `mesh`, and
    the layouts of its outputs; NeedsGather when some equation cannot run on blocks."""
    loc = _Local(mesh)
    jaxpr = closed.jaxpr
    block_avals = [core.ShapedArray(loc.block_shape(v.aval.shape, lay), v.aval.dtype,
                                    v.aval.weak_type)
                   for v, lay in zip(jaxpr.invars, in_layouts, strict=True)]
    store: dict = {}

    def run(*blocks):
        env: dict = {}

        def read(v):
            if isinstance(v, core.Literal):
                return v.val, ((),) * v.aval.ndim
            return env[v]

        for v, c in zip(jaxpr.constvars, closed.consts, strict=True):
            env[v] = (c, ((),) * v.aval.ndim)
        for v, b, lay in zip(jaxpr.invars, blocks, in_layouts, strict=True):
            env[v] = (b, lay)
        for eqn in jaxpr.eqns:
            pairs = [read(v) for v in eqn.invars]
            outs, lays = _rule(eqn.primitive)(loc, eqn, [p[0] for p in pairs],
                                              [p[1] for p in pairs])
            for v, o, lay in zip(eqn.outvars, outs, lays, strict=True):
                env[v] = (o, lay)
        results = [read(v) for v in jaxpr.outvars]
        store["layouts"] = [r[1] for r in results]
        return [r[0] for r in results]

    with lsm.bound_axes(mesh, frozenset(mesh.axis_names)):
        local, consts = pe.trace_to_jaxpr_dynamic(run, block_avals)
    return pe.hoist_consts(core.ClosedJaxpr(local, consts)), store["layouts"]
