"""Checks of pooling on the GPU (cuda/kernels/windows.py): reduce_window's sum/max/min,
max pooling's derivatives (select_and_scatter_add, select_and_gather_add) and average
pooling's, NHWC, with overlapping windows, ties, padding and dilations. The truth is numpy
loops over explicit windows; where a sum's order matters, the eager implementation (whose order
the kernels keep, so results are bitwise equal). Every program must run on the device."""
from __future__ import annotations

import numpy as np

import numbax
import numbax.numpy as jnp
from numbax import lax
from tests.compiler.cuda.sim_checks import check, close, gjit

RNG = np.random.default_rng(18)


def _windows(x, window, strides, pads, fill):
    """(the padded operand, the output shape, [(output index, the window's slices)])."""
    xp = np.pad(x, pads, constant_values=fill)
    out = tuple((n - w) // s + 1 for n, w, s in zip(xp.shape, window, strides))
    return xp, out, [(o, tuple(slice(i * s, i * s + w) for i, s, w in zip(o, strides, window)))
                     for o in np.ndindex(*out)]


def _pool(x, window, strides, pads, fill, fn):
    xp, shape, wins = _windows(x, window, strides, pads, fill)
    out = np.empty(shape, x.dtype)
    for o, sl in wins:
        out[o] = fn(xp[sl])
    return out


def _crop(g, pads):
    return g[tuple(slice(lo, g.shape[d] - hi) for d, (lo, hi) in enumerate(pads))]


def _max_pool_vjp(x, ct, window, strides, pads):
    """Each window's cotangent at its first maximum (np.argmax: select_prim 'ge')."""
    xp, _, wins = _windows(x, window, strides, pads, -np.inf)
    g = np.zeros(xp.shape, ct.dtype)
    for o, sl in wins:
        view = g[sl]
        view.flat[np.argmax(xp[sl])] += ct[o]
    return _crop(g, pads)


def _on_device(f, *args):
    text = f.lower(*args).as_text()
    assert "rt.on_host(" not in text, text[-2000:]


def _bound(prim, params):
    return lambda a: prim.bind(a, **params)


def _max_pool(x, window, strides, padding):
    return lax.reduce_window(x, -jnp.inf, lax.max, window, strides, padding)


@check
def window_pooling_nhwc():
    """max/avg/sum pooling 2x2 stride 2 and 3x3 stride 2 SAME (overlapping windows, ties)."""
    x = RNG.integers(0, 3, (2, 5, 5, 2)).astype(np.float32)  # repeated values: ties
    x4 = x[:, :4, :4]
    w2, w3, s2 = (1, 2, 2, 1), (1, 3, 3, 1), (1, 2, 2, 1)
    same = ((0, 0), (1, 1), (1, 1), (0, 0))  # SAME for 5 -> 3 with a 3-window, stride 2
    cases = {
        "max 2x2": (lambda a: _max_pool(a, w2, s2, "VALID"), x4,
                    _pool(x4, w2, s2, ((0, 0),) * 4, -np.inf, np.max)),
        "avg 2x2": (lambda a: lax.reduce_window(a, 0.0, lax.add, w2, s2, "VALID") / 4, x4,
                    _pool(x4, w2, s2, ((0, 0),) * 4, 0, np.sum) / np.float32(4)),
        "max 3x3 SAME": (lambda a: _max_pool(a, w3, s2, "SAME"), x,
                         _pool(x, w3, s2, same, -np.inf, np.max)),
        "min 3x3 SAME": (lambda a: lax.reduce_window(a, jnp.inf, lax.min, w3, s2, "SAME"), x,
                         _pool(x, w3, s2, same, np.inf, np.min)),
        "sum 3x3 SAME": (lambda a: lax.reduce_window(a, 0.0, lax.add, w3, s2, "SAME"), x,
                         _pool(x, w3, s2, same, 0, np.sum)),
    }
    for name, (f, arg, want) in cases.items():
        fj = gjit(f)
        try:
            close(fj(arg), want, rtol=0, atol=0)  # small integers: every order is exact
            _on_device(fj, arg)
        except AssertionError as e:
            raise AssertionError(f"{name}: {e}") from None
    # float sums in another order than numpy's: bitwise the eager fold's
    y = RNG.normal(size=(1, 5, 5, 3)).astype(np.float32)
    f = lambda a: lax.reduce_window(a, 0.0, lax.add, w3, s2, "SAME")
    close(gjit(f)(y), np.asarray(f(y)), rtol=0, atol=0)
    close(gjit(f)(y), _pool(y, w3, s2, same, 0, np.sum), rtol=1e-6, atol=1e-6)


@check
def window_dilations_ints_and_nan():
    x = RNG.normal(size=(3, 6, 5))
    x[1, 2, 3] = np.nan  # np.maximum/np.minimum propagate it
    params = dict(window_dimensions=(2, 2, 1), window_strides=(1, 1, 2),
                  padding=((1, 0), (0, -1), (1, 1)), base_dilation=(2, 1, 1),
                  window_dilation=(1, 2, 1))
    for prim in (lax.reduce_window_max_p, lax.reduce_window_min_p, lax.reduce_window_sum_p):
        f = _bound(prim, params)
        close(gjit(f)(x), np.asarray(f(x)), rtol=0, atol=0)
        _on_device(gjit(f), x)
    xi = RNG.integers(-9, 9, (2, 6, 7)).astype(np.int32)
    f = lambda a: lax.reduce_window(a, np.int32(np.iinfo(np.int32).min), lax.max, (1, 3, 2),
                                    (1, 2, 2), "SAME")
    same = ((0, 0), (0, 1), (0, 1))  # SAME: 6 -> 3 and 7 -> 4
    close(gjit(f)(xi), _pool(xi, (1, 3, 2), (1, 2, 2), same, np.iinfo(np.int32).min, np.max),
          rtol=0, atol=0)
    _on_device(gjit(f), xi)
    z = (RNG.normal(size=(4, 5)) + 1j * RNG.normal(size=(4, 5))).astype(np.complex64)
    g = lambda a: lax.reduce_window(a, np.complex64(0), lax.add, (2, 2), (1, 2), "VALID")
    close(gjit(g)(z), np.asarray(g(z)), rtol=0, atol=0)


@check
def window_pooling_gradients():
    """jit(grad) of max pooling (select_and_scatter_add: bitwise the eager sums, ties to the
    first maximum) and of average pooling, and the jvp of max pooling (select_and_gather_add)."""
    x = RNG.integers(0, 3, (1, 5, 5, 2)).astype(np.float64)  # ties in overlapping windows
    w3, s2 = (1, 3, 3, 1), (1, 2, 2, 1)
    same = ((0, 0), (1, 1), (1, 1), (0, 0))
    ct = RNG.normal(size=(1, 3, 3, 2))

    def max_loss(a):
        return jnp.sum(_max_pool(a, w3, s2, "SAME") * ct)

    grad = gjit(numbax.grad(max_loss))
    close(grad(x), _max_pool_vjp(x, ct, w3, s2, same), rtol=1e-15, atol=0)
    close(grad(x), np.asarray(numbax.grad(max_loss)(x)), rtol=0, atol=0)
    _on_device(grad, x)
    x2 = RNG.normal(size=(2, 4, 4, 3)).astype(np.float32)
    ct2 = RNG.normal(size=(2, 2, 2, 3)).astype(np.float32)
    g2 = gjit(numbax.grad(lambda a: jnp.sum(_max_pool(a, (1, 2, 2, 1), s2, "VALID") * ct2)))
    close(g2(x2), _max_pool_vjp(x2, ct2, (1, 2, 2, 1), s2, ((0, 0),) * 4), rtol=0, atol=0)

    def avg_loss(a):
        return jnp.sum(lax.reduce_window(a, 0.0, lax.add, w3, s2, "SAME") / 9 * ct)

    want = np.zeros((1, 7, 7, 2))
    for o, sl in _windows(x, w3, s2, same, 0)[2]:
        want[sl] += ct[o] / 9
    close(gjit(numbax.grad(avg_loss))(x), _crop(want, same), rtol=1e-14, atol=1e-15)
    _on_device(gjit(numbax.grad(avg_loss)), x)

    t = RNG.normal(size=x.shape)
    jvp = gjit(lambda a, b: numbax.jvp(lambda u: _max_pool(u, w3, s2, "SAME"), (a,), (b,)))
    xp, shape, wins = _windows(x, w3, s2, same, -np.inf)
    tp = np.pad(t, same)
    want_t = np.empty(shape)
    for o, sl in wins:
        want_t[o] = tp[sl].flat[np.argmax(xp[sl])]
    primal, tangent = jvp(x, t)
    close(primal, _pool(x, w3, s2, same, -np.inf, np.max), rtol=0, atol=0)
    close(tangent, want_t, rtol=0, atol=0)
    _on_device(jvp, x, t)
