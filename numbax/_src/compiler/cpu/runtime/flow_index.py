"""Index, search, sort and scan primitives inside compiled control flow (`fi.*`): the array
forms that let a loop body holding a gather, a scatter, take_along_axis, argmax/argmin, a
cumulative scan, a sort, top_k or searchsorted stay one compiled loop instead of the driver's
host loop (a fori_loop over `x + jnp.argmax(x)` paid ~8 us of Python a step there).

Each function takes its operands already reshaped by the lowering (lowerings/flow_arrays.py)
into the few axes it loops over and returns a new array; the rules are the eager ones
(kernels.py, lax/extrema.py): a gather clamps or fills, a scatter combines in index order and
clips or drops, take_along_axis wraps negative indices, the first extremum and the first NaN
win, cumulative sums run in the operand's dtype in order, cummax/cummin follow lax.max/min,
sorts are stable with NaNs last (numpy's order, as sort.py's eager rule)."""
from __future__ import annotations

import numpy as np
from numba import njit

from numbax._src.compiler.cpu.runtime import kernels, scalars, search

_JIT = {"error_model": "numpy", "cache": True}


@njit(**_JIT)
def _sizes(dims):  # pragma: no cover - compiled
    """The indexed axes' sizes (a tuple in the generated source) as the array kernels take."""
    sizes = np.empty(len(dims), np.int64)
    for k in range(len(dims)):
        sizes[k] = dims[k]
    return sizes


@njit(**_JIT)
def gather(x2, dims, idx2, fill_mode, fill):  # pragma: no cover - compiled
    """Rows of x2 (the indexed axes flattened first, their sizes `dims`) picked by the index
    rows of idx2. One axis of single elements (`x[cols]` of a vector) runs its own loop."""
    out2 = np.empty((idx2.shape[0], x2.shape[1]), x2.dtype)
    if len(dims) == 1 and x2.shape[1] == 1:
        _gather_elements(x2.reshape(x2.shape[0]), idx2.reshape(idx2.shape[0]), fill_mode,
                         fill, out2.reshape(out2.shape[0]))
    else:
        kernels.gather_rows(x2, _sizes(dims), idx2, fill_mode, fill, out2)
    return out2


@njit(inline="always", **_JIT)
def _gather_elements(x, idx, fill_mode, fill, out):  # pragma: no cover - compiled
    """`kernels.gather_rows` for one axis of single elements, without its loops over the
    coordinates and the row (4 ns an element: a sparse matrix-vector product's 2.1M reads of
    x[cols] took 8.4 ms a step)."""
    for b in range(idx.shape[0]):
        out[b] = kernels.gather_element(x, idx[b], fill_mode, fill)


@njit(**_JIT)
def scatter(x2, dims, idx2, upd2, op, drop):  # pragma: no cover - compiled
    """A copy of x2 with the rows of upd2 combined into the rows idx2 selects (`op` as
    kernels._combine). One axis of single elements (segment_sum's adds) runs its own loop."""
    out2 = x2.copy()
    if len(dims) == 1 and x2.shape[1] == 1:
        kernels.scatter_elements(out2.reshape(out2.shape[0]), idx2.reshape(idx2.shape[0]),
                                 upd2.reshape(upd2.shape[0]), op, drop)
    else:
        kernels.scatter_rows(out2, _sizes(dims), idx2, upd2, op, drop)
    return out2


@njit(**_JIT)
def take_along(x3, idx3):  # pragma: no cover - compiled
    """out[a, j, c] = x3[a, idx3[a, j, c], c], a negative index counted from the end."""
    pre, n, post = x3.shape
    out = np.empty(idx3.shape, x3.dtype)
    for a in range(pre):
        for j in range(idx3.shape[1]):
            for c in range(post):
                out[a, j, c] = x3[a, kernels.wrapped(idx3[a, j, c], n), c]
    return out


@njit(**_JIT)
def arg_extremum(x3, larger):  # pragma: no cover - compiled
    """The index along the middle axis of the first largest (`larger`) or smallest value, a
    NaN counting as beyond every number (its first one wins)."""
    pre, n, post = x3.shape
    out = np.zeros((pre, post), np.int64)
    for a in range(pre):
        for c in range(post):
            best = x3[a, 0, c]
            if best != best:
                continue
            for i in range(1, n):
                v = x3[a, i, c]
                if v != v:
                    out[a, c] = i
                    break
                if (v > best) if larger else (v < best):
                    best = v
                    out[a, c] = i
    return out


@njit(**_JIT)
def cumulative(x3, kind, reverse):  # pragma: no cover - compiled
    """Running sums (kind 0), products (1), lax.max (2) or lax.min (3) along the middle axis
    in x3's dtype, from its end when `reverse`."""
    pre, n, post = x3.shape
    out = np.empty_like(x3)
    for a in range(pre):
        for c in range(post):
            for step in range(n):
                i = n - 1 - step if reverse else step
                v = x3[a, i, c]
                if step:
                    prev = out[a, i + 1 if reverse else i - 1, c]
                    if kind == 0:
                        v = prev + v
                    elif kind == 1:
                        v = prev * v
                    elif kind == 2:
                        v = scalars.fmax(prev, v)
                    else:
                        v = scalars.fmin(prev, v)
                out[a, i, c] = v
    return out


