"""Several matrix products run together on Numba's threads. Two independent ones: the parts of
both grids taken from one counter, each product cut for half the threads (on two threads, each
thread one whole product). XLA runs a training step's independent products (a backward pass's
h1ᵀ @ d2 and d2 @ W2ᵀ) this way, each on its own threads, where splitting each over every
thread in turn shares B's packing and pays a region per product. library.dot_pair decides
where a pair runs here. A batch of products too small to split: whole products a thread
(`matmul_batched`). gemm.py's part and workspace code does the work; until the helper process
has compiled a threaded form (compile_ahead.runtime_ready), the products run one at a time."""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from numbax._src.compiler.cpu.runtime import compile_ahead, gemm, product_parts
from numbax._src.compiler.cpu.runtime import gemm_epilogues as ep
from numbax._src.compiler.cpu.runtime.gemm_operands import flat3, flat_operand, workspace


@njit(cache=True, parallel=True, error_model="numpy")
def _gemm_pair(a1, rsa1, csa1, b1, rsb1, csb1, c1, m1, n1, k1, rows1, cols1,
               a2, rsa2, csa2, b2, rsb2, csb2, c2, m2, n2, k2, rows2, cols2,
               work, epilogue1, epilogue2, next_part):
    """Two products' grids of parts as one list, on one thread per row of `work`, each
    thread taking the next part of either from the counter `next_part` (zero on entry): the
    first product's rows1 x cols1 parts, then the second's (`matmul_pair`), each with its
    epilogue, a (bias, code, scale) triple. One call site of `_gemm_part` (each is an unrolled
    tile to compile)."""
    nr = 2 * (gemm.VEC_BYTES // c1.itemsize)
    parts1 = rows1 * cols1
    parts = parts1 + rows2 * cols2
    for th in prange(work.shape[0]):
        p = product_parts.take(next_part)
        while p < parts:
            first = p < parts1
            a, rsa, csa, b, rsb, csb, c, m, n, kk, rows, cols, q, (bias, epilogue, scale) = \
                (a1, rsa1, csa1, b1, rsb1, csb1, c1, m1, n1, k1, rows1, cols1, p, epilogue1) \
                if first else (a2, rsa2, csa2, b2, rsb2, csb2, c2, m2, n2, k2, rows2, cols2,
                               p - parts1, epilogue2)
            ms, ns = (m + gemm.MR - 1) // gemm.MR, (n + nr - 1) // nr
            r, t = q // cols, q % cols
            gemm._gemm_part(a, rsa, csa, b, rsb, csb, c, m, n, kk, ms * r // rows,
                            ms * (r + 1) // rows, ns * t // cols, ns * (t + 1) // cols,
                            work[th], bias, epilogue, scale)
            p = product_parts.take(next_part)


def matmul_pair(x1: np.ndarray, y1: np.ndarray, x2: np.ndarray, y2: np.ndarray, threads: int,
                epilogue1=(), epilogue2=()) -> tuple[np.ndarray, np.ndarray]:
    """(x1 @ y1, x2 @ y2), each with its epilogue when given ((bias, activation[, scale]) as
    `gemm.matmul` takes them), for two products `gemm.supports` accepts, of one dtype, run
    together on `threads` Numba threads: each product cut for half the threads
    (`product_parts.candidates`' cheapest grid; on two threads each a whole product), the
    threads taking parts of either from one counter. Two independent products of a training
    step's backward pass (h1ᵀ @ d2 and d2 @ W2ᵀ at batch 128-256) each on one thread at once
    ran 10-28 % faster than each split over both threads in turn on the 2-core VM
    (docs/performance.md)."""
    if not (gemm.supports(x1, y1) and gemm.supports(x2, y2) and x1.dtype == x2.dtype):
        raise ValueError(
            f"gemm_pairs.matmul_pair takes two products gemm_cpu.matmul takes, of one dtype; got "
            f"{x1.dtype}{x1.shape} @ {y1.dtype}{y1.shape} and {x2.dtype}{x2.shape} @ "
            f"{y2.dtype}{y2.shape}")
    nr = 2 * (gemm.VEC_BYTES // x1.itemsize)
    flats, grids, outs, sizes, epilogues = [], [], [], [], []
    for x, y, epilogue in ((x1, y1, epilogue1), (x2, y2, epilogue2)):
        m, kk = x.shape
        n = y.shape[1]
        out = np.empty((m, n), x.dtype)
        bias, activation, scale = (*epilogue, 1.0)[:3] if epilogue else (None, "none", 1.0)
        row, code = ep.epilogue_args(x.dtype, (m, n), bias, activation)
        if kk == 0:
            out.fill(0)
            if code != ep.NO_EPILOGUE:
                ep.finish_block(out.reshape(-1), 0, m, n, row, code, scale)
        a, rsa, csa = flat_operand(x)
        b, rsb, csb = flat_operand(y)
        ms, ns = -(-m // gemm.MR), -(-n // nr)
        rows, cols = product_parts.candidates(
            ms, ns, max(1, threads // 2), gemm.PACK_B_FROM_ROW_STRIPS if csb == 1 else 0,
            csa != 1)[0] if out.size and kk else (0, 0)  # (nothing to multiply: no parts)
        flats.append((a, rsa, csa, b, rsb, csb, out.reshape(-1), m, n, kk, rows, cols))
        sizes.append(gemm.workspace_size(x.itemsize, -(-ms // max(rows, 1)),
                                         -(-ns // max(cols, 1)), gemm.packs_a(csa, kk, m)))
        grids.append(rows * cols)
        outs.append(out)
        epilogues.append((row, code, float(scale)))
    workers = max(1, min(threads, sum(grids)))
    work = workspace(x1.dtype, workers, max(sizes))
    counter = np.zeros(1, np.int64)
    if not _gemm_pair.overloads and not compile_ahead.runtime_ready(
            _gemm_pair, lambda: (*flats[0], *flats[1], work, *epilogues, counter)):
        return tuple(gemm.matmul(x, y, threads, out, *epilogue) for x, y, out, epilogue in
                     ((x1, y1, outs[0], epilogue1), (x2, y2, outs[1], epilogue2)))
    _gemm_pair(*flats[0], *flats[1], work, *epilogues, counter)
    return outs[0], outs[1]


@njit(cache=True, parallel=True, error_model="numpy")
def _gemm_batches(a, rsa, csa, b, rsb, csb, c, m, n, kk, work, bias, epilogue, scale, next_one):
    """`_gemm_part` over whole products a[p] @ b[p] -> c[p] (one flat matrix a row), on one
    thread per row of `work`, each taking the next p from the counter `next_one` (zero on
    entry): a batch of products each too small to share among threads."""
    nb = c.shape[0]
    ms = (m + gemm.MR - 1) // gemm.MR
    ns = (n + 2 * (gemm.VEC_BYTES // c.itemsize) - 1) // (2 * (gemm.VEC_BYTES // c.itemsize))
    first = np.intp(0)  # typed int64 as in `matmul`'s calls: a literal 0 compiled a second copy
    for th in prange(work.shape[0]):
        p = product_parts.take(next_one)
        while p < nb:
            gemm._gemm_part(a[p], rsa, csa, b[p], rsb, csb, c[p], m, n, kk, first, ms, first,
                            ns, work[th], bias, epilogue, scale)
            p = product_parts.take(next_one)


def matmul_batched(x: np.ndarray, y: np.ndarray, threads: int, out: np.ndarray) -> bool:
    """out[p] = x[p] @ y[p] for 3D float operands of one dtype (`out`: C-contiguous, of the
    result's shape), on up to `threads` threads, each computing whole products of a run of
    consecutive p: for batches of products too small to split. False (nothing written) where
    a layout is not `flat3`'s, there is nothing to multiply, or the threaded form is not
    compiled yet (the caller then multiplies entry by entry)."""
    fx, fy = flat3(x), flat3(y)
    if fx is None or fy is None or out.size == 0 or x.shape[2] == 0:
        return False
    (a, rsa, csa), (b, rsb, csb) = fx, fy
    nb, m, kk = x.shape
    n = y.shape[2]
    ns = -(-n // (2 * (gemm.VEC_BYTES // x.itemsize)))
    work = workspace(x.dtype, max(1, min(threads, nb)), gemm.workspace_size(
        x.itemsize, -(-m // gemm.MR), ns, gemm.packs_a(csa, kk, m)))
    row, epilogue = ep.epilogue_args(x.dtype, (m, n), None, "none")
    args = (a, rsa, csa, b, rsb, csb, out.reshape(nb, -1), m, n, kk, work, row, epilogue, 1.0,
            np.zeros(1, np.int64))
    if not _gemm_batches.overloads and not compile_ahead.runtime_ready(_gemm_batches,
                                                                       lambda: args):
        return False
    _gemm_batches(*args)
    return True
