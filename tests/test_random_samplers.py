"""numbax.random's samplers beyond uniform/normal: JAX's recorded draws (tests/data), their
distributions against scipy.stats, gamma's reparameterisation gradient, and bad input."""
import json
import math
import pathlib

import numpy as np
import pytest
from scipy import special, stats

import numbax
from numbax import random
from numbax._src.errors import NumbaxDTypeError
from numbax._src.random_gamma import random_gamma_grad
from numbax.errors import NumbaxTypeError, NumbaxValueError
from tests.data.sampler_calls import sampler_calls

REF = json.loads(
    (pathlib.Path(__file__).parent / "data" / "samplers_jax_reference.json").read_text())
CALLS = sampler_calls(random)
MAX_ULP = 4  # transforms through numpy's log/exp/tan/sqrt/lgamma vs XLA's: measured <= 3


def _load(entry):
    dtype = np.dtype(entry["dtype"])
    if dtype.kind == "f":
        return np.array(entry["bits"], f"u{dtype.itemsize}").view(dtype).reshape(entry["shape"])
    return np.array(entry["bits"], dtype).reshape(entry["shape"])


def _ulps(got, want):
    got = np.asarray(got)
    assert got.dtype == want.dtype == np.float32
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    diff = np.abs(got.view(np.int32).astype(np.int64) - want.view(np.int32).astype(np.int64))
    return np.where(same, 0, diff)


@pytest.fixture
def x32():
    with numbax.config.override("jax_enable_x64", False):
        yield


# ----------------------------------------------------------------------------- JAX's draws


@pytest.mark.usefixtures("x32")
@pytest.mark.parametrize("i,name", list(enumerate(CALLS)))
def test_draws_match_jax(i, name):
    """Same key, same draws: integers and booleans exactly, floats to MAX_ULP."""
    want = _load(REF["samplers"][name])
    got = np.asarray(CALLS[name](random.PRNGKey(10 + i)))
    assert got.shape == want.shape and got.dtype == want.dtype
    if want.dtype.kind == "f":
        assert _ulps(got, want).max() <= MAX_ULP
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.usefixtures("x32")
class TestGammaGradient:
    ref = REF["gamma_grads"]

    @pytest.mark.parametrize("name", ["gamma", "loggamma"])
    def test_matches_jax(self, name):
        fn = getattr(random, name)
        a = _load(self.ref[f"{name}_a"])
        keys = random.split(random.PRNGKey(5), len(a))
        got = numbax.vmap(numbax.grad(lambda ai, k: fn(k, ai)))(a, keys)
        assert _ulps(got, _load(self.ref[f"{name}_grad"])).max() <= 8

    def test_random_gamma_grad_matches_jax(self):
        got = random_gamma_grad(_load(self.ref["grid_a"]), _load(self.ref["grid_x"]))
        np.testing.assert_allclose(got, _load(self.ref["grid_grad"]), rtol=5e-6)

    def test_beta_grad_matches_jax(self):
        got = numbax.grad(lambda b: random.beta(random.PRNGKey(2), 2.0, b).sum())(
            np.float32([0.5, 3.0]))
        assert _ulps(got, _load(self.ref["beta_grad"])).max() <= 8


def test_gamma_grad_is_the_quantile_derivative():
    """dx/da at fixed u = P(a, x): finite differences of scipy's inverse incomplete gamma."""
    a = np.array([0.3, 1.0, 2.5, 9.0, 40.0])
    keys = random.split(random.PRNGKey(1), len(a))
    x = np.asarray(numbax.vmap(lambda k, ai: random.gamma(k, ai))(keys, a))
    got = np.asarray(numbax.vmap(numbax.grad(lambda ai, k: random.gamma(k, ai)))(a, keys))
    u = special.gammainc(a, x)
    h = 1e-6 * a
    want = (special.gammaincinv(a + h, u) - special.gammaincinv(a - h, u)) / (2 * h)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(random_gamma_grad(a, x), want, rtol=1e-6)
    edge = np.asarray(random_gamma_grad(np.array([1.0, -1.0, 2.0]), np.array([0.0, 1.0, -1.0])))
    assert edge[0] == 0 and np.isnan(edge[1:]).all()


