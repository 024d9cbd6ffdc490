"""Shared checks for lax primitive tests: finite differences, transposition, vmap vs loop."""
import numpy as np

import numbax

RNG = np.random.default_rng(0)


def fd_jvp(f, x, v, eps=1e-6):
    hi = np.asarray(f(x + eps * v), dtype=np.float64)
    lo = np.asarray(f(x - eps * v), dtype=np.float64)
    return (hi - lo) / (2 * eps)


def fd_grad(f, x, eps=1e-6):
    """The gradient of scalar f at x by central differences, one entry at a time, in float64."""
    x = np.asarray(x, dtype=np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (float(f(x + d)) - float(f(x - d))) / (2 * eps)
    return g


def check_ad(f, x, rtol=1e-5, atol=1e-7):
    """jvp vs central differences, and <vjp(u), v> == <u, jvp(v)>, in float64."""
    x = np.asarray(x, dtype=np.float64)
    v = RNG.standard_normal(x.shape)
    y, t = numbax.jvp(f, (x,), (v,))
    np.testing.assert_allclose(np.asarray(t), fd_jvp(f, x, v), rtol=rtol, atol=atol)
    y2, pull = numbax.vjp(f, x)
    np.testing.assert_allclose(np.asarray(y2), np.asarray(y))
    u = RNG.standard_normal(np.shape(y))
    (g,) = pull(u)
    assert np.asarray(g).shape == x.shape
    np.testing.assert_allclose(np.sum(np.asarray(g) * v), np.sum(u * np.asarray(t)),
                               rtol=1e-9, atol=1e-9)


def check_vmap(f, args, in_axes):
    """vmap(f, in_axes) against a Python loop over the mapped axis."""
    sizes = {np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None}
    (n,) = sizes
    out = np.asarray(numbax.vmap(f, in_axes=in_axes)(*args))
    expected = np.stack([
        np.asarray(f(*[a if ax is None else np.take(a, i, axis=ax)
                       for a, ax in zip(args, in_axes)]))
        for i in range(n)
    ])
    np.testing.assert_allclose(out, expected)
