"""Pads inside compiled loops read element by element by the nest after them
(cpu/flow_runs.edge_pad), and loop bodies' updates of a constant fill at constant starts
written as pads (compiler/update_pads.py): a stencil's `zeros.at[1:-1].set(laplacian)` and
`jnp.pad(x, 1)`. Truth: the same steps in numpy."""
from __future__ import annotations

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax

from .kernel_text import modules

RNG = np.random.default_rng(3)
F32 = np.float32


def _flow_kernel(text: str) -> str:
    return next(m for m in modules(text) if "def kernel(a" in m and "for v" in m)


def _heat_numpy(u, steps):
    for _ in range(steps):
        lap = np.zeros_like(u)
        lap[1:-1] = u[2:] - F32(2) * u[1:-1] + u[:-2]
        u = u + F32(0.2) * lap
    return u


@pytest.mark.parametrize("form", ["at_set", "pad"])
def test_a_heat_equations_boundary_is_read_in_the_nest(form):
    def lap(u):
        inner = u[2:] - 2 * u[1:-1] + u[:-2]
        return jnp.zeros_like(u).at[1:-1].set(inner) if form == "at_set" else jnp.pad(inner, 1)

    f = numbax.jit(lambda u: lax.fori_loop(0, 40, lambda i, u: u + 0.2 * lap(u), u))
    u = RNG.uniform(0, 1, 300).astype(F32)
    np.testing.assert_allclose(np.asarray(f(u)), _heat_numpy(u, 40), rtol=1e-6, atol=1e-7)
    body = _flow_kernel(f.lower(u).as_text()).split("for v")[1:]
    text = "for v".join(body)
    assert "concatenate" not in text and ".copy()" not in text and " if 1 <= v" in text, text


def test_a_two_axis_pad_of_the_carry():
    def step(i, x):
        p = jnp.pad(x, ((1, 1), (2, 1)), constant_values=0.5)
        return (p[:-2, 2:-1] + p[2:, 2:-1] + p[1:-1, 1:-2] + p[1:-1, 3:] + x) / 5

    def numpy_step(x):
        p = np.pad(x, ((1, 1), (2, 1)), constant_values=0.5)
        return (p[:-2, 2:-1] + p[2:, 2:-1] + p[1:-1, 1:-2] + p[1:-1, 3:] + x) / 5

    x = RNG.standard_normal((17, 23))
    want = x
    for _ in range(6):
        want = numpy_step(want)
    got = numbax.jit(lambda x: lax.fori_loop(0, 6, step, x))(x)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)


def test_a_fill_the_loop_computes_and_starts_past_the_end():
    # the fill is a traced scalar (the step's mean); a start past the end is clamped, as the
    # update's own rule clamps it, so the block lands at the last place it fits
    def step(i, u):
        fill = jnp.mean(u)
        return lax.dynamic_update_slice(jnp.full_like(u, fill), u[:4] * 2.0, (7,)) + 0.5 * u

    def numpy_step(u):
        out = np.full_like(u, u.mean())
        out[6:10] = u[:4] * 2.0
        return out + 0.5 * u

    u = RNG.standard_normal(10)
    want = u
    for _ in range(5):
        want = numpy_step(want)
    got = numbax.jit(lambda u: lax.fori_loop(0, 5, step, u))(u)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)


@pytest.mark.parametrize("config", [((-1, 2, 0),), ((1, 1, 1),)])
def test_cropping_and_interior_pads_in_a_loop_keep_their_array_form(config):
    def step(i, u):
        p = lax.pad(u, 0.0, config)
        return u + p[:u.shape[0]] * 0.1

    u = RNG.standard_normal(9)
    want = u
    for _ in range(3):
        want = want + np.asarray(lax.pad(want, 0.0, config))[:9] * 0.1
    got = numbax.jit(lambda u: lax.fori_loop(0, 3, step, u))(u)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
