"""numbax.scipy.stats' location-scale families without a shape parameter: norm, uniform,
expon, laplace, logistic, cauchy, gumbel_l, gumbel_r. Each function takes (x, loc=0,
scale=1) broadcast together, as scipy.stats and JAX do."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from numbax._src.lax import elementwise as lax
from numbax._src.numpy.lax_numpy import where
from numbax._src.numpy.ufuncs import abs as abs_
from numbax._src.numpy.ufuncs import arctan2, exp, expm1, isnan, log, log1p, tan
from numbax._src.scipy.special.args import const
from numbax._src.scipy.special.log_fns import _logit
from numbax._src.scipy.special.normal import _ndtr, _ndtri, log_ndtr
from numbax._src.scipy.stats.args import documented, log1mexp, promote

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _z(api: str, x: Any, loc: Any, scale: Any) -> tuple[Any, Any, Any, Any]:
    x, loc, scale = promote(api, x, loc, scale)
    return x, loc, scale, (x - loc) / scale


def _q(api: str, q: Any, loc: Any, scale: Any) -> tuple[Any, Any, Any]:
    return tuple(promote(api, q, loc, scale))


def _outside_unit(q: Any) -> Any:
    return isnan(q) | (q < 0) | (q > 1)


# ----------------------------------------------------------------------------- norm


@documented("The log density, shaped like the broadcast arguments.")
def norm_logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log of the normal density with mean loc and standard deviation scale.

    >>> round(float(norm_logpdf(0.0)), 6)
    -0.918939
    """
    _, _, scale, z = _z("norm.logpdf", x, loc, scale)
    return -0.5 * z * z - log(scale) - _LOG_SQRT_2PI


@documented("The density, shaped like the broadcast arguments.")
def norm_pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The normal density, exp(norm.logpdf)."""
    return exp(norm_logpdf(*promote("norm.pdf", x, loc, scale)))


@documented("P[X <= x], shaped like the broadcast arguments.")
def norm_cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P[X <= x] = ndtr((x - loc) / scale).

    >>> float(norm_cdf(0.0))
    0.5
    """
    return _ndtr(_z("norm.cdf", x, loc, scale)[3])


@documented("log P[X <= x], shaped like the broadcast arguments.")
def norm_logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log P[X <= x] = log_ndtr((x - loc) / scale), accurate far into the left tail.

    >>> round(float(norm_logcdf(-40.0)), 4)
    -804.6084
    """
    return log_ndtr(_z("norm.logcdf", x, loc, scale)[3])


@documented("P[X > x], shaped like the broadcast arguments.")
def norm_sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P[X > x] = ndtr(-(x - loc) / scale).

    >>> float(norm_sf(0.0))
    0.5
    """
    return _ndtr(-_z("norm.sf", x, loc, scale)[3])


@documented("log P[X > x], shaped like the broadcast arguments.")
def norm_logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log P[X > x] = log_ndtr(-(x - loc) / scale).

    >>> round(float(norm_logsf(40.0)), 4)
    -804.6084
    """
    return log_ndtr(-_z("norm.logsf", x, loc, scale)[3])


@documented("The quantiles, shaped like the broadcast arguments.")
def norm_ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The quantile function loc + scale * ndtri(q).

    >>> float(norm_ppf(0.5))
    0.0
    """
    q, loc, scale = _q("norm.ppf", q, loc, scale)
    return loc + scale * _ndtri(q)


@documented("The upper quantiles, shaped like the broadcast arguments.")
def norm_isf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The inverse survival function loc - scale * ndtri(q) (= ppf(1 - q)).

    Unlike JAX: computed from ndtri(q), not ndtri(1 - q), so small q keep their precision.

    >>> float(norm_isf(0.5))
    0.0
    """
    q, loc, scale = _q("norm.isf", q, loc, scale)
    return loc - scale * _ndtri(q)


# ----------------------------------------------------------------------------- uniform


@documented("The log density, shaped like the broadcast arguments.")
def uniform_logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log density of the uniform distribution on [loc, loc + scale]: -log(scale) inside,
    -inf outside.

    >>> float(uniform_logpdf(0.5))
    -0.0
    """
    x, loc, scale, _ = _z("uniform.logpdf", x, loc, scale)
    return where((x > loc + scale) | (x < loc), const(x, -np.inf), -log(scale))


