"""The disk cache: a second process loads kernels instead of compiling; bad entries are rebuilt."""
import os
import stat
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import numbax
from numbax._src.compiler import cache
from numbax._src.compiler.cache_security import CacheWarning

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_PROGRAM = textwrap.dedent("""
    import json, numpy as np, numbax, numbax.numpy as jnp
    from numbax._src.compiler import cache
    x = np.linspace(-1, 1, 20).reshape(4, 5)
    out = numbax.jit(lambda x: jnp.sum(jnp.tanh(x) * 3.0 + 0.25, axis=1))(x)
    np.testing.assert_allclose(out, np.sum(np.tanh(x) * 3.0 + 0.25, axis=1), rtol=1e-14)
    print(json.dumps({**cache.STATS, **cache.numba_compile_stats()}))
""")


def _run(cache_dir):
    env = dict(os.environ, PYTHONPATH=ROOT, NUMBAX_CACHE_DIR=str(cache_dir))
    out = subprocess.run([sys.executable, "-c", _PROGRAM], env=env, capture_output=True,
                         text=True, check=True).stdout
    import json
    return json.loads(out.strip().splitlines()[-1])


def test_second_process_loads_from_disk(tmp_path):
    first = _run(tmp_path / "c")
    assert first["written"] >= 1 and first["cache_misses"] >= 1
    assert first["plain"] == 1  # the driver: executed from memory, never written
    second = _run(tmp_path / "c")
    assert second["written"] == 0 and second["from_disk"] == first["written"]
    assert second["cache_misses"] == 0 and second["cache_hits"] >= 1
    assert stat.S_IMODE(os.stat(tmp_path / "c").st_mode) == 0o700


def test_corrupt_entry_is_rebuilt(tmp_path):
    first = _run(tmp_path / "c")
    for name in os.listdir(tmp_path / "c"):
        if name.endswith(".py"):
            (tmp_path / "c" / name).write_text("raise SystemExit('corrupt')\n")
    second = _run(tmp_path / "c")
    assert second["written"] == first["written"]


def test_cache_can_be_turned_off(tmp_path, monkeypatch):
    monkeypatch.setattr(cache, "STATS", dict(cache.STATS))
    with numbax.config.override("compilation_cache", False):
        with numbax.config.override("cache_dir", str(tmp_path / "off")):
            out = numbax.jit(lambda x: x * 7.0 - 1.5)(np.arange(3.0))
    np.testing.assert_allclose(out, np.arange(3.0) * 7.0 - 1.5)
    assert not (tmp_path / "off").exists()


def test_loose_directory_is_repaired(tmp_path):
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o777)
    os.chmod(loose, 0o777)
    with numbax.config.override("cache_dir", str(loose)):
        with pytest.warns(CacheWarning, match="0o777"):
            root, key = cache.cache_root()
    assert root == loose and len(key) == 32
    assert stat.S_IMODE(os.stat(loose).st_mode) == 0o700


def test_runtime_function_caches_follow_the_compilers_sources(monkeypatch):
    """Numba keys a cached function by its own file, so a runtime kernel kept a callee from
    another file as it was when cached (gemm.py's gelu epilogue kept an edited fastmath tanh);
    the runtime's cached functions are keyed by the compiler's sources instead."""
    from numba.core import caching

    from numbax._src.compiler.cpu.runtime import fastmath as fm

    fm.exp_f32(np.float32(0.5))  # compiled, or loaded from Numba's cache, and saved there
    sig = fm.exp_f32.signatures[0]
    ctx = fm.exp_f32.targetctx
    stamped = caching.FunctionCache(fm.exp_f32.py_func)
    assert isinstance(stamped._impl.locator, cache._CompilerStamp)
    assert stamped.load_overload(sig, ctx) is not None
    monkeypatch.setattr(cache, "_dev_hash", ["the compiler's sources after an edit"])
    assert caching.FunctionCache(fm.exp_f32.py_func).load_overload(sig, ctx) is None

    def elsewhere(x):  # a cached function outside the runtime keeps Numba's own key
        return x + 1
    assert not isinstance(caching.FunctionCache(elsewhere)._impl.locator, cache._CompilerStamp)
