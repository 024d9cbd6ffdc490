"""numbax's GEMM as a job of the native pool (native_pool.py): the parallel arm of a product on a
busy machine, where Numba's OpenMP region would wait at its end for descheduled workers.

C is cut into native_pool.CHUNKS_PER_THREAD times more parts than the pool has threads
(`product_parts.thread_grid`), so the threads that do run take the parts of those that do
not. A part is one `gemm._gemm_part` call, reached from the task, a C function of
(parameters' address, part), through array views built on raw addresses with the same Numba
types `gemm.matmul` passes, so the task links the `_gemm_part` already compiled (and cached)
for those types instead of compiling another.

Measured (docs/performance.md, "A pool that does not wait"): matmul 1000^2 on the 2-core VM
beside two busy loops, numbax's OpenMP 27-29 ms, this pool 20-21, jax.jit 26 (one sitting).
"""
from __future__ import annotations

import numpy as np
from numba import cfunc, njit, types
from numba.extending import intrinsic

from numbax._src.compiler.cpu.runtime import (
    gemm,
    gemm_epilogues,
    kernel_tasks,
    native_pool,
    product_parts,
)
from numbax._src.compiler.cpu.runtime.gemm_operands import flat_operand

_PARAMS = 21  # int64 parameters of a task (`matmul`'s `params`; the last a float64's bits)


def _view(arrty):
    """(signature, codegen) of an intrinsic that views `length` elements at an address as an
    array of type `arrty` (no owner: the caller keeps the memory alive)."""
    def codegen(context, builder, sig, args):
        return kernel_tasks.array_value(context, builder, arrty, args[0], [args[1]])
    return arrty(types.int64, types.int64), codegen


_F32, _F64 = types.Array(types.float32, 1, "C"), types.Array(types.float64, 1, "C")


@intrinsic
def _f32(typingctx, addr, length):
    return _view(_F32)


@intrinsic
def _f32_read(typingctx, addr, length):
    return _view(_F32.copy(readonly=True))


@intrinsic
def _f64(typingctx, addr, length):
    return _view(_F64)


@intrinsic
def _f64_read(typingctx, addr, length):
    return _view(_F64.copy(readonly=True))


@njit(cache=True, error_model="numpy")
def _part(p, chunk, a, b, c, work, bias, scale):
    """Part `chunk` of a rows x cols grid of C."""
    m, n, kk, rows, cols = p[10], p[11], p[12], p[13], p[14]
    ms = (m + gemm.MR - 1) // gemm.MR
    nr = 2 * (gemm.VEC_BYTES // c.itemsize)
    ns = (n + nr - 1) // nr
    r, q = chunk // cols, chunk % cols
    gemm._gemm_part(a, p[2], p[3], b, p[6], p[7], c, m, n, kk, ms * r // rows,
                    ms * (r + 1) // rows, ns * q // cols, ns * (q + 1) // cols, work, bias, p[19],
                    scale)


# The tasks: compiled (or loaded from Numba's cache) when this module is imported, which the
# runtime does at a busy machine's first pooled product.
@cfunc(types.void(types.int64, types.int64), nopython=True, error_model="numpy", cache=True)
def _task_f32(arg, chunk):
    p = kernel_tasks.words(arg, _PARAMS)
    ws = p[16]
    scale = _f64_read(arg + 8 * (_PARAMS - 1), 1)[0]
    _part(p, chunk, _f32_read(p[0], p[1]), _f32_read(p[4], p[5]), _f32(p[8], p[9]),
          _f32(p[15] + 4 * ws * chunk, ws), _f32_read(p[17], p[18]), scale)


@cfunc(types.void(types.int64, types.int64), nopython=True, error_model="numpy", cache=True)
def _task_f64(arg, chunk):
    p = kernel_tasks.words(arg, _PARAMS)
    ws = p[16]
    scale = _f64_read(arg + 8 * (_PARAMS - 1), 1)[0]
    _part(p, chunk, _f64_read(p[0], p[1]), _f64_read(p[4], p[5]), _f64(p[8], p[9]),
          _f64(p[15] + 8 * ws * chunk, ws), _f64_read(p[17], p[18]), scale)


def task(dtype: np.dtype) -> int:
    """The address of the task computing one part of a float32 or float64 product."""
    return (_task_f32 if np.dtype(dtype) == np.float32 else _task_f64).address


def matmul(x: np.ndarray, y: np.ndarray, bias: np.ndarray | None = None,
           activation: str = "none", scale: float = 1.0) -> np.ndarray | None:
    """`gemm.matmul(x, y, ..., bias=, activation=, scale=)` on the native pool, with every core's
    worth of workers; None when the pool is not here or another thread's job holds it (the
    caller takes its other path)."""
    if not native_pool.available() or not gemm.supports(x, y):
        return None
    from numbax._src.compiler.cpu.runtime import threads

    native_pool.start(threads.pool_size())
    m, kk = x.shape
    n = y.shape[1]
    row, epilogue = gemm_epilogues.epilogue_args(x.dtype, (m, n), bias, activation)
    out = np.empty((m, n), x.dtype)
    if out.size == 0 or kk == 0:
        return gemm.matmul(x, y, 1, out, bias, activation, scale)
    a, rsa, csa = flat_operand(x)
    b, rsb, csb = flat_operand(y)
    ms, ns = -(-m // gemm.MR), -(-n // (2 * (gemm.VEC_BYTES // x.itemsize)))
    rows, cols = product_parts.thread_grid(
        ms, ns, native_pool.CHUNKS_PER_THREAD * (native_pool.workers() + 1))
    ws = gemm.workspace_size(x.itemsize, -(-ms // rows), -(-ns // cols),
                             gemm.packs_a(csa, kk, m))
    work = np.empty(rows * cols * ws, x.dtype)  # a row per part: parts run at once
    c = out.reshape(-1)
    params = np.array([a.ctypes.data, a.size, rsa, csa, b.ctypes.data, b.size, rsb, csb,
                       c.ctypes.data, c.size, m, n, kk, rows, cols, work.ctypes.data, ws,
                       row.ctypes.data, row.size, epilogue,
                       np.float64(scale).view(np.int64)], np.int64)
    if not native_pool.run(task(x.dtype), params, rows * cols):
        return None
    return out
