"""Collectives over named axes (psum, pmean, pmax, pmin, all_gather, axis_index): the vmap rules.

A collective names an axis; the BatchTrace that introduced that name applies the reduction
(batching.collective_rules), every other trace passes it through untouched.
"""
from __future__ import annotations

import operator
from collections.abc import Hashable
from typing import Any

import numpy as np

from numbax._src import core, dtypes
from numbax._src import tree_util as tu
from numbax._src.core import Primitive, ShapedArray, get_aval
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxValueError
from numbax._src.interpreters import ad, batching
from numbax._src.lax import elementwise as ew
from numbax._src.lax import reductions, shape_ops


def _axis_names(axis_name: Any) -> tuple:
    names = axis_name if isinstance(axis_name, tuple) else (axis_name,)
    hash(names)  # an array or list is no axis name: TypeError (unhashable), as in JAX
    return names


def _listed(axis_name: Any) -> Any:
    """A list of axis names as the tuple of them (JAX's reductions take lists; parameters
    must hash)."""
    return tuple(axis_name) if isinstance(axis_name, list) else axis_name


def bound_axis_names() -> list:
    """The named axes of the enclosing vmaps (and pmaps), innermost last."""
    names = []
    for main in core._state.trace_stack:
        data = main.global_data
        if isinstance(data, batching.AxisData) and data.name is not None:
            names.append(data.name)
    return names


def _check_bound(api: str, axis_name: Any) -> None:
    bound = bound_axis_names()
    for name in _axis_names(axis_name):
        if name not in bound:
            raise NameError(
                f"{api}: unbound axis name: {name!r}. Collectives need an enclosing "
                f"vmap(..., axis_name={name!r}) or pmap(..., axis_name={name!r}); "
                f"bound names here: {bound or 'none'}."
            )


def check_axis(api: str, arg: str, axis: Any, ndim: int) -> int:
    """`axis` as an index in [0, ndim), or a NumbaxValueError naming the collective, the
    argument and the range (JAX's canonicalize_axis; an axis out of range used to wrap)."""
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise NumbaxValueError(
            f"lax.{api}: {arg} is {axis}, out of bounds for an operand of rank {ndim} there, "
            f"expected an axis in [{-ndim}, {ndim}). Pass an axis of the operand.")
    return axis % ndim


def _axis_main(name: Hashable) -> core.MainTrace:
    for main in reversed(core._state.trace_stack):
        data = main.global_data
        if isinstance(data, batching.AxisData) and data.name == name:
            return main
    raise NameError(f"unbound axis name: {name!r}")


class SpmdAxisTrace(core.Trace):
    """Marks a pmap axis while pmap traces the per-device program; it never holds tracers, so
    collectives over its axis are recorded in the jaxpr (and run by the pmap workers)."""


def _is_spmd(main: core.MainTrace) -> bool:
    return issubclass(main.trace_type, SpmdAxisTrace)


def _lift_to_axes(leaf: Any, axis_name: Any) -> Any:
    """Makes sure the collective reaches the traces of its axes, even for constants."""
    for name in _axis_names(axis_name):
        main = _axis_main(name)
        if _is_spmd(main):
            continue
        if not isinstance(leaf, core.Tracer) or leaf._trace.main.level < main.level:
            leaf = batching.BatchTracer(main.trace_type(main), leaf, None)
    return leaf


def _rest(axis_name: tuple, name: Hashable) -> tuple:
    return tuple(n for n in axis_name if n != name)


def _collective(name: str) -> Primitive:
    prim = Primitive(name)
    core.abstract_eval_rules[prim] = lambda x, **params: [x]

    def impl(x, **params):
        raise NameError(f"lax.{name}: unbound axis name {params['axis_name']!r}")

    core.impl_rules[prim] = impl
    batching.defvectorized(prim)
    return prim


psum_p = _collective("psum")
pmax_p = _collective("pmax")
pmin_p = _collective("pmin")


def _reducing_rule(prim: Primitive, reduce_fn, unbatched_fn):
    def rule(axis_data, vals, dims, *, axis_name):
        (x,), (d,) = vals, dims
        out = unbatched_fn(x, axis_data.size) if d is None else reduce_fn(x, (d,))
        rest = _rest(axis_name, axis_data.name)
        if rest:
            out = prim.bind(out, axis_name=rest)
        return [out], [None]

    batching.def_collective(prim, rule)


