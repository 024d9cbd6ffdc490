"""A damaged, full or unusable cache degrades (rebuilds, or compiles in memory with one
warning); it never raises out of the user's call."""
import errno
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax._src.compiler import cache, cache_security
from numbax._src.compiler.cache_security import CacheWarning

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
X = np.linspace(-1.0, 1.0, 7)


def _check_program():
    """Traces, builds and runs a small program anew (a fresh jit wrapper)."""
    out = numbax.jit(lambda x: jnp.tanh(x) * 2.5 + 1.0)(X)
    np.testing.assert_allclose(out, np.tanh(X) * 2.5 + 1.0, rtol=1e-13)


@pytest.fixture
def cache_dir(tmp_path):
    numbax.clear_caches()  # this process re-executes its modules against this test's directory
    with numbax.config.override("cache_dir", str(tmp_path / "c")):
        yield tmp_path / "c"
    numbax.clear_caches()


def _cache_warnings(record):
    return [w for w in record if issubclass(w.category, CacheWarning)]


def _damage(path, how):
    data = path.read_bytes()
    assert data, path
    damaged = {"empty": b"", "truncated": data[: len(data) // 2],
               "garbage": os.urandom(len(data))}[how]
    path.write_bytes(damaged)


def _only(paths):
    assert len(paths) == 1, paths
    return paths[0]


@pytest.mark.parametrize("how", ["empty", "truncated", "garbage"])
@pytest.mark.parametrize("kind", ["py", "nbc", "key"])
def test_damaged_file_is_rebuilt(cache_dir, kind, how):
    _check_program()
    numbax.clear_caches()
    kernel_py = _only([p for p in cache_dir.glob("numbax_gen_*.py")
                       if "@njit" in p.read_text()])
    nbc = _only(list((cache_dir / "__pycache__").glob("*.nbc")))
    target = {"py": kernel_py, "nbc": nbc, "key": cache_dir / "hmac.key"}[kind]
    original = target.read_bytes()
    _damage(target, how)
    misses = cache.numba_compile_stats()["cache_misses"]
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        _check_program()
    assert len(_cache_warnings(record)) <= 1
    if kind == "py":
        assert kernel_py.read_bytes() == original
    key = cache_security.load_key(cache_dir)
    blob = nbc.read_bytes()
    assert cache_security.unseal(key, nbc.name, blob) is not None  # sealed again, verifies
    recompiled = cache.numba_compile_stats()["cache_misses"] - misses
    assert recompiled == (0 if kind == "py" else 1)


def test_full_disk_while_writing_modules(cache_dir, monkeypatch):
    cache.cache_root()  # the key exists; now every write fails as on a full disk

    def enospc(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(cache_security, "write_all", enospc)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        _check_program()
        _check_program()
    found = _cache_warnings(record)
    assert len(found) == 1 and "No space left" in str(found[0].message)
    assert not list(cache_dir.glob("numbax_gen_*")) and not list(cache_dir.glob(".tmp-*"))


def test_full_disk_while_saving_compiled_code(cache_dir, monkeypatch):
    _check_program()
    numbax.clear_caches()
    for path in (cache_dir / "__pycache__").glob("*.nbc"):
        path.unlink()

    def enospc(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(cache_security, "write_all", enospc)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        _check_program()
    found = _cache_warnings(record)
    assert len(found) == 1 and "could not save" in str(found[0].message)
    assert not list((cache_dir / "__pycache__").iterdir())


_FSIZE_PROGRAM = textwrap.dedent("""
    import resource, signal
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (1500, 1500))
    import numpy as np, numbax, numbax.numpy as jnp
    x = np.linspace(-1, 1, 12).reshape(3, 4)
    out = numbax.jit(lambda x: jnp.sum(jnp.exp(x), axis=1) * 0.5)(x)
    np.testing.assert_allclose(out, np.sum(np.exp(x), axis=1) * 0.5, rtol=1e-13)
    print("ok")
""")


def test_file_size_limit_in_a_real_process(tmp_path):
    """The kernel refuses writes past 1500 bytes (EFBIG): modules that fit are cached, the
    rest compiles in memory, with one warning for the cache directory and, where the runtime's
    helpers were not compiled before (a fresh install), one for their code."""
    env = dict(os.environ, PYTHONPATH=ROOT, NUMBAX_CACHE_DIR=str(tmp_path / "c"))
    run = subprocess.run([sys.executable, "-c", _FSIZE_PROGRAM], env=env, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip().endswith("ok")
    assert run.stderr.count("CacheWarning: numbax: could not use the cache") == 1, run.stderr
    assert run.stderr.count("CacheWarning") - run.stderr.count(
        "CacheWarning: numbax: could not save compiled code to") == 1, run.stderr[-3000:]
    assert "File too large" in run.stderr


@pytest.mark.parametrize("where", ["nul", "under_a_file"])
def test_unusable_cache_path_compiles_in_memory(tmp_path, where):
    (tmp_path / "file").write_text("not a directory")
    path = {"nul": str(tmp_path / "a\0b"), "under_a_file": str(tmp_path / "file" / "c")}[where]
    numbax.clear_caches()
    with numbax.config.override("cache_dir", path):
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            in_memory = cache.STATS["in_memory"]
            _check_program()
            _check_program()
    found = _cache_warnings(record)
    assert len(found) == 1 and "compiles in memory" in str(found[0].message)
    assert cache.STATS["in_memory"] > in_memory
    numbax.clear_caches()


def test_module_file_deleted_by_someone_else_while_loading(cache_dir, monkeypatch):
    """The .py vanishes between its write and Numba reading it (a user's rm, another
    machine sharing the directory): the module compiles in memory, with one warning."""
    real = cache._ensure_file

    def then_vanish(path, data):
        written = real(path, data)
        path.unlink()
        return written

    monkeypatch.setattr(cache, "_ensure_file", then_vanish)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        _check_program()
    found = _cache_warnings(record)
    assert len(found) == 1 and "compiles in memory" in str(found[0].message)
    assert cache.STATS["in_memory"] >= 1


def test_a_runtime_helper_that_cannot_be_saved_warns_once(tmp_path, monkeypatch):
    """Numba's cache of the runtime's helpers (`cache._KeyNamedCacheFile`) on a full disk: the
    save is one warning, nothing is indexed, and the caller goes on."""
    monkeypatch.setattr(cache_security, "_warned", set())
    store = cache._KeyNamedCacheFile(str(tmp_path), "helper", "stamp")

    def full_disk(name, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(store, "_save_data", full_disk)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        store.save(("sig", 1), b"code")
        store.save(("sig", 2), b"code")
    found = _cache_warnings(record)
    assert len(found) == 1 and "could not save compiled code" in str(found[0].message)
    assert "No space left" in str(found[0].message)
    assert store._load_index() == {}
