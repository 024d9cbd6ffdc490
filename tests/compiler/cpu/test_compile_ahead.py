"""Prange variants compiled in the helper process (runtime/compile_ahead.py): the serial twin
runs meanwhile, the variant then loads from the disk cache; whatever goes wrong with the helper,
the call compiles in line and gives the same values."""
import importlib
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax._src.compiler import cache
from numbax._src.compiler.cpu.runtime import compile_ahead
from numbax._src.compiler.cpu.runtime import threads as th


@pytest.fixture
def fresh_helper(monkeypatch, tmp_path):
    """A process state with no helper yet, quiet cores, a cache of the test's own."""
    monkeypatch.setattr(compile_ahead, "_state",
                        {"helper": None, "outbox": None, "started": 0, "next": 0})
    monkeypatch.setattr(compile_ahead, "_pending", {})
    monkeypatch.setattr(th, "free_cores", lambda: 2)
    monkeypatch.setattr(th, "pool_size", lambda: 2)
    monkeypatch.setattr(th, "busy", lambda: False)
    monkeypatch.delenv("NUMBAX_SIBLING_THREADS", raising=False)
    numbax.clear_caches()  # (modules another test loaded keep their compiled variants)
    with numbax.config.override("cache_dir", str(tmp_path)), \
            numbax.config.override("cpu_threads", 0), \
            numbax.config.override("cpu_compile_ahead", True):
        yield
    numbax.clear_caches()
    helper = compile_ahead._state["helper"]
    if helper is not None:
        helper.kill()
        helper.wait()


def _at_tier(f, x):
    """Runs f once, then marks its kernel's prange variant as past its tier, so the next call
    asks for it; returns that variant's dispatcher."""
    f(x)
    par = f.lower(x).compile()._entry.exe.driver.__globals__["k0_par"]
    assert not par.overloads and not cache.has_saved_code(par)
    par._numbax_serial_ns = th.PARALLEL_TIER_NS
    return par


def _program():
    return numbax.jit(lambda v: jnp.tanh(v) * 3.0 - 1.0), np.linspace(-2, 2, 1 << 17)


def test_the_helper_compiles_and_the_next_call_loads_it(fresh_helper):
    f, x = _program()
    par = _at_tier(f, x)
    sent = compile_ahead.requests_sent()
    np.testing.assert_allclose(f(x), np.tanh(x) * 3.0 - 1.0, rtol=1e-14, atol=1e-14)  # serial, asks
    assert compile_ahead.compiling() == 1 and not par.overloads
    assert compile_ahead.requests_sent() == sent + 1
    assert compile_ahead.wait(300)
    assert par._numbax_ahead.ok and cache.has_saved_code(par) and not par.overloads
    np.testing.assert_allclose(f(x), np.tanh(x) * 3.0 - 1.0, rtol=1e-14, atol=1e-14)
    assert par.overloads and not par._cache_misses  # loaded from disk, not compiled here



def test_settle_calls_until_the_helpers_variant_runs(fresh_helper):
    """A benchmark's warm-up (compile_ahead.settle) ends only after the helper answered and a
    whole round of calls sent it nothing: the calls after it run the loaded variant."""
    f, x = _program()
    par = _at_tier(f, x)
    calls = []
    compile_ahead.settle(lambda: calls.append(f(x)), 0.05)
    assert not compile_ahead.compiling() and par._numbax_ahead.ok
    assert par.overloads and not par._cache_misses  # the last round ran the loaded variant
    assert len(calls) >= 2
    np.testing.assert_allclose(calls[-1], np.tanh(x) * 3.0 - 1.0, rtol=1e-14, atol=1e-14)

def test_a_helper_killed_mid_request_leaves_the_compile_to_the_call(fresh_helper):
    f, x = _program()
    par = _at_tier(f, x)
    f(x)  # asks; the helper is still importing numbax
    compile_ahead._state["helper"].kill()
    assert compile_ahead.wait(60)
    assert par._numbax_ahead.done and not par._numbax_ahead.ok
    np.testing.assert_allclose(f(x), np.tanh(x) * 3.0 - 1.0, rtol=1e-14, atol=1e-14)
    assert par.overloads  # compiled in line