@documented("The density, shaped like the broadcast arguments.")
def uniform_pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The uniform density, exp(uniform.logpdf)."""
    return exp(uniform_logpdf(*promote("uniform.pdf", x, loc, scale)))


@documented("P[X <= x], shaped like the broadcast arguments.")
def uniform_cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """(x - loc) / scale clipped to [0, 1].

    >>> float(uniform_cdf(0.25))
    0.25
    """
    x, loc, scale, z = _z("uniform.cdf", x, loc, scale)
    inside = (x >= loc) & (x <= loc + scale)
    return where(x < loc, const(x, 0), where(x > loc + scale, const(x, 1),
                                             where(inside, z, const(x, 0))))


@documented("The quantiles, shaped like the broadcast arguments.")
def uniform_ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """loc + scale * q, nan outside [0, 1].

    >>> float(uniform_ppf(0.25))
    0.25
    """
    q, loc, scale = _q("uniform.ppf", q, loc, scale)
    return where(_outside_unit(q), const(q, np.nan), loc + scale * q)


# ----------------------------------------------------------------------------- expon


@documented("The log density, shaped like the broadcast arguments.")
def expon_logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log density of the exponential distribution: -(x - loc)/scale - log(scale) for
    x >= loc, -inf below.

    >>> float(expon_logpdf(1.0))
    -1.0
    """
    x, loc, scale, z = _z("expon.logpdf", x, loc, scale)
    return where(x < loc, const(x, -np.inf), -(z + log(scale)))


@documented("The density, shaped like the broadcast arguments.")
def expon_pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The exponential density, exp(expon.logpdf)."""
    return exp(expon_logpdf(*promote("expon.pdf", x, loc, scale)))


@documented("P[X <= x], shaped like the broadcast arguments.")
def expon_cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """1 - exp(-(x - loc)/scale) (as -expm1), 0 below loc.

    >>> round(float(expon_cdf(1.0)), 12)
    0.632120558829
    """
    x, loc, scale, z = _z("expon.cdf", x, loc, scale)
    return where(x < loc, const(x, 0), -expm1(-z))


@documented("log P[X > x], shaped like the broadcast arguments.")
def expon_logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """-(x - loc)/scale, 0 below loc.

    >>> float(expon_logsf(2.0))
    -2.0
    """
    x, loc, scale, z = _z("expon.logsf", x, loc, scale)
    return where(x < loc, const(x, 0), -z)


@documented("P[X > x], shaped like the broadcast arguments.")
def expon_sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """exp(expon.logsf)."""
    return exp(expon_logsf(*promote("expon.sf", x, loc, scale)))


@documented("log P[X <= x], shaped like the broadcast arguments.")
def expon_logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log1p(-expon.sf)."""
    return log1p(-expon_sf(*promote("expon.logcdf", x, loc, scale)))


@documented("The quantiles, shaped like the broadcast arguments.")
def expon_ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """loc - scale * log1p(-q), nan outside [0, 1].

    >>> round(float(expon_ppf(0.5)), 12)
    0.69314718056
    """
    q, loc, scale = _q("expon.ppf", q, loc, scale)
    return where(_outside_unit(q), const(q, np.nan), loc - scale * log1p(-q))


# ----------------------------------------------------------------------------- laplace


@documented("The log density, shaped like the broadcast arguments.")
def laplace_logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log density of the Laplace distribution: -|x - loc|/scale - log(2 scale).

    >>> round(float(laplace_logpdf(0.0)), 12)
    -0.69314718056
    """
    x, loc, scale, _ = _z("laplace.logpdf", x, loc, scale)
    return -(abs_(x - loc) / scale + log(2 * scale))


@documented("The density, shaped like the broadcast arguments.")
def laplace_pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The Laplace density, exp(laplace.logpdf)."""
    return exp(laplace_logpdf(*promote("laplace.pdf", x, loc, scale)))


@documented("P[X <= x], shaped like the broadcast arguments.")
def laplace_cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """exp(z)/2 for z <= 0, 1 - exp(-z)/2 above, z = (x - loc)/scale.

    >>> float(laplace_cdf(0.0))
    0.5
    """
    _, _, _, z = _z("laplace.cdf", x, loc, scale)
    below = z <= 0
    return where(below, 0.5 * exp(where(below, z, const(z, 0))),
                 1 - 0.5 * exp(-where(below, const(z, 0), z)))


# ----------------------------------------------------------------------------- logistic


@documented("The log density, shaped like the broadcast arguments.")
def logistic_logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log density of the logistic distribution: -|z| - 2 log1p(exp(-|z|)) - log(scale).

    >>> round(float(logistic_logpdf(0.0)), 12)
    -1.38629436112
    """
    _, _, scale, z = _z("logistic.logpdf", x, loc, scale)
    az = abs_(z)
    return -az - 2 * log1p(exp(-az)) - log(scale)


@documented("The density, shaped like the broadcast arguments.")
def logistic_pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The logistic density, exp(logistic.logpdf)."""
    return exp(logistic_logpdf(*promote("logistic.pdf", x, loc, scale)))


