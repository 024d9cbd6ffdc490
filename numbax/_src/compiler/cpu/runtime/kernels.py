"""Library primitives the driver runs without the eager impl: views, numpy calls, njit loops.

Each function here computes exactly what the primitive's numpy impl in `numbax/_src/lax/`
computes (same out-of-bounds modes, same dtypes, same summation order), but with the
parameters already rendered into the driver, so a call costs one Python frame and no
`core.impl_rules` lookup. gather and the scatter family are Numba loops over index rows
(compiled once per dtype signature and cached on disk, `cache=True`); the others are numpy
views or single numpy calls, made C-contiguous because the generated kernels are compiled for
contiguous arrays.
"""
from __future__ import annotations

import builtins
import math
import sys

import numpy as np
from numba import njit, prange

from numbax._src.compiler.cpu.runtime import arg_extrema, copies, scans, search
from numbax._src.compiler.cpu.runtime import threads as rt_threads
from numbax._src.compiler.cpu.runtime import top_k as top_k_rows
from numbax._src.lax import extrema
from numbax._src.lax import index_map as lax_index_map
from numbax._src.lax import sort as lsort

# ----------------------------------------------------------------------------- output buffers


def take(pool: list) -> np.ndarray | None:
    """The driver's last buffer for one large output when nothing else refers to it any more
    (the caller dropped that result and every view of it), made writable again; else None.

    A fresh ``np.empty`` of tens of MB is page-faulted and zeroed by the OS on first touch:
    selu over 1e7 float32 took 5.9 ms into fresh buffers and 3.1 ms into a reused one (one
    thread, 2026-11-26). ``list.pop`` is atomic, so two threads never get the same buffer."""
    try:
        buf = pool.pop()
    except IndexError:
        return None
    if sys.getrefcount(buf) > 2:  # this name and getrefcount's argument only
        return None
    buf.setflags(write=True)
    return buf


# ----------------------------------------------------------------------------- views and copies


def contiguous(x: np.ndarray) -> np.ndarray:
    """x as a C-contiguous array of its own shape (np.ascontiguousarray makes 0-d 1-d); a large
    copy runs on Numba's threads (copies.py)."""
    x = np.asarray(x)
    return x if x.flags.c_contiguous else copies.copy(x)


def fresh_copy(x) -> np.ndarray:
    """A new C-contiguous array of x's values: a program's input it returns must not be the
    caller's array. Large ones are copied on Numba's threads (copies.py), where np.array
    copied 40 MB on one."""
    return copies.copy(np.asarray(x))


def slice_(x: np.ndarray, starts: tuple, limits: tuple, strides: tuple) -> np.ndarray:
    """lax.slice: a view (no copy when the result stays contiguous, e.g. leading-axis rows)."""
    idx = tuple(builtins.slice(lo, hi, s) for lo, hi, s in zip(starts, limits, strides))
    return contiguous(x[idx])


def index_map(x: np.ndarray, reads: tuple, shape: tuple) -> np.ndarray:
    """lax.index_map (composed slices, squeezes, broadcasts): a view where contiguous."""
    return contiguous(lax_index_map.strided_view(x, reads, shape, writeable=True))


def rev(x: np.ndarray, dimensions: tuple) -> np.ndarray:
    return contiguous(np.flip(x, dimensions)) if dimensions else x


def iota(dtype: np.dtype, shape: tuple, dimension: int) -> np.ndarray:
    view = [1] * len(shape)
    view[dimension] = shape[dimension]
    ramp = np.arange(shape[dimension], dtype=dtype).reshape(view)
    return np.ascontiguousarray(np.broadcast_to(ramp, shape))


def concatenate(parts: tuple, axis: int) -> np.ndarray:
    """lax.concatenate of arrays of one dtype (copies.concatenate)."""
    return copies.concatenate(list(parts), axis)


def roll(x: np.ndarray, shift: int, axis: int) -> np.ndarray:
    """A roll no fused loop reads (lax/index_map.roll_p): numpy's copy."""
    return np.roll(x, shift, axis)


