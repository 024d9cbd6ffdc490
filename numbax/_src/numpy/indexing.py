"""numpy indexing on Arrays and tracers: x[idx], x.at[idx].set/add/..., take, take_along_axis.

Basic indexing (ints, slices, None, Ellipsis) lowers to lax.slice/rev/squeeze/reshape (and
dynamic_slice for traced scalars), so jaxprs stay simple; integer-array and boolean-mask
indexing lower to gather. `.at[]` updates scatter into the flattened array at the positions
that indexing an iota with the same index selects.
"""
from __future__ import annotations

import contextlib
import operator
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from numbax._src import core, dslice, dtypes, tree_util
from numbax._src.array import Array
from numbax._src.core import get_aval
from numbax._src.dtypes import kind_of
from numbax._src.errors import NonConcreteBooleanIndexError, NumbaxTypeError, NumbaxValueError
from numbax._src.lax import elementwise as ew
from numbax._src.lax import indexing as lax_indexing
from numbax._src.lax import reductions, shape_ops
from numbax._src.lax.control_flow import loops
from numbax._src.lax.key_arrays import key_array_op
from numbax._src.numpy import box_updates, take_along, ufuncs
from numbax._src.numpy.lax_numpy import asarray

__all__ = ["take", "take_along_axis"]


class _Entry(NamedTuple):
    kind: str  # "slice", "int", "dyn" (traced scalar), "adv" (integer array), "new"
    axis: int  # the operand axis consumed (-1 for "new")
    value: Any  # slice object, normalized int, scalar tracer, or index array


def _index_error(i: int, axis: int, n: int) -> IndexError:
    return IndexError(
        f"index {i} is out of bounds for axis {axis} with size {n}. "
        "Pass an index in [-size, size)."
    )


def _float_index_error(what: Any) -> NumbaxTypeError:
    return NumbaxTypeError(
        f"numbax indexing: index has dtype {what}, expected integers, slices, None, Ellipsis "
        "or integer/boolean arrays. Convert float indices with .astype(int)."
    )


def _concrete(v: Any) -> np.ndarray | None:
    """The numpy value of a concrete index (None for an abstract tracer)."""
    if isinstance(v, core.Tracer):
        value = v.to_concrete_value()
        return None if value is None else np.asarray(value)
    if isinstance(v, Array):
        return np.asarray(v)
    return np.asarray(v)


