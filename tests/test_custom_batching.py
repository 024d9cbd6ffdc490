"""jax.custom_batching: custom_vmap and sequential_vmap, checked against JAX 0.10.2's results
for the same programs (recorded 2026-12-04 with x64 on) and against numpy."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import custom_batching


def _sum_or_product():
    @custom_batching.custom_vmap
    def f(x, y):
        return x + y

    @f.def_vmap
    def rule(axis_size, in_batched, xs, ys):
        assert all(in_batched) and xs.shape[0] == axis_size == ys.shape[0]
        return xs * ys, True

    return f


def test_the_rule_runs_under_vmap_only():
    f = _sum_or_product()
    xs, ys = jnp.arange(3), jnp.arange(1, 4)
    np.testing.assert_array_equal(np.asarray(f(xs, ys)), [1, 3, 5])  # the function itself
    for g in (numbax.vmap(f), numbax.jit(numbax.vmap(f)), numbax.vmap(numbax.jit(f))):
        np.testing.assert_array_equal(np.asarray(g(xs, ys)), [0, 2, 6])  # JAX's docs


def test_the_rule_sees_which_inputs_are_batched_at_each_level():
    seen = []

    @custom_batching.custom_vmap
    def f(x, y):
        return x * y, x + y

    @f.def_vmap
    def rule(axis_size, in_batched, x, y):
        seen.append(list(in_batched))
        return (x * y, x - y), (True, in_batched[0] or in_batched[1])

    x = np.linspace(0, 1, 4)
    prod, diff = numbax.vmap(f, in_axes=(0, None))(x, 2.0)
    np.testing.assert_allclose(np.asarray(prod), 2 * x, rtol=1e-15)
    np.testing.assert_allclose(np.asarray(diff), x - 2, rtol=1e-15)
    assert seen == [[True, False]]
    prod, diff = numbax.vmap(numbax.vmap(f))(np.ones((2, 3)), np.ones((2, 3)))
    np.testing.assert_array_equal(np.asarray(diff), np.zeros((2, 3)))
    assert seen[1:] == [[True, True]]  # the outer vmap batches the rule's own work (as JAX)


def _sin_with_cos_rule():
    @custom_batching.custom_vmap
    def g(x):
        return jnp.sin(x)

    @g.def_vmap
    def rule(axis_size, in_batched, x):
        return jnp.cos(x), True

    return g


def test_forward_mode_differentiates_the_rule_under_vmap():
    g = _sin_with_cos_rule()
    x = np.linspace(0, 1, 4)
    p, t = numbax.jvp(g, (1.0,), (1.0,))
    np.testing.assert_allclose([float(p), float(t)], [np.sin(1.0), np.cos(1.0)], rtol=1e-15)
    p, t = numbax.vmap(lambda v: numbax.jvp(g, (v,), (1.0,)))(x)  # JAX: the rule's JVP
    np.testing.assert_allclose(np.asarray(p), np.cos(x), rtol=1e-15)
    np.testing.assert_allclose(np.asarray(t), -np.sin(x), rtol=1e-15, atol=1e-300)


def test_reverse_mode_is_refused_and_custom_vjp_on_top_supplies_it():
    g = _sin_with_cos_rule()
    with pytest.raises(ValueError, match="reverse-mode"):  # JAX raises ValueError too
        numbax.grad(g)(1.0)

    @numbax.custom_vjp
    @custom_batching.custom_vmap
    def f(x, y):
        return jnp.sin(x) * y

    @f.def_vmap  # (reached through custom_vjp, as in JAX's docs)
    def rule(axis_size, in_batched, xs, ys):
        return jnp.cos(xs) * ys, True

    f.defvjp(lambda x, y: (f(x, y), (jnp.cos(x), jnp.sin(x), y)),
             lambda res, g: (res[0] * g * res[2], res[1] * g))
    x, y = np.linspace(0, 1, 3), np.ones(3)
    np.testing.assert_allclose(float(f(1.0, 2.0)), np.sin(1.0) * 2, rtol=1e-15)
    np.testing.assert_allclose(np.asarray(numbax.vmap(f)(x, y)), np.cos(x), rtol=1e-15)
    np.testing.assert_allclose(float(numbax.grad(f)(1.0, 2.0)), np.cos(1.0) * 2, rtol=1e-15)
    np.testing.assert_allclose(np.asarray(numbax.vmap(numbax.grad(f))(x, y)), np.cos(x),
                               rtol=1e-15)


def test_a_batched_closed_over_value_vmaps_the_function_itself():
    g = _sin_with_cos_rule()
    x = np.linspace(0, 1, 4)
    got = numbax.vmap(lambda a: g(jnp.ones(2) * a))(x)  # the argument is batched: the rule
    np.testing.assert_allclose(np.asarray(got), np.cos(np.ones(2) * x[:, None]), rtol=1e-15)

    def closing(a):
        @custom_batching.custom_vmap
        def h(v):
            return v + a

        h.def_vmap(lambda n, b, v: (v * 100.0, True))
        return h(jnp.ones(2))

    np.testing.assert_allclose(np.asarray(numbax.vmap(closing)(x)), 1.0 + x[:, None] * [1, 1],
                               rtol=1e-15)


def test_sequential_vmap_runs_a_loop():
    @custom_batching.sequential_vmap
    def h(x, scale):
        return x * scale + 1

    xs = np.arange(3.0)
    np.testing.assert_array_equal(np.asarray(numbax.vmap(h, in_axes=(0, None))(xs, 2.0)),
                                  xs * 2 + 1)
    assert "scan[" in str(numbax.make_jaxpr(numbax.vmap(h, in_axes=(0, None)))(xs, 2.0))


def test_mistakes_are_named():
    @custom_batching.custom_vmap
    def f(x):
        return x + 1

    with pytest.raises(AttributeError, match="def_vmap"):  # JAX's class
        f(1.0)
    f.def_vmap(lambda n, b, x: (x[:2], True))
    with pytest.raises(ValueError, match=r"shape \(2,\).*expected \(3,\)"):
        numbax.vmap(f)(jnp.ones(3))
    f.def_vmap(lambda n, b, x: (x, [True]))
    with pytest.raises(TypeError, match="pytree of bools"):
        numbax.vmap(f)(jnp.ones(3))
    with pytest.raises(TypeError, match="keyword"):
        f(x=1.0)


def test_a_jitted_call_outside_vmap_compiles_the_function():
    f = _sum_or_product()
    text = numbax.jit(f).lower(np.arange(3.0), np.ones(3)).as_text()
    assert "custom_vmap_call" not in text.split("def driver")[1]  # inlined, compiled
    np.testing.assert_array_equal(np.asarray(numbax.jit(f)(np.arange(3.0), np.ones(3))),
                                  [1.0, 2.0, 3.0])