def pad(x: np.ndarray, pv, padding_config: tuple) -> np.ndarray:
    """lax.pad with negative (cropping) and interior padding, as shape_ops._pad_impl."""
    full = [max(lo, 0) + max(hi, 0) + n + max(n - 1, 0) * interior
            for n, (lo, hi, interior) in zip(x.shape, padding_config)]
    if all(lo >= 0 and hi >= 0 and interior == 0 for lo, hi, interior in padding_config):
        return _pad_edges(x, pv, padding_config, full)
    out = np.full(full, pv, dtype=x.dtype)
    place = tuple(builtins.slice(max(lo, 0), max(lo, 0) + n + max(n - 1, 0) * interior,
                                 interior + 1)
                  for n, (lo, _, interior) in zip(x.shape, padding_config))
    out[place] = x
    if all(lo >= 0 and hi >= 0 for lo, hi, _ in padding_config):
        return out
    crop = tuple(builtins.slice(max(-lo, 0), d - max(-hi, 0))
                 for d, (lo, hi, _) in zip(full, padding_config))
    return contiguous(out[crop])


def _pad_edges(x: np.ndarray, pv, padding_config: tuple, full: list) -> np.ndarray:
    """Non-negative edge padding: x copied into the middle, only the edges filled."""
    out = np.empty(full, dtype=x.dtype)
    middle = []
    for d, (lo, hi, _) in enumerate(padding_config):
        before = (builtins.slice(None),) * d
        out[before + (builtins.slice(0, lo),)] = pv
        out[before + (builtins.slice(full[d] - hi, full[d]),)] = pv
        middle.append(builtins.slice(lo, lo + x.shape[d]))
    copies.copy_into(out[(*middle, ...)], x)  # (the ellipsis: a 0-d view, not a scalar)
    return out


def _clamped(shape: tuple, starts: tuple, sizes: tuple) -> tuple:
    return tuple(builtins.slice(a, a + k) for a, k in (
        (min(max(int(s), 0), n - k), k) for s, n, k in zip(starts, shape, sizes)))


def dynamic_slice(x: np.ndarray, starts: tuple, sizes: tuple) -> np.ndarray:
    """Start indices clamped so the window fits (as JAX and indexing._dynamic_slice_impl)."""
    return contiguous(x[_clamped(x.shape, starts, sizes)])


def _target(x: np.ndarray, into: np.ndarray | None) -> np.ndarray:
    """The buffer an update of x writes: a fresh copy of x, or `into`, x's own buffer donated
    to the call (a loop's carry, a donated argument), holding x's values."""
    if into is None:
        return copies.copy(x)
    if into is not x:
        copies.copy_into(into, x)
    return into


def dynamic_update_slice(x: np.ndarray, update: np.ndarray, starts: tuple,
                         into: np.ndarray | None = None) -> np.ndarray:
    """The update written into a copy of x, or into `into` (`_target`), at clamped starts."""
    out = _target(x, into)
    out[_clamped(x.shape, starts, update.shape)] = update
    return out


def argminmax(x: np.ndarray, fn, axis: int, index_dtype) -> np.ndarray:
    """np.argmax or np.argmin: the first occurrence wins and the first NaN wins (numpy's rule,
    JAX's too); along the last axis of a large array on Numba's threads (arg_extrema.py)."""
    if axis == x.ndim - 1:
        out = arg_extrema.along_last(x, fn is np.argmax, index_dtype)
        if out is not None:
            return out
    return np.asarray(fn(x, axis=axis)).astype(index_dtype)


def top_k(x: np.ndarray, k: int, axis: int) -> list[np.ndarray]:
    """lax.top_k's [values, int32 indices] along `axis`: large inputs on Numba's threads
    (top_k.py), others by the eager rule (a stable sort: the same values and indices)."""
    out = top_k_rows.along_axis(x, k, axis)
    return out if out is not None else lsort.top_k_p.impl(x, k=k, axis=axis)


def searchsorted(a: np.ndarray, v: np.ndarray, right: bool, index_dtype) -> np.ndarray:
    """lax/sort.py's searchsorted_p: large searches on Numba's threads (search.py), others by
    the eager rule (numpy's search)."""
    out = search.sorted_positions(a, v, right, index_dtype)
    return out if out is not None else \
        lsort.searchsorted_p.impl(a, v, right=right, index_dtype=index_dtype)


