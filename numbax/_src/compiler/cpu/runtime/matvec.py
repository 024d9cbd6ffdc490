"""Matrix-vector products on Numba's threads: inside compiled control flow (`mv.*`,
cpu/loop_matvec.py) BLAS's gemv on row blocks of a C-contiguous matrix, one block an
iteration of the loop kernel's own prange, BLAS held to one thread meanwhile by the driver;
at a program's top level the same blocks (`product`, below).

`s @ v` splits the rows of s, so each block writes its own rows of the result. `v @ s` splits
them too (a column split reads a few hundred bytes of every row, and its blocks stride
through the whole matrix): each block writes a partial result of its own, and `add_parts`
sums the partials in block order, so a call's result depends only on the block count.

Below SMALL_ELEMENTS the products are plain loops (`rows_small`, `parts_small`): a gemv call
cost 0.05 us where a 4 x 4 product's loops took 0.01 (on a VM core; 64 x 64 float32 0.24
against 0.20, float64 0.35-0.46 against 0.28; from 100 x 100 BLAS was as fast or faster).

At a program's top level `product` runs the same row blocks on Numba's threads
(library.dot's matrix-vector products): BLAS's thread rule counts multiply-adds, so a
4000 x 1000 float32 product (16 MB, 4M multiply-adds) ran on one BLAS thread, 351 us on the
VM against OpenBLAS's two threads' 215 and jax.jit's 256. There the threads wake for the one
product, which pays from TOP_LEVEL_MIN_BYTES: on the VM's two threads 1000 x 500 float32 took
39 us on threads against 38 on one, 2000 x 500 57 against 71, 2000 x 1000 89 against 127.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from numba import njit, prange

from numbax._src.compiler.cpu.runtime import blas, copies
from numbax._src.compiler.cpu.runtime import reductions as rd
from numbax._src.compiler.cpu.runtime import threads as rt_threads

_JIT = {"error_model": "numpy", "cache": True}

SMALL_ELEMENTS = 64 * 64  # a matrix of at most this many elements: loops, not BLAS
# A program's top-level matrix-vector product of at most this many matrix elements: loops
# called from the driver (`small`), never threads or BLAS (lowerings/dot.py)
TOP_LEVEL_LOOP_ELEMENTS = 1 << 16
TOP_LEVEL_MIN_BYTES = 1 << 22  # `product`'s matrices from this size on threads

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


@njit(**_JIT)
def rows_small(s, v, out):  # pragma: no cover - compiled
    """out = s @ v in loops: four rows at a time, each row's sum reassociated into vector
    lanes (rd.add), as BLAS's gemv reorders it too."""
    rows, cols = s.shape
    i = 0
    while i + 4 <= rows:
        r0, r1, r2, r3 = s[i], s[i + 1], s[i + 2], s[i + 3]
        c0 = c1 = c2 = c3 = s.dtype.type(0)
        for p in range(cols):
            x = v[p]
            c0 = rd.add(c0, r0[p] * x)
            c1 = rd.add(c1, r1[p] * x)
            c2 = rd.add(c2, r2[p] * x)
            c3 = rd.add(c3, r3[p] * x)
        out[i], out[i + 1], out[i + 2], out[i + 3] = c0, c1, c2, c3
        i += 4
    while i < rows:
        row = s[i]
        c = s.dtype.type(0)
        for p in range(cols):
            c = rd.add(c, row[p] * v[p])
        out[i] = c
        i += 1


@njit(**_JIT)
def parts_small(v, s, out):  # pragma: no cover - compiled
    """out = v @ s in loops: four rows of s added into out at a time."""
    rows, cols = s.shape
    out[:] = 0
    i = 0
    while i + 4 <= rows:
        x0, x1, x2, x3 = v[i], v[i + 1], v[i + 2], v[i + 3]
        r0, r1, r2, r3 = s[i], s[i + 1], s[i + 2], s[i + 3]
        for j in range(cols):
            out[j] += x0 * r0[j] + x1 * r1[j] + x2 * r2[j] + x3 * r3[j]
        i += 4
    while i < rows:
        x, row = v[i], s[i]
        for j in range(cols):
            out[j] += x * row[j]
        i += 1


