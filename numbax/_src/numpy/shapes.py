"""numpy's shape functions: reshape, joining, splitting, tiling, flipping, padding, on lax."""
from __future__ import annotations

import builtins
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax._src import core, prng
from numbax._src.core import get_aval
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError, ShapeDtypeError
from numbax._src.lax import shape_ops
from numbax._src.lax.key_arrays import key_array_op
from numbax._src.numpy import creation, ufuncs
from numbax._src.numpy.lax_numpy import (
    asarray,
    canonicalize_axes,
    canonicalize_axis,
    concrete_value,
)

__all__ = [
    "reshape", "ravel", "transpose", "permute_dims", "matrix_transpose", "swapaxes", "moveaxis",
    "expand_dims", "squeeze", "broadcast_to", "broadcast_arrays", "broadcast_shapes",
    "atleast_1d", "atleast_2d", "atleast_3d", "concatenate", "concat", "stack", "hstack",
    "vstack", "dstack", "column_stack", "row_stack", "split", "array_split", "hsplit", "vsplit",
    "dsplit", "tile", "repeat", "shape",
    "ndim", "size", "append", "rollaxis", "resize", "unstack", "block",
]


def _shape_tuple(shape: Any, api: str) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        return (operator.index(shape),)
    try:
        return tuple(operator.index(d) for d in shape)
    except TypeError:
        raise NumbaxTypeError(
            f"numbax.numpy.{api}: shape {shape!r} is not a tuple of ints. Shapes are static: "
            "pass Python ints (mark traced sizes static with static_argnums)."
        ) from None


# ----------------------------------------------------------------------------- shape queries


def shape(a: Any) -> tuple[int, ...]:
    if isinstance(a, prng.PRNGKeyArray):  # its key shape, as JAX's typed keys
        return a.shape
    return get_aval(asarray(a)).shape


def ndim(a: Any) -> int:
    return len(shape(a))


def size(a: Any, axis: int | Sequence[int] | None = None) -> int:
    s = shape(a)
    axes = range(len(s)) if axis is None else axis if isinstance(axis, (tuple, list)) else (axis,)
    return int(np.prod([s[canonicalize_axis(ax, len(s), "size")] for ax in axes], dtype=np.int64))


# ----------------------------------------------------------------------------- reshaping


