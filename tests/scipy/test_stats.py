"""numbax.scipy.stats against scipy.stats: every distribution function on points inside and
outside the support, derivatives, jit/vmap, gaussian_kde, mode/rankdata/sem, bad input."""
import numpy as np
import pytest
import scipy.special as sp
import scipy.stats as st

import numbax
from numbax.errors import NumbaxTypeError, NumbaxValueError
from numbax.scipy import stats

RNG = np.random.default_rng(3)
XS = np.array([-40.0, -3.0, -0.5, 0.0, 0.2, 0.5, 0.9, 1.5, 4.0, 40.0])
QS = np.array([1e-12, 0.01, 0.3, 0.5, 0.9, 0.999])
KS = np.array([-1.0, 0.0, 1.0, 2.0, 3.0, 5.0, 9.0])

CONTINUOUS = {
    # dist: (numbax args after x, scipy args after x, functions)
    "norm": ((0.5, 2.0), (0.5, 2.0), "logpdf pdf cdf logcdf sf logsf ppf isf"),
    "uniform": ((-0.5, 2.0), (-0.5, 2.0), "logpdf pdf cdf ppf"),
    "expon": ((0.5, 2.0), (0.5, 2.0), "logpdf pdf cdf logcdf sf logsf ppf"),
    "laplace": ((0.5, 2.0), (0.5, 2.0), "logpdf pdf cdf"),
    "logistic": ((0.5, 2.0), (0.5, 2.0), "logpdf pdf cdf sf ppf isf"),
    "cauchy": ((0.5, 2.0), (0.5, 2.0), "logpdf pdf cdf logcdf sf logsf ppf isf"),
    "gumbel_l": ((0.5, 2.0), (0.5, 2.0), "logpdf pdf cdf logcdf sf logsf ppf"),
    "gumbel_r": ((0.5, 2.0), (0.5, 2.0), "logpdf pdf cdf logcdf sf logsf ppf"),
    "beta": ((2.0, 3.0, -0.2, 1.5), (2.0, 3.0, -0.2, 1.5), "logpdf pdf cdf logcdf sf logsf"),
    "gamma": ((2.5, -0.2, 1.5), (2.5, -0.2, 1.5), "logpdf pdf cdf logcdf sf logsf"),
    "chi2": ((3.0, -0.2, 1.5), (3.0, -0.2, 1.5), "logpdf pdf cdf logcdf sf logsf"),
    "t": ((3.0, 0.5, 1.5), (3.0, 0.5, 1.5), "logpdf pdf"),
    "pareto": ((2.0, -0.5, 0.8), (2.0, -0.5, 0.8), "logpdf pdf cdf logcdf sf logsf ppf"),
    "gennorm": ((1.5,), (1.5,), "logpdf pdf cdf"),
    "vonmises": ((1.7,), (1.7,), "logpdf pdf"),
    "wrapcauchy": ((0.4,), (0.4,), "logpdf pdf"),
    "truncnorm": ((-1.0, 2.0, 0.5, 1.5), (-1.0, 2.0, 0.5, 1.5), "logpdf pdf cdf logcdf sf logsf"),
}
CONT_ROWS = [(d, f) for d, (_, _, fs) in CONTINUOUS.items() for f in fs.split()]


@pytest.mark.parametrize("dist,fn", CONT_ROWS, ids=[f"{d}.{f}" for d, f in CONT_ROWS])
def test_continuous_matches_scipy(dist, fn):
    ours, theirs, _ = CONTINUOUS[dist]
    points = QS if fn in ("ppf", "isf") else XS
    if dist == "wrapcauchy":
        points = np.array([0.0, 0.5, 2.0, 6.0])
    got = np.asarray(getattr(getattr(stats, dist), fn)(points, *ours))
    want = getattr(getattr(st, dist), fn)(points, *theirs)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-300, err_msg=f"{dist}.{fn}")