def _expand(shape: tuple[int, ...], idx: Any) -> list[_Entry]:
    """Parses idx into one entry per index element; masks become one array per masked axis."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    n_ellipsis = sum(1 for i in idx if i is Ellipsis)
    if n_ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    items: list[Any] = []
    for item in idx:
        if isinstance(item, list):
            item = asarray(item) if any(isinstance(v, core.Tracer) for v in _flat(item)) \
                else np.asarray(item)
            if kind_of(item.dtype) not in "biu" and item.size == 0:
                item = item.astype(np.int64)
        items.append(item)
    consumed = 0
    for item in items:
        if item is None or item is Ellipsis:
            continue
        if isinstance(item, (bool, np.bool_)):
            continue
        if not isinstance(item, (slice, int, np.integer)) and get_aval(item).dtype == np.bool_:
            consumed += get_aval(item).ndim
        else:
            consumed += 1
    if consumed > len(shape):
        raise IndexError(
            f"too many indices for array: array is {len(shape)}-dimensional, but {consumed} "
            "were indexed"
        )
    entries: list[_Entry] = []
    axis = 0
    for item in items:
        if item is Ellipsis:
            for _ in range(len(shape) - consumed):
                entries.append(_Entry("slice", axis, slice(None)))
                axis += 1
            continue
        if item is None:
            entries.append(_Entry("new", -1, None))
            continue
        axis = _parse_one(shape, item, axis, entries)
    while axis < len(shape):
        entries.append(_Entry("slice", axis, slice(None)))
        axis += 1
    return entries


def _flat(a: Any):
    for v in a:
        if isinstance(v, (list, tuple)):
            yield from _flat(v)
        else:
            yield v


def _parse_one(shape, item, axis, entries) -> int:
    if isinstance(item, slice):
        for bound in (item.start, item.stop, item.step):
            if bound is not None and isinstance(bound, core.Tracer) and \
                    bound.to_concrete_value() is None:
                raise NumbaxTypeError(
                    "numbax indexing: slice bounds have traced values, expected static "
                    "integers. Use lax.dynamic_slice for windows at traced positions."
                )
        if item.step is not None and operator.index(item.step) == 0:
            raise NumbaxValueError("numbax indexing: slice step is 0, expected a nonzero step.")
        entries.append(_Entry("slice", axis, item))
        return axis + 1
    if isinstance(item, (bool, np.bool_)):
        raise NumbaxTypeError(
            "numbax indexing: a scalar boolean index (x[True]) is not supported; use x[None] "
            "or a boolean array mask."
        )
    if isinstance(item, (int, np.integer)):
        entries.append(_static_int_entry(int(item), axis, shape[axis]))
        return axis + 1
    if not core.is_array_like(item):
        raise NumbaxTypeError(
            f"numbax indexing: index of type {type(item).__name__} is not supported, expected "
            "integers, slices, None, Ellipsis or integer/boolean arrays."
        )
    aval = get_aval(item)
    value = _concrete(item)
    if aval.dtype == np.bool_:
        if value is None:
            raise NonConcreteBooleanIndexError(f"a traced boolean mask of shape {aval.shape}")
        mask_shape = shape[axis:axis + value.ndim]
        if value.shape != mask_shape:
            raise IndexError(
                f"boolean index has shape {value.shape}, expected {mask_shape} (axes {axis} to "
                f"{axis + value.ndim - 1} of the array of shape {shape})."
            )
        for k, col in enumerate(np.nonzero(value)):
            entries.append(_Entry("adv", axis + k, col.astype(np.int64)))
        return axis + value.ndim
    if kind_of(aval.dtype) not in "iu":
        raise _float_index_error(aval.dtype)
    if value is not None and value.ndim == 0:
        entries.append(_static_int_entry(int(value), axis, shape[axis]))
    elif value is not None:
        entries.append(_Entry("adv", axis, value))
    elif aval.ndim == 0:
        entries.append(_Entry("dyn", axis, item))
    else:
        entries.append(_Entry("adv", axis, item))
    return axis + 1


def _static_int_entry(i: int, axis: int, n: int) -> _Entry:
    """A static integer index. Out of bounds it becomes a gather index, so it behaves as in
    JAX: reads clamp (or fill, with .at[].get(mode='fill')), updates are dropped."""
    if n == 0:
        raise _index_error(i, axis, n)
    if not -n <= i < n:
        return _Entry("adv", axis, np.asarray(i, np.int64))
    return _Entry("int", axis, i + n if i < 0 else i)


def _normalize_traced(i: Any, n: int) -> Any:
    """i + n where i < 0, for a traced integer index."""
    dtype = get_aval(i).dtype
    if kind_of(dtype) == "u":
        return i
    zero = np.zeros((), dtype)
    size = np.asarray(n, dtype)
    shifted = ew.add(i, shape_ops.full(get_aval(i).shape, size, dtype))
    negative = ew.lt(i, shape_ops.full(get_aval(i).shape, zero, dtype))
    return ew.select(negative, shifted, i)


def _slice_params(s: slice, n: int) -> tuple[int, int, int, bool]:
    """(start, limit, stride, reverse) of lax.slice (+ rev) for a Python slice of an axis."""
    start, stop, step = s.indices(n)
    count = len(range(start, stop, step))
    if count == 0:
        return 0, 0, 1, False
    if step > 0:
        return start, start + (count - 1) * step + 1, step, False
    last = start + (count - 1) * step
    return last, start + 1, -step, True


def _apply_slices(x: Any, entries: list[_Entry]) -> Any:
    """Applies the slice and static-int entries (ints keep a size-1 axis), then rev."""
    shape = get_aval(x).shape
    start, limit, strides = [0] * len(shape), list(shape), [1] * len(shape)
    reversed_axes = []
    for e in entries:
        if e.kind == "slice":
            lo, hi, st, rv = _slice_params(e.value, shape[e.axis])
            start[e.axis], limit[e.axis], strides[e.axis] = lo, hi, st
            if rv:
                reversed_axes.append(e.axis)
        elif e.kind == "int":
            start[e.axis], limit[e.axis] = e.value, e.value + 1
    x = shape_ops.slice(x, start, limit, strides)
    return shape_ops.rev(x, reversed_axes)


def _basic(x: Any, entries: list[_Entry]) -> Any:
    x = _apply_slices(x, entries)
    shape = get_aval(x).shape
    dyn = [e for e in entries if e.kind == "dyn"]
    if dyn:
        starts: list[Any] = [0] * len(shape)
        sizes = list(shape)
        for e in dyn:
            starts[e.axis] = _normalize_traced(e.value, shape[e.axis])
            sizes[e.axis] = 1
        x = lax_indexing.dynamic_slice(x, starts, sizes, allow_negative_indices=False)
    x = shape_ops.squeeze(x, [e.axis for e in entries if e.kind in ("int", "dyn")])
    if any(e.kind == "new" for e in entries):
        out_shape = []
        for e in entries:
            if e.kind == "new":
                out_shape.append(1)
            elif e.kind == "slice":
                out_shape.append(shape[e.axis])
        x = shape_ops.reshape(x, out_shape)
    return x


def _index_array(entries: list[_Entry], shape: tuple[int, ...]) -> tuple[Any, tuple[int, ...]]:
    """The (S..., k) int64 index array of the advanced entries and their broadcast shape S."""
    cols = [(e.axis, np.asarray(e.value) if e.kind == "int" else e.value) for e in entries]
    index_shape = ufuncs.broadcast_shapes("indexing", *[get_aval(v).shape for _, v in cols])
    if all(not isinstance(v, core.Tracer) for _, v in cols):
        arrays = []
        for axis, v in cols:
            v = np.asarray(v).astype(np.int64)
            v = np.where(v < 0, v + shape[axis], v)
            arrays.append(np.broadcast_to(v, index_shape))
        return np.stack(arrays, axis=-1), index_shape
    pieces = []
    for axis, v in cols:
        if isinstance(v, core.Tracer):
            v = _normalize_traced(v, shape[axis])
            v = ew.convert_element_type(v, np.int64)
            v = ufuncs.broadcast_to_shape(v, index_shape)
        else:
            v = np.asarray(v).astype(np.int64)
            v = np.broadcast_to(np.where(v < 0, v + shape[axis], v), index_shape)
        pieces.append(shape_ops.reshape(v, (*index_shape, 1)))
    return shape_ops.concatenate(pieces, len(index_shape)), index_shape


def _advanced(x: Any, entries: list[_Entry], mode: Any, fill_value: Any) -> Any:
    entries = [e._replace(kind="adv") if e.kind in ("int", "dyn") else e for e in entries]
    x = _apply_slices(x, entries)
    shape = get_aval(x).shape
    adv = [e for e in entries if e.kind == "adv"]
    indices, index_shape = _index_array(adv, shape)
    out = lax_indexing.gather(x, indices, tuple(e.axis for e in adv), mode=mode,
                              fill_value=fill_value)
    n_adv, n_rest = len(index_shape), len(shape) - len(adv)
    n_new = sum(1 for e in entries if e.kind == "new")
    if n_new:
        out = shape_ops.reshape(out, (*get_aval(out).shape, *(1,) * n_new))
    positions = [i for i, e in enumerate(entries) if e.kind == "adv"]
    contiguous = positions == list(range(positions[0], positions[-1] + 1))
    perm: list[int] = [] if contiguous else list(range(n_adv))
    next_rest, next_new = n_adv, n_adv + n_rest
    for i, e in enumerate(entries):
        if e.kind == "adv":
            if contiguous and i == positions[0]:
                perm.extend(range(n_adv))
        elif e.kind == "slice":
            perm.append(next_rest)
            next_rest += 1
        else:
            perm.append(next_new)
            next_new += 1
    return shape_ops.transpose(out, perm)


@key_array_op("x")
def _getitem(x: Any, idx: Any, mode: Any = None, fill_value: Any = None) -> Any:
    """x[idx] with numpy's indexing rules; out-of-bounds indices (static ints included) are
    clamped as in JAX, or filled with fill_value when mode='fill'. Unlike numpy, no IndexError
    (except on a zero-size axis, as in JAX)."""
    x = asarray(x)
    if dslice.has_slices(idx):  # jax.ds entries: dynamic slices first
        x, idx = dslice.expand(x, idx)
    shape = get_aval(x).shape
    entries = _expand(shape, idx)
    fill = mode == "fill"
    if fill:
        entries = [e._replace(kind="adv") if e.kind == "dyn" else e for e in entries]
    if any(e.kind == "adv" for e in entries):
        return _advanced(x, entries, mode, fill_value)
    return _basic(x, entries)


# ----------------------------------------------------------------------------- .at[]


class _IndexUpdateHelper:
    """x.at: `x.at[idx]` gives an _IndexUpdateRef whose methods return updated copies."""

    __slots__ = ("array",)

    def __init__(self, array: Any) -> None:
        self.array = array

    def __getitem__(self, idx: Any) -> _IndexUpdateRef:
        return _IndexUpdateRef(self.array, idx)

    def __repr__(self) -> str:
        return f"_IndexUpdateHelper({self.array!r})"


class _IndexUpdateRef:
    """x.at[idx]: out-of-place updates with JAX's semantics (repeated indices accumulate for
    add/multiply/min/max; out-of-bounds updates are dropped unless mode='clip')."""

    __slots__ = ("array", "index")

    def __init__(self, array: Any, index: Any) -> None:
        self.array = array
        self.index = index

    def get(self, *, mode: Any = None, fill_value: Any = None, indices_are_sorted: bool = False,
            unique_indices: bool = False) -> Any:
        return _getitem(self.array, self.index, mode=mode, fill_value=fill_value)

    def set(self, values: Any, *, mode: Any = None, indices_are_sorted: bool = False,
            unique_indices: bool = False) -> Any:
        return _scatter_update("set", lax_indexing.scatter, self.array, self.index, values,
                               mode, unique_indices)

    def add(self, values: Any, *, mode: Any = None, indices_are_sorted: bool = False,
            unique_indices: bool = False) -> Any:
        return _scatter_update("add", lax_indexing.scatter_add, self.array, self.index, values,
                               mode, unique_indices)

    def subtract(self, values: Any, **kwargs: Any) -> Any:
        return self.add(ufuncs.negative(asarray(values)), **kwargs)

    def multiply(self, values: Any, *, mode: Any = None, indices_are_sorted: bool = False,
                 unique_indices: bool = False) -> Any:
        return _scatter_update("multiply", lax_indexing.scatter_mul, self.array, self.index,
                               values, mode, unique_indices)

    mul = multiply

    def min(self, values: Any, *, mode: Any = None, indices_are_sorted: bool = False,  # noqa: A003
            unique_indices: bool = False) -> Any:
        return _scatter_update("min", lax_indexing.scatter_min, self.array, self.index, values,
                               mode, unique_indices)

    def max(self, values: Any, *, mode: Any = None, indices_are_sorted: bool = False,  # noqa: A003
            unique_indices: bool = False) -> Any:
        return _scatter_update("max", lax_indexing.scatter_max, self.array, self.index, values,
                               mode, unique_indices)

    def divide(self, values: Any, *, mode: Any = None, indices_are_sorted: bool = False,
               unique_indices: bool = False) -> Any:
        """x / values at idx, once per occurrence of each index (JAX's form: x divided by
        ones multiplied at idx; an integer x gives a float result)."""
        return ufuncs.true_divide(self.array, self._ones_times(values, mode, unique_indices))

    def power(self, values: Any, *, mode: Any = None, indices_are_sorted: bool = False,
              unique_indices: bool = False) -> Any:
        """x ** values at idx, once per occurrence of each index (x ** (ones multiplied at
        idx), as in JAX)."""
        return ufuncs.power(self.array, self._ones_times(values, mode, unique_indices))

    def _ones_times(self, values: Any, mode: Any, unique_indices: bool) -> Any:
        ones = ew._ones_like(asarray(self.array))
        return _IndexUpdateRef(ones, self.index).multiply(values, mode=mode,
                                                          unique_indices=unique_indices)

    def apply(self, func: Callable, *, mode: Any = None, indices_are_sorted: bool = False,
              unique_indices: bool = False) -> Any:
        """func (elementwise) applied to x[idx], once per occurrence of each index, as JAX's
        scatter_apply does."""
        x = asarray(self.array)
        aval = get_aval(x)
        if aval.size == 0:
            return x
        static = not any(isinstance(i, core.Tracer) for i in tree_util.tree_leaves(self.index))
        with core.new_dynamic(None) if static else contextlib.nullcontext():
            counts = _IndexUpdateRef(shape_ops.full(aval.shape, 0, np.int32), self.index).add(
                1, mode=mode, unique_indices=unique_indices)  # concrete for a static index
            most = reductions.reduce_max(counts, tuple(range(aval.ndim)))

        def step(i: Any, y: Any) -> Any:
            fy = ew.convert_element_type(func(y), aval.dtype)
            return ew.select(ew.lt(shape_ops.full(aval.shape, i, np.int32), counts), fy, y)

        if isinstance(most, core.Tracer):
            return loops.fori_loop(np.int32(0), most, step, x)
        for i in range(int(np.asarray(most))):
            x = step(np.int32(i), x)
        return x


@key_array_op("x", "values", allowed={"op": ("set",)}, api="numbax.numpy.ndarray.at")
def _scatter_update(op: str, scatter_fn: Callable, x: Any, idx: Any, values: Any, mode: Any,
                    unique_indices: bool) -> Any:
    # Static ints and slices address each element once: unique, as JAX marks them.
    basic = idx if isinstance(idx, tuple) else (idx,)
    unique_indices = unique_indices or all(
        isinstance(i, (int, np.integer, slice, type(None), type(Ellipsis)))
        and not isinstance(i, (bool, np.bool_)) for i in basic)
    x = asarray(x)
    aval = get_aval(x)
    box = rows = mixed = None
    if op == "set" or (op in box_updates.COMBINE and aval.dtype != np.bool_):
        box = box_updates.static_box(aval.shape, idx)
    if box is None:
        rows = box_updates.row_index(aval.shape, idx)
    if box is None and rows is None:
        mixed = box_updates.box_rows(aval.shape, idx)
    if box is not None:  # ints and static slices: one dynamic_update_slice
        pos_shape = tuple(box[1][a] for a in box[2])
    elif rows is not None:  # integer arrays for the leading axes: one scatter over them
        pos_shape = box_updates.rows_shape(aval.shape, rows)
    elif mixed is not None:  # arrays with ints or partial slices: a scatter on their box
        (_, sizes, kept), sub_rows = mixed
        pos_shape = box_updates.rows_shape(tuple(sizes[a] for a in kept), sub_rows)
    else:
        positions = shape_ops.reshape(
            shape_ops.iota(dtypes.default_int_dtype(), aval.size), aval.shape)
        if mode == "clip":
            positions = _getitem(positions, idx, mode="clip")
        else:
            positions = _getitem(positions, idx, mode="fill", fill_value=-1)
        pos_shape = get_aval(positions).shape
    values = asarray(values)
    v_shape = get_aval(values).shape
    try:
        target = np.broadcast_shapes(v_shape, pos_shape)
    except ValueError:
        target = None
    if target != pos_shape:
        raise NumbaxValueError(
            f"x.at[idx].{op}: values has shape {v_shape}, expected a shape that broadcasts to "
            f"the indexed shape {pos_shape} of x[idx] (x has shape {aval.shape})."
        )
    values = ew.convert_element_type(values, aval.dtype, aval.weak_type)
    values = ufuncs.broadcast_to_shape(values, pos_shape)
    if box is not None:
        return box_updates.update_box(op, x, box, values, mode)
    if rows is not None:
        return box_updates.update_rows(scatter_fn, x, rows, values, mode, unique_indices)
    if mixed is not None:
        return box_updates.update_box_rows(scatter_fn, x, mixed, values, mode, unique_indices)
    flat = shape_ops.reshape(x, (aval.size,))
    indices = shape_ops.reshape(positions, (*pos_shape, 1))
    out = scatter_fn(flat, indices, values, (0,), mode="clip" if mode == "clip" else "drop",
                     unique_indices=unique_indices)
    return shape_ops.reshape(out, aval.shape)


# ----------------------------------------------------------------------------- take


def _check_int_indices(api: str, indices: Any) -> Any:
    indices = asarray(indices)
    dtype = get_aval(indices).dtype
    if kind_of(dtype) not in "iu":
        raise NumbaxTypeError(
            f"numbax.numpy.{api}: indices has dtype {dtype}, expected an integer dtype. "
            "Convert them with .astype(int)."
        )
    return indices


def _take_mode(api: str, mode: Any, indices: Any, n: int) -> tuple[Any, str]:
    if mode is None or mode == "fill":
        return _normalize_traced(indices, n), "fill"
    if mode == "clip":
        return indices, "clip"
    if mode == "wrap":
        dtype = get_aval(indices).dtype
        return ufuncs.remainder(indices, np.asarray(n, dtype)), "clip"
    raise NumbaxValueError(
        f"numbax.numpy.{api}: mode is {mode!r}, expected 'fill' (default), 'clip' or 'wrap'. "
        "mode='raise' cannot check traced indices; use 'fill' or 'clip'."
    )


@key_array_op("a")
def take(a: Any, indices: Any, axis: int | None = None, out: None = None, mode: Any = None,
         unique_indices: bool = False, indices_are_sorted: bool = False,
         fill_value: Any = None) -> Any:
    """numpy.take: elements of `a` at `indices` along `axis` (the flattened array if None).

    As in JAX, mode='fill' (default) gives fill_value (NaN for floats) for out-of-bounds
    indices; 'clip' clamps and 'wrap' wraps around. Negative indices count from the end.

    >>> import numbax.numpy as jnp
    >>> jnp.take(jnp.array([4., 5., 6.]), jnp.array([2, 0, 5]))
    Array([ 6.,  4., nan], dtype=float64)
    """
    a = asarray(a)
    indices = _check_int_indices("take", indices)
    if axis is None:
        a = shape_ops.reshape(a, (get_aval(a).size,))
        axis = 0
    shape = get_aval(a).shape
    axis = shape_ops._canonical_axis("numbax.numpy.take", axis, len(shape))
    indices, gmode = _take_mode("take", mode, indices, shape[axis])
    idx_shape = get_aval(indices).shape
    indices = shape_ops.reshape(indices, (*idx_shape, 1))
    out_ = lax_indexing.gather(a, indices, (axis,), mode=gmode, fill_value=fill_value)
    n_idx = len(idx_shape)
    rest = list(range(n_idx, n_idx + len(shape) - 1))
    perm = rest[:axis] + list(range(n_idx)) + rest[axis:]
    return shape_ops.transpose(out_, perm)


@key_array_op("arr")
def take_along_axis(arr: Any, indices: Any, axis: int | None, mode: Any = None,
                    fill_value: Any = None) -> Any:
    """numpy.take_along_axis: out[..., j, ...] = arr[..., indices[..., j, ...], ...] along
    `axis`; other axes broadcast. mode as in take ('fill' by default, as in JAX).

    >>> import numbax.numpy as jnp
    >>> jnp.take_along_axis(jnp.array([[10, 30, 20]]), jnp.array([[0, 2, 1]]), axis=1)
    Array([[10, 20, 30]], dtype=int64)
    """
    arr = asarray(arr)
    indices = _check_int_indices("take_along_axis", indices)
    if axis is None:
        arr = shape_ops.reshape(arr, (get_aval(arr).size,))
        indices = shape_ops.reshape(indices, (get_aval(indices).size,))
        axis = 0
    a_shape, i_shape = get_aval(arr).shape, get_aval(indices).shape
    if len(a_shape) != len(i_shape):
        raise NumbaxValueError(
            f"numbax.numpy.take_along_axis: indices has shape {i_shape}, expected the same "
            f"number of dimensions as arr of shape {a_shape}."
        )
    axis = shape_ops._canonical_axis("numbax.numpy.take_along_axis", axis, len(a_shape))
    others = [d for d in range(len(a_shape)) if d != axis]
    try:
        common = np.broadcast_shapes(tuple(a_shape[d] for d in others),
                                     tuple(i_shape[d] for d in others))
    except ValueError:
        raise NumbaxValueError(
            f"numbax.numpy.take_along_axis: indices has shape {i_shape}, expected a shape that "
            f"broadcasts with arr of shape {a_shape} on every axis but {axis}."
        ) from None
    out_shape = list(common)
    out_shape.insert(axis, i_shape[axis])
    out_shape = tuple(out_shape)
    indices, gmode = _take_mode("take_along_axis", mode, indices, a_shape[axis])
    if mode == "clip":  # as in JAX, negative indices count from the end, then clamp
        indices = _normalize_traced(indices, a_shape[axis])
    indices = ew.convert_element_type(indices, np.int64)
    if get_aval(arr).size and all(a_shape[d] == out_shape[d] for d in others):
        positions = (take_along.few_positions if out_shape[axis] <= take_along.FEW_POSITIONS
                     else take_along.flat_positions)
        return positions(arr, indices, axis, out_shape, gmode, fill_value)
    cols = []
    for d in range(len(a_shape)):
        if d == axis:
            col = ufuncs.broadcast_to_shape(indices, out_shape)
        elif a_shape[d] == 1:
            col = shape_ops.full(out_shape, 0, np.int64)
        else:
            col = shape_ops.broadcasted_iota(np.int64, out_shape, d)
        cols.append(shape_ops.reshape(col, (*out_shape, 1)))
    full_index = shape_ops.concatenate(cols, len(out_shape))
    return lax_indexing.gather(arr, full_index, tuple(range(len(a_shape))), mode=gmode,
                               fill_value=fill_value)