@key_array_op("a")
def reshape(a: Any, shape: Any = None, order: str = "C", *,  # noqa: F811
            newshape: Any = None) -> Any:
    """numpy.reshape, with one -1 allowed and order "C" or "F"."""
    if shape is None:
        shape = newshape
    a = asarray(a)
    old_shape = get_aval(a).shape
    shape = _shape_tuple(shape, "reshape")
    count = int(np.prod(old_shape, dtype=np.int64))
    if shape.count(-1) > 1 or builtins.any(d < -1 for d in shape):
        raise NumbaxValueError(
            f"numbax.numpy.reshape: shape {shape} is invalid, expected sizes >= 0 with at most "
            "one -1."
        )
    if -1 in shape:
        known = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
        if known == 0 or count % known:
            raise ShapeDtypeError(
                f"numbax.numpy.reshape: cannot reshape an array of shape {old_shape} (size "
                f"{count}) into shape {shape}; the known sizes multiply to {known}, which does "
                f"not divide {count}."
            )
        shape = tuple(count // known if d == -1 else d for d in shape)
    new_count = int(np.prod(shape, dtype=np.int64))
    if new_count != count:
        raise ShapeDtypeError(
            f"numbax.numpy.reshape: cannot reshape an array of shape {old_shape} (size {count}) "
            f"into shape {shape} (size {new_count}). The sizes must be equal."
        )
    if order == "F":
        ndim_ = len(old_shape)
        a = shape_ops.transpose(a, tuple(reversed(range(ndim_))))
        out = shape_ops.reshape(a, tuple(reversed(shape)))
        return shape_ops.transpose(out, tuple(reversed(range(len(shape)))))
    if order not in ("C", "A", None):
        raise NumbaxValueError(f"numbax.numpy.reshape: order {order!r} is not supported, "
                               "expected 'C' or 'F'.")
    return shape_ops.reshape(a, shape)


def ravel(a: Any, order: str = "C") -> Any:
    return reshape(a, (-1,), order=order)


@key_array_op("a")
def transpose(a: Any, axes: Sequence[int] | None = None) -> Any:
    a = asarray(a)
    ndim_ = get_aval(a).ndim
    if axes is None:
        return shape_ops.transpose(a, tuple(reversed(range(ndim_))))
    perm = tuple(canonicalize_axis(x, ndim_, "transpose", "axes") for x in axes)
    if sorted(perm) != list(range(ndim_)):
        raise NumbaxValueError(
            f"numbax.numpy.transpose: axes {tuple(axes)} is not a permutation of the axes of an "
            f"array of shape {get_aval(a).shape}."
        )
    return shape_ops.transpose(a, perm)


def permute_dims(a: Any, /, axes: Sequence[int]) -> Any:  # the array API's: axes required
    return transpose(a, axes)


def matrix_transpose(x: Any, /) -> Any:
    return swapaxes(x, -1, -2)


@key_array_op("a")
def swapaxes(a: Any, axis1: int, axis2: int) -> Any:
    a = asarray(a)
    ndim_ = get_aval(a).ndim
    perm = list(range(ndim_))
    i = canonicalize_axis(axis1, ndim_, "swapaxes", "axis1")
    j = canonicalize_axis(axis2, ndim_, "swapaxes", "axis2")
    perm[i], perm[j] = perm[j], perm[i]
    return shape_ops.transpose(a, tuple(perm))


@key_array_op("a")
def moveaxis(a: Any, source: Any, destination: Any) -> Any:
    a = asarray(a)
    ndim_ = get_aval(a).ndim
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(src) != len(dst):
        raise NumbaxValueError(
            f"numbax.numpy.moveaxis: source has {len(src)} axes and destination has {len(dst)}, "
            "expected the same number."
        )
    src = tuple(canonicalize_axis(s, ndim_, "moveaxis", "source") for s in src)
    dst = tuple(canonicalize_axis(d, ndim_, "moveaxis", "destination") for d in dst)
    perm = [i for i in range(ndim_) if i not in src]
    for d, s in sorted(zip(dst, src)):
        perm.insert(d, s)
    return shape_ops.transpose(a, tuple(perm))


@key_array_op("a")
def expand_dims(a: Any, axis: Any) -> Any:
    a = asarray(a)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out_ndim = get_aval(a).ndim + len(axes)
    axes = canonicalize_axes(axes, out_ndim, "expand_dims")
    return shape_ops.expand_dims(a, axes)


@key_array_op("a")
def squeeze(a: Any, axis: Any = None) -> Any:
    a = asarray(a)
    a_shape = get_aval(a).shape
    if axis is None:
        axes = tuple(i for i, d in enumerate(a_shape) if d == 1)
    else:
        axes = canonicalize_axes(axis, len(a_shape), "squeeze")
        for ax in axes:
            if a_shape[ax] != 1:
                raise NumbaxValueError(
                    f"numbax.numpy.squeeze: axis {ax} of an array of shape {a_shape} has size "
                    f"{a_shape[ax]}, expected size 1."
                )
    return shape_ops.squeeze(a, axes)


# ----------------------------------------------------------------------------- broadcasting


def broadcast_shapes(*shapes: Any) -> tuple[int, ...]:
    return ufuncs.broadcast_shapes("broadcast_shapes",
                                   *(_shape_tuple(s, "broadcast_shapes") for s in shapes))


@key_array_op("array")
def broadcast_to(array: Any, shape: Any) -> Any:
    array = asarray(array)
    shape = creation._shape(shape, "broadcast_to")  # (negative sizes: JAX's TypeError)
    a_shape = get_aval(array).shape
    ok = len(shape) >= len(a_shape) and builtins.all(
        d in (1, s) for d, s in zip(a_shape[::-1], shape[::-1]))
    if not ok:
        raise ShapeDtypeError(
            f"numbax.numpy.broadcast_to: array has shape {a_shape}, which cannot be broadcast "
            f"to shape {shape}. Trailing dimensions must be equal or 1."
        )
    return ufuncs.broadcast_to_shape(array, shape)


@key_array_op("args")
def broadcast_arrays(*args: Any) -> list[Any]:
    arrays = [asarray(x) for x in args]
    shape_ = broadcast_shapes(*(get_aval(x).shape for x in arrays))
    return [ufuncs.broadcast_to_shape(x, shape_) for x in arrays]


def _atleast(arys: tuple, nd: int) -> Any:
    outs = []
    for x in arys:
        x = asarray(x)
        s = get_aval(x).shape
        if len(s) < nd:
            if nd == 3 and len(s) == 2:
                s = (*s, 1)
            elif nd == 3 and len(s) == 1:
                s = (1, *s, 1)
            else:
                s = (1,) * (min(nd, 2) - len(s)) + s
                s = s + (1,) * (nd - len(s))
            x = shape_ops.reshape(x, s)
        outs.append(x)
    return outs[0] if len(outs) == 1 else outs


@key_array_op("arys")
def atleast_1d(*arys: Any) -> Any:
    return _atleast(arys, 1)


@key_array_op("arys")
def atleast_2d(*arys: Any) -> Any:
    return _atleast(arys, 2)


@key_array_op("arys")
def atleast_3d(*arys: Any) -> Any:
    return _atleast(arys, 3)


# ----------------------------------------------------------------------------- joining


@key_array_op("arrays", allowed={"dtype": (None,)})
def concatenate(arrays: Sequence[Any], axis: int | None = 0, dtype: Any = None) -> Any:
    """numpy.concatenate: promotes to the common dtype; axis=None ravels first."""
    if not isinstance(arrays, (list, tuple)) and (
            not core.is_array_like(arrays) or not get_aval(arrays).ndim):
        raise NumbaxTypeError(
            f"numbax.numpy.concatenate: arrays has type {type(arrays).__name__}, expected a "
            "sequence of arrays (or one array to split along its first axis)."
        )
    if isinstance(arrays, core.Tracer) or not isinstance(arrays, (list, tuple)):
        arrays = [arrays[i] for i in range(len(arrays))]
    if not arrays:
        raise NumbaxValueError("numbax.numpy.concatenate: got no arrays, expected at least one.")
    arrays = [asarray(x) for x in arrays]
    if axis is None:
        arrays = [ravel(x) for x in arrays]
        axis = 0
    arrays = ufuncs.promote_dtypes("concatenate", *arrays)
    if dtype is not None:
        arrays = [asarray(x, dtype) for x in arrays]
    shapes = [get_aval(x).shape for x in arrays]
    if builtins.any(len(s) != len(shapes[0]) for s in shapes) or not shapes[0]:
        raise ShapeDtypeError(
            f"numbax.numpy.concatenate: arrays have shapes {', '.join(map(str, shapes))}, "
            "expected arrays of one rank >= 1. Use stack to join scalars."
        )
    axis = canonicalize_axis(axis, len(shapes[0]), "concatenate")
    for s in shapes:
        if s[:axis] + s[axis + 1:] != shapes[0][:axis] + shapes[0][axis + 1:]:
            raise ShapeDtypeError(
                f"numbax.numpy.concatenate: arrays have shapes {', '.join(map(str, shapes))}, "
                f"expected equal sizes on every axis but axis {axis}."
            )
    if len(arrays) == 1:
        return arrays[0]
    return shape_ops.concatenate(arrays, axis)


concat = concatenate


@key_array_op("arrays", allowed={"dtype": (None,)})
def stack(arrays: Sequence[Any], axis: int = 0, out: None = None, dtype: Any = None) -> Any:
    if not isinstance(arrays, (list, tuple)):
        arrays = [arrays[i] for i in range(len(arrays))]
    if not arrays:
        raise NumbaxValueError("numbax.numpy.stack: got no arrays, expected at least one.")
    arrays = [asarray(x) for x in arrays]
    shapes = [get_aval(x).shape for x in arrays]
    if builtins.any(s != shapes[0] for s in shapes):
        raise ShapeDtypeError(
            f"numbax.numpy.stack: arrays have shapes {', '.join(map(str, shapes))}, expected "
            "one shape for all."
        )
    axis = canonicalize_axis(axis, len(shapes[0]) + 1, "stack")
    return concatenate([expand_dims(x, axis) for x in arrays], axis, dtype=dtype)


@key_array_op("tup", allowed={"dtype": (None,)})
def hstack(tup: Sequence[Any], dtype: Any = None) -> Any:
    arrs = [atleast_1d(x) for x in tup]
    axis = 0 if arrs and get_aval(arrs[0]).ndim == 1 else 1
    return concatenate(arrs, axis, dtype=dtype)


def vstack(tup: Sequence[Any], dtype: Any = None) -> Any:
    return concatenate([atleast_2d(x) for x in tup], 0, dtype=dtype)


row_stack = vstack


def dstack(tup: Sequence[Any], dtype: Any = None) -> Any:
    return concatenate([atleast_3d(x) for x in tup], 2, dtype=dtype)


@key_array_op("tup")
def column_stack(tup: Sequence[Any]) -> Any:
    cols = []
    for x in tup:
        x = asarray(x)
        cols.append(reshape(x, (-1, 1)) if get_aval(x).ndim < 2 else x)
    return concatenate(cols, 1)


def append(arr: Any, values: Any, axis: int | None = None) -> Any:
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], 0)
    return concatenate([arr, values], axis)


