"""Row groups of short rows (rows._short_rows_body): rows of at most SHORT_ROWS_MAX elements
whose passes call exp, log, ... run in blocks of SHORT_BLOCK rows, the vector loop across the
block's rows. Numbers against numpy in float64 (softmax, log-softmax and logsumexp over 10
classes and over (n, 3) points), at row counts around the block size, in every layout a row
group takes (rows of two axes, blocks inside an outer axis), with broadcasts, an iota, integer
and max accumulators, NaN and -inf; the serial, prange and pooled forms give the same bits.
Rows without such calls, and longer rows, keep a loop per row."""
from __future__ import annotations

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax._src.compiler.cpu import rows

from .kernel_text import modules

RNG = np.random.default_rng(11)
B = rows.SHORT_BLOCK


def _softmax(z, axis=-1):
    z = z.astype(np.float64)
    e = np.exp(z - z.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def _logsumexp(z, axis=-1):
    z = z.astype(np.float64)
    m = z.max(axis, keepdims=True)
    return (np.log(np.exp(z - m).sum(axis, keepdims=True)) + m).squeeze(axis)


def _heads(z):
    """softmax, log_softmax and logsumexp of the last axis: one row group, three outputs."""
    return (numbax.nn.softmax(z, axis=-1), numbax.nn.log_softmax(z, axis=-1),
            numbax.nn.logsumexp(z, axis=-1))


def _kernels(f, *args) -> str:
    return "\n".join(modules(numbax.jit(f).lower(*args).as_text())[:-1])


@pytest.mark.parametrize("threads", [1, 0])
@pytest.mark.parametrize("n", [1, B - 1, B, B + 1, 3 * B + 7, 70_001])
@pytest.mark.parametrize("width", [1, 3, 10, rows.SHORT_ROWS_MAX])
def test_softmax_log_softmax_and_logsumexp_of_short_rows(width, n, threads):
    z = (RNG.normal(size=(n, width)) * 3).astype(np.float32)
    with numbax.config.override("cpu_threads", threads):
        soft, log_soft, lse = (np.asarray(v) for v in numbax.jit(_heads)(z))
    want = _logsumexp(z)
    np.testing.assert_allclose(soft, _softmax(z), rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(log_soft, z - want[:, None], rtol=2e-6, atol=4e-6)
    np.testing.assert_allclose(lse, want, rtol=2e-6, atol=2e-6)
    assert soft.dtype == log_soft.dtype == lse.dtype == np.float32


def test_short_rows_run_in_blocks_and_longer_or_cheap_rows_by_row():
    short = _kernels(_heads, np.zeros((100, rows.SHORT_ROWS_MAX), np.float32))
    assert f"for blk in prange(-(-m0 // {B})):" in short
    assert "fm.exp_f32(" in short and "[ib + r]" in short
    longer = _kernels(_heads, np.zeros((100, rows.SHORT_ROWS_MAX + 1), np.float32))
    assert "for blk in" not in longer
    # a row's norm: no exp/log/... in the passes over the row (the copies would cost more)
    cheap = _kernels(lambda z: z / jnp.sqrt(jnp.sum(z * z, axis=1, keepdims=True)),
                     np.zeros((100, 3), np.float32))
    assert "for blk in" not in cheap


@pytest.mark.parametrize("threads", [1, 0])
def test_a_call_on_a_short_rows_result_runs_in_blocks(threads):
    """An n-body step's pair forces: each pair's 3-wide squared distance, then r2 ** -1.5 on
    it. The power runs on the block's row results, in a vector loop across rows (it ran once
    a row, scalar: 5.8x slower on the VM); the values against float64 numpy, the same bits on
    every thread count."""
    pos = RNG.normal(size=(300, 3)).astype(np.float32)
    mass = (np.abs(RNG.normal(size=300)) + 0.1).astype(np.float32)

    def coupling(p, m):
        d = p[None, :, :] - p[:, None, :]
        return m[None, :] * (jnp.sum(d * d, -1) + 1e-3) ** -1.5

    assert "for blk in" in _kernels(coupling, pos, mass)
    with numbax.config.override("cpu_threads", threads):
        got = np.asarray(numbax.jit(coupling)(pos, mass))
    d = pos[None].astype(np.float64) - pos[:, None]
    want = mass[None] * ((d * d).sum(-1) + np.float64(np.float32(1e-3))) ** -1.5
    np.testing.assert_allclose(got, want, rtol=2e-6)
    with numbax.config.override("cpu_threads", 1):
        np.testing.assert_array_equal(got, np.asarray(numbax.jit(coupling)(pos, mass)))


def test_float64_rows_of_two_axes_and_blocks_inside_an_outer_axis():
    z = RNG.normal(size=(1000, 2, 3)) * 4
    got = np.asarray(numbax.jit(lambda z: numbax.nn.logsumexp(z, axis=(1, 2)))(z))
    np.testing.assert_allclose(got, _logsumexp(z.reshape(1000, 6)), rtol=1e-13)
    # (batch, tokens, 5): the token axis in blocks, a loop over the batch around them
    t = RNG.normal(size=(3, 700, 5))
    f = numbax.jit(lambda t: numbax.nn.softmax(t, axis=-1))
    np.testing.assert_allclose(np.asarray(f(t)), _softmax(t), rtol=1e-13, atol=1e-16)
    assert f"for blk in range(-(-m1 // {B})):" in _kernels(f, t)


def test_broadcasts_an_iota_and_several_passes_in_a_row():
    """A bias per class and an offset per row (broadcast index maps in the row pass), the
    class index (an iota), an expected class and a second reduction after the first."""
    z = RNG.normal(size=(5_000, 7)).astype(np.float32)
    bias = RNG.normal(size=7).astype(np.float32)
    shift = RNG.normal(size=(5_000, 1)).astype(np.float32)

    def f(z, bias, shift):
        e = jnp.exp(z + bias - shift)
        p = e / jnp.sum(e, axis=1, keepdims=True)
        mean = jnp.sum(p * lax.broadcasted_iota(np.float32, z.shape, 1), axis=1)
        return p, mean, jnp.max(jnp.log(p), axis=1)
    p, mean, top = (np.asarray(v) for v in numbax.jit(f)(z, bias, shift))
    want = _softmax(z + bias - shift)
    np.testing.assert_allclose(p, want, rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(mean, (want * np.arange(7)).sum(1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(top, np.log(want).max(1), rtol=1e-5, atol=1e-6)


def test_integer_and_bool_accumulators():
    z = RNG.normal(size=(3_001, 9)).astype(np.float32)
    z[np.abs(z) < 1e-3] = 0.5  # no exp within rounding of 1

    def f(z):
        return (jnp.sum(jnp.exp(z) > 1.0, axis=1), jnp.any(jnp.exp(z) > 5.0, axis=1),
                jnp.min(jnp.floor(jnp.exp(z) * 10).astype(np.int32), axis=1))
    count, any_big, low = (np.asarray(v) for v in numbax.jit(f)(z))
    e = np.exp(z.astype(np.float64))
    np.testing.assert_array_equal(count, (e > 1).sum(1))
    np.testing.assert_array_equal(any_big, (e > 5).any(1))
    np.testing.assert_array_equal(low, np.floor(e * 10).astype(np.int32).min(1))


def test_nan_and_masked_rows():
    """A NaN makes its row NaN; -inf logits get probability 0; a row all -inf is NaN (as
    numpy's 0/0)."""
    z = RNG.normal(size=(600, 6)).astype(np.float32)
    z[3, 2] = np.nan
    z[10, :4] = -np.inf
    z[11, :] = -np.inf
    with np.errstate(invalid="ignore"):
        want = _softmax(z)
    got = np.asarray(numbax.jit(lambda z: numbax.nn.softmax(z, axis=-1))(z))
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-7, equal_nan=True)
    assert np.isnan(got[3]).all() and np.isnan(got[11]).all() and (got[10, :4] == 0).all()


def test_cross_entropy_gradient_is_softmax_minus_one_hot():
    logits = RNG.normal(size=(2_000, 10))
    labels = RNG.integers(0, 10, size=2_000)
    onehot = np.eye(10)[labels]

    def loss(z):
        return -jnp.mean(jnp.sum(numbax.nn.log_softmax(z) * onehot, axis=1))
    value, grad = numbax.jit(numbax.value_and_grad(loss))(logits)
    p = _softmax(logits)
    np.testing.assert_allclose(float(value), -np.mean(np.log(p)[np.arange(2_000), labels]),
                               rtol=1e-13)
    np.testing.assert_allclose(np.asarray(grad), (p - onehot) / 2_000, rtol=1e-12,
                               atol=1e-17)


def test_serial_and_parallel_forms_give_the_same_bits():
    z = (RNG.normal(size=(100_003, 10)) * 5).astype(np.float32)
    outs = {}
    for threads in (1, 2):
        with numbax.config.override("cpu_threads", threads):
            outs[threads] = [np.asarray(v) for v in numbax.jit(_heads)(z)]
    for a, b in zip(outs[1], outs[2], strict=True):
        np.testing.assert_array_equal(a, b)
