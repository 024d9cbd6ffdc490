"""Large copies on Numba's threads: what concatenate, pad, slice, rev and a copy of an array
with its last axis in place write, cut into contiguous runs, memcpy'd in one parallel region
(a concatenate's parts row by row, so each row of the result is written front to back).

Why: numpy copies on one thread. On 16 Xeon cores jax.jit's `concatenate` of three 1000^2
float32 took a quarter of numbax's time, its `pad` and `roll` under half (docs/performance.md,
"A sweep of common functions and ops"); XLA copies on every core. A copy of arrays whose
last axes are contiguous in both source and destination is a list of equal contiguous runs
(`runs`); a parallel loop over them, each run one memcpy, reads and writes at the memory's
speed on as many threads as the bytes are worth (`threads.threads_for`). Copies whose runs
are short (a transpose) run in tiles (`_copy_tiles`), on one thread too, where they are
large; small copies stay numpy's.
"""
from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from numbax._src.compiler.cpu.runtime import threads as rt_threads
from numbax._src.lax import linalg_blas

BYTE_NS = 0.1  # estimated serial ns per byte copied (one core: ~10 GB/s, read and write)
MIN_RUN_BYTES = 256  # shorter runs: numpy's strided copy (a memcpy call per few elements)
PIECE_BYTES = 1 << 16  # long runs are cut into pieces of this size, so every thread has some
TILE = 32  # a tiled copy's tiles are TILE x TILE elements
TILED_ELEMENT_NS = 0.4  # estimated serial ns per element of a tiled copy (0.28-0.47 measured)
TILED_MIN_SIZE = 1 << 15  # fewer elements: numpy's copy (no kernel to compile)


@intrinsic
def _memcpy(typingctx, dst, src, nbytes):
    """memcpy(dst, src, nbytes) on raw addresses (int64s)."""
    if not all(isinstance(a, types.Integer) for a in (dst, src, nbytes)):
        return None

    def codegen(context, builder, signature, args):
        byte_ptr = ir.IntType(8).as_pointer()
        d, s, n = (context.cast(builder, a, t, types.int64)
                   for a, t in zip(args, signature.args))
        cgutils.raw_memcpy(builder, builder.inttoptr(d, byte_ptr),
                           builder.inttoptr(s, byte_ptr), n, 1)
        return context.get_dummy_value()

    return types.void(dst, src, nbytes), codegen


@njit(parallel=True, cache=True)
def _copy_runs(dst, src, dst_offsets, src_offsets, run, piece):  # pragma: no cover - compiled
    pieces = (run + piece - 1) // piece
    for i in prange(dst_offsets.size * pieces):
        row = i // pieces
        lo = (i - row * pieces) * piece
        _memcpy(dst + dst_offsets[row] + lo, src + src_offsets[row] + lo, min(piece, run - lo))


@njit(parallel=True, cache=True)
def _copy_row_parts(dst, row_bytes, srcs, runs, columns, rows):  # pragma: no cover - compiled
    """For each of `rows` rows: each part's run (part k: `runs[k]` bytes from srcs[k] + row *
    runs[k]) into the row of `dst` at byte `columns[k]`, the parts in order, so a thread
    writes its rows of the result front to back."""
    for i in prange(rows):
        for k in range(srcs.size):
            _memcpy(dst + i * row_bytes + columns[k], srcs[k] + i * runs[k], runs[k])