def cumulative(x: np.ndarray, ufunc: np.ufunc, axis: int, reverse: bool) -> np.ndarray:
    """One ufunc.accumulate in x's own dtype (the eager impl casts back to it afterwards); large
    sums and products as scans.py's loop (the same order, so the same bits)."""
    if ufunc is np.add or ufunc is np.multiply:
        out = scans.cumulative(x, ufunc is np.multiply, axis, reverse)
        if out is not None:
            return out
    if reverse:
        flipped = np.flip(x, axis)
        return np.ascontiguousarray(np.flip(ufunc.accumulate(flipped, axis=axis,
                                                             dtype=x.dtype), axis))
    return ufunc.accumulate(x, axis=axis, dtype=x.dtype)


def cumulative_extremum(x: np.ndarray, larger: bool, axis: int, reverse: bool) -> np.ndarray:
    """cummax (`larger`) or cummin, with lax.max/min's order of signed zeros."""
    accumulate = extrema.cummax if larger else extrema.cummin
    if reverse:
        return np.ascontiguousarray(np.flip(accumulate(np.flip(x, axis), axis), axis))
    return np.ascontiguousarray(accumulate(x, axis))


# ----------------------------------------------------------------------------- gather / scatter


@njit(cache=True, error_model="numpy", inline="always")
def _row_offset(dims, idx2, b):  # pragma: no cover - compiled
    """The flat row selected by index row b (each coordinate clamped) and whether all of its
    coordinates were in bounds."""
    off = 0
    ok = True
    for j in range(idx2.shape[1]):
        c = idx2[b, j]
        n = dims[j]
        if c < 0:
            ok = False
            c = 0
        elif c >= n:
            ok = False
            c = n - 1
        off = off * n + c
    return off, ok


@njit(cache=True, error_model="numpy", inline="always")
def _gather_row(x2, dims, idx2, fill_mode, fill, out2, b):  # pragma: no cover - compiled
    off, ok = _row_offset(dims, idx2, b)
    if fill_mode and not ok:
        for i in range(x2.shape[1]):
            out2[b, i] = fill
    else:
        for i in range(x2.shape[1]):
            out2[b, i] = x2[off, i]


@njit(cache=True, error_model="numpy")
def gather_rows(x2, dims, idx2, fill_mode, fill, out2):  # pragma: no cover - compiled
    for b in range(idx2.shape[0]):
        _gather_row(x2, dims, idx2, fill_mode, fill, out2, b)


@njit(parallel=True, cache=True, error_model="numpy")
def _gather_rows_parallel(x2, dims, idx2, fill_mode, fill, out2):  # pragma: no cover
    for b in prange(idx2.shape[0]):
        _gather_row(x2, dims, idx2, fill_mode, fill, out2, b)


def _scalar_gather(parallel: bool):
    """`gather_rows` for one indexed axis and rows of one element (take_along_axis's flat
    positions, an embedding of scalars): the generic row loop cost ~4 ns an element."""
    @njit(parallel=parallel, cache=True, error_model="numpy")
    def gather(x, idx, fill_mode, fill, out):  # pragma: no cover - compiled
        for b in prange(idx.shape[0]):
            out[b] = gather_element(x, idx[b], fill_mode, fill)
    return gather


@njit(cache=True, error_model="numpy", inline="always")
def gather_element(x, c, fill_mode, fill):  # pragma: no cover - compiled
    """x[c] of a vector, c clamped into bounds, or `fill` for a c out of them in fill mode."""
    n = x.shape[0]
    if c < 0 or c >= n:
        return fill if fill_mode else x[0 if c < 0 else n - 1]
    return x[c]


def _scalar_gather2(parallel: bool):
    """`_scalar_gather` for two indexed axes (vmap of a one-axis gather: interp's lookups,
    `x[i, j]` of index arrays), each coordinate clamped as `_row_offset` clamps it."""
    @njit(parallel=parallel, cache=True, error_model="numpy")
    def gather(x, n0, n1, idx2, fill_mode, fill, out):  # pragma: no cover - compiled
        for b in prange(idx2.shape[0]):
            c0, c1 = idx2[b, 0], idx2[b, 1]
            ok = 0 <= c0 < n0 and 0 <= c1 < n1
            c0 = min(max(c0, 0), n0 - 1)
            c1 = min(max(c1, 0), n1 - 1)
            out[b] = x[c0 * n1 + c1] if ok or not fill_mode else fill
    return gather


