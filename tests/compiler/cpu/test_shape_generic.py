"""Kernels generic in their sizes: a jitted function called with a new shape of the same
structure retraces (cheap) but compiles nothing with Numba; values match numpy at every shape."""
import numpy as np
import pytest
from numba.core import event

import numbax
import numbax.numpy as jnp

from .kernel_text import called, modules

RNG = np.random.default_rng(11)


def _numba_compiles(fn, *args):
    """fn(*args) and the number of Numba compilations it started."""
    with event.install_recorder("numba:compile") as rec:
        out = fn(*args)
    return out, sum(1 for _, e in rec.buffer if e.is_start)


def _loss(w, b, x, y):
    h = jnp.tanh(x @ w + b)
    logp = h - numbax.nn.logsumexp(h, axis=1, keepdims=True)
    return -jnp.mean(jnp.sum(logp * y, axis=1))  # mean: a 1/batch literal in the jaxpr


def _np_grads(w, b, x, y):
    h = np.tanh(x @ w + b)
    z = h - h.max(1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    dh = (p * y.sum(1, keepdims=True) - y) / len(x)  # d(-mean(sum(logp * y)))/dh
    dpre = dh * (1 - h * h)
    return x.T @ dpre, dpre.sum(0)


def test_new_batch_sizes_compile_nothing():
    g = numbax.jit(numbax.grad(_loss, argnums=(0, 1)))
    w = RNG.normal(size=(6, 4))
    b = RNG.normal(size=4)
    sources = set()
    for j, n in enumerate((5, 9, 17, 3, 64)):
        x = RNG.normal(size=(n, 6))
        y = np.eye(4)[RNG.integers(0, 4, n)]
        (gw, gb), compiles = _numba_compiles(g, w, b, x, y)
        if j:  # the first shape compiled the kernels (or found them on disk); later ones reuse
            assert compiles == 0, n
        sources.add(tuple(modules(g.lower(w, b, x, y).as_text())[:-1]))
        want_w, want_b = _np_grads(w, b, x, y)
        np.testing.assert_allclose(gw, want_w, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(gb, want_b, rtol=1e-10, atol=1e-12)
    assert len(sources) == 1  # one set of kernel modules serves every batch size


@pytest.mark.parametrize("shapes", [[(70,), (1000,), (4099,)], [(3, 5), (40, 2), (1, 9)]],
                         ids=["1d", "2d"])
def test_reductions_and_iota_reuse_their_kernels(shapes):
    def f(x):
        pos = jnp.arange(x.shape[-1], dtype=x.dtype)  # iota fused into the nest
        return numbax.nn.logsumexp(x * 0.5 + pos), jnp.max(x + pos, axis=-1), x * pos + 1.25

    jf = numbax.jit(f)
    texts = []
    for j, shape in enumerate(shapes):
        x = RNG.normal(size=shape)
        out, compiles = _numba_compiles(jf, x)
        if j:
            assert compiles == 0, shape
        pos = np.arange(shape[-1], dtype=x.dtype)
        z = x * 0.5 + pos
        want = (np.log(np.exp(z - z.max()).sum()) + z.max(), np.max(x + pos, axis=-1),
                x * pos + 1.25)
        for got, w in zip(out, want, strict=True):
            np.testing.assert_allclose(got, w, rtol=1e-12)
        texts.append(jf.lower(x).as_text())
    kernels = [modules(t)[:-1] for t in texts]
    assert all(k == kernels[0] for k in kernels)  # the same module sources at every shape


def test_row_width_class_compiles_one_more_variant_once():
    """An integer max over rows narrower than LANES_MIN_WIDTH runs the one-lane `_narrow`
    twin; the first wide row compiles the lanes variant of the same module, once. (Float
    max/min need no lanes: llvm.maximum vectorises.)"""
    jf = numbax.jit(lambda x: jnp.max(x * 2, axis=-1))
    texts, counts = [], []
    for shape in [(5, 10), (9, 33), (5, 200), (7, 1000)]:
        x = RNG.integers(-1000, 1000, size=shape)
        out, compiles = _numba_compiles(jf, x)
        counts.append(compiles)
        np.testing.assert_array_equal(out, np.max(x * 2, axis=-1))
        texts.append(jf.lower(x).as_text())
    assert counts[1] == 0 and counts[3] == 0  # same class as the shape before it
    assert counts[2] <= 1  # the lanes variant (0 when an earlier test compiled it)
    assert "kernel_serial_narrow as k0_loop" in texts[0]
    assert "kernel_serial as k0_loop" in texts[2]
    assert len({tuple(modules(t)[:-1]) for t in texts}) == 1  # one module for every width


def test_prange_variant_is_chosen_by_size_from_one_module():
    f = numbax.jit(lambda x: jnp.tanh(x) * 2.0 + 1.0)
    small, big = np.ones((4, 8)), np.ones((1024, 1024))  # under / over PRANGE_MIN elements
    [k_small] = called(f.lower(small).as_text())
    [k_big] = called(f.lower(big).as_text())
    assert "def kernel_serial(" in k_small and "prange" not in k_small
    assert "def kernel(" in k_big and "prange(" in k_big
    assert modules(f.lower(small).as_text())[0] == modules(f.lower(big).as_text())[0]
    np.testing.assert_allclose(f(big), np.tanh(big) * 2.0 + 1.0)


def test_size_one_axes_are_part_of_the_structure():
    """A broadcast from a size-1 axis reads element 0: its own kernel, still exact."""
    f = numbax.jit(lambda x, y: x + y)
    for xs, ys in (((3, 1), (3, 4)), ((3, 4), (3, 4)), ((1, 4), (5, 4))):
        x, y = RNG.normal(size=xs), RNG.normal(size=ys)
        np.testing.assert_array_equal(f(x, y), x + y)


def test_one_update_module_serves_every_parameter_of_every_rank():
    """SGD over a matrix, a vector, a 3-d array and two same-shape biases: every update is the
    same flat elementwise loop, so the program holds one kernel module, compiled once, and a
    second program of other ranks and shapes compiles nothing."""
    def sgd(params, grads):
        return [p - 0.05 * g for p, g in zip(params, grads, strict=True)]

    shapes = [(7, 5), (5,), (5,), (2, 3, 4), (9,)]
    params = [RNG.normal(size=s).astype(np.float32) for s in shapes]
    grads = [RNG.normal(size=s).astype(np.float32) for s in shapes]
    step = numbax.jit(sgd)
    out, first = _numba_compiles(step, params, grads)
    for got, p, g in zip(out, params, grads, strict=True):
        np.testing.assert_allclose(got, p - np.float32(0.05) * g, rtol=1e-6)
    kernels = modules(step.lower(params, grads).as_text())[:-1]
    assert len(set(kernels)) == 1, kernels  # the two biases are two calls, not a second module
    assert first <= 1  # one compile (none when an earlier test put it on disk)
    other = [RNG.normal(size=s).astype(np.float32) for s in [(4, 4, 4, 2), (11,)]]
    out, again = _numba_compiles(numbax.jit(sgd), other, other)
    assert again == 0
    for got, p in zip(out, other, strict=True):
        np.testing.assert_allclose(got, p - np.float32(0.05) * p, rtol=1e-6)
