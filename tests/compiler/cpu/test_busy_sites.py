"""Serial or parallel on a busy machine, chosen by each call site's own timings
(cpu/runtime/busy_sites.py): the arms are tried, the faster one wins, the loser is retried
more rarely the more it lost, and drivers and products report what ran."""
from __future__ import annotations

import threading

import numba
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax._src.compiler.cpu.runtime import busy_sites, library
from numbax._src.compiler.cpu.runtime import threads as th

from .kernel_text import modules


@pytest.fixture
def clock(monkeypatch):
    """A fake perf_counter the test advances: `clock["now"]`."""
    now = {"now": 100.0}
    monkeypatch.setattr(busy_sites.time, "perf_counter", lambda: now["now"])
    return now


def _simulate(site, clock, cost, calls):
    """`calls` busy calls at `site`, the arm that runs costing cost[arm] seconds; the arms
    chosen, in order."""
    chosen = []
    for _ in range(calls):
        arm = site.choose()
        clock["now"] += cost[arm]
        busy_sites.measured(site, 4 if arm == busy_sites.PARALLEL else 1)
        chosen.append(arm)
    return chosen


def test_short_sites_stay_serial(clock):
    """A site whose serial runs are shorter than PARALLEL_WORTH_S never risks a parallel run
    (a region that waits a scheduler slice would cost it many times its time)."""
    site = busy_sites.Site()
    short = busy_sites.PARALLEL_WORTH_S / 2
    assert _simulate(site, clock, {0: short, 1: short / 10}, 300) == [0] * 300
    # the machine gets busier: the same site's serial runs now take longer, and it tries
    chosen = _simulate(site, clock, {0: 4 * short, 1: short}, 40)
    assert busy_sites.PARALLEL in chosen


def test_a_tiered_site_tries_parallel_once_its_serial_runs_earned_it(clock):
    """A fused kernel's pool site (tier: its task's compile) runs serially until its busy
    serial runs have taken `tier` seconds in all, then tries the pool."""
    site = busy_sites.Site(worth=0.001, tier=1.0)
    chosen = _simulate(site, clock, {0: 0.125, 1: 0.01}, 12)
    assert chosen[:8] == [0] * 8  # 8 x 0.125 s: the tier is reached after the eighth
    assert chosen[8:10] == [1, 1] and site.spent == 1.0


@pytest.mark.parametrize("serial_cost,parallel_cost", [(1.0, 10.0), (10.0, 1.0)])
def test_the_faster_arm_wins_and_the_loser_is_retried_rarely(clock, serial_cost,
                                                             parallel_cost):
    site = busy_sites.Site()
    chosen = _simulate(site, clock, {0: serial_cost, 1: parallel_cost}, 500)
    assert chosen[:4] == [0, 0, 1, 1]  # each arm twice, serial first
    faster = 0 if serial_cost < parallel_cost else 1
    later = chosen[4:]
    retries = later.count(1 - faster)
    # a 10x loser is retried every 80 calls (RETRY_EVERY x its loss)
    assert 3 <= retries <= 8, retries
    assert site.mean[faster] == pytest.approx(min(serial_cost, parallel_cost))


def test_a_change_in_the_machine_turns_the_choice(clock):
    site = busy_sites.Site()
    _simulate(site, clock, {0: 1.0, 1: 3.0}, 100)
    # parallel becomes 3x faster than serial: the next retries see it and it takes over
    chosen = _simulate(site, clock, {0: 3.0, 1: 1.0}, 200)
    assert chosen[-50:].count(1) >= 45


def test_only_stamped_calls_of_the_same_thread_count(clock):
    site = busy_sites.Site()
    busy_sites.measured(site, 1)  # a quiet call: nothing stamped, nothing counted
    assert site.runs == [0, 0]
    site.choose()
    clock["now"] += 5.0
    done = threading.Event()

    def other():
        busy_sites.measured(site, 1)  # the stamp belongs to the main thread's call
        done.set()

    threading.Thread(target=other).start()
    done.wait()
    assert site.runs == [0, 0] and site.started == 0.0