# ----------------------------------------------------------------------------- splitting


def _slice_axis(a: Any, axis: int, start: int, stop: int, step: int = 1) -> Any:
    a_shape = get_aval(a).shape
    starts = [0] * len(a_shape)
    limits = list(a_shape)
    strides = [1] * len(a_shape)
    starts[axis], limits[axis], strides[axis] = start, stop, step
    if start == 0 and stop == a_shape[axis] and step == 1:
        return a
    return shape_ops.slice(a, tuple(starts), tuple(limits),
                           None if step == 1 else tuple(strides))


def _split(api: str, ary: Any, indices_or_sections: Any, axis: int, exact: bool) -> list:
    ary = asarray(ary)
    a_shape = get_aval(ary).shape
    axis = canonicalize_axis(axis, len(a_shape), api)
    n = a_shape[axis]
    if isinstance(indices_or_sections, (int, np.integer)):
        sections = int(indices_or_sections)
        if sections <= 0:
            raise NumbaxValueError(f"numbax.numpy.{api}: number of sections {sections} must be "
                                   "larger than 0.")
        if exact and n % sections:
            raise NumbaxValueError(
                f"numbax.numpy.{api}: an axis of size {n} (array shape {a_shape}) does not split "
                f"into {sections} equal sections. Use array_split for unequal sections."
            )
        q, r = divmod(n, sections)
        sizes = [q + 1] * r + [q] * (sections - r)
        bounds = np.concatenate([[0], np.cumsum(sizes)]).tolist()
    else:
        idx = [operator.index(i) for i in concrete_value(
            indices_or_sections, f"numbax.numpy.{api}: indices")]
        bounds = [0, *idx, n]
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        lo = builtins.min(builtins.max(lo + n if lo < 0 else lo, 0), n)
        hi = builtins.min(builtins.max(hi + n if hi < 0 else hi, 0), n)
        out.append(_slice_axis(ary, axis, lo, builtins.max(lo, hi)))
    return out