def test_no_helper_without_a_disk_cache_in_a_virtual_device_an_embedding_program_or_asked(
        fresh_helper, monkeypatch):
    for setting in ("no cache", "turned off", "worker", "embedded"):
        with numbax.config.override("compilation_cache", setting != "no cache"), \
                numbax.config.override("cpu_compile_ahead", setting != "turned off"):
            if setting == "worker":
                monkeypatch.setenv("NUMBAX_SIBLING_THREADS", "2")
            if setting == "embedded":  # (its executable is no Python to start a helper with)
                monkeypatch.delenv("NUMBAX_SIBLING_THREADS")
                monkeypatch.setattr(sys, "executable", "/usr/bin/uwsgi")
            f, x = _program()
            f(x)
            par = f.lower(x).compile()._entry.exe.driver.__globals__["k0_par"]
            par._numbax_serial_ns = th.PARALLEL_TIER_NS
            np.testing.assert_allclose(f(x), np.tanh(x) * 3.0 - 1.0, rtol=1e-14, atol=1e-14)
            assert par.overloads, setting  # compiled in line at once
            assert compile_ahead._state["helper"] is None
            numbax.clear_caches()


def test_a_helper_that_cannot_start_leaves_the_compile_to_the_call(fresh_helper, monkeypatch):
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    f, x = _program()
    par = _at_tier(f, x)
    np.testing.assert_allclose(f(x), np.tanh(x) * 3.0 - 1.0, rtol=1e-14, atol=1e-14)
    assert par.overloads and compile_ahead._state["helper"] is None


def test_requests_past_the_pipes_buffer_do_not_stop_the_caller(fresh_helper):
    """The helper reads a request only between compiles; the pipe holds 64 KiB. Large requests
    queue behind a thread instead, and one the helper cannot compile comes back not ok."""
    requests = [compile_ahead._Request() for _ in range(4)]
    start = time.perf_counter()
    for k, request in enumerate(requests):
        message = {"module": f"numbax_gen_missing{k}", "source": "x = 1\n" * 50_000,
                   "function": "kernel", "signature": (), "cache_dir": "/nonexistent"}
        assert compile_ahead._send(request, message)
    assert time.perf_counter() - start < 1.0  # ~1.2 MB sent to a helper still starting
    assert compile_ahead.wait(120)
    assert all(r.done and not r.ok for r in requests)


def test_a_helper_that_hangs_is_ended_and_its_requests_compile_in_line(fresh_helper,
                                                                      monkeypatch):
    f, x = _program()
    par = _at_tier(f, x)
    f(x)  # asks
    helper = compile_ahead._state["helper"]
    helper.send_signal(signal.SIGSTOP)  # hangs
    try:
        monkeypatch.setattr(compile_ahead, "STUCK_S", 0.0)
        assert compile_ahead.compiling() == 1  # (and it is ended)
        assert compile_ahead.wait(60) and par._numbax_ahead.done
        assert compile_ahead.compiling() == 0 and helper.wait(60) == -signal.SIGKILL
    finally:
        if helper.poll() is None:
            helper.kill()
    np.testing.assert_allclose(f(x), np.tanh(x) * 3.0 - 1.0, rtol=1e-14, atol=1e-14)
    assert par.overloads  # compiled in line


def test_the_helpers_core_is_left_free_but_is_not_a_busy_machine(monkeypatch):
    """While the helper compiles, one runnable thread beside this process's is the helper's:
    kernels leave it a core, yet the machine is not `busy` (that would send kernels to the
    native pool, whose first calls compile)."""
    monkeypatch.setattr(th, "CORES", 2)
    monkeypatch.setattr(th, "_others_running", lambda: 1.0)
    monkeypatch.setattr(compile_ahead, "compiling", lambda: 1)
    monkeypatch.setattr(th, "_state", dict(th._state, when=-1e9, others=0.0, helper=0))
    assert th.others_running() == 0.0 and not th.busy() and th.free_cores() == 1
    monkeypatch.setattr(compile_ahead, "compiling", lambda: 0)
    monkeypatch.setattr(th, "_state", dict(th._state, when=-1e9, others=0.0, helper=0))
    assert th.others_running() == 1.0 and th.busy() and th.free_cores() == 1


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("end", ["exit", "killed"])
def test_the_helper_ends_with_its_process(end, tmp_path):
    script = textwrap.dedent(f"""
        import os, signal, numpy as np
        import numbax, numbax.numpy as jnp
        from numbax._src.compiler.cpu.runtime import compile_ahead, threads as th
        th.free_cores = lambda: 2
        th.pool_size = lambda: 2
        th.busy = lambda: False
        numbax.config.update("cache_dir", {str(tmp_path)!r})
        numbax.config.update("cpu_threads", 0)
        f = numbax.jit(lambda v: jnp.tanh(v) * 3.0 - 1.0)
        x = np.linspace(-2, 2, 1 << 17)
        f(x)
        f.lower(x).compile()._entry.exe.driver.__globals__["k0_par"]._numbax_serial_ns = 1e12
        f(x)
        print(compile_ahead._state["helper"].pid, flush=True)
        if {end!r} == "killed":
            os.kill(os.getpid(), signal.SIGKILL)
    """)
    env = dict(os.environ, NUMBAX_CPU_THREADS="0", NUMBAX_CPU_COMPILE_AHEAD="1")
    env.pop("NUMBAX_SIBLING_THREADS", None)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, timeout=300)
    pid = int(out.stdout.split()[0])
    deadline = time.monotonic() + 60  # (it finishes the compile it has begun)
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        try:
            state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
        except OSError:
            break
        if state == "Z":  # ended; its parent is gone, so nothing reaps it yet
            break
        time.sleep(0.1)
    else:
        if os.path.exists(f"/proc/{pid}"):
            os.kill(pid, signal.SIGKILL)
            pytest.fail(f"the helper outlived its {end} parent by 60 s")


