"""Simulator checks of reductions that keep trailing or middle axes (codegen_cuda's general
reductions), including the split form: the reduced range cut into pieces whose partials a
second kernel combines (Config(sim=True) splits once outputs x pieces stay under 256)."""
from __future__ import annotations

import numpy as np

import numbax
import numbax.numpy as jnp
from numbax._src.compiler.cuda import loops
from numbax._src.compiler.cuda.config import Config
from tests.compiler.cuda.sim_checks import check, close, gjit

RNG = np.random.default_rng(3)


@check
def general_reductions_split_and_serial():
    cfg = Config(sim=True)
    assert loops.reduce_splits(cfg, 8, 64) > 1  # the split path is exercised below
    assert loops.reduce_splits(cfg, 512, 64) == 1
    x = RNG.normal(size=(64, 8))
    x[5, 3] = np.nan
    close(gjit(lambda a: jnp.sum(a, axis=0))(x), np.sum(x, axis=0), rtol=1e-12)
    close(gjit(lambda a: jnp.max(a, axis=0))(x), np.max(x, axis=0))
    close(gjit(lambda a: jnp.min(jnp.exp(a), axis=0))(x), np.min(np.exp(x), axis=0))
    close(gjit(lambda a: jnp.prod(1.0 + 0.01 * a, axis=0))(x), np.prod(1.0 + 0.01 * x, axis=0))
    close(gjit(lambda a: jnp.any(a > 2.0, axis=0))(x), np.any(x > 2.0, axis=0))
    close(gjit(lambda a: jnp.all(a > -3.0, axis=0))(x), np.all(x > -3.0, axis=0))
    ints = RNG.integers(-50, 50, size=(40, 3, 5)).astype(np.int32)
    close(gjit(lambda a: jnp.sum(a, axis=(0, 2)))(ints), np.sum(ints, axis=(0, 2)))
    close(gjit(lambda a: jnp.max(a, axis=1))(ints), np.max(ints, axis=1))
    f32 = RNG.normal(size=(3, 100, 4)).astype(np.float32)
    close(gjit(lambda a: jnp.sum(a * a, axis=1))(f32), np.sum(f32 * f32, axis=1), rtol=2e-6)
    # two reductions and an elementwise output in one nest; a short reduced range (no split)
    both = gjit(lambda a: (jnp.sum(a, axis=0), jnp.max(a, axis=0), jnp.tanh(a)))
    got = both(x)
    for g, w in zip(got, (np.sum(x, 0), np.max(x, 0), np.tanh(x)), strict=True):
        close(g, w, rtol=1e-12)
    short = RNG.normal(size=(3, 7))
    close(gjit(lambda a: jnp.sum(a, axis=0))(short), np.sum(short, axis=0), rtol=1e-12)


@check
def bias_gradient_reduction():
    """The MLP's bias gradient: a sum over the batch axis of a (batch, features) array."""
    w = RNG.normal(size=(6, 4))
    b = np.zeros(4)
    xs = RNG.normal(size=(96, 6))

    def loss(w, b, x):
        return jnp.sum(jnp.tanh(x @ w + b) ** 2)

    got = gjit(numbax.grad(loss, argnums=(0, 1)))(w, b, xs)
    want = numbax.jit(numbax.grad(loss, argnums=(0, 1)))(w, b, xs)
    for g, v in zip(got, want, strict=True):
        close(g, np.asarray(v), rtol=1e-10, atol=1e-12)