def test_random_gamma_p():
    """JAX's primitive: binds on key data, differentiates like gamma, batches over keys."""
    key = np.array([0, 7], np.uint32)
    a = np.array([0.5, 2.0, 4.0])
    out = random.random_gamma_p.bind(key, a, log_space=False)
    np.testing.assert_array_equal(out, random.gamma(key, a))
    log_out = random.random_gamma_p.bind(key, a, log_space=True)
    np.testing.assert_allclose(log_out, random.loggamma(key, a), rtol=1e-12)
    g = numbax.grad(lambda a: random.random_gamma_p.bind(key, a, log_space=False).sum())(a)
    np.testing.assert_allclose(g, numbax.grad(lambda a: random.gamma(key, a).sum())(a))
    keys = random.split(random.PRNGKey(3), 2)
    got = numbax.vmap(lambda k: random.random_gamma_p.bind(k, a, log_space=False))(keys)
    np.testing.assert_array_equal(got, np.stack([random.gamma(k, a) for k in keys]))
    with pytest.raises(NumbaxTypeError, match="random_gamma: key has shape"):
        random.random_gamma_p.bind(np.zeros(3, np.uint32), a, log_space=False)


# ----------------------------------------------------------------------------- distributions

N = 3000
KS_BOUND = 1.95 / math.sqrt(N)  # 0.1% level (fixed keys: deterministic)


def _ks(samples, cdf):
    return stats.kstest(np.asarray(samples, np.float64).ravel(), cdf).statistic


def _dsm_cdf(x, loc, scale):
    z = (x - loc) / scale
    return 0.5 + 0.5 * np.sign(z) * stats.maxwell.cdf(np.abs(z))


CONTINUOUS = {
    "cauchy": (lambda k: random.cauchy(k, (N,)), stats.cauchy.cdf),
    "laplace": (lambda k: random.laplace(k, (N,)), stats.laplace.cdf),
    "logistic": (lambda k: random.logistic(k, (N,)), stats.logistic.cdf),
    "lognormal": (lambda k: random.lognormal(k, 0.5, (N,)), stats.lognorm(0.5).cdf),
    "pareto": (lambda k: random.pareto(k, 3.0, (N,)), stats.pareto(3.0).cdf),
    "maxwell": (lambda k: random.maxwell(k, (N,)), stats.maxwell.cdf),
    "double_sided_maxwell": (lambda k: random.double_sided_maxwell(k, 1.0, 2.0, (N,)),
                             lambda x: _dsm_cdf(x, 1.0, 2.0)),
    "rayleigh": (lambda k: random.rayleigh(k, 2.0, (N,)), stats.rayleigh(scale=2.0).cdf),
    "triangular": (lambda k: random.triangular(k, -1.0, 0.5, 2.0, (N,)),
                   stats.triang(0.5, loc=-1.0, scale=3.0).cdf),
    "wald": (lambda k: random.wald(k, 1.5, (N,)), stats.invgauss(1.5).cdf),
    "weibull_min": (lambda k: random.weibull_min(k, 2.0, 1.5, (N,)),
                    stats.weibull_min(1.5, scale=2.0).cdf),
    "t": (lambda k: random.t(k, 5.0, (N,)), stats.t(5.0).cdf),
    "chisquare": (lambda k: random.chisquare(k, 3.0, (N,)), stats.chi2(3.0).cdf),
    "f": (lambda k: random.f(k, 4.0, 7.0, (N,)), stats.f(4.0, 7.0).cdf),
    "generalized_normal": (lambda k: random.generalized_normal(k, 1.5, (N,)),
                           stats.gennorm(1.5).cdf),
    "gumbel_highest": (lambda k: random.gumbel(k, (N,), np.float32, mode="highest"),
                       stats.gumbel_r.cdf),
}


