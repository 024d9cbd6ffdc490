"""grad / jvp / vjp / jacobians: the issue's seed checks (numbers from the JAX oracle), pytrees,
argnums, has_aux, symbolic zeros, integer inputs, ties, stop_gradient, logsumexp, check_grads."""
import collections

import numpy as np
import pytest
import scipy.special as sp

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax._src import dtypes
from numbax._src.core import get_aval
from numbax._src.numpy.special import logsumexp
from numbax.test_util import check_grads


def _sum(x):
    return lax.reduce_sum(x, tuple(range(get_aval(x).ndim)))


@pytest.fixture
def x32():
    prev = numbax.config.jax_enable_x64
    numbax.config.update("jax_enable_x64", False)
    yield
    numbax.config.update("jax_enable_x64", prev)


# ----------------------------------------------------------------------------- seed checks


def test_grad_of_cube():
    f = lambda x: x ** 3
    assert float(numbax.grad(f)(10.0)) == 300.0
    assert float(numbax.grad(numbax.grad(f))(10.0)) == 60.0
    value, g = numbax.value_and_grad(f)(10.0)
    assert (float(value), float(g)) == (1000.0, 300.0)


def _pow_dict(xy):
    return xy["x"] ** xy["y"]


def _check_pow_dict(rtol):
    xy = {"x": 2.0, "y": 3.0}
    np.testing.assert_allclose(_pow_dict(xy), 8.0, rtol=rtol)
    g = numbax.grad(_pow_dict)(xy)
    np.testing.assert_allclose(g["x"], 12.0, rtol=rtol)
    np.testing.assert_allclose(g["y"], 8 * np.log(2), rtol=rtol)  # 5.5451775
    h = numbax.hessian(_pow_dict)(xy)
    np.testing.assert_allclose(h["x"]["x"], 12.0, rtol=rtol)
    np.testing.assert_allclose(h["x"]["y"], 4 + 12 * np.log(2), rtol=rtol)  # 12.317766
    np.testing.assert_allclose(h["y"]["x"], 4 + 12 * np.log(2), rtol=rtol)
    np.testing.assert_allclose(h["y"]["y"], 8 * np.log(2) ** 2, rtol=rtol)  # 3.843624
    return g, h


def test_pow_dict_float64():
    g, h = _check_pow_dict(1e-12)
    assert g["x"].dtype == np.float64 and h["x"]["y"].dtype == np.float64


def test_pow_dict_float32(x32):
    g, h = _check_pow_dict(1e-6)
    assert g["y"].dtype == np.float32 and h["y"]["y"].dtype == np.float32
    # The JAX oracle's float32 digits.
    assert np.float32(g["y"]) == np.float32(5.5451775)
    assert np.float32(h["x"]["y"]) == np.float32(12.317766)
    assert np.float32(h["y"]["y"]) == np.float32(3.843624)


def test_linear_model_gradient_descent(x32):
    xs = jnp.array(np.arange(1.0, 6.0, dtype=np.float32) / 2)
    ys = jnp.array(np.array([2.0, 4.0, 6.0, 8.0, 10.0], np.float32) / 2)

    def loss(params):
        err = params["w"] * xs + params["b"] - ys
        return _sum(err * err) / 5.0

    params = {"w": 0.0, "b": 0.0}
    for _ in range(50):
        g = numbax.grad(loss)(params)
        params = {k: params[k] - 0.01 * g[k] for k in params}
    assert params["w"].dtype == np.float32
    # Values printed by JAX 0.10 (float32) for the same loop.
    np.testing.assert_allclose(float(params["w"]), 1.5326817, rtol=1e-6)
    np.testing.assert_allclose(float(params["b"]), 0.73161584, rtol=1e-6)


# ----------------------------------------------------------------------------- pytrees, argnums


Point = collections.namedtuple("Point", ["x", "y"])


@numbax.tree_util.register_pytree_node_class
class Box:
    def __init__(self, a, b):
        self.a, self.b = a, b

    def tree_flatten(self):
        return (self.a, self.b), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


