"""Planted-file attacks on the cache directory: none runs code, each is replaced; directories
are 0700 and files 0600 whatever the umask; another user's directory is refused."""
import importlib.util
import os
import pickle
import stat
import sys
import threading
import types
import warnings
from importlib import _bootstrap_external

import numba
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax._src.compiler import cache, cache_security
from numbax._src.compiler.cache_security import CacheWarning

X = np.linspace(-1.0, 1.0, 9)
OTHER_UID = 54321


class _Evil:
    """A pickle that, when loaded, creates the directory `marker` (an attacker's payload) and
    gives `result`."""

    def __init__(self, marker, result="None"):
        self.code = f"__import__('os').makedirs({str(marker)!r}, exist_ok=True) or {result}"

    def __reduce__(self):
        return eval, (self.code,)


def _check_program():
    out = numbax.jit(lambda x: jnp.cos(x) * 1.75 - 0.5)(X)
    np.testing.assert_allclose(out, np.cos(X) * 1.75 - 0.5, rtol=1e-13)


@pytest.fixture
def cache_dir(tmp_path):
    numbax.clear_caches()
    with numbax.config.override("cache_dir", str(tmp_path / "c")):
        yield tmp_path / "c"
    numbax.clear_caches()


def _kernel_module(cache_dir):
    paths = [p for p in cache_dir.glob("numbax_gen_*.py") if "@njit" in p.read_text()]
    assert len(paths) == 1, paths
    return paths[0]


def _numba_bases(kernel_py):
    """The file-name bases Numba gives the cache files of the module's kernels (its parallel
    and serial variants: `<module>.<function>-<line>.pyXY`)."""
    bases = []
    for line, text in enumerate(kernel_py.read_text().splitlines(), start=1):
        if text.startswith("def "):
            function = text[4:text.index("(")]
            bases.append(f"{kernel_py.stem}.{function}-{line}"
                         f".py{sys.version_info[0]}{sys.version_info[1]}")
    assert bases, kernel_py
    return bases


def test_the_attacks_work_on_plain_numba_and_python(tmp_path):
    """Control: a planted .nbi runs code in plain Numba, a planted .pyc in Python's importer."""
    src = tmp_path / "plainmod.py"
    src.write_text("from numba import njit\n\n@njit(cache=True)\ndef f(x):\n    return x + 1\n")
    spec = importlib.util.spec_from_file_location("plainmod", src)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    index = module.f._cache._cache_file._index_path
    os.makedirs(os.path.dirname(index), exist_ok=True)
    with open(index, "wb") as f:
        pickle.dump(numba.__version__, f)
        f.write(pickle.dumps(_Evil(tmp_path / "nbi_ran", "(None, {})")))
    assert module.f(1) == 2
    assert (tmp_path / "nbi_ran").exists()

    pyc = importlib.util.cache_from_source(str(src))
    st = os.stat(src)
    evil = compile(f"import os; os.mkdir({str(tmp_path / 'pyc_ran')!r})", str(src), "exec")
    with open(pyc, "wb") as f:
        f.write(_bootstrap_external._code_to_timestamp_pyc(evil, st.st_mtime, st.st_size))
    spec = importlib.util.spec_from_file_location("plainmod2", src)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
    assert (tmp_path / "pyc_ran").exists()


def test_planted_nbi_is_never_read(cache_dir, tmp_path):
    _check_program()
    numbax.clear_caches()
    kernel_py = _kernel_module(cache_dir)
    for base in _numba_bases(kernel_py):
        with open(cache_dir / "__pycache__" / (base + ".nbi"), "wb") as f:
            pickle.dump(numba.__version__, f)
            f.write(pickle.dumps(_Evil(tmp_path / "ran", "(None, {})")))
    _check_program()
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize("plant", ["raw_pickle", "sealed_with_another_key", "renamed_entry"])
def test_planted_nbc_is_never_unpickled(cache_dir, tmp_path, plant):
    _check_program()
    numbax.clear_caches()
    nbc = next((cache_dir / "__pycache__").glob("*.nbc"))
    payload = pickle.dumps(_Evil(tmp_path / "ran"))
    if plant == "raw_pickle":
        nbc.write_bytes(payload)
    elif plant == "sealed_with_another_key":
        nbc.write_bytes(cache_security.seal(os.urandom(32), nbc.name, payload))
    else:  # a genuine sealed entry of another name: its MAC binds the name
        key = cache_security.load_key(cache_dir)
        nbc.write_bytes(cache_security.seal(key, "other" + nbc.name, payload))
    misses = cache.numba_compile_stats()["cache_misses"]
    with pytest.warns(CacheWarning, match="failed authentication"):
        _check_program()
    assert not (tmp_path / "ran").exists()
    assert cache.numba_compile_stats()["cache_misses"] == misses + 1
    key = cache_security.load_key(cache_dir)
    assert cache_security.unseal(key, nbc.name, nbc.read_bytes()) is not None


