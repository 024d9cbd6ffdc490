"""How a product's C is cut into parts for threads, and how the threads take them.

Threads take parts from a shared counter (`take`) rather than one fixed part each. On the
16-core Xeon the cores of one call did not run at one speed: cycle stamps of a 2000^2 float32
product on a 8 x 2 grid, one part a thread, gave parts of equal work taking 11.5 to 24.3 ms
(median 17.0) in the same call, and a 2048 x 784 @ 784 x 512 product's 16 row parts 0.96 to
1.93 ms (a shared host: other tenants' work on the same physical cores). A static grid ends
when its slowest core does. With several parts a thread, the fast cores take what the slow
ones have not reached; `grid` picks how many parts, weighing that against the packing each
extra part repeats. The native pool's products (gemm_tasks.py, blas_tasks.py) already take
parts this way; here the same holds inside Numba's own parallel region.
"""
from __future__ import annotations

import functools

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

# Packing one A strip of a k block costs about half a register tile (scalar copies), one B
# strip about a fifth: `thread_grid` charges them against the tiles a part computes.
A_STRIP_PACK_COST = 0.5
B_STRIP_PACK_COST = 0.2
# Parts a thread `grid` tries, most first, and the fewest strips a part keeps each way so
# that each strip it packs or streams still serves several tiles. On the Xeon at 16 threads,
# four parts a thread ran the batch-2048 MLP's products 7-25 % faster than one; parts two
# strips wide lost up to 20 % (1000^2 cut 42 x 3, a transposed A cut 8 x 8).
PARTS_PER_THREAD = (4, 2)
MIN_PART_STRIPS = 4


def _part_cost(row_strips: int, column_strips: int, rows: int, cols: int) -> float:
    """Tiles of the largest part of a rows x cols grid, plus the strips it packs."""
    r, q = -(-row_strips // rows), -(-column_strips // cols)
    return r * q + A_STRIP_PACK_COST * r + B_STRIP_PACK_COST * q


@functools.lru_cache(maxsize=4096)  # asked on every product; a step asks the same few
def thread_grid(row_strips: int, column_strips: int, parts: int) -> tuple[int, int]:
    """(row parts, column parts), with product at most `parts`, whose largest part costs
    least: its tiles plus the strips it packs. A part with few column strips packs A for
    little use, one with few row strips packs B for little use, so squares of C split both
    ways."""
    best, best_cost = (1, 1), None
    for rows in range(1, min(parts, row_strips) + 1):
        cols = min(parts // rows, column_strips)
        cost = _part_cost(row_strips, column_strips, rows, cols)
        if best_cost is None or cost < best_cost:
            best, best_cost = (rows, cols), cost
    return best


@functools.lru_cache(maxsize=4096)
def grid(row_strips: int, column_strips: int, threads: int) -> tuple[int, int]:
    """(row parts, column parts) for `threads` threads taking parts from a counter: the
    `thread_grid` of the most parts a thread (PARTS_PER_THREAD) whose parts keep
    MIN_PART_STRIPS strips each way, else of one part a thread."""
    if threads <= 1:
        return 1, 1
    for per in PARTS_PER_THREAD:
        rows, cols = thread_grid(row_strips, column_strips, threads * per)
        if min(-(-row_strips // rows), -(-column_strips // cols)) >= MIN_PART_STRIPS:
            return rows, cols
    return thread_grid(row_strips, column_strips, threads)


@intrinsic
def take(typingctx, counter):
    """counter[0] += 1 as one atomic step, from any thread; the value before: the index of
    the part the calling thread runs next."""
    if not (isinstance(counter, types.Array) and counter.dtype == types.int64
            and counter.mutable):
        return None
    sig = types.int64(counter)

    def codegen(context, builder, sig, args):
        data = cgutils.create_struct_proxy(sig.args[0])(context, builder, value=args[0]).data
        return builder.atomic_rmw("add", data, ir.Constant(ir.IntType(64), 1), "monotonic")

    return sig, codegen