def test_truncnorm_far_tail_and_nan():
    x = np.array([5.5, 7.0, 8.9])
    for fn in ["logpdf", "logcdf", "logsf"]:
        np.testing.assert_allclose(np.asarray(getattr(stats.truncnorm, fn)(x, 5.0, 9.0)),
                                   getattr(st.truncnorm, fn)(x, 5.0, 9.0), rtol=1e-9)
    assert np.isnan(float(stats.truncnorm.cdf(np.nan, -1.0, 1.0)))  # JAX returns 1 here


DISCRETE = {
    "bernoulli": ((0.3,), (0.3,), "logpmf pmf cdf"),
    "binom": ((9.0, 0.3), (9, 0.3), "logpmf pmf"),
    "betabinom": ((9.0, 2.0, 3.5), (9, 2.0, 3.5), "logpmf pmf"),
    "geom": ((0.3,), (0.3,), "logpmf pmf"),
    "nbinom": ((3.0, 0.4), (3, 0.4), "logpmf pmf"),
    "poisson": ((2.5,), (2.5,), "logpmf pmf cdf"),
}
DISC_ROWS = [(d, f) for d, (_, _, fs) in DISCRETE.items() for f in fs.split()]


@pytest.mark.parametrize("dist,fn", DISC_ROWS, ids=[f"{d}.{f}" for d, f in DISC_ROWS])
def test_discrete_matches_scipy(dist, fn):
    ours, theirs, _ = DISCRETE[dist]
    got = np.asarray(getattr(getattr(stats, dist), fn)(KS, *ours))
    want = getattr(getattr(st, dist), fn)(KS, *theirs)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300, err_msg=f"{dist}.{fn}")


def test_other_discrete_functions():
    np.testing.assert_allclose(np.asarray(stats.bernoulli.ppf(QS, 0.3)), st.bernoulli.ppf(QS, 0.3))
    mu = np.array([0.5, 3.0, 20.0, 99.0])
    np.testing.assert_allclose(np.asarray(stats.poisson.entropy(mu)), st.poisson.entropy(mu),
                               rtol=1e-12)
    for big in (150.0, 1e4):  # scipy's own value drifts here: sum -p log p directly
        k = np.arange(0, 3 * big)
        log_p = k * np.log(big) - sp.gammaln(k + 1) - big
        exact = -np.sum(np.exp(log_p) * log_p)
        assert float(stats.poisson.entropy(big)) == pytest.approx(exact, rel=1e-9)
    x, p = np.array([[1, 2, 0], [0, 3, 0], [1, 1, 0]]), np.array([0.2, 0.5, 0.3])
    np.testing.assert_allclose(np.asarray(stats.multinomial.pmf(x, 3, p)),
                               st.multinomial.pmf(x, 3, p), rtol=1e-12)
    assert float(stats.multinomial.logpmf(np.array([1, 1, 0]), 3, p)) == -np.inf


def test_multivariate_match_scipy():
    a = RNG.normal(size=(3, 3))
    cov = a @ a.T + np.eye(3)
    mean = RNG.normal(size=3)
    x = RNG.normal(size=(5, 3))
    np.testing.assert_allclose(np.asarray(stats.multivariate_normal.logpdf(x, mean, cov)),
                               st.multivariate_normal.logpdf(x, mean, cov), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(stats.multivariate_normal.pdf(x[0], mean, cov)),
                               st.multivariate_normal.pdf(x[0], mean, cov), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(stats.multivariate_normal.logpdf(x, mean, 2.0)),
                               st.multivariate_normal.logpdf(x, mean, 2.0), rtol=1e-12)
    alpha = np.array([1.5, 2.0, 3.0])
    pts = RNG.dirichlet(alpha, size=4).T
    np.testing.assert_allclose(np.asarray(stats.dirichlet.logpdf(pts, alpha)),
                               st.dirichlet.logpdf(pts, alpha), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(stats.dirichlet.pdf(pts[:2], alpha)),
                               st.dirichlet.pdf(pts, alpha), rtol=1e-12)