def test_grad_over_pytrees():
    v = np.array([1.0, 2.0])
    tree = {"list": [v, 3.0], "tuple": (2.0,), "point": Point(v, 0.5), "box": Box(4.0, v)}

    def f(t):
        return (_sum(t["list"][0] ** 2) * t["list"][1] + t["tuple"][0] ** 3
                + _sum(t["point"].x * t["point"].y) + t["box"].a * _sum(t["box"].b))

    g = numbax.grad(f)(tree)
    np.testing.assert_allclose(g["list"][0], 2 * v * 3.0)
    np.testing.assert_allclose(g["list"][1], 5.0)
    np.testing.assert_allclose(g["tuple"][0], 12.0)
    assert isinstance(g["point"], Point) and isinstance(g["box"], Box)
    np.testing.assert_allclose(g["point"].x, [0.5, 0.5])
    np.testing.assert_allclose(g["point"].y, 3.0)
    np.testing.assert_allclose(g["box"].a, 3.0)
    np.testing.assert_allclose(g["box"].b, [4.0, 4.0])


def test_jvp_vjp_over_pytrees():
    def f(p):
        return {"s": p[0] * p[1], "t": [jnp.sin(p[0])]}

    primals = ((2.0, np.array([1.0, 3.0])),)
    tangents = ((1.0, np.array([0.0, 1.0])),)
    out, t_out = numbax.jvp(f, primals, tangents)
    np.testing.assert_allclose(t_out["s"], np.array([1.0, 3.0]) + 2.0 * np.array([0.0, 1.0]))
    np.testing.assert_allclose(t_out["t"][0], np.cos(2.0))
    out, f_vjp = numbax.vjp(f, primals[0])
    (ct,) = f_vjp({"s": np.array([1.0, 1.0]), "t": [2.0]})
    np.testing.assert_allclose(ct[0], 4.0 + 2 * np.cos(2.0))
    np.testing.assert_allclose(ct[1], [2.0, 2.0])


def test_argnums_and_has_aux():
    f = lambda x, y, z: x * y ** 2 + z
    gx, gz = numbax.grad(f, argnums=(0, 2))(2.0, 3.0, 4.0)
    assert (float(gx), float(gz)) == (9.0, 1.0)
    assert float(numbax.grad(f, argnums=-2)(2.0, 3.0, 4.0)) == 12.0
    g, aux = numbax.grad(lambda x: (x ** 2, {"half": x / 2}), has_aux=True)(3.0)
    assert float(g) == 6.0 and float(aux["half"]) == 1.5
    (value, aux), g = numbax.value_and_grad(lambda x: (x ** 2, x + 1), has_aux=True)(3.0)
    assert (float(value), float(aux), float(g)) == (9.0, 4.0, 6.0)
    # aux leaves come back as plain values (no escaped tracers), also under jacfwd/jacrev.
    x = np.arange(2.0)
    for jac in (numbax.jacfwd, numbax.jacrev):
        j, aux = jac(lambda v: (jnp.sin(v), v * 2.0), has_aux=True)(x)
        np.testing.assert_allclose(j, np.diag(np.cos(x)))
        np.testing.assert_allclose(aux + 1.0, 2.0 * x + 1.0)
    _, t, aux = numbax.jvp(lambda v: (jnp.sin(v), (v * 2.0, 7)), (1.0,), (1.0,), has_aux=True)
    assert float(aux[0] * 3.0) == 6.0 and aux[1] == 7
    _, f_lin, aux = numbax.linearize(lambda v: (jnp.sin(v), v * 2.0), 1.0, has_aux=True)
    assert float(f_lin(1.0)) == np.cos(1.0) and float(aux - 1.0) == 1.0


def test_symbolic_zero_for_unused_input():
    g = numbax.grad(lambda x, y: _sum(x) * 2.0, argnums=(0, 1))(
        np.ones(3), np.ones((2, 2), np.float32))
    np.testing.assert_array_equal(g[1], np.zeros((2, 2), np.float32))
    assert g[1].shape == (2, 2) and g[1].dtype == np.float32
    _, t = numbax.jvp(lambda x, y: x * 2.0, (1.0, 2.0), (0.0, 1.0))
    assert float(t) == 0.0
    _, t = numbax.jvp(lambda x: 3.0, (1.0,), (1.0,))
    assert float(t) == 0.0


def test_integer_inputs():
    with pytest.raises(TypeError, match="int64"):
        numbax.grad(lambda x: x * 2.0)(3)
    out, t = numbax.jvp(lambda x: x * 2, (3,), (np.zeros((), dtypes.float0),))
    assert int(out) == 6 and t.dtype == dtypes.float0
    g = numbax.grad(lambda x, n: x * n, argnums=0)(2.0, 3)
    assert float(g) == 3.0


# ----------------------------------------------------------------------------- jacobians