def _times_size(x, size):
    return ew.mul(x, np.array(size, dtype=get_aval(x).dtype))


_reducing_rule(psum_p, reductions.reduce_sum, _times_size)
_reducing_rule(pmax_p, reductions.reduce_max, lambda x, size: x)
_reducing_rule(pmin_p, reductions.reduce_min, lambda x, size: x)


def _extremum_jvp(prim: Primitive):
    # The tangent of the winner(s), averaged over ties (reduce_max's convention), via psum.
    def rule(primals, tangents, *, axis_name):
        (x,), (t,) = primals, tangents
        ans = prim.bind(x, axis_name=axis_name)
        hit = ew.convert_element_type(ew.eq(x, ans), get_aval(t).dtype)
        total = psum_p.bind(ew.mul(t, hit), axis_name=axis_name)
        count = psum_p.bind(hit, axis_name=axis_name)
        return [ans], [ew.div(total, count)]

    return rule


ad.jvp_rules[pmax_p] = _extremum_jvp(pmax_p)
ad.jvp_rules[pmin_p] = _extremum_jvp(pmin_p)
ad.deflinear(psum_p, lambda cts, x, *, axis_name: [
    psum_p.bind(_lift_to_axes(cts[0], axis_name), axis_name=axis_name)])


# psum of several operands at once: one exchange instead of one per operand. numbax binds it
# only where the SPMD engine fuses a program's independent psums (parallel/spmd.py), so that a
# pmean of a gradient pytree costs one round of barriers.
psum_many_p = Primitive("psum_many", multiple_results=True)
core.abstract_eval_rules[psum_many_p] = lambda *xs, axis_name: list(xs)


def _psum_many_impl(*xs, axis_name):
    raise NameError(f"lax.psum_many: unbound axis name {axis_name!r}")


def _psum_many_collective(axis_data, vals, dims, *, axis_name):
    psum_rule = batching.collective_rules[psum_p]
    outs = [psum_rule(axis_data, [v], [d], axis_name=axis_name)[0][0]
            for v, d in zip(vals, dims, strict=True)]
    return outs, [None] * len(outs)


def _psum_many_batch(size, vals, dims, *, axis_name):
    return psum_many_p.bind(*vals, axis_name=axis_name), list(dims)


core.impl_rules[psum_many_p] = _psum_many_impl
batching.def_collective(psum_many_p, _psum_many_collective)
batching.batch_rules[psum_many_p] = _psum_many_batch
ad.deflinear(psum_many_p, lambda cts, *xs, axis_name: psum_many_p.bind(
    *[ad.instantiate_zeros(c) for c in cts], axis_name=axis_name))


def _count_bools(leaf: Any) -> Any:
    """Booleans are summed as int32 counts (JAX's psum), not reduced with logical or."""
    if get_aval(leaf).dtype == np.bool_:
        return ew.convert_element_type(leaf, np.int32)
    return leaf


def _member_rows(axis_name: Any, groups: Any) -> np.ndarray:
    """rows[i, j]: whether members i and j share a group of axis_index_groups."""
    size = axis_size(axis_name)
    groups = [[int(i) for i in g] for g in groups]
    if sorted(i for g in groups for i in g) != list(range(size)):
        raise ValueError(
            f"axis_index_groups has {groups}, expected groups covering every index of axis "
            f"{axis_name!r} (size {size}) exactly once.")
    rows = np.zeros((size, size), np.bool_)
    for g in groups:
        rows[np.ix_(g, g)] = True
    return rows


