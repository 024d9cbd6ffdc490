"""How many threads a CPU kernel gets: from its work and from the cores free right now.

Compiled programs run on one pool, Numba's (fused kernels and numbax's own GEMM); a parallel
kernel must never cost more than the serial one would. Three things decide its thread count:

* **Work.** The renderer estimates a kernel's serial time in nanoseconds from its element
  count, the cost of its scalar forms (an exp/log/tanh is ~10x an add) and the bytes it moves
  (`cpu/work.work_ns`). Below PARALLEL_MIN_NS the serial variant runs (a thread's wake-up and
  the join cost more than they save); above it each thread gets at least PER_THREAD_NS of work.
* **Tier.** A kernel's prange variant compiles only once the kernel has run PARALLEL_TIER_NS
  of estimated serial work in this process, unless its code is already compiled or on disk
  (`parallel_ready`): short-lived programs compile serial twins only. It compiles in a helper
  process while the serial twin goes on (compile_ahead.py).
* **Free cores.** Threads beyond the cores other processes leave free are descheduled, and a
  parallel region waits at its join for the slowest of them (a 0.24 ms kernel took 8 ms on the
  busy 2-core VM). `free_cores` counts this machine's runnable threads that are not this
  process's (Linux /proc/loadavg less /proc/self/task's running ones), smoothed over samples
  taken at most every SAMPLE_S seconds.

`config.cpu_threads = n` (NUMBAX_CPU_THREADS) fixes the count of every parallel kernel at n.

**Layer.** `prefer_openmp` (run at numbax's import) puts Numba's OpenMP layer first, with
workers that spin a while after a region, then sleep (for 20,000 pause loops: pool_spin.py): a
driver calls its kernels back to back, and a spinning pool starts the next one at once. Measured
(docs/architecture.md, "Threads"): workqueue's dispatch is 12-28x OpenMP's, a passive wait
made the batch-128 MLP step 1.6x slower on 16 cores, and the one place spinning hurts
(a threaded BLAS right after a region) is avoided by `pool_spinning`, for a window scaled
from the spin count libgomp reads (`spin_window_s`).
The numbers are measurements: docs/performance.md, "CPU thread runtime".
"""
from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator

import numba

from numbax._src.compiler.cpu.runtime import busy_sites, compile_ahead
from numbax._src.compiler.cpu.runtime.busy_sites import PARALLEL, Site, measured  # noqa: F401
from numbax._src.config import config

PARALLEL_MIN_NS = 40_000  # estimated serial time below which a kernel runs serially
PARALLEL_TIER_NS = 20e6  # estimated serial work a kernel runs before its prange variant compiles
# ... and a compiled loop's, per prange in it: Numba lowers each prange as a function of its own
# (~0.3-0.4 s a prange on the 2-core Zen 1 VM against ~0.1 s for a fused kernel's variant), so
# the same 1:5 share of what the variant costs to compile
PRANGE_TIER_NS = 70e6
PER_THREAD_NS = 20_000  # work each extra thread must bring
REGION_WORTH_S = busy_sites.REGION_WORTH_S  # (for drivers)
PARALLEL_WORTH_S = busy_sites.PARALLEL_WORTH_S
# A call entering more parallel regions than this runs on its own thread count, not on the
# last, larger team: on 16 Xeon cores each idle thread of the team cost ~0.2-0.4 us at every
# region's join (a 200-step descent's 400 regions on 4 blocks: 4.35 ms on a 4-thread team,
# 5.2-6.2 on the 16 an earlier kernel left), where ending it and starting it again costs ~35
# us once (`use`): the two meet near 100-150 regions
TEAM_RAISE_MAX_REGIONS = 100
SAMPLE_S = 0.5  # free cores are re-measured at most this often
# libgomp's workers spin GOMP_SPINCOUNT pause loops after a parallel region before they sleep.
# A threaded BLAS call inside that window shares every core with them (docs/performance.md: the
# batch-2048 MLP step, 60 ms against 14). At libgomp's default count, 300,000, they spun ~7 ms
# on the VM and on the 16-core Xeon; the window keeps a 7x margin (pause loops differ by CPU)
# and scales with the count libgomp reads (`openmp_spin_count`).
DEFAULT_SPIN_COUNT = 300_000
SPIN_WINDOW_S = 0.05  # at DEFAULT_SPIN_COUNT

