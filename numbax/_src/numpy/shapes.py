"""numpy's shape functions: reshape, joining, splitting, tiling, flipping, padding, on lax."""
from __future__ import annotations

import builtins
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax._src import core
from numbax._src.core import get_aval
from numbax._src.errors import NumbaxTypeError, NumbaxValueError, ShapeDtypeError
from numbax._src.lax import elementwise as lax
from numbax._src.lax import shape_ops
from numbax._src.numpy import ufuncs
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
    "dsplit", "tile", "repeat", "flip", "fliplr", "flipud", "roll", "rot90", "pad", "shape",
    "ndim", "size", "append",
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
    return get_aval(asarray(a)).shape


def ndim(a: Any) -> int:
    return get_aval(asarray(a)).ndim


def size(a: Any, axis: int | None = None) -> int:
    s = shape(a)
    if axis is None:
        return int(np.prod(s, dtype=np.int64))
    return s[canonicalize_axis(axis, len(s), "size")]


# ----------------------------------------------------------------------------- reshaping


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


permute_dims = transpose


def matrix_transpose(x: Any, /) -> Any:
    return swapaxes(x, -1, -2)


def swapaxes(a: Any, axis1: int, axis2: int) -> Any:
    a = asarray(a)
    ndim_ = get_aval(a).ndim
    perm = list(range(ndim_))
    i = canonicalize_axis(axis1, ndim_, "swapaxes", "axis1")
    j = canonicalize_axis(axis2, ndim_, "swapaxes", "axis2")
    perm[i], perm[j] = perm[j], perm[i]
    return shape_ops.transpose(a, tuple(perm))


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


def expand_dims(a: Any, axis: Any) -> Any:
    a = asarray(a)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out_ndim = get_aval(a).ndim + len(axes)
    axes = canonicalize_axes(axes, out_ndim, "expand_dims")
    return shape_ops.expand_dims(a, axes)


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


def broadcast_to(array: Any, shape: Any) -> Any:
    array = asarray(array)
    shape = _shape_tuple(shape, "broadcast_to")
    a_shape = get_aval(array).shape
    ok = len(shape) >= len(a_shape) and builtins.all(
        d in (1, s) for d, s in zip(a_shape[::-1], shape[::-1]))
    if not ok:
        raise ShapeDtypeError(
            f"numbax.numpy.broadcast_to: array has shape {a_shape}, which cannot be broadcast "
            f"to shape {shape}. Trailing dimensions must be equal or 1."
        )
    return ufuncs.broadcast_to_shape(array, shape)


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


def atleast_1d(*arys: Any) -> Any:
    return _atleast(arys, 1)


def atleast_2d(*arys: Any) -> Any:
    return _atleast(arys, 2)


def atleast_3d(*arys: Any) -> Any:
    return _atleast(arys, 3)


# ----------------------------------------------------------------------------- joining


def concatenate(arrays: Sequence[Any], axis: int | None = 0, dtype: Any = None) -> Any:
    """numpy.concatenate: promotes to the common dtype; axis=None ravels first."""
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


def hstack(tup: Sequence[Any], dtype: Any = None) -> Any:
    arrs = [atleast_1d(x) for x in tup]
    axis = 0 if arrs and get_aval(arrs[0]).ndim == 1 else 1
    return concatenate(arrs, axis, dtype=dtype)


def vstack(tup: Sequence[Any], dtype: Any = None) -> Any:
    return concatenate([atleast_2d(x) for x in tup], 0, dtype=dtype)


row_stack = vstack


def dstack(tup: Sequence[Any], dtype: Any = None) -> Any:
    return concatenate([atleast_3d(x) for x in tup], 2, dtype=dtype)


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


def split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list:
    return _split("split", ary, indices_or_sections, axis, exact=True)


def array_split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list:
    return _split("array_split", ary, indices_or_sections, axis, exact=False)


def hsplit(ary: Any, indices_or_sections: Any) -> list:
    axis = 0 if get_aval(asarray(ary)).ndim == 1 else 1
    return _split("hsplit", ary, indices_or_sections, axis, exact=True)


def vsplit(ary: Any, indices_or_sections: Any) -> list:
    return _split("vsplit", ary, indices_or_sections, 0, exact=True)


