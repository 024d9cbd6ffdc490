"""JAX's slicing API on numbax's element gather and scatter: lax.gather and the lax.scatter
family with GatherDimensionNumbers / ScatterDimensionNumbers, slice_sizes and modes, plus
scatter_apply, index_take and dynamic_update_slice_in_dim.

Every window is expanded into the full operand index of each of its elements (start index
plus the position in the window, composed from broadcast iotas), so one element gather or
scatter does the work and jit, grad and vmap see ordinary primitives."""
from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from numbax._src import core
from numbax._src.core import get_aval
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError
from numbax._src.lax import elementwise as ew
from numbax._src.lax import indexing, reductions, scatter, shape_ops
from numbax._src.lax.control_flow.loops import while_loop
from numbax._src.lax.key_arrays import key_array_op
from numbax._src.lax.params import (
    GatherDimensionNumbers,
    GatherScatterMode,
    ScatterDimensionNumbers,
    canonical_dims,
)

_INDEX = np.int64


def _mode(api: str, mode: Any, default: GatherScatterMode) -> GatherScatterMode:
    parsed = default if mode is None else GatherScatterMode.from_any(mode)
    if parsed is GatherScatterMode.ONE_HOT:
        raise NotImplementedError(
            f"{api}: mode GatherScatterMode.ONE_HOT is implemented on TPU only (as in JAX); "
            "use 'clip', 'fill' / 'drop' or 'promise_in_bounds'.")
    return parsed


def _check_indices(api: str, aval: core.ShapedArray, n_index: int) -> None:
    if kind_of(aval.dtype) not in "iu":
        raise NumbaxTypeError(f"{api}: indices have dtype {aval.dtype}, expected an integer "
                              "dtype. Convert them with .astype(int).")
    if aval.ndim < 1 or aval.shape[-1] != n_index:
        raise NumbaxTypeError(
            f"{api}: indices have shape {aval.shape}, expected a last (index vector) "
            f"dimension of size {n_index}, one entry per mapped operand dimension.")


def _check_distinct(api: str, what: str, dims: tuple, bound: int) -> None:
    if len(set(dims)) != len(dims) or any(not 0 <= d < bound for d in dims):
        raise NumbaxTypeError(
            f"{api}: {what} has {dims}, expected distinct dimensions in [0, {bound}).")


def _starts(indices: Any, k: int) -> Any:
    """Column k of the index vectors, as int64."""
    last = get_aval(indices).ndim - 1
    col = shape_ops.squeeze(shape_ops.slice_in_dim(indices, k, k + 1, axis=last), (last,))
    return ew.convert_element_type(col, _INDEX)


def _element_indices(out_shape: tuple, batch_out: list, ndim: int, starts: dict,
                     batching: dict, windows: dict) -> Any:
    """The operand index of every output element, shape out_shape + (ndim,): for operand
    dim d, starts[d] (indexed by batch position) + the batch position along batching[d] +
    the window position along windows[d]."""
    columns = []
    for d in range(ndim):
        parts = []
        if d in starts:
            parts.append(shape_ops.broadcast_in_dim(starts[d], out_shape, tuple(batch_out)))
        if d in batching:
            parts.append(shape_ops.broadcasted_iota(_INDEX, out_shape, batching[d]))
        if d in windows:
            parts.append(shape_ops.broadcasted_iota(_INDEX, out_shape, windows[d]))
        column = parts[0] if parts else shape_ops.full(out_shape, 0, _INDEX)
        for p in parts[1:]:
            column = ew.add(column, p)
        columns.append(shape_ops.reshape(column, (*out_shape, 1)))
    return shape_ops.concatenate(columns, len(out_shape))


def _in_bounds(start: Any, hi: int) -> Any:
    return ew.bitwise_and(ew.ge(start, np.array(0, _INDEX)), ew.le(start, np.array(hi, _INDEX)))


# ----------------------------------------------------------------------------- gather


