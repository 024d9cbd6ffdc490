"""numpy.searchsorted of real values for compiled code (lax/sort.py's searchsorted_p): each
value's count of entries of its row of a sorted `a` before it, NaN sorting last and -0.0
equal to +0.0 as in numpy, blocks of values on Numba's threads.

Why: one binary search after another waits on each load in turn (numpy's searchsorted of 1e6
random values in 1e5 entries: ~100 ms on a VM core). Here a block of BLOCK values takes each
step of the search together: all of them halve the same length (the branch-free form, whose
steps depend on the length only), so the block's loads of `a` are independent and overlap.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from numbax._src.compiler.cpu.runtime import threads as rt_threads
from numbax._src.compiler.cpu.runtime.gemm import read_only

BLOCK = 512  # values searched step by step together
MIN_SIZE = 1 << 12  # fewer values take numpy's search (nothing to compile for them)
STEP_NS = 2.0  # estimated serial ns per value and step


@njit(cache=True, error_model="numpy", inline="always")
def _lt(x, y):  # pragma: no cover - compiled
    """x < y in numpy's sort order: NaN after every number (bitwise, not short-circuit: the
    branches of `or` and `not` were mispredicted, 5x slower on random values)."""
    return (x < y) | ((y != y) & (x == x))


@njit(cache=True, error_model="numpy", inline="always")
def _goes_after(x, y, right):  # pragma: no cover - compiled
    """Whether value x's position is past entry y: y < x (right: y <= x), bitwise as `_lt`."""
    return (_lt(x, y) ^ True) if right else _lt(y, x)


def _blocks(parallel: bool):
    @njit(parallel=parallel, error_model="numpy", cache=True)
    def blocks(a, v, out, right):  # pragma: no cover - compiled
        """out[r, q] = the count of a[r]'s entries before v[r, q] (right: not after it), for
        rows a[r] of n >= 1 sorted entries."""
        rows, n = a.shape
        m = v.shape[1]
        per_row = (m + BLOCK - 1) // BLOCK
        for rb in prange(rows * per_row):
            r, b = rb // per_row, rb % per_row
            s, e = b * BLOCK, min(m, (b + 1) * BLOCK)
            for q in range(s, e):
                out[r, q] = 0
            length = n
            while length > 1:  # the first of each value's `length` candidates is out[r, q]
                half = length // 2
                for q in range(s, e):
                    i = out[r, q] + half
                    out[r, q] = i if _goes_after(v[r, q], a[r, i - 1], right) else out[r, q]
                length -= half
            for q in range(s, e):
                i = out[r, q]
                out[r, q] = i + 1 if _goes_after(v[r, q], a[r, i], right) else i
    return blocks


_KERNELS = {parallel: _blocks(parallel) for parallel in (True, False)}


def sorted_positions(a: np.ndarray, v: np.ndarray, right: bool,
                     index_dtype) -> np.ndarray | None:
    """np.searchsorted(a[r], v[r], "right" if right else "left") for each row r of the
    leading dims of a (shape (*batch, n), sorted along its last axis) and v (shape (*batch,
    *values)), of one real dtype, as index_dtype; None where the eager rule should run (one
    table and few values, an empty table or no values, other dtypes)."""
    n = a.shape[-1]
    rows = math.prod(a.shape[:-1])
    if (rows == 1 and v.size < MIN_SIZE) or n == 0 or v.size == 0 or a.dtype.kind not in "biuf":
        return None
    a2 = read_only(np.ascontiguousarray(a).reshape(rows, n))
    v2 = read_only(np.ascontiguousarray(v).reshape(rows, -1))
    out = np.empty(v2.shape, np.int64)
    steps = math.ceil(math.log2(n)) + 1
    threads = min(rt_threads.threads_for(v.size * steps * STEP_NS),
                  rows * -(-v2.shape[1] // BLOCK))
    rt_threads.run_variant(_KERNELS, threads, a2, v2, out, right)
    return out.reshape(v.shape).astype(index_dtype, copy=False)
