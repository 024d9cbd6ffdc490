"""numbax.scipy.stats' discrete distributions: bernoulli, binom, betabinom, geom, nbinom,
poisson and multinomial (JAX's conventions: -inf log masses outside the support)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError
from numbax._src.lax import elementwise as lax
from numbax._src.lax import special as lax_special
from numbax._src.numpy import lax_numpy, reductions
from numbax._src.numpy.lax_numpy import round as round_
from numbax._src.numpy.lax_numpy import where
from numbax._src.numpy.ufuncs import exp, floor, isnan, log, log1p
from numbax._src.scipy.special.args import const, dtype_of
from numbax._src.scipy.special.gamma_fns import _betaln
from numbax._src.scipy.special.log_fns import _xlog1py, _xlogy
from numbax._src.scipy.stats.args import documented, promote

_LOGPMF = "The log probability mass, shaped like the broadcast arguments."
_PMF = "The probability mass, shaped like the broadcast arguments."

# ----------------------------------------------------------------------------- bernoulli


@documented(_LOGPMF)
def bernoulli_logpmf(k: Any, p: Any, loc: Any = 0) -> Any:
    """log P[X = k] for a Bernoulli(p) variable shifted by loc; -inf outside [0, 1].

    >>> round(float(bernoulli_logpmf(1, 0.25)), 12)
    -1.38629436112
    """
    k, p, loc = promote("bernoulli.logpmf", k, p, loc)
    x = k - loc
    value = _xlogy(x, p) + _xlog1py(1 - x, -p)
    return where((x < 0) | (x > 1), const(k, -np.inf), value)


@documented(_PMF)
def bernoulli_pmf(k: Any, p: Any, loc: Any = 0) -> Any:
    """exp(bernoulli.logpmf)."""
    return exp(bernoulli_logpmf(*promote("bernoulli.pmf", k, p, loc)))


@documented("P[X <= k], shaped like the broadcast arguments.")
def bernoulli_cdf(k: Any, p: Any) -> Any:
    """0 below 0, 1 - p on [0, 1), 1 from 1; nan for p outside [0, 1].

    >>> float(bernoulli_cdf(0.5, 0.25))
    0.75
    """
    k, p = promote("bernoulli.cdf", k, p)
    value = where(k < 0, const(k, 0), where(k < 1, 1 - p, const(k, 1)))
    return where(isnan(k) | isnan(p) | (p < 0) | (p > 1), const(k, np.nan), value)


@documented("The quantiles (0 or 1), shaped like the broadcast arguments.")
def bernoulli_ppf(q: Any, p: Any) -> Any:
    """0 where q <= 1 - p, else 1; nan for q or p outside [0, 1].

    >>> float(bernoulli_ppf(0.9, 0.25))
    1.0
    """
    q, p = promote("bernoulli.ppf", q, p)
    bad = isnan(q) | isnan(p) | (p < 0) | (p > 1) | (q < 0) | (q > 1)
    return where(bad, const(q, np.nan), where(q <= 1 - p, const(q, 0), const(q, 1)))


# ----------------------------------------------------------------------------- binom


@documented(_LOGPMF)
def binom_logpmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    """log of the binomial mass C(n, y) p^y (1 - p)^(n - y), y = k - loc; -inf outside
    [loc, loc + n].

    >>> round(float(binom_logpmf(1, 2, 0.5)), 12)
    -0.69314718056
    """
    k, n, p, loc = promote("binom.logpmf", k, n, p, loc)
    y = k - loc
    log_comb = lax.lgamma(n + 1) - (lax.lgamma(y + 1) + lax.lgamma(n - y + 1))
    log_linear = _xlogy(y, p) + _xlog1py(n - y, -p)
    value = log_comb + log_linear
    value = where(((y == 0) & (n == 0)) | (log_linear == 0), const(k, 0), value)
    return where((k >= loc) & (k < loc + n + 1), value, const(k, -np.inf))


@documented(_PMF)
def binom_pmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    """exp(binom.logpmf)."""
    return exp(binom_logpmf(*promote("binom.pmf", k, n, p, loc)))


# ----------------------------------------------------------------------------- betabinom


@documented(_LOGPMF)
def betabinom_logpmf(k: Any, n: Any, a: Any, b: Any, loc: Any = 0) -> Any:
    """log of the beta-binomial mass C(n, y) B(y + a, n - y + b) / B(a, b), y = floor(k)
    - loc; nan for n < 0, a <= 0 or b <= 0.

    >>> round(float(betabinom_logpmf(1, 2, 1.0, 1.0)), 12)
    -1.098612288668
    """
    k, n, a, b, loc = promote("betabinom.logpmf", k, n, a, b, loc)
    y = floor(k) - loc
    log_comb = -(log1p(n) + _betaln(n - y + 1, y + 1))
    value = log_comb + _betaln(y + a, n - y + b) - _betaln(a, b)
    value = where((y == 0) & (n == 0), const(k, 0), value)
    value = where((y < -loc) | (y > n) | (y + a <= 0), const(k, -np.inf), value)
    return where((n < 0) | (a <= 0) | (b <= 0), const(k, np.nan), value)


@documented(_PMF)
def betabinom_pmf(k: Any, n: Any, a: Any, b: Any, loc: Any = 0) -> Any:
    """exp(betabinom.logpmf)."""
    return exp(betabinom_logpmf(*promote("betabinom.pmf", k, n, a, b, loc)))


# ----------------------------------------------------------------------------- geom, nbinom


@documented(_LOGPMF)
def geom_logpmf(k: Any, p: Any, loc: Any = 0) -> Any:
    """log of the geometric mass (1 - p)^(x - 1) p, x = k - loc >= 1; -inf below.

    >>> round(float(geom_logpmf(2, 0.5)), 12)
    -1.38629436112
    """
    k, p, loc = promote("geom.logpmf", k, p, loc)
    x = k - loc
    return where(x <= 0, const(k, -np.inf), _xlog1py(x - 1, -p) + log(p))


@documented(_PMF)
def geom_pmf(k: Any, p: Any, loc: Any = 0) -> Any:
    """exp(geom.logpmf)."""
    return exp(geom_logpmf(*promote("geom.pmf", k, p, loc)))


@documented(_LOGPMF)
def nbinom_logpmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    """log of the negative binomial mass C(y + n - 1, y) p^n (1 - p)^y, y = k - loc;
    -inf for k < loc.

    >>> round(float(nbinom_logpmf(0, 1.0, 0.5)), 12)
    -0.69314718056
    """
    k, n, p, loc = promote("nbinom.logpmf", k, n, p, loc)
    y = k - loc
    log_comb = lax.lgamma(y + n) - lax.lgamma(n) - lax.lgamma(y + 1)
    value = log_comb + _xlogy(n, p) + _xlogy(y, 1 - p)
    return where(k < loc, const(k, -np.inf), value)


@documented(_PMF)
def nbinom_pmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    """exp(nbinom.logpmf)."""
    return exp(nbinom_logpmf(*promote("nbinom.pmf", k, n, p, loc)))


# ----------------------------------------------------------------------------- poisson


@documented(_LOGPMF)
def poisson_logpmf(k: Any, mu: Any, loc: Any = 0) -> Any:
    """log of the Poisson mass mu^x e^-mu / x!, x = k - loc; -inf for x < 0 or non-integer k.

    >>> round(float(poisson_logpmf(0, 2.0)), 12)
    -2.0
    """
    k, mu, loc = promote("poisson.logpmf", k, mu, loc)
    x = k - loc
    value = _xlogy(x, mu) - lax.lgamma(x + 1) - mu
    return where((x < 0) | (round_(k) != k), const(k, -np.inf), value)


@documented(_PMF)
def poisson_pmf(k: Any, mu: Any, loc: Any = 0) -> Any:
    """exp(poisson.logpmf)."""
    return exp(poisson_logpmf(*promote("poisson.pmf", k, mu, loc)))


@documented("P[X <= k], shaped like the broadcast arguments.")
def poisson_cdf(k: Any, mu: Any, loc: Any = 0) -> Any:
    """gammaincc(floor(x) + 1, mu), 0 for x < 0.

    >>> round(float(poisson_cdf(0, 2.0)), 12)
    0.135335283237
    """
    k, mu, loc = promote("poisson.cdf", k, mu, loc)
    x = k - loc
    value = lax_special.igammac(floor(where(x < 0, const(x, 0), x)) + 1, mu)
    return where(x < 0, const(k, 0), value)


_ENTROPY_TERMS = 250


def _poisson_entropy_sum(mu: Any) -> Any:
    """-sum_k p_k log p_k over k < 250 (enough for mu < 100: the mass beyond mu + 10 sqrt(mu)
    + 20 is below 1e-20)."""
    ks = lax_numpy.asarray(np.arange(_ENTROPY_TERMS, dtype=dtype_of(mu)))
    ks = ks.reshape((_ENTROPY_TERMS,) + (1,) * len(mu.shape))
    log_p = _xlogy(ks, mu) - lax.lgamma(ks + 1) - mu
    p = exp(log_p)
    return -reductions.sum(where(p > 0, p * log_p, const(mu, 0)), axis=0)


@documented("The entropy of Poisson(mu), shaped like the broadcast arguments.")
def poisson_entropy(mu: Any, loc: Any = 0) -> Any:
    """The entropy -sum_k p_k log p_k: the sum for mu < 100, the asymptotic series
    log(2 pi e mu)/2 - 1/(12 mu) - 1/(24 mu^2) - 19/(360 mu^3) beyond.

    Unlike JAX: the asymptotic series has two more terms (JAX stops at 1/(12 mu)), so the
    value is accurate to ~1e-9 at mu = 100 instead of ~1e-6.

    >>> round(float(poisson_entropy(1.0)), 12)
    1.304842242256
    """
    mu, loc = promote("poisson.entropy", mu, loc)
    small = mu < 100
    summed = _poisson_entropy_sum(where(small, mu, const(mu, 1)))
    big = where(small, const(mu, 100), mu)
    inv = 1 / big
    series = (0.5 * log(2 * math.pi * math.e * big)
              - inv * (1 / 12 + inv * (1 / 24 + inv * 19 / 360)))
    return where(mu == 0, const(mu, 0), where(small, summed, series))


# ----------------------------------------------------------------------------- multinomial


@documented("The log probability mass of each count vector (the last axis reduced).")
def multinomial_logpmf(x: Any, n: Any, p: Any) -> Any:
    """log of the multinomial mass n! prod_i p_i^(x_i) / x_i!, -inf unless sum(x) == n.

    Unlike JAX: the check sum(x) == n is made per count vector (along the last axis); JAX
    sums over every axis, so batched x gave -inf.

    >>> round(float(multinomial_logpmf(np.array([1, 1]), 2, np.array([0.5, 0.5]))), 12)
    -0.69314718056
    """
    (p,) = promote("multinomial.logpmf", p)
    x, n = lax_numpy.asarray(x), lax_numpy.asarray(n)
    for name, value in (("x", x), ("n", n)):
        if kind_of(dtype_of(value)) not in "iu":
            raise NumbaxTypeError(
                f"numbax.scipy.stats.multinomial.logpmf: {name} has dtype {dtype_of(value)}, "
                "expected an integer dtype. Pass integer counts.")
    xf = lax.convert_element_type(x, dtype_of(p))
    nf = lax.convert_element_type(n, dtype_of(p))
    value = lax.lgamma(nf + 1) + reductions.sum(_xlogy(xf, p) - lax.lgamma(xf + 1), axis=-1)
    return where(reductions.sum(xf, axis=-1) == nf, value, const(value, -np.inf))


@documented("The probability mass of each count vector.")
def multinomial_pmf(x: Any, n: Any, p: Any) -> Any:
    """exp(multinomial.logpmf)."""
    return exp(multinomial_logpmf(x, n, p))
