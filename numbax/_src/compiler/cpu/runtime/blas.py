"""BLAS thread policy for matrix products from compiled code: how many threads a product gets,
OpenBLAS's own C API to set that count around one call, and whether the machine is busy."""
from __future__ import annotations

import os
import time
from collections.abc import Callable

from numbax._src.config import config

# OpenBLAS's threads and Numba's fight over few cores (docs/performance.md: a jitted MLP step
# ran 224 ms with OpenBLAS's default 2 threads on the loaded 2-core machine, 3.7 ms with one;
# on the idle machine 2 threads win by ~1.5x on its larger GEMMs). With `cpu_threads = 0`
# (automatic) products below BLAS_THREADED_MACS multiply-adds, and every product while the
# machine is busy with other work, run with one BLAS thread; larger products on an otherwise
# idle machine keep BLAS's own setting. With `numbax.config.cpu_threads = n` the larger BLAS
# calls from compiled code run with n threads, the small ones still with one (pinning them
# all to 2 made the 2-core MLP step 8 ms instead of 1.2: OpenBLAS's workers spin after each
# threaded call and starve Numba's). The count is set through OpenBLAS's own C API (found
# among the loaded libraries) just for the call and restored after it (0.4 us per call);
# without OpenBLAS nothing is changed.
#
# "Busy" counts other processes' runnable threads, not the load average: the load average
# includes this process, so a program running numbax on one core of the 2-core machine made
# itself "busy" within a minute and its GEMMs fell to one thread (1000² matmul 1.9x numpy's
# time, the MLP step 3.7 instead of 2.1 ms). Linux's /proc/loadavg gives the runnable threads
# right now, /proc/self/task this process's share; the other processes' count is smoothed
# over the samples (at most one a second) and compared with half the cores. Where /proc is
# missing, the 1-minute load average less one stands in.
BLAS_THREADED_MACS = 1 << 24
_load = [0.0, False, 0.0]  # (when last sampled, busy, smoothed count of other runnable threads)


def _own_running() -> int:
    count = 0
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:  # the thread ended
            continue
        count += stat[stat.rindex(")") + 2] == "R"  # the state follows the (command) field
    return count


def _others_running() -> float:
    try:
        with open("/proc/loadavg") as f:
            running = int(f.read().split()[3].split("/")[0])
        return max(running - _own_running(), 0)
    except (OSError, ValueError, IndexError):
        try:
            return max(os.getloadavg()[0] - 1.0, 0.0)
        except (OSError, AttributeError):
            return 0.0


def busy() -> bool:
    """Whether other processes keep half the cores runnable (sampled at most once a second)."""
    now = time.monotonic()
    if now - _load[0] > 1.0:
        _load[2] = 0.5 * _load[2] + 0.5 * _others_running()
        _load[1] = _load[2] >= (os.cpu_count() or 1) / 2
        _load[0] = now
    return _load[1]


_blas_api: list = []


def _openblas():
    """(ctypes library, symbol prefix, symbol suffix) of the OpenBLAS this process loaded (numpy's
    scipy-openblas or a system one), or None."""
    import ctypes

    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line and ".so" in line}
    except OSError:
        return None
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix, suffix in (("scipy_openblas", "64_"), ("scipy_openblas", ""),
                               ("openblas", "64_"), ("openblas", "")):
            if hasattr(lib, f"{prefix}_set_num_threads{suffix}"):
                return lib, prefix, suffix
    return None


def _find_blas_api():
    import ctypes

    found = _openblas()
    if found is None:
        return None
    lib, prefix, suffix = found
    set_n = getattr(lib, f"{prefix}_set_num_threads{suffix}")
    get_n = getattr(lib, f"{prefix}_get_num_threads{suffix}")
    set_n.argtypes, set_n.restype, get_n.restype = [ctypes.c_int], None, ctypes.c_int
    return set_n, get_n


def blas_core() -> str:
    """The CPU kernel family OpenBLAS runs here ("Haswell", "SkylakeX", ...; "" when numpy's BLAS
    is not an OpenBLAS this can ask). `OPENBLAS_CORETYPE` in the environment sets it."""
    import ctypes

    found = _openblas()
    if found is None:
        return ""
    lib, prefix, suffix = found
    get_core = getattr(lib, f"{prefix}_get_corename{suffix}", None)
    if get_core is None:
        return ""
    get_core.restype = ctypes.c_char_p
    return (get_core() or b"").decode(errors="replace")


def thread_rule(macs: int, threaded_macs: int, idle: Callable[[], int]) -> int:
    """Threads for a product of `macs` multiply-adds: one below `threaded_macs`; else
    `config.cpu_threads` when set; else one while the machine is busy, `idle()` otherwise."""
    if macs < threaded_macs:
        return 1
    n = config.cpu_threads
    if n:
        return n
    return 1 if busy() else idle()


def blas_threads(macs: int) -> int:
    """The BLAS thread count for a product of `macs` multiply-adds (0: leave BLAS alone)."""
    return thread_rule(macs, BLAS_THREADED_MACS, lambda: 0)


def blas_call(fn, threads: int, *args):
    """fn(*args) with OpenBLAS set to `threads` threads for the call (0: as it is)."""
    if not threads:
        return fn(*args)
    if not _blas_api:
        _blas_api.append(_find_blas_api())
    api = _blas_api[0]
    if api is None:
        return fn(*args)
    set_n, get_n = api
    before = get_n()
    if before == threads:
        return fn(*args)
    set_n(threads)
    try:
        return fn(*args)
    finally:
        set_n(before)


def with_numba_threads(driver):
    """The driver of a program with prange kernels, run under `config.cpu_threads` Numba
    threads when that option is set (0: Numba's default pool)."""
    def run(*args):
        n = config.cpu_threads
        if not n:
            return driver(*args)
        import numba

        before = numba.get_num_threads()
        numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
        try:
            return driver(*args)
        finally:
            numba.set_num_threads(before)

    return run
