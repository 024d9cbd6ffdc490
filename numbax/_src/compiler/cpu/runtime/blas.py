"""BLAS thread policy for matrix products from compiled code: how many threads a product gets,
OpenBLAS's own C API to set that count around one call, and whether the machine is busy."""
from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from numbax._src.compiler.cpu.runtime import threads
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
# "Busy" is runtime/threads.py's: other processes' runnable threads, not the load average.
BLAS_THREADED_MACS = 1 << 24
# On a busy machine a product this long (~20 ms on one core) runs on every core anyway: over
# that many scheduler slices its threads get their fair share beside the other processes', and
# a thread descheduled near the end costs a slice at most. 2-core VM, two busy loops: matmul
# 2000² (8e9 multiply-adds) 107 ms on one thread, 83 on two (jax.jit 72-74); 1000² (1e9) 12.3
# on one, 16.0 on two (each of its parallel regions waits for a descheduled thread).
LONG_MACS = 1 << 32
# LAPACK calls between a jitted program's kernels (cpu/backend.py's LapackCall) take BLAS's
# own threads from this size (n = 322 for an n x n matrix; `lapack_threads`). It was 2^30
# while OpenBLAS's idle threads spun beside the kernels (a Gaussian process's 500 x 500
# gradient took 22 ms a step with threads and 15 with one on 16 Xeon cores), then 2^28. With
# their spin bounded (pool_spin.py) and no call made to share the cores with Numba's spinning
# workers, on 16 Xeon cores at 2^25 against 2^28 a jitted inverse of 500^2 took 8.3 against
# 15.9 ms, of 645^2 18 against 40 (jax.jit 7.6 and 9.9); the Gaussian process's gradient
# 12.5 against 13.7 ms; on the 2-core VM inv of 400^2 8.2 against 11.5 (docs/performance.md).
LAPACK_THREADED_MACS = 1 << 25
# One core's speed in `lapack_macs` (which counts n^3 for every n x n routine), float64: a
# 1024^2 triangular solve of 1024 columns, LU and Cholesky took 37, 23.5 and 13 ms on one
# Xeon core (29, 46 and 83 G a second); the slowest is taken. float32 runs twice as fast.
LAPACK_MACS_PER_S = 3e10
# A LAPACK call waits for Numba's spinning workers to stop if its one-thread time is at least
# this many times the wait (`lapack_threads`).
LAPACK_WAIT_PAYS = 4


_blas_api: list = []


def _openblas_libraries() -> list:
    """(ctypes library, symbol prefix, symbol suffix) of each OpenBLAS this process loaded:
    numpy's scipy-openblas64 and scipy's own scipy-openblas (scipy.linalg's LAPACK and Numba's
    np.dot in compiled loops call it), or a system one."""
    import ctypes

    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line and ".so" in line}
    except OSError:
        return []
    found = []
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix, suffix in (("scipy_openblas", "64_"), ("scipy_openblas", ""),
                               ("openblas", "64_"), ("openblas", "")):
            if hasattr(lib, f"{prefix}_set_num_threads{suffix}"):
                found.append((lib, prefix, suffix))
                break
    return found


def _openblas():
    """numpy's OpenBLAS (the first found), or None."""
    found = _openblas_libraries()
    numpys = [f for f in found if f[2] == "64_"]
    return (numpys or found or [None])[0]


def _thread_api(lib, prefix: str, suffix: str) -> tuple:
    """(set_num_threads, get_num_threads) of one OpenBLAS (`_openblas_libraries`' entry)."""
    import ctypes

    set_n = getattr(lib, f"{prefix}_set_num_threads{suffix}")
    get_n = getattr(lib, f"{prefix}_get_num_threads{suffix}")
    set_n.argtypes, set_n.restype, get_n.restype = [ctypes.c_int], None, ctypes.c_int
    return set_n, get_n


def _find_blas_api() -> list:
    """(set_num_threads, get_num_threads) of every loaded OpenBLAS."""
    import scipy.linalg  # noqa: F401  (loads scipy's OpenBLAS, so it is found here too)

    return [_thread_api(*found) for found in _openblas_libraries()]


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


