"""The native pool (runtime/native_pool.py), numbax's GEMM on it (runtime/gemm_tasks.py) and
OpenBLAS's kernel on it (runtime/blas_tasks.py): every chunk runs exactly once, products equal
numpy's, concurrent callers and a forked child finish, and a busy machine's parallel products
take it."""
from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest
from numba import cfunc, types

import numbax
from numbax._src.compiler.cpu.runtime import blas_parts, gemm_tasks, library, native_pool
from numbax._src.compiler.cpu.runtime import threads as rt_threads

pytestmark = pytest.mark.skipif(not native_pool.available(),
                                reason="the native pool runs on Linux x86-64")

RNG = np.random.default_rng(35)


@cfunc(types.void(types.int64, types.int64), nopython=True)
def _count_chunk(arg, chunk):
    """counts[chunk] += 1 (the counts: float64s at `arg`)."""
    counts = gemm_tasks._f64(arg, chunk + 1)
    counts[chunk] += 1.0


def test_every_chunk_runs_exactly_once():
    native_pool.start(rt_threads.pool_size())
    assert native_pool.workers() >= 1
    for chunks in (1, 3, 64, 1000):
        counts = np.zeros(chunks)
        for _ in range(50):
            assert native_pool.run(_count_chunk.address, counts, chunks)
        np.testing.assert_array_equal(counts, np.full(chunks, 50.0))


def test_idle_workers_sleep_after_their_jobs():
    """Workers that ran jobs go back to sleep on the futex: the process takes no CPU while
    idle (with the futex call's timeout left out, each idle worker took a whole core)."""
    native_pool.start(rt_threads.pool_size())
    counts = np.zeros(64)
    for _ in range(200):
        assert native_pool.run(_count_chunk.address, counts, 64)
    time.sleep(0.1)  # (the workers' spin before sleeping; OpenMP's, after earlier tests)
    cpu, wall = time.process_time(), time.perf_counter()
    time.sleep(0.5)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    assert cpu < 0.1 * wall, f"{cpu:.3f} s of CPU in {wall:.3f} s idle"


def _product_cases():
    for dtype in (np.float32, np.float64):
        for m, k, n in ((300, 280, 200), (37, 513, 45), (1, 64, 33)):
            yield dtype, m, k, n


@pytest.mark.parametrize("dtype,m,k,n", list(_product_cases()))
@pytest.mark.parametrize("activation", [None, "relu", "gelu"])
def test_pooled_products_equal_numpy(dtype, m, k, n, activation):
    x = RNG.normal(size=(k, m)).astype(dtype).T  # a transposed operand: read through strides
    y = (RNG.normal(size=(k, n)) / np.sqrt(k)).astype(dtype)
    b = RNG.normal(size=n).astype(dtype) if activation else None
    got = gemm_tasks.matmul(x, y, b, activation or "none")
    want = x.astype(np.float64) @ y
    if activation:
        want = want + b
        if activation == "relu":
            want = np.maximum(want, 0)
        else:
            want = want * 0.5 * (1 + np.tanh(np.sqrt(2 / np.pi) * (want + 0.044715 * want ** 3)))
    tol = 3e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.sqrt(k))


def test_concurrent_callers_and_a_held_pool():
    """Callers from several Python threads: each gets its product, from the pool or (when
    another caller holds it) through library.dot's other path."""
    x = RNG.normal(size=(400, 300)).astype(np.float32)
    y = RNG.normal(size=(300, 200)).astype(np.float32)
    want = x @ y
    results, refused = [], []

    def call():
        for _ in range(20):
            out = gemm_tasks.matmul(x, y)
            if out is None:
                refused.append(1)
                out = library.dot(x, y, 400 * 300 * 200)
            results.append(out)

    workers = [threading.Thread(target=call) for _ in range(4)]
    for t in workers:
        t.start()
    for t in workers:
        t.join(60)
    assert len(results) == 80
    for out in results:
        np.testing.assert_allclose(out, want, rtol=3e-5, atol=3e-4)


