"""How a product's C is cut into parts for threads, and how the threads take them.

Threads take parts from a shared counter (`take`) rather than one fixed part each. On the
16-core Xeon the cores of one call did not run at one speed: cycle stamps of a 2000^2 float32
product on a 8 x 2 grid, one part a thread, gave parts of equal work taking 11.5 to 24.3 ms
(median 17.0) in the same call, and a 2048 x 784 @ 784 x 512 product's 16 row parts 0.96 to
1.93 ms (a shared host: other tenants' work on the same physical cores). A static grid ends
when its slowest core does. With several parts a thread, the fast cores take what the slow
ones have not reached. How C is best cut depends on the shape, the layouts and the host more
than a cost model foresees (on the Xeon the best of ~100 grids ran up to 40 % faster than the
one a simple model picked), so gemm.py times the `candidates` of a fitted model on a shape's
first calls and keeps the fastest (`tuned_grid`). The native pool's products (gemm_tasks.py,
blas_tasks.py) take parts of `thread_grid`'s grids from a counter too.
"""
from __future__ import annotations

import functools
from typing import Any

from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

# `thread_grid`'s charges, in register tiles, for the strips a part brings in: the native
# pool's products (gemm_tasks.py) and OpenBLAS's blocks (blas_parts.py, blas_tasks.py).
A_STRIP_PACK_COST = 0.5
B_STRIP_PACK_COST = 0.2


