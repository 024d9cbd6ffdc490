"""OpenBLAS's one-thread GEMM run on Numba's threads: each block of C is one
cblas_sgemm/cblas_dgemm call, so products and fused kernels share one pool.

Why: numbax's own register tile (gemm.py) is written for AVX-512's 32 vector registers; with
AVX2's 16 (the 2-core Zen 3 VM) its 6 x 16 tile ran at 55-75 GFLOP/s a core where OpenBLAS's
Haswell kernels ran at 70-90. OpenBLAS threaded by itself has its own pool, whose threads and
Numba's spin against each other after each parallel region (`blas.blas_threads` then gives
BLAS one thread: the VM's batch-2048 MLP step ran its products at 75 GFLOP/s on one core).
Here BLAS is set to one thread for the call and Numba's workers drive it on blocks of C
(product_parts.py): two threads on the VM ran the MLP's products at
OpenBLAS's own two-thread speed (92-147 GFLOP/s) with no second pool. On the 16-core AVX-512
Xeon it was no faster than gemm.py's tile, which stays there (library.own_gemm).

The cblas entry points come from the OpenBLAS numpy loaded (`blas._openblas`: numpy's
scipy-openblas, 64-bit integers, or a system one); the call goes through an address given to
the compiled kernel, so the kernel is cached on disk like the others. Concurrent one-thread
calls are safe in OpenBLAS (its buffers are taken under a lock).
"""
from __future__ import annotations

import ctypes

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.extending import intrinsic

from numbax._src.compiler.cpu.runtime import blas, product_parts

ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112  # cblas's enum values
PART = 16  # rows and columns of C per grid unit of `product_parts`' grids


@intrinsic
def _cblas_gemm(typingctx, fn, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, width):
    """cblas_?gemm(RowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) through the
    function at address `fn`; a, b, c are addresses, the integer arguments are passed as C
    ints of `width`'s type (int64 for an ILP64 OpenBLAS, int32 otherwise)."""
    sig = types.void(fn, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, width)

    def codegen(context, builder, sig, args):
        fn, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, _ = args
        blas_int = context.get_value_type(sig.args[-1])
        real = context.get_value_type(sig.args[6])
        enum = ir.IntType(32)
        ptr = real.as_pointer()

        def bi(v):
            return builder.trunc(v, blas_int) if v.type.width > blas_int.width else v

        fnty = ir.FunctionType(ir.VoidType(), [enum, enum, enum, blas_int, blas_int, blas_int,
                                               real, ptr, blas_int, ptr, blas_int, real, ptr,
                                               blas_int])
        call = builder.inttoptr(fn, fnty.as_pointer())
        builder.call(call, [ir.Constant(enum, ROW_MAJOR), builder.trunc(ta, enum),
                            builder.trunc(tb, enum), bi(m), bi(n), bi(k), alpha,
                            builder.inttoptr(a, ptr), bi(lda), builder.inttoptr(b, ptr), bi(ldb),
                            beta, builder.inttoptr(c, ptr), bi(ldc)])
        return context.get_dummy_value()

    return sig, codegen


@njit(cache=True, error_model="numpy")
def block(q, fn, ta, tb, m, n, k, one, a, lda, b, ldb, zero, c, ldc, itemsize, rows, cols,
          width):
    """Block q (row-major) of a rows x cols grid of C = A @ B, in one cblas call."""
    r, s = q // cols, q % cols
    r0, r1 = m * r // rows, m * (r + 1) // rows
    c0, c1 = n * s // cols, n * (s + 1) // cols
    if r1 > r0 and c1 > c0:
        a_at = a + (r0 * lda if ta == NO_TRANS else r0) * itemsize
        b_at = b + (c0 if tb == NO_TRANS else c0 * ldb) * itemsize
        _cblas_gemm(fn, ta, tb, r1 - r0, c1 - c0, k, one, a_at, lda, b_at, ldb, zero,
                    c + (r0 * ldc + c0) * itemsize, ldc, width)