_state = {"when": -1e9, "others": 0.0, "helper": 0, "parallel": -1e9, "team": 1}

OPENMP_FIRST = ["omp", "tbb", "workqueue"]


def prefer_openmp() -> None:
    """Numba's OpenMP layer first (then TBB, then workqueue, where libgomp is missing), unless
    the user chose a layer (NUMBA_THREADING_LAYER, NUMBA_THREADING_LAYER_PRIORITY). Numba's
    own order puts TBB first whenever the tbb package is installed; the runtime's thread
    rules are measured on OpenMP. Runs when this module is imported (by numbax's import,
    before Numba starts its pool)."""
    if os.environ.get("NUMBA_THREADING_LAYER") or os.environ.get(
            "NUMBA_THREADING_LAYER_PRIORITY"):
        return
    numba.config.THREADING_LAYER_PRIORITY = list(OPENMP_FIRST)


def _usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


CORES = _usable_cores()


def _own_running() -> int:
    """This process's running threads (each one's /proc stat file, read as bytes through the
    os module: Python's text files cost 3x as much, ~11 against ~3.7 us a thread on the VM, and
    a process with jax imported has ~20 threads, 16-core hosts far more)."""
    count = 0
    for tid in os.listdir("/proc/self/task"):
        try:
            fd = os.open(f"/proc/self/task/{tid}/stat", os.O_RDONLY)
        except OSError:  # the thread ended
            continue
        try:
            stat = os.read(fd, 4096)
        except OSError:
            continue
        finally:
            os.close(fd)
        count += stat[stat.rindex(b")") + 2] == ord("R")  # the state follows the (command)
    return count


def _system_running() -> int:
    """Runnable threads of the whole system now (Linux /proc/loadavg's fourth field)."""
    with open("/proc/loadavg") as f:
        return int(f.read().split()[3].split("/")[0])


def _others_running() -> float:
    """Runnable threads of other processes right now ("busy" counts those, not the load
    average: that includes this process, which would then call itself busy)."""
    try:
        # This process's threads counted on both sides of the system-wide count: Numba's
        # workers spin for a while after a parallel region, and one that stopped between
        # the two reads would otherwise count as another process's (16 spinning workers
        # made a quiet 16-core host look half busy).
        own = _own_running()
        running = _system_running()
        return float(max(running - max(own, _own_running()), 0))
    except (OSError, ValueError, IndexError):
        try:
            return max(os.getloadavg()[0] - 1.0, 0.0)
        except (OSError, AttributeError):
            return 0.0


# In a virtual device's worker: the threads its sibling workers run (their shares of the
# cores, set by parallel/pool.py). They are this job's, not other processes' load: counted as
# "others", eight 2-thread workers each saw one free core and ran every kernel serially.
SIBLING_THREADS = int(os.environ.get("NUMBAX_SIBLING_THREADS", "0") or 0)


def others_running() -> float:
    """Other processes' runnable threads, smoothed (half the old value, half the new); not
    this process's compile helper (compile_ahead.py), whose core `free_cores` leaves to it."""
    now = time.monotonic()
    if now - _state["when"] > SAMPLE_S:
        _state["helper"] = compile_ahead.compiling()
        fresh = max(0.0, _others_running() - SIBLING_THREADS - _state["helper"])
        first = _state["when"] < 0
        _state["others"] = fresh if first else 0.5 * _state["others"] + 0.5 * fresh
        _state["when"] = now
    return _state["others"]


def free_cores() -> int:
    """Cores this process can expect to run on now (at least 1). The compile helper's is not
    among them, but it does not make the machine `busy`: seen as another process's load, it
    sent kernels to the native pool, whose first calls compile (a 12 s stall on a fresh
    install's first program)."""
    return max(1, min(CORES, round(CORES - others_running() - _state["helper"])))


