"""`x.at[idx]` updates whose index is a box or an array of whole rows, without the general
path's iota of x's every position (indexed, then scattered by flat position).

A box is ints (static, or integer scalars traced inside a loop) and static unit-step slices
(and an Ellipsis): `x.at[:, 0].set(v)`, `x.at[5:10, 3:900].add(v)`, `x.at[i].set(row)` in a
`fori_loop`. It becomes one `dynamic_update_slice` (after reading the box for add, multiply,
min and max). The general path took 261 us on the 2-core VM for a 5-row update of a 1000^2
float32 (8 MB of int64 positions written and read each call) against numpy's 90, and a
1000-step `fori_loop` writing one row a step took 277 ms against jax.jit's 4.9. The box's
elements are each addressed once, so the result is the scatter's, bit for bit. A traced int
is counted from the end when negative, as everywhere; one outside [-n, n) drops the update
(JAX's default mode) or, with mode='clip', is clamped: the box is written back as it was, or
at the clamped place.

Integer arrays for consecutive axes with only full slices around them
(`table.at[ids].add(grads)`, `cm.at[y_true, y_pred].add(1)`, `x.at[:, cols]`) scatter over
those axes, where the general path's positions over a 10000 x 256 table were 20 MB of int64
per call. With ints beside the arrays or unit-step slices around them (`x.at[2, cols]`,
`x.at[1:, cols]`, `x.at[i, cols]` in a loop) the scatter runs on the box those pick, read
and written back whole: numpy puts the dims of ints adjacent to the arrays where the arrays'
are, so dropping the ints' axes from the box leaves the same x[idx].
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from numbax._src import dtypes
from numbax._src.core import Tracer, get_aval
from numbax._src.lax import elementwise as ew
from numbax._src.lax import indexing as lax_indexing
from numbax._src.lax import select, shape_ops

COMBINE = {"add": ew.add, "multiply": ew.mul, "min": ew.min, "max": ew.max}


def _traced_int(item: Any) -> bool:
    if not isinstance(item, Tracer):
        return False
    aval = get_aval(item)
    return aval.ndim == 0 and np.dtype(aval.dtype).kind in "iu"


def _items(shape: tuple[int, ...], idx: Any) -> list[Any] | None:
    """idx as a list of per-axis entries, its Ellipsis (if any) made full slices; None for
    two Ellipses (the general path reports them)."""
    items = list(idx) if isinstance(idx, tuple) else [idx]
    ellipses = [k for k, item in enumerate(items) if item is Ellipsis]
    if len(ellipses) > 1:
        return None
    if ellipses:
        at = ellipses[0]
        items[at:at + 1] = [slice(None)] * (len(shape) - len(items) + 1)
    return items


def static_box(shape: tuple[int, ...], idx: Any) -> tuple[list[Any], list[int], list[int]] | None:
    """(starts, sizes, the axes x[idx] keeps) of a box index on an array of `shape`, or None
    for any other index (arrays, None, steps other than 1, static ints out of bounds, empty
    slices). A start is an int, or the traced integer scalar given for that axis."""
    items = _items(shape, idx)
    if items is None or len(items) > len(shape):
        return None
    items += [slice(None)] * (len(shape) - len(items))
    starts: list[Any] = []
    sizes, kept = [], []
    for axis, (item, n) in enumerate(zip(items, shape)):
        if isinstance(item, slice):
            if any(isinstance(b, Tracer) for b in (item.start, item.stop, item.step)):
                return None
            try:
                start, stop, step = item.indices(n)
            except TypeError:  # bounds that are not integers: the general path says so
                return None
            if step != 1 or stop <= start:
                return None
            starts.append(start)
            sizes.append(stop - start)
            kept.append(axis)
        elif isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_)):
            i = operator.index(item)
            if not -n <= i < n:
                return None
            starts.append(i % n)
            sizes.append(1)
        elif _traced_int(item) and n > 0:
            starts.append(item)
            sizes.append(1)
        else:
            return None
    return starts, sizes, kept


def _in_bounds(shape: tuple[int, ...], starts: list[Any]) -> Any:
    """Whether every traced start lies in [-n, n) of its axis (a boolean scalar), or None when
    all starts are static (checked already)."""
    inside = None
    for start, n in zip(starts, shape):
        if not isinstance(start, Tracer):
            continue
        dtype = get_aval(start).dtype
        ok = ew.lt(start, np.asarray(n, dtype))
        if np.dtype(dtype).kind == "i":
            ok = ew.bitwise_and(ok, ew.ge(start, np.asarray(-n, dtype)))
        inside = ok if inside is None else ew.bitwise_and(inside, ok)
    return inside


def update_box(op: str, x: Any, box: tuple, values: Any, mode: Any = None) -> Any:
    """x with its box replaced by `values` (op "set"), or combined with them (add, multiply,
    min, max); `values` already has x's dtype and the shape of x[idx]. Traced starts out of
    bounds drop the update, or with mode='clip' write at the clamped place."""
    starts, sizes, _ = box
    values = shape_ops.reshape(values, tuple(sizes))
    inside = None if mode == "clip" else _in_bounds(get_aval(x).shape, starts)
    if all(not isinstance(s, Tracer) for s in starts):
        current = None if op == "set" else shape_ops.slice(
            x, starts, [s + k for s, k in zip(starts, sizes)])
        starts = [np.int32(s) for s in starts]
    else:
        starts = [np.int32(s) if not isinstance(s, Tracer) else s for s in starts]
        current = None if op == "set" and inside is None else lax_indexing.dynamic_slice(
            x, starts, sizes)
    new = values if op == "set" else COMBINE[op](current, values)
    return _write_box(x, new, current, starts, inside)


def _write_box(x: Any, new: Any, current: Any, starts: list[Any], inside: Any) -> Any:
    """x with `new` at `starts`; where `inside` (a traced start's bounds check, or None) is
    false, the box written back as it was (`current`): an out-of-bounds update drops."""
    if inside is not None:
        sizes = get_aval(new).shape
        new = select.select(shape_ops.broadcast_in_dim(inside, sizes, ()), new, current)
    return lax_indexing.dynamic_update_slice(x, new, starts)


def _full(item: Any) -> bool:
    return isinstance(item, slice) and item == slice(None)


def row_index(shape: tuple[int, ...], idx: Any) -> tuple[int, list[Any]] | None:
    """(first axis, integer arrays) of an index that picks whole rows along consecutive axes:
    full slices, then integer arrays, then full slices (`table.at[ids]`, `cm.at[y, p]`,
    `x.at[:, cols]`, an Ellipsis allowed), or None."""
    items = _items(shape, idx)
    if items is None:
        return None
    first = 0
    while first < len(items) and _full(items[first]):
        first += 1
    arrays = []
    for item in items[first:]:
        if isinstance(item, (list, tuple, bool, np.bool_, int, np.integer, slice)) or \
                item is None or not hasattr(item, "shape"):
            break
        aval = get_aval(item)
        if aval.ndim == 0 or np.dtype(aval.dtype).kind not in "iu":
            return None
        arrays.append(item)
    rest = items[first + len(arrays):]
    if not arrays or first + len(arrays) > len(shape) or not all(_full(r) for r in rest):
        return None
    try:
        np.broadcast_shapes(*(get_aval(a).shape for a in arrays))
    except ValueError:
        return None  # the general path reports the shapes
    return first, arrays


def rows_shape(shape: tuple[int, ...], rows: tuple[int, list[Any]]) -> tuple[int, ...]:
    """The shape of x[idx]: the axes before the arrays, their broadcast shape, the rest."""
    first, arrays = rows
    lead = np.broadcast_shapes(*(get_aval(a).shape for a in arrays))
    return (*shape[:first], *lead, *shape[first + len(arrays):])


def update_rows(scatter_fn: Any, x: Any, rows: tuple[int, list[Any]], values: Any, mode: Any,
                unique_indices: bool) -> Any:
    """x with the rows `rows` pick (from `row_index`; negative entries counted from the end)
    combined with `values` by `scatter_fn`, one scatter over the arrays' axes; `values` has
    x's dtype and the shape `rows_shape` (numpy's, moved to the scatter's: index dims first)."""
    first, arrays = rows
    shape = get_aval(x).shape
    lead = np.broadcast_shapes(*(get_aval(a).shape for a in arrays))
    kinds = {get_aval(a).dtype for a in arrays}
    common = kinds.pop() if len(kinds) == 1 else dtypes.default_int_dtype()
    columns = []
    for a, n in zip(arrays, shape[first:]):
        dtype = get_aval(a).dtype
        if np.dtype(dtype).kind == "i":
            a = select.select(ew.lt(a, np.asarray(0, dtype)), ew.add(a, np.asarray(n, dtype)), a)
        a = shape_ops.broadcast_in_dim(a, lead, tuple(range(len(lead) - get_aval(a).ndim,
                                                            len(lead))))
        columns.append(shape_ops.reshape(ew.convert_element_type(a, common), (*lead, 1)))
    indices = columns[0] if len(columns) == 1 else shape_ops.concatenate(columns, len(lead))
    if first:  # numpy puts the index dims after the leading axes; the scatter, first
        k = len(lead)
        values = shape_ops.transpose(values, (*range(first, first + k), *range(first),
                                              *range(first + k, get_aval(values).ndim)))
    return scatter_fn(x, indices, values, tuple(range(first, first + len(arrays))),
                      mode="clip" if mode == "clip" else "drop", unique_indices=unique_indices)


def box_rows(shape: tuple[int, ...], idx: Any) -> tuple[tuple, tuple[int, list[Any]]] | None:
    """((starts, sizes, kept axes) of a box, rows on the box with its int axes dropped) for
    an index of one run of integer arrays with ints right beside it and unit-step slices
    around (an int apart from the run makes numpy move the advanced dims to the front: None,
    as for indices `row_index` or `static_box` take, or that have neither ints nor partial
    slices). Traced ints are starts of the box, as in `static_box`."""
    items = _items(shape, idx)
    if items is None or len(items) > len(shape):
        return None
    items += [slice(None)] * (len(shape) - len(items))
    is_array = [len(getattr(item, "shape", ())) > 0 for item in items]  # not ints, slices
    if True not in is_array:
        return None
    lo = is_array.index(True)
    hi = len(items) - is_array[::-1].index(True)
    if not all(is_array[lo:hi]):
        return None
    box_items = [slice(None) if a else item for a, item in zip(is_array, items)]
    box = static_box(shape, tuple(box_items))
    if box is None:
        return None
    starts, sizes, kept = box
    dropped = [axis for axis in range(len(shape)) if axis not in kept]
    if not dropped and all(_full(item) for a, item in zip(is_array, items) if not a):
        return None  # whole rows: row_index's
    left = lo
    while left > 0 and left - 1 in dropped:
        left -= 1
    right = hi
    while right < len(shape) and right in dropped:
        right += 1
    if any(a in dropped for a in [*range(left), *range(right, len(shape))]):
        return None  # an int apart from the arrays
    sub_shape = tuple(sizes[a] for a in kept)
    first = sum(1 for a in kept if a < lo)
    rows = row_index(sub_shape, tuple([slice(None)] * first + items[lo:hi]))
    if rows is None:
        return None
    return box, rows


def update_box_rows(scatter_fn: Any, x: Any, mixed: tuple, values: Any, mode: Any,
                    unique_indices: bool) -> Any:
    """x with `mixed`'s rows of its box (from `box_rows`) combined with `values` (x's dtype,
    the shape of x[idx]) by `scatter_fn`: the box read, scattered, written back. A traced int
    out of bounds drops the update (with mode='clip': the box at the clamped place)."""
    (starts, sizes, kept), rows = mixed
    shape = get_aval(x).shape
    inside = None if mode == "clip" else _in_bounds(shape, starts)
    starts = [np.int32(s) if not isinstance(s, Tracer) else s for s in starts]
    current = lax_indexing.dynamic_slice(x, starts, sizes)
    sub = shape_ops.reshape(current, tuple(sizes[a] for a in kept))
    new = shape_ops.reshape(update_rows(scatter_fn, sub, rows, values, mode, unique_indices),
                            tuple(sizes))
    return _write_box(x, new, current, starts, inside)