def test_gradients_match_finite_differences():
    def fd(f, x, eps=1e-6):
        return (f(x + eps) - f(x - eps)) / (2 * eps)

    for f, ref, x in [
        (lambda v: stats.gamma.logpdf(1.3, v), lambda v: st.gamma.logpdf(1.3, v), 2.5),
        (lambda v: stats.gamma.cdf(1.3, v), lambda v: st.gamma.cdf(1.3, v), 2.5),
        (lambda v: stats.beta.cdf(v, 2.0, 3.0), lambda v: st.beta.cdf(v, 2.0, 3.0), 0.3),
        (lambda v: stats.t.logpdf(0.7, v), lambda v: st.t.logpdf(0.7, v), 4.0),
        (lambda v: stats.truncnorm.logcdf(v, -1.0, 2.0), lambda v: st.truncnorm.logcdf(
            v, -1.0, 2.0), 0.4),
        (lambda v: stats.norm.ppf(v, 1.0, 2.0), lambda v: st.norm.ppf(v, 1.0, 2.0), 0.2),
        (lambda v: stats.poisson.logpmf(3.0, v), lambda v: st.poisson.logpmf(3, v), 2.5),
        (lambda v: stats.vonmises.logpdf(0.4, v), lambda v: st.vonmises.logpdf(0.4, v), 1.3),
        (lambda v: stats.cauchy.logsf(v), lambda v: st.cauchy.logsf(v), 1.2),
    ]:
        assert float(numbax.grad(f)(x)) == pytest.approx(fd(ref, x), rel=1e-6)


def test_jit_and_vmap():
    x = np.array([0.2, 1.1, 3.0])
    got = numbax.jit(lambda v: stats.gamma.logpdf(v, 2.0) + stats.norm.logcdf(v))(x)
    np.testing.assert_allclose(np.asarray(got), st.gamma.logpdf(x, 2.0) + st.norm.logcdf(x),
                               rtol=1e-12)
    batched = numbax.vmap(stats.beta.logpdf, in_axes=(0, 0, None))(x / 4, x, 2.0)
    np.testing.assert_allclose(np.asarray(batched), st.beta.logpdf(x / 4, x, 2.0), rtol=1e-12)


def test_gaussian_kde_matches_scipy():
    data = RNG.normal(size=(2, 40))
    weights = RNG.uniform(0.5, 1.5, 40)
    pts = RNG.normal(size=(2, 7))
    for kwargs in [{}, {"bw_method": "silverman"}, {"bw_method": 0.4}, {"weights": weights}]:
        ours, theirs = stats.gaussian_kde(data, **kwargs), st.gaussian_kde(data, **kwargs)
        np.testing.assert_allclose(np.asarray(ours.covariance), theirs.covariance, rtol=1e-12)
        np.testing.assert_allclose(np.asarray(ours.evaluate(pts)), theirs.evaluate(pts),
                                   rtol=1e-12)
        np.testing.assert_allclose(np.asarray(ours.logpdf(pts)), theirs.logpdf(pts), rtol=1e-12)
        np.testing.assert_allclose(float(ours.integrate_gaussian(np.zeros(2), np.eye(2))),
                                   theirs.integrate_gaussian(np.zeros(2), np.eye(2)), rtol=1e-12)
    assert ours.d == 2 and ours.n == 40
    one = RNG.normal(size=30)
    ours, theirs = stats.gaussian_kde(one), st.gaussian_kde(one)
    assert float(ours.integrate_box_1d(-0.5, 1.0)) == pytest.approx(
        theirs.integrate_box_1d(-0.5, 1.0), rel=1e-12)
    other = stats.gaussian_kde(one[:10] + 1)
    assert float(ours.integrate_kde(other)) == pytest.approx(
        theirs.integrate_kde(st.gaussian_kde(one[:10] + 1)), rel=1e-12)
    samples = ours.resample(numbax.random.PRNGKey(0), (5000,))
    assert samples.shape == (1, 5000)
    assert abs(float(np.mean(np.asarray(samples))) - one.mean()) < 0.1
    # a pytree: it passes through jit
    got = numbax.jit(lambda k, p: k.pdf(p))(ours, np.array([0.1, 0.2]))
    np.testing.assert_allclose(np.asarray(got), theirs.pdf([0.1, 0.2]), rtol=1e-12)


