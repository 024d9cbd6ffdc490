"""What CPU drivers call besides kernels: matrix products, on numbax's GEMM (gemm.py) or BLAS
under the thread policy of blas.py."""
from __future__ import annotations

import math

import numpy as np

from numbax._src.compiler.cpu.runtime import (
    blas_parts,
    busy_sites,
    compile_ahead,
    copies,
    gemm_amx,
    gemm_epilogues,
    gemm_operands,
    gemm_pairs,
    host_isa,
    matvec,
    native_pool,
)
from numbax._src.compiler.cpu.runtime import gemm as gemm_cpu
from numbax._src.compiler.cpu.runtime import threads as rt_threads
from numbax._src.compiler.cpu.runtime.blas import (
    BLAS_THREADED_MACS,
    blas_core,
    blas_threads,
    numpy_blas_call,
    thread_rule,
)
from numbax._src.config import config

# Products of a batch that fills at least half the threads run a whole product a thread
# below this size: 16 cores, 12 products of (128 x 64) @ (64 x 128) took 0.31-0.42 ms one
# after another on every thread, 0.08-0.10 a whole product a thread (jax.jit 0.11-0.19).
WHOLE_BATCH_MACS = 1 << 26


def dot_general(x: np.ndarray, y: np.ndarray, dimension_numbers, out_dtype) -> list[np.ndarray]:
    """lax.dot_general as one matrix product (`dot`), one `gemm_cpu` product per batch entry
    (batches of products `dot` would give it), or np.matmul (BLAS) over (batch, free,
    contract) layouts; operands given as transposed views (passes.fold_transposes) reach BLAS
    as transpose flags and `gemm_cpu` as strides, no copy."""
    (xc, yc), (xb, yb) = dimension_numbers
    xf = [d for d in range(x.ndim) if d not in xc and d not in xb]
    yf = [d for d in range(y.ndim) if d not in yc and d not in yb]
    bshape = [x.shape[d] for d in xb]
    xfs, yfs = [x.shape[d] for d in xf], [y.shape[d] for d in yf]
    k = math.prod([x.shape[d] for d in xc])  # math.prod: np.prod costs 2 us per list
    nb = math.prod(bshape)
    m = math.prod(xfs)
    n = math.prod(yfs)
    x3 = np.transpose(x, [*xb, *xf, *xc]).reshape(nb, m, k)
    y3 = np.transpose(y, [*yb, *yc, *yf]).reshape(nb, k, n)
    if x.dtype == y.dtype == gemm_amx.BF16:
        # a product narrow_floats left in bfloat16 for AMX's tiles (cpu/backend.py)
        out = bfloat16_dot(x3, y3, out_dtype)
        return [np.asarray(out.reshape((*bshape, *xfs, *yfs)), order="C")]
    if x3.dtype != out_dtype:
        x3 = x3.astype(out_dtype)
    if y3.dtype != out_dtype:
        y3 = y3.astype(out_dtype)
    if nb == 1:
        out = dot(x3[0], y3[0], m * n * k)
    else:
        # batch axes not leading (attention's heads) leave strided views: copied once on the
        # threads, the products run on the GEMM (numpy's matmul of the views ran them one
        # after another on one BLAS thread: 4 ms for 8 heads of 512 x 64 x 512, 16 cores)
        x3, y3 = _whole_matrices(x3), _whole_matrices(y3)
        site = busy_site((nb, m, n, k, out_dtype.char), nb * m * n * k)
        if nb and runs_on_own_gemm(x3[0], y3[0], m * n * k):
            out = np.empty((nb, m, n), out_dtype)
            # With a product for every thread, or products too small to share, each product
            # runs whole on one thread, a run of them a thread: one parallel region, where a
            # region per product cost its fork and join each time (16 cores: 64 x 128^3 took
            # 2.2 ms, 256 x 64^3 3.0 ms against 0.3 in jax.jit)
            threads = gemm_threads(nb * m * n * k, site)
            each = gemm_threads(m * n * k, site)
            whole = threads > 1 and (nb >= threads or each == 1 or (
                2 * nb >= threads and m * n * k < WHOLE_BATCH_MACS))
            before = rt_threads.use(threads if whole else each)  # Numba's pool runs the GEMM
            if not (whole and gemm_pairs.matmul_batched(x3, y3, threads, out)):
                threads = each
                rt_threads.use(each)
                for b in range(nb):  # one gemm_cpu product per batch entry
                    gemm_cpu.matmul(x3[b], y3[b], threads, out[b])
            rt_threads.restore(before)
        else:
            threads = blas_threads(nb * m * n * k, site) if out_dtype.kind in "fc" else 0
            out = numpy_blas_call(np.matmul, threads, x3, y3)
        rt_threads.measured(site, threads)  # (0: BLAS's own count, every core)
    return [np.asarray(out.reshape((*bshape, *xfs, *yfs)), order="C")]  # keeps 0-d 0-d