def thread_rule(macs: int, threaded_macs: int, idle: Callable[[], int],
                every_core: Callable[[], int], site: threads.Site | None = None) -> int:
    """Threads for a product of `macs` multiply-adds: one below `threaded_macs`; else
    `config.cpu_threads` when set; else `idle()` on a quiet machine; on a busy one, for a call
    site (`site`, the products of one shape: the caller reports with `threads.measured`),
    one or `every_core()`, whichever that site's busy calls measured faster (busy_sites.py);
    without a site `every_core()` for a product of LONG_MACS and more, one below."""
    if macs < threaded_macs:
        return 1
    n = config.cpu_threads
    if n:
        return n
    if not threads.busy():
        return idle()
    if site is not None:
        return every_core() if site.choose() == threads.PARALLEL else 1
    return every_core() if macs >= LONG_MACS else 1


def blas_threads(macs: int, site: threads.Site | None = None) -> int:
    """The BLAS thread count for a product of `macs` multiply-adds (0: leave BLAS alone); one
    while Numba's workers may still spin after a parallel region (BLAS's own workers would
    share every core with them: a 10M multiply-add product took 0.8 ms instead of 0.08 in
    the batch-2048 MLP step on 16 cores)."""
    if threads.pool_spinning():
        return 1
    return thread_rule(macs, BLAS_THREADED_MACS, lambda: 0, lambda: 0, site)


def lapack_threads(args, wait: bool = True) -> int:
    """BLAS threads for a LAPACK call on `args` between a program's kernels (0: BLAS's own
    count): one below LAPACK_THREADED_MACS; above it, where Numba's workers may still spin
    after a kernel, one unless waiting for them to stop is short against the call's time on
    one thread (LAPACK_WAIT_PAYS), when the call waits (if `wait`) and takes the threads.
    Given one thread whenever the workers might spin (as products are), a jitted inverse of
    1024^2 on 16 Xeon cores took 93 ms where its pieces on BLAS's threads took 31 (jax.jit
    28): both of its triangular solves came right after the permutation's kernel."""
    macs = lapack_macs(args)
    if macs < LAPACK_THREADED_MACS:
        return 1
    left = threads.spin_left_s()
    if left:
        single = any(getattr(a, "dtype", None) == np.float32 for a in args)
        if not wait or macs / (LAPACK_MACS_PER_S * (2 if single else 1)) < \
                LAPACK_WAIT_PAYS * left:
            return 1
        time.sleep(left)
    return blas_threads(macs)


def blas_call(fn, threads: int, *args):
    """fn(*args) with every loaded OpenBLAS set to `threads` threads for the call (0: as it
    is)."""
    if not threads:
        return fn(*args)
    if not _blas_api:
        _blas_api.append(_find_blas_api())
    before = [(set_n, get_n()) for set_n, get_n in _blas_api[0]]
    changed = [(set_n, n) for set_n, n in before if n != threads]
    for set_n, _ in changed:
        set_n(threads)
    try:
        return fn(*args)
    finally:
        for set_n, n in changed:
            set_n(n)


_numpy_api: list = []  # [(set, get) of numpy's own OpenBLAS, or None] once asked


def _find_numpy_api() -> tuple | None:
    """(set_num_threads, get_num_threads) of numpy's own OpenBLAS (the 64-bit-integer
    scipy-openblas64 numpy's wheels ship; scipy's is the 32-bit one), or None where numpy's
    BLAS cannot be told apart from the others."""
    found = [f for f in _openblas_libraries() if f[2] == "64_"]
    return _thread_api(*found[0]) if len(found) == 1 else None


def numpy_blas_call(fn, threads: int, *args):
    """`blas_call` for a numpy product (np.dot, np.matmul), which runs on numpy's own
    OpenBLAS: only that library's count is set around the call where it can be told apart
    (setting scipy's too cost 1.3 us more of a 5.6 us matrix-vector product's call on the
    2-core VM), every library's elsewhere."""
    if not threads:
        return fn(*args)
    if not _numpy_api:
        _numpy_api.append(_find_numpy_api())
    api = _numpy_api[0]
    if api is None:
        return blas_call(fn, threads, *args)
    set_n, get_n = api
    before = get_n()
    if before == threads:
        return fn(*args)
    set_n(threads)
    try:
        return fn(*args)
    finally:
        set_n(before)


def lapack_macs(args) -> int:
    """A LAPACK call's work in multiply-adds, for `blas_threads`: n^3 for the largest of its
    (..., n, n)-like matrix operands (m * n * min(m, n) for an m x n one), summed over a batch."""
    work = 0
    for a in args:
        shape = getattr(a, "shape", ())
        if len(shape) >= 2:
            m, n = shape[-2], shape[-1]
            work = max(work, (a.size // max(m * n, 1)) * m * n * min(m, n))
    return work