def _grouped(api: str, leaf: Any, axis_name: Any, groups: Any, kind: str) -> Any:
    """A reduction within each member's group: every member's value, gathered, masked to
    its group and reduced (all_gather and axis_index run under vmap and pmap alike)."""
    if isinstance(axis_name, tuple) and len(axis_name) != 1:
        raise NotImplementedError(f"{api}: axis_index_groups needs a single axis name.")
    name = _axis_names(axis_name)[0]
    rows = _member_rows(name, groups)
    gathered = all_gather(leaf, name)
    aval = get_aval(gathered)
    from numbax._src.lax import indexing  # indexing sits beside this module

    mine = indexing.dynamic_index_in_dim(rows, axis_index(name), 0, keepdims=False)
    mask = shape_ops.broadcast_in_dim(mine, aval.shape, (0,))
    if kind == "sum":
        fill, reduce = 0, reductions.reduce_sum
    else:  # the identity of the reduction: the dtype's lowest (max) or highest (min) value
        k = kind_of(aval.dtype)
        if k == "b":
            low, high = False, True
        elif k in "iu":
            low, high = np.iinfo(aval.dtype).min, np.iinfo(aval.dtype).max
        else:
            low, high = -np.inf, np.inf
        fill, reduce = (low, reductions.reduce_max) if kind == "max" else \
            (high, reductions.reduce_min)
    picked = ew.select(mask, gathered, shape_ops.full(aval.shape, fill, aval.dtype))
    return reduce(picked, (0,))