@key_array_op("ary")
def split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list:
    return _split("split", ary, indices_or_sections, axis, exact=True)


@key_array_op("ary")
def array_split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list:
    return _split("array_split", ary, indices_or_sections, axis, exact=False)


@key_array_op("ary")
def hsplit(ary: Any, indices_or_sections: Any) -> list:
    axis = 0 if get_aval(asarray(ary)).ndim == 1 else 1
    return _split("hsplit", ary, indices_or_sections, axis, exact=True)


@key_array_op("ary")
def vsplit(ary: Any, indices_or_sections: Any) -> list:
    return _split("vsplit", ary, indices_or_sections, 0, exact=True)


@key_array_op("ary")
def dsplit(ary: Any, indices_or_sections: Any) -> list:
    return _split("dsplit", ary, indices_or_sections, 2, exact=True)


# ----------------------------------------------------------------------------- tiling


@key_array_op("A")
def tile(A: Any, reps: Any) -> Any:  # noqa: N803
    A = asarray(A)  # noqa: N806
    reps = _shape_tuple(reps, "tile")
    a_shape = get_aval(A).shape
    nd = builtins.max(len(reps), len(a_shape))
    reps = (1,) * (nd - len(reps)) + reps
    a_shape = (1,) * (nd - len(a_shape)) + a_shape
    A = shape_ops.reshape(A, a_shape)  # noqa: N806
    # Broadcast to (r0, s0, r1, s1, ...) then merge each pair.
    inter = tuple(x for r, s in zip(reps, a_shape) for x in (r, s))
    out = shape_ops.broadcast_in_dim(A, inter, tuple(range(1, 2 * nd, 2)))
    return shape_ops.reshape(out, tuple(r * s for r, s in zip(reps, a_shape)))