def test_a_runtime_function_compiles_in_the_helper_and_loads_here(fresh_helper, monkeypatch):
    """numbax's own threaded runtime functions go to the helper too (a fresh install's first
    threaded product): the helper imports the runtime module, compiles the signature into
    Numba's cache beside it, and this process loads it."""
    from numba import njit

    from numbax._src.compiler.cpu.runtime import kernel_tasks

    fresh = njit(cache=True)(kernel_tasks.span.py_func)  # nothing compiled in this process
    args = (np.int64(100), np.int64(3), np.int64(1), np.int64(8))
    real = cache.has_saved_signature
    monkeypatch.setattr(cache, "has_saved_signature",  # (as on a fresh install)
                        lambda f, s: False if f is fresh else real(f, s))
    assert not compile_ahead.runtime_ready(fresh, lambda: args)  # sent
    assert compile_ahead.wait(300) and fresh._numbax_ahead.ok
    assert compile_ahead.runtime_ready(fresh, lambda: args)
    assert fresh(*args) == (100 // 3 // 8 * 8, 200 // 3 // 8 * 8)
    assert fresh.overloads and not fresh._cache_misses  # loaded, not compiled here


class _NotCompiled:
    """A runtime function the helper has not compiled yet."""

    overloads: dict = {}

    def __call__(self, *args):
        raise AssertionError("a runtime function ran before the helper had compiled it")


def test_products_run_on_one_thread_while_the_threaded_gemm_compiles(monkeypatch):
    from numbax._src.compiler.cpu.runtime import gemm, gemm_pairs, library

    for module, name in ((gemm, "_gemm_threads"), (gemm_pairs, "_gemm_pair"),
                         (gemm_pairs, "_gemm_batches")):
        monkeypatch.setattr(module, name, _NotCompiled())
    asked = []
    monkeypatch.setattr(compile_ahead, "runtime_ready", lambda function, arguments, *holder: (
        asked.append(len(arguments())), False)[1])
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((300, 200)), rng.standard_normal((200, 260))
    x2, y2 = rng.standard_normal((260, 90)), rng.standard_normal((90, 70))
    bias = rng.standard_normal(70)
    np.testing.assert_allclose(gemm.matmul(x, y, 2), x @ y, rtol=1e-12, atol=1e-12)
    first, second = gemm_pairs.matmul_pair(x, y, x2, y2, 2, (), (bias, "relu"))
    np.testing.assert_allclose(first, x @ y, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(second, np.maximum(x2 @ y2 + bias, 0), rtol=1e-12, atol=1e-12)
    xb, yb = rng.standard_normal((6, 40, 30)), rng.standard_normal((6, 30, 20))
    out = np.zeros((6, 40, 20))
    assert not gemm_pairs.matmul_batched(xb, yb, 2, out) and not out.any()
    with numbax.config.override("cpu_threads", 2), \
            numbax.config.override("cpu_matmul", "numbax"):
        (got,) = library.dot_general(xb, yb, (((2,), (1,)), ((0,), (0,))),
                                     np.dtype(np.float64))
    np.testing.assert_allclose(got, xb @ yb, rtol=1e-12, atol=1e-12)
    # each asked with its full argument list: the GEMM's parts, a pair, a batch
    assert {17, 28, 15} <= set(asked)


def test_a_runtime_module_is_imported_in_the_helper_and_its_tasks_load_here(
        fresh_helper, monkeypatch, tmp_path):
    """A runtime module whose import compiles C tasks (the busy machine's pool GEMM): the
    helper imports it, its cfuncs go to Numba's cache beside it, and the import here loads
    them instead of compiling."""
    name = f"nbx_tasks_probe_{os.getpid()}"
    (tmp_path / f"{name}.py").write_text(
        "from numba import cfunc, types\n\n\n"
        "@cfunc(types.float64(types.float64), cache=True)\n"
        "def twice(x):\n"
        "    return 2.0 * x\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.syspath_prepend(str(tmp_path))
    assert not compile_ahead.module_ready(name)  # sent; nothing imported here
    assert name not in sys.modules
    assert compile_ahead.wait(300) and compile_ahead.module_ready(name)
    module = importlib.import_module(name)
    assert module.twice.cache_hits == 1  # loaded from the helper's compile
    assert module.twice.ctypes(1.25) == 2.5
    monkeypatch.delitem(sys.modules, name)


def test_a_busy_product_runs_on_one_thread_while_its_pool_tasks_compile(monkeypatch):
    from numbax._src.compiler.cpu.runtime import library

    def not_ready(name):
        asked.append(name)
        return False

    asked = []
    monkeypatch.setattr(compile_ahead, "module_ready", not_ready)
    monkeypatch.setattr(th, "busy", lambda: True)
    monkeypatch.setattr(library, "_pooled", _NotCompiled())
    ran = []
    real = library._on_numbas_pool
    monkeypatch.setattr(library, "_on_numbas_pool", lambda a, b, threads, *rest: (
        ran.append(threads), real(a, b, threads, *rest))[1])
    rng = np.random.default_rng(4)
    x, y = rng.standard_normal((600, 500)), rng.standard_normal((500, 400))
    site = library.busy_site((x.shape, y.shape, x.dtype.char), 600 * 500 * 400)
    site.runs[:] = [2, 0]  # past its serial tries: the next call tries the parallel arm
    site.mean[0] = 1.0
    with numbax.config.override("cpu_matmul", "numbax"), \
            numbax.config.override("cpu_native_pool", True):
        got = library.dot(x, y, 600 * 500 * 400)
    np.testing.assert_allclose(got, x @ y, rtol=1e-12, atol=1e-12)
    assert asked and asked[0].endswith(("gemm_tasks", "blas_tasks")) and ran == [1]


def test_products_run_on_blas_while_the_gemms_serial_code_compiles(monkeypatch):
    """A fresh install's first products: the GEMM's one-thread code goes to the helper and
    BLAS computes them meanwhile, with their epilogues, singly, in pairs and in batches."""
    from numbax._src.compiler.cpu.runtime import gemm, gemm_epilogues, library

    monkeypatch.setattr(gemm, "_gemm_part", _NotCompiled())
    monkeypatch.setattr(gemm_epilogues, "finish_rows", _NotCompiled())
    monkeypatch.setattr(th, "threads_for", lambda ns: 2)
    asked = []
    monkeypatch.setattr(compile_ahead, "runtime_ready", lambda function, arguments, *holder: (
        asked.append(arguments()), False)[1])
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal((300, 200)), rng.standard_normal((200, 260))
    bias = rng.standard_normal(260)
    with numbax.config.override("cpu_matmul", "numbax"), \
            numbax.config.override("cpu_threads", 2):
        plain = library.dot(x, y, 300 * 200 * 260)
        layer = library.dot(x, y, 300 * 200 * 260, bias, "tanh")
        first, second = library.dot_pair((x, y, 300 * 200 * 260), (y.T, x.T, 300 * 200 * 260))
        xb, yb = rng.standard_normal((6, 40, 300)), rng.standard_normal((6, 300, 20))
        (batched,) = library.dot_general(xb, yb, (((2,), (1,)), ((0,), (0,))),
                                         np.dtype(np.float64))
        x32, y32 = x.astype(np.float32), y.astype(np.float32)
        single = library.dot(x32, y32, 300 * 200 * 260)  # (a second dtype: asked for too)
    np.testing.assert_allclose(plain, x @ y, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(layer, np.tanh(x @ y + bias), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(first, x @ y, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(second, y.T @ x.T, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(batched, xb @ yb, rtol=1e-12, atol=1e-12)
    # float32 products: against the float64 product of the same inputs (numbax's GEMM sums in
    # float64, OpenBLAS in float32: 200 terms leave the latter ~1e-5 off)
    np.testing.assert_allclose(single, x32.astype(np.float64) @ y32.astype(np.float64),
                               rtol=1e-5, atol=1e-4)
    # the serial GEMM asked for with each dtype's arguments, the epilogue's threaded form too
    assert {a[0].dtype.char for a in asked if len(a) == 18} == {"d", "f"}
    assert any(len(a) == 7 for a in asked)


def test_the_serial_gemm_is_asked_for_with_the_types_matmul_calls_it_with():
    from numbax._src.compiler.cpu.runtime import gemm

    rng = np.random.default_rng(6)
    for dtype in (np.float32, np.float64):
        x = rng.standard_normal((70, 50)).astype(dtype)
        y = np.asfortranarray(rng.standard_normal((50, 40)).astype(dtype))
        exact = x.astype(np.float64) @ y.astype(np.float64)  # (float32's: see above)
        np.testing.assert_allclose(gemm.matmul(x, y), exact, rtol=1e-5, atol=1e-4)
        asked = compile_ahead._signature(
            gemm._gemm_part, lambda dt=dtype: gemm._part_arguments(np.dtype(dt)))
        assert asked in gemm._gemm_part.signatures


def test_convolutions_and_pooling_run_on_one_thread_while_their_threaded_kernels_compile(
        monkeypatch):
    """A library kernel's threaded form (the convolution's tiles and window lines, pooling's
    reductions and max pooling's selection) is asked of the helper with the arguments it
    would run with; the one-thread form runs meanwhile and gives the same values."""
    from numbax._src.compiler.cpu.runtime import conv, conv_kernels, windows

    for module, name in ((conv_kernels, "tiles_threads"), (conv_kernels, "lines_threads"),
                         (windows, "_reduce_threads"), (windows, "_selected_threads")):
        monkeypatch.setattr(module, name, _NotCompiled())
    asked = []
    monkeypatch.setattr(compile_ahead, "runtime_ready", lambda function, arguments, *holder: (
        asked.append(len(arguments())), False)[1])
    rng = np.random.default_rng(4)
    x, w = rng.standard_normal((8, 12, 20, 20)), rng.standard_normal((6, 12, 3, 3))
    g = rng.standard_normal((8, 6, 18, 18))  # a cotangent of the unpadded convolution
    nchw = ((0, 1, 2, 3), (0, 1, 2, 3), (0, 1, 2, 3))
    swapped = ((1, 0, 2, 3), (1, 0, 2, 3), (1, 0, 2, 3))  # its kernel gradient: window lines
    with numbax.config.override("cpu_threads", 2):
        (out,) = conv.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1)), (1, 1), (1, 1),
                                           nchw, 1, 1, None)
        (kgrad,) = conv.conv_general_dilated(x, g, (1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1),
                                             swapped, 1, 1, None)
        (pooled,) = windows.reduce_window(x, windows.MAX, (1, 1, 2, 2), (1, 1, 2, 2),
                                          ((0, 0),) * 4, (1,) * 4)
        (routed,) = windows.select_and_scatter_add(np.ones_like(pooled), x, True, False,
                                                   (1, 1, 2, 2), (1, 1, 2, 2), ((0, 0),) * 4)
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    want = sum(np.einsum("nchw,oc->nohw", padded[:, :, i:i + 20, j:j + 20], w[:, :, i, j])
               for i in range(3) for j in range(3))
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)
    want = np.empty((6, 12, 3, 3))
    for i in range(3):
        for j in range(3):
            want[:, :, i, j] = np.einsum("nchw,nohw->oc", x[:, :, i:i + 18, j:j + 18], g)
    np.testing.assert_allclose(kgrad, want, rtol=1e-12, atol=1e-12)
    blocks = x.reshape(8, 12, 10, 2, 10, 2)
    np.testing.assert_array_equal(pooled, blocks.max(axis=(3, 5)))
    firsts = blocks.transpose(0, 1, 2, 4, 3, 5).reshape(8, 12, 10, 10, 4).argmax(-1)
    np.testing.assert_array_equal(routed.reshape(8, 12, 10, 2, 10, 2).transpose(
        0, 1, 2, 4, 3, 5).reshape(8, 12, 10, 10, 4).argmax(-1), firsts)
    assert routed.sum() == pooled.size
    # each asked once, with its full argument list: tiles, lines, reduce, select
    assert sorted(asked) == [7, 11, 14, 18]
