"""Row groups keep exp/log-heavy values for their last pass in an output row (_stash_plan):
softmax computes exp once. Sources are checked for it; values against numpy."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp

from .kernel_text import called

RNG = np.random.default_rng(7)


def _np_softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def _kernel_source(f, *args) -> str:
    """The kernel functions the driver calls."""
    return "\n".join(called(numbax.jit(f).lower(*args).as_text()))


def test_softmax_computes_exp_once():
    x = RNG.normal(size=(40, 30))
    src = _kernel_source(lambda v: numbax.nn.softmax(v, axis=-1), x)
    assert src.count("fm.exp_f64(") == 1, src
    assert "# kept for the last pass" in src


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_softmax_values(dtype):
    x = RNG.normal(size=(64, 33)).astype(dtype) * 5
    x[3, 7] = np.nan  # a NaN row stays NaN
    x[5] = -np.inf  # an all -inf row gives NaN, as numpy
    x[6, 2] = np.inf
    f = numbax.jit(lambda v: numbax.nn.softmax(v, axis=-1))
    with np.errstate(invalid="ignore"):
        want = _np_softmax(x.astype(np.float64))
    tol = 1e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(np.asarray(f(x)), want.astype(dtype), rtol=tol, atol=tol)


def test_two_outputs_and_a_mismatched_dtype():
    """exp stashed in the float64 output; a float32 output of the same pass cannot carry
    it; the other output and the per-row sum are right too."""
    x = RNG.normal(size=(20, 50))

    def f(v):
        e = jnp.exp(v - jnp.max(v, axis=1, keepdims=True))
        s = jnp.sum(e, axis=1, keepdims=True)
        return e / s, (jnp.tanh(e) * s).astype(jnp.float32), s[:, 0]

    got = numbax.jit(f)(x)
    e = np.exp(x - x.max(1, keepdims=True))
    s = e.sum(1, keepdims=True)
    for g, w in zip(got, (e / s, (np.tanh(e) * s).astype(np.float32), s[:, 0]), strict=True):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-6 if w.dtype == np.float32
                                   else 1e-13)


def test_softmax_over_leading_axis_and_3d():
    x = RNG.normal(size=(6, 5, 40))
    for axis in (-1, 1, 0):
        got = numbax.jit(lambda v, a=axis: numbax.nn.softmax(v, axis=a))(x)
        np.testing.assert_allclose(np.asarray(got), _np_softmax(x, axis), rtol=1e-13)
