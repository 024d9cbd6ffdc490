"""numbax.nn: activations vs numpy/scipy formulas, extreme inputs, grads vs finite differences
and JAX's kink conventions, softmax family, one_hot, initializers' statistics, bad input."""
import json
import pathlib

import mpmath
import numpy as np
import pytest
import scipy.special as sp

import numbax
import numbax.numpy as jnp
from numbax import nn
from numbax.errors import NumbaxTypeError, NumbaxValueError
from numbax.nn import initializers
from numbax.test_util import check_grads
from tests.data.nn_calls import attention_cases

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


# ----------------------------------------------------------------------------- JAX 0.10 additions

REF = json.loads((pathlib.Path(__file__).parent / "data" / "nn_jax_reference.json").read_text())


def _load(entry):
    return np.array(entry["values"], entry["dtype"]).reshape(entry["shape"])


NEW_REFERENCES = {
    "identity": lambda x: x,
    "tanh": np.tanh,
    "squareplus": lambda x: (x + np.sqrt(x * x + 4)) / 2,
    "sparse_plus": lambda x: np.where(x <= -1, 0, np.where(x >= 1, x, (x + 1) ** 2 / 4)),
    "sparse_sigmoid": lambda x: np.clip((x + 1) / 2, 0, 1),
    "mish": lambda x: x * np.tanh(np.logaddexp(x, 0)),
}


@pytest.mark.parametrize("name", sorted(NEW_REFERENCES))
def test_new_activation_matches_numpy(name):
    out = getattr(nn, name)(X)
    assert out.dtype == np.float64
    np.testing.assert_allclose(np.asarray(out), NEW_REFERENCES[name](X), rtol=1e-14, atol=1e-300)


def test_glu_logmeanexp_log1mexp_match_closed_forms():
    m = np.random.default_rng(0).standard_normal((4, 6))
    np.testing.assert_allclose(nn.glu(m), m[:, :3] * sp.expit(m[:, 3:]), rtol=1e-15)
    np.testing.assert_allclose(nn.glu(m, axis=0), m[:2] * sp.expit(m[2:]), rtol=1e-15)
    np.testing.assert_allclose(nn.logmeanexp(m, axis=1), sp.logsumexp(m, 1) - np.log(6),
                               rtol=1e-14)
    where = m > -0.5
    want = [sp.logsumexp(row[w]) - np.log(w.sum()) for row, w in zip(m, where)]
    np.testing.assert_allclose(nn.logmeanexp(m, axis=1, where=where), want, rtol=1e-14)
    x = np.array([1e-12, 1e-3, 0.5, np.log(2), 2.0, 40.0, 800.0])
    with mpmath.workdps(60):
        exact = [float(mpmath.log(-mpmath.expm1(-mpmath.mpf(v)))) for v in x]
    np.testing.assert_allclose(nn.log1mexp(x), exact, rtol=1e-14)


@pytest.mark.parametrize("name,x", [
    ("squareplus", X), ("mish", X[1:-1]), ("log1mexp", np.array([0.2, 0.5, 3.0, 20.0])),
    ("glu", np.random.default_rng(1).standard_normal((3, 4))),
    ("logmeanexp", np.random.default_rng(2).standard_normal((3, 4))),
])
def test_new_grads_match_finite_differences(name, x):
    check_grads(getattr(nn, name), (x,), order=2)


