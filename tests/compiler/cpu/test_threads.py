"""The CPU thread runtime (cpu/runtime/threads.py): thread counts from a kernel's work and the
free cores, and drivers that pick a kernel's parallel or serial variant per call."""
import os
import subprocess
import sys
import time

import numba
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax._src.compiler.cpu import work
from numbax._src.compiler.cpu.runtime import threads

from .kernel_text import modules


@pytest.mark.skipif(not os.path.exists("/proc/loadavg"), reason="reads Linux's /proc")
def test_others_running_counts_other_processes_not_this_one():
    assert threads._own_running() >= 1  # the thread reading /proc is running
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        seen = []
        for _ in range(20):
            seen.append(threads._others_running())
            time.sleep(0.01)
    finally:
        spinner.kill()
        spinner.wait()
    assert max(seen) >= 1, seen


def test_own_workers_stopping_during_the_read_are_not_other_processes(monkeypatch):
    """15 of this process's workers were spinning when the system count was read and asleep
    by the next look at this process: they are not 13 busy threads of other processes."""
    own = iter([16, 1])
    monkeypatch.setattr(threads, "_own_running", lambda: next(own))
    monkeypatch.setattr(threads, "_system_running", lambda: 17)
    assert threads._others_running() == 1.0
    own = iter([1, 16])  # and the other way round: they woke up between the reads
    monkeypatch.setattr(threads, "_own_running", lambda: next(own))
    assert threads._others_running() == 1.0


def test_a_workers_siblings_are_not_other_processes_load(monkeypatch):
    """In a virtual device's worker, the threads of the job's other workers are not load:
    eight 2-thread workers on 16 cores each keep their two threads; load beyond the siblings'
    still counts."""
    monkeypatch.setattr(threads, "CORES", 16)
    monkeypatch.setattr(threads, "SIBLING_THREADS", 14)
    monkeypatch.setitem(threads._state, "when", -1e9)
    monkeypatch.setattr(threads, "_others_running", lambda: 14.0)
    assert threads.others_running() == 0.0 and threads.free_cores() == 16
    monkeypatch.setitem(threads._state, "when", -1e9)
    monkeypatch.setattr(threads, "_others_running", lambda: 20.0)  # 6 threads from elsewhere
    assert threads.others_running() == 6.0 and threads.free_cores() == 10


