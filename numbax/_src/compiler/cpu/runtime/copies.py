"""Large copies on Numba's threads: what concatenate, pad, slice, rev and a copy of an array
with its last axis in place write, cut into contiguous runs, memcpy'd in one parallel region.

Why: numpy copies on one thread. On 16 Xeon cores jax.jit's `concatenate` of three 1000^2
float32 took a quarter of numbax's time, its `pad` and `roll` under half (docs/performance.md,
"A sweep of common functions and ops"); XLA copies on every core. A copy of arrays whose
last axes are contiguous in both source and destination is a list of equal contiguous runs
(`runs`); a parallel loop over them, each run one memcpy, reads and writes at the memory's
speed on as many threads as the bytes are worth (`threads.threads_for`). Copies that are
small, or whose runs are short (a transpose, a reversed last axis), stay numpy's.
"""
from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from numbax._src.compiler.cpu.runtime import threads as rt_threads

BYTE_NS = 0.1  # estimated serial ns per byte copied (one core: ~10 GB/s, read and write)
MIN_RUN_BYTES = 256  # shorter runs: numpy's strided copy (a memcpy call per few elements)
PIECE_BYTES = 1 << 16  # long runs are cut into pieces of this size, so every thread has some


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


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def runs(dst: np.ndarray, src: np.ndarray) -> tuple | None:
    """(run bytes, destination offsets, source offsets) of a copy of `src` into `dst` (same
    shape and dtype) as contiguous runs, offsets in bytes from each array's first element;
    None when the runs would be shorter than MIN_RUN_BYTES. The run is the trailing axes that
    are contiguous in both arrays; every other axis multiplies the rows."""
    dims = [(n, ds, ss) for n, ds, ss in zip(src.shape, dst.strides, src.strides) if n != 1]
    run = src.itemsize
    while dims and dims[-1][1] == run and dims[-1][2] == run:
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
    Numba's threads where the bytes pay for them and the copy is made of long runs, else
    numpy's copy."""
    threads = rt_threads.threads_for(src.nbytes * BYTE_NS)
    plan = runs(dst, src) if threads > 1 else None
    if plan is None:
        np.copyto(dst, src, casting="no")
        return
    run, dst_offsets, src_offsets = plan
    piece = max(PIECE_BYTES, math.ceil(run * dst_offsets.size / (4 * threads)))
    before = rt_threads.use(threads)
    try:
        _copy_runs(_address(dst), _address(src), dst_offsets, src_offsets, run, piece)
    finally:
        rt_threads.use(before)


def copy(x: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of x (any strides) of its own shape."""
    out = np.empty(x.shape, x.dtype)
    copy_into(out, x)
    return out