def _gather_dnums(api: str, dn: Any) -> GatherDimensionNumbers:
    if not isinstance(dn, GatherDimensionNumbers):
        raise NumbaxTypeError(
            f"{api}: dimension_numbers has {type(dn).__name__}, expected a "
            "lax.GatherDimensionNumbers.")
    return GatherDimensionNumbers(*(canonical_dims(api, f, getattr(dn, f))
                                    for f in GatherDimensionNumbers._fields))


@key_array_op("operand")
def gather(operand: Any, start_indices: Any, dimension_numbers: GatherDimensionNumbers,
           slice_sizes: Sequence[int], *, unique_indices: bool = False,
           indices_are_sorted: bool = False, mode: str | GatherScatterMode | None = None,
           fill_value: Any = None) -> Any:
    """XLA's Gather: for each index vector (the last axis of start_indices) a slice of
    `slice_sizes` is read from operand, starting at the operand dims of start_index_map.

    Args:
      operand: the array to read from.
      start_indices: integer array; its last axis holds one start per start_index_map entry.
      dimension_numbers: a GatherDimensionNumbers: offset_dims (output positions of the
        slice dims), collapsed_slice_dims (size-1 slice dims dropped), start_index_map,
        operand_batching_dims / start_indices_batching_dims (dims that batch together).
      slice_sizes: the slice size in every operand dimension.
      unique_indices, indices_are_sorted: promises numbax does not need.
      mode: 'clip' clamps starts so the slice fits; 'fill' (or 'drop') returns fill_value
        for slices that do not fit; 'promise_in_bounds' (the default) clamps, as on CPU.
      fill_value: for 'fill'; default NaN, the most negative (signed) or largest (unsigned)
        integer, or True.

    Returns:
      The gathered array: batch dims (start_indices' leading dims) with the slice dims at
      offset_dims.

    >>> dn = GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
    ...                             start_index_map=(0,))
    >>> gather(np.arange(6.0).reshape(3, 2), np.array([[2], [0]]), dn, (1, 2))
    Array([[4., 5.],
           [0., 1.]], dtype=float64)
    """
    api = "lax.gather"
    dn = _gather_dnums(api, dimension_numbers)
    op, idx = get_aval(operand), get_aval(start_indices)
    ndim = op.ndim
    sizes = canonical_dims(api, "slice_sizes", slice_sizes)
    if len(sizes) != ndim or any(not 0 <= s <= n for s, n in zip(sizes, op.shape)):
        raise NumbaxTypeError(
            f"{api}: slice_sizes has {sizes}, expected one size in [0, dim] per dimension of "
            f"the operand's shape {op.shape}.")
    _check_indices(api, idx, len(dn.start_index_map))
    for what in ("collapsed_slice_dims", "start_index_map", "operand_batching_dims"):
        _check_distinct(api, what, getattr(dn, what), ndim)
    if any(sizes[d] > 1 for d in (*dn.collapsed_slice_dims, *dn.operand_batching_dims)):
        raise NumbaxTypeError(
            f"{api}: slice_sizes has {sizes}, expected size 1 (or 0) in the collapsed and "
            "operand batching dims.")
    if set(dn.collapsed_slice_dims) & set(dn.operand_batching_dims) or set(
            dn.start_index_map) & set(dn.operand_batching_dims):
        raise NumbaxTypeError(
            f"{api}: operand_batching_dims {dn.operand_batching_dims} must be disjoint from "
            "collapsed_slice_dims and start_index_map.")
    window_dims = [d for d in range(ndim)
                   if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims]
    batch_shape = idx.shape[:-1]
    out_rank = len(batch_shape) + len(window_dims)
    offset = dn.offset_dims
    if (len(offset) != len(window_dims) or list(offset) != sorted(set(offset))
            or any(not 0 <= o < out_rank for o in offset)):
        raise NumbaxTypeError(
            f"{api}: offset_dims has {offset}, expected {len(window_dims)} sorted output "
            f"dims in [0, {out_rank}) (one per slice dim not collapsed or batching).")
    if len(dn.start_indices_batching_dims) != len(dn.operand_batching_dims) or any(
            not 0 <= p < len(batch_shape) or batch_shape[p] != op.shape[d] for p, d in
            zip(dn.start_indices_batching_dims, dn.operand_batching_dims)):
        raise NumbaxTypeError(
            f"{api}: start_indices_batching_dims {dn.start_indices_batching_dims} must match "
            f"operand_batching_dims {dn.operand_batching_dims} in number and size.")
    parsed = _mode(api, mode, GatherScatterMode.PROMISE_IN_BOUNDS)
    batch_out = [i for i in range(out_rank) if i not in offset]
    out_shape = [0] * out_rank
    for i, b in zip(batch_out, batch_shape, strict=True):
        out_shape[i] = b
    for o, d in zip(offset, window_dims, strict=True):
        out_shape[o] = sizes[d]
    out_shape = tuple(out_shape)
    starts, valid = {}, None
    for k, d in enumerate(dn.start_index_map):
        raw = _starts(start_indices, k)
        hi = op.shape[d] - sizes[d]
        starts[d] = ew.clamp(np.array(0, _INDEX), raw, np.array(hi, _INDEX))
        ok = _in_bounds(raw, hi)
        valid = ok if valid is None else ew.bitwise_and(valid, ok)
    batching = {d: batch_out[p] for d, p in zip(dn.operand_batching_dims,
                                                dn.start_indices_batching_dims)}
    windows = {d: o for d, o in zip(window_dims, offset, strict=True)}
    full = _element_indices(out_shape, batch_out, ndim, starts, batching, windows)
    out = indexing.gather(operand, full, tuple(range(ndim)), mode="clip")
    if parsed is GatherScatterMode.FILL_OR_DROP and valid is not None:
        fill = indexing.default_fill(op.dtype) if fill_value is None else fill_value
        mask = shape_ops.broadcast_in_dim(valid, out_shape, tuple(batch_out))
        out = ew.select(mask, out, shape_ops.full(out_shape, np.asarray(fill, op.dtype).item(),
                                                  op.dtype))
    return out