def bfloat16_dot(x: np.ndarray, y: np.ndarray, out_dtype) -> np.ndarray:
    """x[i] @ y[i] of stacks of bfloat16 matrices (nb, m, k) @ (nb, k, n), as float32 or
    rounded to bfloat16: on AMX tiles where this process has them (gemm_amx.py), on the
    thread count `gemm_threads` gives the float32 GEMM a `SPEEDUP`-th of the work; else in
    float32, as narrow_floats computes a product it does not keep (a program compiled on an
    AMX host, run without one)."""
    (nb, m, k), n = x.shape, y.shape[2]
    if gemm_amx.host_has_amx() and gemm_amx.takes(m, k, n):
        threads = gemm_threads(max(1, nb * m * n * k // gemm_amx.SPEEDUP))
        with rt_threads.running(threads):
            return gemm_amx.matmul_batched(x, y, out_dtype, threads)
    f32 = np.dtype(np.float32)
    (wide,) = dot_general(x.astype(f32), y.astype(f32), (((2,), (1,)), ((0,), (0,))), f32)
    return wide if np.dtype(out_dtype) == f32 else wide.astype(out_dtype)


def _whole_matrices(a: np.ndarray) -> np.ndarray:
    """A stack of matrices, each C-contiguous or the transpose of one (`gemm_cpu`'s layouts),
    copied into C order on Numba's threads when it is neither."""
    return a if gemm_operands.flat3(a) is not None else copies.copy(a)


def dot(x: np.ndarray, y: np.ndarray, macs: int, bias: np.ndarray | None = None,
        activation: str = "none", scale: float = 1.0) -> np.ndarray:
    """x @ y for operands already in (m, k) @ (k, n) form: numbax's own GEMM (`gemm_cpu`) for
    matrix products it takes where `own_gemm` says so, else np.dot (BLAS) under the BLAS
    thread rule. With `bias`, a dense layer's act(x @ y + bias), or with activation "update"
    bias + scale * (x @ y) (`bias` then an array of the result's shape; compiler/
    epilogues.py): the GEMM applies it to each tile of C as it finishes, BLAS's result gets
    one pass."""
    if bias is None and (x.ndim == 1 or y.ndim == 1 or x.shape[0] == 1 or y.shape[1] == 1) \
            and (out := matvec.product(x, y)) is not None:
        return out  # a matrix-vector product: row blocks on Numba's threads
    site = busy_site((x.shape, y.shape, x.dtype.char), macs)
    # (the cheaper tests first: a small product's route is decided in ~1 us, not ~6)
    own = macs >= OWN_GEMM_MACS and not _one_thread_on_blas(macs) \
        and runs_on_own_gemm(x, y, macs)
    blas_n = None if own else 0 if _blas_keeps_one_thread(x, y, macs) \
        else blas_threads(macs, site)
    x, y, blas_n = _without_syrk(x, y, macs, blas_n)
    if blas_n is None:
        threads = gemm_threads(macs, site)
        swap = bias is None and _swaps_narrow(x, y)
        a, b = (y.T, x.T) if swap else (x, y)
        if threads > 1 and site is not None and not _pool_tasks_ready(a, b):
            threads = 1  # (its tasks compile in the helper meanwhile)
        out = _pooled(a, b, bias, activation, scale) if threads > 1 and site is not None \
            else None
        if out is None:
            out = _on_numbas_pool(a, b, threads, bias, activation, scale)
        if swap:
            out = np.ascontiguousarray(out.T)
    else:
        threads = blas_n
        out = numpy_blas_call(np.dot, threads, x, y)
        if bias is not None:
            out = _finish(np.ascontiguousarray(out), bias, activation, scale)
    rt_threads.measured(site, threads)  # (0: BLAS's own count, every core)
    return out


def dot_pair(first: tuple, second: tuple) -> tuple[np.ndarray, np.ndarray]:
    """(x1 @ y1, x2 @ y2) for `first` = (x1, y1, macs1[, bias, activation[, scale]]) (`dot`'s
    arguments: an epilogue's after the product's), `second` likewise: two products of a
    program neither of which reads the other's result (the driver's adjacent ones,
    compiler/cpu/driver.py). Where `dot` would run each on numbax's GEMM on threads of a quiet
    machine, they run together, each on its share of the threads (`gemm_pairs.matmul_pair`:
    on two threads each on one, as XLA runs a backward pass's independent products); else
    one after the other, as `dot` runs them."""
    (x1, y1, macs1, *epilogue1), (x2, y2, macs2, *epilogue2) = first, second
    if x1.dtype == x2.dtype and _pairs(x1, y1, macs1, epilogue1) \
            and _pairs(x2, y2, macs2, epilogue2):
        threads = gemm_threads(macs1 + macs2)
        if threads > 1:
            with rt_threads.running(threads):
                return gemm_pairs.matmul_pair(x1, y1, x2, y2, threads, epilogue1, epilogue2)
    return dot(*first), dot(*second)


def _pairs(x: np.ndarray, y: np.ndarray, macs: int, epilogue: list) -> bool:
    """Whether `dot` runs this product on gemm.py's tile, unswapped, on threads of a quiet
    machine (what `dot_pair` runs together)."""
    return (macs >= GEMM_THREADED_MACS and own_gemm_host() and not rt_threads.busy()
            and runs_on_own_gemm(x, y, macs) and not _one_thread_on_blas(macs)
            and (epilogue or not _swaps_narrow(x, y)))


# numpy gives x @ x.T of one buffer to BLAS's syrk, then copies the triangle it computed into
# the other on one thread: on the 2-core VM that still wins (1000^2: 6.5 against 9.9 ms for
# two buffers), on 16 Xeon cores it loses 3-4x (2048 x 784: 20 ms; numbax's GEMM 6.0, two
# buffers to BLAS 6.6, jax.jit 4.9; 4096 x 512: 100 against 21.5 and 31).
SYRK_MAX_THREADS = 2


def _without_syrk(x: np.ndarray, y: np.ndarray, macs: int, blas_n: int | None):
    """(x, y, BLAS threads) for `dot`, where BLAS threads None means numbax's GEMM: a product
    np.dot would give to syrk (`_syrk_pair`) on more than SYRK_MAX_THREADS BLAS threads goes
    to numbax's GEMM where it runs here (AVX-512), else to BLAS with y copied to a buffer of
    its own."""
    if blas_n is None or (blas_n or rt_threads.CORES) <= SYRK_MAX_THREADS \
            or not _syrk_pair(x, y):
        return x, y, blas_n
    if config.cpu_matmul != "blas" and own_gemm_host() and macs >= OWN_GEMM_MACS \
            and gemm_cpu.supports(x, y):
        return x, y, None
    return x, np.ascontiguousarray(y), blas_n


def _syrk_pair(x: np.ndarray, y: np.ndarray) -> bool:
    """Whether y is x's transpose, read from x's own memory (numpy's test for its syrk)."""
    return (x.ndim == 2 and y.ndim == 2 and y.shape == x.shape[::-1]
            and y.strides == x.strides[::-1]
            and x.__array_interface__["data"][0] == y.__array_interface__["data"][0])


def _blas_kernel(x: np.ndarray, y: np.ndarray) -> bool:
    """Whether numbax's threads run this product with OpenBLAS's one-thread kernel on blocks
    of C (blas_parts.py) rather than gemm.py's register tile: where Numba's target lacks
    AVX-512, numpy runs on OpenBLAS, and `config.cpu_matmul` leaves the choice to numbax."""
    return config.cpu_matmul == "auto" and not own_gemm_host() and blas_parts.supports(x, y)


def _on_numbas_pool(x: np.ndarray, y: np.ndarray, threads: int, bias, activation: str,
                    scale: float) -> np.ndarray:
    """act(x @ y + bias) on `threads` of Numba's threads: OpenBLAS's kernel on blocks of C
    where `_blas_kernel` says so, else gemm.py's register tile."""
    if _blas_kernel(x, y):
        with rt_threads.running(threads):
            out = blas_parts.matmul(x, y, threads)
        return out if bias is None else _finish(out, bias, activation, scale)
    if threads == 1:  # one part on this thread, no parallel region (use/restore: ~3 us)
        return gemm_cpu.matmul(x, y, 1, bias=bias, activation=activation, scale=scale)
    with rt_threads.running(threads):
        return gemm_cpu.matmul(x, y, threads, bias=bias, activation=activation, scale=scale)


def _swaps_narrow(x: np.ndarray, y: np.ndarray) -> bool:
    """Whether `dot` computes x @ y as (y.T @ x.T).T: an x of more rows than a row strip
    (gemm.MR) times a y of at most that many columns, such as a layer's weight gradient
    h.T @ d or its output h @ W before a 10-wide output. The tile is 32 columns wide, so 10
    columns left most of each tile idle; swapped, they fill most of a 12-row strip. The
    batch-2048 MLP's 512 x 2048 x 10 weight gradient: 142-154 against 172-222 us on 16 Xeon
    cores, 244-664 against 442-788 on the 2-core VM; its (2048, 512) @ (512, 10) output
    layer 106 against 121-138 us on 16 cores, 178 against 248 on 4, and 47-67 against
    62-90 at batch 256-1024 (2026-12-01)."""
    return y.shape[1] <= gemm_cpu.MR < x.shape[0]


def _task_module(x: np.ndarray, y: np.ndarray) -> str:
    """The module of the native pool's tasks for the product x @ y (`_pooled`)."""
    return f"{__package__}.{'blas_tasks' if _blas_kernel(x, y) else 'gemm_tasks'}"


def _pool_tasks_ready(x: np.ndarray, y: np.ndarray) -> bool:
    """Whether a busy product's pool arm may run without compiling its tasks in line (the
    pool off counts as ready: the OpenMP arm runs); False while the compile helper builds
    them (compile_ahead.module_ready), when the product runs on one thread."""
    return not config.hot("cpu_native_pool") or compile_ahead.module_ready(_task_module(x, y))


def _pooled(x: np.ndarray, y: np.ndarray, bias, activation: str,
            scale: float) -> np.ndarray | None:
    """A busy machine's parallel product on the native pool (its caller never waits for a
    worker the scheduler has not run): OpenBLAS's kernel on blocks of C where `_blas_kernel`
    says so (blas_tasks.py), else gemm.py's tile (gemm_tasks.py); None where it does not run."""
    if not config.hot("cpu_native_pool"):
        return None
    if _blas_kernel(x, y):
        from numbax._src.compiler.cpu.runtime import blas_tasks  # compiles its tasks: first use

        out = blas_tasks.matmul(x, y)
        return out if out is None or bias is None else _finish(out, bias, activation, scale)
    from numbax._src.compiler.cpu.runtime import gemm_tasks  # compiles its tasks: first use

    return gemm_tasks.matmul(x, y, bias, activation, scale)


# estimated serial ns per element of a BLAS result's epilogue pass (threads.threads_for)
FINISH_NS = {"none": 1.0, "relu": 1.0, "gelu": 4.0, "tanh": 3.0, "sigmoid": 3.0, "update": 1.0}


def _finish(out: np.ndarray, bias: np.ndarray, activation: str, scale: float) -> np.ndarray:
    """act(out + bias), or bias + scale * out, in place, over row blocks on Numba's threads."""
    m, n = out.shape
    row, epilogue = gemm_epilogues.epilogue_args(out.dtype, (m, n), bias, activation)
    threads = min(m, rt_threads.threads_for(out.size * FINISH_NS[activation]))
    if threads > 1 and not gemm_epilogues.finish_rows.overloads \
            and not compile_ahead.runtime_ready(gemm_epilogues.finish_rows, lambda: (
                out.reshape(-1), m, n, row, epilogue, scale, threads)):
        threads = 1  # (one thread while the helper compiles the threaded form)
    if threads <= 1:
        gemm_epilogues.finish_block(out.reshape(-1), 0, m, n, row, epilogue, scale)
        return out
    with rt_threads.running(threads):
        gemm_epilogues.finish_rows(out.reshape(-1), m, n, row, epilogue, scale, threads)
    return out


_product_sites: dict = {}  # (shapes, dtype) -> the busy-machine timings of those products
PRODUCT_SITES_MAX = 4096


def busy_site(key, macs: int) -> rt_threads.Site | None:
    """The busy-machine call site of products of one shape (`key`), or None when the machine is
    quiet or the product is too small to ever take more than one thread."""
    if macs < GEMM_THREADED_MACS or not rt_threads.busy():
        return None
    site = _product_sites.get(key)
    if site is None:
        if len(_product_sites) >= PRODUCT_SITES_MAX:  # a program of ever-new shapes
            _product_sites.clear()
        # the native pool's parallel arm (`_pooled`) pays off from shorter products
        pool = config.hot("cpu_native_pool") and native_pool.available()
        site = _product_sites[key] = rt_threads.Site(
            busy_sites.POOL_WORTH_S if pool else busy_sites.PARALLEL_WORTH_S)
    return site


def runs_on_own_gemm(x: np.ndarray, y: np.ndarray, macs: int) -> bool:
    """Whether `dot` gives this product to `gemm_cpu`: from OWN_GEMM_MACS up, with no side
    under OWN_GEMM_MIN_DIM unless Numba's workers may still spin and the product is large
    enough for threads (then BLAS gets one thread, and numbax's kernel on the spinning pool
    beats it even on a narrow side: 48 against 423 us for the MLP's (2048, 10) @ (10, 512) on
    16 cores)."""
    if macs < OWN_GEMM_MACS or x.ndim != 2 or y.ndim != 2 or not own_gemm(macs):
        return False
    narrow = min(x.shape[0], x.shape[1], y.shape[1]) < OWN_GEMM_MIN_DIM
    # (a narrow product too small for threads stays on BLAS even then: one BLAS thread beat
    # numbax's kernel on one thread, 19 against 58 us for the MLP's (128, 512) @ (512, 10) on
    # the 2-core VM, and the batch-128 step went from 2.60 to 2.46 ms). Below
    # BLAS_THREADED_MACS BLAS gets one thread on a quiet machine too: the batch-2048 MLP's
    # 10-wide products took 0.6-0.7 ms there on 16 Xeon cores, 0.1-0.2 on the GEMM's threads.
    # A product narrow in m or n wastes most of the tile, so it pays on numbax's GEMM only
    # with NARROW_MIN_THREADS threads or more: on two, one BLAS thread was as fast or faster
    # (the 2-core VM, (512, 512) @ (512, 10): 163 against 344 us; 16 Xeon cores pinned to 4:
    # 154 against 129). One narrow in k alone fills the tile (the VM's (2048, 10) @ (10, 512)
    # on two GEMM threads: 470 against 768 us on one BLAS thread), and so do a few rows
    # (`_fills_tile_rows`).
    if narrow and not (config.cpu_matmul == "auto" and gemm_tile_host()
                       and macs >= GEMM_THREADED_MACS and (
                           (rt_threads.pool_spinning() or macs < BLAS_THREADED_MACS)
                           and _narrow_pays(x, y, macs)
                           or not own_gemm_host() and blas_parts.supports(x, y))):
        return False
    # (while the compile helper builds the GEMM's one-thread code, BLAS takes the product)
    return gemm_cpu.supports(x, y) and (_blas_kernel(x, y) or gemm_cpu.serial_ready(x.dtype))


def _narrow_pays(x: np.ndarray, y: np.ndarray, macs: int) -> bool:
    """Whether a narrow product that BLAS would run on one thread runs faster on the GEMM:
    narrow in k alone (the tile is full), a few rows (`_fills_tile_rows`) on two GEMM threads
    or more, anything else on NARROW_MIN_THREADS or more."""
    if min(x.shape[0], y.shape[1]) >= OWN_GEMM_MIN_DIM:
        return True
    return gemm_threads(macs) >= (2 if _fills_tile_rows(x, y) else NARROW_MIN_THREADS)


def _fills_tile_rows(x: np.ndarray, y: np.ndarray) -> bool:
    """Whether a product of few rows (a small batch's x @ W, d @ Wᵀ) keeps the GEMM's tile
    busy: at least NARROW_MIN_ROWS rows (the tile has 8- and 4-row forms, gemm.SHORT_ROWS) and
    a y as wide as a tile. On two threads it beat one BLAS thread at batch 4-24: the MLP step
    (784-512-512-10) ran 13-23 % faster, its weights read from L3 on every step
    (2-core VM, 2026-12-01). On one thread it did not ((8, 784) @ (784, 512): 183 against
    118 us; (16, 784) @ ...: 351 against 172), so `_narrow_pays` asks for two."""
    return x.shape[0] >= NARROW_MIN_ROWS and y.shape[1] >= OWN_GEMM_MIN_DIM


# ----------------------------------------------------------------------------- own GEMM
# Below OWN_GEMM_MACS np.dot's smaller call overhead wins (0.6 against 2.6 us at 8^3); from
# 64^3 up numbax's kernel on one thread matches OpenBLAS-Haswell on two, and from
# GEMM_THREADED_MACS up two threads pay for their fork (2026-11-26, 2-core Zen 5 VM). A side
# under OWN_GEMM_MIN_DIM wastes most of a 12 x 32 tile or of a packed k block: the MLP's
# 128x512 @ 512x10 took 26 us against np.dot's 11.5.
OWN_GEMM_MACS = 1 << 18
OWN_GEMM_MIN_DIM = 32
NARROW_MIN_THREADS = 4  # (runs_on_own_gemm)
NARROW_MIN_ROWS = 4  # (_fills_tile_rows; one to three rows: BLAS's gemv, 23 against 212 us)
GEMM_THREADED_MACS = blas_parts.THREADED_MACS  # (loop bodies' products use it too)


# OpenBLAS runs a matrix-matrix product of at most this many multiply-adds on the calling
# thread whatever its thread count (interface/gemm.c: m*n*k <= 65536 * GEMM_MULTITHREAD_
# THRESHOLD, 4 by default); setting the count around such a call cost 5-10 us of a 6 us call.
OPENBLAS_ONE_THREAD_MACS = 65536 * 4


def _blas_keeps_one_thread(x: np.ndarray, y: np.ndarray, macs: int) -> bool:
    """Whether np.dot(x, y) runs on one OpenBLAS thread without being told: a small
    matrix-matrix product (numpy gives a row or column operand to gemv, which has its own
    threshold)."""
    return (macs <= OPENBLAS_ONE_THREAD_MACS and x.ndim == 2 and y.ndim == 2
            and x.shape[0] > 1 and y.shape[1] > 1)


# OpenBLAS kernel families with AVX-512 (`blas.blas_core`): one such thread beat numbax's GEMM
# on one thread at every size on the 2-core Emerald Rapids VM (1000^3 150 against 139
# GFLOP/s), and has less to do per call (32 x 64 x 128: 6.6 against 21 us, 2026-12-01).
AVX512_BLAS_CORES = frozenset({"SkylakeX", "CooperLake", "SapphireRapids"})
_blas_avx512: list = []  # [whether numpy's OpenBLAS runs AVX-512 kernels] once asked
# ... and one such thread beat numbax's GEMM on its threads below this many multiply-adds
# (1M-4M: 64 x 128 x 128, 128^3, 128 x 256 x 128: 24 / 45 / 86 against 48 / 68 / 105 us on the
# 2-core Zen 4 VM's two threads; 20 / 36 against 47 / 60 on 16 Xeon cores, 2026-12-07): a
# few microseconds of work a thread, against the threaded call's fixed cost. At 8M it was
# even on the VM (by shape, 106-180 against 167-169) and still BLAS's on the Xeon (128 x 256 x
# 256: 127 against 147).
ONE_THREAD_BLAS_MACS = 1 << 22


def _one_thread_on_blas(macs: int) -> bool:
    """Whether `dot` gives a product below ONE_THREAD_BLAS_MACS to one BLAS thread although
    numbax's GEMM would take it: numpy's OpenBLAS runs AVX-512 kernels (AVX512_BLAS_CORES),
    and no `config.cpu_threads` asks for threads for it. Batches of such products stay on
    numbax's GEMM, a whole product a thread (`dot_general`)."""
    if macs >= ONE_THREAD_BLAS_MACS or config.cpu_matmul != "auto":
        return False
    if macs >= GEMM_THREADED_MACS and config.cpu_threads:
        return False
    if not _blas_avx512:
        _blas_avx512.append(blas_core() in AVX512_BLAS_CORES)
    return _blas_avx512[0]


def own_gemm(macs: int) -> bool:
    """Whether a matrix product of `macs` multiply-adds from compiled code runs on `gemm_cpu`
    rather than BLAS: `config.cpu_matmul` "numbax" / "blas", or with "auto" (the default)
    every product where Numba's target has AVX-512 (gemm_cpu's 64-byte vectors would run
    split in two without it), and on AVX2 the threaded ones."""
    choice = config.cpu_matmul
    if choice != "auto":
        return choice == "numbax"
    tile = _host()
    if tile == "avx2":
        # Threaded products on Numba's pool: BLAS's own kernel on each block where numpy runs
        # on OpenBLAS (blas_parts.py: as fast as BLAS's own threads, without a second pool),
        # else while the pool spins or other processes keep the cores busy (a threaded BLAS
        # would share every core with threads that are not its own: the 2-core Zen 3 VM's
        # batch-2048 MLP step, products on one BLAS thread 83.7 ms, on the AVX2 tile's two
        # threads 71.6, jax.jit 51-56); one thread's products stay on BLAS (its kernel beat
        # the 6 x 16 ymm tile on one Zen 3 core, 71-87 against 55-76 GFLOP/s)
        return macs >= GEMM_THREADED_MACS and (
            blas_parts.available() or rt_threads.pool_spinning() or rt_threads.busy())
    # AVX-512: at every size. Against OpenBLAS's own AVX-512 kernels (SkylakeX, on 16 threads
    # of the Xeon, each run after the other's threads had stopped spinning) numbax's GEMM ran
    # all 15 products measured faster once its grid was timed per shape (0.34-0.97 of BLAS's
    # time; 1000^2 0.85, 4096^2 0.97; 2026-11-30, docs/performance.md); before that BLAS was
    # even from 1000^3 up and took those products whenever Numba's workers were idle.
    return tile == "avx512"


_host_gemm: list = []  # [numbax's GEMM tile on Numba's target: "avx512", "avx2" or ""] once asked


def _host() -> str:
    if not _host_gemm:
        has = host_isa.numba_target_has
        _host_gemm.append("avx512" if has("avx512f") else
                          "avx2" if has("avx2") and has("fma") else "")
    return _host_gemm[0]


def own_gemm_host() -> bool:
    """Whether numbax's GEMM is the better one here on its own: Numba's target has AVX-512
    (gemm_cpu's 12 x 32 tile of zmm registers)."""
    return _host() == "avx512"


def gemm_tile_host() -> bool:
    """Whether numbax's GEMM has a full tile of vector registers here (AVX-512, or AVX2 with
    FMA: 6 x 16 float32 in ymm registers), so that it runs in BLAS's place where a threaded
    BLAS would share the cores with Numba's workers."""
    return bool(_host())


def gemm_threads(macs: int, site: rt_threads.Site | None = None) -> int:
    """Numba threads for a `gemm_cpu` product of `macs` multiply-adds (`site`: its shape's
    busy-machine timings, blas.thread_rule), at most Numba's pool (a `cpu_threads` above it,
    set for a larger machine or under taskset, is capped as for fused kernels)."""
    pool = rt_threads.pool_size()
    return min(pool, thread_rule(macs, GEMM_THREADED_MACS,
                                 lambda: min(rt_threads.free_cores(), pool), lambda: pool, site))