def test_planted_pyc_never_runs_and_none_is_written(cache_dir, tmp_path):
    _check_program()
    numbax.clear_caches()
    for py in cache_dir.glob("numbax_gen_*.py"):
        st = os.stat(py)
        evil = compile(f"import os; os.makedirs({str(tmp_path / 'ran')!r}, exist_ok=True)",
                       str(py), "exec")
        pyc = importlib.util.cache_from_source(str(py))
        with open(pyc, "wb") as f:
            f.write(_bootstrap_external._code_to_timestamp_pyc(evil, st.st_mtime, st.st_size))
        os.chmod(pyc, 0o600)
    _check_program()
    assert not (tmp_path / "ran").exists()
    numbax.clear_caches()
    for pyc in (cache_dir / "__pycache__").glob("*.pyc"):
        pyc.unlink()
    _check_program()
    assert not list(cache_dir.rglob("*.pyc"))


def _modes(root):
    out = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            out[os.path.relpath(path, root)] = stat.S_IMODE(os.lstat(path).st_mode)
    return out


def test_loose_directory_under_umask_000(tmp_path):
    root = tmp_path / "c"
    old = os.umask(0)
    try:
        root.mkdir(mode=0o755)
        os.chmod(root, 0o755)
        numbax.clear_caches()
        with numbax.config.override("cache_dir", str(root)):
            with pytest.warns(CacheWarning, match="0o755"):
                _check_program()
    finally:
        os.umask(old)
        numbax.clear_caches()
    assert stat.S_IMODE(os.stat(root).st_mode) == 0o700
    modes = _modes(root)
    assert any(name.endswith(".nbc") for name in modes) and "hmac.key" in modes
    for name, mode in modes.items():
        want = 0o700 if os.path.isdir(root / name) else 0o600
        assert mode == want, (name, oct(mode))


def test_new_parents_are_private_under_umask_000(tmp_path):
    old = os.umask(0)
    try:
        found = None
        with numbax.config.override("cache_dir", str(tmp_path / "a" / "b" / "c")):
            found = cache.cache_root()
    finally:
        os.umask(old)
    assert found is not None
    for path in (tmp_path / "a", tmp_path / "a" / "b", tmp_path / "a" / "b" / "c"):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o700


def _give_away(path, monkeypatch):
    """Makes `path` another user's: chown as root, else numbax is told it runs as someone else
    (a non-root user cannot give a file away)."""
    if os.geteuid() == 0:
        os.chown(path, OTHER_UID, OTHER_UID)
    else:
        uid = os.geteuid()
        monkeypatch.setattr(cache_security, "_uid", lambda: uid + 1)


def test_another_users_directory_is_refused(tmp_path, monkeypatch):
    root = tmp_path / "theirs"
    root.mkdir(mode=0o700)
    _give_away(root, monkeypatch)
    numbax.clear_caches()
    with numbax.config.override("cache_dir", str(root)):
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            _check_program()
            _check_program()
    numbax.clear_caches()
    found = [w for w in record if issubclass(w.category, CacheWarning)]
    assert len(found) == 1 and "belongs to user id" in str(found[0].message)
    assert os.listdir(root) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_another_users_files_in_our_directory_are_replaced(cache_dir):
    _check_program()
    numbax.clear_caches()
    key = cache_security.load_key(cache_dir)
    kernel_py = _kernel_module(cache_dir)
    for path in (kernel_py, cache_dir / "hmac.key"):
        os.chown(path, OTHER_UID, OTHER_UID)
    written = cache.STATS["written"]
    with pytest.warns(CacheWarning, match="failed authentication"):  # the new key's MAC
        _check_program()
    assert cache.STATS["written"] == written + 1
    for path in (kernel_py, cache_dir / "hmac.key"):
        assert os.stat(path).st_uid == os.geteuid()
    assert cache_security.load_key(cache_dir) != key


def test_dispatchers_load_only_through_the_signed_store(cache_dir):
    """The one touch of Numba's internals: every caching dispatcher of a generated module
    reads and writes through numbax's authenticated store, never Numba's index pickles."""
    _check_program()
    kernel_py = _kernel_module(cache_dir)
    module = sys.modules[kernel_py.stem]
    assert isinstance(module.kernel._cache, cache._GuardedCache)
    assert isinstance(module.kernel._cache._inner._cache_file, cache._SignedStore)
    assert module.kernel.stats.cache_path == str(cache_dir / "__pycache__")
    assert not list(cache_dir.rglob("*.nbi"))


