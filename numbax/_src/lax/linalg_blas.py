"""Real triangular solves and Cholesky factorisations: one matrix on its own memory through
BLAS and LAPACK, a stack of small ones by substitution over the whole stack; and the blocked
copy (`relaid`) that moves a matrix between row- and column-major order for LAPACK, and the
workspace every LAPACK call here passes (`optimal_lwork`).

BLAS and LAPACK are column-major; numbax's arrays are row-major. A C-contiguous matrix is the
Fortran-contiguous transpose of itself, so each call here hands BLAS the transposed problem
instead of letting scipy's wrappers copy the operands into column order (and numbax copy the
result back):
- `solve_triangular`: op(a) x = b is xᵀ op(a)ᵀ = bᵀ, one trsm from the right on bᵀ, which is a
  C-contiguous copy of b seen in column order, written in place; a is read where it lies.
  Through scipy's `solve_triangular` (trtrs on column-major copies of b and, for C-ordered a,
  of a), a 1024 x 1024 system of 1024 right-hand sides took 9.0 ms on 16 Xeon cores against
  5.0 for trtrs alone (jax.jit 8.1).
- `cholesky`: the lower factor of a row-major matrix is the upper factor of its column-major
  view. OpenBLAS's upper potrf ran 4.9 ms at 1024² on those cores where numpy's cholesky (the
  lower one, on a column-major copy) ran 20.9, and 21 against 116 ms at 2048² (jax.jit 8.1
  and 49; docs/performance.md).
trsm does not stop at a zero on the diagonal: it divides by it, giving the infinities and
NaNs JAX gives, where trtrs refuses the system.

A stack of many small triangular systems (`solve_stacked`: LU's solves of a batch) is solved
row by row over every matrix at once, as linalg_lu.py factors such stacks (STACKED_MAX):
numpy's batched solve of the triangles, copied out, took 4.8 ms for 10,000 systems of 3 x 3
on the 2-core VM.
"""
from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Iterator

import numpy as np
import scipy  # scipy.linalg: imported at first use (scipy loads subpackages lazily)

from numbax._src import host_threads


def takes(a: np.ndarray, b: np.ndarray | None = None) -> bool:
    """Whether `solve_triangular` and `cholesky` take these operands: 2D float32/float64 of
    one dtype."""
    return a.ndim == 2 and a.dtype in (np.float32, np.float64) and (
        b is None or (b.ndim == 2 and b.dtype == a.dtype))


# The dtypes LAPACK's routines take (one letter each: s, d, c, z).
LAPACK_DTYPES = tuple(map(np.dtype, (np.float32, np.float64, np.complex64, np.complex128)))


def optimal_lwork(work) -> int:
    """The optimal workspace a LAPACK query reported (a float, maybe complex), rounded up.
    numbax's LAPACK calls pass it: scipy's wrappers default to the least workspace, which
    leaves LAPACK its unblocked algorithm (1024^2 float64 on the 2-core VM: geqrf 168 ms against 40
    with the optimum, orgqr 130 against 38; docs/performance.md)."""
    return max(1, math.ceil(float(np.real(np.ravel(work)[0])) * (1 + 2.0 ** -20)))


# Rows (columns) of each block `relaid` copies.
RELAYOUT_BLOCK = 64
# `relaid`'s threads: each copies whole blocks, at least COPY_THREAD_BYTES, and no more than
# COPY_THREADS_MAX run (a copy is bound by memory, which a few cores already fill).
COPY_THREAD_BYTES = 1 << 20
COPY_THREADS_MAX = 8
# The most threads `relaid` may take in this context: None for the cores this process may run
# on; the CPU runtime sets it around a LAPACK call between kernels to the threads that call
# gets (`copy_threads_within`): one while Numba's workers may still spin.
_copy_threads: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "numbax_copy_threads", default=None)


@contextlib.contextmanager
def copy_threads_within(threads: int | None) -> Iterator[None]:
    """`relaid` takes at most `threads` threads inside the block (None: the cores)."""
    token = _copy_threads.set(threads)
    try:
        yield
    finally:
        _copy_threads.reset(token)


def copy_threads(nbytes: int) -> int:
    """Threads for a `relaid` copy of `nbytes`, within the context's limit."""
    limit = _copy_threads.get()
    cap = min(COPY_THREADS_MAX, host_threads.cores() if limit is None else limit)
    return host_threads.share_count(cap, nbytes, COPY_THREAD_BYTES)


