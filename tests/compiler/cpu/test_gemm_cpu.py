"""numbax's own CPU GEMM (`gemm_cpu`) against float64 numpy products, over the layouts, ragged
edges, k blocks and thread splits it has code paths for, and the rule that routes compiled
matrix products to it."""
from __future__ import annotations

import time

import numpy as np
import pytest

import numbax
from numbax._src.compiler.cpu.runtime import gemm as gemm_cpu
from numbax._src.compiler.cpu.runtime import gemm_pairs, library
from numbax._src.config import config

RNG = np.random.default_rng(7)
TOL = {np.float32: 2e-6, np.float64: 1e-14}


def _operand(shape, dtype, transposed):
    """A (rows, cols) operand, C-contiguous or the transpose of a C-contiguous array."""
    if transposed:
        return np.ascontiguousarray(RNG.standard_normal(shape[::-1]).astype(dtype)).T
    return RNG.standard_normal(shape).astype(dtype)


def _check(x, y, threads):
    got = gemm_cpu.matmul(x, y, threads)
    want = x.astype(np.float64) @ y.astype(np.float64)
    assert got.shape == want.shape and got.dtype == x.dtype and got.flags.c_contiguous
    # Each entry's error against its own scale: sum |x_ik y_kj| bounds the rounding.
    scale = np.abs(x.astype(np.float64)) @ np.abs(y.astype(np.float64))
    err = np.max(np.abs(got - want) / np.maximum(scale, 1e-300))
    assert err < TOL[x.dtype.type], (x.shape, y.shape, threads, err)


# m: whole 12-row strips, a short last strip, fewer rows than one strip; n: whole 32/16-wide
# strips, a ragged last strip, fewer columns than a strip; k: one block, several blocks with
# a tail that is not a multiple of the vector width (the transposed pack's scalar rows).
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
# (200, 300, 70): 17 row strips, so one thread packs even a C-contiguous B; (37, 300, 70):
# 4 row strips on AVX-512, the fewest that pack it.
# (400, 300, 70): more row strips than one block of MC_STRIPS (a transposed A is packed a
# block at a time), the last one short. 128 and 200 rows end in an 8-row strip, 400 in a
# 4-row one: on AVX-512 the tiles of those sizes write them into C directly. (530, 100, 70):
# a transposed A of 512 rows or more is packed from k = 64 (gemm.packs_a), here one k block
# whose length is not a multiple of the vector width. KC_MAX - 1: the longest block (the
# workspaces' bound); 2 KC + 76: two blocks, the short rest spread over them; 784 and 1100:
# two blocks (gemm.k_blocks). n = 600: more column strips than one block of NC_STRIPS (two
# blocks of float32 strips, three of float64), the last one short; (40, 784, 600) with two k
# blocks too: a transposed A packed for the first column block is read by the later ones;
# (400, 300, 600): a part of more row strips than MC_STRIPS packs each block again.
@pytest.mark.parametrize("m,k,n", [(24, 16, 64), (37, 300, 70), (5, 529, 19), (128, 64, 512),
                                   (200, 300, 70), (400, 300, 70), (530, 100, 70),
                                   (37, gemm_cpu.KC_MAX - 1, 70), (13, 2 * gemm_cpu.KC + 76, 40),
                                   (130, 784, 40), (40, 300, 600), (40, 784, 600), (400, 300, 600)])
@pytest.mark.parametrize("layout", ["NN", "TN", "NT", "TT"])
def test_matches_float64_numpy(dtype, m, k, n, layout):
    x = _operand((m, k), dtype, layout[0] == "T")
    y = _operand((k, n), dtype, layout[1] == "T")
    for threads in (1, 2, 3):
        _check(x, y, threads)