@pytest.mark.skipif(not os.path.exists("/proc/self/environ"), reason="reads Linux's /proc")
def test_workers_know_their_siblings_threads():
    """The pool tells each worker how many threads the job's other workers run."""
    from numbax._src.parallel import pool

    p = pool.Pool(4)
    try:
        worker = p.worker(2)
        # Popen returns once exec has closed the parent's error pipe, which is before the
        # kernel sets the new image's environment: until then /proc shows none (seen in CI)
        deadline = time.monotonic() + 10
        while True:
            with open(f"/proc/{worker.proc.pid}/environ", "rb") as f:
                raw = f.read()
            if raw or time.monotonic() > deadline or worker.proc.poll() is not None:
                break
            time.sleep(0.01)
        assert worker.proc.poll() is None, "the worker exited at start"
        env = dict(item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
        share = int(env[b"NUMBA_NUM_THREADS"])
        assert share == max(1, (os.cpu_count() or 1) // 4)
        assert int(env[b"NUMBAX_SIBLING_THREADS"]) == 3 * share
    finally:
        p.shutdown()


@pytest.fixture
def cores(monkeypatch):
    """An 8-core machine with a 8-thread pool, other processes' load set by the test."""
    load = {"others": 0.0}
    monkeypatch.setattr(threads, "CORES", 8)
    monkeypatch.setattr(threads, "pool_size", lambda: 8)
    monkeypatch.setattr(threads, "others_running", lambda: load["others"])
    return load


def test_threads_follow_work_and_free_cores(cores):
    with numbax.config.override("cpu_threads", 0):
        assert threads.threads_for(threads.PARALLEL_MIN_NS - 1) == 1  # too little work
        assert threads.threads_for(3 * threads.PER_THREAD_NS) == 3  # one per PER_THREAD_NS
        assert threads.threads_for(1e12) == 8  # capped by the cores
        cores["others"] = 5.0  # five cores busy elsewhere: three left
        assert threads.free_cores() == 3 and threads.threads_for(1e12) == 3
        cores["others"] = 20.0  # an oversubscribed machine: one thread, never zero
        assert threads.free_cores() == 1 and threads.threads_for(1e12) == 1
        assert threads.busy()
    with numbax.config.override("cpu_threads", 2):  # a fixed count for every parallel kernel
        assert threads.threads_for(threads.PARALLEL_MIN_NS) == 2


def test_a_smaller_region_keeps_the_last_team_while_its_cores_are_free(cores, monkeypatch):
    """libgomp ends a team's spare threads when a region asks for fewer and starts them again
    at the next larger one; a parallel request below the last team gets that team instead, as
    long as the cores are free for it. Serial calls and restored counts pass as they are."""
    monkeypatch.setitem(threads._state, "team", 1)
    assert threads._team(8) == 8
    assert threads._team(3) == 8  # the 8-thread team stays
    assert threads._team(2) == 8
    cores["others"] = 4.0  # four cores left: the team no longer fits, the request stands
    assert threads._team(3) == 3
    assert threads._team(2) == 3  # the new team, 3, is kept in turn
    cores["others"] = 0.0
    assert threads._team(8) == 8 and threads._team(5) == 8


def test_a_call_of_many_regions_keeps_its_own_count(cores, monkeypatch):
    """A compiled loop enters a region an iteration, and each idle thread of a larger team
    costs at every join: past TEAM_RAISE_MAX_REGIONS its count stands (and becomes the team,
    so libgomp ends the spare threads once), while a call of few regions still takes the team."""
    monkeypatch.setitem(threads._state, "team", 8)
    many = threads.TEAM_RAISE_MAX_REGIONS + 1
    assert threads._team(4, threads.TEAM_RAISE_MAX_REGIONS) == 8
    assert threads._team(4, many) == 4 and threads._state["team"] == 4
    assert threads._team(2, 1) == 4  # the new, smaller team is raised to in turn
    assert threads._team(8, many) == 8  # a larger request is the team whatever its regions


def test_use_raises_to_the_team_and_restore_gives_the_count_back(monkeypatch):
    pool = numba.config.NUMBA_NUM_THREADS
    if pool < 2:
        pytest.skip("needs a pool of two threads")
    monkeypatch.setattr(threads, "free_cores", lambda: pool)
    monkeypatch.setitem(threads._state, "team", 1)
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        assert threads.use(pool) == 1 and numba.get_num_threads() == pool
        assert threads.restore(1) == pool and numba.get_num_threads() == 1
        # a request for 2 after a team of `pool` runs on `pool`; the serial count is untouched
        assert threads.use(2) == 1 and numba.get_num_threads() == pool
        threads.restore(1)
        assert threads.use(1) == 1 and numba.get_num_threads() == 1
    finally:
        numba.set_num_threads(before)


def test_chunks_two_per_thread_of_a_minimum_size():
    assert threads.chunks(10**7, 4096, 4) == 8
    assert threads.chunks(10_000, 4096, 8) == 2  # the minimum chunk size wins
    assert threads.chunks(100, 4096, 8) == 1


def test_work_estimate_counts_heavy_ops_and_bytes():
    def nest_of(f, x):
        from numbax._src.compiler import fusion, passes, registry
        jaxpr = passes.simplify(numbax.make_jaxpr(f)(x).jaxpr)
        [node] = fusion.partition(jaxpr, lambda e: registry.fusible(e, "cpu"))
        return node

    x = np.ones(1000, np.float32)
    light = work.work_ns(nest_of(lambda v: v + 1.0, x))
    heavy = work.work_ns(nest_of(lambda v: jnp.exp(v) + 1.0, x))
    assert light == pytest.approx(1000 * work.NS_PER_LIGHT_OP + 8000 * work.NS_PER_BYTE)
    assert heavy == pytest.approx(light + 1000 * work.NS_PER_HEAVY_OP)


@pytest.mark.parametrize("fixed", [1, 2])
def test_driver_runs_the_variant_the_runtime_picks(fixed, monkeypatch):
    f = numbax.jit(lambda v: jnp.tanh(v) * 2.0 + 1.0)
    x = np.linspace(-2, 2, 1 << 18)  # heavy work: the runtime may run it in parallel
    driver = modules(f.lower(x).as_text())[-1]
    assert "n = th.threads_for(" in driver and "k0_par(" in driver and "k0_loop(" in driver
    f(x)
    namespace = f.lower(x).compile()._entry.exe.driver.__globals__  # the driver module
    calls = []
    for name in ("k0_par", "k0_loop"):
        kernel = namespace[name]
        monkeypatch.setitem(namespace, name,
                            lambda *a, _k=kernel, _n=name: (calls.append(_n), _k(*a))[1])
    with numbax.config.override("cpu_threads", fixed):
        got = f(x)
    np.testing.assert_allclose(got, np.tanh(x) * 2.0 + 1.0, rtol=1e-14, atol=1e-14)
    assert calls == (["k0_par"] if fixed > 1 else ["k0_loop"])


def test_tiny_kernels_have_no_runtime_branch():
    driver = modules(numbax.jit(lambda v: v * 2.0).lower(np.ones(10)).as_text())[-1]
    assert "threads_for" not in driver and "k0_par" not in driver


def test_prange_variant_compiles_once_the_kernel_has_run_enough_work(monkeypatch, tmp_path):
    """The serial twin runs until PARALLEL_TIER_NS of estimated work (the prange variant's
    compile would cost more than it saves to a kernel called a few times); then the prange
    variant compiles in the helper process while the serial twin goes on, is saved, and the
    next call loads it from disk and runs it."""
    from numbax._src.compiler import cache
    from numbax._src.compiler.cpu.runtime import compile_ahead
    from numbax._src.compiler.cpu.runtime import threads as th

    monkeypatch.setattr(th, "free_cores", lambda: 2)
    monkeypatch.setattr(th, "pool_size", lambda: 2)
    monkeypatch.setattr(th, "busy", lambda: False)  # (a busy site would stay serial)
    f = numbax.jit(lambda v: jnp.tanh(v) * 3.0 - 1.0)
    x = np.linspace(-2, 2, 1 << 17)  # ~0.4 ms of estimated work per call
    # nothing compiled before; the thread rule's own choice (NUMBAX_CPU_THREADS may force one)
    with numbax.config.override("cache_dir", str(tmp_path)), \
            numbax.config.override("cpu_threads", 0), \
            numbax.config.override("cpu_compile_ahead", True):
        f(x)
        namespace = f.lower(x).compile()._entry.exe.driver.__globals__
        par, serial = namespace["k0_par"], namespace["k0_loop"]
        assert not cache.has_saved_code(par)
        calls = 1
        while getattr(par, "_numbax_ahead", None) is None:
            assert calls < 200
            np.testing.assert_allclose(f(x), np.tanh(x) * 3.0 - 1.0, rtol=1e-14, atol=1e-14)
            calls += 1
        work = par._numbax_serial_ns / calls
        assert (calls - 1) * work < th.PARALLEL_TIER_NS <= calls * work
        assert serial.overloads  # the calls before ran the serial twin
        assert compile_ahead.wait(300)
        assert par._numbax_ahead.ok and not par.overloads and cache.has_saved_code(par)
        np.testing.assert_allclose(f(x), np.tanh(x) * 3.0 - 1.0, rtol=1e-14, atol=1e-14)
        assert par.overloads and not par._cache_misses  # loaded, not compiled here


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs a pool of two threads")
def test_parallel_kernels_restore_the_callers_thread_count():
    """Fused kernels, products, convolutions and windowed reductions set Numba's (thread-local)
    count for their own run only: user code calling Numba later keeps its setting."""
    from numbax import lax

    x = np.random.default_rng(0).standard_normal((4, 34, 34, 16))
    w = np.random.default_rng(1).standard_normal((3, 3, 16, 16))
    a = np.random.default_rng(2).standard_normal((256, 256))
    programs = [
        (numbax.jit(lambda v: jnp.tanh(v) * 2.0), (np.linspace(-1, 1, 1 << 18),)),
        (numbax.jit(lambda p, q: p @ q), (a, a)),
        (numbax.jit(lambda v, k: lax.conv_general_dilated(
            v, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))), (x, w)),
        (numbax.jit(lambda v: lax.reduce_window(v, -jnp.inf, lax.max, (1, 2, 2, 1),
                                                (1, 2, 2, 1), "VALID")), (x,)),
    ]
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        with numbax.config.override("cpu_threads", 2):
            for f, args in programs:
                f(*args)
                assert numba.get_num_threads() == 1, f
    finally:
        numba.set_num_threads(before)


def test_openmp_layer_first_unless_the_user_chose():
    """numbax's import puts Numba's OpenMP layer first (Numba's own order starts with TBB when
    tbb is installed); a layer the user set through Numba's variables stands."""
    code = ("import numbax, numba; "
            "print(' '.join(numba.config.THREADING_LAYER_PRIORITY), numba.config.THREADING_LAYER)")
    clean = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_THREADING_LAYER")}

    def run(**env):
        return subprocess.run([sys.executable, "-c", code], env={**clean, **env},
                              capture_output=True, text=True, check=True).stdout.split()

    assert run() == ["omp", "tbb", "workqueue", "default"]
    assert run(NUMBA_THREADING_LAYER_PRIORITY="workqueue omp tbb")[:3] == \
        ["workqueue", "omp", "tbb"]
    assert run(NUMBA_THREADING_LAYER="workqueue")[-1] == "workqueue"


@pytest.mark.parametrize("shape", [(300, 400, 500), (4, 64, 96, 80)])
def test_cpu_threads_beyond_numbas_pool_runs_on_the_pool(shape):
    """`cpu_threads` above Numba's pool (NUMBA_NUM_THREADS: the process's cores, fewer under
    taskset or a container's cpuset) is capped at the pool, as for fused kernels: products
    asked Numba for more threads than it has and raised ValueError from inside the driver."""
    rng = np.random.default_rng(0)
    *batch, m, k, n = shape
    x = rng.normal(size=(*batch, m, k)).astype(np.float32)
    y = rng.normal(size=(*batch, k, n)).astype(np.float32)
    with numbax.config.override("cpu_threads", threads.pool_size() + 3):
        got = numbax.jit(lambda a, b: jnp.tanh(a @ b) + a.sum())(x, y)
    np.testing.assert_allclose(np.asarray(got), np.tanh(x @ y) + x.sum(), rtol=2e-4, atol=2e-4)
