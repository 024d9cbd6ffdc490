"""Compiled loop bodies on threads (cpu/control_flow.py): elementwise nests and axis sums large
enough run as pranges, float matrix products as pranges over blocks of C on the same threads
(numbax's GEMM, gemm_loops.loop_block, where it takes the top level's products; else one
cblas call a block, blas_parts.loop_block), and the driver gives the loop its thread count.
Checked against numpy in float64 and across thread counts (the nests add in the same order on
any count), each product kernel the host has (the `kind` fixture)."""
import json
import os
import re
import runpy
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax._src.compiler.cpu import loop_products
from numbax._src.compiler.cpu.runtime import blas_parts, gemm_loops

POOL = numba.config.NUMBA_NUM_THREADS
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))))


def _nbody(pos, vel, steps):
    def step(i, state):  # gravity, softened: pairwise differences, their norms, two axis sums
        p, v = state
        d = p[:, None, :] - p[None, :, :]
        inv = (jnp.sum(d ** 2, axis=2) + 0.05) ** -1.5
        v = v - 0.002 * jnp.sum(d * inv[..., None], axis=1)
        return p + 0.002 * v, v
    return lax.fori_loop(0, steps, step, (pos, vel))


def _nbody_numpy(pos, vel, steps):
    p, v = pos.astype(np.float64), vel.astype(np.float64)
    for _ in range(steps):
        d = p[:, None, :] - p[None, :, :]
        v = v - 0.002 * np.sum(d * ((np.sum(d ** 2, axis=2) + 0.05) ** -1.5)[..., None], axis=1)
        p = p + 0.002 * v
    return p, v


def _driver(f, *args) -> str:
    return f.lower(*args).as_text().split("def driver")[1]


# A loop body's products on each kernel: config.cpu_matmul's setting that picks it here.
_KIND_SETTING = {"gemm": "numbax", "blas": "blas"}
# The serial block call each kind renders, and its arguments in the driver.
_ONE_BLOCK = "np.int64(0), np.int64(1), np.int64(1),"  # (values: one compile serves all)
_SERIAL_BLOCK = {"gemm": f"gl.loop_block(loop_gemm, {_ONE_BLOCK}",
                 "blas": f"bp.loop_block(loop_blas, loop_width, {_ONE_BLOCK}"}
_DRIVER_ARGS = {"gemm": "_loop_gemm, gl.loop_work(", "blas": "*_loop_blas, "}


@pytest.fixture(params=sorted(_KIND_SETTING))
def kind(request):
    """Loop bodies' products on numbax's GEMM ("gemm") or OpenBLAS's blocks ("blas"), for
    the functions a test jits (its own: executables keep the kernel they were built with)."""
    with numbax.config.override("cpu_matmul", _KIND_SETTING[request.param]):
        if loop_products.kind() != request.param:
            pytest.skip(f"loop products on {request.param!r} are not available on this host")
        yield request.param


def test_large_nests_in_a_loop_body_run_as_pranges_on_the_threads_the_driver_gives():
    rng = np.random.default_rng(0)
    pos = (rng.standard_normal((256, 3)) * 20).astype(np.float32)
    vel = rng.standard_normal((256, 3)).astype(np.float32)
    f = numbax.jit(_nbody, static_argnums=2)
    text = f.lower(pos, vel, 5).as_text()
    assert "prange(256)" in text.split("def driver")[0]
    assert "th.threads_for(" in _driver(f, pos, vel, 5)
    results = []
    for threads in sorted({1, 2, POOL}):
        with numbax.config.override("cpu_threads", threads):
            results.append([np.asarray(a) for a in f(pos, vel, 5)])
    for other in results[1:]:  # each output element adds in one order on any thread count
        for a, b in zip(results[0], other, strict=True):
            np.testing.assert_array_equal(a, b)
    for got, want in zip(results[0], _nbody_numpy(pos, vel, 5), strict=True):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-5)


