"""numbax.nn: activations vs numpy/scipy formulas, extreme inputs, grads vs finite differences
and JAX's kink conventions, softmax family, one_hot, initializers' statistics, bad input."""
import numpy as np
import pytest
import scipy.special as sp

import numbax
import numbax.numpy as jnp
from numbax import nn
from numbax.errors import NumbaxTypeError, NumbaxValueError
from numbax.nn import initializers

X = np.array([-30.0, -3.5, -1.0, -0.3, 0.2, 0.9, 2.5, 7.0, 40.0])

ALPHA = 1.6732632423543772848170429916717
SCALE = 1.0507009873554804934193349852946

REFERENCES = {
    "relu": lambda x: np.maximum(x, 0),
    "relu6": lambda x: np.clip(x, 0, 6),
    "sigmoid": sp.expit,
    "softplus": lambda x: np.logaddexp(x, 0),
    "log_sigmoid": lambda x: -np.logaddexp(0, -x),
    "soft_sign": lambda x: x / (np.abs(x) + 1),
    "silu": lambda x: x * sp.expit(x),
    "swish": lambda x: x * sp.expit(x),
    "leaky_relu": lambda x: np.where(x >= 0, x, 0.01 * x),
    "elu": lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))),
    "celu": lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))),
    "selu": lambda x: SCALE * np.where(x > 0, x, ALPHA * np.expm1(np.minimum(x, 0))),
    "gelu": lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))),
    "hard_tanh": lambda x: np.clip(x, -1, 1),
    "hard_sigmoid": lambda x: np.clip(x + 3, 0, 6) / 6,
    "hard_silu": lambda x: x * np.clip(x + 3, 0, 6) / 6,
}


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_activation_matches_numpy(name):
    out = getattr(nn, name)(X)
    np.testing.assert_allclose(np.asarray(out), REFERENCES[name](X), rtol=1e-12, atol=1e-14)


def test_gelu_exact_matches_scipy_erf():
    out = nn.gelu(X, approximate=False)
    np.testing.assert_allclose(np.asarray(out), 0.5 * X * sp.erfc(-X / np.sqrt(2)),
                               rtol=1e-12, atol=1e-300)


def test_leaky_relu_elu_celu_parameters():
    np.testing.assert_allclose(np.asarray(nn.leaky_relu(X, 0.2)), np.where(X >= 0, X, 0.2 * X))
    np.testing.assert_allclose(np.asarray(nn.elu(X, 2.0)),
                               np.where(X > 0, X, 2.0 * np.expm1(np.minimum(X, 0))))
    np.testing.assert_allclose(np.asarray(nn.celu(X, 0.5)),
                               np.maximum(X, 0) + 0.5 * np.expm1(np.minimum(X, 0) / 0.5))


def test_extreme_inputs_stay_finite():
    big = np.array([-1e4, -800.0, 800.0, 1e4])
    np.testing.assert_allclose(np.asarray(nn.softplus(big)), [0.0, 0.0, 800.0, 1e4], atol=1e-300)
    np.testing.assert_allclose(np.asarray(nn.log_sigmoid(big)), [-1e4, -800.0, 0.0, 0.0],
                               atol=1e-300)
    g = numbax.vmap(numbax.grad(nn.softplus))(big)
    np.testing.assert_allclose(np.asarray(g), [0.0, 0.0, 1.0, 1.0])
    g = numbax.vmap(numbax.grad(nn.log_sigmoid))(big)
    np.testing.assert_allclose(np.asarray(g), [1.0, 1.0, 0.0, 0.0])
    assert np.all(np.isfinite(np.asarray(nn.elu(big))))
    assert np.all(np.isfinite(np.asarray(numbax.vmap(numbax.grad(nn.elu))(big))))


def _fd(f, x, eps=1e-6):
    return (f(x + eps) - f(x - eps)) / (2 * eps)


SMOOTH = ["sigmoid", "softplus", "log_sigmoid", "soft_sign", "silu", "elu", "celu", "selu",
          "gelu", "leaky_relu", "relu", "relu6", "hard_tanh", "hard_sigmoid", "hard_silu"]