class TestNewActivationsMatchJax:
    act = REF["activations"]

    def test_values_and_grads(self):
        x, pos, m = _load(self.act["x"]), _load(self.act["pos"]), _load(self.act["m"])
        where = np.array([[True, False, True, True]] * 3)
        calls = {
            "identity": lambda: nn.identity(x), "tanh": lambda: nn.tanh(x),
            "squareplus": lambda: nn.squareplus(x), "squareplus_b": lambda: nn.squareplus(x, 0.5),
            "sparse_plus": lambda: nn.sparse_plus(x),
            "sparse_sigmoid": lambda: nn.sparse_sigmoid(x),
            "mish": lambda: nn.mish(x), "glu": lambda: nn.glu(m), "glu_0": lambda: nn.glu(m.T, 0),
            "log1mexp": lambda: nn.log1mexp(pos), "logmeanexp": lambda: nn.logmeanexp(m),
            "logmeanexp_1": lambda: nn.logmeanexp(m, axis=1, keepdims=True),
            "logmeanexp_where": lambda: nn.logmeanexp(m, axis=1, where=where),
        }
        for name, fn in calls.items():
            got, want = fn(), _load(self.act[name])
            assert got.dtype == want.dtype == np.float32 and got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=name)
        grads = {"mish": (nn.mish, x), "squareplus": (nn.squareplus, x),
                 "sparse_plus": (nn.sparse_plus, x), "sparse_sigmoid": (nn.sparse_sigmoid, x),
                 "log1mexp": (nn.log1mexp, pos), "glu": (nn.glu, m)}
        for name, (fn, arg) in grads.items():
            got = numbax.grad(lambda a, fn=fn: fn(a).sum())(arg)
            np.testing.assert_allclose(got, _load(self.act[f"grad_{name}"]), rtol=1e-5,
                                       atol=1e-7, err_msg=name)


# ----------------------------------------------------------------------------- attention


def _attention_numpy(q, k, v, bias=None, mask=None, scale=None, causal=False,
                     kv_len=None, q_len=None, window=None):
    """Per batch, head and query row: softmax over the kept keys, by plain loops (float64)."""
    b, t, n, h = q.shape
    s, kh = k.shape[1], k.shape[2]
    scale = 1 / np.sqrt(h) if scale is None else scale
    out = np.zeros((b, t, n, h))
    for bi in range(b):
        for ni in range(n):
            kv = ni // (n // kh)
            for ti in range(t):
                logits = np.array([q[bi, ti, ni] @ k[bi, si, kv] for si in range(s)]) * scale
                if bias is not None:
                    logits = logits + np.broadcast_to(bias, (b, n, t, s))[bi, ni, ti]
                keep = np.ones(s, bool)
                if mask is not None:
                    keep &= np.broadcast_to(mask, (b, n, t, s))[bi, ni, ti]
                if causal:
                    keep &= np.arange(s) <= ti
                if window is not None:
                    keep &= (ti <= np.arange(s) + window[0]) & (ti >= np.arange(s) - window[1])
                if kv_len is not None:
                    keep &= np.arange(s) < kv_len[bi]
                w = np.exp(logits[keep] - logits[keep].max())
                out[bi, ti, ni] = (w / w.sum()) @ v[bi, :, kv][keep]
                if q_len is not None and ti >= q_len[bi]:
                    out[bi, ti, ni] = 0
    return out


