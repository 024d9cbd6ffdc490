"""Compiling from many threads and many processes at once: every first call works, no process
sees a half-written or vanished cache file."""
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
import uuid

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax._src.compiler import cache

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def shared_cache_dir(tmp_path):
    """A fresh cache directory for every thread (config.override is thread-local)."""
    before = numbax.config.cache_dir
    numbax.config.update("cache_dir", str(tmp_path / "cache"))
    yield tmp_path / "cache"
    numbax.config.update("cache_dir", before)


def _fresh_constant() -> float:
    """A constant no earlier test used: its program's modules are new to this process."""
    return 1.0 + uuid.uuid4().int % 10_000 / 10_007


def _run_threads(n, target):
    barrier = threading.Barrier(n)
    errors, results = [], {}

    def work(i):
        try:
            barrier.wait()
            results[i] = target(i)
        except BaseException as err:  # noqa: BLE001 - collected and reported below
            errors.append(err)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors[:3]
    return results


def test_eight_threads_first_call_of_one_function(shared_cache_dir):
    c = _fresh_constant()
    f = numbax.jit(lambda x: jnp.tanh(x) * c + jnp.sum(x))
    x = np.linspace(-2.0, 2.0, 24).reshape(4, 6)
    results = _run_threads(8, lambda i: np.asarray(f(x)))
    want = np.tanh(x) * c + np.sum(x)
    for out in results.values():
        np.testing.assert_allclose(out, want, rtol=1e-13)


def test_eight_threads_times_eight_functions(shared_cache_dir):
    c = _fresh_constant()
    funs = [numbax.jit(lambda x, k=k: jnp.sin(x) * (c + k) - k) for k in range(8)]
    x = np.linspace(-1.0, 1.0, 10)

    def call_all(i):
        order = [(i + j) % 8 for j in range(8)]  # each thread starts with another function
        return {k: np.asarray(funs[k](x)) for k in order}

    results = _run_threads(8, call_all)
    assert len(results) == 8
    for outs in results.values():
        for k, out in outs.items():
            np.testing.assert_allclose(out, np.sin(x) * (c + k) - k, rtol=1e-13)


_WORKER = textwrap.dedent("""
    import json, os, sys, time
    import numpy as np, numbax, numbax.numpy as jnp
    from numbax._src.compiler import cache
    go = sys.argv[1]
    while not os.path.exists(go):
        time.sleep(0.005)
    x = np.linspace(-1, 1, 30).reshape(5, 6)
    out = numbax.jit(lambda x: jnp.sum(jnp.exp(x) * 0.5, axis=0) - jnp.cos(x[0]))(x)
    np.testing.assert_allclose(out, np.sum(np.exp(x) * 0.5, axis=0) - np.cos(x[0]),
                               rtol=1e-13)
    print(json.dumps({**cache.STATS, **cache.numba_compile_stats()}))
""")


def test_four_processes_compile_into_one_directory(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT, NUMBAX_CACHE_DIR=str(tmp_path / "cache"))
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", _WORKER, str(go)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(4)]
    time.sleep(0.5)
    go.touch()  # they import numbax meanwhile, then all compile at once
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err[-3000:]
        assert "CacheWarning" not in err, err[-3000:]
        stats = json.loads(out.strip().splitlines()[-1])
        assert stats["written"] + stats["from_disk"] >= 2 and stats["in_memory"] == 0
    # the directory they filled serves a fifth process without a single Numba compile
    go5 = tmp_path / "go5"
    go5.touch()
    fifth = subprocess.run([sys.executable, "-c", _WORKER, str(go5)], env=env,
                           capture_output=True, text=True, timeout=300)
    assert fifth.returncode == 0, fifth.stderr[-3000:]
    stats = json.loads(fifth.stdout.strip().splitlines()[-1])
    assert stats["written"] == 0 and stats["cache_misses"] == 0 and stats["cache_hits"] >= 1