@key_array_op("src")
def index_take(src: Any, idxs: Sequence[Any], axes: Sequence[int]) -> Any:
    """src[idxs[0], idxs[1], ...] along `axes` (indices wrap like Python's): shape
    (len(idxs[0]),) + src's other dimensions.

    >>> index_take(np.arange(12).reshape(3, 4), (np.array([0, 2]),), (1,))
    Array([[ 0,  4,  8],
           [ 2,  6, 10]], dtype=int64)
    """
    shape = get_aval(src).shape
    axes = tuple(operator.index(a) for a in axes)
    if len(idxs) != len(axes):
        raise NumbaxTypeError(
            f"lax.index_take: {len(idxs)} index arrays for {len(axes)} axes; pass one each.")
    cols = [ew.rem(ew.add(ew.rem(ew.convert_element_type(i, _INDEX), np.array(shape[a], _INDEX)),
                          np.array(shape[a], _INDEX)), np.array(shape[a], _INDEX))
            for i, a in zip(idxs, axes, strict=True)]
    indices = shape_ops.concatenate([shape_ops.reshape(c, (*get_aval(c).shape, 1))
                                     for c in cols], 1)
    return indexing.gather(src, indices, axes, mode="clip")


# ----------------------------------------------------------------------------- scatter


def _scatter_dnums(api: str, dn: Any) -> ScatterDimensionNumbers:
    if not isinstance(dn, ScatterDimensionNumbers):
        raise NumbaxTypeError(
            f"{api}: dimension_numbers has {type(dn).__name__}, expected a "
            "lax.ScatterDimensionNumbers.")
    return ScatterDimensionNumbers(*(canonical_dims(api, f, getattr(dn, f))
                                     for f in ScatterDimensionNumbers._fields))