@pytest.mark.parametrize("name", SMOOTH)
def test_grad_matches_finite_differences(name):
    pts = np.array([-4.3, -2.2, -0.7, 0.35, 1.3, 2.7, 6.4])
    g = numbax.vmap(numbax.grad(getattr(nn, name)))(pts)
    np.testing.assert_allclose(np.asarray(g), _fd(REFERENCES[name], pts), rtol=1e-6, atol=1e-8)


def test_gelu_exact_grad():
    pts = np.array([-2.0, -0.5, 0.3, 1.7])
    g = numbax.vmap(numbax.grad(lambda x: nn.gelu(x, approximate=False)))(pts)
    np.testing.assert_allclose(np.asarray(g), _fd(lambda x: 0.5 * x * sp.erfc(-x / np.sqrt(2)),
                                                  pts), rtol=1e-6)


# JAX's derivative conventions at kinks (values from jax 0.10 with x64).
KINKS = [("relu", 0.0, 0.0), ("relu6", 0.0, 0.0), ("relu6", 6.0, 0.0),
         ("leaky_relu", 0.0, 1.0), ("elu", 0.0, 1.0), ("celu", 0.0, 1.0),
         ("selu", 0.0, 1.7580993408473766), ("hard_tanh", -1.0, 1.0), ("hard_tanh", 1.0, 1.0),
         ("hard_sigmoid", -3.0, 0.0), ("hard_sigmoid", 3.0, 0.0), ("hard_silu", -3.0, 0.0),
         ("hard_silu", 3.0, 1.0)]


@pytest.mark.parametrize("name,x,expected", KINKS)
def test_grad_at_kinks_follows_jax(name, x, expected):
    assert float(numbax.grad(getattr(nn, name))(x)) == pytest.approx(expected, rel=1e-12)


def test_relu_grad_under_jit_and_vmap():
    f = numbax.jit(numbax.vmap(numbax.grad(nn.relu)))
    np.testing.assert_array_equal(np.asarray(f(np.array([-1.0, 0.0, 2.0]))), [0.0, 0.0, 1.0])


def test_relu_keeps_integer_dtype():
    out = nn.relu(np.array([-2, 3], dtype=np.int32))
    assert out.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(out), [0, 3])


def _np_softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("axis", [-1, 0, (0, 1), None])
def test_softmax_and_log_softmax_match_scipy(axis):
    x = np.random.RandomState(0).randn(3, 4)
    np.testing.assert_allclose(np.asarray(nn.softmax(x, axis=axis)), sp.softmax(x, axis=axis),
                               rtol=1e-12)
    np.testing.assert_allclose(np.asarray(nn.log_softmax(x, axis=axis)),
                               sp.log_softmax(x, axis=axis), rtol=1e-12)


def test_softmax_extreme_inputs():
    x = np.array([[1000.0, 0.0, -1000.0], [-1e5, -1e5, -1e5]])
    np.testing.assert_allclose(np.asarray(nn.softmax(x)), sp.softmax(x, axis=-1), atol=1e-300)
    ls = np.asarray(nn.log_softmax(x))
    np.testing.assert_allclose(ls, sp.log_softmax(x, axis=-1))
    assert np.all(np.isfinite(ls))
    g = numbax.grad(lambda v: nn.log_softmax(v)[0, 1])(x)
    assert np.all(np.isfinite(np.asarray(g)))


def test_softmax_where_masks():
    x = np.array([1.0, 2.0, 3.0, 4.0])
    w = np.array([True, False, True, True])
    ref = np.zeros(4)
    ref[w] = sp.softmax(x[w])
    np.testing.assert_allclose(np.asarray(nn.softmax(x, where=w)), ref, rtol=1e-12)
    ls = np.asarray(nn.log_softmax(x, where=w))
    np.testing.assert_allclose(ls[w], sp.log_softmax(x[w]), rtol=1e-12)
    assert ls[1] == -np.inf


