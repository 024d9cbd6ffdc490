"""Reductions over the leading axes alone (column sums: bias gradients) run in fixed chunks of
rows (few chunks also cut into column blocks), under prange or serially with the same tasks,
and reductions keeping an axis between reduced ones run it outermost: the same bits at every
thread count, numpy's values within rounding."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax._src.compiler.cpu import loops
from numbax._src.config import config

from .kernel_text import modules

RNG = np.random.default_rng(23)


def _program(x, y):
    prod = x * y
    if x.shape[0] == 0:  # max and min of nothing raise (JAX too)
        return prod, jnp.sum(prod, axis=0)
    return prod, jnp.sum(prod, axis=0), jnp.max(x + y, axis=0), jnp.min(x - y, axis=0)


def _run(f, x, y, threads):
    old = config.cpu_threads
    try:
        config.update("cpu_threads", threads)
        return [np.asarray(o) for o in f(x, y)]
    finally:
        config.update("cpu_threads", old)


@pytest.mark.parametrize("shape", [(300, 7), (2048, 33), (1, 5), (0, 4), (130, 3, 4),
                                   (loops.COLUMN_CHUNK, 2), (loops.COLUMN_CHUNK + 1, 2),
                                   (128, 512), (200, 50), (70, 40, 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_same_bits_serial_and_parallel_and_numpy_values(shape, dtype):
    x = (RNG.normal(size=shape) * 10).astype(dtype)
    y = (RNG.normal(size=shape) * 10).astype(dtype)
    if dtype != np.int32 and x.size:
        x.flat[x.size // 2] = np.nan  # max/min propagate it; the sum too
    f = numbax.jit(_program)
    serial, parallel = _run(f, x, y, 1), _run(f, x, y, 2)
    for a, b in zip(serial, parallel, strict=True):
        np.testing.assert_array_equal(a, b)
    with np.errstate(invalid="ignore"):
        want = [x * y, np.sum(x * y, axis=0, dtype=np.float64 if dtype != np.int32 else None)]
        if shape[0]:
            want += [np.max(x + y, axis=0), np.min(x - y, axis=0)]
    scale = float(np.nanmax(np.abs(x * y))) * shape[0] if x.size else 1.0
    for got, w in zip(parallel, want, strict=True):
        assert got.shape == w.shape
        assert got.dtype == (w.dtype if dtype == np.int32 else dtype)
        # float32 sums: rounding of the order, relative to the terms' size (cancellation)
        np.testing.assert_allclose(got, w, rtol=1e-6 if dtype == np.float32 else 1e-12,
                                   atol=1e-6 * scale if dtype == np.float32 else 0)


def test_the_kernel_runs_row_chunks_under_prange():
    x = RNG.normal(size=(256, 16)).astype(np.float32)
    text = numbax.jit(_program).lower(x, x).as_text()
    (kernel,) = modules(text)[:-1]
    assert "prange(ntask)" in kernel and f"// {loops.COLUMN_CHUNK}" in kernel


@pytest.mark.parametrize("shape, parallel", [
    (((loops.COLUMN_PAR_CHUNKS - 1) * loops.COLUMN_CHUNK + 1, 10, 100), True),  # 16 chunks
    (((loops.COLUMN_PAR_CHUNKS - 1) * loops.COLUMN_CHUNK, 10, 100), False),  # 15, narrow
    (((loops.COLUMN_PAR_CHUNKS - 1) * loops.COLUMN_CHUNK, 300), True),  # 15 chunks x 2 blocks
    ((128, 512), True),  # a batch-128 bias gradient: 2 chunks x 8 blocks of 64 columns
    ((128, 8 * loops.COLUMN_BLOCK_MIN - 1, 50), False)])  # 2 chunks x 7 blocks
def test_the_driver_runs_the_prange_variant_from_enough_tasks(shape, parallel):
    """The driver may call the prange variant once the row chunks, cut into column blocks of
    at least COLUMN_BLOCK_MIN where they are fewer, make COLUMN_PAR_CHUNKS tasks (a 1000-row
    mean over axis 0 ran serially: 1000 < 16 * 64)."""
    x = RNG.normal(size=shape).astype(np.float32)
    text = numbax.jit(lambda a: jnp.sum(jnp.exp(a), axis=0)).lower(x).compile().as_text()
    assert ("k0_par(" in text) == parallel



@pytest.mark.parametrize("shape, axes", [((16, 128, 64), (0, 1)), ((3, 70, 5), (0, 1)),
                                         ((4, 5, 6, 40), (0, 1, 2)), ((0, 5, 4), (0, 1)),
                                         ((5, 0, 4), (0, 1)), ((2, 33, 3, 2), (0, 1))])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_several_leading_axes_reduced_as_one_in_row_chunks(shape, axes, dtype):
    """A sum over a (batch, tokens, features) array's batch and token axes (a transformer's
    bias and layer-norm gradients) is a column reduction of their product's rows: row chunks
    under prange, the same bits on one and two threads, numpy's values within rounding (in
    float32 these sums were accumulated in the float32 output, serially)."""
    x = (RNG.normal(size=shape) * 10).astype(dtype)
    b = (RNG.normal(size=shape[-1]) * 10).astype(dtype)
    f = numbax.jit(lambda x, b: (x * b, jnp.sum(x * b + x, axis=axes),
                                 jnp.max(x - b, axis=axes) if x.size else jnp.sum(x, axis=axes)))
    serial, parallel = _run(f, x, b, 1), _run(f, x, b, 2)
    for a, c in zip(serial, parallel, strict=True):
        np.testing.assert_array_equal(a, c)
    floats = dtype == np.float32
    terms = (x * b + x).astype(np.float64) if floats else x * b + x  # ints: numpy's sum dtype
    want = [x * b, np.sum(terms, axis=axes),
            np.max(x - b, axis=axes) if x.size else np.sum(x, axis=axes)]
    scale = float(np.abs(terms).max()) * np.prod([shape[a] for a in axes]) if x.size else 1.0
    for got, w in zip(parallel, want, strict=True):
        assert got.shape == w.shape and got.dtype == (x.dtype if floats else w.dtype)
        np.testing.assert_allclose(got, w, rtol=1e-6, atol=1e-7 * scale)
    if x.size:
        kernels = modules(f.lower(x, b).as_text())[:-1]
        assert any("prange(ntask)" in k and "for q in range(c *" in k for k in kernels)


@pytest.mark.parametrize("shape, axes", [((8, 16, 12, 12), (0, 2, 3)), ((5, 7, 9), (0, 2)),
                                         ((4, 3, 5, 6), (0, 1, 3)), ((3, 0, 4), (0, 2)),
                                         ((0, 3, 4), (0, 2))])
def test_a_reduction_keeping_a_later_axis_runs_it_outermost_on_threads(shape, axes):
    """NCHW's batch-norm sums over (0, 2, 3) keep the channel axis between reduced ones: the
    nest runs its first kept axis outermost under prange (each thread its own outputs) and
    every output adds its terms in the reduced axes' order, so one and two threads give the
    same bits, numpy's values within rounding."""
    x = (RNG.normal(size=shape) * 10).astype(np.float32)
    f = numbax.jit(lambda x, _: (jnp.sum(x * x, axis=axes),
                                 jnp.max(x, axis=axes) if x.size else jnp.sum(x, axis=axes)))
    serial, parallel = _run(f, x, None, 1), _run(f, x, None, 2)
    for a, b in zip(serial, parallel, strict=True):
        np.testing.assert_array_equal(a, b)
    wide = x.astype(np.float64)
    want = [np.sum(wide * wide, axis=axes),
            np.max(x, axis=axes) if x.size else np.sum(x, axis=axes)]
    for got, w in zip(parallel, want, strict=True):
        np.testing.assert_allclose(got, w, rtol=1e-5)
    kernel = modules(f.lower(x, None).as_text())[0]
    first = min(set(range(len(shape))) - set(axes))
    assert f"for i{first} in prange(n{first}):" in kernel


def test_a_general_float32_sum_accumulates_in_float64():
    """A general reduction's float32 sum adds its terms into a float64 scratch (as the column
    form's partials do): 600,000 terms a channel round to float32 once, within a few ulp of
    the float64 sum, where adding into the float32 output one term at a time drifted ~1e-4."""
    x = RNG.uniform(size=(200, 2, 3000)).astype(np.float32)
    f = numbax.jit(lambda x, _: (jnp.sum(x, axis=(0, 2)),))
    (got,) = _run(f, x, None, 2)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, x.astype(np.float64).sum((0, 2)), rtol=3e-7)
