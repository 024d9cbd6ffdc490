"""Updates written over a buffer the driver made (cpu/driver._spent_temps): a scatter or a
dynamic_update_slice whose operand a loop nest wrote, that nothing reads afterwards (nor any
view of it) and that is not returned, writes into that operand's buffer instead of a fresh
copy (the zeros an embedding gradient adds into). Anything still read keeps its values.
Truth: numpy (np.add.at, slice assignment) on the same arrays."""
from __future__ import annotations

import re

import numpy as np

import numbax
import numbax.numpy as jnp
from numbax import lax

from .kernel_text import modules

RNG = np.random.default_rng(31)


def _driver(f, *args) -> str:
    return modules(numbax.jit(f).lower(*args).as_text())[-1]


def _in_place(driver: str, kc_name: str) -> bool:
    """Whether the driver's call of `kc_name` writes into its first operand."""
    call = re.search(rf"kc\.{kc_name}\((t\d+), .*, (\w+)\)\]", driver)
    assert call, driver
    return call.group(1) == call.group(2)


def test_an_embedding_gradient_adds_into_its_own_zeros():
    table = RNG.normal(size=(300, 16)).astype(np.float32)
    ids = RNG.integers(0, 300, size=(40, 8))
    g = RNG.normal(size=(40, 16)).astype(np.float32)

    def loss(t):
        return jnp.sum(jnp.mean(t[ids], 1) * g)

    f = numbax.jit(numbax.grad(loss))
    assert _in_place(_driver(numbax.grad(loss), table), "scatter")
    want = np.zeros_like(table)
    np.add.at(want, ids.reshape(-1), np.repeat(g / 8, 8, axis=0))
    first = np.asarray(f(table))
    np.testing.assert_allclose(first, want, rtol=1e-5, atol=1e-6)
    kept = first.copy()
    second = np.asarray(f(table * 2))  # the pool's buffer is the first result: not reused
    np.testing.assert_array_equal(first, kept)
    np.testing.assert_allclose(second, want, rtol=1e-5, atol=1e-6)


def test_an_operand_read_afterwards_is_copied():
    x = RNG.normal(size=(50, 4))
    idx = RNG.integers(0, 50, size=(30, 1))
    u = RNG.normal(size=(30, 4))

    def f(x, u):
        z = x * 2
        y = z.at[idx[:, 0]].add(u)
        return y * z

    assert not _in_place(_driver(f, x, u), "scatter")
    z = x * 2
    y = z.copy()
    np.add.at(y, idx[:, 0], u)
    np.testing.assert_allclose(np.asarray(numbax.jit(f)(x, u)), y * z, rtol=1e-12)


def test_an_operand_returned_or_read_through_a_view_keeps_its_values():
    x = RNG.normal(size=(6, 50))
    u = RNG.normal(size=(6, 3))

    def returned(x, u):
        z = jnp.exp(x)
        return z, lax.dynamic_update_slice(z, u, (0, 7))

    def viewed(x, u):
        z = jnp.exp(x)
        v = z.reshape(300)  # a view of z's buffer, read after the update
        w = lax.dynamic_update_slice(z, u, (0, 7))
        return w, v[::7] + 1

    z = np.exp(x)
    w = z.copy()
    w[:, 7:10] = u
    for f, want in ((returned, (z, w)), (viewed, (w, z.reshape(300)[::7] + 1))):
        assert not _in_place(_driver(f, x, u), "dynamic_update_slice")
        for got, expect in zip(numbax.jit(f)(x, u), want, strict=True):
            np.testing.assert_allclose(np.asarray(got), expect, rtol=1e-12)


def test_a_dynamic_update_of_a_spent_temp_writes_over_it():
    x = RNG.normal(size=(6, 50))
    u = RNG.normal(size=(6, 3))

    def f(x, u, i):
        return lax.dynamic_update_slice(jnp.exp(x), u, (0, i)) + 1

    assert _in_place(_driver(f, x, u, 4), "dynamic_update_slice")
    for i in (4, 47, 60):  # the start clamped as JAX clamps it
        want = np.exp(x)
        start = min(i, 47)
        want[:, start:start + 3] = u
        np.testing.assert_allclose(np.asarray(numbax.jit(f)(x, u, i)), want + 1, rtol=1e-12)
