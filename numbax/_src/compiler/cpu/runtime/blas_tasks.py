"""OpenBLAS's one-thread GEMM as a job of the native pool (native_pool.py): a busy AVX2 machine's
parallel products, with BLAS's kernel and a caller that never waits for a descheduled worker.

blas_parts.py drives OpenBLAS's kernel on Numba's OpenMP threads, one block of C a thread; its
region ends at a barrier that, beside other busy processes, waits a scheduler slice for any
worker that has not run. gemm_tasks.py puts products on the native pool instead, but with
numbax's own register tile, whose AVX2 form (6 x 16 in ymm registers) runs 20-30% under
OpenBLAS's Haswell kernel on a Zen 3 core. Here the pool's chunks are blas_parts' blocks:
C is cut into native_pool.CHUNKS_PER_THREAD blocks a pool thread, each one cblas call with
OpenBLAS set to one thread for the job.
"""
from __future__ import annotations

import numpy as np
from numba import cfunc, njit, types

from numbax._src.compiler.cpu.runtime import (
    blas,
    blas_parts,
    kernel_tasks,
    native_pool,
    product_parts,
)

# A task's int64 parameters: cblas address, ta, tb, m, n, k, a, lda, b, ldb, c, ldc, itemsize,
# rows, cols, BLAS integer bits
_PARAMS = 16


@njit(cache=True, error_model="numpy")
def _part(p, chunk, one, zero):
    ta, tb = np.int32(p[1]), np.int32(p[2])
    if p[15] == 64:
        width = np.int64(0)
        blas_parts.block(chunk, p[0], ta, tb, p[3], p[4], p[5], one, p[6], p[7], p[8], p[9],
                         zero, p[10], p[11], p[12], p[13], p[14], width)
    else:
        narrow = np.int32(0)
        blas_parts.block(chunk, p[0], ta, tb, p[3], p[4], p[5], one, p[6], p[7], p[8], p[9],
                         zero, p[10], p[11], p[12], p[13], p[14], narrow)


# Compiled (or loaded from Numba's cache) when this module is imported: at a busy machine's
# first pooled product.
@cfunc(types.void(types.int64, types.int64), nopython=True, error_model="numpy", cache=True)
def _task_f32(arg, chunk):
    _part(kernel_tasks.words(arg, _PARAMS), chunk, np.float32(1), np.float32(0))


@cfunc(types.void(types.int64, types.int64), nopython=True, error_model="numpy", cache=True)
def _task_f64(arg, chunk):
    _part(kernel_tasks.words(arg, _PARAMS), chunk, np.float64(1), np.float64(0))


def matmul(x: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    """x @ y for operands blas_parts takes, as a new C-contiguous array, on the native pool with
    every core's worth of workers; None when blas_parts does not take them, the pool is not
    here, or another thread's job holds it (the caller takes its other path)."""
    if not native_pool.available():
        return None
    from numbax._src.compiler.cpu.runtime import threads

    native_pool.start(threads.pool_size())
    parts = native_pool.CHUNKS_PER_THREAD * (native_pool.workers() + 1)
    planned = blas_parts.plan(
        x, y, lambda rows, cols: product_parts.thread_grid(rows, cols, parts))
    if planned is None:
        return None
    fn, (ta, lda), (tb, ldb), rows, cols, width = planned
    m, k = x.shape
    n = y.shape[1]
    out = np.empty((m, n), x.dtype)
    params = np.array([fn, ta, tb, m, n, k, x.ctypes.data, lda, y.ctypes.data, ldb,
                       out.ctypes.data, n, x.itemsize, rows, cols, 8 * width.itemsize],
                      np.int64)
    task = (_task_f32 if x.dtype == np.float32 else _task_f64).address
    if not blas.blas_call(native_pool.run, 1, task, params, rows * cols):
        return None
    return out