@njit(cache=True, parallel=True, error_model="numpy")
def _grid(fn, ta, tb, m, n, k, one, a, lda, b, ldb, zero, c, ldc, itemsize, rows, cols,
          width, threads, next_block):
    """C = A @ B over a rows x cols grid of C's blocks, on `threads` threads each taking the
    next block from the counter `next_block` (zero on entry; product_parts.py)."""
    for _ in prange(threads):
        q = product_parts.take(next_block)
        while q < rows * cols:
            block(q, fn, ta, tb, m, n, k, one, a, lda, b, ldb, zero, c, ldc, itemsize, rows,
                  cols, width)
            q = product_parts.take(next_block)


_api: list = []  # [None or (sgemm address, dgemm address, integer width sample)] once asked


def _find():
    if not _api:
        found = blas._openblas()
        entry = None
        if found is not None and blas._find_blas_api():
            lib, prefix, suffix = found
            cblas = "scipy_cblas" if prefix == "scipy_openblas" else "cblas"
            try:
                addresses = [ctypes.cast(getattr(lib, f"{cblas}_{t}gemm{suffix}"),
                                         ctypes.c_void_p).value for t in "sd"]
            except AttributeError:
                addresses = None
            if addresses and all(addresses):
                width = np.int64(0) if suffix.startswith("64") else np.int32(0)
                entry = (*addresses, width)
        _api.append(entry)
    return _api[0]


def available() -> bool:
    """Whether numpy's BLAS is an OpenBLAS whose cblas GEMM and thread count this can reach."""
    return _find() is not None


def _operand_flags(rows: int, cols: int, row_stride: int, col_stride: int, item: int):
    """(cblas transpose flag, leading dimension) of a rows x cols matrix with these strides in
    bytes whose rows or columns are contiguous, else (0, 0); Numba compiles it too
    (`loop_block`)."""
    if col_stride == item and row_stride % item == 0 and row_stride >= cols * item:
        return NO_TRANS, row_stride // item
    if row_stride == item and col_stride % item == 0 and col_stride >= rows * item:
        return TRANS, col_stride // item
    return 0, 0


_operand_flags_in_loop = njit(cache=True)(_operand_flags)


def _operand(x: np.ndarray):
    """(cblas transpose flag, leading dimension) of a 2-D array whose rows or columns are
    contiguous, or None."""
    flags = _operand_flags(*x.shape, *x.strides, x.itemsize)
    return None if flags[0] == 0 else flags


def _layout(x: np.ndarray, y: np.ndarray):
    """((transpose flag, leading dimension) of x, the same of y) where `matmul` takes x @ y:
    2-D float32/float64 operands of one dtype, each with contiguous rows or columns, every
    side at least 2, and an OpenBLAS to call; else None."""
    if not (x.ndim == 2 and y.ndim == 2 and x.dtype == y.dtype
            and x.dtype in (np.float32, np.float64) and x.shape[1] == y.shape[0]
            and min(x.shape[0], x.shape[1], y.shape[1]) >= 2 and available()):
        return None
    a, b = _operand(x), _operand(y)
    return None if a is None or b is None else (a, b)


def supports(x: np.ndarray, y: np.ndarray) -> bool:
    """Whether `matmul` takes x @ y (`_layout`)."""
    return _layout(x, y) is not None


