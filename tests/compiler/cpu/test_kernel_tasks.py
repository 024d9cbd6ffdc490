"""Fused kernels on the native pool (cpu/pool_tasks.py, runtime/kernel_tasks.py): a busy
machine's parallel arm of a kernel over independent rows runs its serial code on chunks of rows
and gives the bits a one-thread run gives; a full reduction runs each pass's chunks as a job
and gives the bits its OpenMP arm gives with as many chunks, a reduction over the leading axis
(a bias gradient) runs its fixed chunks of rows as one job; a kernel holding an iota is told
its first row's index; arrays that are not C-contiguous keep the OpenMP arm."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax._src.compiler.cpu.runtime import busy_sites, kernel_tasks, native_pool
from numbax._src.compiler.cpu.runtime import threads as th

from .kernel_text import modules

pytestmark = pytest.mark.skipif(not native_pool.available(),
                                reason="the native pool runs on Linux x86-64")

RNG = np.random.default_rng(41)
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def busy(monkeypatch):
    """Every call site busy and choosing its parallel arm; the pool's jobs, as chunk counts."""
    jobs = []
    real = native_pool.run
    monkeypatch.setattr(native_pool, "run", lambda task, args, chunks: (
        jobs.append(chunks), real(task, args, chunks))[1])
    monkeypatch.setattr(th, "busy", lambda: True)
    monkeypatch.setattr(th, "parallel_ready", lambda kernel, arguments, work, tier_ns=0: True)

    def parallel(site, busy=True):
        site.started = time.perf_counter()
        return busy_sites.PARALLEL
    monkeypatch.setattr(busy_sites.Site, "choose", parallel)
    with numbax.config.override("cpu_threads", 0):
        yield jobs


def _serial(f, args):
    with numbax.config.override("cpu_threads", 1):
        return [np.asarray(v) for v in numbax.tree_util.tree_leaves(numbax.jit(f)(*args))]