@documented("P[X <= x], shaped like the broadcast arguments.")
def logistic_cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """expit((x - loc) / scale).

    >>> float(logistic_cdf(0.0))
    0.5
    """
    return lax.logistic(_z("logistic.cdf", x, loc, scale)[3])


@documented("P[X > x], shaped like the broadcast arguments.")
def logistic_sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """expit(-(x - loc) / scale).

    >>> float(logistic_sf(0.0))
    0.5
    """
    return lax.logistic(-_z("logistic.sf", x, loc, scale)[3])


@documented("The quantiles, shaped like the broadcast arguments.")
def logistic_ppf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """loc + scale * logit(x) (JAX names the probability x).

    >>> float(logistic_ppf(0.5))
    0.0
    """
    x, loc, scale = _q("logistic.ppf", x, loc, scale)
    return loc + scale * _logit(x)


@documented("The upper quantiles, shaped like the broadcast arguments.")
def logistic_isf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """loc - scale * logit(x).

    >>> float(logistic_isf(0.5))
    0.0
    """
    x, loc, scale = _q("logistic.isf", x, loc, scale)
    return loc - scale * _logit(x)


# ----------------------------------------------------------------------------- cauchy


@documented("The log density, shaped like the broadcast arguments.")
def cauchy_logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log density of the Cauchy distribution: -log(pi scale) - log1p(z^2).

    >>> round(float(cauchy_logpdf(0.0)), 12)
    -1.144729885849
    """
    _, _, scale, z = _z("cauchy.logpdf", x, loc, scale)
    return -(log(math.pi * scale) + log1p(z * z))


@documented("The density, shaped like the broadcast arguments.")
def cauchy_pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The Cauchy density, exp(cauchy.logpdf)."""
    return exp(cauchy_logpdf(*promote("cauchy.pdf", x, loc, scale)))


def _cauchy_cdf(z: Any) -> Any:
    # 1/2 + atan(z)/pi, written as atan2(1, -z)/pi: no cancellation in the left tail
    return arctan2(const(z, 1), -z) / math.pi


@documented("P[X <= x], shaped like the broadcast arguments.")
def cauchy_cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """1/2 + arctan(z)/pi (as atan2(1, -z)/pi, accurate in the left tail).

    >>> float(cauchy_cdf(0.0))
    0.5
    """
    return _cauchy_cdf(_z("cauchy.cdf", x, loc, scale)[3])


@documented("log P[X <= x], shaped like the broadcast arguments.")
def cauchy_logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log(cauchy.cdf)."""
    return log(_cauchy_cdf(_z("cauchy.logcdf", x, loc, scale)[3]))


@documented("P[X > x], shaped like the broadcast arguments.")
def cauchy_sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """cauchy.cdf at -z.

    >>> float(cauchy_sf(0.0))
    0.5
    """
    return _cauchy_cdf(-_z("cauchy.sf", x, loc, scale)[3])


@documented("log P[X > x], shaped like the broadcast arguments.")
def cauchy_logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log(cauchy.sf)."""
    return log(_cauchy_cdf(-_z("cauchy.logsf", x, loc, scale)[3]))


def _cauchy_ppf(q: Any) -> Any:
    """tan(pi (q - 1/2)) as -1/tan(pi q) below 1/2 and 1/tan(pi (1 - q)) above (1 - q is
    exact there), so the tails keep their precision."""
    lower = q < 0.5
    value = where(lower, -1 / tan(math.pi * q), 1 / tan(math.pi * (1 - q)))
    return where(q == 0.5, const(q, 0), value)


@documented("The quantiles, shaped like the broadcast arguments.")
def cauchy_ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """loc + scale * tan(pi (q - 1/2)), accurate in both tails.

    >>> float(cauchy_ppf(0.5))
    0.0
    """
    q, loc, scale = _q("cauchy.ppf", q, loc, scale)
    return loc + scale * _cauchy_ppf(q)


@documented("The upper quantiles, shaped like the broadcast arguments.")
def cauchy_isf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """loc + scale * tan(pi (1/2 - q)), accurate in both tails.

    >>> float(cauchy_isf(0.5))
    0.0
    """
    q, loc, scale = _q("cauchy.isf", q, loc, scale)
    return loc - scale * _cauchy_ppf(q)


# ----------------------------------------------------------------------------- gumbel


def _gumbel(api: str, x: Any, loc: Any, scale: Any) -> tuple[Any, Any, Any]:
    """(z, scale, ok): JAX's Gumbel functions give nan for scale <= 0."""
    _, _, scale, z = _z(api, x, loc, scale)
    return z, scale, scale > 0