@njit(parallel=True, cache=True)
def _copy_tiles(dst, src):  # pragma: no cover - compiled
    """dst[...] = src for 3-d arrays of any strides, in TILE x TILE tiles of the last two axes:
    where one array is read along rows and the other along columns (a transpose), a tile's
    lines of both stay in cache while it is copied. A whole tile's loops have constant trip
    counts and unsigned indices (no negative-index wraparound to test), which LLVM unrolls:
    500^2 float32 transposed on one VM core took 79 us, 343 with loops bounded by min() and
    signed indices, numpy's copy 84-147 (docs/performance.md)."""
    batch, rows, cols = src.shape
    tile_rows = (rows + TILE - 1) // TILE
    tile_cols = (cols + TILE - 1) // TILE
    per_batch = tile_rows * tile_cols
    for t in prange(batch * per_batch):
        b = np.int64(t) // per_batch  # (prange's index is unsigned: int64 keeps // integral)
        tr = (np.int64(t) - b * per_batch) // tile_cols
        tc = np.int64(t) - b * per_batch - tr * tile_cols
        i0, j0 = tr * TILE, tc * TILE
        d, s = dst[b], src[b]
        if i0 + TILE <= rows and j0 + TILE <= cols:
            for i in range(TILE):
                for j in range(TILE):
                    d[np.uint64(i0 + i), np.uint64(j0 + j)] = s[np.uint64(i0 + i),
                                                                np.uint64(j0 + j)]
        else:  # a tile on the edge
            for i in range(i0, min(i0 + TILE, rows)):
                for j in range(j0, min(j0 + TILE, cols)):
                    d[np.uint64(i), np.uint64(j)] = s[np.uint64(i), np.uint64(j)]


_SAME_SIZE_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _tiled_views(dst: np.ndarray, src: np.ndarray, dims: list) -> tuple | None:
    """dst and src as 3-d views of unsigned integers of their item size (one compiled kernel
    per size serves every dtype), or None for copies of more than three merged axes or items
    of 16 bytes."""
    uint = _SAME_SIZE_UINT.get(src.itemsize)
    if uint is None or len(dims) > 3:
        return None
    dims = [(1, 0, 0)] * (3 - len(dims)) + dims
    shape = tuple(n for n, _, _ in dims)
    as_strided = np.lib.stride_tricks.as_strided
    return (as_strided(dst.view(uint), shape, tuple(ds for _, ds, _ in dims)),
            as_strided(src.view(uint), shape, tuple(ss for _, _, ss in dims)))


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def merged(dst: np.ndarray, src: np.ndarray) -> list[tuple[int, int, int]]:
    """The copy's axes as (length, destination stride, source stride), axes of length 1
    dropped and neighbours that are one axis in both arrays merged (a C-contiguous block of
    rows is one axis)."""
    dims: list[tuple[int, int, int]] = []
    for n, ds, ss in zip(src.shape, dst.strides, src.strides):
        if n == 1:
            continue
        if dims and dims[-1][1] == n * ds and dims[-1][2] == n * ss:
            dims[-1] = (dims[-1][0] * n, ds, ss)
        else:
            dims.append((n, ds, ss))
    return dims


def runs(dst: np.ndarray, src: np.ndarray) -> tuple | None:
    """(run bytes, destination offsets, source offsets) of a copy of `src` into `dst` (same
    shape and dtype) as contiguous runs, offsets in bytes from each array's first element;
    None when the runs would be shorter than MIN_RUN_BYTES. The run is the trailing axes that
    are contiguous in both arrays; every other axis multiplies the rows."""
    dims = merged(dst, src)
    run = src.itemsize
    if dims and dims[-1][1] == run and dims[-1][2] == run:
        run *= dims.pop()[0]
    if run < MIN_RUN_BYTES:
        return None
    dst_offsets = src_offsets = np.zeros(1, np.int64)
    for n, ds, ss in dims:
        steps = np.arange(n, dtype=np.int64)
        dst_offsets = (dst_offsets[:, None] + steps * ds).reshape(-1)
        src_offsets = (src_offsets[:, None] + steps * ss).reshape(-1)
    return run, dst_offsets, src_offsets