def test_softmax_grads_match_finite_differences():
    x = np.random.RandomState(1).randn(5)
    c = np.random.RandomState(2).randn(5)
    for fn, ref in [(nn.softmax, lambda v: sp.softmax(v)),
                    (nn.log_softmax, lambda v: sp.log_softmax(v))]:
        g = numbax.grad(lambda v, fn=fn: jnp.sum(fn(v) * c))(x)
        eye = np.eye(5) * 1e-6
        fd = [(np.sum(ref(x + e) * c) - np.sum(ref(x - e) * c)) / 2e-6 for e in eye]
        np.testing.assert_allclose(np.asarray(g), fd, rtol=1e-6, atol=1e-9)


def test_softmax_under_jit():
    x = np.random.RandomState(1).randn(5)
    c = np.random.RandomState(2).randn(5)
    np.testing.assert_allclose(np.asarray(numbax.jit(nn.softmax)(x)), sp.softmax(x), rtol=1e-12)
    jg = numbax.jit(numbax.grad(lambda v: jnp.sum(nn.softmax(v) * c)))(x)
    np.testing.assert_allclose(np.asarray(jg), np.asarray(
        numbax.grad(lambda v: jnp.sum(nn.softmax(v) * c))(x)), rtol=1e-12)


def test_logsumexp_is_stable():
    x = np.array([1000.0, 1000.0, -np.inf])
    assert float(nn.logsumexp(x)) == pytest.approx(1000 + np.log(2))
    np.testing.assert_allclose(np.asarray(numbax.grad(nn.logsumexp)(x)), [0.5, 0.5, 0.0])


def test_standardize():
    x = np.random.RandomState(3).randn(4, 6)
    ref = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(np.asarray(nn.standardize(x)), ref, rtol=1e-10)
    ref0 = (x - x.mean(0, keepdims=True)) / np.sqrt(x.var(0, keepdims=True) + 1e-5)
    np.testing.assert_allclose(np.asarray(nn.standardize(x, axis=0)), ref0, rtol=1e-10)
    out = nn.standardize(x, mean=1.0, variance=4.0, epsilon=0.0)
    np.testing.assert_allclose(np.asarray(out), (x - 1.0) / 2.0)
    w = np.array([True, True, False, True, False, True])
    xm = x[:, w]
    ref_w = (x - xm.mean(-1, keepdims=True)) / np.sqrt(xm.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(np.asarray(nn.standardize(x, where=w)), ref_w, rtol=1e-10)


def test_one_hot():
    out = nn.one_hot(np.array([0, 2, 5, -1]), 3)
    np.testing.assert_array_equal(np.asarray(out), np.eye(3)[[0, 2]].tolist() + [[0] * 3] * 2)
    assert out.dtype == np.float64
    out = nn.one_hot(np.array([[1, 0]]), 3, axis=0, dtype=np.int32)
    assert out.shape == (3, 1, 2) and out.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(out)[:, 0, :], [[0, 1], [1, 0], [0, 0]])
    out = numbax.jit(lambda v: nn.one_hot(v, 4))(np.array([3, 1]))
    np.testing.assert_array_equal(np.asarray(out), np.eye(4)[[3, 1]])


def test_bad_inputs():
    with pytest.raises(NumbaxTypeError, match="num_classes"):
        nn.one_hot(np.array([0, 1]), 2.5)
    with pytest.raises(NumbaxValueError, match="num_classes"):
        nn.one_hot(np.array([0, 1]), -1)
    with pytest.raises(NumbaxValueError, match="axis 3"):
        nn.one_hot(np.array([0, 1]), 2, axis=3)
    with pytest.raises(NumbaxTypeError, match="relu: x has type str"):
        nn.relu("a")
    with pytest.raises(NumbaxTypeError, match="sigmoid: x has type dict"):
        nn.sigmoid({})
    with pytest.raises(NumbaxValueError, match="axis 2 is out of bounds"):
        nn.softmax(np.ones((2, 2)), axis=2)
    with pytest.raises(NumbaxValueError, match="axis 5 is out of bounds"):
        nn.log_softmax(np.ones(3), axis=5)
    with pytest.raises(NumbaxTypeError, match="standardize: x has type"):
        nn.standardize(None)


