"""numbax's GEMM inside compiled control flow: a loop body's float product on gemm.py's register
tile, a block of C an iteration of the loop kernel's own prange (cpu/loop_products.py).

Why: loop bodies' products ran OpenBLAS's one-thread kernel on blocks of C (blas_parts.py) on
every host. Where OpenBLAS's kernel is not the host's best, a product in a scan ran at a
fraction of the same product at the program's top level, which numbax's GEMM runs: on the
Zen 5 dev VM, whose environment pins OpenBLAS to its Haswell (AVX2) kernels, an epoch of 20
MLP steps inside one scan took 58-64 ms, against 28-33 with OpenBLAS's AVX-512 kernels and
~30 for jax.jit (docs/performance.md). On hosts where numbax's GEMM takes every product at the
top level (`library.own_gemm_host`), loop bodies now take the same kernel, so a product gives
the same bits in a loop body as outside one, and numpy builds whose BLAS is not an OpenBLAS
(whose bodies had stayed serial on Numba's `np.dot`) run bodies on threads too.

A block is one call of gemm_tasks.py's task (a C function, compiled once per dtype and cached,
linking the `_gemm_part` that `gemm.matmul`'s own calls use), reached through its address, an
argument of the loop kernel: compiled into each kernel instead, `_gemm_part` cost every loop
kernel with products ~1 s of LLVM's work even with Numba's cache warm, and each new mix of
its operands' types (read-only or not) a few seconds more (an MLP epoch in a scan, first call
10.6 s -> 26.7). Serial on purpose, like blas_parts.loop_block: no compiled runtime function
calls a parallel one (a cached caller of a parallel function crashed the next process that
loaded it).
"""
from __future__ import annotations

import numba
import numpy as np
from numba import njit

from numbax._src.compiler.cpu.runtime import gemm, native_pool, product_parts
from numbax._src.compiler.cpu.runtime import gemm_epilogues as ep
from numbax._src.compiler.cpu.runtime import threads as rt_threads
from numbax._src.compiler.cpu.runtime.gemm_operands import workspace

_TASK_PARAMS = 21  # int64 words of gemm_tasks' parameter block


def _strips(m: int, n: int, itemsize: int) -> tuple[int, int]:
    """(row strips, column strips) of an m x n C on the register tile."""
    nr = 2 * (gemm.VEC_BYTES // itemsize)
    return -(-m // gemm.MR), -(-n // nr)


_strips_compiled = njit(cache=True)(_strips)


def workspace_words(m: int, k: int, n: int, itemsize: int, a_transposed: bool) -> int:
    """float64 words of scratch one thread's `loop_block` needs for an m x k @ k x n product
    (its largest part: the whole of C)."""
    ms, ns = _strips(m, n, itemsize)
    size = gemm.workspace_size(itemsize, ms, ns, gemm.packs_a(m if a_transposed else 1, k, m))
    return -(-size * itemsize // 8)


def loop_entry() -> np.ndarray:
    """The float32 and float64 part tasks' addresses, what `loop_block` takes (gemm_tasks.py
    is imported here, not before: importing it compiles or loads its tasks). Starts Numba's
    thread pool too: a kernel reads its thread's scratch row by numba.get_thread_id, which
    reads the pool's state, and one loaded from Numba's cache does not start the pool as its
    compilation does (a serial loop kernel so loaded crashed in a fresh process)."""
    from numbax._src.compiler.cpu.runtime import gemm_tasks

    numba.get_num_threads()  # (starts the pool once; then a lookup)
    return np.array([gemm_tasks.task(np.float32), gemm_tasks.task(np.float64)], np.int64)


def loop_work(words: int) -> np.ndarray:
    """This Python thread's float64 scratch for a loop kernel's products: `words` a Numba
    thread, a row per thread of the pool (a block runs on its thread's row, numba's
    get_thread_id); gemm.py's per-thread cache, so no allocation or page faults a call."""
    return workspace(np.dtype(np.float64), rt_threads.pool_size(), max(words, 1))


@njit(cache=True)
def loop_grid(threads, c):
    """(rows, cols): C's parts for a loop kernel's prange over `loop_block` on `threads`
    threads, whole register-tile strips each, at most one a thread."""
    ms, ns = _strips_compiled(c.shape[0], c.shape[1], c.itemsize)
    return product_parts.grid_in_loop(ms, ns, threads)


@njit(cache=True, error_model="numpy")
def loop_block(tasks, q, rows, cols, a, a_transposed, b, b_transposed, c, work):
    """Part q of a rows x cols grid (`loop_grid`) of C = A @ B, C a C-contiguous (m, n) array:
    `a` is A (m x k) flattened from its C-contiguous form, or from its transpose's where
    `a_transposed`; `b` the same for B (k x n). `tasks` is `loop_entry()`, `work` the running
    thread's row of `loop_work`'s array."""
    m, n = c.shape
    kk = a.size // m
    rsa, csa = (1, m) if a_transposed else (kk, 1)
    rsb, csb = (1, kk) if b_transposed else (n, 1)
    item = c.itemsize
    ws = work.size * 8 // item  # the scratch in C's elements
    p = np.empty(_TASK_PARAMS, np.int64)  # gemm_tasks.matmul's parameter block
    p[0], p[1], p[2], p[3] = a.ctypes.data, a.size, rsa, csa
    p[4], p[5], p[6], p[7] = b.ctypes.data, b.size, rsb, csb
    p[8], p[9], p[10], p[11], p[12], p[13], p[14] = c.ctypes.data, c.size, m, n, kk, rows, cols
    # the task's scratch for part q is p[15] + q * ws elements: this thread's row
    p[15], p[16] = work.ctypes.data - q * ws * item, ws
    p[17], p[18], p[19] = c.ctypes.data, 1, ep.NO_EPILOGUE  # (no bias row is read)
    p[20] = 0  # (the scale's bits: read by no epilogue)
    native_pool.call_task(tasks[0] if item == 4 else tasks[1], p.ctypes.data, q)
