"""Index maps: where broadcast_in_dim, slice, squeeze and reshapes that only add or drop size-1
axes read their operand, as one `AxisRead` per operand axis, and `index_map_p`, any such map
(numbax-internal: the CPU compiler composes chains of those primitives into one, so that
`a[..., i, j]`, a slice and a squeeze, is one load in the loop that reads it).

An output element at index z reads, along operand axis i, element `start + stride * z[dim]`
(stride 0: `start`, whatever the index). Strides are never negative."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from numbax._src import core
from numbax._src.core import JaxprEqn, Primitive, ShapedArray
from numbax._src.errors import NumbaxValueError
from numbax._src.interpreters import ad, batching
from numbax._src.lax import reductions
from numbax._src.lax import shape_ops as ls


class AxisRead(NamedTuple):
    """Where an index map reads one axis of its operand: `start + stride * i`, i the loop's
    index along output dimension `dim`, or element `start` when `stride` is 0 (a broadcast's
    size-1 axis keeps its `dim`; an axis squeezed away has none)."""

    dim: int | None
    start: int = 0
    stride: int = 1

    @property
    def plain(self) -> bool:
        """Whether the axis reads the loop's own index along `dim` (no offset, no stride)."""
        return self.dim is not None and self.start == 0 and self.stride == 1


def broadcast_reads(in_shape: tuple, broadcast_dimensions: tuple) -> tuple[AxisRead, ...]:
    # a size-1 axis reads element 0 (also where the output's axis has size 1), so generated
    # source depends on which axes are broadcast, never on the sizes
    return tuple(AxisRead(d, 0, 0) if in_shape[i] == 1 else AxisRead(d)
                 for i, d in enumerate(broadcast_dimensions))


def slice_reads(start_indices: tuple, strides: tuple | None) -> tuple[AxisRead, ...]:
    strides = strides or (1,) * len(start_indices)
    return tuple(AxisRead(d, int(start), int(stride))
                 for d, (start, stride) in enumerate(zip(start_indices, strides, strict=True)))


def unit_axes_reads(in_shape: tuple, out_shape: tuple) -> tuple[AxisRead, ...] | None:
    """The reads of a reshape that only adds or drops size-1 axes (a squeeze, expand_dims),
    or None for any other reshape."""
    kept_in = [i for i, n in enumerate(in_shape) if n != 1]
    kept_out = [d for d, n in enumerate(out_shape) if n != 1]
    if [in_shape[i] for i in kept_in] != [out_shape[d] for d in kept_out]:
        return None
    to_out = dict(zip(kept_in, kept_out, strict=True))
    return tuple(AxisRead(to_out[i]) if i in to_out else AxisRead(None, 0, 0)
                 for i in range(len(in_shape)))


def compose(outer: tuple[AxisRead, ...], inner: tuple[AxisRead, ...]) -> tuple[AxisRead, ...]:
    """The reads of `inner` applied to the result of `outer` (an index map of inner's output):
    one map from outer's output straight to inner's operand."""
    out = []
    for r in inner:
        if r.stride == 0:
            out.append(r)
            continue
        o = outer[r.dim]
        stride = r.stride * o.stride
        out.append(AxisRead(o.dim if stride else None, r.start + r.stride * o.start, stride))
    return tuple(out)


def expands(reads: tuple[AxisRead, ...], ndim: int) -> bool:
    """Whether the map may repeat elements: an output axis that no operand axis runs along (a
    broadcast; of size 1 too, so that the sizes never change what a rewrite does with it)."""
    runs = {r.dim for r in reads if r.stride}
    return any(d not in runs for d in range(ndim))


# ----------------------------------------------------------------------------- index_map_p

index_map_p = Primitive("index_map")


def _index_map_abstract_eval(x: ShapedArray, *, reads, shape) -> list:
    dims = [r[0] for r in reads if r[2]]
    if len(reads) != x.ndim or dims != sorted(set(dims)) or any(
            not 0 <= r[1] + r[2] * (shape[r[0]] - 1 if r[2] else 0) < n
            for r, n in zip(reads, x.shape) if not r[2] or shape[r[0]]):
        raise NumbaxValueError(f"index_map: reads {reads} do not map shape {tuple(shape)} "
                               f"into an operand of shape {x.shape} (one read an operand "
                               "axis, output dims increasing, in bounds).")
    return [ShapedArray(tuple(shape), x.dtype, x.weak_type)]


def _slice_of(reads: tuple, shape: tuple) -> tuple[tuple, tuple, tuple]:
    """The slice (starts, limits, strides) of the operand the map reads: the map is that
    slice, its stride-0 axes squeezed away, broadcast to `shape`."""
    starts, limits, strides = [], [], []
    for dim, start, stride in reads:
        m = shape[dim] if stride else 1
        starts.append(start)
        limits.append(start + (stride or 1) * (m - 1) + 1 if m else start)
        strides.append(stride or 1)
    return tuple(starts), tuple(limits), tuple(strides)


def _index_map_transpose(cts, x, *, reads, shape):
    (ct,) = cts
    starts, limits, strides = _slice_of(reads, shape)
    dims = {r[0] for r in reads if r[2]}
    summed = reductions.reduce_sum(ct, tuple(d for d in range(len(shape)) if d not in dims))
    sliced = ls.reshape(summed, tuple(len(range(a, b, s)) for a, b, s in
                                      zip(starts, limits, strides, strict=True)))
    return ad.transpose_rules[ls.slice_p]([sliced], x, start_indices=starts,
                                          limit_indices=limits, strides=strides)