_SCALAR_GATHERS = {parallel: _scalar_gather(parallel) for parallel in (True, False)}
_SCALAR_GATHERS2 = {parallel: _scalar_gather2(parallel) for parallel in (True, False)}
SCALAR_GATHER_NS = 1.0  # estimated serial ns an element (a load from anywhere in x)


def _gather_into(x2, dims, idx2, fill_mode: bool, fill, out2) -> None:
    """The rows gathered on Numba's threads where the bytes they copy pay for them."""
    if dims.shape[0] <= 2 and x2.shape[1] == 1:
        threads = rt_threads.threads_for(idx2.shape[0] * SCALAR_GATHER_NS)
        if dims.shape[0] == 1:
            kernels = _SCALAR_GATHERS
            args = (x2.reshape(-1), idx2.reshape(-1), fill_mode, fill, out2.reshape(-1))
        else:
            kernels = _SCALAR_GATHERS2
            args = (x2.reshape(-1), dims[0], dims[1], idx2, fill_mode, fill, out2.reshape(-1))
        rt_threads.run_variant(kernels, threads, *args)
        return
    threads = min(rt_threads.threads_for(out2.nbytes * copies.BYTE_NS), out2.shape[0])
    if threads <= 1:
        gather_rows(x2, dims, idx2, fill_mode, fill, out2)
        return
    with rt_threads.running(threads):
        _gather_rows_parallel(x2, dims, idx2, fill_mode, fill, out2)


@njit(cache=True, error_model="numpy")
def _combine(op, a, b):  # pragma: no cover - compiled
    if op == 0:
        return b
    if op == 1:
        return a + b
    if op == 2:
        return a * b
    if op == 5:
        return a - b
    if a != a:
        return a
    if b != b:
        return b
    if op == 3:
        return a if a <= b else b
    return a if a >= b else b


@njit(cache=True, error_model="numpy", inline="always")
def _combine_row(op, out2, off, upd2, b):  # pragma: no cover - compiled
    """Update row b combined into out2's row `off`. Adds in a loop of their own: the generic
    loop's per-element choice of op kept it scalar (an embedding table's gradient, 32,768
    rows of 128 float32 added: 2.2 -> 1.5 ms on a Zen 4 core)."""
    if op == 1:
        for i in range(out2.shape[1]):
            out2[off, i] += upd2[b, i]
        return
    for i in range(out2.shape[1]):
        out2[off, i] = _combine(op, out2[off, i], upd2[b, i])


@njit(cache=True, error_model="numpy")
def scatter_rows(out2, dims, idx2, upd2, op, drop):  # pragma: no cover - compiled
    for b in range(idx2.shape[0]):
        off, ok = _row_offset(dims, idx2, b)
        if drop and not ok:
            continue
        _combine_row(op, out2, off, upd2, b)


@njit(parallel=True, cache=True, error_model="numpy")
def _scatter_rows_parallel(out2, dims, idx2, upd2, op, drop, parts):  # pragma: no cover
    """`scatter_rows` with out2's rows cut into `parts` blocks, one a thread: each thread reads
    every index and applies the updates landing in its block, so a row still combines its
    updates in index order (the serial result, bit for bit, duplicates included)."""
    rows = out2.shape[0]
    for p in prange(parts):
        lo, hi = rows * p // parts, rows * (p + 1) // parts
        for b in range(idx2.shape[0]):
            off, ok = _row_offset(dims, idx2, b)
            if (drop and not ok) or off < lo or off >= hi:
                continue
            _combine_row(op, out2, off, upd2, b)


def _scalar_scatter(op: int):
    """`scatter_rows` for one indexed axis and rows of one element, `op` compiled in: the
    generic loop's index arithmetic and per-element choice of op took 2.7 ns an update (a
    histogram's 1e6 updates into 1000 bins: 2.7 ms against numpy's add.at 0.74)."""
    @njit(cache=True, error_model="numpy")
    def scatter(out, idx, upd, drop):  # pragma: no cover - compiled
        scatter_elements(out, idx, upd, op, drop)
    return scatter


@njit(cache=True, error_model="numpy", inline="always")
def scatter_elements(out, idx, upd, op, drop):  # pragma: no cover - compiled
    """upd[b] combined into out[idx[b]] of a vector in index order (`_combine`'s op), an
    index out of bounds dropped or clamped as `_row_offset` clamps it."""
    n = out.shape[0]
    for b in range(idx.shape[0]):
        c = idx[b]
        if c < 0 or c >= n:
            if drop:
                continue
            c = 0 if c < 0 else n - 1
        out[c] = _combine(op, out[c], upd[b])


