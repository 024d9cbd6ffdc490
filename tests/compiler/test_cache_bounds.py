"""Bounds: the in-memory LRU, the disk cache's cap with least-recently-used eviction (safe
while other processes load), and their config options."""
import os
import threading
import time

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax._src import config as config_module
from numbax._src.compiler import cache, cache_bounds
from numbax._src.compiler.cache_bounds import LRUCache

PREFIX = cache.MODULE_PREFIX


# ----------------------------------------------------------------------------- LRUCache


def test_lru_keeps_the_most_recently_used():
    lru = LRUCache(3)
    for k in "abc":
        lru[k] = k.upper()
    assert lru.get("a") == "A"  # a is now the most recent
    lru["d"] = "D"
    assert list(lru) == ["c", "a", "d"] and "b" not in lru
    lru["c"] = "C2"  # overwriting refreshes too
    lru["e"] = "E"
    assert list(lru) == ["d", "c", "e"]
    assert lru["c"] == "C2" and lru.get("zzz", 7) == 7 and len(lru) == 3
    with pytest.raises(KeyError):
        lru["a"]
    assert dict(lru.items()) == {"d": "D", "c": "C2", "e": "E"} and list(lru.values())[0] == "D"
    assert lru == {"c": "C2", "d": "D", "e": "E"} and lru != {}
    assert lru.pop("c") == "C2" and len(lru) == 2
    lru.clear()
    assert not lru


def test_lru_size_follows_a_callable():
    size = [4]
    lru = LRUCache(lambda: size[0])
    for i in range(10):
        lru[i] = i
    assert list(lru) == [6, 7, 8, 9]
    size[0] = 2
    lru[10] = 10
    assert list(lru) == [9, 10] and lru.maxsize == 2


def test_lru_under_threads():
    lru, barrier = LRUCache(16), threading.Barrier(8)

    def work(t):
        barrier.wait()
        for i in range(2000):
            lru[(t, i % 40)] = i
            lru.get((t - 1, i % 40))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(lru) == 16
    assert all(lru[k] % 40 == k[1] for k in lru)


# ----------------------------------------------------------------------------- eviction


