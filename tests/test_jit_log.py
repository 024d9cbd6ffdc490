"""jit's compile log (jax_log_compiles), cache-miss explanations (jax_explain_cache_misses),
numbax.clear_caches and the bounded executable cache."""
import logging
import os
from functools import partial

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax._src.config import config


@pytest.fixture
def log_compiles():
    with config.override("jax_log_compiles", True):
        yield


@pytest.fixture
def explain():
    with config.override("jax_explain_cache_misses", True):
        yield


def _messages(caplog, logger: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == logger]


def _counting(fn):
    """fn wrapped so that each trace of it is counted in .traces."""
    def wrapped(*args, **kwargs):
        wrapped.traces += 1
        return fn(*args, **kwargs)

    wrapped.traces = 0
    wrapped.__name__ = fn.__name__
    return wrapped


def test_log_compiles_reports_each_stage_with_its_cause(caplog, log_compiles):
    def affine(x, y):
        return x * 3.0 + y

    f = numbax.jit(affine)
    caplog.set_level(logging.WARNING, logger="numbax")
    np.testing.assert_array_equal(f(np.ones(3), 1.0), np.full(3, 4.0))
    f(np.ones(3), 1.0)  # cached: logs nothing
    f(np.ones(5), 1.0)
    f(np.ones(5, np.float32), 1.0)
    compiling = _messages(caplog, "numbax._src.interpreters.pxla")
    assert compiling == [
        "Compiling jit(affine) with global shapes and types (f64[3], f64[]). Cause: new function.",
        "Compiling jit(affine) with global shapes and types (f64[5], f64[]). Cause: new shape.",
        "Compiling jit(affine) with global shapes and types (f32[5], f64[]). Cause: "
        "new structure."]
    stages = _messages(caplog, "numbax._src.dispatch")
    assert len(stages) == 9  # traced, converted to source, Numba compiled: per compile
    assert stages[0].startswith("Finished tracing affine for jit in ")
    assert stages[1].startswith("Finished jaxpr to Numba source conversion jit(affine) in ")
    assert stages[2].startswith("Finished Numba compilation of jit(affine) in ")
    assert stages[5].endswith(": 0 kernels compiled, 0 loaded from the disk cache")  # new shape
    assert all(r.levelno == logging.WARNING for r in caplog.records)


def test_compile_log_is_debug_level_when_the_option_is_off(caplog):
    f = numbax.jit(lambda x: x - 1.0)
    caplog.set_level(logging.WARNING, logger="numbax")
    f(np.ones(2))
    assert not caplog.records
    caplog.set_level(logging.DEBUG, logger="numbax")
    f(np.ones(4))
    assert [r.levelno for r in caplog.records] == [logging.DEBUG] * 4


def test_explain_cache_misses_names_what_differs(caplog, explain):
    @partial(numbax.jit, static_argnums=(2,))
    def scaled(x, params, n):
        return x * params[0] * n

    caplog.set_level(logging.WARNING, logger="numbax")
    scaled(np.ones(3), (2.0,), 2)
    scaled(np.ones(4), (2.0,), 2)
    scaled(np.ones(3), (np.float32(2.0),), 2)
    scaled(np.ones(3), (2.0,), 5)
    scaled(np.ones(3), [2.0], 2)
    with numbax.config.override("jax_enable_x64", False):
        scaled(np.ones(3), (2.0,), 2)
    got = _messages(caplog, "numbax._src.interpreters.partial_eval")
    assert len(got) == 6
    here = os.path.basename(__file__)
    assert got[0].startswith("TRACING CACHE MISS at ") and here in got[0].splitlines()[0]
    assert "never seen function:\n    scaled id=" in got[0]
    assert got[1].endswith("different input types:\n  * at x, now f64[4] and before f64[3]")
    assert got[2].endswith("  * at params[0], now f32[] and before f64[]{weak_type=True}")
    assert got[3].endswith("different static arguments:\n  * at n, now 5 and before 2")
    assert "different input pytree:\n  * now PyTreeDef(((*, [*]), {})) and before " \
           "PyTreeDef(((*, (*,)), {}))" in got[4]
    assert got[5].endswith("different configuration:\n  * jax_enable_x64, now False and "
                           "before True")


