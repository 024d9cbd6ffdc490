"""numpy.searchsorted of real values for compiled code (lax/sort.py's searchsorted_p): each
value's count of entries of its row of a sorted `a` before it, NaN sorting last and -0.0
equal to +0.0 as in numpy, blocks of values on Numba's threads.

Why: one binary search after another waits on each load in turn (numpy's searchsorted of 1e6
random values in 1e5 entries: ~100 ms on a VM core). Here a block of BLOCK values takes each
step of the search together: all of them halve the same length (the branch-free form, whose
steps depend on the length only), so the block's loads of `a` are independent and overlap.
Those loads are by computed positions, which LLVM does not vectorise on every host (no
gathers on the Zen 5 VM), so tables of up to COUNT_MAX entries are counted instead: each
entry is compared with the whole block at once (histogram's 101 edges).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from numbax._src.compiler.cpu.runtime import threads as rt_threads
from numbax._src.compiler.cpu.runtime.gemm_operands import read_only

BLOCK = 512  # values searched step by step together
MIN_SIZE = 1 << 12  # fewer values take numpy's search (nothing to compile for them)
STEP_NS = 2.0  # estimated serial ns per value and step of the binary search
COUNT_MAX = 128  # tables of at most this many entries are counted, not searched
COUNT_NS = 0.05  # estimated serial ns per value and entry counted


@njit(cache=True, error_model="numpy", inline="always")
def _lt(x, y):  # pragma: no cover - compiled
    """x < y in numpy's sort order: NaN after every number (bitwise, not short-circuit: the
    branches of `or` and `not` were mispredicted, 5x slower on random values)."""
    return (x < y) | ((y != y) & (x == x))


@njit(cache=True, error_model="numpy", inline="always")
def _block(rb, per_row, m):  # pragma: no cover - compiled
    """Block rb's row and its values' range [s, e) (per_row blocks of BLOCK values a row)."""
    b = rb % per_row
    return rb // per_row, b * BLOCK, min(m, (b + 1) * BLOCK)


def _searched(parallel: bool, right: bool):
    """The binary search. `right` is a constant of the kernel: as an argument its test stayed
    in the loop (1.4-2x slower on 1e6 values)."""
    @njit(cache=True, error_model="numpy", inline="always")
    def goes_after(x, y):  # pragma: no cover - compiled
        """Whether value x's position is past entry y: y < x (right: y <= x)."""
        return (_lt(x, y) ^ True) if right else _lt(y, x)

    @njit(parallel=parallel, error_model="numpy", cache=True)
    def blocks(a, v, out):  # pragma: no cover - compiled
        """out[r, q] = the count of a[r]'s entries before v[r, q] (right: not after it), for
        rows a[r] of n >= 1 sorted entries."""
        rows, n = a.shape
        m = v.shape[1]
        per_row = (m + BLOCK - 1) // BLOCK
        for rb in prange(rows * per_row):
            r, s, e = _block(rb, per_row, m)
            table, values = a[r], v[r, s:e]  # row views: no 2-D index arithmetic a step
            first = np.zeros(e - s, np.intp)  # each value's first candidate
            length = n
            while length > 1:
                half = length // 2
                for q in range(e - s):
                    i = first[q] + half
                    first[q] = i if goes_after(values[q], table[i - 1]) else first[q]
                length -= half
            row = out[r]
            for q in range(e - s):
                i = first[q]
                row[s + q] = i + 1 if goes_after(values[q], table[i]) else i
    return blocks


def _counted(parallel: bool, right: bool):
    """Small tables: each entry compared with a block of values at once (vectorised, where
    the search's loads of `a` by computed positions are not): at 101 entries 2.1 ms for 1e6
    values against the search's 3.6 on the 2-core VM."""
    @njit(parallel=parallel, error_model="numpy", cache=True)
    def blocks(a, v, out):  # pragma: no cover - compiled
        """As the search's; NaN entries are never before a number (plain comparisons are
        false for them) and a NaN value goes after the numbers (left) or after every entry."""
        rows, n = a.shape
        m = v.shape[1]
        per_row = (m + BLOCK - 1) // BLOCK
        for rb in prange(rows * per_row):
            r, s, e = _block(rb, per_row, m)
            table, values = a[r], v[r, s:e]
            numbers = n
            while numbers > 0 and table[numbers - 1] != table[numbers - 1]:
                numbers -= 1
            before = np.zeros(e - s, np.int32)
            for j in range(numbers):
                y = table[j]
                for q in range(e - s):
                    before[q] += (y <= values[q]) if right else (y < values[q])
            nan_position = n if right else numbers
            row = out[r]
            for q in range(e - s):
                x = values[q]
                row[s + q] = before[q] if x == x else nan_position
    return blocks


_KERNELS = {(counts, right): {parallel: (_counted if counts else _searched)(parallel, right)
                              for parallel in (True, False)}
            for counts in (True, False) for right in (True, False)}


def serial_blocks(counts: bool, right: bool):
    """The one-thread kernel `blocks(a, v, out)` (counted for tables of at most COUNT_MAX
    entries, else searched) for compiled loops (flow_index.searchsorted)."""
    return _KERNELS[counts, right][False]


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
    out = np.empty(v2.shape, index_dtype)  # written in place: no cast of 1e6 positions after
    counts = n <= COUNT_MAX
    per_value_ns = n * COUNT_NS if counts else (math.ceil(math.log2(n)) + 1) * STEP_NS
    threads = min(rt_threads.threads_for(v.size * per_value_ns),
                  rows * -(-v2.shape[1] // BLOCK))
    rt_threads.run_variant(_KERNELS[counts, bool(right)], threads, a2, v2, out)
    return out.reshape(v.shape)
