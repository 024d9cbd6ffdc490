"""numpy work split over a few Python threads: copies and ufuncs over large arrays, which numpy
runs without the GIL, so the threads' shares run at once.

For work that runs beside the other thread pools of the process rather than on them: the
shared-memory allreduce's copies (parallel/node_reduce.py), while the process's workers wait
at its barrier, and the layout copies around a LAPACK call (lax/linalg_blas.relaid), where a
Numba parallel region would leave its workers spinning beside BLAS's threads
(compiler/cpu/runtime/blas.lapack_threads). Idle threads here sleep on the executor's queue.
"""
from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

# The executor (one thread fewer than the cores: the caller takes a share too) and the process
# that made it: a child forked after it has none of its threads.
_pool: tuple[ThreadPoolExecutor, int] | None = None
_pool_lock = threading.Lock()


def cores() -> int:
    """The cores this process may run on (an affinity mask or a launcher's binding counts)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def share_count(threads: int, nbytes: int, min_bytes: int) -> int:
    """Threads for work over `nbytes`: at most `threads`, each with at least `min_bytes`."""
    return max(1, min(threads, nbytes // max(1, min_bytes)))


def run(threads: int, jobs: list[tuple[Callable[[int, int], None], int, int]]) -> None:
    """Each job fn(a, b) over its range [lo, hi), split evenly over `threads` threads (the
    calling thread included; more than cores() queue); the ranges of different jobs must be
    disjoint in what they write. One hand-off per call: each thread takes its share of every
    job."""
    if threads <= 1:
        for fn, lo, hi in jobs:
            if hi > lo:
                fn(lo, hi)
        return
    shares: list[list] = [[] for _ in range(threads)]
    for fn, lo, hi in jobs:
        for i, share in enumerate(shares):
            a, b = lo + (hi - lo) * i // threads, lo + (hi - lo) * (i + 1) // threads
            if b > a:
                share.append((fn, a, b))
    executor = _executor()
    pending = [executor.submit(_run_share, share) for share in shares[1:]]
    error = None
    try:
        _run_share(shares[0])
    except BaseException as err:  # noqa: BLE001 - raised below, once every share has ended
        error = err
    for future in pending:  # every share ends before this returns or raises
        failed = future.exception()  # (waits for the share)
        error = error or failed
    if error is not None:
        raise error


def _executor() -> ThreadPoolExecutor:
    """This process's executor (it starts its threads as work comes, up to cores() - 1)."""
    global _pool
    with _pool_lock:
        if _pool is None or _pool[1] != os.getpid():
            _pool = (ThreadPoolExecutor(max(1, cores() - 1), thread_name_prefix="numbax-host"),
                     os.getpid())
        return _pool[0]


def _run_share(share: list) -> None:
    for fn, a, b in share:
        fn(a, b)