def _index_map_batch(axis_size, vals, dims, *, reads, shape):
    (x,), (bd,) = vals, dims
    x = batching.moveaxis(x, bd, 0)
    moved = ((0, 0, 1), *((None if d is None else d + 1, a, s) for d, a, s in reads))
    return [index_map_p.bind(x, reads=moved, shape=(axis_size, *shape))], [0]


def strided_view(x: np.ndarray, reads: tuple, shape: tuple,
                 writeable: bool = False) -> np.ndarray:
    """The index map as a numpy view of x (read-only unless `writeable`: a stride 0 repeats
    elements; writeable, it is as writeable as x)."""
    x = np.asarray(x)
    if not x.flags.c_contiguous:
        x = x.copy()  # (the offset below counts elements of the flat, C-ordered x)
    offset = sum(r[1] * s for r, s in zip(reads, x.strides, strict=True))
    strides = [0] * len(shape)
    for (dim, _, stride), s in zip(reads, x.strides, strict=True):
        if stride:
            strides[dim] += stride * s
    base = x.reshape(-1)[offset // x.itemsize:] if x.size else x.reshape(-1)
    return np.lib.stride_tricks.as_strided(base, tuple(shape), tuple(strides),
                                           writeable=writeable)


core.abstract_eval_rules[index_map_p] = _index_map_abstract_eval
core.impl_rules[index_map_p] = lambda x, *, reads, shape: [
    np.ascontiguousarray(strided_view(x, reads, shape))]
ad.deflinear(index_map_p, _index_map_transpose)
batching.batch_rules[index_map_p] = _index_map_batch


def index_map(x, reads: tuple[AxisRead, ...], shape: tuple[int, ...]):
    """x read through `reads` into an array of `shape` (one AxisRead per axis of x)."""
    return index_map_p.bind(x, reads=tuple(tuple(r) for r in reads), shape=tuple(shape))


_MAPS = frozenset({ls.broadcast_in_dim_p, ls.slice_p, ls.squeeze_p, ls.reshape_p, index_map_p})


def reads_of(eqn: JaxprEqn) -> tuple[AxisRead, ...] | None:
    """Where an equation of the primitives above reads its operand, or None (another
    primitive, or a reshape that moves elements)."""
    if eqn.primitive not in _MAPS or len(eqn.invars) != 1 or len(eqn.outvars) != 1:
        return None
    p, x, out = eqn.params, eqn.invars[0].aval, eqn.outvars[0].aval
    if eqn.primitive is ls.broadcast_in_dim_p:
        return broadcast_reads(x.shape, p["broadcast_dimensions"])
    if eqn.primitive is ls.slice_p:
        return slice_reads(p["start_indices"], p["strides"])
    if eqn.primitive in (ls.squeeze_p, ls.reshape_p):
        return unit_axes_reads(x.shape, out.shape)
    if eqn.primitive is index_map_p:
        return tuple(AxisRead(*r) for r in p["reads"])
    return None


# ----------------------------------------------------------------------------- roll_p

# numbax-internal: x rolled by `shift` along `axis` (out[i] = x[(i - shift) mod n]), what
# `jnp.roll` traces to (two slices and a concatenation), recognised by the CPU compiler
# (compose_maps._rolls) so that the roll is a wrapped load in its reader's loop.
roll_p = Primitive("roll")


def _roll_abstract_eval(x: ShapedArray, *, shift, axis) -> list:
    if not 0 <= axis < x.ndim or not 0 < abs(shift) < x.shape[axis]:
        raise NumbaxValueError(f"roll: shift {shift} along axis {axis} does not roll an "
                               f"operand of shape {x.shape} (0 < |shift| < its size).")
    return [x]


def roll_reads(eqn: JaxprEqn) -> tuple[AxisRead, ...]:
    """A roll's reads for the rules that only ask whether an axis is read at the loop's own
    index: the rolled axis is not. Its `start` (|shift|) is never an offset to add: the
    CPU's indices.operand_index and map_index wrap the index (indices.roll_index)."""
    p = eqn.params
    return tuple(AxisRead(d, abs(p["shift"]) if d == p["axis"] else 0)
                 for d in range(eqn.invars[0].aval.ndim))


def _roll_batch(axis_size, vals, dims, *, shift, axis):
    (x,), (bd,) = vals, dims
    return [roll_p.bind(batching.moveaxis(x, bd, 0), shift=shift, axis=axis + 1)], [0]


core.abstract_eval_rules[roll_p] = _roll_abstract_eval
core.impl_rules[roll_p] = lambda x, *, shift, axis: [np.roll(np.asarray(x), shift, axis)]
ad.deflinear(roll_p, lambda cts, x, *, shift, axis: [roll_p.bind(cts[0], shift=-shift,
                                                                  axis=axis)])
batching.batch_rules[roll_p] = _roll_batch


def roll(x, shift: int, axis: int):
    """x rolled by `shift` (0 < |shift| < its size) along `axis`, as one `roll` equation."""
    return roll_p.bind(x, shift=int(shift), axis=int(axis))