_SCALAR_SCATTERS = {op: _scalar_scatter(op) for op in range(6)}
# Rows of fewer bytes than this are scattered on one thread: `_scatter_rows_parallel` has
# every thread read every index, and a row of a few bytes does not repay that (1e6 updates
# of one float32: 2.7 ms on one thread, 7.0 on two).
PARALLEL_ROW_BYTES = 64


def _scatter_into(out2, dims, idx2, upd2, op: int, drop: bool) -> None:
    """The updates combined into out2's rows on Numba's threads where the bytes they read pay
    for them (an embedding table's gradient: 32,768 rows of 128 took 4 of a 5.7 ms training
    step on one of 16 cores)."""
    if dims.shape[0] == 1 and out2.shape[1] == 1:
        _SCALAR_SCATTERS[op](out2.reshape(-1), idx2.reshape(-1), upd2.reshape(-1), drop)
        return
    threads = min(rt_threads.threads_for(upd2.nbytes * copies.BYTE_NS), out2.shape[0])
    if threads <= 1 or out2.shape[1] * out2.itemsize < PARALLEL_ROW_BYTES:
        scatter_rows(out2, dims, idx2, upd2, op, drop)
        return
    with rt_threads.running(threads):
        _scatter_rows_parallel(out2, dims, idx2, upd2, op, drop, threads)


def _front(x: np.ndarray, axes: tuple) -> tuple[np.ndarray, list[int] | None]:
    """x with `axes` first, as (D, R) rows; the permutation used (None: already in front)."""
    if axes == tuple(range(len(axes))):
        return x, None
    perm = [*axes, *[d for d in range(x.ndim) if d not in axes]]
    return np.ascontiguousarray(np.transpose(x, perm)), perm


