"""OpenBLAS's one-thread GEMM on Numba's threads (cpu/runtime/blas_parts.py): each block of C
one cblas call, against numpy in float64."""
import numba
import numpy as np
import pytest
from numba import njit, prange

import numbax
from numbax._src.compiler.cpu.runtime import blas, blas_parts, library
from numbax._src.compiler.cpu.runtime import threads as rt_threads

pytestmark = pytest.mark.skipif(not blas_parts.available(),
                                reason="numpy does not run on an OpenBLAS this can call")

SHAPES = [(128, 784, 512), (5, 7, 3), (300, 2, 77), (2, 2, 2), (97, 61, 200)]


def _operand(rng, shape, dtype, transposed):
    if transposed:  # the transpose of a C-contiguous array: columns contiguous
        return np.ascontiguousarray(rng.standard_normal(shape[::-1]).astype(dtype)).T
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,k,n", SHAPES)
def test_products_match_numpy_in_every_layout_and_thread_count(dtype, m, k, n):
    rng = np.random.default_rng(m * k + n)
    pool = numba.config.NUMBA_NUM_THREADS
    for at in (False, True):
        for bt in (False, True):
            x = _operand(rng, (m, k), dtype, at)
            y = _operand(rng, (k, n), dtype, bt)
            want = x.astype(np.float64) @ y.astype(np.float64)
            for threads in sorted({1, 2, pool}):
                with rt_threads.running(threads):
                    got = blas_parts.matmul(x, y, threads)
                assert got.dtype == dtype and got.shape == (m, n) and got.flags.c_contiguous
                tol = 1e-4 if dtype == np.float32 else 1e-12
                np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())


def test_views_with_padded_rows_and_a_grid_of_blocks():
    rng = np.random.default_rng(1)
    wide = rng.standard_normal((300, 600)).astype(np.float32)
    x = wide[:, :500]  # rows 600 elements apart
    y = rng.standard_normal((700, 40)).astype(np.float32)[:500]
    assert blas_parts.supports(x, y)
    got = blas_parts.matmul(x, y, 4)  # a 4-block grid even on a 2-thread pool
    np.testing.assert_allclose(got, x.astype(np.float64) @ y, rtol=1e-4, atol=1e-3)


def test_layouts_it_cannot_call_are_refused_with_the_way_out():
    x = np.ones((8, 6), np.float32)
    assert not blas_parts.supports(x[:, ::2], np.ones((3, 4), np.float32))  # strided rows
    assert not blas_parts.supports(x, np.ones((6, 4), np.float64))  # mixed dtypes
    assert not blas_parts.supports(x, np.ones((6, 1), np.float32))  # a side of 1
    assert not blas_parts.supports(x.astype(np.int32), np.ones((6, 4), np.int32))
    with pytest.raises(ValueError, match="blas_parts.matmul takes .* got x float32.*call np.dot"):
        blas_parts.matmul(x[:, ::2], np.ones((3, 4), np.float32), 2)