@key_array_op("a")
def repeat(a: Any, repeats: Any, axis: int | None = None, *,
           total_repeat_length: int | None = None) -> Any:
    """numpy.repeat with static (concrete) repeats."""
    a = asarray(a)
    if axis is None:
        a = ravel(a)
        axis = 0
    a_shape = get_aval(a).shape
    axis = canonicalize_axis(axis, len(a_shape), "repeat")
    if total_repeat_length is not None:
        return _repeat_to_length(a, repeats, axis, operator.index(total_repeat_length))
    reps = concrete_value(repeats, "numbax.numpy.repeat: repeats")
    if kind_of(reps.dtype) not in "iu" or (reps < 0).any():
        raise NumbaxValueError(
            f"numbax.numpy.repeat: repeats has dtype {reps.dtype} and values {reps.tolist()}, "
            "expected non-negative integers."
        )
    if reps.ndim == 0 or reps.size == 1:
        r = int(reps.reshape(()))
        inter = a_shape[:axis + 1] + (r,) + a_shape[axis + 1:]
        dims = tuple(i for i in range(len(inter)) if i != axis + 1)
        out = shape_ops.broadcast_in_dim(a, inter, dims)
        new_shape = a_shape[:axis] + (a_shape[axis] * r,) + a_shape[axis + 1:]
        return shape_ops.reshape(out, new_shape)
    if reps.shape != (a_shape[axis],):
        raise NumbaxValueError(
            f"numbax.numpy.repeat: repeats has shape {reps.shape}, expected () or "
            f"({a_shape[axis]},) for axis {axis} of an array of shape {a_shape}."
        )
    pieces = []
    for i, r in enumerate(reps.tolist()):
        if r:
            piece = _slice_axis(a, axis, i, i + 1)
            pieces.append(repeat(piece, r, axis))
    if not pieces:
        return _slice_axis(a, axis, 0, 0)
    return concatenate(pieces, axis)


def _repeat_to_length(a: Any, repeats: Any, axis: int, length: int) -> Any:
    """repeat with JAX's total_repeat_length (repeats may be traced): output j takes the first
    element whose running repeat count exceeds j, so the output is cut at `length` or padded
    with the last element."""
    from numbax._src.numpy.indexing import take
    from numbax._src.numpy.reductions import cumsum
    from numbax._src.numpy.sorting import searchsorted

    n = get_aval(a).shape[axis]
    reps = asarray(repeats)
    r_aval = get_aval(reps)
    if kind_of(r_aval.dtype) not in "iu" or r_aval.shape not in ((), (1,), (n,)):
        raise NumbaxValueError(
            f"numbax.numpy.repeat: repeats has shape {r_aval.shape} and dtype {r_aval.dtype}, "
            f"expected integers of shape () or ({n},).")
    if length < 0 or (n == 0 and length):
        raise NumbaxValueError(
            f"numbax.numpy.repeat: total_repeat_length is {length}, expected >= 0 (and 0 when "
            f"axis {axis} is empty).")
    ends = cumsum(shape_ops.broadcast_in_dim(shape_ops.reshape(reps, ()), (n,), ())
                  if r_aval.shape != (n,) else reps)
    idx = searchsorted(ends, shape_ops.iota(get_aval(ends).dtype, length), side="right")
    return take(a, idx, axis=axis, mode="clip")


# ----------------------------------------------------------------------------- rearranging


