"""Matrix-vector products inside compiled control flow (`mv.*`, cpu/loop_matvec.py): BLAS's
gemv on row blocks of a C-contiguous matrix, one block an iteration of the loop kernel's own
prange, BLAS held to one thread meanwhile by the driver.

`s @ v` splits the rows of s, so each block writes its own rows of the result. `v @ s` splits
them too (a column split reads a few hundred bytes of every row, and its blocks stride
through the whole matrix): each block writes a partial result of its own, and `add_parts`
sums the partials in block order, so a call's result depends only on the block count.
"""
from __future__ import annotations

import numpy as np
from numba import njit

_JIT = {"error_model": "numpy", "cache": True}

ROW_QUANTUM = 16  # a block's rows start on a multiple of this (a 64-byte line of float32s)


@njit(**_JIT)
def block_count(rows, threads):  # pragma: no cover - compiled
    """Blocks for `rows` rows on `threads` threads: one a thread, each ROW_QUANTUM rows or
    more."""
    return max(1, min(threads, -(-rows // ROW_QUANTUM)))


@njit(**_JIT)
def _bounds(rows, q, blocks):  # pragma: no cover - compiled
    """(first row, row past the last) of block q of `blocks`."""
    per = -(-rows // blocks)
    per = -(-per // ROW_QUANTUM) * ROW_QUANTUM
    lo = min(rows, np.int64(q) * per)
    return lo, min(rows, lo + per)


@njit(**_JIT)
def rows_block(s, v, out, q, blocks):  # pragma: no cover - compiled
    """out's rows of block q of `blocks` = those rows of s @ v."""
    lo, hi = _bounds(s.shape[0], q, blocks)
    if hi > lo:
        np.dot(s[lo:hi], v, out[lo:hi])


@njit(**_JIT)
def part_block(v, s, part, q, blocks):  # pragma: no cover - compiled
    """part = the share of v @ s that block q of `blocks` holds: v[lo:hi] @ s[lo:hi]."""
    lo, hi = _bounds(s.shape[0], q, blocks)
    if hi > lo:
        np.dot(v[lo:hi], s[lo:hi], part)
    else:
        part[:] = 0


@njit(**_JIT)
def add_parts(parts, blocks, out):  # pragma: no cover - compiled
    """out = parts[0] + parts[1] + ... + parts[blocks - 1], in that order."""
    out[:] = parts[0]
    for q in range(1, blocks):
        row = parts[q]
        for j in range(out.shape[0]):
            out[j] += row[j]