def _entry(root, n, size, age_s):
    """A fake cache entry: a module file and one Numba file, last used `age_s` seconds ago."""
    (root / cache_bounds.STORE_DIR).mkdir(exist_ok=True)
    py = root / f"{PREFIX}{n:04d}.py"
    nbc = root / cache_bounds.STORE_DIR / f"{PREFIX}{n:04d}.kernel-3.py311.ab.nbc"
    py.write_bytes(b"#" * (size // 4))
    nbc.write_bytes(b"x" * (size - size // 4))
    stamp = time.time() - age_s
    os.utime(nbc, (stamp, stamp))
    os.utime(py, (stamp, stamp))
    return py, nbc


def test_evict_removes_least_recently_used_down_to_the_low_water_mark(tmp_path):
    entries = [_entry(tmp_path, n, 1000, age_s=10_000 - n) for n in range(10)]  # 0 is oldest
    freed = cache_bounds.evict(tmp_path, PREFIX, 6000, grace_s=0)
    assert freed == 5000  # 10000 -> 5000 <= 0.9 * 6000
    for n, (py, nbc) in enumerate(entries):
        assert py.exists() == nbc.exists() == (n >= 5)
    assert cache_bounds.disk_usage(tmp_path, PREFIX) == 5000
    assert cache_bounds.evict(tmp_path, PREFIX, 6000, grace_s=0) == 0  # under the cap


def test_evict_keeps_recently_used_entries_even_over_the_cap(tmp_path):
    old = [_entry(tmp_path, n, 1000, age_s=3600) for n in range(3)]
    new = [_entry(tmp_path, n, 1000, age_s=5) for n in range(3, 6)]
    cache_bounds.touch(old[2][0])  # used just now: the .py's mtime is the last-use stamp
    cache_bounds.evict(tmp_path, PREFIX, 1000, grace_s=60)
    assert [py.exists() for py, _ in old + new] == [False, False, True, True, True, True]


def test_evict_waits_for_no_one_while_another_process_loads(tmp_path):
    entries = [_entry(tmp_path, n, 1000, age_s=3600) for n in range(4)]
    with cache_bounds.dir_lock(tmp_path, exclusive=False) as held:
        assert held
        assert cache_bounds.evict(tmp_path, PREFIX, 100, grace_s=0) == 0
    assert all(py.exists() and nbc.exists() for py, nbc in entries)
    assert cache_bounds.evict(tmp_path, PREFIX, 100, grace_s=0) == 4000


def test_a_sweep_under_the_cap_never_takes_the_exclusive_lock(tmp_path, monkeypatch):
    """Other processes' loads wait for the exclusive lock, so a sweep that has nothing to
    delete scans without it; one that evicts takes it (and scans again under it)."""
    [_entry(tmp_path, n, 1000, age_s=3600) for n in range(4)]
    taken = []
    real = cache_bounds.dir_lock

    def recording(root, exclusive):
        taken.append(exclusive)
        return real(root, exclusive)

    monkeypatch.setattr(cache_bounds, "dir_lock", recording)
    assert cache_bounds.evict(tmp_path, PREFIX, 10_000, grace_s=0) == 0
    assert taken == []
    assert cache_bounds.evict(tmp_path, PREFIX, 2000, grace_s=0) == 3000  # down to 0.9 * 2000
    assert taken == [True]


def test_evict_clears_stale_temporaries_and_orphans(tmp_path):
    _entry(tmp_path, 0, 1000, age_s=3600)
    (tmp_path / f"{PREFIX}0000.py").unlink()  # an orphan: its Numba file's mtime is its stamp
    _entry(tmp_path, 1, 1000, age_s=10)
    stale, young = tmp_path / ".tmp-abc", tmp_path / ".tmp-def"
    stale.write_bytes(b"half")
    young.write_bytes(b"half")
    then = time.time() - 2 * cache_bounds.STALE_TMP_S
    os.utime(stale, (then, then))
    cache_bounds.evict(tmp_path, PREFIX, 1000, grace_s=60)
    assert not stale.exists() and young.exists()
    assert cache_bounds.disk_usage(tmp_path, PREFIX) == 1000


# ----------------------------------------------------------------------------- end to end


@pytest.fixture
def cache_dir(tmp_path):
    cache.clear()
    with numbax.config.override("cache_dir", str(tmp_path / "c")):
        yield tmp_path / "c"
    cache.clear()


# Programs of different structure (kernels are generic in sizes and float literals, so
# `sinh(x) * 2` and `sinh(x) * 3` would share one cache entry).
PROGRAMS = {
    "sinh": (lambda x: jnp.sinh(x) * 2.0 + 0.25, lambda x: np.sinh(x) * 2.0 + 0.25),
    "cosh": (lambda x: jnp.cosh(x) - 0.5, lambda x: np.cosh(x) - 0.5),
    "tanh": (lambda x: jnp.tanh(x) / 3.0, lambda x: np.tanh(x) / 3.0),
    "arctan": (lambda x: jnp.arctan(x) * x, lambda x: np.arctan(x) * x),
}


def _run(program):
    f, expected = PROGRAMS[program]
    x = np.linspace(-1.0, 1.0, 11)
    np.testing.assert_allclose(numbax.jit(f)(x), expected(x), rtol=1e-13)


def _files(root):
    return {p for p in root.rglob(f"{PREFIX}*")}


def test_writing_over_the_cap_evicts_the_oldest_programs(cache_dir):
    _run("sinh")
    first = _files(cache_dir)
    then = time.time() - 3600
    for path in first:
        os.utime(path, (then, then))
    cache.clear()
    cache._written_since_sweep.clear()  # as in a new process: its first write sweeps
    with numbax.config.override("compilation_cache_max_size",
                                cache_bounds.disk_usage(cache_dir, PREFIX)):
        _run("cosh")
    assert first and not (_files(cache_dir) & first)
    assert _files(cache_dir)  # the new program's entries stay
    cache.clear()
    _run("cosh")  # and serve it


def test_no_cap_and_cache_off(cache_dir):
    with numbax.config.override("compilation_cache_max_size", -1):
        _run("tanh")
    assert _files(cache_dir)
    cache.clear()
    with numbax.config.override("cache_dir", str(cache_dir) + "-off"):
        with numbax.config.override("compilation_cache_max_size", 0):
            _run("arctan")
    assert not os.path.exists(str(cache_dir) + "-off")


# ----------------------------------------------------------------------------- options


@pytest.mark.parametrize("name, bad, expected", [
    ("compilation_cache_max_size", -2, "expected an integer >= -1"),
    ("compilation_cache_max_size", "1G", "expected an integer"),
    ("compilation_cache_max_size", 1.5, "expected an integer"),
    ("executable_cache_size", 0, "expected an integer >= 1"),
    ("executable_cache_size", None, "expected an integer"),
])
def test_options_reject_bad_values(name, bad, expected):
    before = getattr(numbax.config, name)
    with pytest.raises(ValueError, match=f"numbax.config.update: {name} has value .*{expected}"):
        numbax.config.update(name, bad)
    assert getattr(numbax.config, name) == before


def test_options_read_the_environment(monkeypatch):
    assert numbax.config.compilation_cache_max_size >= -1
    monkeypatch.setenv("NUMBAX_COMPILATION_CACHE_MAX_SIZE", "123456")
    monkeypatch.setenv("NUMBAX_EXECUTABLE_CACHE_SIZE", "7")
    fresh = config_module.Config()
    assert fresh.compilation_cache_max_size == 123456 and fresh.executable_cache_size == 7
    monkeypatch.setenv("NUMBAX_COMPILATION_CACHE_MAX_SIZE", "1 GiB")
    with pytest.raises(ValueError, match="NUMBAX_COMPILATION_CACHE_MAX_SIZE has value '1 GiB'"):
        config_module.Config().compilation_cache_max_size  # noqa: B018


def test_defaults():
    fresh = config_module.Config()
    if "NUMBAX_COMPILATION_CACHE_MAX_SIZE" not in os.environ:
        assert fresh.compilation_cache_max_size == 1 << 30
    if "NUMBAX_EXECUTABLE_CACHE_SIZE" not in os.environ:
        assert fresh.executable_cache_size == 512
