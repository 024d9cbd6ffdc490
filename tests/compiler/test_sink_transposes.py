"""Transposes sunk through the work that makes their operand (compiler/sink_transposes.py):
numpy's numbers, and the big transpose gone from the driver where only small ones are left to
move; kept where sinking would move as much (an input) or do work twice (a value read
elsewhere too)."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax

RNG = np.random.default_rng(11)


def _driver(fn, *args):
    return numbax.jit(fn).lower(*args).as_text().split("def driver")[1]


def _transposed_shapes(driver: str) -> list[str]:
    """The result types of the transposes a driver still runs (from its comment lines)."""
    return [ln.split("=")[0].split(":")[1].strip() for ln in driver.splitlines()
            if ln.lstrip().startswith("#") and "= transpose[" in ln]


def test_vmapped_jacfwd_writes_its_result_in_order():
    x = RNG.standard_normal((500, 3))

    def f(v):
        return jnp.sin(v) * v[::-1] + v.sum()

    jac = numbax.vmap(numbax.jacfwd(f))
    want = np.empty((500, 3, 3))
    for n, v in enumerate(x):
        want[n] = np.diag(np.cos(v) * v[::-1]) + np.sin(v)[:, None] * np.eye(3)[::-1] + 1.0
    np.testing.assert_allclose(np.asarray(numbax.jit(jac)(x)), want, rtol=1e-12)
    assert set(_transposed_shapes(_driver(jac, x))) == {"f64[3,3]"}  # only small leaves move


CASES = {
    # (function of x (40, 6) and w (5, 6), and the same in numpy): results of (40, 5, 6)
    # elements made from smaller operands, transposed
    "elementwise over broadcasts": (
        lambda x, w: jnp.transpose(jnp.exp(x)[:, None] * w + jnp.arange(6.0), (0, 2, 1)),
        lambda x, w: np.transpose(np.exp(x)[:, None] * w + np.arange(6.0), (0, 2, 1))),
    "iota and select": (
        lambda x, w: jnp.transpose(jnp.where(lax.broadcasted_iota(jnp.int32, (40, 5, 6), 1) > 2,
                                             x[:, None], -w), (2, 0, 1)),
        lambda x, w: np.transpose(np.where(np.arange(5)[:, None] > 2, x[:, None], -w),
                                  (2, 0, 1))),
    "transpose of a transpose": (
        lambda x, w: jnp.transpose(jnp.transpose(jnp.tanh(x[:, None] + w), (1, 0, 2)) * 2.0,
                                   (2, 1, 0)),
        lambda x, w: np.transpose(np.transpose(np.tanh(x[:, None] + w), (1, 0, 2)) * 2.0,
                                  (2, 1, 0))),
    "slices": (
        lambda x, w: jnp.transpose(x[:, None, ::2] - w[1:, ::2], (0, 2, 1)),
        lambda x, w: np.transpose(x[:, None, ::2] - w[1:, ::2], (0, 2, 1))),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_sunk_transposes_match_numpy(case):
    fn, want = CASES[case]
    x, w = RNG.standard_normal((40, 6)), RNG.standard_normal((5, 6))
    np.testing.assert_allclose(np.asarray(numbax.jit(fn)(x, w)), want(x, w), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(fn(x, w)), want(x, w), rtol=1e-13)
    moved = _transposed_shapes(_driver(fn, x, w))  # only x's or w's transposes, if any
    assert set(moved) <= {"f64[6,40]", "f64[6,5]"}, moved


def test_a_transpose_of_an_input_or_of_shared_work_stays():
    x = RNG.standard_normal((64, 48))

    def f(x):
        y = jnp.sin(x)  # read by the transpose and by the sum
        return jnp.transpose(x) + 1.0, jnp.transpose(y) * 2.0, jnp.sum(y)

    got = numbax.jit(f)(x)
    want = (x.T + 1.0, np.sin(x).T * 2.0, np.sin(x).sum())
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-13)
    assert _transposed_shapes(_driver(f, x)) == ["f64[48,64]", "f64[48,64]"]


def test_a_transpose_in_a_scan_body():
    xs = RNG.standard_normal((7, 4, 3))
    w = RNG.standard_normal((3, 4))

    def f(xs, w):
        def step(c, x):
            y = jnp.transpose(jnp.cos(x) * 3.0) + c
            return y, y.sum()
        return lax.scan(step, w, xs)

    carry, ys = numbax.jit(f)(xs, w)
    c, want_ys = w, []
    for x in xs:
        c = np.cos(x).T * 3.0 + c
        want_ys.append(c.sum())
    np.testing.assert_allclose(np.asarray(carry), c, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(ys), want_ys, rtol=1e-12)