@pytest.mark.parametrize("name", sorted(CONTINUOUS))
def test_continuous_distribution(name):
    draw, cdf = CONTINUOUS[name]
    samples = draw(random.PRNGKey(sorted(CONTINUOUS).index(name)))
    assert _ks(samples, cdf) < KS_BOUND


def _chi2_frequencies(counts, probs):
    """Pearson's statistic over the cells with expected count >= 5 (the rest pooled)."""
    n = counts.sum()
    expected = probs * n
    big = expected >= 5
    obs = np.append(counts[big], counts[~big].sum())
    exp = np.append(expected[big], n - expected[big].sum())
    keep = exp > 0
    stat = ((obs[keep] - exp[keep]) ** 2 / exp[keep]).sum()
    return stat, stats.chi2(keep.sum() - 1).ppf(0.995)


@pytest.mark.parametrize("name,draw,pmf", [
    ("poisson_3", lambda k: random.poisson(k, 3.0, (N,)), stats.poisson(3.0).pmf),
    ("poisson_40", lambda k: random.poisson(k, 40.0, (N,)), stats.poisson(40.0).pmf),
    ("binomial_inv", lambda k: random.binomial(k, 12, 0.3, (N,)), stats.binom(12, 0.3).pmf),
    ("binomial_btrs", lambda k: random.binomial(k, 200, 0.75, (N,)),
     stats.binom(200, 0.75).pmf),
    ("geometric", lambda k: random.geometric(k, 0.3, (N,)), stats.geom(0.3).pmf),
])
def test_discrete_distribution(name, draw, pmf):
    samples = np.asarray(draw(random.PRNGKey(len(name)))).astype(np.int64)
    assert samples.min() >= 0
    support = np.arange(samples.max() + 30)
    stat, bound = _chi2_frequencies(np.bincount(samples, minlength=support.size),
                                    pmf(support))
    assert stat < bound


def test_multinomial_rademacher_ball_orthogonal():
    p = np.array([0.2, 0.3, 0.5])
    m = np.asarray(random.multinomial(random.PRNGKey(0), 20, p, shape=(500, 3)))
    assert m.shape == (500, 3) and m.dtype == np.float64
    np.testing.assert_array_equal(m.sum(-1), 20)
    assert np.all(np.abs(m.mean(0) - 20 * p) < 4 * np.sqrt(20 * p * (1 - p) / 500))
    r = np.asarray(random.rademacher(random.PRNGKey(1), (N,)))
    assert r.dtype == np.int64 and set(np.unique(r)) == {-1, 1} and abs(r.mean()) < 0.06
    b = np.asarray(random.ball(random.PRNGKey(2), 3, shape=(N,)))
    norms = np.linalg.norm(b, axis=-1)
    assert b.shape == (N, 3) and norms.max() < 1
    assert _ks(norms ** 3, stats.uniform.cdf) < KS_BOUND  # uniform in the ball
    q = np.asarray(random.orthogonal(random.PRNGKey(3), 4, (2,)))
    np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(4), q.shape),
                               atol=1e-12)
    w = np.asarray(random.orthogonal(random.PRNGKey(4), 2, m=5))
    assert w.shape == (2, 5)
    np.testing.assert_allclose(w @ w.T, np.eye(2), atol=1e-12)


def test_samplers_under_jit_and_vmap():
    keys = random.split(random.PRNGKey(6), 3)
    f = lambda k: random.laplace(k, (4,)) + random.poisson(k, 2.0, (4,))  # noqa: E731
    np.testing.assert_array_equal(numbax.vmap(f)(keys), np.stack([f(k) for k in keys]))
    g = lambda k: random.cauchy(k, (5,))  # noqa: E731
    np.testing.assert_allclose(numbax.jit(g)(keys[0]), g(keys[0]), rtol=1e-14)


