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
# against numpy's own loops (einsum).
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
    assert all(t in (None, 25) for t in own["timeouts"].values()), own["timeouts"]
    off = _probe(NUMBAX_BOUND_POOL_SPIN="0")
    assert off["env"] == {"GOMP_SPINCOUNT": None, "OPENBLAS_THREAD_TIMEOUT": None}
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
