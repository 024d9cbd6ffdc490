"""numbax.experimental.ode.odeint: values against scipy.integrate.solve_ivp and closed forms,
gradients (the adjoint method) against finite differences, everything against JAX's recorded
outputs (tests/data/ode_jax_reference.json: the same algorithm, so agreement is close)."""
from __future__ import annotations

import json
import pathlib
from types import SimpleNamespace

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import numbax
import numbax.numpy as jnp
from numbax.experimental.ode import odeint
from tests.data import ode_programs
from tests.data.ode_programs import LV_PARAMS, PROGRAMS, TS
from tests.data.reference_tree import assert_matches

REFERENCE = json.loads(
    (pathlib.Path(__file__).parent / "data" / "ode_jax_reference.json").read_text())
MODULES = SimpleNamespace(jax=numbax, jnp=jnp, odeint=odeint)



# predator_prey and transformations, the longest (75 s on the 2-core Zen 3 VM), only outside
# CI's fast path (test_gradients_match_finite_differences keeps grad of odeint there)
@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.slow) if n in ("predator_prey", "transformations") else n
    for n in sorted(PROGRAMS)])
def test_program_matches_jax(name):
    # the same steps as JAX's; sums of a Runge-Kutta stage round differently (numbax sums
    # only the stages it has, JAX a dot with zero rows), so results agree to ~1e-9
    assert_matches(PROGRAMS[name](MODULES), REFERENCE[name], name, rtol=1e-8, atol=1e-12)


def test_values_match_scipy_and_closed_forms():
    ys = odeint(ode_programs.decay, 1.5, TS, 0.7)
    np.testing.assert_allclose(ys, 1.5 * np.exp(-0.7 * TS), rtol=1e-7)
    y0 = np.array([10.0, 5.0])

    def lv(t, y):
        return ode_programs.lotka_volterra(y, t, LV_PARAMS)

    ref = solve_ivp(lv, (TS[0], TS[-1]), y0, t_eval=TS, rtol=1e-12, atol=1e-12, method="DOP853")
    ys = odeint(ode_programs.lotka_volterra, y0, TS, LV_PARAMS)
    np.testing.assert_allclose(ys, ref.y.T, rtol=1e-6)


def test_gradients_match_finite_differences():
    def loss(params, y0):
        return jnp.sum(odeint(ode_programs.lotka_volterra, y0, TS, params)[-1])

    y0 = np.array([10.0, 5.0])
    g_params, g_y0 = numbax.grad(loss, argnums=(0, 1))(LV_PARAMS, y0)
    h = 1e-5
    for i in range(4):
        e = np.eye(4)[i] * h
        fd = (loss(LV_PARAMS + e, y0) - loss(LV_PARAMS - e, y0)) / (2 * h)
        np.testing.assert_allclose(g_params[i], fd, rtol=1e-5)
    for i in range(2):
        e = np.eye(2)[i] * h
        fd = (loss(LV_PARAMS, y0 + e) - loss(LV_PARAMS, y0 - e)) / (2 * h)
        np.testing.assert_allclose(g_y0[i], fd, rtol=1e-5)


def test_bad_input():
    with pytest.raises(TypeError, match="func is a int"):
        odeint(3, 1.0, TS)
    with pytest.raises(TypeError, match="t must be an array of floats"):
        odeint(ode_programs.decay, 1.0, np.arange(3), 1.0)
    with pytest.raises(TypeError, match="must be arrays or scalars"):
        odeint(ode_programs.decay, 1.0, TS, "k")
    with pytest.raises(TypeError, match="t has shape"):
        odeint(ode_programs.decay, 1.0, np.ones((2, 2)), 1.0)