def copy_into(dst: np.ndarray, src: np.ndarray) -> None:
    """dst[...] = src (same shape and dtype; dst writable, neither overlapping the other): on
    Numba's threads where the bytes pay for them, as memcpy'd runs; copies with short runs
    (a transpose's) of TILED_MIN_SIZE elements and more in tiles, on one thread too; else
    numpy's copy."""
    threads = rt_threads.threads_for(src.nbytes * BYTE_NS)
    large = src.size >= TILED_MIN_SIZE
    plan = runs(dst, src) if threads > 1 or large else None
    if plan is not None and threads > 1:
        run, dst_offsets, src_offsets = plan
        piece = max(PIECE_BYTES, math.ceil(run * dst_offsets.size / (4 * threads)))
        with rt_threads.running(threads):
            _copy_runs(_address(dst), _address(src), dst_offsets, src_offsets, run, piece)
        return
    tiled = _tiled_views(dst, src, merged(dst, src)) if plan is None and large else None
    if tiled is None:  # small, or long runs on one thread (numpy's copy memcpys them)
        np.copyto(dst, src, casting="no")
        return
    with rt_threads.running(rt_threads.threads_for(src.size * TILED_ELEMENT_NS)):
        _copy_tiles(*tiled)


# Fewer rows than this a thread: `concatenate` copies each part on its own, its long runs cut
# into pieces (a row a task would leave threads idle).
ROWS_PER_THREAD = 4


def concatenate(parts: list, axis: int) -> np.ndarray:
    """np.concatenate(parts, axis) for arrays of one dtype: on Numba's threads where the bytes
    pay for them. Where every part is C-contiguous with runs of at least MIN_RUN_BYTES a row
    and there are rows enough, one parallel region writes the result row by row, each row's
    parts in order; else each part is copied into its place (`copy_into`). Three 1000^2
    float32 into 1000 x 3000 on the 2-core VM: 350-440 us row by row, 520-780 part by part
    (three regions, each writing a third of every row), jax.jit 400-540 (2026-12-01)."""
    total = sum(p.nbytes for p in parts)
    threads = rt_threads.threads_for(total * BYTE_NS)
    if threads <= 1:
        return np.concatenate(parts, axis=axis)  # (one pass, where copy_into makes one a part)
    shape = list(parts[0].shape)
    shape[axis] = sum(p.shape[axis] for p in parts)
    out = np.empty(shape, parts[0].dtype)
    rows = math.prod(shape[:axis])
    filled = [p for p in parts if p.size]
    if rows >= ROWS_PER_THREAD * threads and all(p.flags.c_contiguous for p in filled) \
            and all(p.nbytes // rows >= MIN_RUN_BYTES for p in filled):
        runs_ = np.array([p.nbytes // rows for p in filled], np.int64)
        with rt_threads.running(threads):
            _copy_row_parts(_address(out), out.nbytes // rows,
                            np.array([_address(p) for p in filled], np.int64), runs_,
                            np.cumsum(runs_) - runs_, rows)
        return out
    start = 0
    for p in parts:
        place = (slice(None),) * axis + (slice(start, start + p.shape[axis]),)
        copy_into(out[place], p)
        start += p.shape[axis]
    return out


def row_major(x, dtype: np.dtype) -> np.ndarray:
    """x as a C-contiguous array of `dtype`: a large column-major 2D array of that dtype
    (LAPACK's results: LU's, QR's factors) copied by blocks of columns (`linalg_blas.relaid`:
    1024^2 float64 on the 2-core VM 1.6 ms against numpy's 4.7, on Python threads where the
    LAPACK call had threads); anything else as np.asarray does. Not on Numba's threads: a
    parallel region here would make the LAPACK call after it wait for the spinning workers
    (blas.lapack_threads)."""
    if isinstance(x, np.ndarray) and x.dtype == dtype and x.ndim == 2 and \
            x.flags.f_contiguous and not x.flags.c_contiguous and x.size >= TILED_MIN_SIZE:
        return linalg_blas.relaid(x, "C")
    return np.asarray(x, dtype=dtype, order="C")


def copy(x: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of x (any strides) of its own shape."""
    out = np.empty(x.shape, x.dtype)
    copy_into(out, x)
    return out