def dsplit(ary: Any, indices_or_sections: Any) -> list:
    return _split("dsplit", ary, indices_or_sections, 2, exact=True)


# ----------------------------------------------------------------------------- tiling


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


def repeat(a: Any, repeats: Any, axis: int | None = None, *,
           total_repeat_length: int | None = None) -> Any:
    """numpy.repeat with static (concrete) repeats."""
    a = asarray(a)
    if axis is None:
        a = ravel(a)
        axis = 0
    a_shape = get_aval(a).shape
    axis = canonicalize_axis(axis, len(a_shape), "repeat")
    reps = concrete_value(repeats, "numbax.numpy.repeat: repeats")
    if reps.dtype.kind not in "iu" or (reps < 0).any():
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


# ----------------------------------------------------------------------------- flipping


def flip(m: Any, axis: Any = None) -> Any:
    m = asarray(m)
    axes = canonicalize_axes(axis, get_aval(m).ndim, "flip")
    if not axes:
        return m
    return shape_ops.rev(m, axes)


def fliplr(m: Any) -> Any:
    m = asarray(m)
    if get_aval(m).ndim < 2:
        raise NumbaxValueError(f"numbax.numpy.fliplr: m has shape {get_aval(m).shape}, expected "
                               "at least 2 dimensions.")
    return flip(m, 1)


def flipud(m: Any) -> Any:
    m = asarray(m)
    if get_aval(m).ndim < 1:
        raise NumbaxValueError("numbax.numpy.flipud: m has shape (), expected at least 1 "
                               "dimension.")
    return flip(m, 0)


def roll(a: Any, shift: Any, axis: Any = None) -> Any:
    """numpy.roll with static shifts."""
    a = asarray(a)
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), get_aval(a).shape)
    shifts = np.atleast_1d(concrete_value(shift, "numbax.numpy.roll"))
    axes = np.atleast_1d(np.asarray(axis))
    shifts, axes = np.broadcast_arrays(shifts, axes)
    a_shape = get_aval(a).shape
    for s, ax in zip(shifts.tolist(), axes.tolist()):
        ax = canonicalize_axis(ax, len(a_shape), "roll")
        n = a_shape[ax]
        if n == 0:
            continue
        s = s % n
        if s:
            a = shape_ops.concatenate(
                [_slice_axis(a, ax, n - s, n), _slice_axis(a, ax, 0, n - s)], ax)
    return a


def rot90(m: Any, k: int = 1, axes: tuple[int, int] = (0, 1)) -> Any:
    m = asarray(m)
    ndim_ = get_aval(m).ndim
    if len(axes) != 2 or ndim_ < 2:
        raise NumbaxValueError(
            f"numbax.numpy.rot90: m has shape {get_aval(m).shape} and axes {axes}, expected two "
            "axes of an array of rank >= 2."
        )
    ax0, ax1 = (canonicalize_axis(x, ndim_, "rot90", "axes") for x in axes)
    if ax0 == ax1:
        raise NumbaxValueError(f"numbax.numpy.rot90: axes {axes} must be different.")
    k = operator.index(k) % 4
    if k == 0:
        return m
    if k == 2:
        return flip(flip(m, ax0), ax1)
    if k == 1:
        return swapaxes(flip(m, ax1), ax0, ax1)
    return flip(swapaxes(m, ax0, ax1), ax1)


# ----------------------------------------------------------------------------- padding


def _pad_widths(pad_width: Any, ndim_: int) -> list[tuple[int, int]]:
    pw = concrete_value(pad_width, "numbax.numpy.pad: pad_width")
    if pw.dtype.kind not in "iu":
        raise NumbaxTypeError(f"numbax.numpy.pad: pad_width has dtype {pw.dtype}, expected "
                              "integers.")
    try:
        pw = np.broadcast_to(pw, (ndim_, 2))
    except ValueError:
        raise NumbaxValueError(
            f"numbax.numpy.pad: pad_width has shape {pw.shape}, expected one that broadcasts "
            f"to ({ndim_}, 2)."
        ) from None
    if (pw < 0).any():
        raise NumbaxValueError(f"numbax.numpy.pad: pad_width {pw.tolist()} has negative "
                               "entries, expected widths >= 0.")
    return [(int(lo), int(hi)) for lo, hi in pw]