def test_explain_cache_misses_is_silent_when_off(caplog):
    f = numbax.jit(lambda x: x * 2.0)
    caplog.set_level(logging.DEBUG, logger="numbax._src.interpreters.partial_eval")
    f(np.ones(2))
    f(np.ones(3))
    assert not caplog.records


def test_clear_caches_retraces_but_keeps_the_disk_cache(tmp_path):
    fn = _counting(lambda x: jnp.tanh(x) * 0.5)
    f = numbax.jit(fn)
    numbax.clear_caches()  # another test in this process may have loaded the same kernel
    with config.override("cache_dir", str(tmp_path)):
        x = np.linspace(-2.0, 2.0, 7)
        f(x)
        f(x)
        files = sorted(p.name for p in tmp_path.rglob("*") if p.is_file())
        assert fn.traces == 1 and any(n.startswith("numbax_gen_") for n in files)
        numbax.clear_caches()
        np.testing.assert_allclose(np.asarray(f(x)), np.tanh(x) * 0.5, rtol=1e-15)
        assert fn.traces == 2
        after = {p.name for p in tmp_path.rglob("*") if p.is_file()}
        assert set(files) <= after  # nothing removed from disk


def test_clear_caches_reaches_tables_shared_by_dropped_wrappers():
    """jit wrappers of one function share their compiled programs; clear_caches empties them
    even after the wrapper that filled them is gone."""
    fn = _counting(lambda x: x * 2.0)
    x = np.arange(3.0)
    numbax.jit(fn)(x)
    numbax.jit(fn)(x)
    assert fn.traces == 1
    numbax.clear_caches()
    np.testing.assert_array_equal(np.asarray(numbax.jit(fn)(x)), x * 2.0)
    assert fn.traces == 2


def test_executables_are_bounded_least_recently_used():
    """executable_cache_size bounds each of jit's tables (signatures, plain-Array fast paths);
    the most recently used signatures stay compiled."""
    fn = _counting(lambda x: x + 1.0)
    f = numbax.jit(fn)
    old = config.executable_cache_size
    config.update("executable_cache_size", 2)  # update, not override: keeps jit's fast path
    try:
        for n in (1, 2, 1, 3):
            x = numbax.numpy.zeros(n)
            np.testing.assert_array_equal(np.asarray(f(x)), np.ones(n))
        assert fn.traces == 3
        f(numbax.numpy.zeros(1))
        f(numbax.numpy.zeros(3))  # the two used last: still compiled
        assert fn.traces == 3
        for n in range(4, 12):
            f(numbax.numpy.zeros(n))
        assert fn.traces == 11
        assert len(f._cache) == 2 and len(f._fast) == 2
        f(numbax.numpy.zeros(1))  # dropped long ago: traced again
        assert fn.traces == 12
    finally:
        config.update("executable_cache_size", old)


def test_garbage_collection_is_paused_only_while_a_signature_compiles():
    """jit turns the cyclic GC off while it traces and Numba compiles (full collections over
    everything imported cost ~10 % of a first call), and always back on, after an error too;
    a GC the caller turned off stays off."""
    import gc

    seen = []

    def traced(x):
        seen.append(gc.isenabled())
        return x * 2.0

    f = numbax.jit(traced)
    assert gc.isenabled()
    np.testing.assert_array_equal(np.asarray(f(np.arange(3.0))), np.arange(3.0) * 2.0)
    assert seen == [False] and gc.isenabled()

    def broken(x):
        raise ValueError("while tracing")

    with pytest.raises(ValueError, match="while tracing"):
        numbax.jit(broken)(np.arange(3.0))
    assert gc.isenabled()
    gc.disable()
    try:
        numbax.jit(lambda x: x + 1.0)(np.arange(4.0))
        assert not gc.isenabled()
    finally:
        gc.enable()