CASES = {
    # a flat map of an odd length: chunk bounds on multiples of 64, the last ends at n
    "selu_flat": (lambda x: numbax.nn.selu(x), lambda: [RNG.normal(size=100_037)
                                                        .astype(np.float32)]),
    # a 0-d input (an optimizer's learning rate) beside flat ones: passed whole to every chunk
    "scaled_flat": (lambda p, g, lr: p - lr * jnp.exp(g), lambda: [
        RNG.normal(size=100_037).astype(np.float32), RNG.normal(size=100_037).astype(np.float32),
        np.float32(0.1)]),
    # a bias broadcast along rows (not sliced) and a per-row factor broadcast along columns
    # (sliced with the rows), float64
    "broadcasts": (lambda x, b, r: jnp.tanh(x + b) * r[:, None],
                   lambda: [RNG.normal(size=(300, 257)), RNG.normal(size=257),
                            RNG.normal(size=300)]),
    "softmax_rows": (lambda x: numbax.nn.softmax(x, axis=-1),
                     lambda: [RNG.normal(size=(513, 300)).astype(np.float32)]),
    "log_softmax_rows": (lambda x: numbax.nn.log_softmax(x, axis=-1),
                         lambda: [RNG.normal(size=(20000, 10)).astype(np.float32)]),
    # short rows in blocks of rows (rows._short_rows_body), with a per-row output; and blocks
    # of the token axis inside the batch's
    "short_rows_heads": (lambda x: (numbax.nn.softmax(x), numbax.nn.logsumexp(x, axis=-1)),
                         lambda: [RNG.normal(size=(70_001, 7)).astype(np.float32)]),
    "short_rows_in_tokens": (lambda x: numbax.nn.log_softmax(x, axis=-1),
                             lambda: [RNG.normal(size=(64, 301, 5))]),
    # an integer max over rows narrower than the lanes' width: the _narrow variants and task
    "int_max_narrow_rows": (lambda x: jnp.max(x * 2, axis=-1) + 1,
                            lambda: [RNG.integers(-1000, 1000, size=(60000, 8))]),
    "logsumexp_rows": (lambda x: numbax.scipy.special.logsumexp(x, axis=1),
                       lambda: [RNG.normal(size=(400, 1000))]),
    # a reduction over two trailing axes times a 0-d input; two outputs
    "trailing_sum": (lambda x, s: (jnp.sum(jnp.exp(x) * s, axis=(1, 2)), jnp.sin(x) * s),
                     lambda: [RNG.normal(size=(64, 30, 70)), np.float64(1.5)]),
    "layer_norm": (lambda x: (x - x.mean(-1, keepdims=True))
                   / jnp.sqrt(x.var(-1, keepdims=True) + 1e-5),
                   lambda: [RNG.normal(size=(1024, 96)).astype(np.float32)]),
    # slices taking rows off the outer index: each task reads them at its absolute rows
    # (the operands whole, r0 = lo); a diff of a flat vector in chunks of elements
    "stencil_rows": (lambda u, v: u[2:, 1:-1] - 2 * u[1:-1, 1:-1] + u[:-2, 2:]
                     + lax.slice(v, (1, 0), (599, 255), (2, 1)),
                     lambda: [RNG.normal(size=(301, 257)), RNG.normal(size=(600, 255))]),
    "diff_flat": (lambda x: jnp.tanh(x[1:] - x[:-1]), lambda: [RNG.normal(size=100_037)
                                                              .astype(np.float32)]),
    # rows of 3 through flat views (indices.literal_tails): sliced by rows (3 elements a row) and
    # an output stored at literal strides; and rows read off the outer index at two offsets
    # (passed whole, read through a view from row r0)
    "short_rows": (lambda y, w: jnp.tanh(y * w), lambda: [
        RNG.normal(size=(100_003, 3)).astype(np.float32), RNG.normal(size=3).astype(np.float32)]),
    "short_rows_off_the_index": (lambda y: (y[1:] - y[:-1]) * y[1:, :1],
                                 lambda: [RNG.normal(size=(100_003, 3))]),
    # ... beside a constant row (y[0]) and every other row: all at absolute rows
    "short_rows_strided": (lambda y: (y[1::2] - y[0]) * y[::2],
                           lambda: [RNG.normal(size=(200_002, 3))]),
    # images: (h, w, 3) through (h, w * 3) views (indices.tail_view), sliced by rows of h
    "image_rows": (lambda im: (im[..., 0] * 0.3 + im[..., 1] * 0.6 + im[..., 2] * 0.1)
                   ** (1 / 2.2), lambda: [RNG.random(size=(300, 301, 3)).astype(np.float32)]),
    # iotas along both axes: each task's rows read their absolute row index (r0 = lo)
    "iotas": (lambda v: v * jnp.arange(300.0)[None, :] + jnp.arange(256.0)[:, None],
              lambda: [RNG.normal(size=(256, 300))]),
    # a flat map of an odd length times its index: chunks of elements, r0 on multiples of 64
    "iota_flat": (lambda v: v * lax.iota(np.float32, 100_037),
                  lambda: [RNG.normal(size=100_037).astype(np.float32)]),
    # full-shape iotas: a kernel on flattened views, chunks of elements that split rows
    "iotas_flattened": (lambda v: v * lax.broadcasted_iota(np.float64, (257, 300), 0)
                        + lax.broadcasted_iota(np.float64, (257, 300), 1),
                        lambda: [RNG.normal(size=(257, 300))]),
    # attention's causal mask, built inside the program: a row group holding two iotas
    "causal_softmax": (lambda v: numbax.nn.softmax(jnp.where(
        lax.broadcasted_iota(np.int32, (300, 300), 0)
        >= lax.broadcasted_iota(np.int32, (300, 300), 1), v, -jnp.inf), axis=-1),
        lambda: [RNG.normal(size=(300, 300)).astype(np.float32)]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_pooled_kernels_give_the_serial_bits(busy, name):
    f, make = CASES[name]
    args = make()
    want = _serial(f, args)
    text = numbax.jit(f).lower(*args).as_text()
    assert "def kernel_task(" in text and "pk.run(" in modules(text)[-1]
    got = [np.asarray(v) for v in numbax.tree_util.tree_leaves(numbax.jit(f)(*args))]
    assert busy, "no kernel ran on the pool"
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)  # the same serial code on each row: same bits
    if name == "broadcasts":  # and against NumPy, an independent truth for the serial code
        np.testing.assert_allclose(got[0], np.tanh(args[0] + args[1]) * args[2][:, None],
                                   rtol=1e-12, atol=1e-12)
    if name == "stencil_rows":
        u, v = args
        np.testing.assert_allclose(got[0], u[2:, 1:-1] - 2 * u[1:-1, 1:-1] + u[:-2, 2:]
                                   + v[1:599:2], rtol=1e-12, atol=1e-12)
    if name == "diff_flat":
        np.testing.assert_allclose(got[0], np.tanh(args[0][1:] - args[0][:-1]), rtol=2e-6,
                                   atol=1e-7)
    if name == "short_rows":
        np.testing.assert_allclose(got[0], np.tanh(args[0] * args[1]), rtol=2e-6, atol=1e-7)
    if name == "short_rows_off_the_index":
        y = args[0]
        np.testing.assert_allclose(got[0], (y[1:] - y[:-1]) * y[1:, :1], rtol=1e-12)
    if name == "short_rows_strided":
        y = args[0]
        np.testing.assert_allclose(got[0], (y[1::2] - y[0]) * y[::2], rtol=1e-12)
    if name == "image_rows":
        im = args[0].astype(np.float64)
        gray = im[..., 0] * 0.3 + im[..., 1] * 0.6 + im[..., 2] * 0.1
        np.testing.assert_allclose(got[0], gray ** (1 / 2.2), rtol=2e-6)
    if name == "iotas":
        rows, cols = np.indices((256, 300))
        np.testing.assert_array_equal(got[0], args[0] * cols + rows)
    if name == "iotas_flattened":
        rows, cols = np.indices((257, 300))
        np.testing.assert_array_equal(got[0], args[0] * rows + cols)
    if name == "causal_softmax":
        masked = np.where(np.tri(300, dtype=bool), args[0].astype(np.float64), -np.inf)
        e = np.exp(masked - masked.max(-1, keepdims=True))
        np.testing.assert_allclose(got[0], e / e.sum(-1, keepdims=True), rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("chunks", [2, 5])
@pytest.mark.parametrize("name", ["selu_flat", "scaled_flat", "iota_flat", "iotas_flattened",
                                  "diff_flat"])
def test_flat_maps_prange_runs_the_serial_loop_on_chunks(monkeypatch, name, chunks):
    """A flat map's OpenMP arm is a prange over chunks, each the serial variant on its span of
    the arrays (an iota told its span's first index): the serial bits for any chunk count."""
    f, make = CASES[name]
    args = make()
    want = _serial(f, args)
    text = numbax.jit(f).lower(*args).as_text()
    assert re.search(r"for c in prange\(nchunk\):\n.*\n        kernel_serial\(.*o0\[lo:hi\]", text)
    asked = []
    monkeypatch.setattr(th, "busy", lambda: False)
    monkeypatch.setattr(th, "parallel_ready", lambda kernel, arguments, work, tier_ns=0: True)
    monkeypatch.setattr(th, "chunks", lambda size, minimum, n: (asked.append(n), chunks)[1])
    with numbax.config.override("cpu_threads", 2):
        got = [np.asarray(v) for v in numbax.tree_util.tree_leaves(numbax.jit(f)(*args))]
    assert asked, "the prange variant did not run"
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    if name == "iota_flat":  # and against NumPy
        np.testing.assert_array_equal(got[0], args[0] * np.arange(100_037, dtype=np.float32))
    if name == "scaled_flat":
        np.testing.assert_allclose(got[0], args[0] - args[2] * np.exp(args[1]), rtol=1e-6,
                                   atol=1e-6)  # (float32 cancellation near p = lr e**g)


def test_small_outer_loops_and_chunk_bounds():
    """span: the chunks cover [0, n) once, in order, on multiples of the alignment."""
    for n, chunks, align in [(1, 1, 64), (5, 12, 1), (100_037, 12, 64), (64, 12, 64),
                             (1000, 7, 1)]:
        bounds = [kernel_tasks.span(n, chunks, c, align) for c in range(chunks)]
        assert bounds[0][0] == 0 and bounds[-1][1] == n
        for (lo, hi), (lo2, _) in zip(bounds, bounds[1:]):
            assert lo <= hi == lo2 and lo % align == 0


def test_non_contiguous_arrays_and_a_quiet_machine_keep_the_openmp_arm(busy, monkeypatch):
    f = numbax.jit(lambda x: jnp.tanh(x) * 3.0)
    x = RNG.normal(size=(600, 500))
    np.testing.assert_array_equal(np.asarray(f(x)), _serial(lambda v: jnp.tanh(v) * 3.0, [x])[0])
    jobs = len(busy)
    assert jobs == 1
    site = busy_sites.Site()
    site.started = time.perf_counter()
    # a transposed (Fortran-order) view: the pool declines, nothing is run
    assert not kernel_tasks.run(site, None, (x.T, np.empty((500, 600))), 500, 1, ())
    with numbax.config.override("cpu_native_pool", False):
        assert not kernel_tasks.run(site, None, (x, np.empty_like(x)), 600, 1, ())
    site.started = 0.0  # not a busy call
    assert not kernel_tasks.run(site, None, (x, np.empty_like(x)), 600, 1, ())
    assert len(busy) == jobs
    # the jitted function on a transposed argument still computes the right numbers
    np.testing.assert_allclose(np.asarray(f(x.T)), np.tanh(x.T) * 3.0, rtol=1e-14)


def _kernel_source(f, *args) -> str:
    return next(m for m in modules(numbax.jit(f).lower(*args).as_text())
                if "def kernel(" in m)


def test_kernels_whose_rows_are_not_independent_have_no_task():
    x = RNG.normal(size=(256, 300))
    # a reduction over the outer axis: its chunks of rows run as one job of parts
    source = _kernel_source(lambda v: jnp.sum(jnp.exp(v), axis=0), x)
    assert "def kernel_task(" not in source and "def kernel_pool(" in source
    # a full reduction: its chunks combine across rows, so it runs passes of chunk jobs
    source = _kernel_source(lambda v: jnp.sum(jnp.exp(v)), x)
    assert "def kernel_task(" not in source and "def kernel_pool(" in source


def test_an_input_read_by_rows_and_by_columns_rules_the_task_out(busy):
    """r read per row (added to each row's sum) and broadcast along columns: rows [lo, hi) of
    r are not all the kernel reads, so the kernel keeps the OpenMP arm."""
    def f(x, r):
        return jnp.sum(x * r[None, :], axis=1) + r

    x, r = RNG.normal(size=(300, 300)), RNG.normal(size=300)
    assert "kernel_task" not in _kernel_source(f, x, r)
    np.testing.assert_allclose(np.asarray(numbax.jit(f)(x, r)), (x * r).sum(1) + r,
                               rtol=1e-12, atol=1e-12)
    assert not busy


# Rows of an operand with more rows than the kernel's loop: a slice of its first rows (read
# row by row: the chunks slice it with the output) and one row of it whose next axis the outer
# loop runs along (x[5] of an (n, m, 1) x: passed whole, read at the absolute row). The
# chunks' span was taken from the first of them (1024 rows, not 3), and x[5]'s reads were
# chunk-relative: both went wrong once the kernel turned parallel (its 190th call).
LONGER_OPERANDS = {
    "first_rows": (lambda x: x.reshape(1024, 256, 1)[:3] + 1.0,
                   lambda x: x.reshape(1024, 256, 1)[:3] + 1.0),
    "one_row_along_the_loop": (lambda x: x.reshape(1024, 256, 1)[5] * 2.0 + 1.0,
                               lambda x: x.reshape(1024, 256, 1)[5] * 2.0 + 1.0),
}


@pytest.mark.parametrize("arm", ["prange", "pool"])
@pytest.mark.parametrize("name", list(LONGER_OPERANDS))
def test_chunks_of_a_kernel_reading_a_longer_operand(monkeypatch, arm, name):
    f, truth = LONGER_OPERANDS[name]
    x = np.arange(1024 * 256, dtype=np.float32).reshape(1024, 256)
    ran = []
    monkeypatch.setattr(th, "parallel_ready", lambda kernel, arguments, work, tier_ns=0: True)
    monkeypatch.setattr(th, "chunks", lambda size, minimum, n: (ran.append(n), 5)[1])
    if arm == "pool":
        monkeypatch.setattr(th, "busy", lambda: True)
        monkeypatch.setattr(busy_sites.Site, "choose", lambda site, busy=True: (
            setattr(site, "started", time.perf_counter()), busy_sites.PARALLEL)[1])
        real = native_pool.run
        monkeypatch.setattr(native_pool, "run", lambda task, args, chunks: (
            ran.append(chunks), real(task, args, chunks))[1])
    else:
        monkeypatch.setattr(th, "busy", lambda: False)
    with numbax.config.override("cpu_threads", 0 if arm == "pool" else 2):
        got = np.asarray(numbax.jit(f)(x))
    assert ran, f"the {arm} arm did not run"
    np.testing.assert_array_equal(got, truth(x))


def test_chunks_stay_inside_their_arrays_under_numbas_bounds_checks(tmp_path):
    """The same kernels' prange arms with Numba's bounds checks on (a fresh process and
    cache): a chunk that writes past its output raises IndexError there."""
    code = ("import numpy as np, numbax\n"
            "from tests.compiler.cpu.test_kernel_tasks import LONGER_OPERANDS\n"
            "x = np.arange(1024 * 256, dtype=np.float32).reshape(1024, 256)\n"
            "for f, truth in LONGER_OPERANDS.values():\n"
            "    np.testing.assert_array_equal(np.asarray(numbax.jit(f)(x)), truth(x))\n")
    env = {**os.environ, "NUMBA_BOUNDSCHECK": "1", "NUMBAX_CPU_THREADS": "2",
           "NUMBAX_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]


def _record_parts(monkeypatch) -> list[bool]:
    """What each call of kernel_tasks.run_parts returned (True: it ran on the pool)."""
    pooled: list[bool] = []
    real = kernel_tasks.run_parts
    monkeypatch.setattr(kernel_tasks, "run_parts", lambda *a: (
        pooled.append(real(*a)), pooled[-1])[1])
    return pooled


def _pooled_run(f, args, pooled: list[bool]) -> list[np.ndarray]:
    """f's outputs, jitted, after checking that its reduction has a pool form and ran on it."""
    assert "def kernel_pool(" in modules(numbax.jit(f).lower(*args).as_text())[0]
    got = [np.asarray(v) for v in numbax.tree_util.tree_leaves(numbax.jit(f)(*args))]
    assert pooled and all(pooled), "the reduction did not run on the pool"
    return got


FULL_REDUCTIONS = {
    # two passes: the max, then the sum of exp shifted by it (a seed of the second pass)
    "logsumexp": (lambda x: numbax.scipy.special.logsumexp(x),
                  lambda: RNG.normal(size=(700, 900)),
                  lambda x: np.log(np.sum(np.exp(x - x.max()))) + x.max()),
    "sum_float32": (lambda x: jnp.sum(x), lambda: RNG.normal(size=300_001).astype(np.float32),
                    np.sum),
    # a last pass with no reduction, writing every element (exp kept from the pass before)
    "softmax_vector": (lambda x: numbax.nn.softmax(x),
                       lambda: RNG.normal(size=400_000).astype(np.float32),
                       lambda x: np.exp(x - x.max()) / np.exp(x - x.max()).sum()),
    "var_float32": (lambda x: jnp.var(x), lambda: RNG.normal(3.0, 2.0, size=500_000)
                    .astype(np.float32), lambda x: np.var(x.astype(np.float64))),
    "max_and_mean": (lambda x: (jnp.max(x), jnp.mean(jnp.tanh(x))),
                     lambda: RNG.normal(size=2**19), None),
}


@pytest.mark.parametrize("name", list(FULL_REDUCTIONS))
def test_full_reductions_run_their_passes_as_pool_jobs(busy, monkeypatch, name):
    f, make, truth = FULL_REDUCTIONS[name]
    x = make()
    pooled = _record_parts(monkeypatch)
    got = _pooled_run(f, [x], pooled)
    jobs = len(pooled)
    # the OpenMP arm with the pool's chunk count runs the same chunk code: the same bits
    chunks = min(x.size // 4096, native_pool.CHUNKS_PER_THREAD * (native_pool.workers() + 1))
    monkeypatch.setattr(th, "chunks", lambda size, minimum, n: chunks)
    with numbax.config.override("cpu_native_pool", False):
        want = [np.asarray(v) for v in numbax.tree_util.tree_leaves(numbax.jit(f)(x))]
    assert not any(pooled[jobs:])  # (the pool declined each: OpenMP ran them)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    wide = np.asarray(x, np.float64)
    expected = [truth(wide)] if truth else [wide.max(), np.tanh(wide).mean()]
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=2e-6 if g.dtype == np.float32 else 1e-12,
                                   atol=1e-12)


COLUMN_REDUCTIONS = {
    # a bias gradient: float32 rows summed in float64 partials of 64 rows each
    "bias_gradient": (lambda g: jnp.sum(g, axis=0),
                      lambda: [RNG.normal(size=(4099, 300)).astype(np.float32)],
                      lambda g: g.astype(np.float64).sum(0)),
    # a fused map before the sum, a per-column weight broadcast along rows, and a 0-d input
    "weighted_mean": (lambda x, w, s: jnp.mean(jnp.tanh(x) * w * s, axis=0),
                      lambda: [RNG.normal(size=(2048, 77)), RNG.normal(size=77), np.float64(0.5)],
                      lambda x, w, s: (np.tanh(x) * w * s).mean(0)),
    # two row chunks, each cut into column blocks (loops.column_blocks)
    "few_rows": (lambda d, h: jnp.sum(d * (1 - h * h), axis=0),
                 lambda: [RNG.normal(size=(128, 512)), RNG.normal(size=(128, 512))],
                 lambda d, h: (d * (1 - h * h)).sum(0)),
    # three axes, two reductions (sum and max) of one map
    "sum_and_max_3d": (lambda x: (jnp.sum(x * 2.0, axis=0), jnp.max(x, axis=0)),
                       lambda: [RNG.normal(size=(1100, 6, 40))],
                       lambda x: ((x * 2.0).sum(0), x.max(0))),
    # a bias gradient over a (batch, tokens, features) array's two leading axes
    "batch_and_tokens": (lambda d, b: jnp.sum(d * (1 - d * b), axis=(0, 1)),
                         lambda: [RNG.normal(size=(9, 130, 96)).astype(np.float32),
                                  RNG.normal(size=96).astype(np.float32)],
                         lambda d, b: (d * (1 - d * b)).sum((0, 1))),
}


@pytest.mark.parametrize("name", list(COLUMN_REDUCTIONS))
def test_leading_axis_reductions_run_their_chunks_as_a_pool_job(busy, monkeypatch, name):
    """The chunks are fixed (loops.COLUMN_CHUNK rows) and combined in order: the bits of a
    one-thread run."""
    f, make, truth = COLUMN_REDUCTIONS[name]
    args = make()
    got = _pooled_run(f, args, _record_parts(monkeypatch))
    want = _serial(f, args)
    expected = numbax.tree_util.tree_leaves(truth(*[np.asarray(a, np.float64) for a in args]))
    for g, w, e in zip(got, want, expected, strict=True):
        np.testing.assert_array_equal(g, w)
        np.testing.assert_allclose(g, e, rtol=2e-6 if g.dtype == np.float32 else 1e-12,
                                   atol=1e-9)


def test_a_pool_form_that_does_not_compile_falls_back_to_openmp_with_a_warning():
    from numba import njit

    @njit
    def kernel_pool(*args):
        return undefined_helper(args)  # noqa: F821 (a typing error: the form does not compile)

    site = busy_sites.Site()
    x = np.ones(2**16)
    site.started = time.perf_counter()
    with pytest.warns(RuntimeWarning, match="native-pool form did not compile"):
        assert not kernel_tasks.run_parts(site, kernel_pool, (), (x,), (), x.size, 4096)
    site.started = time.perf_counter()
    assert not kernel_tasks.run_parts(site, kernel_pool, (), (x,), (), x.size, 4096)  # no retry



def _pool_forms(cache_dir):
    """The pool forms of the one generated module in `cache_dir`: its task, or its pool kernel
    and part tasks."""
    import sys

    from numbax._src.compiler import cache

    [module] = [m for name, m in list(sys.modules.items())
                if name.startswith(cache.MODULE_PREFIX) and m is not None
                and str(getattr(m, "__file__", "")).startswith(str(cache_dir))]
    if hasattr(module, "kernel_task"):
        return (module.kernel_task,)
    return (module.kernel_pool, *module.PART_TASKS)


@pytest.mark.parametrize("f,size", [(lambda v: jnp.tanh(v) * 2.0, 1 << 20),  # a task
                                    (lambda v: jnp.sum(jnp.exp(v)), 1 << 22)],  # pool + parts
                         ids=["task", "parts"])
def test_a_site_tries_the_pool_at_once_where_its_pool_forms_are_on_disk(tmp_path, busy, f,
                                                                         size):
    """A site waits busy_sites.TASK_TIER_S of busy serial time before its first pooled run
    (the pool forms' compile to earn), but not where the disk cache already holds them."""
    from numbax._src.compiler import cache

    x = RNG.normal(size=size)
    cache.clear()
    try:
        with numbax.config.override("cache_dir", str(tmp_path)):
            with numbax.config.override("cpu_threads", 1):  # quiet: no pooled run yet
                numbax.jit(f)(x)
            forms = _pool_forms(tmp_path)
            assert kernel_tasks.site(*forms).tier == busy_sites.TASK_TIER_S
            quiet = np.asarray(numbax.jit(f)(x))
            np.testing.assert_allclose(numbax.jit(f)(x), quiet)  # pooled: compiles, saves
            assert kernel_tasks.site(*forms).tier == 0.0
    finally:
        cache.clear()