def _scatter_indices(api: str, operand: Any, indices: Any, update_shape: tuple,
                     dn: ScatterDimensionNumbers, mode: GatherScatterMode) -> Any:
    """The operand index of every update element (out of bounds for a dropped window)."""
    op, idx = get_aval(operand), get_aval(indices)
    ndim = op.ndim
    _check_indices(api, idx, len(dn.scatter_dims_to_operand_dims))
    for what in ("inserted_window_dims", "scatter_dims_to_operand_dims",
                 "operand_batching_dims"):
        _check_distinct(api, what, getattr(dn, what), ndim)
    window_dims = [d for d in range(ndim)
                   if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims]
    uwd = dn.update_window_dims
    rank = len(update_shape)
    if (len(uwd) != len(window_dims) or list(uwd) != sorted(set(uwd))
            or any(not 0 <= u < rank for u in uwd)):
        raise NumbaxTypeError(
            f"{api}: update_window_dims has {uwd}, expected {len(window_dims)} sorted dims of "
            f"the updates (shape {update_shape}), one per operand window dim.")
    scatter_dims = [i for i in range(rank) if i not in uwd]
    if tuple(update_shape[i] for i in scatter_dims) != idx.shape[:-1]:
        raise NumbaxTypeError(
            f"{api}: updates have shape {update_shape}; their scatter dims {scatter_dims} "
            f"must match the indices' batch shape {idx.shape[:-1]}.")
    window = {d: update_shape[u] for d, u in zip(window_dims, uwd, strict=True)}
    if any(window[d] > op.shape[d] for d in window_dims):
        raise NumbaxTypeError(
            f"{api}: updates have shape {update_shape}, with windows larger than the operand's "
            f"shape {op.shape}.")
    if len(dn.scatter_indices_batching_dims) != len(dn.operand_batching_dims):
        raise NumbaxTypeError(
            f"{api}: scatter_indices_batching_dims and operand_batching_dims differ in length.")
    starts, valid = {}, None
    for k, d in enumerate(dn.scatter_dims_to_operand_dims):
        raw = _starts(indices, k)
        hi = op.shape[d] - window.get(d, 1)
        starts[d] = ew.clamp(np.array(0, _INDEX), raw, np.array(hi, _INDEX))
        ok = _in_bounds(raw, hi)
        valid = ok if valid is None else ew.bitwise_and(valid, ok)
    if mode is not GatherScatterMode.CLIP and valid is not None:
        first = dn.scatter_dims_to_operand_dims[0]  # a dropped window points past the end
        starts[first] = ew.select(valid, starts[first], shape_ops.full(
            get_aval(valid).shape, op.shape[first], _INDEX))
    batching = {d: scatter_dims[p] for d, p in zip(dn.operand_batching_dims,
                                                   dn.scatter_indices_batching_dims)}
    windows = {d: u for d, u in zip(window_dims, uwd, strict=True)}
    return _element_indices(tuple(update_shape), scatter_dims, ndim, starts, batching, windows)


def _scatter_wrapper(name: str, element_scatter: Callable) -> Callable:
    def fn(operand: Any, scatter_indices: Any, updates: Any,
           dimension_numbers: ScatterDimensionNumbers, *, indices_are_sorted: bool = False,
           unique_indices: bool = False, mode: str | GatherScatterMode | None = None) -> Any:
        api = f"lax.{name}"
        dn = _scatter_dnums(api, dimension_numbers)
        parsed = _mode(api, mode, GatherScatterMode.FILL_OR_DROP)
        upd = get_aval(updates)
        full = _scatter_indices(api, operand, scatter_indices, upd.shape, dn, parsed)
        return element_scatter(operand, full, updates, tuple(range(get_aval(operand).ndim)),
                               mode="clip" if parsed is GatherScatterMode.CLIP else "drop",
                               unique_indices=bool(unique_indices))

    fn.__name__ = name
    fn.__doc__ = (
        f"XLA's Scatter combining with {name.partition('_')[2] or 'set'}: each update window "
        "(update_window_dims) is written at the operand position its index vector gives "
        "(scatter_dims_to_operand_dims), inserted_window_dims being size-1 operand dims "
        "without an update dim. mode 'clip' clamps windows into the operand; 'drop' / "
        "'fill' (the default) and 'promise_in_bounds' drop windows that do not fit.\n\n"
        ">>> dn = ScatterDimensionNumbers((), (0,), (0,))\n"
        f">>> {name}(np.zeros(3), np.array([[1], [1]]), np.array([2.0, 3.0]), dn).shape\n"
        "(3,)")
    return fn