def busy() -> bool:
    """Whether other processes keep at least half the cores runnable."""
    return others_running() >= CORES / 2


def pool_size() -> int:
    return numba.config.NUMBA_NUM_THREADS


def threads_for(work_ns: float, site: Site | None = None) -> int:
    """Threads for a kernel whose serial run is estimated at `work_ns` nanoseconds: 1 below
    PARALLEL_MIN_NS; else at most one per PER_THREAD_NS of work, per free core and per Numba
    worker; `config.cpu_threads` when set. On a busy machine, a call site (`site`; the caller
    reports the threads that ran with `measured`) gets one thread or one per PER_THREAD_NS
    of work and Numba worker, whichever its own busy calls measured faster (busy_sites.py);
    a `quiet` site chooses so on a quiet machine too, between one and the count above."""
    fixed = config.hot("cpu_threads")
    if fixed:
        return min(fixed, pool_size())
    if work_ns < PARALLEL_MIN_NS:
        return 1
    crowded = site is not None and busy()
    cap = pool_size() if crowded else min(free_cores(), pool_size())
    threads = max(1, min(int(work_ns // PER_THREAD_NS), cap))
    if crowded or (site is not None and site.quiet):
        return threads if threads > 1 and site.choose(crowded) == PARALLEL else 1
    return threads


def parallel_ready(kernel, arguments, work_ns: float,
                   tier_ns: float = PARALLEL_TIER_NS) -> bool:
    """Whether a kernel's prange variant `kernel` (a Numba dispatcher) may run this call: it is
    compiled in this process or its code is in the disk cache, or `config.cpu_threads` is set,
    or the kernel has run `tier_ns` of estimated serial work and the compile then sent to a
    helper process for the types of `arguments()` is done (compile_ahead.py). Until then the
    serial twin runs: a prange variant costs ~0.1 s more to compile (a compiled loop's, seconds),
    which a kernel called a few times never earns back (the first call of a training step
    compiled two of them; an LSTM's two loop bodies took 8 s each, 4.7 and 3.7 s serial)."""
    compiled = getattr(kernel, "overloads", True)  # a plain function: nothing to compile
    if compiled or config.hot("cpu_threads"):
        return True
    done = getattr(kernel, "_numbax_serial_ns", None)
    if done is None:
        from numbax._src.compiler import cache

        if cache.has_saved_code(kernel):  # the call loads it in milliseconds
            return True
        done = 0.0
    if done < tier_ns:
        done += work_ns
        kernel._numbax_serial_ns = done
        if done < tier_ns:
            return False
    return compile_ahead.ready(kernel, arguments)


def _thread_count_calls() -> tuple:
    """(get, set) of Numba's thread-local thread count. Once Numba's pool is running, its
    ctypes entry points themselves (kept for the process): numba.get/set_num_threads take two
    locks per call to check that the pool is launched (0.5-0.8 us each, paid twice per
    parallel kernel call); before that, or on a Numba without them, the public functions."""
    if _FAST:
        return _FAST[0]
    from numba.np.ufunc import parallel

    get = getattr(parallel, "_get_num_threads", None)
    put = getattr(parallel, "_set_num_threads", None)
    if get is None or put is None or not getattr(parallel, "_is_initialized", False):
        return numba.get_num_threads, numba.set_num_threads
    _FAST.append((get, put))
    return get, put


_FAST: list = []  # [(get, set)]: Numba's entry points, once its pool runs


def use(n: int, regions: int = 1) -> int:
    """Sets Numba's thread count for the parallel kernels this thread calls next (a
    thread-local setting, set only when it changes) and returns the previous count, which the
    caller gives back to `restore` after its kernel: code of the user's that calls Numba in the
    same thread keeps its own setting.

    A parallel count is raised to the last region's team while the cores are free for it
    (`_team`): libgomp ends a team's spare threads when a region asks for fewer, and starts
    them again at the next larger one, ~30 us a thread (16 cores: a 16-thread region after a
    4-thread one took 426 us, 7 after a 16-thread one; the batch-128 MLP step's products ran
    2.3x their time alone). The kernels that split their work by their own count leave the
    extra threads idle; a prange over elements splits it over the team. A call entering many
    `regions` (compiled loops) keeps its own count, since each idle thread costs at every join."""
    if n > 1:
        n = _team(n, regions)
    return restore(n)


def restore(n: int) -> int:
    """Sets Numba's thread-local count to `n` as it is (a caller's count given back after its
    kernel) and returns the count before."""
    get, put = _thread_count_calls()
    before = get()
    if before != n:
        if not 1 <= n <= pool_size():
            numba.set_num_threads(n)  # raises Numba's own error for a bad count
        put(n)
    if n > 1:  # a region starts (or, restoring, has just ended): its workers will spin
        _state["parallel"] = time.monotonic()
    return before


def _team(n: int, regions: int = 1) -> int:
    """The team for a call that asks for n > 1 threads in `regions` parallel regions: the last
    team where it is larger, no larger than the cores free now, and the call's regions would
    pay less at their joins for the idle threads than starting those threads again costs (else
    n, which becomes the team)."""
    team = _state["team"]
    if n < team <= min(pool_size(), free_cores()) and regions <= TEAM_RAISE_MAX_REGIONS:
        return team
    _state["team"] = n
    return n


def run_variant(kernels: dict, threads: int, *args) -> None:
    """kernels[True](*args), a library kernel's parallel variant, on `threads` of Numba's
    threads (`running`), or kernels[False](*args), its serial one, for one thread (no parallel
    region to start)."""
    if threads <= 1:
        kernels[False](*args)
        return
    with running(threads):
        kernels[True](*args)


@contextlib.contextmanager
def running(n: int) -> Iterator[None]:
    """`use(n)` for the kernels called inside the block, the caller's count restored after
    (the library kernels' form of the drivers' `before = use(n) ... restore(before)`)."""
    before = use(n)
    try:
        yield
    finally:
        restore(before)


_SPIN_SUFFIXES = {"k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}


def openmp_spin_count(environ=os.environ) -> float:
    """The pause loops libgomp's idle workers spin, as libgomp reads them when it loads:
    GOMP_SPINCOUNT (a count, with an optional k/M/G/T suffix, or "infinite"), else 3e10 for
    OMP_WAIT_POLICY=active, 0 for passive, DEFAULT_SPIN_COUNT where neither is set (or either
    does not parse, as libgomp ignores it). pool_spin.py sets 20,000 unless the user chose."""
    count = environ.get("GOMP_SPINCOUNT", "").strip().lower()
    if count in ("infinite", "infinity"):
        return float("inf")
    if count:
        scale = _SPIN_SUFFIXES.get(count[-1], 1.0)
        digits = count[:-1] if count[-1] in _SPIN_SUFFIXES else count
        if digits.isdigit():
            return int(digits) * scale
    policy = environ.get("OMP_WAIT_POLICY", "").strip().lower()
    return {"active": 3e10, "passive": 0.0}.get(policy, float(DEFAULT_SPIN_COUNT))


def spin_window_s() -> float:
    """How long after a parallel region Numba's workers may still spin: SPIN_WINDOW_S scaled
    by libgomp's spin count (pool_spin.py's 20,000: 3.3 ms; a passive wait: none), read once
    the pool has run (libgomp has read the environment by then)."""
    window = _state.get("spin_window")
    if window is None:
        window = _state["spin_window"] = SPIN_WINDOW_S * openmp_spin_count() / DEFAULT_SPIN_COUNT
    return window


def pool_spinning() -> bool:
    """Whether Numba's workers may still be spinning after a recent parallel region."""
    return spin_left_s() > 0


def spin_left_s() -> float:
    """How much longer Numba's workers may spin after the last parallel region (0: none)."""
    last = _state["parallel"]
    return max(0.0, last + spin_window_s() - time.monotonic()) if last >= 0 else 0.0


def chunks(size: int, minimum: int, n: int) -> int:
    """Chunks of a parallel full reduction over `size` elements on `n` threads: two per thread
    (the faster threads take the spare ones), each of at least `minimum` elements."""
    return max(1, min(2 * n, size // minimum))


prefer_openmp()