def plan(x: np.ndarray, y: np.ndarray, grid):
    """(cblas entry point, (ta, lda), (tb, ldb), rows, cols, integer width sample) for
    x @ y in the rows x cols blocks of C that `grid` gives for (row units, column units), in
    units of PART rows or columns; None where `supports` does not."""
    layout = _layout(x, y)
    if layout is None:
        return None
    sgemm, dgemm, width = _find()
    rows, cols = grid(-(-x.shape[0] // PART), -(-y.shape[1] // PART))
    return sgemm if x.dtype == np.float32 else dgemm, *layout, rows, cols, width


def matmul(x: np.ndarray, y: np.ndarray, threads: int) -> np.ndarray:
    """x @ y for operands `supports` takes, as a new C-contiguous array: a block of C a thread
    on `threads` of Numba's threads (the caller sets Numba's count), BLAS on one thread
    meanwhile. One block a thread, not gemm.py's few: each cblas call packs its whole panels
    of A and B again, and on the 2-core VM four blocks a thread ran 1000^2 and 2000^2 8-15 %
    slower. The threads still take the blocks from a counter, so one that starts late finds
    its block taken."""
    threads = max(1, threads)
    planned = plan(x, y, lambda rows, cols: product_parts.thread_grid(rows, cols, threads))
    if planned is None:
        raise ValueError(
            f"blas_parts.matmul takes two 2-D float32/float64 arrays of one dtype with "
            f"contiguous rows or columns, sides of at least 2 and x.shape[1] == y.shape[0], "
            f"with numpy on OpenBLAS; got x {x.dtype}{x.shape} and y {y.dtype}{y.shape}: "
            f"call np.dot for other operands")
    fn, (ta, lda), (tb, ldb), rows, cols, width = planned
    m, k = x.shape
    n = y.shape[1]
    out = np.empty((m, n), x.dtype)
    one, zero = x.dtype.type(1), x.dtype.type(0)
    blas.blas_call(_grid, 1, fn, np.int32(ta), np.int32(tb), m, n, k, one, x.ctypes.data, lda,
                   y.ctypes.data, ldb, zero, out.ctypes.data, n, x.itemsize, rows, cols, width,
                   min(threads, rows * cols), np.zeros(1, np.int64))
    return out


# Products of this many multiply-adds and more run on Numba's threads (library.py's rule too).
THREADED_MACS = 1 << 20


def loop_entry() -> tuple[np.ndarray, np.generic]:
    """(cblas sgemm and dgemm addresses, integer width sample): what `loop_block` takes, this
    process's (compiled loops use it only where `available`)."""
    sgemm, dgemm, width = _find()
    return np.array([sgemm, dgemm], np.int64), width


@njit(cache=True)
def loop_grid(threads, m, n):
    """(rows, cols): the grid of C's blocks for an m x n result on `threads` threads, for a
    compiled loop's prange over `loop_block` (product_parts.grid_in_loop)."""
    return product_parts.grid_in_loop(-(-m // PART), -(-n // PART), threads)


@njit(cache=True, error_model="numpy")
def loop_block(entry, width, q, rows, cols, x, y, out):
    """Block q of a rows x cols grid of out = x @ y inside compiled control flow (a loop
    body's product), in one one-thread cblas call: x and y float32/float64 matrices of one
    dtype, each C-contiguous or the transpose of a C-contiguous matrix, every side at least
    2; out C-contiguous. `entry` is `loop_entry()`. The loop kernel runs the blocks in its own
    prange (cpu/loop_products.py) while the driver holds OpenBLAS to one thread: no second
    pool spins beside Numba's. Serial on purpose: a cached function that calls a parallel one
    from compiled code was saved without the pieces its callers need when that parallel
    function came from Numba's disk cache, and the next process to load the caller crashed."""
    m, k = x.shape
    n = y.shape[1]
    ta, lda = _operand_flags_in_loop(m, k, x.strides[0], x.strides[1], x.itemsize)
    tb, ldb = _operand_flags_in_loop(k, n, y.strides[0], y.strides[1], y.itemsize)
    block(q, entry[0] if x.itemsize == 4 else entry[1], np.int32(ta), np.int32(tb), m, n, k,
          out.dtype.type(1), x.ctypes.data, lda, y.ctypes.data, ldb, out.dtype.type(0),
          out.ctypes.data, n, out.itemsize, rows, cols, width)