@njit(**_JIT)
def small(s, v):  # pragma: no cover - compiled
    """s @ v for a matrix s (m, k) and a vector v (k,) in loops on the calling thread: rows of s
    where they lie contiguous, else (s a transposed view) its columns summed. A program's
    matrix-vector product of at most TOP_LEVEL_LOOP_ELEMENTS goes here straight from the
    driver: through `library.dot` to np.dot the same product cost 2.5-3.5 us more (its checks,
    BLAS's thread count set around the call), for 1-2 us of work at 569 x 30 (logistic
    regression's x @ w; 2-core VM: 5.4 against 2.0 us). Up to 256 x 256 the loops alone ran as
    fast as one BLAS thread or faster (float32 256 x 256 s @ v 2.7 against 3.2 us, v @ s 3.1
    against 2.9); some larger shapes lost up to 22 % (2026-12-07, 2-core Zen 4 VM)."""
    out = np.empty(s.shape[0], s.dtype)
    if s.shape[1] > 1 and s.strides[1] != s.itemsize and s.strides[0] == s.itemsize:
        parts_small(v, s.T, out)
    else:
        rows_small(s, v, out)
    return out


_small_ready: dict = {}  # dtype -> whether `small`'s code for it may run (`top`)
_small_requests: dict = {}  # dtype -> the helper's requests of `small` (`top`)


def top(s: np.ndarray, v: np.ndarray) -> np.ndarray:
    """A driver's small matrix-vector product s @ v (lowerings/dot.py): `small` once its code
    for the dtype may run, else (while the compile helper builds it, for a C-contiguous matrix
    and a transposed one) np.dot on one BLAS thread, as `library.dot` runs it. A fresh install
    compiled `small` in line: 0.65 s of logistic regression's 1.0 s first call on the 2-core
    VM."""
    if _small_ready.get(s.dtype):
        return small(s, v)
    from numbax._src.compiler.cpu.runtime import compile_ahead

    holders = _small_requests.setdefault(s.dtype, (SimpleNamespace(), SimpleNamespace()))
    example = np.zeros((2, 2), s.dtype), np.zeros(2, s.dtype)
    ready = [compile_ahead.runtime_ready(small, lambda m=m: (m, example[1]), holder)
             for m, holder in zip((example[0], example[0].T), holders)]
    _small_ready[s.dtype] = all(ready)
    return small(s, v) if all(ready) else blas.numpy_blas_call(np.dot, 1, s, v)


@njit(parallel=True, cache=True)
def _rows_parallel(s, v, out, blocks):  # pragma: no cover - compiled
    for q in prange(blocks):
        rows_block(s, v, out, q, blocks)


@njit(parallel=True, cache=True)
def _parts_parallel(v, s, parts, blocks, out):  # pragma: no cover - compiled
    for q in prange(blocks):
        part_block(v, s, parts[q], q, blocks)
    add_parts(parts, blocks, out)


def product(x: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    """x @ y (np.dot's shapes) for float32/float64 operands of one dtype where one is a vector,
    (k,), (1, k) or (k, 1), and the other a matrix, C-contiguous or the transpose of a
    C-contiguous one: gemv on row blocks on Numba's threads, BLAS on one thread meanwhile,
    where the matrix's bytes pay for threads. None where they do not (or for other
    operands): np.dot runs it."""
    if x.dtype != y.dtype or x.dtype not in (np.float32, np.float64) or \
            not 1 <= x.ndim <= 2 or not 1 <= y.ndim <= 2:
        return None
    if y.ndim == 1 or y.shape[1] == 1:  # x @ v: x the matrix
        matrix, vector, transposed = x, y, False
    elif x.ndim == 1 or x.shape[0] == 1:  # v @ y: the matrix's transpose times v
        matrix, vector, transposed = y, x, True
    else:
        return None
    if matrix.ndim != 2 or min(matrix.shape) < 2 or matrix.nbytes < TOP_LEVEL_MIN_BYTES:
        return None
    threads = rt_threads.threads_for(matrix.nbytes * copies.BYTE_NS)
    if threads < 2 or not (matrix.flags.c_contiguous or matrix.flags.f_contiguous):
        return None
    shape = x.shape[:-1] + y.shape[1:]  # np.dot's
    v = np.ascontiguousarray(vector.reshape(-1))
    s = matrix if matrix.flags.c_contiguous else matrix.T  # C-contiguous, as stored
    rows = transposed != (s is matrix)  # s @ v, else v @ s
    out = np.empty(s.shape[0] if rows else s.shape[1], x.dtype)
    blocks = block_count(s.shape[0], threads)
    with rt_threads.running(threads):
        if rows:
            blas.blas_call(_rows_parallel, 1, s, v, out, blocks)
        else:
            parts = np.empty((blocks, s.shape[1]), x.dtype)
            blas.blas_call(_parts_parallel, 1, v, s, parts, blocks, out)
    return out.reshape(shape)
