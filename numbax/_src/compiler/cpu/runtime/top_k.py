"""lax.top_k for compiled code: each row's k largest values, largest first, the lower index
first among equal values and NaN largest (the order of the eager rule's stable sort, so the
same values and indices), rows on Numba's threads.

Why: top_k ran as numpy's stable argsort of every row, O(n log n) a row on one thread: a jitted
`lax.top_k(x, 10)` of a 4096 x 1000 float32 took 170 ms against jax.jit's 12 on the 2-core VM.
Here a row keeps its k best so far in a binary heap whose root is the worst of them, so an
element that does not make the cut costs one comparison with the root (most of them, past the
first few k), and one that does costs a sift of log k steps; the heap is then sorted in place.
O(n log k) at worst. Equal values compare equal whatever their sign (-0.0 and +0.0 tie, the
lower index first), as in the sort.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from numbax._src.compiler.cpu.runtime import threads as rt_threads
from numbax._src.compiler.cpu.runtime.gemm_operands import read_only

MIN_SIZE = 1 << 12  # smaller inputs take the eager rule (nothing to compile for them)
ELEMENT_NS = 1.0  # estimated serial ns per element (a comparison with the root, mostly)


@njit(cache=True, error_model="numpy", inline="always")
def _before(v, i, w, j):  # pragma: no cover - compiled
    """Whether value v at index i ranks before w at index j: larger first, NaN largest,
    the lower index first among equals (NaNs too)."""
    if v != v:
        return w == w or i < j
    if w != w:
        return False
    return v > w or (v == w and i < j)


@njit(cache=True, error_model="numpy", inline="always")
def _sift_down(vals, idx, p, end):  # pragma: no cover - compiled
    """Restores the heap on [0, end) below p: every parent ranks after its children, so the
    root is the worst."""
    while True:
        c = 2 * p + 1
        if c >= end:
            return
        if c + 1 < end and _before(vals[c], idx[c], vals[c + 1], idx[c + 1]):
            c += 1  # the child that ranks later
        if _before(vals[c], idx[c], vals[p], idx[p]):
            return
        vals[c], vals[p] = vals[p], vals[c]
        idx[c], idx[p] = idx[p], idx[c]
        p = c


@njit(cache=True, error_model="numpy", inline="always")
def _row_top(row, vals, idx):  # pragma: no cover - compiled
    """The len(vals) best of `row` into vals and idx, best first (1 <= len(vals) <= len(row))."""
    k = vals.shape[0]
    for j in range(k):
        vals[j] = row[j]
        idx[j] = j
    for p in range(k // 2 - 1, -1, -1):
        _sift_down(vals, idx, p, k)
    worst = vals[0]
    for j in range(k, row.shape[0]):
        v = row[j]
        # `_before(v, j, worst, idx[0])` where j is past every kept index: an equal value
        # ranks after, a NaN beats only numbers
        if v > worst or (v != v and worst == worst):  # it makes the cut, replacing the worst
            vals[0] = v
            idx[0] = j
            _sift_down(vals, idx, 0, k)
            worst = vals[0]
    for end in range(k - 1, 0, -1):  # heapsort: the worst of what is left to the back
        vals[0], vals[end] = vals[end], vals[0]
        idx[0], idx[end] = idx[end], idx[0]
        _sift_down(vals, idx, 0, end)


def _rows(parallel: bool):
    @njit(parallel=parallel, error_model="numpy", cache=True)
    def rows(x, vals, idx):  # pragma: no cover - compiled
        for r in prange(x.shape[0]):
            _row_top(x[r], vals[r], idx[r])
    return rows


_KERNELS = {parallel: _rows(parallel) for parallel in (True, False)}
_KINDS = "biuf"


def along_axis(x: np.ndarray, k: int, axis: int) -> list[np.ndarray] | None:
    """[the k largest values of x along `axis`, their int32 indices], lax.top_k's order; None
    where the eager rule should run (small inputs, other dtypes, k of 0)."""
    n = x.shape[axis] if x.ndim else 0
    if x.size < MIN_SIZE or x.dtype.kind not in _KINDS or not 0 < k <= n or n >= 2**31:
        return None
    moved = np.moveaxis(x, axis, -1)
    rows = read_only(np.ascontiguousarray(moved).reshape(-1, n))
    vals = np.empty((rows.shape[0], k), x.dtype)
    idx = np.empty((rows.shape[0], k), np.int32)
    threads = min(rt_threads.threads_for(x.size * ELEMENT_NS), rows.shape[0])
    rt_threads.run_variant(_KERNELS, threads, rows, vals, idx)
    shape = (*moved.shape[:-1], k)
    return [np.ascontiguousarray(np.moveaxis(a.reshape(shape), -1, axis)) for a in (vals, idx)]