def test_mode_rankdata_sem_match_scipy():
    a = RNG.integers(0, 4, size=(5, 8)).astype(float)
    for axis in (0, 1, None):
        ours, theirs = stats.mode(a, axis=axis), st.mode(a, axis=axis)
        np.testing.assert_array_equal(np.asarray(ours.mode), theirs.mode)
        np.testing.assert_array_equal(np.asarray(ours.count), theirs.count)
    assert stats.mode(a, axis=1, keepdims=True).mode.shape == (5, 1)
    for method in ["average", "min", "max", "dense", "ordinal"]:
        np.testing.assert_array_equal(np.asarray(stats.rankdata(a, method)),
                                      st.rankdata(a, method))
        np.testing.assert_array_equal(np.asarray(stats.rankdata(a, method, axis=1)),
                                      st.rankdata(a, method, axis=1))
    assert np.isnan(np.asarray(stats.rankdata(np.array([1.0, np.nan])))).all()
    np.testing.assert_allclose(np.asarray(stats.sem(a, axis=1)), st.sem(a, axis=1), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(stats.sem(a, axis=None, ddof=0)),
                               st.sem(a, axis=None, ddof=0), rtol=1e-12)
    b = np.array([1.0, 2.0, np.nan, 4.0])
    np.testing.assert_allclose(float(stats.sem(b, nan_policy="omit")),
                               st.sem(b, nan_policy="omit"), rtol=1e-12)


ALL_FUNCTIONS = [(d, f) for d, (o, _, fs) in {**CONTINUOUS, **DISCRETE}.items()
                 for f in fs.split()]


@pytest.mark.parametrize("dist,fn", ALL_FUNCTIONS, ids=[f"{d}.{f}" for d, f in ALL_FUNCTIONS])
def test_bad_argument_names_the_function(dist, fn):
    ours = {**CONTINUOUS, **DISCRETE}[dist][0]
    with pytest.raises(NumbaxTypeError, match=f"stats.{dist}.{fn}: argument 0 has type str"):
        getattr(getattr(stats, dist), fn)("x", *ours)


def test_other_bad_inputs():
    with pytest.raises(TypeError):
        stats.poisson.entropy("x")
    with pytest.raises(NumbaxTypeError, match="multinomial.logpmf: x has dtype float64"):
        stats.multinomial.logpmf(np.array([1.0, 2.0]), 3, np.array([0.5, 0.5]))
    with pytest.raises(NumbaxValueError, match="cov has shape"):
        stats.multivariate_normal.logpdf(np.zeros(3), np.zeros(3), np.eye(2))
    with pytest.raises(NotImplementedError, match="allow_singular"):
        stats.multivariate_normal.logpdf(np.zeros(2), np.zeros(2), np.eye(2), allow_singular=True)
    with pytest.raises(NumbaxValueError, match="alpha has shape"):
        stats.dirichlet.logpdf(np.ones(2) / 2, np.ones((2, 2)))
    with pytest.raises(NumbaxValueError, match="x has shape"):
        stats.dirichlet.logpdf(np.ones(5) / 5, np.ones(2))
    with pytest.raises(NumbaxValueError, match="method is 'mean'"):
        stats.rankdata(np.ones(3), "mean")
    with pytest.raises(NotImplementedError, match="nan_policy='omit'"):
        stats.mode(np.ones(3), nan_policy="omit")
    with pytest.raises(NumbaxValueError, match="nan_policy is 'drop'"):
        stats.sem(np.ones(3), nan_policy="drop")
    with pytest.raises(NumbaxTypeError, match="mode: a has type dict"):
        stats.mode({})
    with pytest.raises(NumbaxValueError, match="weights has shape"):
        stats.gaussian_kde(np.ones(4), weights=np.ones(3))
    with pytest.raises(NumbaxValueError, match="bw_method is 'fast'"):
        stats.gaussian_kde(np.arange(4.0), bw_method="fast")
    with pytest.raises(NotImplementedError, match="integrate_box_1d"):
        stats.gaussian_kde(np.arange(4.0)).integrate_box(0.0, 1.0)
    with pytest.raises(NumbaxValueError, match="points have dimension 3"):
        stats.gaussian_kde(np.arange(4.0)).evaluate(np.ones((3, 2)))