@key_array_op("a")
def rollaxis(a: Any, axis: int, start: int = 0) -> Any:
    """numpy.rollaxis: moves `axis` to before position `start` (prefer moveaxis).

    >>> rollaxis(np.zeros((2, 3, 4)), 2).shape
    (4, 2, 3)
    """
    a = asarray(a)
    n = get_aval(a).ndim
    axis = canonicalize_axis(axis, n, "rollaxis")
    start = operator.index(start)
    if not -n <= start <= n:
        raise NumbaxValueError(f"numbax.numpy.rollaxis: start {start} is out of bounds for an "
                               f"array of rank {n}, expected start in [{-n}, {n}].")
    start = start % (n + 1) if start < 0 else start
    if axis < start:
        start -= 1
    return moveaxis(a, axis, start) if axis != start else a


@key_array_op("a")
def resize(a: Any, new_shape: Any) -> Any:
    """numpy.resize: the flattened `a` repeated cyclically to fill `new_shape`.

    >>> resize(asarray([1, 2, 3]), (2, 4))
    Array([[1, 2, 3, 1],
           [2, 3, 1, 2]], dtype=int64)
    """
    a = asarray(a)
    new_shape = _shape_tuple(new_shape, "resize")
    if builtins.any(d < 0 for d in new_shape):
        raise NumbaxValueError(f"numbax.numpy.resize: new_shape {new_shape} has negative sizes, "
                               "expected sizes >= 0.")
    new_size = int(np.prod(new_shape, dtype=np.int64))
    flat = ravel(a)
    size_ = get_aval(flat).size
    if size_ == 0 or new_size == 0:
        return shape_ops.full(new_shape, 0, get_aval(a).dtype)
    reps = -(-new_size // size_)
    tiled = tile(flat, reps) if reps > 1 else flat
    return reshape(_slice_axis(tiled, 0, 0, new_size), new_shape)


@key_array_op("x")
def unstack(x: Any, /, *, axis: int = 0) -> tuple:
    """The array-API unstack: the slices of `x` along `axis`, as a tuple."""
    x = asarray(x)
    if get_aval(x).ndim == 0:
        raise NumbaxValueError("numbax.numpy.unstack: x has shape (), expected at least 1 "
                               "dimension.")
    ax = canonicalize_axis(axis, get_aval(x).ndim, "unstack")
    return tuple(shape_ops.squeeze(_slice_axis(x, ax, i, i + 1), (ax,))
                 for i in range(get_aval(x).shape[ax]))


def _block_depth(arrays: Any, path: str) -> int:
    """The list-nesting depth of a numpy.block argument, checking every branch agrees."""
    if isinstance(arrays, tuple):
        raise NumbaxTypeError(f"numbax.numpy.block: arrays{path} is a tuple, expected a list. "
                              "Only lists arrange blocks.")
    if not isinstance(arrays, list):
        return 0
    if not arrays:
        raise NumbaxValueError(f"numbax.numpy.block: arrays{path} is an empty list, expected "
                               "a non-empty list.")
    depths = [_block_depth(x, f"{path}[{i}]") for i, x in enumerate(arrays)]
    if builtins.any(d != depths[0] for d in depths):
        raise NumbaxValueError(f"numbax.numpy.block: the lists in arrays{path} are nested to "
                               f"depths {depths}, expected one depth for all.")
    return depths[0] + 1


@key_array_op("arrays")
def block(arrays: Any) -> Any:
    """numpy.block: assembles nested lists of blocks; the innermost lists join the last axis.

    >>> block([[np.ones((1, 2)), np.zeros((1, 1))], [np.zeros((1, 3))]])
    Array([[1., 1., 0.],
           [0., 0., 0.]], dtype=float64)
    """
    depth = _block_depth(arrays, "")

    def leaves(x: Any) -> list:
        return [v for y in x for v in leaves(y)] if isinstance(x, list) else [asarray(x)]

    nd = builtins.max([depth] + [get_aval(v).ndim for v in leaves(arrays)])

    def assemble(x: Any, level: int) -> Any:
        if level == depth:
            x = asarray(x)
            return reshape(x, (1,) * (nd - get_aval(x).ndim) + get_aval(x).shape)
        return concatenate([assemble(y, level + 1) for y in x], axis=-(depth - level))

    return assemble(arrays, 0)