def gather(x: np.ndarray, idx: np.ndarray, axes: tuple, mode: str, fill_value,
           out_shape: tuple) -> np.ndarray:
    """indexing._gather_impl: rows of x selected by index vectors; clip or fill."""
    if x.size == 0:
        return np.full(out_shape, 0 if fill_value is None else fill_value, x.dtype)
    xf, _ = _front(x, axes)
    k = len(axes)
    dims = np.array([x.shape[a] for a in axes], np.int64)
    rows = int(np.prod(dims))
    x2 = xf.reshape(rows, xf.size // rows)
    idx2 = np.ascontiguousarray(idx).reshape(-1, k)
    out = np.empty(out_shape, x.dtype)
    out2 = out.reshape(idx2.shape[0], x2.shape[1])
    if mode == "fill":  # the lowering resolved the default fill value
        _gather_into(x2, dims, idx2, True, x.dtype.type(fill_value), out2)
    else:
        _gather_into(x2, dims, idx2, False, x.dtype.type(0), out2)
    return out


def scatter(x: np.ndarray, idx: np.ndarray, upd: np.ndarray, op: int, axes: tuple,
            mode: str, into: np.ndarray | None = None) -> np.ndarray:
    """indexing._scatter_impl: updates combined into one fresh copy of x, in index order
    (duplicates accumulate as numpy's ufunc.at does); clip or drop out-of-bounds rows. `op`:
    0 replaces, 1 adds, 2 multiplies, 3 takes the min, 4 the max, 5 subtracts (_combine).
    `into`: x's donated buffer, updated in place (`_target`)."""
    out = _target(x, into)
    if into is not None:  # indices or updates read from x's own memory: read a copy
        idx = idx.copy() if np.may_share_memory(idx, out) else idx
        upd = upd.copy() if np.may_share_memory(upd, out) else upd
    if out.size == 0 or idx.size == 0:
        return out
    front, perm = _front(out, axes)
    k = len(axes)
    dims = np.array([x.shape[a] for a in axes], np.int64)
    rows = int(np.prod(dims))
    out2 = front.reshape(rows, front.size // rows)
    idx2 = np.ascontiguousarray(idx).reshape(-1, k)
    upd2 = np.ascontiguousarray(upd).reshape(idx2.shape[0], out2.shape[1])
    _scatter_into(out2, dims, idx2, upd2, op, mode == "drop")
    if perm is None:
        return out
    return np.ascontiguousarray(np.transpose(front, np.argsort(perm)))


# ----------------------------------------------------------------------------- along one axis


@njit(cache=True, error_model="numpy", inline="always")
def wrapped(c, n):  # pragma: no cover - compiled
    """A Python-style index (negative counts from the end); raises when out of bounds."""
    if c < 0:
        c += n
    if c < 0 or c >= n:
        raise IndexError("take_along_axis/scatter_add_along_axis: index out of bounds")
    return c


@njit(cache=True, error_model="numpy")
def _take_rows(x2, idx2, out2):  # pragma: no cover - compiled
    n = x2.shape[1]
    for r in range(idx2.shape[0]):
        for j in range(idx2.shape[1]):
            out2[r, j] = x2[r, wrapped(idx2[r, j], n)]


@njit(cache=True, error_model="numpy")
def _scatter_add_rows(out2, idx2, u2):  # pragma: no cover - compiled
    n = out2.shape[1]
    for r in range(idx2.shape[0]):
        for j in range(idx2.shape[1]):
            out2[r, wrapped(idx2[r, j], n)] += u2[r, j]


def _rows_last(a: np.ndarray, axis: int, shape: tuple) -> np.ndarray:
    """a broadcast to `shape`, `axis` moved last, as C-contiguous (rows, len) rows."""
    a = np.moveaxis(np.broadcast_to(a, shape), axis, -1)
    return np.ascontiguousarray(a).reshape(-1, shape[axis])


def take_along_axis(x: np.ndarray, idx: np.ndarray, axis: int) -> np.ndarray:
    """along_axis._take_along_axis_impl: negative indices wrap, out of bounds raise."""
    shape = tuple(idx.shape[d] if d == axis else x.shape[d] for d in range(x.ndim))
    if 0 in shape or x.shape[axis] == 0:
        return x[tuple(np.indices(shape, sparse=True)[:axis]) + (np.broadcast_to(
            idx, shape),) + tuple(np.indices(shape, sparse=True)[axis + 1:])]
    if axis < x.ndim - 1 and all(n == 1 for n in idx.shape[axis + 1:]):
        return _take_blocks(x, idx, axis, shape)
    moved = [*shape[:axis], *shape[axis + 1:], shape[axis]]
    x2 = np.ascontiguousarray(np.moveaxis(x, axis, -1)).reshape(-1, x.shape[axis])
    out2 = np.empty((x2.shape[0], shape[axis]), x.dtype)
    _take_rows(x2, _rows_last(idx, axis, shape), out2)
    return np.ascontiguousarray(np.moveaxis(out2.reshape(moved), -1, axis))


def _take_blocks(x: np.ndarray, idx: np.ndarray, axis: int, shape: tuple) -> np.ndarray:
    """take_along_axis where the indices do not vary after `axis` (a row permutation, LU's
    pivots): whole blocks of the trailing axes copied by numpy's indexing, which wraps negative
    indices and raises past the end as `wrapped` does. Moving the axis last instead copied x,
    the broadcast indices and the result through transposes: 16 of a jitted 1024^2 inverse's
    ~150 ms on the 2-core VM."""
    outer = math.prod(shape[:axis])
    x3 = np.ascontiguousarray(x).reshape(outer, x.shape[axis], -1)
    rows = np.broadcast_to(idx.reshape(idx.shape[:axis + 1]), shape[:axis + 1])
    try:
        out = x3[np.arange(outer)[:, None], rows.reshape(outer, shape[axis])]
    except IndexError:
        raise IndexError("take_along_axis: index out of bounds") from None
    return out.reshape(shape)


def scatter_add_along_axis(u: np.ndarray, idx: np.ndarray, axis: int, size: int) -> np.ndarray:
    """along_axis._scatter_add_impl: zeros of the output shape, updates added in index order."""
    shape = tuple(size if d == axis else u.shape[d] for d in range(u.ndim))
    out = np.zeros(shape, u.dtype)
    if u.size == 0:
        return out
    out2 = np.ascontiguousarray(np.moveaxis(out, axis, -1)).reshape(-1, size)
    _scatter_add_rows(out2, _rows_last(idx, axis, u.shape), _rows_last(u, axis, u.shape))
    moved = [*shape[:axis], *shape[axis + 1:], size]
    return np.ascontiguousarray(np.moveaxis(out2.reshape(moved), -1, axis))