def _best_grid(row_strips: int, column_strips: int, parts: int) -> tuple[int, int]:
    """`thread_grid`'s search, in a form Numba compiles too (`grid_in_loop`)."""
    best_rows, best_cols, best_cost = 1, 1, -1.0
    for rows in range(1, min(parts, row_strips) + 1):
        cols = min(parts // rows, column_strips)
        r, q = -(-row_strips // rows), -(-column_strips // cols)
        # tiles of the largest part, plus the strips it packs
        cost = r * q + A_STRIP_PACK_COST * r + B_STRIP_PACK_COST * q
        if best_cost < 0 or cost < best_cost:
            best_rows, best_cols, best_cost = rows, cols, cost
    return best_rows, best_cols


@functools.lru_cache(maxsize=4096)  # asked on every product; a step asks the same few
def thread_grid(row_strips: int, column_strips: int, parts: int) -> tuple[int, int]:
    """(row parts, column parts), with product at most `parts`, whose largest part costs
    least: its tiles plus the strips it packs. A part with few column strips packs A for
    little use, one with few row strips packs B for little use, so squares of C split both
    ways."""
    return _best_grid(row_strips, column_strips, parts)


# the same search inside compiled control flow, where the thread count is known only when the
# loop runs (blas_parts.loop_grid)
grid_in_loop = njit(cache=True)(_best_grid)


# gemm.py's parts, in the time of one register tile (`estimate`), fitted to the GFLOP/s of
# ~700 grids of 19 products at 8 and 16 threads on the 16-core Xeon (docs/performance.md,
# "Grids measured, then chosen by timing"): a row strip of A read in place costs 3 tiles
# (0.75 of that transposed), a column strip of B packed 2.5, read in place 0.25 but each tile
# reading it 1.3, a part 5.
A_STRIP = 3.0
A_TRANSPOSED_STRIP = 0.75 * A_STRIP
B_PACKED_STRIP = 2.5
B_IN_PLACE_STRIP = 0.25
B_IN_PLACE_TILE = 1.3
PART = 5.0
# Rounds of parts on a counter's threads: the estimate counts 0.8 of whole rounds
# (ceil(parts / threads): a thread with one more part ends later) and 0.2 of the exact share
# (parts / threads: the cores do not run at one speed, so a ragged last round costs less).
ROUND_SHARE = 0.8
MAX_PARTS_PER_THREAD = 8
CANDIDATES = 8  # grids `tuned_grid` times for each product: the best of each kind
SAMPLES = 3     # timed calls of each before it keeps the fastest


def estimate(row_strips: int, column_strips: int, rows: int, cols: int, threads: int,
             b_in_place_below: int, a_transposed: bool) -> float:
    """The time, in register tiles, of a rows x cols grid of gemm.py's parts on `threads`
    threads taking them from a counter, where a part of fewer than `b_in_place_below` row
    strips reads B in place (0: never) and `a_transposed` says A's columns are contiguous."""
    r, q = -(-row_strips // rows), -(-column_strips // cols)
    in_place = r < b_in_place_below
    part = (r * q * (B_IN_PLACE_TILE if in_place else 1.0)
            + r * (A_TRANSPOSED_STRIP if a_transposed else A_STRIP)
            + q * (B_IN_PLACE_STRIP if in_place else B_PACKED_STRIP) + PART)
    rounds = rows * cols / threads
    return part * (ROUND_SHARE * -(-rows * cols // threads) + (1 - ROUND_SHARE) * rounds)


def _cuts(strips: int):
    """(parts, strips a part) for each distinct part size of `strips` strips cut evenly."""
    seen = set()
    for parts in range(1, strips + 1):
        size = -(-strips // parts)
        if size not in seen:
            seen.add(size)
            yield parts, size


@functools.lru_cache(maxsize=4096)  # asked on every product; a step asks the same few
def candidates(row_strips: int, column_strips: int, threads: int, b_in_place_below: int,
               a_transposed: bool) -> tuple[tuple[int, int], ...]:
    """The grids `tuned_grid` times: `model_grids`', then, where they lack them, a column
    split, one part a thread (each thread packs only its columns of B and reads all of A in
    place), which the model, fitted at 8 and 16 threads, ranks low at two: on the 2-core VM it
    was the fastest of 11 grids for x @ W1, h @ W2 and d @ W2ᵀ at batch 256, 5-10 % ahead of
    the model's best; and `thread_grid`'s one part a thread, a square of C split both ways:
    since A's row strips stay in L1 (gemm.py) the model, fitted before, leaves out 16 threads'
    best grids of 1000^2, (4, 4) and (2, 8), 7 % ahead of its own (docs/performance.md).
    ((1, 1),) for one thread."""
    grids = model_grids(row_strips, column_strips, threads, b_in_place_below, a_transposed)
    if threads <= 1:
        return grids
    for extra in ((1, min(threads, column_strips)),
                  thread_grid(row_strips, column_strips, threads)):
        if extra not in grids:
            grids = (*grids, extra)
    return grids


def model_grids(row_strips: int, column_strips: int, threads: int, b_in_place_below: int,
                a_transposed: bool) -> tuple[tuple[int, int], ...]:
    """Up to CANDIDATES grids (row parts, column parts), least `estimate` first: the best of
    each kind, a kind being how many parts a thread (up to 1, 2, 4 or MAX_PARTS_PER_THREAD)
    and whether B is read in place. Near-ties of one kind differ by a strip or two; grids of
    different kinds fail on different hosts. ((1, 1),) for one thread."""
    if threads <= 1:
        return ((1, 1),)
    best: dict = {}
    for rows, r in _cuts(row_strips):
        for cols, _ in _cuts(column_strips):
            parts = rows * cols
            if parts > MAX_PARTS_PER_THREAD * threads:
                continue
            kind = (next(i for i, per in enumerate((1, 2, 4, MAX_PARTS_PER_THREAD))
                         if parts <= per * threads), r < b_in_place_below)
            cost = estimate(row_strips, column_strips, rows, cols, threads, b_in_place_below,
                            a_transposed)
            if kind not in best or cost < best[kind][0]:
                best[kind] = (cost, rows, cols)
    return tuple((rows, cols) for _, rows, cols in sorted(best.values())[:CANDIDATES])


# After the trial, every EXPLORE_EVERY-th call of a shape runs the candidate with the fewest
# calls instead of the kept grid, until each has had EXPLORE_SAMPLES calls, and the kept grid
# is always the one whose fastest call so far is fastest. A grid's fastest call is its time
# undisturbed; a trial's few calls on a noisy or busy machine miss it: on the 2-core VM a
# trial (and a trial started over when the kept grid ran slow) kept (3, 2) for x @ W1 at batch
# 128, 490 us a call, where (1, 2) ran 407 us (2026-12-01). Exploring costs at most one call
# in EXPLORE_EVERY on a slower grid, for the first few hundred calls of a shape. (Tried: the
# median of each grid's last calls. It compares the kept grid's current minute with the
# others' earlier ones, so in a slow minute of a noisy host the kept grid gives way to one
# measured in a fast minute, whatever its speed; the fastest call only improves, and the
# choice settles.)
EXPLORE_EVERY = 16
EXPLORE_SAMPLES = 12


class _Trial:
    """The grids one product shape has run, the fastest call of each, and the one kept."""

    def __init__(self, grids: tuple[tuple[int, int], ...]):
        self.grids = grids
        self.best = [float("inf")] * len(grids)
        self.calls = [0] * len(grids)
        self.turn = 0  # calls of this shape so far
        self.kept: tuple[int, int] | None = None

    def next_grid(self) -> tuple[int, int]:
        n = len(self.grids)
        if self.kept is None:  # the trial: each grid in turn, so slow minutes hit all
            return self.grids[self.turn % n]
        if self.turn % EXPLORE_EVERY == 0:
            least = min(range(n), key=self.calls.__getitem__)
            if self.calls[least] < EXPLORE_SAMPLES:
                return self.grids[least]
        return self.kept

    def record(self, grid: tuple[int, int], seconds: float) -> None:
        i = self.grids.index(grid)
        faster = seconds < self.best[i]
        if faster:
            self.best[i] = seconds
        self.calls[i] += 1
        self.turn += 1
        if self.turn >= SAMPLES * len(self.grids) and (faster or self.kept is None):
            self.kept = self.grids[min(range(len(self.grids)), key=self.best.__getitem__)]


_trials: dict = {}
TRIALS_MAX = 4096  # shapes remembered; a program of ever-new shapes starts over


def tuned_grid(key: Any, grids: tuple[tuple[int, int], ...]
               ) -> tuple[tuple[int, int], _Trial | None]:
    """(grid, trial) for the next product of shape `key` among `grids` (`candidates`): each
    grid in turn, SAMPLES times, then the one whose fastest call is fastest, with a call of
    another now and then (EXPLORE_EVERY). Report each call's time with `record(trial, grid,
    seconds)`.
    Every grid gives the same bits (a tile of C is one part's, its k blocks in order), so
    the choice changes only the time. On the Xeon the model's first grid ran up to 29 %
    slower than the best of all for a shape, the fastest candidate at most 12 %
    (docs/performance.md, "Grids measured, then chosen by timing")."""
    if len(grids) == 1:
        return grids[0], None
    trial = _trials.get(key)
    if trial is None:
        if len(_trials) >= TRIALS_MAX:
            _trials.clear()
        trial = _trials[key] = _Trial(grids)
    return trial.next_grid(), trial


def record(trial: _Trial | None, grid: tuple[int, int], seconds: float) -> None:
    """Counts one call of `grid` that took `seconds` (see `tuned_grid`)."""
    if trial is not None:
        trial.record(grid, seconds)


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
