"""Collectives that move data between the members of a named axis: all_to_all (and
pswapaxes on it), pshuffle, pbroadcast, and pcast. They run under vmap with an axis name
(the BatchTrace naming the axis applies them); pmap support comes with the pmap runtime.
"""
from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax._src import core
from numbax._src import tree_util as tu
from numbax._src.core import Primitive, ShapedArray, get_aval
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import ad, batching
from numbax._src.lax import elementwise as ew
from numbax._src.lax import parallel, shape_ops

# ----------------------------------------------------------------------------- all_to_all

all_to_all_p = Primitive("all_to_all")


def _all_to_all_shape(shape: tuple, split_axis: int, concat_axis: int, tiled: bool,
                      size: int) -> tuple[int, ...]:
    out = list(shape)
    if tiled:
        out[split_axis] //= size
        out[concat_axis] *= size
        return tuple(out)
    del out[split_axis]
    out.insert(concat_axis, size)
    return tuple(out)


def _all_to_all_abstract_eval(x: ShapedArray, *, axis_index_groups, axis_name, axis_size,
                              concat_axis, split_axis, tiled) -> list:
    return [x.update(shape=_all_to_all_shape(x.shape, split_axis, concat_axis, tiled,
                                             axis_size))]


def _all_to_all_impl(x, *, axis_name, **params):
    raise NameError(f"lax.all_to_all: unbound axis name {axis_name!r}")


def _all_to_all_collective(axis_data, vals, dims, *, axis_index_groups, axis_name, axis_size,
                           concat_axis, split_axis, tiled):
    """Member i's piece j goes to member j: the mapped axis and the split pieces trade
    places, the former mapped axis landing at concat_axis. (One over several names is bound
    only over SPMD axes; a body run here takes it apart first, parallel/shard_map.py.)"""
    (x,), (d,) = vals, dims
    x = batching.bdim_at_front(x, d, axis_data.size)
    n = axis_data.size
    if tiled:
        shape = list(get_aval(x).shape)
        shape[1 + split_axis:2 + split_axis] = [n, shape[1 + split_axis] // n]
        x = batching.moveaxis(shape_ops.reshape(x, tuple(shape)), 1 + split_axis, 0)
        x = batching.moveaxis(x, 1, 1 + concat_axis)  # (j, ..., i, piece, ...)
        shape = list(get_aval(x).shape)
        shape[1 + concat_axis:3 + concat_axis] = [shape[1 + concat_axis] *
                                                  shape[2 + concat_axis]]
        return [shape_ops.reshape(x, tuple(shape))], [0]
    x = batching.moveaxis(x, 1 + split_axis, 0)  # (j, i, rest...)
    return [batching.moveaxis(x, 1, 1 + concat_axis)], [0]


def _all_to_all_batch(size, vals, dims, *, split_axis, concat_axis, **params):
    x = batching.bdim_at_front(vals[0], dims[0], size)
    out = all_to_all_p.bind(x, split_axis=split_axis + 1, concat_axis=concat_axis + 1,
                            **params)
    return [out], [0]


def _all_to_all_transpose(cts, x, *, split_axis, concat_axis, axis_name, **params):
    ct = parallel._lift_to_axes(ad.instantiate_zeros(cts[0]), axis_name)
    return [all_to_all_p.bind(ct, split_axis=concat_axis, concat_axis=split_axis,
                              axis_name=axis_name, **params)]


core.abstract_eval_rules[all_to_all_p] = _all_to_all_abstract_eval
core.impl_rules[all_to_all_p] = _all_to_all_impl
batching.def_collective(all_to_all_p, _all_to_all_collective)
batching.batch_rules[all_to_all_p] = _all_to_all_batch
ad.deflinear(all_to_all_p, _all_to_all_transpose)


def _names(api: str, axis_name: Any) -> tuple:
    """axis_name as a non-empty tuple of names."""
    names = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)
    if not names:
        raise NumbaxValueError(f"{api}: axis_name is {axis_name!r}, expected an axis name or "
                               "a non-empty tuple of them. Name the axes to exchange over.")
    return names


def _no_groups(api: str, axis_index_groups: Any) -> None:
    if axis_index_groups is not None:
        raise NotImplementedError(
            f"{api}: axis_index_groups is not supported under vmap; pass None.")