def pad(array: Any, pad_width: Any, mode: str = "constant", **kwargs: Any) -> Any:
    """numpy.pad with modes constant, edge, reflect, symmetric and wrap.

    Args:
      array: the array. pad_width: static widths, broadcastable to (ndim, 2).
      mode: 'constant' (lax.pad), or 'edge', 'reflect', 'symmetric', 'wrap' (slices, rev and
        concatenate). constant_values: static, broadcastable to (ndim, 2).

    Returns:
      The padded array.

    >>> pad([1, 2, 3], 2, mode="reflect")
    Array([3, 2, 1, 2, 3, 2, 1], dtype=int64)
    """
    array = asarray(array)
    a_shape = get_aval(array).shape
    widths = _pad_widths(pad_width, len(a_shape))
    if mode == "constant":
        cv = concrete_value(kwargs.get("constant_values", 0),
                            "numbax.numpy.pad: constant_values")
        cv = np.broadcast_to(cv, (len(a_shape), 2))
        dtype = get_aval(array).dtype
        if len(set(cv.ravel().tolist())) <= 1:
            value = lax.convert_element_type(cv.ravel()[0] if cv.size else 0, dtype)
            return shape_ops.pad(array, value, tuple((lo, hi, 0) for lo, hi in widths))
        for ax, (lo, hi) in enumerate(widths):
            config = [(0, 0, 0)] * len(a_shape)
            config[ax] = (lo, 0, 0)
            array = shape_ops.pad(array, lax.convert_element_type(cv[ax, 0], dtype),
                                  tuple(config))
            config[ax] = (0, hi, 0)
            array = shape_ops.pad(array, lax.convert_element_type(cv[ax, 1], dtype),
                                  tuple(config))
        return array
    if mode not in ("edge", "reflect", "symmetric", "wrap"):
        raise NumbaxValueError(
            f"numbax.numpy.pad: mode {mode!r} is not supported, expected 'constant', 'edge', "
            "'reflect', 'symmetric' or 'wrap'."
        )
    for ax, (lo, hi) in enumerate(widths):
        array = _pad_axis(array, ax, lo, hi, mode)
    return array


def _pad_axis(x: Any, ax: int, lo: int, hi: int, mode: str) -> Any:
    n = get_aval(x).shape[ax]
    if not lo and not hi:
        return x
    if n == 0:
        raise NumbaxValueError(f"numbax.numpy.pad: cannot pad an empty axis {ax} with mode "
                               f"{mode!r}.")
    if mode == "edge":
        first = _slice_axis(x, ax, 0, 1)
        last = _slice_axis(x, ax, n - 1, n)
        return concatenate([repeat(first, lo, ax), x, repeat(last, hi, ax)], ax)
    if mode == "wrap":
        idx = np.concatenate([np.arange(-lo, 0) % n, np.arange(n), np.arange(n, n + hi) % n])
    else:
        # Reflect about the edges (reflect: without repeating them; symmetric: with).
        period = 2 * n - 2 if mode == "reflect" else 2 * n
        if period == 0:
            idx = np.zeros(lo + n + hi, dtype=np.int64)
        else:
            pos = np.arange(-lo, n + hi) % period
            mirror = period - pos if mode == "reflect" else period - 1 - pos
            idx = np.where(pos < n, pos, mirror)
    return _gather_static(x, ax, idx)


def _gather_static(x: Any, ax: int, idx: np.ndarray) -> Any:
    """x taken at concrete indices along ax, as slices of contiguous runs joined by concatenate."""
    pieces = []
    start = 0
    idx = idx.tolist()
    while start < len(idx):
        stop = start + 1
        step = 1 if stop >= len(idx) else idx[stop] - idx[start]
        if step not in (1, -1):
            step = 1
        while stop < len(idx) and idx[stop] - idx[stop - 1] == step:
            stop += 1
        lo, hi = (idx[start], idx[stop - 1]) if step == 1 else (idx[stop - 1], idx[start])
        piece = _slice_axis(x, ax, lo, hi + 1)
        pieces.append(piece if step == 1 or stop - start == 1 else shape_ops.rev(piece, (ax,)))
        start = stop
    return pieces[0] if len(pieces) == 1 else shape_ops.concatenate(pieces, ax)
