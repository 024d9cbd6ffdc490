"""pool_spin: importing numbax bounds how long libgomp's and OpenBLAS's idle workers spin (the
settings each library reads, and the spin OpenBLAS reports for its restarted threads); numpy's
products still run, on as many threads, with the same numbers; the user's own settings and
the opt-out stand."""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(platform.system() != "Linux", reason="/proc/self/maps")

# numpy loaded (and, with "thread", another Python thread running), then numbax: the
# environment, each loaded OpenBLAS's spin setting and thread count, and a threaded product
# against numpy's own loops (einsum), and the window in which numbax takes Numba's workers
# to be spinning.
PROBE = """
import json, sys, threading
import numpy as np
stop = threading.Event()
if "thread" in sys.argv:
    worker = threading.Thread(target=stop.wait)
    worker.start()
import os
import numbax
from numbax._src.compiler.cpu.runtime import blas, pool_spin
from numbax._src.compiler.cpu.runtime import threads as runtime_threads
libs = blas._openblas_libraries()
threads = [blas._thread_api(*f)[1]() for f in libs]
rng = np.random.default_rng(0)
a, b = rng.standard_normal((300, 400)), rng.standard_normal((400, 200))
product = np.dot(a, b)
stop.set()
print(json.dumps({
    "env": {k: os.environ.get(k) for k in ("GOMP_SPINCOUNT", "OPENBLAS_THREAD_TIMEOUT")},
    "timeouts": {l._name.rsplit("/", 1)[-1]: pool_spin.thread_timeout_log2(l) for l, _, _ in libs},
    "numpy_lib": [l._name.rsplit("/", 1)[-1] for l, _, s in libs if s == "64_"],
    "threads": threads,
    "window": runtime_threads.spin_window_s(),
    "error": float(np.max(np.abs(product - np.einsum("ik,kj->ij", a, b)))),
}))
"""


def _probe(*args, **env):
    full = {k: v for k, v in os.environ.items() if k not in (
        "GOMP_SPINCOUNT", "OMP_WAIT_POLICY", "OPENBLAS_THREAD_TIMEOUT", "GOTO_THREAD_TIMEOUT",
        "NUMBAX_BOUND_POOL_SPIN")}
    full.update(env)
    out = subprocess.run([sys.executable, "-c", PROBE, *args], env=full, capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_import_bounds_both_pools_spin_and_numpy_still_runs():
    got = _probe()
    assert got["env"] == {"GOMP_SPINCOUNT": "20000", "OPENBLAS_THREAD_TIMEOUT": "20"}
    assert got["window"] == pytest.approx(0.05 * 20_000 / 300_000)
    reported = [t for t in got["timeouts"].values() if t is not None]
    if not got["timeouts"]:
        pytest.skip("numpy's BLAS is not an OpenBLAS this process can see")
    assert reported and all(t == 20 for t in reported), got["timeouts"]
    assert got["error"] < 1e-9
    # restarted, OpenBLAS keeps its thread count (it starts the threads at its next call)
    default = _probe(NUMBAX_BOUND_POOL_SPIN="0")
    assert got["threads"] == default["threads"]


def test_the_users_settings_and_the_opt_out_stand():
    own = _probe(GOMP_SPINCOUNT="5000", OPENBLAS_THREAD_TIMEOUT="25")
    assert own["env"] == {"GOMP_SPINCOUNT": "5000", "OPENBLAS_THREAD_TIMEOUT": "25"}
    assert own["window"] == pytest.approx(0.05 * 5000 / 300_000)
    assert all(t in (None, 25) for t in own["timeouts"].values()), own["timeouts"]
    off = _probe(NUMBAX_BOUND_POOL_SPIN="0")
    assert off["env"] == {"GOMP_SPINCOUNT": None, "OPENBLAS_THREAD_TIMEOUT": None}
    assert off["window"] == pytest.approx(0.05)  # libgomp's default spin: ~7 ms measured
    assert all(t in (None, 0) for t in off["timeouts"].values()), off["timeouts"]
    assert off["error"] < 1e-9


def test_a_running_thread_keeps_loaded_libraries_threads():
    """Another Python thread could be inside a BLAS call: numpy's OpenBLAS (loaded before
    numbax) keeps its threads and their default; libraries loaded later read the setting."""
    got = _probe("thread")
    assert got["env"]["OPENBLAS_THREAD_TIMEOUT"] == "20"
    for name in got["numpy_lib"]:
        assert got["timeouts"][name] in (None, 0), got["timeouts"]
    assert got["error"] < 1e-9


@pytest.mark.parametrize("env, count", [
    ({}, 300_000),                                    # libgomp's default
    ({"GOMP_SPINCOUNT": "20000"}, 20_000),
    ({"GOMP_SPINCOUNT": " 20k"}, 20_000),              # libgomp's k/M/G/T suffixes
    ({"GOMP_SPINCOUNT": "3M"}, 3_000_000),
    ({"GOMP_SPINCOUNT": "Infinite"}, float("inf")),
    ({"GOMP_SPINCOUNT": "lots"}, 300_000),            # libgomp ignores what does not parse
    ({"OMP_WAIT_POLICY": "PASSIVE"}, 0),
    ({"OMP_WAIT_POLICY": "active"}, 3e10),            # libgomp's "5 minutes"
    ({"OMP_WAIT_POLICY": "active", "GOMP_SPINCOUNT": "100"}, 100),  # the count wins
])
def test_spin_count_read_as_libgomp_reads_it(env, count):
    from numbax._src.compiler.cpu.runtime import threads

    assert threads.openmp_spin_count(env) == count


@pytest.mark.parametrize("env, spinning_after", [
    ({"GOMP_SPINCOUNT": "20000"}, (0.0,)),            # ~3.3 ms: not 20 ms later
    ({"OMP_WAIT_POLICY": "passive"}, ()),             # the workers sleep at once
    ({"OMP_WAIT_POLICY": "active"}, (0.0, 0.02, 60.0)),
])
def test_pool_counts_as_spinning_for_the_spin_it_was_given(monkeypatch, env, spinning_after):
    """`pool_spinning` after a region that ended `ago` seconds before, for each of
    0, 20 ms and 60 s: spinning only within the window libgomp's spin count gives."""
    from numbax._src.compiler.cpu.runtime import threads

    for name in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setitem(threads._state, "spin_window", None)
    now = 1e6
    monkeypatch.setattr(threads.time, "monotonic", lambda: now)
    for ago in (0.0, 0.02, 60.0):
        monkeypatch.setitem(threads._state, "parallel", now - ago)
        assert threads.pool_spinning() == (ago in spinning_after), (env, ago)
    monkeypatch.setitem(threads._state, "parallel", -1e9)  # no region has run
    assert not threads.pool_spinning()