# ----------------------------------------------------------------------------- bad input

_NEEDS_KEY = {
    "cauchy": lambda k: random.cauchy(k), "laplace": lambda k: random.laplace(k),
    "logistic": lambda k: random.logistic(k), "lognormal": lambda k: random.lognormal(k),
    "pareto": lambda k: random.pareto(k, 2.0), "maxwell": lambda k: random.maxwell(k),
    "double_sided_maxwell": lambda k: random.double_sided_maxwell(k, 0.0, 1.0),
    "rayleigh": lambda k: random.rayleigh(k, 1.0),
    "triangular": lambda k: random.triangular(k, 0.0, 0.5, 1.0),
    "wald": lambda k: random.wald(k, 1.0), "weibull_min": lambda k: random.weibull_min(k, 1, 1),
    "rademacher": lambda k: random.rademacher(k), "geometric": lambda k: random.geometric(k, .5),
    "poisson": lambda k: random.poisson(k, 1.0), "binomial": lambda k: random.binomial(k, 3, .5),
    "multinomial": lambda k: random.multinomial(k, 3, np.ones(2) / 2),
    "chisquare": lambda k: random.chisquare(k, 2.0), "f": lambda k: random.f(k, 2.0, 3.0),
    "t": lambda k: random.t(k, 2.0), "orthogonal": lambda k: random.orthogonal(k, 2),
    "generalized_normal": lambda k: random.generalized_normal(k, 2.0),
    "ball": lambda k: random.ball(k, 2),
}


@pytest.mark.parametrize("name", sorted(_NEEDS_KEY))
def test_bad_key_names_the_argument(name):
    with pytest.raises(NumbaxTypeError, match=rf"random.{name}: key has shape \(3,\)"):
        _NEEDS_KEY[name](np.arange(3))


@pytest.mark.parametrize("fn", [
    lambda k: random.cauchy(k, (2,), np.int32),
    lambda k: random.t(k, 2.0, dtype=np.int32),
    lambda k: random.binomial(k, 3, 0.5, dtype=np.int32),
    lambda k: random.geometric(k, 0.5, dtype=np.float32),
    lambda k: random.poisson(k, 1.0, dtype=np.float32),
])
def test_bad_dtype_is_a_value_error_as_in_jax(fn):
    with pytest.raises(NumbaxDTypeError, match="dtype is") as info:
        fn(random.PRNGKey(0))
    assert isinstance(info.value, ValueError) and isinstance(info.value, TypeError)


def test_other_bad_input():
    k = random.PRNGKey(0)
    with pytest.raises(NumbaxValueError, match=r"b has shape \(3,\).*shape=\(2,\)"):
        random.pareto(k, np.ones(3), (2,))
    with pytest.raises(NumbaxValueError, match="lam has shape"):
        random.poisson(k, np.ones(3), (2,))
    with pytest.raises(NumbaxValueError, match="df has dtype float64"):
        random.chisquare(k, np.float64(3), dtype=np.float32)
    with pytest.raises(NumbaxValueError, match="mode is 'top'"):
        random.gumbel(k, mode="top")
    with pytest.raises(NumbaxValueError, match="mode is 'top'"):
        random.categorical(k, np.zeros(3), mode="top")
    with pytest.raises(NumbaxTypeError, match="n has type float"):
        random.orthogonal(k, 2.5)
    with pytest.raises(NumbaxValueError, match="d is -1"):
        random.ball(k, -1)
    with pytest.raises(NumbaxValueError, match="category axis"):
        random.multinomial(k, 3, 0.5)
    with pytest.raises(NumbaxValueError, match=r"n has shape \(4,\)"):
        random.multinomial(k, np.ones(4), np.ones((2, 3)) / 3)