scatter_set = _scatter_wrapper("scatter", scatter.scatter)
scatter_add = _scatter_wrapper("scatter_add", scatter.scatter_add)
scatter_sub = _scatter_wrapper("scatter_sub", scatter.scatter_sub)
scatter_mul = _scatter_wrapper("scatter_mul", scatter.scatter_mul)
scatter_min = _scatter_wrapper("scatter_min", scatter.scatter_min)
scatter_max = _scatter_wrapper("scatter_max", scatter.scatter_max)


def scatter_apply(operand: Any, scatter_indices: Any, func: Callable[[Any], Any],
                  dimension_numbers: ScatterDimensionNumbers, *, update_shape: Sequence[int] = (),
                  indices_are_sorted: bool = False, unique_indices: bool = False,
                  mode: str | GatherScatterMode | None = None) -> Any:
    """operand with func applied to the elements the windows of `update_shape` cover, once
    per covering window (a repeated index applies func again, as in JAX).

    >>> dn = ScatterDimensionNumbers((), (0,), (0,))
    >>> scatter_apply(np.arange(4.0), np.array([[1], [1], [3]]), lambda v: v * 10, dn,
    ...               update_shape=(3,))
    Array([  0., 100.,   2.,  30.], dtype=float64)
    """
    op = get_aval(operand)
    ones = shape_ops.full(tuple(update_shape), 1, np.int32)
    counts = scatter_add(shape_ops.full(op.shape, 0, np.int32), scatter_indices, ones,
                         dimension_numbers, mode=mode)
    concrete = core.to_numpy(counts) if not isinstance(counts, core.Tracer) else (
        counts.to_concrete_value())
    if concrete is not None:
        out = operand
        for r in range(int(np.max(concrete, initial=0))):
            out = ew.select(ew.gt(counts, np.array(r, np.int32)), func(out), out)
        return out

    def body(carry):
        r, x = carry
        return ew.add(r, np.array(1, np.int32)), ew.select(ew.gt(counts, r), func(x), x)

    top = reductions.reduce_max(counts, tuple(range(op.ndim))) if op.ndim else counts
    return while_loop(lambda c: ew.lt(c[0], top), body, (np.array(0, np.int32), operand))[1]


@key_array_op("operand", "update")
def dynamic_update_slice_in_dim(operand: Any, update: Any, start_index: Any, axis: int, *,
                                allow_negative_indices: bool = True) -> Any:
    """operand with `update` written along `axis` from start_index (0 in the other dims);
    a negative start counts from the end unless allow_negative_indices is False, and the
    start is clamped so the update fits.

    >>> dynamic_update_slice_in_dim(np.zeros(4), np.ones(2), -1, axis=0)
    Array([0., 0., 1., 1.], dtype=float64)
    """
    aval = get_aval(operand)
    axis = shape_ops._canonical_axis("lax.dynamic_update_slice_in_dim", axis, aval.ndim)
    start = indexing._int_scalar(start_index)
    if allow_negative_indices:
        dtype = get_aval(start).dtype
        start = ew.select(ew.lt(start, np.array(0, dtype)),
                          ew.add(start, np.array(aval.shape[axis], dtype)), start)
    starts: list[Any] = [np.zeros((), get_aval(start).dtype)] * aval.ndim
    starts[axis] = start
    return indexing.dynamic_update_slice(operand, update, starts, allow_negative_indices=False)

