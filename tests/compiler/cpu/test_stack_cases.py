"""Stacks whose cases are computed in the stack's own loop (compiler/compose_maps.py,
`_stack_cases`): the cheap per-row work a stack along a short trailing axis gathers (cross
products, a Lorenz derivative, an RK4 step, a rotation matrix from a quaternion) runs in the
loop over the stacked array, one kernel where each column was an array of its own; work too
costly to repeat (sin, cos) stays in its own loop. Truth: numpy in float64, and numbax's own
eager run bit for bit (the same operations in the same order, element by element)."""
from __future__ import annotations

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp

from .kernel_text import modules

RNG = np.random.default_rng(29)


def _kernels(f, *args) -> list[str]:
    return modules(numbax.jit(f).lower(*args).as_text())[:-1]


def _cross(np_, a, b):
    # written out, so numpy and numbax run the same operations (np.cross may order them
    # differently)
    return np_.stack([a[:, 1] * b[:, 2] - a[:, 2] * b[:, 1],
                      a[:, 2] * b[:, 0] - a[:, 0] * b[:, 2],
                      a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0]], 1)


def _rotate(np_, q, x):
    w, u = q[:, :1], q[:, 1:]
    t = 2 * _cross(np_, u, x)
    return x + w * t + _cross(np_, u, t)


def _lorenz(np_, y):
    x, yy, z = y[:, 0], y[:, 1], y[:, 2]
    return np_.stack([10 * (yy - x), x * (28 - z) - yy, x * yy - 8 / 3 * z], 1)


def _rk4(np_, y, h=0.01):
    k1 = _lorenz(np_, y)
    k2 = _lorenz(np_, y + h / 2 * k1)
    k3 = _lorenz(np_, y + h / 2 * k2)
    k4 = _lorenz(np_, y + h * k3)
    return y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def _matrix_of(np_, q):
    w, x, y, z = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    return np_.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w),
                      2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w),
                      2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
                     -1).reshape(-1, 3, 3)


def _check(f, args, rtol):
    got = numbax.jit(lambda *a: f(jnp, *a))(*args)
    with numbax.disable_jit():
        eager = f(jnp, *args)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(eager))
    want = f(np, *(np.asarray(a, np.float64) for a in args))
    np.testing.assert_allclose(np.asarray(got), want, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rows", [1, 2, 63, 1000])
def test_a_quaternion_rotation_is_one_kernel(dtype, rows):
    """Two cross products, the first read whole and by columns: one loop over the (n, 3)
    result (it was four kernels over (n,) and (n, 3) arrays). (One row: its size-1 axis
    counts as broadcast, as in every rewrite, so that sizes never change the source.)"""
    q = RNG.standard_normal((rows, 4)).astype(dtype)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    x = RNG.standard_normal((rows, 3)).astype(dtype)
    if rows > 1:
        assert len(_kernels(lambda q, x: _rotate(jnp, q, x), q, x)) == 1
    _check(_rotate, (q, x), 1e-5 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_an_rk4_step_is_one_kernel(dtype):
    """Four stacked stages, each stage's columns read from the one before: one kernel."""
    y = RNG.standard_normal((257, 3)).astype(dtype)
    assert len(_kernels(lambda y: _rk4(jnp, y), y)) == 1
    assert len(_kernels(lambda y: _lorenz(jnp, y), y)) == 1
    _check(_rk4, (y,), 1e-5 if dtype == np.float32 else 1e-12)
    _check(_lorenz, (y,), 1e-5 if dtype == np.float32 else 1e-12)


def test_nine_columns_stacked_are_a_select_not_a_copy():
    """A stack of 9 along the last axis (more than STACK_MAX, at most ROW_PAD_MAX): a select
    in the loop that computes the columns, where it was a strided copy of 9 arrays."""
    q = RNG.standard_normal((500, 4))
    text = numbax.jit(lambda q: _matrix_of(jnp, q)).lower(q).as_text()
    assert "kc.concatenate(" not in text and len(modules(text)) == 2
    _check(_matrix_of, (q,), 1e-12)


def test_a_stack_read_whole_and_by_columns_gives_both():
    """A stack's columns read by later work and the stack itself returned: both right."""
    y = RNG.standard_normal((300, 3))

    def f(np_, y):
        t = 2 * _lorenz(np_, y)
        return t, t[:, 0] * t[:, 2] + 1, np_.exp(t[:, 1])

    got = numbax.jit(lambda y: f(jnp, y))(y)
    for g, w in zip(got, f(np, y), strict=True):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-12)


def test_costly_work_in_a_case_stays_in_its_own_loop():
    """Spherical to cartesian coordinates: sin and cos are not repeated in the stack's loop;
    the (n,) loop computing them keeps reading its rows whole."""
    y = RNG.standard_normal((1000, 3))

    def f(np_, y):
        r, t, p = y[:, 0], y[:, 1], y[:, 2]
        return np_.stack([r * np_.sin(t) * np_.cos(p), r * np_.sin(t) * np_.sin(p),
                          r * np_.cos(t)], -1)

    kernels = _kernels(lambda y: f(jnp, y), y)
    stack = [k for k in kernels if " select_n " in k]
    sines = [k for k in kernels if " sin " in k]
    assert len(stack) == len(sines) == 1 and " sin " not in stack[0]
    assert " mul " in sines[0]  # the products too: the (n,) loop reads its rows whole
    _check(f, (y,), 1e-12)


def test_a_stack_along_the_first_axis_keeps_its_cases_apart():
    """A stack along a long axis: not a short tail, so its cases stay arrays of their own."""
    y = RNG.standard_normal((3, 4000))

    def f(np_, y):
        return np_.stack([y[0] * y[1], y[1] - y[2]], 1).sum(1)

    _check(f, (y,), 1e-12)
