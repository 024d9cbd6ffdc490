"""custom_jvp, custom_vjp and checkpoint: values against closed forms, composition with vmap,
make_jaxpr and higher orders, and the error messages for malformed rules."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax._src import core
from numbax._src.core import get_aval
from numbax._src.lax import elementwise
from numbax.test_util import check_grads


def _sum(x):
    return lax.reduce_sum(x, tuple(range(get_aval(x).ndim)))


# ----------------------------------------------------------------------------- custom_jvp


@numbax.custom_jvp
def log1pexp(x):
    return jnp.log(1.0 + jnp.exp(x))


@log1pexp.defjvp
def _log1pexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return log1pexp(x), t * (1.0 - 1.0 / (1.0 + jnp.exp(x)))


@pytest.mark.filterwarnings("ignore:overflow encountered in exp")
def test_custom_jvp_stable_rule_is_used():
    # The naive derivative exp(x) / (1 + exp(x)) is nan at x = 1000; the rule gives 1.
    assert float(numbax.grad(log1pexp)(1000.0)) == 1.0
    np.testing.assert_allclose(numbax.grad(log1pexp)(0.5), 1 / (1 + np.exp(-0.5)))
    _, t = numbax.jvp(log1pexp, (1000.0,), (2.0,))
    assert float(t) == 2.0
    x = np.array([-3.0, 0.0, 1000.0])
    np.testing.assert_allclose(numbax.vmap(numbax.grad(log1pexp))(x), 1 / (1 + np.exp(-x)))
    g = numbax.grad(lambda v: _sum(numbax.vmap(log1pexp)(v)))(x)
    np.testing.assert_allclose(g, 1 / (1 + np.exp(-x)))
    check_grads(log1pexp, (np.array([-1.0, 0.3, 2.0]),), order=2)


def test_custom_jvp_rule_differs_from_primal():
    @numbax.custom_jvp
    def f(x, y):
        return jnp.sin(x) * y

    @f.defjvp
    def f_jvp(primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        return f(x, y), 2.0 * jnp.cos(x) * y * tx + jnp.sin(x) * ty

    gx, gy = numbax.grad(f, argnums=(0, 1))(1.0, 2.0)
    np.testing.assert_allclose([gx, gy], [4 * np.cos(1.0), np.sin(1.0)])
    np.testing.assert_allclose(numbax.grad(numbax.grad(f))(1.0, 2.0), -4 * np.sin(1.0))
    text = str(numbax.make_jaxpr(f)(1.0, 2.0))
    assert "custom_jvp_call" in text and "sin" in text
    np.testing.assert_allclose(numbax.jacrev(f)(np.arange(3.0), np.ones(3)),
                               np.diag(2 * np.cos(np.arange(3.0))))


def test_custom_jvp_defjvps_pytrees_and_nondiff_argnums():
    @numbax.custom_jvp
    def f(x, y):
        return x * y

    f.defjvps(lambda t, ans, x, y: 10.0 * t, lambda t, ans, x, y: 100.0 * t)
    assert numbax.grad(f, argnums=(0, 1))(2.0, 3.0) == (10.0, 100.0)

    @numbax.custom_jvp
    def g(p):
        return {"s": p["a"] * p["b"]}

    @g.defjvp
    def g_jvp(primals, tangents):
        (p,), (t,) = primals, tangents
        return g(p), {"s": 3.0 * t["a"]}

    grads = numbax.grad(lambda p: g(p)["s"])({"a": 2.0, "b": 5.0})
    assert float(grads["a"]) == 3.0 and float(grads["b"]) == 0.0

    @numbax.custom_jvp
    def scaled(k, x):
        return k * jnp.sin(x)

    scaled = numbax.custom_jvp(scaled.fun, nondiff_argnums=(0,))

    @scaled.defjvp
    def scaled_jvp(k, primals, tangents):
        (x,), (t,) = primals, tangents
        return scaled(k, x), k * jnp.cos(x) * t

    np.testing.assert_allclose(numbax.grad(scaled, argnums=1)(3.0, 0.2), 3 * np.cos(0.2))


def test_custom_jvp_errors():
    @numbax.custom_jvp
    def f(x):
        return x

    with pytest.raises(AttributeError, match="No JVP defined"):
        f(1.0)
    f.defjvp(lambda p, t: (f(p[0]), (t[0], t[0])))
    with pytest.raises(TypeError, match="same container"):
        numbax.jvp(f, (1.0,), (1.0,))
    f.defjvp(lambda p, t: f(p[0]))
    with pytest.raises(TypeError, match="must return a pair"):
        numbax.grad(f)(1.0)
    with pytest.raises(TypeError, match="argument leaf 0 is a str"):
        f("a")


# ----------------------------------------------------------------------------- custom_vjp


def _clip_gradient(lo, hi):
    @numbax.custom_vjp
    def clip(x):
        return x

    def fwd(x):
        return x, None

    def bwd(_, g):
        return (lax.clamp(lo, g, hi),)

    clip.defvjp(fwd, bwd)
    return clip


def test_custom_vjp_clip_gradient():
    clip = _clip_gradient(-0.5, 0.5)
    f = lambda x: clip(x) * 3.0
    assert float(numbax.grad(f)(1.0)) == 0.5
    np.testing.assert_array_equal(numbax.jacrev(lambda x: clip(x) * 0.25)(np.ones(2)),
                                  0.25 * np.eye(2))
    assert float(f(2.0)) == 6.0


@numbax.custom_vjp
def _sin_times(x, y):
    return jnp.sin(x) * y


def _sin_times_fwd(x, y):
    return _sin_times(x, y), (jnp.cos(x), jnp.sin(x), y)


def _sin_times_bwd(res, ct):
    cos_x, sin_x, y = res
    return (3.0 * cos_x * y * ct, sin_x * ct)  # 3x the true d/dx, to see the rule is used


_sin_times.defvjp(_sin_times_fwd, _sin_times_bwd)


def test_custom_vjp_residuals_vmap_and_higher_order():
    gx, gy = numbax.grad(_sin_times, argnums=(0, 1))(1.0, 2.0)
    np.testing.assert_allclose([gx, gy], [6 * np.cos(1.0), np.sin(1.0)])
    x = np.arange(3.0)
    expected = 3 * np.cos(x)
    np.testing.assert_allclose(numbax.vmap(numbax.grad(_sin_times))(x, np.ones(3)), expected)
    g = numbax.grad(lambda v: _sum(numbax.vmap(_sin_times)(v, np.ones(3))))(x)
    np.testing.assert_allclose(g, expected)
    # bwd is differentiated as ordinary code: d/dx (3 cos(x) y) = -3 sin(x) y.
    np.testing.assert_allclose(numbax.grad(numbax.grad(_sin_times))(1.0, 2.0), -6 * np.sin(1.0))
    np.testing.assert_allclose(numbax.jacrev(lambda v: _sin_times(v, 2.0 * np.ones(3)))(x),
                               np.diag(6 * np.cos(x)))


def test_custom_vjp_pytrees_none_cotangents_and_nondiff_argnums():
    @numbax.custom_vjp
    def f(p, scale):
        return p["a"] * p["b"] * scale

    f.defvjp(lambda p, s: (f(p, s), (p, s)),
             lambda res, g: ({"a": res[0]["b"] * g * res[1], "b": None}, None))
    g = numbax.grad(f)({"a": 2.0, "b": 5.0}, 3.0)
    assert float(g["a"]) == 15.0 and float(g["b"]) == 0.0

    def apply(fn, x):
        return fn(x)

    apply = numbax.custom_vjp(apply, nondiff_argnums=(0,))
    apply.defvjp(lambda fn, x: (fn(x), x), lambda fn, x, g: (g * 7.0,))
    assert float(numbax.grad(apply, argnums=1)(jnp.sin, 0.3)) == 7.0


def test_custom_vjp_errors():
    with pytest.raises(TypeError, match="forward-mode autodiff"):
        numbax.jvp(_sin_times, (1.0, 2.0), (1.0, 0.0))

    @numbax.custom_vjp
    def f(x, y):
        return x * y

    f.defvjp(lambda x, y: (f(x, y), None), lambda res, g: (g,))
    with pytest.raises(TypeError, match=r"same container \(pytree\) structure as the args tuple"
                                        r".*expected \(\*, \*\), got \(\*,\)"):
        numbax.grad(f)(1.0, 2.0)
    f.defvjp(lambda x, y: (f(x, y), None), lambda res, g: (np.ones(3), g))
    with pytest.raises(ValueError, match=r"cotangent leaf 0 has shape \(3,\), expected"):
        numbax.grad(f)(1.0, 2.0)
    f.defvjp(lambda x, y: f(x, y), lambda res, g: (g, g))
    with pytest.raises(TypeError, match="fwd rule"):
        numbax.grad(f)(1.0, 2.0)

    @numbax.custom_vjp
    def h(x):
        return x

    with pytest.raises(AttributeError, match="No VJP defined"):
        h(1.0)


# ----------------------------------------------------------------------------- checkpoint


def _count_sin(monkeypatch):
    count = [0]
    impl = core.impl_rules[elementwise.sin_p]

    def counting(x, **params):
        count[0] += 1
        return impl(x, **params)

    monkeypatch.setitem(core.impl_rules, elementwise.sin_p, counting)
    return count


def test_checkpoint_recomputes_in_backward_pass(monkeypatch):
    count = _count_sin(monkeypatch)
    f0 = lambda x: jnp.sin(jnp.sin(x))
    for fn, backward_sins in ((f0, 0), (numbax.checkpoint(f0), 1)):
        count[0] = 0
        out, f_vjp = numbax.vjp(fn, 1.0)
        assert count[0] == 2  # forward: both sins
        (g,) = f_vjp(1.0)
        assert count[0] == 2 + backward_sins  # checkpoint recomputes the inner sin
        np.testing.assert_allclose(g, np.cos(np.sin(1.0)) * np.cos(1.0))


def test_checkpoint_linearized_jaxpr_keeps_only_inputs():
    x = np.linspace(0.1, 1.0, 4)
    f = numbax.checkpoint(lambda v: jnp.sin(jnp.cos(jnp.exp(v))))
    from numbax._src.interpreters import ad

    _, jaxpr, consts, _ = ad.linearize_flat(lambda v: [f(v)], [x])
    assert len(consts) == 1 and np.array_equal(np.asarray(consts[0]), x)
    assert "checkpoint" in str(jaxpr) and "exp" in str(jaxpr)
    _, jaxpr0, consts0, _ = ad.linearize_flat(lambda v: [f.__wrapped__(v)], [x])
    assert len(consts0) > 1 and "exp" not in str(jaxpr0)


def test_checkpoint_composes():
    f0 = lambda x, y: jnp.sin(x * y) * jnp.exp(x)
    f = numbax.remat(f0)
    x = np.linspace(0.1, 1.0, 3)
    check_grads(f, (x, 0.7), order=2)
    np.testing.assert_allclose(numbax.vmap(numbax.grad(f))(x, np.ones(3)),
                               numbax.vmap(numbax.grad(f0))(x, np.ones(3)))
    np.testing.assert_allclose(numbax.jacrev(numbax.vmap(f))(x, np.ones(3)),
                               numbax.jacrev(numbax.vmap(f0))(x, np.ones(3)))
    np.testing.assert_allclose(numbax.hessian(lambda v: f(v, 2.0))(0.3),
                               numbax.hessian(lambda v: f0(v, 2.0))(0.3))

    @numbax.checkpoint(policy=numbax.checkpoint_policies.nothing_saveable, prevent_cse=False,
                       static_argnums=(1,))
    def power(x, n):
        for _ in range(n):
            x = jnp.sin(x)
        return x

    np.testing.assert_allclose(numbax.grad(power)(0.5, 2), np.cos(np.sin(0.5)) * np.cos(0.5))
    assert "checkpoint" in str(numbax.make_jaxpr(lambda x: power(x, 3))(0.5))


def test_checkpoint_bad_input():
    with pytest.raises(TypeError, match="callable"):
        numbax.checkpoint(3)
    with pytest.raises(TypeError, match="policy"):
        numbax.checkpoint(jnp.sin, policy="dots")
    with pytest.raises(ValueError, match="static_argnums"):
        numbax.checkpoint(jnp.sin, static_argnums=(3,))(1.0)
    with pytest.raises(TypeError, match="argument leaf 0 is a str"):
        numbax.checkpoint(lambda s: s)("a")


def test_custom_rules_and_checkpoint_under_jit():
    # jit copies the wrapped function's __dict__ (functools.wraps): the rules must survive it.
    for fn, expected in ((log1pexp, 1 / (1 + np.exp(-0.5))),
                         (lambda x: _sin_times(x, 2.0), 6 * np.cos(0.5)),
                         (numbax.checkpoint(lambda x: jnp.sin(jnp.sin(x))),
                          np.cos(np.sin(0.5)) * np.cos(0.5))):
        np.testing.assert_allclose(numbax.grad(numbax.jit(fn))(0.5), expected)
        np.testing.assert_allclose(numbax.jit(numbax.grad(fn))(0.5), expected)
    np.testing.assert_allclose(numbax.jit(numbax.grad(lambda x: x * lax.stop_gradient(x)))(3.0),
                               3.0)