def test_jacobians_closed_forms():
    rng = np.random.RandomState(0)
    a = rng.randn(3, 3)
    x = rng.randn(3)
    quad = lambda v: _sum(v * lax.dot(a, v))
    np.testing.assert_allclose(numbax.hessian(quad)(x), a + a.T, rtol=1e-12)
    np.testing.assert_allclose(numbax.jacfwd(jnp.sin)(x), np.diag(np.cos(x)), rtol=1e-12)
    np.testing.assert_allclose(numbax.jacrev(jnp.sin)(x), np.diag(np.cos(x)), rtol=1e-12)
    # Several inputs and outputs: blocks per (output leaf, input leaf).
    f = lambda u, w: {"p": u * w[0], "q": _sum(u) * w}
    u, w = np.array([1.0, 2.0]), np.array([3.0, 4.0, 5.0])
    for jac in (numbax.jacfwd, numbax.jacrev):
        j = jac(f, argnums=(0, 1))(u, w)
        np.testing.assert_allclose(j["p"][0], np.diag([3.0, 3.0]))
        np.testing.assert_allclose(j["p"][1], [[1.0, 0, 0], [2.0, 0, 0]])
        np.testing.assert_allclose(j["q"][0], np.outer(w, np.ones(2)))
        np.testing.assert_allclose(j["q"][1], 3.0 * np.eye(3))


# ----------------------------------------------------------------------------- numerics (JAX's)


def test_ties_and_singular_points_match_jax():
    assert float(numbax.grad(jnp.abs)(0.0)) == 1.0
    assert float(numbax.grad(lambda x: jnp.maximum(x, 0.0))(0.0)) == 0.5
    assert float(numbax.grad(lambda x: jnp.minimum(x, 0.0))(0.0)) == 0.5
    with np.errstate(all="ignore"):
        assert np.isinf(float(numbax.grad(jnp.sqrt)(0.0)))
        # JAX gives nan here: the unselected sqrt branch's infinite derivative times 0.
        assert np.isnan(float(numbax.grad(lambda x: jnp.where(x > 0, jnp.sqrt(x), 0.0))(0.0)))
        assert np.isnan(float(numbax.grad(lambda x: x ** 0.0)(0.0)))
        # Forward mode selects the tangent instead and stays finite (JAX too).
        _, t = numbax.jvp(lambda x: jnp.where(x > 0, jnp.sqrt(x), 0.0), (0.0,), (1.0,))
        assert float(t) == 0.0
    assert float(numbax.grad(lambda y: 0.0 ** y)(2.0)) == 0.0
    np.testing.assert_allclose(numbax.grad(lambda y: 2.0 ** y)(3.0), 8 * np.log(2))


def test_stop_gradient():
    assert float(numbax.grad(lambda x: x * lax.stop_gradient(x))(3.0)) == 3.0
    tree = lax.stop_gradient({"a": 1.0, "b": [np.ones(2), np.arange(3)]})
    np.testing.assert_array_equal(tree["b"][1], np.arange(3))
    g = numbax.vmap(numbax.grad(lambda x: x * lax.stop_gradient(x)))(np.arange(3.0))
    np.testing.assert_array_equal(g, np.arange(3.0))
    text = str(numbax.make_jaxpr(lax.stop_gradient)(1.0))
    assert "stop_gradient" in text


def test_logsumexp_values_and_stable_gradient():
    rng = np.random.RandomState(0)
    x, b = rng.randn(3, 4), rng.rand(3, 4)
    np.testing.assert_allclose(logsumexp(x), sp.logsumexp(x))
    np.testing.assert_allclose(logsumexp(x, axis=1), sp.logsumexp(x, axis=1))
    np.testing.assert_allclose(logsumexp(x, axis=0, keepdims=True),
                               sp.logsumexp(x, axis=0, keepdims=True))
    np.testing.assert_allclose(logsumexp(x, axis=-1, b=b), sp.logsumexp(x, axis=-1, b=b))
    out, sign = logsumexp(x, b=-b, return_sign=True)
    ref_out, ref_sign = sp.logsumexp(x, b=-b, return_sign=True)
    np.testing.assert_allclose(out, ref_out)
    assert float(sign) == ref_sign
    np.testing.assert_allclose(numbax.grad(logsumexp)(np.array([1000.0, 1000.0])), [0.5, 0.5])
    np.testing.assert_allclose(numbax.grad(logsumexp)(np.array([-np.inf, 0.0])), [0.0, 1.0])
    check_grads(lambda v: logsumexp(v, axis=1), (x,), order=2)
    with pytest.raises(ValueError, match="axis 2 is out of bounds"):
        logsumexp(x, axis=2)