def test_threads_for_uses_the_site_only_when_busy(monkeypatch):
    monkeypatch.setattr(th, "pool_size", lambda: 8)
    monkeypatch.setattr(th, "CORES", 8)
    busy = {"now": False}
    monkeypatch.setattr(th, "busy", lambda: busy["now"])
    monkeypatch.setattr(th, "free_cores", lambda: 1 if busy["now"] else 8)
    site = busy_sites.Site(worth=0.0)  # (any serial time is worth a parallel try)
    with numbax.config.override("cpu_threads", 0):
        assert th.threads_for(1e9, site) == 8 and site.started == 0.0  # quiet: the rule
        busy["now"] = True
        got = []
        for _ in range(4):
            got.append(th.threads_for(1e9, site))
            th.measured(site, got[-1])
        assert got == [1, 1, 8, 8]  # each arm twice; parallel takes the whole pool
        assert th.threads_for(th.PARALLEL_MIN_NS - 1, site) == 1  # too little work: no site
    with numbax.config.override("cpu_threads", 3):
        assert th.threads_for(1e9, site) == 3  # a fixed count is never second-guessed


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs a pool of two threads")
def test_a_busy_driver_tries_both_variants_and_gives_the_same_numbers(monkeypatch):
    f = numbax.jit(lambda v: jnp.tanh(v) * 2.0 + 1.0)
    x = np.linspace(-2, 2, 1 << 18)
    driver = modules(f.lower(x).as_text())[-1]
    # (its parallel arm on a busy machine is the native pool when that is on: test_kernel_tasks)
    assert "th.measured(_site0, n)" in driver and "_site0 = pk.site(k0_task)" in driver
    f(x)
    namespace = f.lower(x).compile()._entry.exe.driver.__globals__
    calls = []
    for name in ("k0_par", "k0_loop"):
        kernel = namespace[name]
        monkeypatch.setitem(namespace, name,
                            lambda *a, _k=kernel, _n=name: (calls.append(_n), _k(*a))[1])
    monkeypatch.setattr(th, "busy", lambda: True)
    monkeypatch.setattr(th, "parallel_ready", lambda kernel, arguments, work, tier_ns=0: True)
    monkeypatch.setattr(busy_sites, "PARALLEL_WORTH_S", 0.0)
    site = busy_sites.Site()  # fresh timings (the warm-up call may have met a busy machine)
    monkeypatch.setitem(namespace, "_site0", site)
    with numbax.config.override("cpu_threads", 0), \
            numbax.config.override("cpu_native_pool", False):
        outs = [np.asarray(f(x)) for _ in range(4)]
    assert calls == ["k0_loop", "k0_loop", "k0_par", "k0_par"]
    assert site.runs == [2, 2]
    for got in outs:
        np.testing.assert_allclose(got, np.tanh(x) * 2.0 + 1.0, rtol=1e-14, atol=1e-14)


def test_busy_products_have_a_site_per_shape_and_report_their_threads(monkeypatch):
    monkeypatch.setattr(th, "busy", lambda: True)
    monkeypatch.setattr(th, "pool_size", lambda: 2)
    monkeypatch.setattr(th, "pool_spinning", lambda: False)
    monkeypatch.setattr(library, "_product_sites", {})
    monkeypatch.setattr(busy_sites, "PARALLEL_WORTH_S", 0.0)
    monkeypatch.setattr(busy_sites, "POOL_WORTH_S", 0.0)  # (the native pool's sites)
    rng = np.random.default_rng(3)
    a = rng.standard_normal((256, 256)).astype(np.float32)
    b = rng.standard_normal((256, 300)).astype(np.float32)
    with numbax.config.override("cpu_threads", 0):
        for _ in range(4):
            got = library.dot(a, b, 256 * 256 * 300)
            np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=2e-4, atol=2e-3)
        assert library.busy_site((a.shape, b.shape, "f"), 256 * 256 * 300) is not None
        [site] = library._product_sites.values()
        assert site.runs == [2, 2]  # (256*256*300 multiply-adds take threads when quiet too)
        assert library.busy_site(((8, 8), (8, 8), "f"), 512) is None  # never threaded
    monkeypatch.setattr(th, "busy", lambda: False)
    assert library.busy_site((a.shape, b.shape, "f"), 256 * 256 * 300) is None


@pytest.mark.slow  # compiles threaded convolutions (seconds each); products' sites stay in CI
def test_busy_convolutions_have_a_site_per_configuration(monkeypatch):
    from numbax import lax

    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 34, 34, 16)).astype(np.float32)
    w = rng.standard_normal((3, 3, 16, 32)).astype(np.float32)
    conv = numbax.jit(lambda v, k: lax.conv_general_dilated(
        v, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")))
    monkeypatch.setattr(th, "busy", lambda: False)
    quiet = np.asarray(conv(x, w))
    monkeypatch.setattr(th, "busy", lambda: True)
    monkeypatch.setattr(th, "pool_size", lambda: 2)
    monkeypatch.setattr(library, "_product_sites", {})
    monkeypatch.setattr(busy_sites, "PARALLEL_WORTH_S", 0.0)
    monkeypatch.setattr(busy_sites, "POOL_WORTH_S", 0.0)  # (the native pool's sites)
    with numbax.config.override("cpu_threads", 0):
        busy = [np.asarray(conv(x, w)) for _ in range(4)]
    [site] = [s for key, s in library._product_sites.items() if key[0] == "conv"]
    assert site.runs == [2, 2]
    for got in busy:  # the same sums whichever thread count computed them
        np.testing.assert_array_equal(got, quiet)