class TestDotProductAttention:
    ref = REF["attention"]
    args = {name: _load(e) for name, e in ref["args"].items()}

    def test_matches_jax(self):
        with numbax.config.override("jax_enable_x64", False):
            for name, fn in attention_cases(nn, self.args).items():
                got, want = fn(), self.ref[name]
                pairs = zip(got, want) if isinstance(got, tuple) else [(got, want)]
                for g, w in pairs:
                    w = _load(w)
                    assert g.dtype == w.dtype and g.shape == w.shape, name
                    np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=name)
            grad = numbax.grad(lambda q: (nn.dot_product_attention(
                q, self.args["k2"], self.args["v2"], bias=self.args["bias1"],
                is_causal=True) ** 2).sum())(self.args["q"])
            np.testing.assert_allclose(grad, _load(self.ref["grad_q"]), rtol=1e-4, atol=1e-5)
        q, k, v = (self.args[n].astype(np.float64) for n in ("q", "k", "v"))
        got = nn.dot_product_attention(q, k, v, mask=self.args["mask"])
        assert got.dtype == np.float64  # softmax in float32, as JAX
        np.testing.assert_allclose(got, _load(self.ref["float64"]), rtol=1e-5, atol=1e-6)

    @pytest.mark.parametrize("kw", [
        {}, {"causal": True}, {"scale": 0.3, "window": (1, 0)},
        {"kv_len": np.array([2, 4], np.int32), "q_len": np.array([3, 1], np.int32)},
        {"bias": "bias", "mask": "mask"},
    ])
    def test_matches_loops(self, kw):
        rng = np.random.default_rng(5)
        q, k, v = rng.standard_normal((2, 3, 4, 5)), rng.standard_normal((2, 4, 2, 5)), \
            rng.standard_normal((2, 4, 2, 5))
        kw = dict(kw)
        if kw.get("bias") == "bias":
            kw["bias"] = rng.standard_normal((2, 1, 3, 4))
            kw["mask"] = rng.random((1, 4, 3, 4)) < 0.8
            kw["mask"][..., 0] = True
        want = _attention_numpy(q, k, v, **kw)
        names = {"window": "local_window_size", "causal": "is_causal", "kv_len":
                 "key_value_seq_lengths", "q_len": "query_seq_lengths"}
        call = {names.get(n, n): a for n, a in kw.items()}
        call["is_causal"] = call.get("is_causal", False)
        got = nn.dot_product_attention(q, k, v, **call)
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-7)  # float32 softmax

    def test_grad_jit_vmap(self):
        rng = np.random.default_rng(6)
        q, k, v = (rng.standard_normal((1, 2, 2, 3)) for _ in range(3))

        def f(q, k, v):
            return nn.dot_product_attention(q, k, v, is_causal=True)

        check_grads(f, (q, k, v), order=1, modes=("rev",), atol=1e-3, rtol=1e-3)
        np.testing.assert_allclose(numbax.jit(f)(q, k, v), f(q, k, v), rtol=1e-6)
        batch = [rng.standard_normal((3, 1, 2, 2, 3)) for _ in range(3)]
        np.testing.assert_allclose(numbax.vmap(f)(*batch),
                                   np.stack([f(*(x[i] for x in batch)) for i in range(3)]),
                                   rtol=1e-6)

    def test_bad_input(self):
        q = np.zeros((1, 2, 4, 8), np.float32)
        k = np.zeros((1, 3, 3, 8), np.float32)
        with pytest.raises(NumbaxValueError, match="query has 4 heads and key has 3"):
            nn.dot_product_attention(q, k, k)
        with pytest.raises(NumbaxValueError, match=r"value has shape \(1, 3, 3, 4\)"):
            nn.dot_product_attention(q[..., :3, :], k, k[..., :4])
        with pytest.raises(NumbaxValueError, match="query has dtype float64"):
            nn.dot_product_attention(q[..., :3, :].astype(np.float64), k, k)
        with pytest.raises(NumbaxValueError, match="mask has dtype float32"):
            nn.dot_product_attention(q[..., :3, :], k, k, mask=np.ones((1, 1, 2, 3), np.float32))
        with pytest.raises(NumbaxValueError, match="key_value_seq_lengths has dtype int64"):
            nn.dot_product_attention(q[..., :3, :], k, k, key_value_seq_lengths=np.array([2]))
        with pytest.raises(NumbaxValueError, match="implementation is 'cudnn'"):
            nn.dot_product_attention(q[..., :3, :], k, k, implementation="cudnn")


def test_scaled_matmul_and_dot_general():
    rng = np.random.default_rng(8)
    a, b = rng.standard_normal((2, 3, 8)), rng.standard_normal((2, 4, 8))
    sa, sb = rng.random((2, 3, 2)), rng.random((2, 4, 2))
    got = nn.scaled_matmul(a, b, sa, sb)
    want = np.einsum("bmk,bnk->bmn", a * np.repeat(sa, 4, -1), b * np.repeat(sb, 4, -1))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert nn.scaled_matmul(a, b, sa, sb, preferred_element_type=np.float64).dtype == np.float64
    dn = (((2,), (2,)), ((0,), (0,)))
    out = nn.scaled_dot_general(a.astype(np.float32), b.astype(np.float32), dn)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, np.einsum("bmk,bnk->bmn", a, b), rtol=1e-5)
    cfg = nn.get_scaled_dot_general_config("mxfp8")
    assert (cfg.mode, cfg.block_size, cfg.global_scale) == ("mxfp8", 32, None)
    cfg4 = nn.get_scaled_dot_general_config("nvfp4", np.array([0.5], np.float32))
    assert cfg4.block_size == 16 and cfg4.scale_type == "float8_e4m3fn"
    with pytest.raises(NumbaxTypeError, match="configs is given"):
        nn.scaled_dot_general(a, b, dn, configs=[cfg] * 3)
    with pytest.raises(NumbaxValueError, match="mode is 'int8'"):
        nn.get_scaled_dot_general_config("int8")
    with pytest.raises(NumbaxValueError, match=r"lhs_scales has shape \(2, 3, 3\)"):
        nn.scaled_matmul(a, b, rng.random((2, 3, 3)), rng.random((2, 4, 3)))
    with pytest.raises(NumbaxValueError, match=r"lhs has shape \(3, 8\), expected a 3D"):
        nn.scaled_matmul(a[0], b, sa, sb)