@njit(**_JIT)
def _logaddexp(a, b):  # pragma: no cover - compiled
    """numpy's logaddexp: log(exp(a) + exp(b)) without overflow; equal infinities kept."""
    if a == b:
        return a + np.log(2.0)
    d = a - b
    if d > 0:
        return a + np.log1p(np.exp(-d))
    if d <= 0:
        return b + np.log1p(np.exp(d))
    return d  # a NaN


@njit(**_JIT)
def logcumsumexp(x3, reverse):  # pragma: no cover - compiled
    """Running logaddexp along the middle axis (lax.cumlogsumexp), from its end when
    `reverse`."""
    pre, n, post = x3.shape
    out = np.empty_like(x3)
    for a in range(pre):
        for c in range(post):
            for step in range(n):
                i = n - 1 - step if reverse else step
                v = x3[a, i, c]
                if step:
                    v = _logaddexp(out[a, i + 1 if reverse else i - 1, c], v)
                out[a, i, c] = v
    return out


# ----------------------------------------------------------------------------- sorts


@njit(error_model="numpy", cache=True, inline="always")
def _before(a, b):  # pragma: no cover - compiled
    """numpy's sort order: a NaN after every number, equal values (and zeros) tied."""
    return a < b or (a == a and b != b)


@njit(**_JIT)
def _argsort_row(key, order, spare):  # pragma: no cover - compiled
    """`order` = the stable ascending order of `key` (a merge sort of runs doubling in
    length; `spare` is its buffer)."""
    n = key.shape[0]
    for i in range(n):
        order[i] = i
    width = 1
    src, dst = order, spare
    in_spare = False  # where the last pass wrote
    while width < n:
        for lo in range(0, n, 2 * width):
            mid, hi = min(lo + width, n), min(lo + 2 * width, n)
            i, j = lo, mid
            for k in range(lo, hi):
                if j < hi and (i >= mid or _before(key[src[j]], key[src[i]])):
                    dst[k] = src[j]
                    j += 1
                else:
                    dst[k] = src[i]
                    i += 1
        src, dst = dst, src
        in_spare = not in_spare
        width *= 2
    if in_spare:
        order[:] = spare


@njit(**_JIT)
def argsort(x3):  # pragma: no cover - compiled
    """The stable ascending order along the middle axis of x3."""
    pre, n, post = x3.shape
    out = np.empty((pre, n, post), np.int64)
    key = np.empty(n, x3.dtype)
    order, spare = np.empty(n, np.int64), np.empty(n, np.int64)
    for a in range(pre):
        for c in range(post):
            for i in range(n):
                key[i] = x3[a, i, c]
            _argsort_row(key, order, spare)
            for i in range(n):
                out[a, i, c] = order[i]
    return out


@njit(**_JIT)
def sort1(x3, shape):  # pragma: no cover - compiled
    """lax.sort of one operand along the middle axis, in `shape`."""
    return take_along(x3, argsort(x3)).reshape(shape)


@njit(**_JIT)
def sort2(x3, y3, shape):  # pragma: no cover - compiled
    """lax.sort of x3 with y3 carried along (argsort: y3 an iota; sort_key_val), in
    `shape`."""
    order = argsort(x3)
    return take_along(x3, order).reshape(shape), take_along(y3, order).reshape(shape)


@njit(**_JIT)
def top_k(x3, k, shape):  # pragma: no cover - compiled
    """The k largest values along the middle axis and their int32 indices, in `shape`: the
    lower index first on ties, a NaN first (sort.py's order: a stable sort of the reversed
    row)."""
    pre, n, post = x3.shape
    values = np.empty((pre, k, post), x3.dtype)
    indices = np.empty((pre, k, post), np.int32)
    key = np.empty(n, x3.dtype)
    order, spare = np.empty(n, np.int64), np.empty(n, np.int64)
    for a in range(pre):
        for c in range(post):
            for i in range(n):
                key[i] = x3[a, n - 1 - i, c]
            _argsort_row(key, order, spare)
            for j in range(k):
                i = n - 1 - order[n - 1 - j]
                values[a, j, c] = x3[a, i, c]
                indices[a, j, c] = i
    return values.reshape(shape), indices.reshape(shape)


# one thread's block searches of search.py (tables of at most search.COUNT_MAX entries counted)
_search_left, _search_right = search.serial_blocks(False, False), search.serial_blocks(False, True)
_count_left, _count_right = search.serial_blocks(True, False), search.serial_blocks(True, True)


@njit(**_JIT)
def searchsorted(a2, v2, right):  # pragma: no cover - compiled
    """For each row r, the positions in the sorted a2[r] where v2[r]'s values would go: before
    equal values, or after them (`right`), in numpy's order (a NaN after every number). The
    top level's block searches (search.py): one search after another, each step a branch on
    the data, took ~50 us a step for a particle filter's 1000 draws into its 1000 weights."""
    out = np.zeros(v2.shape, np.int64)
    n = a2.shape[1]
    if n == 0 or v2.shape[1] == 0:
        return out
    if n <= search.COUNT_MAX:
        if right:
            _count_right(a2, v2, out)
        else:
            _count_left(a2, v2, out)
    elif right:
        _search_right(a2, v2, out)
    else:
        _search_left(a2, v2, out)
    return out
