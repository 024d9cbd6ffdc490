"""How long the process's idle worker pools spin before they sleep: bounded at numbax's import.

A process that runs numbax has two pools of worker threads besides its own: Numba's (libgomp's
OpenMP team, which runs numbax's kernels and GEMM) and OpenBLAS's (numpy's and scipy's
products). After a parallel call each pool's workers spin, waiting for the next one: libgomp's
for GOMP_SPINCOUNT pause loops (300,000 by default: ~7 ms a worker on the 2-core VM), OpenBLAS's
for 2^28 TSC cycles (~0.13 s). A call of the other pool inside that window shares every core
with the spinners, and an OpenMP region waits at its end for its slowest worker. Measured
(docs/performance.md, "Two thread pools in one process"): a numbax product (128 x 784 @ 784 x
512) right after a user's np.dot of 1000^2 took 9-69 ms on 16 Xeon cores against 0.3 alone,
and 3.3-8.6 ms on the 2-core VM against 1.0-1.5; a 300^2 np.dot right after a numbax call took
6.0-6.5 ms against 0.45 on 16 cores.

So numbax shortens both spins where the user has not chosen them:

* libgomp reads GOMP_SPINCOUNT when it is loaded, which Numba does when it starts its pool on
  the first parallel call, after numbax's import: `bound_openmp_spin` sets it to
  OPENMP_SPIN_COUNT (~0.5 ms on the VM) unless OMP_WAIT_POLICY or GOMP_SPINCOUNT is set or
  libgomp is loaded. A driver's kernels follow one another within microseconds, so the pool
  still spins for the next one: the MLP step (batch 128 and 2048, 16 cores) ran as fast as
  with libgomp's default.
* OpenBLAS reads OPENBLAS_THREAD_TIMEOUT (log2 of the cycles) when it starts its threads, at
  its load: `bound_openblas_spin` sets it to OPENBLAS_TIMEOUT_LOG2 (~0.5 ms) for libraries
  loaded later, and for each one already loaded re-reads the environment and stops its
  threads (`openblas_read_env`, `blas_thread_shutdown_`): OpenBLAS starts them again, with the
  new timeout, at its next threaded call, as it does after a fork. Not while other Python
  threads run: one of them could be inside a BLAS call.

The cost: numpy's threaded products spaced by more than the spin wake OpenBLAS's sleeping
threads first (16 cores: a 300^2 np.dot after 1 ms of Python work 290 against 170 us), and a
np.dot right after a numbax call still meets up to ~0.5 ms of spinning. Either library's own
variable, set before numbax's import, stands; NUMBAX_BOUND_POOL_SPIN=0 keeps both defaults.
"""
from __future__ import annotations

import ctypes
import os
import threading

from numbax._src.compiler.cpu.runtime import blas

OPENMP_SPIN_COUNT = 20_000
OPENBLAS_TIMEOUT_LOG2 = 20
OPENMP_SETTINGS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")
OPENBLAS_SETTINGS = ("OPENBLAS_THREAD_TIMEOUT", "GOTO_THREAD_TIMEOUT")


def enabled() -> bool:
    return os.environ.get("NUMBAX_BOUND_POOL_SPIN", "1").strip().lower() not in (
        "0", "false", "no")


def _loaded(fragment: str) -> bool:
    try:
        with open("/proc/self/maps") as f:
            return any(fragment in line for line in f)
    except OSError:
        return False


def bound_openmp_spin() -> bool:
    """Sets GOMP_SPINCOUNT for the libgomp Numba will load; whether it did."""
    if any(os.environ.get(v) for v in OPENMP_SETTINGS) or _loaded("libgomp"):
        return False
    os.environ["GOMP_SPINCOUNT"] = str(OPENMP_SPIN_COUNT)
    return True


def bound_openblas_spin() -> list[str]:
    """Sets OPENBLAS_THREAD_TIMEOUT and restarts the loaded OpenBLAS libraries' threads with it;
    the paths of the libraries restarted."""
    if any(os.environ.get(v) for v in OPENBLAS_SETTINGS):
        return []
    os.environ["OPENBLAS_THREAD_TIMEOUT"] = str(OPENBLAS_TIMEOUT_LOG2)
    if threading.active_count() > 1:
        return []
    restarted = []
    for lib, _, _ in blas._openblas_libraries():
        read_env = getattr(lib, "openblas_read_env", None)
        shutdown = getattr(lib, "blas_thread_shutdown_", None)
        if read_env is None or shutdown is None:
            continue
        read_env.restype = None
        shutdown.restype = ctypes.c_int
        read_env()
        shutdown()
        restarted.append(lib._name)
    return restarted


def thread_timeout_log2(lib) -> int | None:
    """The spin an OpenBLAS library will give its next threads (log2 of the cycles; 0: its
    built-in default), or None where it does not say."""
    get = getattr(lib, "openblas_thread_timeout", None)
    if get is None:
        return None
    get.restype = ctypes.c_int
    return get()


if enabled():
    bound_openmp_spin()
    bound_openblas_spin()