# ----------------------------------------------------------------------------- check_grads


def test_check_grads_passes_and_catches_wrong_rules():
    check_grads(lambda x, y: jnp.sin(x) * y ** 2, (np.arange(3.0), np.full(3, 1.5)), order=3)
    check_grads(jnp.tanh, (0.3,), order=2, modes=("rev",))

    @numbax.custom_jvp
    def wrong(x):
        return jnp.sin(x)

    wrong.defjvp(lambda p, t: (wrong(p[0]), 2.0 * t[0]))
    with pytest.raises(AssertionError, match="tangent"):
        check_grads(wrong, (0.5,), order=1, modes=("fwd",))
    with pytest.raises(AssertionError, match="cotangent projection"):
        check_grads(wrong, (0.5,), order=1, modes=("rev",))


def test_check_grads_bad_input():
    with pytest.raises(TypeError, match="args is a float"):
        check_grads(jnp.sin, 0.5, order=1)
    with pytest.raises(ValueError, match="modes"):
        check_grads(jnp.sin, (0.5,), order=1, modes=("sideways",))


# ----------------------------------------------------------------------------- bad input


def test_grad_bad_inputs():
    with pytest.raises(TypeError, match=r"shape: \(3,\).*jacrev or vjp"):
        numbax.grad(jnp.sin)(np.ones(3))
    with pytest.raises(TypeError, match="argnums"):  # TypeError, as JAX
        numbax.grad(lambda x: x, argnums=2)(1.0)
    with pytest.raises(TypeError, match="has_aux=True requires.*pair"):
        numbax.grad(lambda x: x, has_aux=True)(1.0)
    with pytest.raises(TypeError, match="callable"):
        numbax.grad(3.0)
    with pytest.raises(TypeError, match="callable"):
        numbax.jacfwd(3.0)
    with pytest.raises(ValueError, match="shape"):
        numbax.jvp(jnp.sin, (np.ones(3),), (np.ones(2),))


def test_argnums_errors_name_the_argument():
    f = lambda x, y: x * y  # noqa: E731
    with pytest.raises(TypeError, match="grad: argnums has 'a' of type str, expected an int"):
        numbax.grad(f, argnums="a")
    with pytest.raises(TypeError, match="argnums has 1.5"):
        numbax.grad(f, argnums=1.5)
    with pytest.raises(TypeError, match="argnums has True"):
        numbax.value_and_grad(f, argnums=True)
    with pytest.raises(ValueError, match="argnums is empty"):
        numbax.grad(f, argnums=())
    with pytest.raises(ValueError, match=r"argnums \(0, -2\) names an argument twice"):
        numbax.grad(f, argnums=(0, -2))(1.0, 2.0)
    with pytest.raises(TypeError, match="jacrev: argnums has"):
        numbax.jacrev(f, argnums=[0, "b"])
    with pytest.raises(TypeError, match="make_jaxpr: static_argnums has"):
        numbax.make_jaxpr(f, static_argnums="x")
    assert float(numbax.grad(f, argnums=np.int64(1))(3.0, 2.0)) == 3.0


# ----------------------------------------------------------------------------- complex


def test_grad_of_complex_output_needs_holomorphic():
    f = lambda z: z ** 2 + 3 * z  # noqa: E731
    with pytest.raises(TypeError, match="real-valued outputs.*holomorphic=True"):
        numbax.grad(f)(1.0 + 1.0j)
    with pytest.raises(TypeError, match="real-valued outputs"):
        numbax.grad(lambda x: x * 1j)(1.0)
    z = 1.0 + 1.0j
    assert complex(numbax.grad(f, holomorphic=True)(z)) == 2 * z + 3  # f'(z), JAX's convention
    value, g = numbax.value_and_grad(f, holomorphic=True)(z)
    assert complex(value) == f(z) and complex(g) == 2 * z + 3
    with pytest.raises(TypeError, match="holomorphic=True requires inputs with complex dtype"):
        numbax.grad(lambda x: x ** 2, holomorphic=True)(1.0)
    with pytest.raises(TypeError, match="holomorphic=True requires outputs with complex dtype"):
        numbax.grad(lambda z: jnp.abs(z), holomorphic=True)(z)
    # a real function of a complex input: the gradient is the conjugate Wirtinger form, as JAX
    assert complex(numbax.grad(lambda z: jnp.abs(z) ** 2)(z)) == pytest.approx(2 * z.conjugate())