def test_avx2_hosts_run_threaded_products_on_numbas_pool(monkeypatch):
    """On an AVX2 host (no AVX-512 tile) a product of GEMM_THREADED_MACS and more runs through
    blas_parts, a dense layer's bias and activation after it; a smaller one stays on BLAS."""
    monkeypatch.setattr(library, "_host_gemm", ["avx2"])
    calls = []
    real = blas_parts.matmul
    monkeypatch.setattr(blas_parts, "matmul", lambda x, y, t: calls.append(t) or real(x, y, t))
    rng = np.random.default_rng(2)
    x = rng.standard_normal((256, 300)).astype(np.float32)
    w = rng.standard_normal((300, 64)).astype(np.float32)
    b = rng.standard_normal(64).astype(np.float32)
    with numbax.config.override("cpu_matmul", "auto"):
        got = library.dot(x, w, 256 * 300 * 64, b, "relu")
        assert len(calls) == 1
        small = library.dot(x[:16], w[:, :8], 16 * 300 * 8)  # under GEMM_THREADED_MACS: BLAS
        assert len(calls) == 1
    want = np.maximum(x.astype(np.float64) @ w + b, 0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(small, x[:16].astype(np.float64) @ w[:, :8], rtol=1e-4,
                               atol=1e-3)


@njit(parallel=True, cache=False)
def _product_in_loop(entry, width, threads, x, y):
    # a compiled loop's product, as cpu/loop_products.py writes it: a prange over C's blocks
    out = np.empty((x.shape[0], y.shape[1]), x.dtype)
    rows, cols = blas_parts.loop_grid(threads, out.shape[0], out.shape[1])
    for q in prange(rows * cols):  # (the index as an int64 value, as the generated code has)
        blas_parts.loop_block(entry, width, np.int64(q), rows, cols, x, y, out)
    return out


@njit(cache=False)
def _three_products(entry, width, threads, x, y):
    # the layouts compiled control flow hands loop_block: C-contiguous, and .T views of them
    return (_product_in_loop(entry, width, threads, np.ascontiguousarray(x),
                             np.ascontiguousarray(y)),
            _product_in_loop(entry, width, threads, np.ascontiguousarray(x),
                             np.ascontiguousarray(x).T),
            _product_in_loop(entry, width, threads, np.ascontiguousarray(y).T,
                             np.ascontiguousarray(x).T))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,k,n", [(300, 200, 260), (2, 3, 2), (64, 256, 1024)])
def test_loop_bodies_products_match_numpy_on_any_thread_count(dtype, m, k, n):
    rng = np.random.default_rng(m + k)
    x, y = rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, m)).astype(dtype)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    entry, width = blas_parts.loop_entry()
    tol = 1e-4 if dtype == np.float32 else 1e-12
    pool = numba.config.NUMBA_NUM_THREADS
    for threads in sorted({1, 2, 5, pool}):  # grids for 5 threads run on fewer where fewer
        with rt_threads.running(min(threads, pool)):
            got = blas.blas_call(_three_products, 1, entry, width, threads, x, y)
        for g, want in zip(got, (x64 @ y64, x64 @ x64.T, y64.T @ x64.T), strict=True):
            assert g.dtype == dtype and g.flags.c_contiguous
            np.testing.assert_allclose(g, want, rtol=tol, atol=tol * np.abs(want).max())


def test_loop_blocks_of_any_grid_cover_c_once():
    # every block of a rows x cols grid, more blocks than rows or columns of PART included,
    # writes its own part of C: C starts as NaN, so a block written twice is still right
    # but one left out shows
    rng = np.random.default_rng(9)
    x, y = rng.standard_normal((70, 50)), rng.standard_normal((50, 90))
    entry, width = blas_parts.loop_entry()
    for rows, cols in [(1, 1), (3, 2), (5, 7), (70, 1), (1, 90)]:
        out = np.full((70, 90), np.nan)
        for q in range(rows * cols):
            blas_parts.loop_block(entry, width, q, rows, cols, x, y, out)
        np.testing.assert_allclose(out, x @ y, rtol=1e-12, atol=1e-12)


def test_loop_bodies_products_without_an_openblas_stay_np_dot(monkeypatch):
    # where numpy's BLAS is not an OpenBLAS this reaches, compiled loops keep np.dot unless
    # numbax's GEMM runs the products (a different compile-cache key, so kernels rendered
    # the other way are not reused)
    from numbax import lax
    from numbax._src.compiler.cpu import loop_products
    from numbax._src.compiler.cpu.runtime import library

    monkeypatch.setattr(blas_parts, "available", lambda: False)
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((40, 30)), rng.standard_normal((30, 30)) * 0.2
    want = x
    for _ in range(2):
        want = want @ w + want @ w.T
    for setting in ("blas", "auto"):
        with numbax.config.override("cpu_matmul", setting):
            f = numbax.jit(lambda x, w: lax.fori_loop(0, 2, lambda i, h: h @ w + h @ w.T, x))
            text = f.lower(x, w).as_text()
            assert "bp.loop_block(" not in text
            if setting == "auto" and library.own_gemm_host():  # numbax's GEMM all the same
                assert loop_products.kind() == "gemm" and "gl.loop_block(" in text
            else:
                assert loop_products.kind() == "" and "np.dot(" in text
            np.testing.assert_allclose(np.asarray(f(x, w)), want, rtol=1e-12)
