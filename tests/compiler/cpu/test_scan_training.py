"""A recurrent network trained through scan: its gradient runs as two compiled loops (the
forward scan and its transpose), stacks no loop-invariant residual, and matches finite
differences of a numpy loop."""
import re

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax
from tests.lax._checks import fd_grad

T, B, D, H = 6, 3, 2, 4  # steps, batch, input width, hidden width (distinct: shapes tell apart)


def _lstm_loss(p, xs, y):
    def cell(carry, x):
        h, c = carry
        z = x @ p["wx"] + h @ p["wh"] + p["b"]
        i, f, g, o = jnp.split(z, 4, -1)  # its transpose pads each gate's gradient
        c = numbax.nn.sigmoid(f) * c + numbax.nn.sigmoid(i) * jnp.tanh(g)
        h = numbax.nn.sigmoid(o) * jnp.tanh(c)
        return (h, c), h

    zeros = jnp.zeros((xs.shape[1], H))
    (h, _), hs = lax.scan(cell, (zeros, zeros), xs)
    return jnp.mean((h - y) ** 2) + 0.1 * jnp.mean(hs ** 2)


def _lstm_loss_numpy(p, xs, y):
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    h = c = np.zeros((xs.shape[1], H))
    total = 0.0
    for x in xs:
        i, f, g, o = np.split(x @ p["wx"] + h @ p["wh"] + p["b"], 4, -1)
        c = sig(f) * c + sig(i) * np.tanh(g)
        h = sig(o) * np.tanh(c)
        total += np.mean(h ** 2)
    return np.mean((h - y) ** 2) + 0.1 * total / len(xs)


def _params(rng):
    return {"wx": rng.normal(size=(D, 4 * H)) * 0.5, "wh": rng.normal(size=(H, 4 * H)) * 0.5,
            "b": rng.normal(size=4 * H) * 0.1}


def test_lstm_gradient_is_two_compiled_loops_matching_finite_differences():
    rng = np.random.default_rng(0)
    p, xs, y = _params(rng), rng.normal(size=(T, B, D)), rng.normal(size=(B, H))
    grad = numbax.jit(numbax.grad(_lstm_loss, (0, 1)))
    driver = grad.lower(p, xs, y).as_text().split("def driver")[1]
    # two compiled loops (called as such, or through blas_call when they run on threads)
    assert len(re.findall(r"\bk\d+_flow\b", driver)) == 2 and "h0(" not in driver
    gp, gx = grad(p, xs, y)
    for name in p:
        want = fd_grad(lambda v, name=name: _lstm_loss_numpy({**p, name: v}, xs, y), p[name])
        np.testing.assert_allclose(np.asarray(gp[name]), want, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(np.asarray(gx), fd_grad(lambda v: _lstm_loss_numpy(p, v, y), xs),
                               rtol=1e-6, atol=1e-9)
    eager = numbax.grad(_lstm_loss, (0, 1))(p, xs, y)  # op by op: the same numbers
    for got, want in zip(numbax.tree_util.tree_leaves((gp, gx)),
                         numbax.tree_util.tree_leaves(eager), strict=True):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12, atol=1e-15)


def test_scan_residuals_forward_weights_and_inputs_instead_of_stacking_them():
    """As JAX's partial evaluation: a residual that is a loop-invariant operand (the weights)
    goes to the backward loop as a const, one that is an xs operand as that operand, and a
    residual needed twice is stacked once."""
    rng = np.random.default_rng(1)
    p, xs, y = _params(rng), rng.normal(size=(T, B, D)), rng.normal(size=(B, H))
    jaxpr = numbax.make_jaxpr(numbax.grad(_lstm_loss))(p, xs, y).jaxpr
    scans = [e for e in jaxpr.eqns if e.primitive.name == "scan"]
    assert len(scans) == 2
    stacked = [v.aval.shape for v in scans[0].outvars[2:]]  # after the carry (h, c)
    for w in (p["wx"], p["wh"]):
        assert (T, *w.shape) not in stacked
    assert (T, B, D) not in stacked  # the inputs themselves are the residual
    body = scans[0].params["jaxpr"].jaxpr
    ys = body.outvars[scans[0].params["num_carry"]:]
    assert len(set(map(id, ys))) == len(ys)  # each residual stacked once


@pytest.mark.parametrize("config", [((0, 0, 0), (2, 3, 0)), ((1, -1, 0), (-2, 2, 0)),
                                    ((0, 0, 0), (1, 0, 1))], ids=["edges", "crop", "interior"])
def test_pad_in_a_loop_body_matches_numpy(config):
    """lax.pad inside a compiled scan: its array form, or for one short padded axis (the
    interior case, 8 columns) a select of the operand's columns and the fill
    (compose_maps._pad_pieces); no host loop either way, and the same numbers."""
    x0 = np.arange(12.0).reshape(3, 4)

    def step(c, s):
        padded = lax.pad(c * s, -1.0, config)
        return c + s, padded.sum() + padded[0, 0]

    f = numbax.jit(lambda c, xs: lax.scan(step, c, xs)[1])
    xs = np.array([0.5, 2.0, -1.0])
    driver = f.lower(x0, xs).as_text().split("def driver")[1]
    assert "h0(" not in driver
    want, c = [], x0
    for s in xs:
        v = c * s
        rows, cols = config
        full = np.full((3 + max(rows[0], 0) + max(rows[1], 0),
                        4 + max(cols[0], 0) + max(cols[1], 0) + 3 * cols[2]), -1.0)
        full[max(rows[0], 0):max(rows[0], 0) + 3, max(cols[0], 0)::cols[2] + 1][:, :4] = v
        full = full[max(-rows[0], 0):full.shape[0] - max(-rows[1], 0),
                    max(-cols[0], 0):full.shape[1] - max(-cols[1], 0)]
        want.append(full.sum() + full[0, 0])
        c = c + s
    np.testing.assert_allclose(np.asarray(f(x0, xs)), want, rtol=1e-14)


def test_residuals_computed_from_weights_alone_are_hoisted_out_of_the_loop():
    """`h @ w.T` in a body: its backward needs w.T, which depends on no carry or input, so it
    is computed once before the loops (as JAX hoists it), not stacked per step."""
    rng = np.random.default_rng(2)
    w, xs = rng.normal(size=(H, H)) * 0.5, rng.normal(size=(T, B, H))

    def loss(w, xs):
        def cell(h, x):
            h = jnp.tanh(h @ (w * 2.0).T + x)
            return h, None
        return jnp.sum(lax.scan(cell, jnp.ones((B, H)), xs)[0] ** 2)

    def loss_numpy(w, xs):
        h = np.ones((B, H))
        for x in xs:
            h = np.tanh(h @ (w * 2.0).T + x)
        return np.sum(h ** 2)

    jaxpr = numbax.make_jaxpr(numbax.grad(loss))(w, xs).jaxpr
    forward = [e for e in jaxpr.eqns if e.primitive.name == "scan"][0]
    assert (T, H, H) not in [v.aval.shape for v in forward.outvars]
    g = numbax.jit(numbax.grad(loss))(w, xs)
    np.testing.assert_allclose(np.asarray(g), fd_grad(lambda v: loss_numpy(v, xs), w),
                               rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(np.asarray(numbax.grad(loss)(w, xs)), np.asarray(g),
                               rtol=1e-12)