def test_jacobians_holomorphic_and_dtype_rules():
    f = lambda z: jnp.stack([z ** 2, jnp.sin(z)])  # noqa: E731
    z = np.complex128(0.5 + 0.25j)
    want = np.array([2 * z, np.cos(z)])
    for jac in (numbax.jacfwd, numbax.jacrev, numbax.jacobian):
        np.testing.assert_allclose(np.asarray(jac(f, holomorphic=True)(z)), want, rtol=1e-12)
    assert complex(numbax.hessian(lambda z: z ** 3, holomorphic=True)(z)) == pytest.approx(6 * z)
    np.testing.assert_allclose(np.asarray(numbax.jacfwd(lambda x: x * 1j)(np.ones(2))),
                               1j * np.eye(2))
    with pytest.raises(TypeError, match="jacfwd requires real-valued inputs"):
        numbax.jacfwd(f)(z)
    with pytest.raises(TypeError, match="jacrev requires real-valued outputs"):
        numbax.jacrev(f)(z)
    with pytest.raises(TypeError, match="jacrev requires real-valued outputs"):
        numbax.jacrev(lambda x: x * 1j)(1.0)
    with pytest.raises(TypeError, match="jacfwd with holomorphic=True requires outputs"):
        numbax.jacfwd(lambda z: jnp.abs(z), holomorphic=True)(z)
    assert numbax.jacobian is numbax.jacrev


# ----------------------------------------------------------------------------- linear_transpose


def test_linear_transpose_matches_the_matrix_transpose():
    a = np.arange(6.0).reshape(2, 3) - 2.0
    f = lambda x, y: {"out": a @ x + 2.0 * y[:2]}  # noqa: E731
    f_t = numbax.linear_transpose(f, np.zeros(3), np.zeros(4))
    ct = {"out": np.array([1.0, -2.0])}
    gx, gy = f_t(ct)
    np.testing.assert_allclose(np.asarray(gx), a.T @ ct["out"])
    np.testing.assert_allclose(np.asarray(gy), [2.0, -4.0, 0.0, 0.0])
    # <f(v), w> == <v, f^T(w)> for a complex linear map (no conjugation, as JAX)
    c = np.array([[1 + 2j, 3j], [0.5, -1j]])
    g_t = numbax.linear_transpose(lambda v: jnp.dot(c, v), np.zeros(2, complex))
    w = np.array([1 - 1j, 2 + 0.5j])
    np.testing.assert_allclose(np.asarray(g_t(w)[0]), c.T @ w)
    jitted = numbax.jit(lambda w: g_t(w)[0])(w)
    np.testing.assert_allclose(np.asarray(jitted), c.T @ w)


def test_linear_transpose_bad_inputs():
    with pytest.raises(TypeError, match="primal leaf 0 has dtype int64"):
        numbax.linear_transpose(lambda x: x, np.arange(3))
    f_t = numbax.linear_transpose(lambda x: 2.0 * x, np.zeros(3))
    with pytest.raises(TypeError, match=r"cotangent leaf 0 has f64\[2\], expected .*f64\[3\]"):
        f_t(np.ones(2))
    with pytest.raises(TypeError, match="out_cotangent has structure"):
        f_t((np.ones(3),))
    with pytest.raises(TypeError, match="not linear"):
        numbax.linear_transpose(lambda x: x * x, np.zeros(3))(np.ones(3))
    with pytest.raises(TypeError, match="callable"):
        numbax.linear_transpose(3.0, 1.0)


# ----------------------------------------------------------------------------- naming, eval


def test_named_call_named_scope_and_compile_time_eval():
    g = numbax.named_call(lambda x: jnp.sin(x) * 2.0, name="twice_sin")
    assert g.__name__ == "twice_sin"
    assert float(numbax.grad(g)(0.3)) == pytest.approx(2 * np.cos(0.3))
    assert float(numbax.jit(g)(0.3)) == pytest.approx(2 * np.sin(0.3))
    with numbax.named_scope("layer1"):
        assert float(g(0.0)) == 0.0
    with pytest.raises(TypeError, match="named_scope: name has 3"):
        with numbax.named_scope(3):
            pass
    with pytest.raises(TypeError, match="named_call: name has 3"):
        numbax.named_call(g, name=3)

    @numbax.jit
    def f(x):
        with numbax.ensure_compile_time_eval():
            n = jnp.sum(jnp.arange(4))
            assert isinstance(n, numbax.Array) and not isinstance(n, numbax._src.core.Tracer)
            steps = int(n)  # concrete, so Python can use it
        return x * steps

    assert float(f(1.5)) == 9.0