# ----------------------------------------------------------------------------- initializers


def _key(seed=0):
    return numbax.random.PRNGKey(seed)


def test_constant_initializers():
    np.testing.assert_array_equal(np.asarray(initializers.zeros(_key(), (2, 3))), np.zeros((2, 3)))
    assert initializers.ones(_key(), (4,), np.float32).dtype == np.float32
    out = initializers.constant(2.5, np.float32)(_key(), (2,))
    assert out.dtype == np.float32 and np.asarray(out).tolist() == [2.5, 2.5]


@pytest.mark.parametrize("make,var_fn", [
    (initializers.glorot_uniform, lambda fi, fo: 2 / (fi + fo)),
    (initializers.glorot_normal, lambda fi, fo: 2 / (fi + fo)),
    (initializers.xavier_normal, lambda fi, fo: 2 / (fi + fo)),
    (initializers.lecun_uniform, lambda fi, fo: 1 / fi),
    (initializers.lecun_normal, lambda fi, fo: 1 / fi),
    (initializers.he_uniform, lambda fi, fo: 2 / fi),
    (initializers.he_normal, lambda fi, fo: 2 / fi),
    (initializers.kaiming_uniform, lambda fi, fo: 2 / fi),
])
def test_variance_scaling_statistics(make, var_fn):
    shape = (200, 300)
    w = np.asarray(make()(_key(1), shape))
    assert w.shape == shape and w.dtype == np.float64
    assert abs(w.mean()) < 0.01 * np.sqrt(var_fn(*shape)) * 10
    np.testing.assert_allclose(w.var(), var_fn(*shape), rtol=0.05)


def test_uniform_bounds_and_truncation():
    w = np.asarray(initializers.he_uniform()(_key(2), (100, 50)))
    bound = np.sqrt(3 * 2 / 100)
    assert w.min() >= -bound and w.max() <= bound
    w = np.asarray(initializers.lecun_normal()(_key(3), (100, 50)))
    assert np.abs(w).max() <= 2 * np.sqrt(1 / 100) / 0.87962566103423978 + 1e-12
    w32 = initializers.glorot_normal()(_key(3), (10, 5), np.float32)
    assert w32.dtype == np.float32


def test_normal_uniform_truncated_normal():
    n = np.asarray(initializers.normal(0.5)(_key(4), (20000,)))
    assert abs(n.std() - 0.5) < 0.02 and abs(n.mean()) < 0.02
    u = np.asarray(initializers.uniform(2.0)(_key(5), (20000,)))
    assert u.min() >= 0 and u.max() < 2.0 and abs(u.mean() - 1.0) < 0.03
    t = np.asarray(initializers.truncated_normal(3.0)(_key(6), (20000,)))
    assert np.abs(t).max() <= 6.0 and abs(t.std() - 3.0 * 0.87962566103423978) < 0.1


def test_variance_scaling_fans_and_modes():
    shape = (3, 3, 20, 40)  # conv kernel HWIO: fan_in = 9*20, fan_out = 9*40
    w = np.asarray(initializers.variance_scaling(1.0, "fan_out", "normal")(_key(7), shape))
    np.testing.assert_allclose(w.var(), 1 / (9 * 40), rtol=0.07)
    w = np.asarray(initializers.variance_scaling(
        1.0, "fan_geo_avg", "uniform")(_key(8), (100, 400)))
    np.testing.assert_allclose(w.var(), 1 / 200, rtol=0.05)


def test_initializer_bad_inputs():
    with pytest.raises(NumbaxValueError, match="mode"):
        initializers.variance_scaling(1.0, "fan_middle", "normal")
    with pytest.raises(NumbaxValueError, match="distribution"):
        initializers.variance_scaling(1.0, "fan_in", "cauchy")
    with pytest.raises(NumbaxValueError, match="rank 1"):
        initializers.glorot_normal()(_key(), (5,))
    with pytest.raises(NumbaxTypeError, match="dtype is int32"):
        initializers.normal()(_key(), (2,), np.int32)
    with pytest.raises(NumbaxTypeError, match="shape"):
        initializers.zeros(_key(), "ab")
