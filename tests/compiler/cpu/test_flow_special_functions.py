"""Special functions inside compiled control flow: erf, erfc, erf_inv (random.normal), lgamma,
round and the complex parts have array forms (runtime sc.over_arrays), so a loop whose body
uses them is compiled (their scalar forms in its nests) rather than run step by step from the
host; the array forms are checked on their own. Truth: the same steps run eagerly, one by
one."""
from __future__ import annotations

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax

from .kernel_text import modules

RNG = np.random.default_rng(5)

STEPS = {
    "erf": lambda x: lax.erf(x) * 0.9 + 0.05,
    "erfc": lambda x: lax.erfc(x) - 0.5,
    "erf_inv": lambda x: lax.erf_inv(jnp.tanh(x) * 0.99) * 0.5,
    "lgamma": lambda x: lax.lgamma(jnp.abs(x) + 0.5) * 0.3,
    "round_even": lambda x: lax.round(x * 4.0, lax.RoundingMethod.TO_NEAREST_EVEN) * 0.24,
    "round_away": lambda x: lax.round(x * 4.0, lax.RoundingMethod.AWAY_FROM_ZERO) * 0.24,
    "complex_parts": lambda x: (lax.real(lax.conj(x * (1 + 2j))) * 0.3
                                + lax.imag(x * (0.5 - 1j)) * 0.2).astype(x.dtype),
}


def _loop(step, broadcast: bool):
    def run(x):
        def body(i, x):
            y = step(x[:1] if broadcast else x)  # a (1, n) slab, broadcast back
            return x * 0.5 + y
        return lax.fori_loop(0, 6, body, x)
    return run


def _eager(step, broadcast: bool, x):
    with numbax.disable_jit():
        for _ in range(6):
            x = np.asarray(x * 0.5 + step(x[:1] if broadcast else x))
    return x


@pytest.mark.parametrize("name", list(STEPS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("broadcast", [False, True])
def test_a_loop_with_a_special_function_is_compiled_and_gives_the_eager_steps(
        name, dtype, broadcast):
    x = RNG.standard_normal((7, 33)).astype(dtype)
    f = numbax.jit(_loop(STEPS[name], broadcast))
    text = f.lower(x).compile().as_text()
    assert any("for v" in m and "def kernel(a" in m for m in modules(text)), \
        "the loop ran from the host"
    got = np.asarray(f(x))
    want = _eager(STEPS[name], broadcast, x)
    assert got.dtype == want.dtype == dtype
    tol = 2e-6 if dtype == np.float32 else 1e-13  # (compiled erf/erfc/lgamma: an ulp or two)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_a_metropolis_scan_with_normal_and_uniform_draws_is_compiled():
    """random.normal's erf_inv kept such a scan on the host (docs/performance.md)."""
    def logp(x):
        return -0.5 * (x[..., 0] ** 2 + 4 * (x[..., 1] - x[..., 0] ** 2) ** 2)

    def chains(key, x0):
        def step(c, k):
            x, lp = c
            k1, k2 = numbax.random.split(k)
            prop = x + 0.3 * numbax.random.normal(k1, x.shape, x.dtype)
            lpp = logp(prop)
            accept = jnp.log(numbax.random.uniform(k2, lp.shape, lp.dtype)) < lpp - lp
            return (jnp.where(accept[:, None], prop, x), jnp.where(accept, lpp, lp)), x[:, 0]
        return lax.scan(step, (x0, logp(x0)), numbax.random.split(key, 20))
    key = numbax.random.PRNGKey(3)
    x0 = RNG.standard_normal((64, 2)).astype(np.float32)
    f = numbax.jit(chains)
    text = f.lower(key, x0).compile().as_text()
    assert any("for v" in m and "def kernel(a" in m for m in modules(text))
    got = f(key, x0)
    with numbax.disable_jit():
        want = chains(key, x0)
    for g, w in zip(numbax.tree_util.tree_leaves(got), numbax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_array_forms_give_the_eager_values_on_any_layout(dtype):
    """The array forms (what a loop body runs for such an equation outside a nest) apply the
    scalar form to every element of an array of any layout, in its dtype."""
    from numbax._src.compiler.cpu.runtime import fastmath_erf as fe
    from numbax._src.compiler.cpu.runtime import scalars as sc
    from numbax._src.compiler.cpu.runtime import xla_erf_inv as xe

    x = RNG.uniform(-3, 3, (9, 14)).astype(dtype).T  # a transposed (F-ordered) view
    x[0, :3] = [np.nan, 0.0, -0.0]
    wide = dtype == np.float64
    forms = {
        lax.erf: fe.erf_f64_array if wide else fe.erf_f32_array,
        lax.erfc: sc.erfc_array if wide else fe.erfc_f32_array,
        lambda v: lax.erf_inv(v / 3.5): lambda v: (fe.erf_inv_f64_array if wide
                                                   else xe.erf_inv_f32_array)(v / dtype(3.5)),
        lambda v: lax.lgamma(np.abs(v) + 0.25): lambda v: sc.lgamma_array(np.abs(v) + dtype(0.25)),
        lambda v: lax.round(v * 2, lax.RoundingMethod.AWAY_FROM_ZERO):
            lambda v: sc.round_away_array(v * dtype(2)),
    }
    tol = 4e-7 if dtype == np.float32 else 1e-15
    for eager, array_form in forms.items():
        got = array_form(x)
        want = np.asarray(eager(x))
        assert got.dtype == dtype and got.shape == x.shape
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
