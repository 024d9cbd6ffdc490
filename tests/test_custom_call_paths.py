"""custom_jvp / custom_vjp calls that run untraced, as in JAX (numbax/_src/custom_call_paths.py):
eagerly the function itself, under grad/jvp the user's rule on primal values, so Python control
flow on values works; closures over differentiated values and jit keep the traced path."""
import math

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp


def _branchy_custom_jvp(calls):
    @numbax.custom_jvp
    def f(x):
        calls.append("f")
        if x > 0:  # a Python branch on the value, as JAX's tutorial writes it
            return jnp.sin(x)
        return jnp.cos(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        calls.append("f_jvp")
        (x,), (t,) = primals, tangents
        return f(x), (2.0 if x > 0 else 3.0) * t

    return f


def test_custom_jvp_eager_call_runs_the_function_once():
    calls = []
    f = _branchy_custom_jvp(calls)
    assert float(f(1.0)) == pytest.approx(math.sin(1.0))
    assert float(f(-1.0)) == pytest.approx(math.cos(-1.0))
    assert calls == ["f", "f"]


def test_custom_jvp_python_branches_work_under_grad_and_jvp():
    calls = []
    f = _branchy_custom_jvp(calls)
    assert float(numbax.grad(f)(1.0)) == 2.0  # the rule's derivative, not sin's
    assert float(numbax.grad(f)(-1.0)) == 3.0
    y, t = numbax.jvp(f, (0.5,), (2.0,))
    assert (float(y), float(t)) == (pytest.approx(math.sin(0.5)), 4.0)
    assert "f_jvp" in calls


def test_custom_jvp_value_branch_still_needs_static_under_jit():
    f = _branchy_custom_jvp([])
    with pytest.raises(numbax.errors.ConcretizationTypeError):
        numbax.jit(f)(1.0)  # under jit the function is traced, as in JAX


def test_custom_vjp_grad_runs_fwd_and_bwd_without_tracing_the_function():
    calls = []

    @numbax.custom_vjp
    def f(x):
        calls.append("f")
        return jnp.sin(x) if x > 0 else jnp.cos(x)

    def f_fwd(x):
        calls.append("f_fwd")
        return f(x), x

    def f_bwd(x, g):
        calls.append("f_bwd")
        return (g * (2.0 if x > 0 else 3.0),)

    f.defvjp(f_fwd, f_bwd)
    assert float(numbax.grad(f)(1.0)) == 2.0
    assert float(numbax.grad(f)(-1.0)) == 3.0
    assert calls == ["f_fwd", "f", "f_bwd"] * 2  # JAX's order: no trace of f before fwd
    with pytest.raises(TypeError, match="forward-mode"):
        numbax.jvp(f, (1.0,), (1.0,))


def test_closure_over_a_differentiated_value_keeps_its_derivative():
    @numbax.custom_jvp
    def scaled(x):
        return x * 2.0

    scaled.defjvps(lambda t, ans, x: 2.0 * t)

    def outer(y):
        @numbax.custom_jvp
        def g(x):
            return x * y  # closes over the value grad differentiates

        g.defjvps(lambda t, ans, x: t * y)
        return g(3.0) + scaled(y)

    np.testing.assert_allclose(float(numbax.grad(outer)(1.5)), 3.0 + 2.0)


def test_custom_rules_compose_with_vmap_and_higher_order():
    @numbax.custom_jvp
    def f(x):
        return jnp.sin(x)

    f.defjvps(lambda t, ans, x: jnp.cos(x) * t)
    xs = np.linspace(-1.0, 1.0, 5)
    np.testing.assert_allclose(numbax.vmap(numbax.grad(f))(xs), np.cos(xs), rtol=1e-12)
    np.testing.assert_allclose(float(numbax.grad(numbax.grad(f))(0.3)), -math.sin(0.3),
                               rtol=1e-12)