def psum(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """Sum of x over the named mapped axis (every example receives the total, or the total
    of its group in axis_index_groups); booleans are counted (an int32 sum), as in JAX."""
    axis_name = _listed(axis_name)
    _check_bound("psum", axis_name)
    if axis_index_groups is not None:
        return tu.tree_map(lambda leaf: _grouped("psum", _count_bools(leaf), axis_name,
                                                 axis_index_groups, "sum"), x)
    names = _axis_names(axis_name)
    return tu.tree_map(lambda leaf: psum_p.bind(_lift_to_axes(_count_bools(leaf), axis_name),
                                                axis_name=names), x)


def pmean(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """Mean of x over the named mapped axis (or over each member's group)."""
    axis_name = _listed(axis_name)
    _check_bound("pmean", axis_name)
    if axis_index_groups is not None:
        counts = _member_rows(_axis_names(axis_name)[0], axis_index_groups).sum(1)
        from numbax._src.lax import indexing

        size = indexing.dynamic_index_in_dim(counts, axis_index(_axis_names(axis_name)[0]),
                                             0, keepdims=False)
    else:
        size = axis_size(axis_name)

    def mean(leaf):
        total = psum(leaf, axis_name, axis_index_groups=axis_index_groups)
        dtype = get_aval(total).dtype
        if not dtypes.is_inexact(dtype):
            total = ew.convert_element_type(total, dtypes.default_float_dtype())
            dtype = get_aval(total).dtype
        return ew.div(total, ew.convert_element_type(size, dtype))

    return tu.tree_map(mean, x)


def pmax(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """Maximum of x over the named mapped axis (or over each member's group)."""
    axis_name = _listed(axis_name)
    _check_bound("pmax", axis_name)
    if axis_index_groups is not None:
        return tu.tree_map(lambda leaf: _grouped("pmax", leaf, axis_name, axis_index_groups,
                                                 "max"), x)
    names = _axis_names(axis_name)
    return tu.tree_map(
        lambda leaf: pmax_p.bind(_lift_to_axes(leaf, axis_name), axis_name=names), x)


def pmin(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """Minimum of x over the named mapped axis (or over each member's group)."""
    axis_name = _listed(axis_name)
    _check_bound("pmin", axis_name)
    if axis_index_groups is not None:
        return tu.tree_map(lambda leaf: _grouped("pmin", leaf, axis_name, axis_index_groups,
                                                 "min"), x)
    names = _axis_names(axis_name)
    return tu.tree_map(
        lambda leaf: pmin_p.bind(_lift_to_axes(leaf, axis_name), axis_name=names), x)


def axis_size(axis_name: Any) -> int:
    """The size of the named axis (the product, for several names)."""
    size = 1
    for name in _axis_names(axis_name):
        for main in core._state.trace_stack:
            data = main.global_data
            if isinstance(data, batching.AxisData) and data.name == name:
                size *= data.size
                break
        else:
            raise NameError(f"axis_size: unbound axis name: {name!r}")
    return size


# ----------------------------------------------------------------------------- all_gather

all_gather_p = Primitive("all_gather")


def _all_gather_abstract_eval(x: ShapedArray, *, axis_name, axis, tiled, axis_size) -> list:
    shape = list(x.shape)
    if tiled:
        shape[axis] *= axis_size
    else:
        shape.insert(axis, axis_size)
    return [ShapedArray(tuple(shape), x.dtype, x.weak_type)]


def _all_gather_collective(axis_data, vals, dims, *, axis_name, axis, tiled, axis_size):
    (x,), (d,) = vals, dims
    if d is None:
        x = batching.broadcast_batched(x, axis_data.size, axis)
    else:
        x = batching.moveaxis(x, d, axis)
    if tiled:
        shape = list(get_aval(x).shape)
        merged = shape[axis] * shape[axis + 1]
        x = shape_ops.reshape(x, (*shape[:axis], merged, *shape[axis + 2:]))
    return [x], [None]


def _all_gather_batch(size, vals, dims, *, axis_name, axis, tiled, axis_size):
    (x,), (d,) = vals, dims
    x = batching.moveaxis(x, d, 0)
    out = all_gather_p.bind(x, axis_name=axis_name, axis=axis + 1, tiled=tiled,
                            axis_size=axis_size)
    return [out], [0]


core.abstract_eval_rules[all_gather_p] = _all_gather_abstract_eval
batching.def_collective(all_gather_p, _all_gather_collective)
batching.batch_rules[all_gather_p] = _all_gather_batch
ad.deflinear(all_gather_p, lambda cts, x, **params: [_all_gather_transpose(cts[0], x, **params)])


def _all_gather_transpose(ct, x, *, axis_name, axis, tiled, axis_size):
    # Each example's slice of the gathered cotangent, summed over the examples that received it.
    total = psum_p.bind(_lift_to_axes(ct, axis_name), axis_name=(axis_name,))
    index = axis_index(axis_name)
    from numbax._src.lax import indexing

    size = x.aval.shape
    if tiled:
        return indexing.dynamic_slice_in_dim(total, ew.mul(index, np.array(
            size[axis], get_aval(index).dtype)), size[axis], axis)
    return indexing.dynamic_index_in_dim(total, index, axis, keepdims=False)


def all_gather(x: Any, axis_name: Hashable, *, axis_index_groups: Any = None, axis: int = 0,
               tiled: bool = False, to: str = "varying") -> Any:
    """Stacks (or concatenates, tiled=True) x from every example of the named axis. `to`
    (shard_map's typing of the result) has no effect on values."""
    _check_bound("all_gather", axis_name)
    if axis_index_groups is not None:
        raise NotImplementedError("lax.all_gather: axis_index_groups is not supported; pass "
                                  "None (gather the whole axis).")
    size = axis_size(axis_name)

    def gather(leaf):
        ndim = get_aval(leaf).ndim
        ax = check_axis("all_gather", "axis", axis, ndim + (0 if tiled else 1))
        return all_gather_p.bind(_lift_to_axes(leaf, axis_name), axis_name=axis_name, axis=ax,
                                 tiled=bool(tiled), axis_size=size)

    return tu.tree_map(gather, x)


# ----------------------------------------------------------------------------- axis_index

axis_index_p = Primitive("axis_index")


def _axis_index_abstract_eval(*, axis_name) -> list:
    return [ShapedArray((), dtypes.default_int_dtype())]


def _axis_index_impl(*, axis_name):
    raise NameError(f"lax.axis_index: unbound axis name {axis_name!r}")


core.abstract_eval_rules[axis_index_p] = _axis_index_abstract_eval
core.impl_rules[axis_index_p] = _axis_index_impl
ad.jvp_rules[axis_index_p] = lambda primals, tangents, **params: (
    [axis_index_p.bind(**params)], [ad.Zero(ShapedArray((), dtypes.float0))])
# axis_index has no operands, so no enclosing vmap can batch it: its value is per device.
batching.batch_rules[axis_index_p] = lambda size, vals, dims, **params: (
    [axis_index_p.bind(**params)], [None])
batching.axis_readers.add(axis_index_p)


def _axis_index_bind(*, axis_name) -> list:
    """axis_index's trace is the vmap that owns its name, not one found from operands (it has
    none): there, an iota batched along the axis. While a body inside that vmap is traced (a
    loop's, a branch's) the equation is recorded instead, and the loop's batching rule, which
    evaluates the body under the same name, comes back here."""
    names = _axis_names(axis_name)
    main = _axis_main(names[0]) if len(names) == 1 and names[0] in bound_axis_names() else None
    dynamic = core._state.dynamic_trace
    if main is not None and not _is_spmd(main) and (dynamic is None or
                                                     dynamic.level < main.level):
        index = shape_ops.iota(dtypes.default_int_dtype(), main.global_data.size)
        return [batching.BatchTracer(main.trace_type(main), index, 0)]
    top = core.find_top_trace(())
    return [core.full_lower(out) for out in top.process_primitive(axis_index_p, [],
                                                                  {"axis_name": axis_name})]


core.operandless_binds[axis_index_p] = _axis_index_bind


def axis_index(axis_name: Hashable) -> Any:
    """The position of the current example along the named axis (several names: the
    row-major position over them, the first name outermost)."""
    _check_bound("axis_index", axis_name)
    names = _axis_names(axis_name)
    if len(names) > 1:
        if all(_is_spmd(_axis_main(n)) for n in names):
            return axis_index_p.bind(axis_name=names)
        index = axis_index(names[0])
        for name in names[1:]:
            size = np.array(axis_size(name), dtypes.default_int_dtype())
            index = ew.add(ew.mul(index, size), axis_index(name))
        return index
    return axis_index_p.bind(axis_name=names[0])


# ----------------------------------------------------------------------------- ppermute

ppermute_p = Primitive("ppermute")
core.abstract_eval_rules[ppermute_p] = lambda x, *, axis_name, perm: [x]


def _ppermute_impl(x, *, axis_name, perm):
    raise NameError(f"lax.ppermute: unbound axis name {axis_name!r}")


def _ppermute_collective(axis_data, vals, dims, *, axis_name, perm):
    (x,), (d,) = vals, dims
    if d is None:
        x, d = batching.broadcast_batched(x, axis_data.size, 0), 0
    sources = {dst: src for src, dst in perm}
    pieces = []
    for dst in range(axis_data.size):
        if dst in sources:
            pieces.append(shape_ops.slice_in_dim(x, sources[dst], sources[dst] + 1, axis=d))
        else:
            shape = list(get_aval(x).shape)
            shape[d] = 1
            zero = np.zeros((), get_aval(x).dtype)
            pieces.append(shape_ops.broadcast_in_dim(zero, tuple(shape), ()))
    out = shape_ops.concatenate(pieces, d)
    rest = _rest(_axis_names(axis_name), axis_data.name)
    if rest:
        out = ppermute_p.bind(out, axis_name=rest, perm=perm)
    return [out], [d]


def _ppermute_transpose(cts, x, *, axis_name, perm):
    inverse = tuple((dst, src) for src, dst in perm)
    return [ppermute_p.bind(_lift_to_axes(cts[0], axis_name), axis_name=axis_name, perm=inverse)]


core.impl_rules[ppermute_p] = _ppermute_impl
batching.defvectorized(ppermute_p)
batching.def_collective(ppermute_p, _ppermute_collective)
ad.deflinear(ppermute_p, _ppermute_transpose)


def perm_pairs(api: str, axis_name: Any, perm: Any) -> tuple:
    """perm as (source, destination) pairs of ints, each source and each destination at most
    once and inside the axis (ppermute's, psend's and precv's check)."""
    size = axis_size(axis_name)
    pairs = tuple((int(src), int(dst)) for src, dst in perm)
    srcs, dsts = [p[0] for p in pairs], [p[1] for p in pairs]
    if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts) or any(
            not 0 <= i < size for i in srcs + dsts):
        raise NumbaxValueError(
            f"{api}: perm has pairs {list(pairs)}, expected (source, destination) pairs of "
            f"distinct indices in [0, {size}) for axis {axis_name!r}. Give each source and "
            "each destination at most once.")
    return pairs


def ppermute(x: Any, axis_name: Any, perm: Any) -> Any:
    """Sends x from device src to device dst for each (src, dst) pair; others receive zeros."""
    _check_bound("ppermute", axis_name)
    pairs = perm_pairs("ppermute", axis_name, perm)
    # over several axes, positions run row-major in the order the axes are bound (a mesh's
    # order), whatever order the names are given in, as JAX's ppermute numbers them
    bound = bound_axis_names()
    names = tuple(sorted(_axis_names(axis_name), key=bound.index))
    return tu.tree_map(
        lambda leaf: ppermute_p.bind(_lift_to_axes(leaf, axis_name), axis_name=names, perm=pairs),
        x)


# ----------------------------------------------------------------------------- psum_scatter

psum_scatter_p = Primitive("psum_scatter")


def _psum_scatter_abstract_eval(x: ShapedArray, *, axis_name, scatter_dimension, tiled,
                                axis_size) -> list:
    shape = list(x.shape)
    if tiled:
        shape[scatter_dimension] //= axis_size
    else:
        del shape[scatter_dimension]
    return [ShapedArray(tuple(shape), x.dtype, x.weak_type)]


def _psum_scatter_impl(x, **params):
    raise NameError(f"lax.psum_scatter: unbound axis name {params['axis_name']!r}")


def _psum_scatter_collective(axis_data, vals, dims, *, axis_name, scatter_dimension, tiled,
                             axis_size):
    (x,), (d,) = vals, dims
    total = _times_size(x, axis_data.size) if d is None else reductions.reduce_sum(x, (d,))
    shape = list(get_aval(total).shape)
    if tiled:
        n = shape[scatter_dimension]
        shape[scatter_dimension:scatter_dimension + 1] = [axis_data.size, n // axis_data.size]
        total = shape_ops.reshape(total, tuple(shape))
    return [total], [scatter_dimension]


def _psum_scatter_batch(size, vals, dims, *, axis_name, scatter_dimension, tiled, axis_size):
    (x,), (d,) = vals, dims
    x = batching.moveaxis(x, d, 0)
    out = psum_scatter_p.bind(x, axis_name=axis_name, scatter_dimension=scatter_dimension + 1,
                              tiled=tiled, axis_size=axis_size)
    return [out], [0]


def _psum_scatter_transpose(cts, x, *, axis_name, scatter_dimension, tiled, axis_size):
    return [all_gather_p.bind(_lift_to_axes(cts[0], axis_name), axis_name=axis_name,
                              axis=scatter_dimension, tiled=tiled,
                              axis_size=axis_size)]


core.abstract_eval_rules[psum_scatter_p] = _psum_scatter_abstract_eval
core.impl_rules[psum_scatter_p] = _psum_scatter_impl
batching.def_collective(psum_scatter_p, _psum_scatter_collective)
batching.batch_rules[psum_scatter_p] = _psum_scatter_batch
ad.deflinear(psum_scatter_p, _psum_scatter_transpose)


def psum_scatter(x: Any, axis_name: Hashable, *, scatter_dimension: int = 0,
                 axis_index_groups: Any = None, tiled: bool = False) -> Any:
    """psum, then each device keeps its own slice of the sum along scatter_dimension."""
    _check_bound("psum_scatter", axis_name)
    if axis_index_groups is not None:
        raise NotImplementedError("lax.psum_scatter: axis_index_groups is not supported; "
                                  "pass None.")
    size = axis_size(axis_name)

    def scatter(leaf):
        shape = get_aval(leaf).shape
        dim = check_axis("psum_scatter", "scatter_dimension", scatter_dimension,
                         len(shape)) if shape else 0
        length = shape[dim] if shape else None
        ok = length is not None and (length % size == 0 if tiled else length == size)
        if not ok:
            expected = f"a multiple of {size}" if tiled else f"{size}"
            raise ValueError(
                f"psum_scatter: x has shape {shape}, expected dimension {scatter_dimension} of "
                f"size {expected} (the size of axis {axis_name!r}). Reshape x or use "
                "tiled=True.")
        return psum_scatter_p.bind(_lift_to_axes(leaf, axis_name), axis_name=axis_name,
                                   scatter_dimension=dim, tiled=bool(tiled), axis_size=size)

    return tu.tree_map(scatter, x)