def test_k_is_cut_into_blocks_of_equal_length_up_to_kc_max():
    """A short last k block is spread over the others (3 KC + 16 -> 3 blocks, not 4); a longer
    one makes a block of its own, and all blocks are then of equal length (±1)."""
    kc, longest = gemm_cpu.KC, gemm_cpu.KC_MAX
    for k, blocks in [(1, 1), (kc, 1), (kc + 1, 1), (longest - 1, 1), (longest, 2),
                      (2 * kc - 1, 2), (3 * kc + 16, 3), (4 * kc - 24, 4)]:
        assert gemm_cpu.k_blocks(k) == blocks, k
        lengths = [k * (b + 1) // blocks - k * b // blocks for b in range(blocks)]
        assert sum(lengths) == k and max(lengths) <= longest and max(lengths) - min(lengths) <= 1


@pytest.mark.parametrize("m,n", [(300, 40), (30, 400), (250, 250)])
def test_threads_split_c_into_a_grid(m, n):
    """Threads take parts of a grid of C: all rows, all columns, or both ways, with ragged
    last strips in either direction."""
    x, y = _operand((m, 50), np.float32, False), _operand((50, n), np.float32, True)
    for threads in (2, 4, 7, 16):
        _check(x, y, threads)


def test_every_candidate_grid_gives_the_same_bits(monkeypatch):
    """Threads take parts from a counter until none is left, and `matmul` times the
    candidate grids on a shape's first calls (product_parts.tuned_grid): every grid, of one
    part a thread or of several, writes every tile of C once, with its k blocks in order, so
    the choice never changes a bit of the result."""
    from numbax._src.compiler.cpu.runtime import product_parts

    monkeypatch.setattr(product_parts, "_trials", {})
    for layout in ("NN", "TT"):
        x = _operand((610, 700), np.float32, layout[0] == "T")
        y = _operand((700, 530), np.float32, layout[1] == "T")
        strips = (-(-610 // gemm_cpu.MR), -(-530 // (2 * gemm_cpu.VEC_BYTES // 4)))
        for threads in (2, 3):
            grids = product_parts.candidates(*strips, threads, 4 if layout[1] == "N" else 0,
                                             layout[0] == "T")
            assert len(grids) > 1 and any(r * q > threads for r, q in grids)
            first = gemm_cpu.matmul(x, y, threads)
            _check(x, y, threads)
            for _ in range(product_parts.SAMPLES * len(grids) + 2):  # the trial, then kept
                np.testing.assert_array_equal(gemm_cpu.matmul(x, y, threads), first)
            trial = product_parts._trials[(610, 530, 700, 1 if layout[0] == "N" else 610,
                                           1 if layout[1] == "N" else 700, "f", threads)]
            assert trial.kept in grids and min(trial.best) < float("inf")


def test_a_trial_whose_candidates_include_one_part_moves_on(monkeypatch):
    """A grid of one part runs on the calling thread, and its call counts in the trial like
    any other's: the trial ends with a kept grid instead of staying on that grid."""
    from numbax._src.compiler.cpu.runtime import product_parts

    monkeypatch.setattr(product_parts, "_trials", {})
    # four row strips and one (ragged) column strip: (1, 1) is a candidate
    m, n = 4 * gemm_cpu.MR, 2 * gemm_cpu.VEC_BYTES // 4 - 4
    x, y = _operand((m, 300), np.float32, False), _operand((300, n), np.float32, False)
    grids = product_parts.candidates(4, 1, 2, gemm_cpu.PACK_B_FROM_ROW_STRIPS, False)
    assert (1, 1) in grids and len(grids) > 1
    for _ in range(product_parts.SAMPLES * len(grids)):
        _check(x, y, 2)
    trial = product_parts._trials[(m, n, 300, 1, 1, "f", 2)]
    assert trial.kept in grids and max(trial.best) < float("inf")


def test_threads_of_python_calling_at_once():
    """Each Python thread has its own workspace: concurrent products do not share scratch."""
    import threading
    pairs = [(_operand((230, 90), np.float32, False), _operand((90, 70), np.float32, False))
             for _ in range(4)]
    results, errors = [None] * 4, []

    def work(i):
        try:
            for _ in range(20):
                results[i] = gemm_cpu.matmul(*pairs[i], 2)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for (x, y), got in zip(pairs, results):
        np.testing.assert_allclose(got, x.astype(np.float64) @ y, rtol=1e-4, atol=1e-4)


def test_empty_dimensions():
    for (m, k, n) in [(0, 3, 4), (3, 0, 4), (3, 4, 0)]:
        got = gemm_cpu.matmul(np.ones((m, k), np.float32), np.ones((k, n), np.float32), 2)
        np.testing.assert_array_equal(got, np.zeros((m, n), np.float32))


def test_rejects_what_it_does_not_take():
    a = np.ones((4, 4), np.float32)
    for x, y in [(a, a.astype(np.float64)), (a.astype(np.int64), a.astype(np.int64)),
                 (a[:, ::2], a[:2]), (a, np.ones((3, 4), np.float32)), (a[0], a)]:
        assert not gemm_cpu.supports(x, y)
    with pytest.raises(ValueError, match=r"float32\(4, 4\).*float64\(4, 4\).*np\.dot"):
        gemm_cpu.matmul(a, a.astype(np.float64))


def _region_just_ended(monkeypatch):
    """Numba's workers as right after a parallel region, for as long as the test runs (the
    window is pool_spin.py's ~3 ms otherwise, which a loaded CI machine can outlast)."""
    from numbax._src.compiler.cpu.runtime import threads

    monkeypatch.setitem(threads._state, "parallel", time.monotonic())
    monkeypatch.setitem(threads._state, "spin_window", 60.0)


def test_auto_rule_gives_an_avx512_host_every_product(monkeypatch):
    """An AVX-512 host runs every product on numbax's GEMM with "auto", whatever its size and
    whether or not Numba's workers spin or other processes keep the cores busy; a host with
    no vector tile never does; "blas" and "numbax" decide alone."""
    from numbax._src.compiler.cpu.runtime import threads

    monkeypatch.setattr(library, "_host_gemm", ["avx512"])
    monkeypatch.setattr(threads, "busy", lambda: False)
    with numbax.config.override("cpu_matmul", "auto"):
        for spun in (-1e9, time.monotonic()):  # idle pool, then a region just ended
            monkeypatch.setitem(threads._state, "parallel", spun)
            monkeypatch.setitem(threads._state, "spin_window", 60.0)
            for macs in (1, 1 << 28, 1 << 40):
                assert library.own_gemm(macs)
    with numbax.config.override("cpu_matmul", "blas"):
        assert not library.own_gemm(1 << 30)
    monkeypatch.setattr(library, "_host_gemm", [""])  # no vector tile: BLAS
    _region_just_ended(monkeypatch)
    with numbax.config.override("cpu_matmul", "auto"):
        assert threads.pool_spinning() and not library.own_gemm(1 << 30)
    with numbax.config.override("cpu_matmul", "numbax"):
        assert library.own_gemm(1 << 30)


def test_avx2_rule_puts_threaded_products_on_numbas_pool(monkeypatch):
    """AVX2: one thread's products on BLAS; threaded ones on Numba's pool where BLAS's kernel
    can run there (blas_parts), else only while the pool spins."""
    from numbax._src.compiler.cpu.runtime import blas_parts, threads

    monkeypatch.setattr(threads, "busy", lambda: False)
    monkeypatch.setattr(library, "_host_gemm", ["avx2"])
    _region_just_ended(monkeypatch)  # a region just ended
    big, threaded = 1 << 30, library.GEMM_THREADED_MACS
    with numbax.config.override("cpu_matmul", "auto"):
        assert library.own_gemm(big) and not library.own_gemm(threaded - 1)
        monkeypatch.setitem(threads._state, "parallel", -1e9)
        assert library.own_gemm(big) == blas_parts.available()
        monkeypatch.setattr(blas_parts, "available", lambda: False)
        assert not library.own_gemm(big)
        _region_just_ended(monkeypatch)
        assert library.own_gemm(threaded) and not library.own_gemm(threaded - 1)


def test_narrow_products_and_blas_threads_while_the_pool_spins(monkeypatch):
    """A product with a side under OWN_GEMM_MIN_DIM goes to BLAS where BLAS keeps its own
    threads; where BLAS would get one (below BLAS_THREADED_MACS, or while Numba's workers
    may spin) a product large enough for threads runs on numbax's kernel (AVX-512 host)."""
    from numbax._src.compiler.cpu.runtime import blas, threads

    x = np.ones((2048, 512), np.float32)
    w = np.ones((512, 10), np.float32)
    macs = 2048 * 512 * 10
    tall = np.ones((blas.BLAS_THREADED_MACS // (512 * 10) + 1, 512), np.float32)
    monkeypatch.setattr(library, "_host_gemm", ["avx512"])
    monkeypatch.setattr(library, "gemm_threads", lambda macs, site=None: 2)
    monkeypatch.setattr(library, "NARROW_MIN_THREADS", 2)  # (this machine may have two cores)
    with numbax.config.override("cpu_matmul", "auto"), \
            numbax.config.override("cpu_threads", 0):
        monkeypatch.setitem(threads._state, "parallel", -1e9)
        monkeypatch.setattr(threads, "busy", lambda: False)
        assert macs < blas.BLAS_THREADED_MACS and blas.blas_threads(macs) == 1
        assert library.runs_on_own_gemm(x, w, macs)
        assert not library.runs_on_own_gemm(tall, w, tall.shape[0] * 512 * 10)
        assert blas.blas_threads(1 << 40) == 0  # BLAS keeps its own count
        _region_just_ended(monkeypatch)
        assert library.runs_on_own_gemm(x, w, macs)
        # a narrow product too small for threads stays on BLAS's one thread even then
        small = np.ones((128, 512), np.float32)
        assert not library.runs_on_own_gemm(small, w, 128 * 512 * 10)
        assert blas.blas_threads(1 << 40) == 1
        np.testing.assert_array_equal(library.dot(x, w, macs), np.full((2048, 10), 512.0))


def _narrow_routes(monkeypatch, least_threads: int = 2):
    """An AVX-512 host's "auto" rule on a quiet machine, two GEMM threads a product, narrow
    products on the GEMM from `least_threads` threads (NARROW_MIN_THREADS; two so that the
    products run on a machine of two cores), an OpenBLAS without AVX-512 kernels (so products
    under ONE_THREAD_BLAS_MACS stay on the GEMM too)."""
    from numbax._src.compiler.cpu.runtime import threads

    monkeypatch.setattr(library, "_host_gemm", ["avx512"])
    monkeypatch.setattr(library, "_blas_avx512", [False])
    monkeypatch.setattr(threads, "busy", lambda: False)
    monkeypatch.setattr(library, "gemm_threads", lambda macs, site=None: 2)
    monkeypatch.setattr(library, "NARROW_MIN_THREADS", least_threads)


def test_a_narrow_right_operand_runs_swapped(monkeypatch):
    """x @ d with d at most a row strip (gemm.MR) wide (a layer's weight gradient h.T @ d, its
    output h @ W) runs on the GEMM as (d.T @ x.T).T, the narrow side in one row strip, x
    transposed or not; a wider d, an x of a row strip or less, or a dense layer's bias run as
    they are. Each gives numpy's product."""
    calls = []
    real = gemm_cpu.matmul
    monkeypatch.setattr(gemm_cpu, "matmul", lambda x, y, t=1, out=None, **kw: calls.append(
        x.shape) or real(x, y, t, out, **kw))
    _narrow_routes(monkeypatch)
    n = gemm_cpu.MR - 2  # a 10-class layer on AVX-512's 12-row strip; 4 on AVX2's 6 (the
    # products keep to GEMM_THREADED_MACS and up: 1000 rows)
    h = RNG.standard_normal((1000, 300)).astype(np.float32)
    with config.override("cpu_matmul", "auto"):
        for width in (n, gemm_cpu.MR, gemm_cpu.MR + 1):
            d = RNG.standard_normal((1000, width)).astype(np.float32)
            calls.clear()
            _close(library.dot(h.T, d, 300 * 1000 * width), h.T @ d)
            assert calls == [(width, 1000) if width <= gemm_cpu.MR else (300, 1000)]
        w = RNG.standard_normal((300, n)).astype(np.float32)
        bias = RNG.standard_normal(n).astype(np.float32)
        calls.clear()
        got = library.dot(h, w, 1000 * 300 * n)
        assert got.flags.c_contiguous
        _close(got, h @ w)
        _close(library.dot(np.asfortranarray(h), w, 1000 * 300 * n, bias, "relu"),
               np.maximum(h @ w + bias, 0))
        wide = RNG.standard_normal((300, 1000)).astype(np.float32)
        _close(library.dot(np.ascontiguousarray(w.T), wide, n * 300 * 1000), w.T @ wide)
    assert calls == [(n, 300), (1000, 300), (n, 300)]  # the last: n rows, as it is


def test_narrow_products_need_threads_enough_for_the_gemm(monkeypatch):
    """A product narrow in m or n leaves most of the tile idle: on fewer than
    NARROW_MIN_THREADS GEMM threads it stays on BLAS (one BLAS thread was as fast or
    faster), from there up it runs on the GEMM; one narrow in k alone runs on the GEMM
    either way; numpy's product every time."""
    h = np.ones((2048, 512), np.float32)
    w = np.ones((512, 10), np.float32)
    macs = 2048 * 512 * 10
    with config.override("cpu_matmul", "auto"), config.override("cpu_threads", 0):
        _narrow_routes(monkeypatch, 3)
        assert not library.runs_on_own_gemm(h, w, macs)
        np.testing.assert_array_equal(library.dot(h, w, macs), np.full((2048, 10), 512.0))
        narrow_k = np.ones((2048, 10), np.float32), np.ones((10, 512), np.float32)
        assert library.runs_on_own_gemm(*narrow_k, macs)  # the tile is full: as before
        _narrow_routes(monkeypatch, 2)
        assert library.runs_on_own_gemm(h, w, macs)
        np.testing.assert_array_equal(library.dot(h, w, macs), np.full((2048, 10), 512.0))


def test_a_few_rows_run_on_the_gemm_threads(monkeypatch):
    """A small batch's x @ W (4 to 31 rows, W at least a tile wide) fills the tile's 4- and
    8-row forms: on two GEMM threads it runs on the GEMM, as does d @ Wᵀ; one to three rows
    (BLAS's gemv), a narrow W and a GEMM of one thread leave it on BLAS. numpy's product
    every time."""
    calls = []
    real = gemm_cpu.matmul
    monkeypatch.setattr(gemm_cpu, "matmul", lambda x, y, t=1, out=None, **kw: calls.append(
        x.shape) or real(x, y, t, out, **kw))
    w = RNG.standard_normal((784, 512)).astype(np.float32)
    with config.override("cpu_matmul", "auto"), config.override("cpu_threads", 0):
        _narrow_routes(monkeypatch, 4)  # (narrow in general: from four threads)
        for rows in (4, 8, 13, 31):
            x = RNG.standard_normal((rows, 784)).astype(np.float32)
            macs = rows * 784 * 512
            assert library.runs_on_own_gemm(x, w, macs)
            calls.clear()
            _close(library.dot(x, w, macs), x @ w)
            assert calls == [(rows, 784)]
            d = RNG.standard_normal((rows, 512)).astype(np.float32)
            _close(library.dot(d, w.T, macs), d @ w.T)
        three = RNG.standard_normal((3, 784)).astype(np.float32)
        assert not library.runs_on_own_gemm(three, w, 1 << 21)
        narrow_w = np.ones((784, 10), np.float32)
        assert not library.runs_on_own_gemm(np.ones((512, 784), np.float32), narrow_w,
                                            512 * 784 * 10)
        # one GEMM thread (a busy machine's small product): BLAS's thread is faster
        monkeypatch.setattr(library, "gemm_threads", lambda macs, site=None: 1)
        x = RNG.standard_normal((8, 784)).astype(np.float32)
        assert not library.runs_on_own_gemm(x, w, 8 * 784 * 512)
        calls.clear()
        _close(library.dot(x, w, 8 * 784 * 512), x @ w)
        assert calls == []


def test_a_busy_machines_pooled_product_runs_a_narrow_one_swapped(monkeypatch):
    """The native pool's product (a busy machine's parallel arm) swaps the same products
    as Numba's pool does, and gives numpy's result."""
    from numbax._src.compiler.cpu.runtime import busy_sites, gemm_tasks, native_pool

    if not native_pool.available():
        pytest.skip("no native pool here")
    calls = []
    real = gemm_tasks.matmul
    monkeypatch.setattr(gemm_tasks, "matmul", lambda x, y, *a: calls.append(x.shape) or
                        real(x, y, *a))
    _narrow_routes(monkeypatch)
    monkeypatch.setattr(library, "busy_site", lambda key, macs: busy_sites.Site())
    n = gemm_cpu.MR - 2  # at most a row strip wide on AVX-512 and AVX2 hosts alike
    h = RNG.standard_normal((1000, 300)).astype(np.float32)
    d = RNG.standard_normal((1000, n)).astype(np.float32)
    with config.override("cpu_native_pool", True), config.override("cpu_matmul", "auto"):
        got = library.dot(h.T, d, 300 * 1000 * n)
    assert got is not None and got.flags.c_contiguous
    _close(got, h.T @ d)
    assert calls == [(n, 1000)]


def test_products_for_one_thread_go_to_an_avx512_openblas(monkeypatch):
    """With "auto" on an AVX-512 host whose OpenBLAS runs AVX-512 kernels, a product too small
    for threads runs on BLAS (one such thread matched or beat the GEMM on one, with less to
    do per call), and so does one under ONE_THREAD_BLAS_MACS unless the user set a thread
    count; larger products and batches of small ones stay on numbax's GEMM, and an OpenBLAS
    without AVX-512 kernels leaves every product to the GEMM."""
    from numbax._src.compiler.cpu.runtime import threads

    calls = []
    real, real_batched = gemm_cpu.matmul, gemm_pairs.matmul_batched
    monkeypatch.setattr(gemm_cpu, "matmul", lambda x, y, t=1, out=None, **kw: calls.append(
        "matmul") or real(x, y, t, out, **kw))
    monkeypatch.setattr(gemm_pairs, "matmul_batched", lambda x, y, t, out: calls.append(
        "batched") or real_batched(x, y, t, out))
    monkeypatch.setattr(library, "_host_gemm", ["avx512"])
    monkeypatch.setattr(threads, "busy", lambda: False)
    x, w = _operand((64, 80), np.float32, False), _operand((80, 72), np.float32, True)
    big_x, big_w = _operand((256, 256), np.float32, False), _operand((256, 256), np.float32, False)
    batch = RNG.standard_normal((8, 64, 80)).astype(np.float32)
    batch_w = RNG.standard_normal((8, 80, 72)).astype(np.float32)
    with config.override("cpu_matmul", "auto"), config.override("cpu_threads", 2):
        monkeypatch.setattr(library, "_blas_avx512", [True])
        _close(library.dot(x, w, 64 * 80 * 72), x @ w)
        assert calls == []
        _close(library.dot(big_x, big_w, 256 ** 3), big_x @ big_w)
        assert calls == ["matmul"]
        (got,) = library.dot_general(batch, batch_w, (((2,), (1,)), ((0,), (0,))),
                                     np.dtype(np.float32))
        _close(got, batch @ batch_w)
        assert calls[1:] in (["batched"], ["matmul"] * 8)
        monkeypatch.setattr(library, "_blas_avx512", [False])
        calls.clear()
        _close(library.dot(x, w, 64 * 80 * 72), x @ w)
        assert calls == ["matmul"]
    # from GEMM_THREADED_MACS to ONE_THREAD_BLAS_MACS: BLAS's one thread on a quiet machine,
    # the GEMM's threads where the user set a thread count
    mid_x, mid_w = _operand((128, 128), np.float32, False), _operand((128, 128), np.float32, True)
    assert library.GEMM_THREADED_MACS <= 128 ** 3 < library.ONE_THREAD_BLAS_MACS
    monkeypatch.setattr(library, "_blas_avx512", [True])
    for threads_set, want in ((0, []), (2, ["matmul"])):
        calls.clear()
        with config.override("cpu_matmul", "auto"), config.override("cpu_threads", threads_set):
            _close(library.dot(mid_x, mid_w, 128 ** 3), mid_x @ mid_w)
        assert calls == want


def test_small_products_leave_blas_its_thread_count(monkeypatch):
    """A matrix-matrix product small enough that OpenBLAS runs it on one thread by itself is
    called without setting BLAS's thread count (5-10 us a call), even while Numba's workers
    may spin; a matrix-vector one (numpy's gemv, its own threshold) still gets one thread."""
    from numbax._src.compiler.cpu.runtime import threads

    counts = []
    real = library.numpy_blas_call
    monkeypatch.setattr(library, "numpy_blas_call",
                        lambda fn, n, *a: counts.append(n) or real(fn, n, *a))
    monkeypatch.setattr(library, "_host_gemm", [""])  # every product on BLAS
    _region_just_ended(monkeypatch)  # a region just ended
    x, w, v = (_operand((64, 80), np.float32, False), _operand((80, 40), np.float32, False),
               _operand((80, 1), np.float32, False))
    with config.override("cpu_matmul", "auto"):
        assert threads.pool_spinning()
        _close(library.dot(x, w, 64 * 80 * 40), x @ w)
        _close(library.dot(x, v, 64 * 80), x @ v)
    assert counts == [0, 1]


def _close(got, want):
    np.testing.assert_allclose(np.asarray(got), want.astype(np.float64) if hasattr(
        want, "astype") else want, rtol=2e-5, atol=1e-4)


@pytest.mark.parametrize("choice", ["numbax", "blas"])
def test_config_routes_compiled_products(choice, monkeypatch):
    calls = []
    real = gemm_cpu.matmul
    monkeypatch.setattr(gemm_cpu, "matmul",
                        lambda x, y, t=1, **kw: calls.append(t) or real(x, y, t, **kw))
    x = _operand((96, 80), np.float32, False)
    w = _operand((80, 72), np.float32, False)
    f = numbax.jit(lambda x, w: (x @ w, x.T @ x))
    with config.override("cpu_matmul", choice):
        got = f(x, w)
    np.testing.assert_allclose(np.asarray(got[0]), x @ w, rtol=2e-5, atol=1e-4)
    np.testing.assert_allclose(np.asarray(got[1]), x.T @ x, rtol=2e-5, atol=1e-4)
    assert len(calls) == (2 if choice == "numbax" else 0)


def test_config_rejects_unknown_choice():
    with pytest.raises(ValueError, match="cpu_matmul.*'mkl'.*'auto', 'numbax', 'blas'"):
        config.update("cpu_matmul", "mkl")
    assert config.cpu_matmul in ("auto", "numbax", "blas")


def test_numba_target_features_decide_avx512(monkeypatch):
    """The rule asks Numba's target, not the host: NUMBA_CPU_FEATURES without AVX-512 means
    gemm_cpu's vectors would run split, so "auto" must not pick it."""
    from numba.core import config as numba_config

    from numbax._src.compiler.cpu.runtime import host_isa

    monkeypatch.setattr(numba_config, "CPU_FEATURES", "+avx2,+fma,-avx512f")
    assert not host_isa.numba_target_has("avx512f")
    assert host_isa.numba_target_has("avx2")
    monkeypatch.setattr(numba_config, "CPU_FEATURES", "+avx2,+avx512f")
    assert host_isa.numba_target_has("avx512f")


def test_writes_into_out_and_checks_it():
    x, y = _operand((40, 50), np.float32, False), _operand((50, 60), np.float32, True)
    out = np.full((3, 40, 60), np.nan, np.float32)
    got = gemm_cpu.matmul(x, y, 2, out[1])
    assert got.base is out or got is out[1] or np.shares_memory(got, out)
    np.testing.assert_allclose(out[1], x.astype(np.float64) @ y, rtol=1e-4, atol=1e-4)
    assert np.isnan(out[0]).all() and np.isnan(out[2]).all()
    for bad in (np.empty((40, 61), np.float32), np.empty((40, 60), np.float64),
                np.empty((60, 40), np.float32).T):
        with pytest.raises(ValueError, match=r"out must be a writeable C-contiguous float32"):
            gemm_cpu.matmul(x, y, 1, bad)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("spec", ["bij,bjk->bik", "bji,bjk->bik", "bij,bkj->bik"])
def test_batched_products_under_jit(spec, threads, monkeypatch):
    """Batched dot_generals whose per-entry products qualify run on gemm_cpu (layouts through
    strides), matching float64 numpy: on one thread as one product per batch entry; where
    the batch earns threads that one product does not, as whole products a thread."""
    import numbax.numpy as jnp

    calls, batched = [], []
    real, real_batched = gemm_cpu.matmul, gemm_pairs.matmul_batched
    monkeypatch.setattr(gemm_cpu, "matmul",
                        lambda x, y, t=1, out=None: calls.append(t) or real(x, y, t, out))
    monkeypatch.setattr(gemm_pairs, "matmul_batched", lambda x, y, t, out: (
        batched.append(t), real_batched(x, y, t, out))[1])
    shapes = {"bij": (3, 97, 64), "bji": (3, 64, 97), "bjk": (3, 64, 72), "bkj": (3, 72, 64)}
    lhs, rhs = spec.split("->")[0].split(",")
    x = RNG.standard_normal(shapes[lhs]).astype(np.float32)
    y = RNG.standard_normal(shapes[rhs]).astype(np.float32)
    with config.override("cpu_matmul", "numbax"), config.override("cpu_threads", threads):
        got = numbax.jit(lambda x, y: jnp.einsum(spec, x, y))(x, y)
    want = np.einsum(spec, x.astype(np.float64), y.astype(np.float64))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-4)
    assert (len(calls), batched) == ((3, []) if threads == 1 else (0, [2]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["NN", "TN", "NT", "TT"])
def test_batches_of_whole_products_match_float64_numpy(dtype, layout):
    """matmul_batched: ragged strips and k blocks (37 x 300 @ 300 x 70), per-entry layouts
    C or transposed, batches longer and shorter than the thread count; 520 x 90 @ 90 x 40,
    whose transposed A is packed (gemm.packs_a: 512 rows or more, k from 64)."""
    def batch(nb, rows, cols, transposed):
        if transposed:
            return np.transpose(RNG.standard_normal((nb, cols, rows)).astype(dtype), (0, 2, 1))
        return RNG.standard_normal((nb, rows, cols)).astype(dtype)

    for nb, threads, (m, k, n) in [(5, 2, (37, 300, 70)), (2, 3, (37, 300, 70)),
                                   (7, 3, (37, 300, 70)), (1, 1, (37, 300, 70)),
                                   (3, 2, (520, 90, 40))]:
        x, y = batch(nb, m, k, layout[0] == "T"), batch(nb, k, n, layout[1] == "T")
        out = np.full((nb, m, n), np.nan, dtype)
        assert gemm_pairs.matmul_batched(x, y, threads, out)
        want = np.matmul(x.astype(np.float64), y.astype(np.float64))
        scale = np.matmul(np.abs(x.astype(np.float64)), np.abs(y.astype(np.float64)))
        assert np.max(np.abs(out - want) / scale) < TOL[dtype], (nb, threads)
    # a batch whose matrices are not one block of one layout: declined, nothing written
    x = RNG.standard_normal((6, 37, 300)).astype(dtype)[::2]
    out = np.zeros((3, 37, 70), dtype)
    y = RNG.standard_normal((3, 300, 70)).astype(dtype)
    assert not gemm_pairs.matmul_batched(x, y, 2, out) and not out.any()


def test_one_compiled_version_per_dtype_whatever_the_operands_writeability():
    x = _operand((40, 50), np.float64, False)
    y = _operand((50, 60), np.float64, True)
    ro_x, ro_y = x.view(), y.view()
    ro_x.flags.writeable = ro_y.flags.writeable = False
    for a, b in [(x, y), (ro_x, y), (x, ro_y), (ro_x, ro_y)]:
        _check(a, b, 1)
        _check(a, b, 2)
    for fn in (gemm_cpu._gemm_part, gemm_cpu._gemm_threads):
        assert sum(str(sig[0].dtype) == "float64" for sig in fn.signatures) == 1
