"""Scans that ask for a full unroll are unrolled into straight-line equations before fusion
(compiler/unroll.py): same numbers as the loop, one fused kernel for a polynomial."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax._src.compiler import unroll
from numbax._src.lax.control_flow.loops import scan_p

RNG = np.random.default_rng(0)


def _scans_left(f, *args) -> int:
    from numbax._src.compiler import pipeline
    jaxpr = pipeline.prepare(numbax.make_jaxpr(f)(*args).jaxpr)
    return sum(e.primitive is scan_p for e in jaxpr.eqns)


def _step_loop(c, x, y, reverse, unroll_):
    """A scan with two carries of different shapes, two scanned inputs, two stacked outputs
    (one of them 0-d per step)."""
    def step(carry, xy):
        h, s = carry
        xi, yi = xy
        h = jnp.tanh(h * 0.9 + xi @ c) + yi
        s = s + h.sum()
        return (h, s), (h * 2, s)
    return lax.scan(step, (jnp.zeros(c.shape[1]), 0.0), (x, y), reverse=reverse,
                    unroll=unroll_)


def _numpy_loop(c, x, y, reverse):
    h, s = np.zeros(c.shape[1]), 0.0
    hs, ss = [None] * len(x), [None] * len(x)
    for i in (reversed(range(len(x))) if reverse else range(len(x))):
        h = np.tanh(h * 0.9 + x[i] @ c) + y[i]
        s = s + h.sum()
        hs[i], ss[i] = h * 2, s
    return (h, s), (np.stack(hs), np.array(ss))


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("unroll_", [True, 5, 9])
def test_unrolled_scan_matches_a_python_loop(reverse, unroll_):
    c, x, y = RNG.normal(size=(3, 4)), RNG.normal(size=(5, 3)), RNG.normal(size=(5, 4))
    f = lambda c, x, y: _step_loop(c, x, y, reverse, unroll_)  # noqa: E731
    assert _scans_left(f, c, x, y) == 0
    got = numbax.jit(f)(c, x, y)
    want = _numpy_loop(c, x, y, reverse)
    for g, w in zip(numbax.tree_util.tree_leaves(got), numbax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-12, atol=1e-12)


def test_partial_unrolls_and_long_scans_stay_loops(monkeypatch):
    c, x, y = RNG.normal(size=(3, 4)), RNG.normal(size=(5, 3)), RNG.normal(size=(5, 4))
    assert _scans_left(lambda c, x, y: _step_loop(c, x, y, False, 2), c, x, y) == 1
    monkeypatch.setattr(unroll, "UNROLLED_EQNS_MAX", 8)
    f = lambda c, x, y: _step_loop(c, x, y, False, True)  # noqa: E731
    assert _scans_left(f, c, x, y) == 1
    got = numbax.jit(f)(c, x, y)
    np.testing.assert_allclose(np.asarray(got[1][0]), _numpy_loop(c, x, y, False)[1][0],
                               rtol=1e-12)


def test_unrolled_scan_under_grad_and_vmap():
    """The gradient (closed form of a linear recurrence) and a vmapped batch (a Python loop
    over its examples)."""
    a = np.array([0.5, -1.5, 2.0, 0.25])

    def run(a, x0):
        return lax.scan(lambda h, ai: (h * ai + 1.0, h), x0, a, unroll=True)[0]

    # h4 = x0 * prod(a) + sum_k prod(a[k+1:]); d/dx0 = prod(a)
    np.testing.assert_allclose(numbax.jit(numbax.grad(run, 1))(a, 0.3), np.prod(a), rtol=1e-12)
    d_a = numbax.jit(numbax.grad(run))(a, 0.3)
    eps = 1e-6
    fd = [(run(a + eps * np.eye(4)[i], 0.3) - run(a - eps * np.eye(4)[i], 0.3)) / (2 * eps)
          for i in range(4)]
    np.testing.assert_allclose(np.asarray(d_a), fd, rtol=1e-6)
    x0s = RNG.normal(size=7)
    got = numbax.jit(numbax.vmap(run, (None, 0)))(a, x0s)
    np.testing.assert_allclose(np.asarray(got), [run(a, x) for x in x0s], rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_polyval_is_one_fused_kernel(dtype):
    """jnp.polyval (a scan with unroll=16) of 8 coefficients: numpy's values, and one loop
    kernel where each unrolled step's coefficient read ended the steps' kernel."""
    c, x = RNG.normal(size=8).astype(dtype), RNG.normal(size=10_000).astype(dtype)
    text = numbax.jit(jnp.polyval).lower(c, x).as_text()
    driver = text.split("# driver")[-1]
    assert driver.count("_loop(") == 1
    np.testing.assert_allclose(np.asarray(numbax.jit(jnp.polyval)(c, x)), np.polyval(c, x),
                               rtol=1e-5 if dtype == np.float32 else 1e-12)