@documented("The log density, shaped like the broadcast arguments.")
def gumbel_r_logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log density of the right-skewed Gumbel: -z - exp(-z) - log(scale).

    >>> round(float(gumbel_r_logpdf(0.0)), 12)
    -1.0
    """
    z, scale, ok = _gumbel("gumbel_r.logpdf", x, loc, scale)
    return where(ok, -(z + exp(-z)) - log(scale), const(z, np.nan))


@documented("The density, shaped like the broadcast arguments.")
def gumbel_r_pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """exp(gumbel_r.logpdf)."""
    return exp(gumbel_r_logpdf(*promote("gumbel_r.pdf", x, loc, scale)))


@documented("log P[X <= x], shaped like the broadcast arguments.")
def gumbel_r_logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """-exp(-z).

    >>> float(gumbel_r_logcdf(0.0))
    -1.0
    """
    z, _, ok = _gumbel("gumbel_r.logcdf", x, loc, scale)
    return where(ok, -exp(-z), const(z, np.nan))


@documented("P[X <= x], shaped like the broadcast arguments.")
def gumbel_r_cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """exp(-exp(-z))."""
    return exp(gumbel_r_logcdf(*promote("gumbel_r.cdf", x, loc, scale)))


@documented("log P[X > x], shaped like the broadcast arguments.")
def gumbel_r_logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log(1 - exp(-exp(-z))), without cancellation at either end.

    >>> round(float(gumbel_r_logsf(0.0)), 12)
    -0.458675145387
    """
    z, _, ok = _gumbel("gumbel_r.logsf", x, loc, scale)
    return where(ok, log1mexp(exp(-z)), const(z, np.nan))


@documented("P[X > x], shaped like the broadcast arguments.")
def gumbel_r_sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """1 - exp(-exp(-z)) (as -expm1)."""
    z, _, ok = _gumbel("gumbel_r.sf", x, loc, scale)
    return where(ok, -expm1(-exp(-z)), const(z, np.nan))


@documented("The quantiles, shaped like the broadcast arguments.")
def gumbel_r_ppf(p: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """loc - scale * log(-log(p)), nan outside (0, 1).

    >>> round(float(gumbel_r_ppf(np.exp(-1.0))), 12)
    0.0
    """
    p, loc, scale = _q("gumbel_r.ppf", p, loc, scale)
    ok = (p > 0) & (p < 1)
    safe = where(ok, p, const(p, 0.5))
    return where(ok, loc - scale * log(-log(safe)), const(p, np.nan))


@documented("The log density, shaped like the broadcast arguments.")
def gumbel_l_logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log density of the left-skewed Gumbel: z - exp(z) - log(scale).

    >>> round(float(gumbel_l_logpdf(0.0)), 12)
    -1.0
    """
    z, scale, ok = _gumbel("gumbel_l.logpdf", x, loc, scale)
    return where(ok, z - exp(z) - log(scale), const(z, np.nan))


@documented("The density, shaped like the broadcast arguments.")
def gumbel_l_pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """exp(gumbel_l.logpdf)."""
    return exp(gumbel_l_logpdf(*promote("gumbel_l.pdf", x, loc, scale)))


@documented("log P[X <= x], shaped like the broadcast arguments.")
def gumbel_l_logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log(1 - exp(-exp(z))), without cancellation at either end.

    >>> round(float(gumbel_l_logcdf(0.0)), 12)
    -0.458675145387
    """
    z, _, ok = _gumbel("gumbel_l.logcdf", x, loc, scale)
    return where(ok, log1mexp(exp(z)), const(z, np.nan))


@documented("P[X <= x], shaped like the broadcast arguments.")
def gumbel_l_cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """exp(gumbel_l.logcdf)."""
    return exp(gumbel_l_logcdf(*promote("gumbel_l.cdf", x, loc, scale)))


@documented("log P[X > x], shaped like the broadcast arguments.")
def gumbel_l_logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """-exp(z).

    >>> float(gumbel_l_logsf(0.0))
    -1.0
    """
    z, _, ok = _gumbel("gumbel_l.logsf", x, loc, scale)
    return where(ok, -exp(z), const(z, np.nan))


@documented("P[X > x], shaped like the broadcast arguments.")
def gumbel_l_sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """exp(-exp(z))."""
    return exp(gumbel_l_logsf(*promote("gumbel_l.sf", x, loc, scale)))


@documented("The quantiles, shaped like the broadcast arguments.")
def gumbel_l_ppf(p: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """loc + scale * log(-log1p(-p)), nan outside (0, 1).

    >>> round(float(gumbel_l_ppf(1 - np.exp(-1.0))), 12)
    0.0
    """
    p, loc, scale = _q("gumbel_l.ppf", p, loc, scale)
    ok = (p > 0) & (p < 1)
    safe = where(ok, p, const(p, 0.5))
    return where(ok, loc + scale * log(-log1p(-safe)), const(p, np.nan))