def test_a_forked_child_finishes_without_workers():
    native_pool.start(rt_threads.pool_size())
    x = RNG.normal(size=(200, 100)).astype(np.float32)
    pid = os.fork()
    if pid == 0:  # the child: no worker threads came along
        code = 1
        try:
            counts = np.zeros(100)
            none_came = native_pool.workers() == 0
            native_pool.run(_count_chunk.address, counts, 100)  # the caller does every chunk
            out = gemm_tasks.matmul(x, x.T)  # (starts the child's own workers)
            code = 0 if none_came and (counts == 1).all() and np.allclose(
                out, x @ x.T, rtol=1e-4, atol=1e-3) else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0


def _busy_dense_layer(monkeypatch, module, cpu_matmul):
    """A busy machine's dense layer relu(x @ w + b) through library.dot, checked against numpy,
    with `module`.matmul's calls counted; returns the count's list (checked by the caller)."""
    calls = []
    real = module.matmul
    monkeypatch.setattr(module, "matmul", lambda *a: calls.append(1) or real(*a))
    monkeypatch.setattr(rt_threads, "busy", lambda: True)
    monkeypatch.setattr(library, "_product_sites", {})
    monkeypatch.setattr(rt_threads.Site, "choose", lambda self, busy=True: rt_threads.PARALLEL)
    x = RNG.normal(size=(256, 512)).astype(np.float32)
    w = RNG.normal(size=(512, 256)).astype(np.float32)
    b = RNG.normal(size=256).astype(np.float32)
    with numbax.config.override("cpu_matmul", cpu_matmul), \
            numbax.config.override("cpu_threads", 0):
        got = library.dot(x, w, 256 * 512 * 256, b, "relu")
        np.testing.assert_allclose(got, np.maximum(x @ w + b, 0), rtol=3e-5, atol=3e-4)
        assert calls == [1]
        with numbax.config.override("cpu_native_pool", False):
            library.dot(x, w, 256 * 512 * 256)
    return calls


def test_busy_parallel_products_take_the_pool(monkeypatch):
    assert _busy_dense_layer(monkeypatch, gemm_tasks, "numbax") == [1]


needs_openblas = pytest.mark.skipif(not blas_parts.available(),
                                    reason="blas_tasks drives numpy's OpenBLAS")


@needs_openblas
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,k,n", [(300, 280, 200), (37, 513, 45), (2, 2, 2), (1000, 3, 17)])
@pytest.mark.parametrize("layout", ["C", "x transposed", "y transposed"])
def test_pooled_blas_products_equal_numpy(dtype, m, k, n, layout):
    from numbax._src.compiler.cpu.runtime import blas_tasks

    x = RNG.normal(size=(m, k)).astype(dtype)
    y = (RNG.normal(size=(k, n)) / np.sqrt(k)).astype(dtype)
    if layout == "x transposed":
        x = np.ascontiguousarray(x.T).T
    elif layout == "y transposed":
        y = np.ascontiguousarray(y.T).T
    got = blas_tasks.matmul(x, y)
    assert got.flags.c_contiguous and got.dtype == dtype
    tol = 3e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, x.astype(np.float64) @ y, rtol=tol, atol=tol * np.sqrt(k))


@needs_openblas
def test_blas_tasks_declines_what_blas_parts_does_not_take():
    from numbax._src.compiler.cpu.runtime import blas_tasks

    x = RNG.normal(size=(40, 30)).astype(np.float32)
    assert blas_tasks.matmul(x, x.T.astype(np.float64)) is None  # two dtypes
    assert blas_tasks.matmul(x[:, ::2], x[::2]) is None  # neither rows nor columns contiguous


@needs_openblas
def test_busy_products_without_avx512_take_blas_on_the_pool(monkeypatch):
    """Where gemm.py's tile is the AVX2 one, a busy machine's parallel product runs OpenBLAS's
    kernel on the pool's chunks (blas_tasks), with a dense layer's epilogue after it."""
    from numbax._src.compiler.cpu.runtime import blas_tasks

    monkeypatch.setattr(library, "own_gemm_host", lambda: False)
    monkeypatch.setattr(library, "own_gemm", lambda macs: True)
    assert _busy_dense_layer(monkeypatch, blas_tasks, "auto") == [1]