def test_new_activation_bad_inputs():
    with pytest.raises(NumbaxValueError, match=r"glu: x has shape \(3,\), expected an even"):
        nn.glu(np.ones(3))
    with pytest.raises(NumbaxValueError, match="axis 4 is out of bounds"):
        nn.logmeanexp(np.ones((2, 2)), axis=4)
    for name in ("identity", "squareplus", "sparse_plus", "sparse_sigmoid", "mish", "glu",
                 "log1mexp", "logmeanexp"):
        with pytest.raises(NumbaxTypeError, match=f"{name}: x has type str"):
            getattr(nn, name)("a")


class TestOrthogonalInitializers:
    ref = REF["initializers"]

    def test_match_jax(self):
        k = numbax.random.PRNGKey(4)
        cases = {
            "orthogonal_3x5": lambda: initializers.orthogonal()(k, (3, 5)),
            "orthogonal_6x2": lambda: initializers.orthogonal(scale=2.0)(k, (6, 2)),
            "orthogonal_axis0": lambda: initializers.orthogonal(column_axis=0)(k, (4, 3)),
            "orthogonal_3d": lambda: initializers.orthogonal()(k, (2, 3, 4)),
            "delta_orthogonal": lambda: initializers.delta_orthogonal()(k, (3, 3, 2, 4)),
            "delta_orthogonal_1d": lambda: initializers.delta_orthogonal(scale=0.5)(k, (3, 4, 4)),
            "delta_orthogonal_3d": lambda: initializers.delta_orthogonal()(k, (3, 3, 3, 2, 2)),
        }
        with numbax.config.override("jax_enable_x64", False):
            for name, fn in cases.items():
                got, want = fn(), _load(self.ref[name])
                assert got.dtype == want.dtype and got.shape == want.shape
                np.testing.assert_allclose(got, want, atol=1e-6, err_msg=name)

    def test_orthogonality(self):
        w = np.asarray(initializers.orthogonal(scale=3.0)(_key(1), (2, 3, 6)))
        flat = w.reshape(6, 6)
        np.testing.assert_allclose(flat.T @ flat, 9 * np.eye(6), atol=1e-12)
        w = np.asarray(initializers.orthogonal(column_axis=0)(_key(2), (4, 10)))
        np.testing.assert_allclose(w @ w.T, np.eye(4), atol=1e-12)
        d = np.asarray(initializers.delta_orthogonal()(_key(3), (3, 5, 2, 4)))
        np.testing.assert_allclose(d[1, 2] @ d[1, 2].T, np.eye(2), atol=1e-12)
        assert np.count_nonzero(d) == np.count_nonzero(d[1, 2])
        assert initializers.orthogonal()(_key(), (0, 3)).shape == (0, 3)

    def test_bad_input(self):
        with pytest.raises(NumbaxValueError, match="rank 1, expected rank >= 2"):
            initializers.orthogonal()(_key(), (4,))
        with pytest.raises(NumbaxValueError, match="column_axis 2 is out of bounds"):
            initializers.orthogonal(column_axis=2)(_key(), (4, 3))
        with pytest.raises(NumbaxValueError, match="expected a 3D, 4D or 5D"):
            initializers.delta_orthogonal()(_key(), (3, 3))
        with pytest.raises(NumbaxValueError, match="fan_in 4 > fan_out 2"):
            initializers.delta_orthogonal()(_key(), (3, 4, 2))
        with pytest.raises(NumbaxTypeError, match="dtype is int32"):
            initializers.orthogonal()(_key(), (2, 2), np.int32)