def test_small_loops_stay_serial_without_the_threads_bookkeeping(kind):
    # (a product of at most SMALL_DOT_MACS would be written as sums of products instead)
    x = np.linspace(0.0, 1.0, 60).reshape(3, 20)
    w = np.linspace(-1.0, 1.0, 400).reshape(20, 20) / 10.0
    f = numbax.jit(lambda x, w: lax.fori_loop(0, 3, lambda i, h: jnp.tanh(h @ w), x))
    text = f.lower(x, w).as_text()
    assert " in prange(" not in text and _SERIAL_BLOCK[kind] in text
    driver = _driver(f, x, w)
    assert "threads_for" not in driver and _DRIVER_ARGS[kind] in driver
    assert re.search(r"k\d+_flow\([^\n]*, 1\)", driver)  # one thread
    want = x
    for _ in range(3):
        want = np.tanh(want @ w)
    np.testing.assert_allclose(np.asarray(f(x, w)), want, rtol=1e-13)


def _rnn_loss(w, xs):
    def cell(h, x):
        h = jnp.tanh(x @ w["x"] + h @ w["h"] + w["b"])
        return h, h
    h, hs = lax.scan(cell, jnp.zeros((xs.shape[1], w["h"].shape[0]), xs.dtype), xs)
    return jnp.sum(h ** 2) + 0.1 * jnp.sum(hs)