def _task_module(cache_dir):
    """The generated module of a fused kernel that has a native-pool task (a busy machine's
    parallel arm), after one quiet call of its program."""
    x = np.linspace(-1.0, 1.0, 1 << 20)
    out = numbax.jit(lambda v: jnp.tanh(v) * 2.0 + 1.0)(x)
    np.testing.assert_allclose(out, np.tanh(x) * 2.0 + 1.0, rtol=1e-13, atol=1e-15)
    modules = [sys.modules[p.stem] for p in cache_dir.glob("numbax_gen_*.py")
               if "def kernel_task" in p.read_text()]
    assert len(modules) == 1
    return modules[0]


def test_planted_index_of_a_pool_task_is_never_read(cache_dir, tmp_path):
    """A fused kernel's pool task (a cfunc) compiles through the signed store too: Numba's own
    cfunc cache would unpickle the planted index at a busy machine's first pooled call."""
    from numba.core.caching import FunctionCache

    from numbax._src.compiler.cpu.runtime import kernel_tasks

    module = _task_module(cache_dir)
    index = FunctionCache(module.kernel_task)._cache_file._index_path
    os.makedirs(os.path.dirname(index), exist_ok=True)
    with open(index, "wb") as f:
        pickle.dump(numba.__version__, f)
        f.write(pickle.dumps(_Evil(tmp_path / "ran", "(None, {})")))
    kernel_tasks._tasks.pop(module.kernel_task, None)
    assert kernel_tasks.task(module.kernel_task)
    assert not (tmp_path / "ran").exists()
    assert list((cache_dir / "__pycache__").glob("*.kernel_task-*.nbc"))


def test_pool_task_loads_back_from_the_signed_store(cache_dir):
    from numbax._src.compiler.cpu.runtime import kernel_tasks

    module = _task_module(cache_dir)
    first = cache.signed_cfunc(module.kernel_task, kernel_tasks._TASK_SIG, nopython=True,
                               error_model="numpy")
    again = cache.signed_cfunc(module.kernel_task, kernel_tasks._TASK_SIG, nopython=True,
                               error_model="numpy")
    assert isinstance(again._cache, cache._GuardedCache)
    assert (first._cache_hits, again._cache_hits) == (0, 1)
    assert not list(cache_dir.rglob("*.nbi"))


def test_unexpected_numba_cache_layout_caches_nothing(tmp_path):
    module = types.ModuleType("numbax_gen_layout_check")
    exec("from numba import njit\n@njit(cache=False)\ndef kernel(x):\n    return x\n",
         module.__dict__)
    module.kernel._cache = object.__new__(numba.core.caching.FunctionCache)  # no _cache_file
    cache._authenticate_dispatchers(module, tmp_path, b"k" * 32)
    assert isinstance(module.kernel._cache, numba.core.caching.NullCache)


def test_seal_binds_key_name_and_every_byte():
    key, payload = os.urandom(32), b"compiled code"
    blob = cache_security.seal(key, "a.nbc", payload)
    assert cache_security.unseal(key, "a.nbc", blob) == payload
    assert cache_security.unseal(os.urandom(32), "a.nbc", blob) is None
    assert cache_security.unseal(key, "b.nbc", blob) is None
    for i in (0, 20, len(blob) - 1):
        flipped = bytearray(blob)
        flipped[i] ^= 1
        assert cache_security.unseal(key, "a.nbc", bytes(flipped)) is None
    for cut in (0, 10, len(blob) - 1):
        assert cache_security.unseal(key, "a.nbc", blob[:cut]) is None


def test_key_is_private_and_created_once_under_races(tmp_path):
    keys, barrier = [], threading.Barrier(8)

    def make():
        barrier.wait()
        keys.append(cache_security.load_key(tmp_path))

    threads = [threading.Thread(target=make) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(keys)) == 1 and len(keys[0]) == cache_security.KEY_BYTES
    assert stat.S_IMODE(os.stat(tmp_path / "hmac.key").st_mode) == 0o600
    os.chmod(tmp_path / "hmac.key", 0o644)  # readable by others: no longer a secret
    assert cache_security.load_key(tmp_path) != keys[0]
    assert stat.S_IMODE(os.stat(tmp_path / "hmac.key").st_mode) == 0o600