_COMPILE_LOG = textwrap.dedent("""
    import json, os, sys, time
    import numpy as np
    from numba.core import event
    import numbax, numbax.numpy as jnp

    compiled = []

    class Log(event.Listener):
        def on_start(self, ev):
            d = ev.data["dispatcher"]
            if (d.py_func.__module__ or "").startswith("numbax"):
                compiled.append(f"{d.py_func.__module__}.{d.py_func.__qualname__}"
                                f"{tuple(ev.data['args'])}")

        def on_end(self, ev):
            pass

    event.register("numba:compile", Log())
    go = sys.argv[1]
    while not os.path.exists(go):
        time.sleep(0.005)
    x = np.linspace(-1, 1, 4000).reshape(4, 1000)
    out = numbax.jit(lambda x: jnp.argmax(jnp.sin(x) * 3.0, axis=1))(x)
    np.testing.assert_array_equal(out, np.argmax(np.sin(x) * 3.0, axis=1))
    print(json.dumps(compiled))
""")


def test_processes_take_turns_compiling_a_signature(tmp_path):
    """Two processes on cold caches (numbax's and Numba's for the runtime) run one program at
    once: each function's signature is compiled by one of them, the other loads it from disk
    (compile_lock.py). Before, both compiled every one."""
    env = dict(os.environ, PYTHONPATH=ROOT, NUMBAX_CACHE_DIR=str(tmp_path / "cache"),
               NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", _COMPILE_LOG, str(go)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    time.sleep(1.0)
    go.touch()
    logs = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
        logs.append(json.loads(out.strip().splitlines()[-1]))
    assert any(logs), "the program compiled nothing: the test no longer exercises the lock"
    assert not set(logs[0]) & set(logs[1]), sorted(set(logs[0]) & set(logs[1]))
    left = [p for p in tmp_path.rglob("*.lock") if p.name != ".lock"]  # (the directory's own)
    assert not left, f"compile locks' files left behind: {left}"


def test_loads_are_serialised_but_published_whole(shared_cache_dir, monkeypatch):
    """A module is in sys.modules only once it has finished executing."""
    seen = []
    real_exec = cache._exec

    def slow_exec(name, source, *rest):
        module = real_exec(name, source, *rest)
        seen.append(name in sys.modules)  # not yet published
        return module

    monkeypatch.setattr(cache, "_exec", slow_exec)
    src = f"VALUE = {_fresh_constant()!r}\n"
    modules = _run_threads(4, lambda i: cache.load_module(src, "cpu", ("test",)))
    assert len({id(m) for m in modules.values()}) == 1
    assert seen == [False]


def test_processes_saving_different_signatures_at_once_never_swap_their_code(tmp_path):
    """Two processes save different signatures of one runtime function at once: both loaded
    the index before either saved, and the first one's data lands last (simulated by holding
    it back). Each signature then loads its own code or misses, never the other's: Numba's
    numbering gave both the first free number, one data file, and an index pointing the second
    signature at the first one's code."""
    from numba.core import caching

    from numbax._src.compiler import cache

    assert caching.IndexDataCacheFile is cache._KeyNamedCacheFile  # installed at import
    first = cache._KeyNamedCacheFile(str(tmp_path), "runtime.fn-1.py311", "stamp")
    second = cache._KeyNamedCacheFile(str(tmp_path), "runtime.fn-1.py311", "stamp")
    stale = second._load_index()  # loaded before `first` saved anything
    held = []
    write_data = first._save_data
    first._save_data = lambda name, data: held.append((name, data))
    first.save(("float64",), b"code for float64")  # its index entry now, its data later
    second._load_index = lambda: dict(stale)
    second.save(("float32",), b"code for float32")
    write_data(*held[0])
    for reader in (first, cache._KeyNamedCacheFile(str(tmp_path), "runtime.fn-1.py311",
                                                   "stamp")):
        assert reader.load(("float32",)) == b"code for float32"
        assert reader.load(("float64",)) in (None, b"code for float64")  # a miss at worst