def _rnn_loss_numpy(w, xs):
    h = np.zeros((xs.shape[1], w["h"].shape[0]))
    total = 0.0
    for x in xs:
        h = np.tanh(x @ w["x"] + h @ w["h"] + w["b"])
        total += 0.1 * h.sum()
    return total + np.sum(h ** 2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_products_in_scan_bodies_and_their_gradients_match_numpy(dtype, kind, tmp_path):
    rng = np.random.default_rng(1)
    w = {"x": rng.standard_normal((32, 256)) * 0.1, "h": rng.standard_normal((256, 256)) * 0.06,
         "b": rng.standard_normal(256) * 0.1}
    xs = rng.standard_normal((6, 64, 32))
    w_t = {k: v.astype(dtype) for k, v in w.items()}
    f = numbax.jit(numbax.value_and_grad(_rnn_loss))
    results = []
    # (compiled here, not loaded: a kernel loaded from disk types none of its calls)
    with numbax.config.override("cache_dir", str(tmp_path)):
        text = f.lower(w_t, xs.astype(dtype)).as_text()
        for threads in sorted({1, 2, POOL}):
            with numbax.config.override("cpu_threads", threads):
                results.append(f(w_t, xs.astype(dtype)))
    # fwd and bwd: h @ w["h"] and its two transposed products, each a prange over C's blocks
    grid = {"gemm": "= gl.loop_grid(loop_threads, ",
            "blas": "= bp.loop_grid(loop_threads, np.int64(64), np.int64(256))"}
    assert text.count(grid[kind]) >= 2
    # the serial variant's blocks (a range) and the parallel one's (a prange) share one compile
    # of the runtime's block per layout: the block index is an int64 value in both
    runtime = gemm_loops if kind == "gemm" else blas_parts
    q_at = 1 if kind == "gemm" else 2
    assert {str(s[q_at]) for s in runtime.loop_block.signatures} == {"int64"}
    assert not [s for s in runtime.loop_grid.signatures if "Literal" in str(s)]
    tol = 2e-4 if dtype == np.float32 else 1e-10
    for value, grads in results:  # every thread count: numpy's value, the same gradient
        np.testing.assert_allclose(float(value), _rnn_loss_numpy(w, xs), rtol=tol)
        for name in w:
            np.testing.assert_allclose(np.asarray(grads[name]), np.asarray(results[0][1][name]),
                                       rtol=tol, atol=tol)
    # the gradient against central differences of the float64 numpy loss, a few entries each
    value, grads = results[0]
    for name, at in (("h", (3, 7)), ("x", (5, 200)), ("b", (11,))):
        step = 1e-6
        up, down = {k: v.copy() for k, v in w.items()}, {k: v.copy() for k, v in w.items()}
        up[name][at] += step
        down[name][at] -= step
        fd = (_rnn_loss_numpy(up, xs) - _rnn_loss_numpy(down, xs)) / (2 * step)
        np.testing.assert_allclose(float(np.asarray(grads[name])[at]), fd,
                                   rtol=10 * tol + 1e-6, atol=1e-6)


def test_products_inside_a_map_over_examples_run_on_one_thread_each(kind):
    # lax.map's loop is itself the prange: its body's products take one thread
    rng = np.random.default_rng(2)
    xs = rng.standard_normal((64, 48, 40))
    w = rng.standard_normal((40, 36))
    f = numbax.jit(lambda xs, w: lax.map(lambda x: jnp.tanh(x @ w) @ w.T, xs))
    text = f.lower(xs, w).as_text()
    assert "prange(64)" in text and "loop_grid" not in text
    assert _SERIAL_BLOCK[kind] in text
    if kind == "gemm":  # each example's product on its thread's own scratch
        assert "loop_work[numba.get_thread_id()]" in text
    assert re.search(r"bl\.blas_call\(k\d+_flow( if n > 1 else k\d+_flow_serial)?, 1, ",
                     _driver(f, xs, w))
    want = np.stack([np.tanh(x @ w) @ w.T for x in xs])
    np.testing.assert_allclose(np.asarray(f(xs, w)), want, rtol=1e-12, atol=1e-12)


def test_loops_with_threaded_products_called_from_several_python_threads_agree(kind):
    # each call sets its own thread's Numba count and holds OpenBLAS to one thread while its
    # loop runs; calls that overlap must still give the serial result
    import threading

    rng = np.random.default_rng(3)
    w = {"x": rng.standard_normal((32, 256)) * 0.1, "h": rng.standard_normal((256, 256)) * 0.06,
         "b": rng.standard_normal(256) * 0.1}
    xs = [rng.standard_normal((6, 64, 32)) for _ in range(4)]
    f = numbax.jit(_rnn_loss)
    want = [_rnn_loss_numpy(w, x) for x in xs]
    f(w, xs[0])  # compiled before the threads start
    got: dict[int, list[float]] = {}

    def worker(k: int) -> None:
        got[k] = [float(f(w, xs[k])) for _ in range(5)]

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(4):
        np.testing.assert_allclose(got[k], [want[k]] * 5, rtol=1e-10)


@pytest.mark.parametrize("body", ["nests", "products"])
def test_a_loop_runs_its_serial_twin_until_its_pranges_pay(body, monkeypatch, tmp_path):
    """Each prange of a compiled loop costs Numba a function of its own to compile (seconds
    for a body of ten): the first calls run the loop's one-thread variant, which gives the same
    bits each call, until the loop has run its tier of estimated serial work; then the prange
    variant compiles in the helper process while the serial twin goes on, and the next call
    loads it from the disk cache and gives the same values."""
    from numbax._src.compiler import cache
    from numbax._src.compiler.cpu.runtime import compile_ahead
    from numbax._src.compiler.cpu.runtime import threads as th

    monkeypatch.setattr(th, "free_cores", lambda: 2)
    monkeypatch.setattr(th, "pool_size", lambda: 2)
    monkeypatch.setattr(th, "busy", lambda: False)  # (a busy site would stay serial)
    rng = np.random.default_rng(5)
    if body == "nests":
        pos = rng.standard_normal((256, 3)) * 20
        vel = rng.standard_normal((256, 3))
        f, args, want = numbax.jit(_nbody, static_argnums=2), (pos, vel, 5), \
            _nbody_numpy(pos, vel, 5)
    else:
        w = {"x": rng.standard_normal((32, 256)) * 0.1,
             "h": rng.standard_normal((256, 256)) * 0.06, "b": rng.standard_normal(256) * 0.1}
        xs = rng.standard_normal((6, 64, 32))
        f, args, want = numbax.jit(_rnn_loss), (w, xs), [_rnn_loss_numpy(w, xs)]
    with numbax.config.override("cache_dir", str(tmp_path)), \
            numbax.config.override("cpu_threads", 0), \
            numbax.config.override("cpu_compile_ahead", True):
        # kernel modules an earlier test loaded are shared by source: one whose run reached
        # the tier had compiled its prange variant already
        numbax.clear_caches()
        first = [np.asarray(a) for a in numbax.tree_util.tree_leaves(f(*args))]
        driver = f.lower(*args).compile()._entry.exe.driver
        name = re.search(r"th\.parallel_ready\((k\d+_flow), lambda: \(.*\), (\d+), (\d+)\)",
                         _driver(f, *args))
        work, tier = int(name[2]), int(name[3])
        par = driver.__globals__[name[1]]
        serial = driver.__globals__[name[1] + "_serial"]
        assert serial.overloads and not par.overloads and not cache.has_saved_code(par)
        calls = 1
        while getattr(par, "_numbax_ahead", None) is None:
            assert calls * work < 4 * tier  # (a quiet site's serial choices are not counted)
            got = numbax.tree_util.tree_leaves(f(*args))
            calls += 1
            for a, b in zip(got, first, strict=True):
                np.testing.assert_array_equal(a, b)
        assert tier <= par._numbax_serial_ns < tier + work  # sent at the tier, not before
        assert compile_ahead.wait(600)
        assert par._numbax_ahead.ok and not par.overloads  # compiled there, not here
        assert cache.has_saved_code(par)
        # the prange variant: a nest's elements add in one order on any thread count; a
        # product's blocks may split its rows where one block did not
        same = np.testing.assert_array_equal if body == "nests" else \
            lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-13)
        for a, b in zip(numbax.tree_util.tree_leaves(f(*args)), first, strict=True):
            same(a, b)
        assert par.overloads and not par._cache_misses  # loaded from the disk cache
    for a, b in zip(first, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


_TWO_LOOPS = textwrap.dedent("""
    import json, numpy as np, numbax, numbax.numpy as jnp
    from numbax import lax
    from numbax._src.compiler import cache
    rng = np.random.default_rng(4)
    f = numbax.jit(lambda x, w: lax.fori_loop(0, 3, lambda i, h: jnp.tanh(h @ w), x))
    for m, k in ((3, 4), (256, 512)):  # one block, then a prange over blocks
        x, w = rng.standard_normal((m, k)) * 0.1, rng.standard_normal((k, k)) * 0.1
        want = x
        for _ in range(3):
            want = np.tanh(want @ w)
        np.testing.assert_allclose(np.asarray(f(x, w)), want, rtol=1e-12, atol=1e-14)
    print(json.dumps(cache.STATS))
""")


def test_loop_kernels_compiled_against_cached_runtime_load_in_the_next_process(tmp_path, kind):
    # a kernel compiled where the runtime's functions come from Numba's disk cache, then loaded
    # from numbax's cache by the next process (a cached function that called a parallel one
    # from compiled code had been saved without pieces its callers need: the load crashed)
    program = tmp_path / "two_loops.py"
    program.write_text(_TWO_LOOPS)
    runpy.run_path(str(program))  # the runtime's functions on Numba's disk cache, at least now
    # (two threads: the prange variant runs at once, not after the serial twin's tier)
    env = dict(os.environ, NUMBAX_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=ROOT,
               NUMBAX_CPU_MATMUL=_KIND_SETTING[kind], NUMBAX_CPU_THREADS="2")
    stats = []
    for _ in range(2):
        run = subprocess.run([sys.executable, str(program)], env=env, capture_output=True,
                             text=True, timeout=600)
        assert run.returncode == 0, run.stderr[-3000:]
        stats.append(json.loads(run.stdout.strip().splitlines()[-1]))
    assert stats[0]["written"] >= 2
    assert stats[1]["written"] == 0 and stats[1]["from_disk"] >= 2


def test_no_compiled_runtime_function_calls_a_parallel_one():
    # the rule behind the test above: a cached function that calls a `parallel=True` one from
    # compiled code is saved without pieces its callers need when that parallel function came
    # from Numba's disk cache. Parallel runtime functions are called from Python only (and
    # loop kernels write their own pranges).
    import importlib
    import inspect
    import pkgutil

    from numba.core.registry import CPUDispatcher

    from numbax._src.compiler.cpu import runtime

    compiled, parallel = {}, set()
    for info in pkgutil.iter_modules(runtime.__path__):
        module = importlib.import_module(f"{runtime.__name__}.{info.name}")
        for name, obj in vars(module).items():
            if isinstance(obj, CPUDispatcher) and obj.py_func.__module__ == module.__name__:
                compiled[f"{info.name}.{name}"] = inspect.getsource(obj.py_func)
                if obj.targetoptions.get("parallel"):
                    parallel.add(name)
    assert "_grid" in parallel and "loop_block" not in parallel  # (the scan found them)
    calls = [(where, name) for where, source in compiled.items() for name in parallel
             if re.search(rf"(?<!def )(?<![\w.]){name}\(|\.{name}\(", source)]
    assert not calls, f"compiled runtime functions calling parallel ones: {calls}"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_body_products_of_every_operand_layout_match_numpy(dtype, kind):
    # x @ w (both in order), a stacked operand contracted on its first axis (its matrix's
    # transpose, read in place), one contracted on a middle axis (a general transpose,
    # copied), y transposed; ragged shapes (neither side a whole register tile), small and
    # prange-sized, on each thread count
    rng = np.random.default_rng(5)
    x = rng.standard_normal((130, 300)).astype(dtype)
    w = (rng.standard_normal((300, 300)) * 0.05).astype(dtype)
    s = rng.standard_normal((130, 5, 26)).astype(dtype)   # contracted on axis 0
    t = rng.standard_normal((5, 130, 26)).astype(dtype)   # contracted on axis 1
    v = rng.standard_normal((105, 300)).astype(dtype)     # used as v.T

    def body(i, h):
        a = jnp.tanh(h @ w)
        b = jnp.einsum("kij,kl->ijl", s, a[:, :45] * 0.1).reshape(130, 45)
        c = jnp.einsum("ikj,kl->ijl", t, a[:, 45:90] * 0.1).reshape(130, 45)
        d = a @ v.T
        return h + 0.01 * jnp.concatenate([b, c, d, d], axis=1)

    def body_numpy(h):
        a = np.tanh(h @ w.astype(np.float64))
        b = np.einsum("kij,kl->ijl", s.astype(np.float64), a[:, :45] * 0.1).reshape(130, 45)
        c = np.einsum("ikj,kl->ijl", t.astype(np.float64), a[:, 45:90] * 0.1).reshape(130, 45)
        d = a @ v.T.astype(np.float64)
        return h + 0.01 * np.concatenate([b, c, d, d], axis=1)

    want = x.astype(np.float64)
    for _ in range(3):
        want = body_numpy(want)
    f = numbax.jit(lambda x: lax.fori_loop(0, 3, body, x))
    tol = 2e-4 if dtype == np.float32 else 1e-11
    for threads in sorted({1, 2, POOL}):
        with numbax.config.override("cpu_threads", threads):
            np.testing.assert_allclose(np.asarray(f(x)), want, rtol=tol, atol=tol)


def test_body_products_on_numbax_gemm_give_the_bits_of_its_top_level_products(kind):
    # where both run numbax's GEMM (products of GEMM_THREADED_MACS and more, config.cpu_matmul
    # "numbax"), each element of C adds its k blocks in one order whatever the parts: a scan's
    # products equal the same products jitted alone, bit for bit, on any thread count
    if kind != "gemm":
        pytest.skip("numbax's GEMM at the top level and in loops")
    # (x.T @ v: A transposed with k >= KC, the form gemm.py packs)
    rng = np.random.default_rng(6)
    xs = rng.standard_normal((3, 520, 700)).astype(np.float32)
    w = rng.standard_normal((700, 333)).astype(np.float32)
    v = rng.standard_normal((520, 90)).astype(np.float32)
    scan = numbax.jit(lambda xs, w, v: lax.scan(
        lambda c, x: (c + 1.0, (x @ w, x.T @ v)), 0.0, xs)[1])
    alone = numbax.jit(lambda x, w: x @ w)
    alone_t = numbax.jit(lambda x, v: x.T @ v)
    for threads in sorted({1, 2, POOL}):
        with numbax.config.override("cpu_threads", threads):
            got, got_t = (np.asarray(a) for a in scan(xs, w, v))
            for k in range(3):
                np.testing.assert_array_equal(got[k], np.asarray(alone(xs[k], w)))
                np.testing.assert_array_equal(got_t[k], np.asarray(alone_t(xs[k], v)))
    np.testing.assert_allclose(got, xs.astype(np.float64) @ w, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(got_t, np.swapaxes(xs.astype(np.float64), 1, 2) @ v,
                               rtol=1e-4, atol=1e-3)


def _sinkhorn(cost, steps):
    """Log-domain Sinkhorn iterations: a logsumexp over the rows, then one over the columns."""
    def step(i, fg):
        f, g = fg
        f = -0.1 * jax_logsumexp((g[None, :] - cost) / 0.1, 1)
        g = -0.1 * jax_logsumexp((f[:, None] - cost) / 0.1, 0)
        return f, g
    return lax.fori_loop(0, steps, step, (jnp.zeros(cost.shape[0], cost.dtype),
                                          jnp.zeros(cost.shape[1], cost.dtype)))


def jax_logsumexp(x, axis):
    top = jnp.max(x, axis=axis, keepdims=True)
    return jnp.log(jnp.sum(jnp.exp(x - top), axis=axis)) + jnp.squeeze(top, axis)


def _sinkhorn_numpy(cost, steps):
    def lse(x, axis):
        top = np.max(x, axis=axis, keepdims=True)
        return np.log(np.sum(np.exp(x - top), axis=axis)) + np.squeeze(top, axis)
    cost = cost.astype(np.float64)
    f, g = np.zeros(cost.shape[0]), np.zeros(cost.shape[1])
    for _ in range(steps):
        f = -0.1 * lse((g[None, :] - cost) / 0.1, 1)
        g = -0.1 * lse((f[:, None] - cost) / 0.1, 0)
    return f, g


def test_axis_reductions_in_a_loop_body_vectorise_rows_and_take_columns_in_blocks():
    """A reduction over a body's last axis runs a row at a time through reductions.row_sum /
    row_max (vectorised); one over its first axis, on threads, runs in blocks of the last
    axis, each block a pass over the array in memory order (the bits of the serial pass),
    where a prange over output elements walked its columns."""
    rng = np.random.default_rng(3)
    cost = np.abs(rng.standard_normal((512, 384))).astype(np.float32)
    f = numbax.jit(_sinkhorn, static_argnums=1)
    functions = f.lower(cost, 4).as_text().split("def driver")[0].split("@njit(")
    parallel, = [s for s in functions if re.search(r"for \w+ in range\(4\):", s)
                 and not s.startswith("parallel=False")]  # the loop's threaded variant
    assert "rd.row_sum(" in parallel and "rd.row_max(" in parallel
    assert re.search(r"for \w+ in prange\(6\):\n\s+\w+ = np\.uint64\(\w+ \* 64\)", parallel)
    results = []
    for threads in sorted({1, 2, POOL}):
        with numbax.config.override("cpu_threads", threads):
            results.append([np.asarray(a) for a in f(cost, 4)])
    for other in results[1:]:  # one order of additions for each output on any thread count
        for a, b in zip(results[0], other, strict=True):
            np.testing.assert_array_equal(a, b)
    for got, want in zip(results[0], _sinkhorn_numpy(cost, 4), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_row_and_column_extrema_in_a_loop_body_propagate_nan():
    x = np.arange(600 * 520, dtype=np.float32).reshape(600, 520) / 1e4
    x[7, 11] = np.nan

    def f(x):
        return lax.fori_loop(0, 2, lambda i, c: (c[0] + jnp.max(x, axis=1),
                                                 c[1] + jnp.min(x, axis=0)),
                             (x[:, 0] * 0, x[0] * 0))
    rows, columns = (np.asarray(a) for a in numbax.jit(f)(x))
    np.testing.assert_array_equal(rows, 2 * np.max(x, axis=1))
    np.testing.assert_array_equal(columns, 2 * np.min(x, axis=0))
    assert np.isnan(rows[7]) and np.isnan(columns[11]) and not np.isnan(rows[6] + columns[10])


def test_whole_array_reductions_in_a_loop_run_in_fixed_chunks_and_the_test_allocates_once():
    """A sum, max or min over a whole large array inside a compiled loop runs in
    WHOLE_CHUNKS chunks (a prange where the loop has threads), the partials combined in order:
    the same bits on any thread count. A while loop's test allocates its temporaries once,
    before the loop, as the body's do."""
    rng = np.random.default_rng(5)
    a = (np.abs(rng.standard_normal(300_000)) + 0.1).astype(np.float32)

    def newton(a):
        def test(state):
            x, i, _ = state
            return (i < 30) & (jnp.max(jnp.abs(x * x - a)) > 1e-5)

        def step(state):
            x, i, total = state
            return 0.5 * (x + a / x), i + 1, total + jnp.sum(a / x)
        return lax.while_loop(test, step, (a, 0, jnp.float32(0)))

    f = numbax.jit(newton)
    functions = f.lower(a).as_text().split("def driver")[0].split("@njit(")
    parallel, = [s for s in functions if "while " in s and not s.startswith("parallel=False")]
    loop = parallel.split("while ")[1]
    assert "np.empty(" not in loop  # every temporary made before the loop
    assert re.search(r"for \w+ in prange\(64\):\n\s+\w+ = np\.uint64", parallel)
    # the call site tries threads from one pass's regions (the loop's trips are unknown);
    # the regions a call enters assume the loop's 64 (work.WHILE_TRIPS)
    driver = _driver(f, a)
    site = int(re.search(r"th\.Site\((\d+) \* th\.REGION_WORTH_S, quiet=True\)",
                         f.lower(a).as_text()).group(1))
    regions = int(re.search(r"th\.use\(n, (\d+)\)", driver).group(1))
    assert 2 <= site < 10 and regions > 64 * 2
    results = []
    for threads in sorted({1, 2, POOL}):
        with numbax.config.override("cpu_threads", threads):
            results.append([np.asarray(r) for r in f(a)])
    for other in results[1:]:
        for got, want in zip(results[0], other, strict=True):
            np.testing.assert_array_equal(got, want)
    x, steps, total = results[0]
    want, want_total = a.astype(np.float64), 0.0
    for _ in range(int(steps)):
        want_total += np.sum(a / want)
        want = 0.5 * (want + a / want)
    np.testing.assert_allclose(x, np.sqrt(a), rtol=1e-5)
    np.testing.assert_allclose(x, want, rtol=1e-5)
    np.testing.assert_allclose(total, want_total, rtol=1e-5)
    assert 2 < int(steps) < 30