def all_to_all(x: Any, axis_name: Any, split_axis: int, concat_axis: int, *,
               axis_index_groups: Any = None, tiled: bool = False) -> Any:
    """Each member splits x along split_axis into one piece per member and sends piece j
    to member j; the received pieces are stacked (or, tiled, concatenated) along
    concat_axis, ordered by sender.

    Args:
      x: array(s) with a mapped axis named axis_name.
      axis_name: the named axis, or a tuple of them: the members are then numbered row-major
        over the names in the order given (the first name outermost), as in JAX.
      split_axis: the axis of x cut into pieces (its size must equal the axis size, or be
        a multiple of it when tiled).
      concat_axis: where the pieces land in the output.
      axis_index_groups: only None (all members) is supported.
      tiled: concatenate pieces along concat_axis instead of adding an axis.

    Returns:
      The exchanged array(s).
    """
    api = "lax.all_to_all"
    _no_groups(api, axis_index_groups)
    names = _names(api, axis_name)
    parallel._check_bound("all_to_all", names)
    name = names[0] if len(names) == 1 else names
    size = parallel.axis_size(names)
    # over several axes of the SPMD engine: one exchange; an axis of a vmap among them: one
    # exchange per name (vmap's rule trades one axis)
    whole = len(names) == 1 or all(parallel._is_spmd(parallel._axis_main(n)) for n in names)

    def exchange(leaf):
        shape = get_aval(leaf).shape
        ndim = len(shape)
        split = parallel.check_axis("all_to_all", "split_axis", split_axis, ndim) if ndim else 0
        concat = parallel.check_axis("all_to_all", "concat_axis", concat_axis, ndim) if ndim \
            else 0
        if not ndim or (shape[split] % size if tiled else shape[split] != size):
            raise NumbaxValueError(
                f"all_to_all requires the size of the mapped axis {name!r} to "
                f"{'divide' if tiled else 'equal'} x.shape[split_axis], but they are {size} "
                f"and {shape[split] if ndim else None} respectively.")
        if not whole:
            return exchange_axes(leaf, names, split, concat, bool(tiled))
        return all_to_all_p.bind(
            parallel._lift_to_axes(leaf, name), axis_index_groups=None, axis_name=name,
            axis_size=size, concat_axis=concat, split_axis=split, tiled=bool(tiled))

    return tu.tree_map(exchange, x)


def exchange_axes(x: Any, names: tuple, split: int, concat: int, tiled: bool) -> Any:
    """all_to_all over several named axes as one over each name: the split axis is cut into
    one axis per name (the first name's outermost), each traded in place for that name's
    senders, and the senders' axes, merged again, move to concat (tiled: merged into it).
    Member m's piece of sender r passes through the members that agree with r on the names
    already traded and with m on the others."""
    sizes = [parallel.axis_size(n) for n in names]
    total = math.prod(sizes)
    shape = get_aval(x).shape
    if tiled:  # the pieces as an axis of their own, concatenated at the end
        shape = (*shape[:split], total, shape[split] // total, *shape[split + 1:])
        x = shape_ops.reshape(x, shape)
    x = shape_ops.reshape(x, (*shape[:split], *sizes, *shape[split + 1:]))
    for k, name in enumerate(names):
        x = all_to_all(x, name, split + k, split + k)
    x = batching.moveaxis(shape_ops.reshape(x, shape), split, concat)
    if tiled:
        out = get_aval(x).shape
        x = shape_ops.reshape(x, (*out[:concat], out[concat] * out[concat + 1],
                                  *out[concat + 2:]))
    return x


def pswapaxes(x: Any, axis_name: Any, axis: int, *, axis_index_groups: Any = None) -> Any:
    """Swaps the named mapped axis with x's `axis` (of the same size):
    all_to_all(x, axis_name, axis, axis)."""
    return all_to_all(x, axis_name, axis, axis, axis_index_groups=axis_index_groups)


def pshuffle(x: Any, axis_name: Any, perm: Sequence[int]) -> Any:
    """Member i receives x from member perm[i] (perm a permutation of the members)."""
    perm = [operator.index(p) for p in perm]
    if sorted(perm) != list(range(len(perm))):
        raise NumbaxValueError(f"`perm` does not represent a permutation: {perm}")
    return parallel.ppermute(x, axis_name, list(zip(perm, range(len(perm)), strict=True)))


def pbroadcast(x: Any, axis_name: Any, source: int) -> Any:
    """Every member receives the x of member `source`."""
    source = operator.index(source)
    size = parallel.axis_size(axis_name)
    if not 0 <= source < size:
        raise NumbaxValueError(
            f"lax.pbroadcast: source is {source}, expected a member index in [0, {size}).")
    index = parallel.axis_index(axis_name)

    def broadcast(leaf):
        aval = get_aval(leaf)
        mine = ew.eq(index, np.array(source, get_aval(index).dtype))
        zeros = shape_ops.full(aval.shape, 0, aval.dtype)
        picked = ew.select(shape_ops.broadcast_in_dim(mine, aval.shape, ()), leaf, zeros)
        total = parallel.psum(picked, axis_name)
        if aval.dtype == np.bool_:
            total = ew.ne(total, np.array(0, get_aval(total).dtype))
        return total

    return tu.tree_map(broadcast, x)


_PCAST_TO = ("unreduced", "reduced", "varying")


def pcast(x: Any, axis_name: Any, *, to: str) -> Any:
    """Changes how JAX's shard_map types x along axis_name (varying, reduced, unreduced).
    numbax does not track those types, so the value is returned unchanged.

    >>> pcast(1.0, (), to="varying")
    1.0
    """
    if isinstance(axis_name, (set, frozenset)):
        raise NumbaxTypeError(f"axis_name={axis_name!r} must be a tuple or a str. "
                              f"Got {axis_name}")
    if not axis_name:
        return x
    if to not in _PCAST_TO:
        raise NumbaxValueError(
            f"Got unexpected `to` value. Allowed `to` values are: {set(_PCAST_TO)}")
    for name in axis_name if isinstance(axis_name, tuple) else (axis_name,):
        parallel._check_bound("pcast", name)
    return x