def relaid(x: np.ndarray, order: str) -> np.ndarray:
    """A copy of the 2D array x in memory order `order` ("C" or "F"), made by blocks of
    RELAYOUT_BLOCK rows (into "F") or columns (into "C"), whose source lines stay in cache while
    numpy walks the other layout (1024^2 float64 on the 2-core VM 1.6 ms, against 5.3 for
    np.asfortranarray and 4.7 for np.ascontiguousarray of the transposed layout), the blocks
    shared among `copy_threads` threads (2048^2 float64 on 16 Xeon cores: 17 ms on one, 6 on
    four)."""
    out = np.empty(x.shape, x.dtype, order=order)
    axis = 0 if order == "F" else 1

    def blocks(lo: int, hi: int) -> None:
        for start in range(lo * RELAYOUT_BLOCK, min(hi * RELAYOUT_BLOCK, x.shape[axis]),
                           RELAYOUT_BLOCK):
            block = slice(start, start + RELAYOUT_BLOCK)
            if order == "F":
                out[block] = x[block]
            else:
                out[:, block] = x[:, block]

    count = -(-x.shape[axis] // RELAYOUT_BLOCK)
    host_threads.run(min(count, copy_threads(x.nbytes)), [(blocks, 0, count)])
    return out


# Stacks of matrices of up to this many rows, at least twice as many matrices as rows, are
# solved (and LU-factored) over the whole stack at once.
STACKED_MAX = 64


def takes_stack(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether `solve_stacked` takes these operands: real, one dtype, a stack of many small
    matrices (a and b have the same batch dims, as triangular_solve requires)."""
    n = a.shape[-1]
    return a.ndim > 2 and a.dtype in (np.float32, np.float64) and b.dtype == a.dtype and \
        0 < n <= STACKED_MAX and math.prod(a.shape[:-2]) >= 2 * n


def solve_stacked(a: np.ndarray, b: np.ndarray, left_side: bool, lower: bool,
                  transpose_a: bool, unit_diagonal: bool) -> np.ndarray:
    """`solve_triangular` for stacks (..., n, n) and (..., n, k) or (..., k, n): forward (back)
    substitution, one row of every system per step, reading only the `lower` (else upper)
    triangle and not a unit diagonal; a zero pivot divides."""
    # x op(a) = b is op(a)ᵀ xᵀ = bᵀ: either way t y = rhs with t = a or aᵀ
    flip = transpose_a if left_side else not transpose_a
    t = np.swapaxes(a, -1, -2) if flip else a
    t_lower = lower != flip
    rhs = b if left_side else np.swapaxes(b, -1, -2)
    n = a.shape[-1]
    y = np.empty(rhs.shape, a.dtype)
    with np.errstate(all="ignore"):
        for i in range(n) if t_lower else range(n - 1, -1, -1):
            done = slice(0, i) if t_lower else slice(i + 1, n)
            row = rhs[..., i, :] - np.einsum("...j,...jk->...k", t[..., i, done],
                                             y[..., done, :])
            y[..., i, :] = row if unit_diagonal else row / t[..., i, i, None]
    return y if left_side else np.ascontiguousarray(np.swapaxes(y, -1, -2))


def _column_major(a: np.ndarray, lower: bool) -> tuple[np.ndarray, bool, bool]:
    """(m, lower, transposed): a Fortran-contiguous matrix m BLAS reads without a copy, with
    m = aᵀ (its triangle flipped) where a is row-major, m = a where it is column-major."""
    if a.flags.f_contiguous:
        return a, lower, False
    return np.ascontiguousarray(a).T, not lower, True


def solve_triangular(a: np.ndarray, b: np.ndarray, left_side: bool, lower: bool,
                     transpose_a: bool, unit_diagonal: bool) -> np.ndarray:
    """x with op(a) x = b (`left_side`) or x op(a) = b, op(a) = aᵀ if `transpose_a` else a,
    reading only a's `lower` (else upper) triangle, and not its diagonal if `unit_diagonal`;
    x is a new C-contiguous array."""
    x = np.array(b, order="C", copy=True)
    if x.size == 0 or a.shape[0] == 0:
        return x
    m, m_lower, m_is_transpose = _column_major(a, lower)
    # xᵀ (column-major: x's own memory) solves from the other side against op(a)ᵀ, which is
    # m as it is when m is aᵀ and op is the identity, or when m is a and op transposes.
    trans_m = transpose_a == m_is_transpose
    trsm = scipy.linalg.blas.get_blas_funcs("trsm", (m, x))
    out = trsm(1.0, m, x.T, side=int(left_side), lower=int(m_lower), trans_a=int(trans_m),
               diag=int(unit_diagonal), overwrite_b=1)
    if not np.shares_memory(out, x):  # the wrapper copied after all: keep its result
        x = np.ascontiguousarray(out.T)
    return x


def cholesky(x: np.ndarray) -> np.ndarray:
    """The lower Cholesky factor of the symmetric matrix whose lower triangle x holds, as a
    new C-contiguous array (the upper triangle zero); all NaN where x is not positive
    definite, as JAX gives."""
    factor = np.array(x, order="C", copy=True)
    if factor.size == 0:
        return factor
    potrf = scipy.linalg.lapack.get_lapack_funcs("potrf", (factor,))
    # factor's column-major view is xᵀ: its upper triangle is x's lower one, and the upper
    # factor U (Uᵀ U = xᵀ) seen row-major is L = Uᵀ with L Lᵀ = x.
    out, info = potrf(factor.T, lower=0, clean=1, overwrite_a=1)
    if info != 0:
        factor.fill(np.nan)
    elif not np.shares_memory(out, factor):
        factor = np.ascontiguousarray(out.T)
    return factor
