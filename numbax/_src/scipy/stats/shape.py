"""numbax.scipy.stats' continuous distributions with shape parameters: beta, gamma, chi2, t,
pareto, gennorm, vonmises, wrapcauchy and truncnorm (JAX's conventions outside the support:
-inf log densities, nan for invalid parameters where JAX checks them)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from numbax._src.lax import elementwise as lax
from numbax._src.lax import special as lax_special
from numbax._src.numpy.lax_numpy import clip, where
from numbax._src.numpy.ufuncs import abs as abs_
from numbax._src.numpy.ufuncs import cos, exp, expm1, log, log1p, power
from numbax._src.scipy.special.args import const
from numbax._src.scipy.special.gamma_fns import _betaln
from numbax._src.scipy.special.log_fns import _xlog1py, _xlogy
from numbax._src.scipy.special.normal import _log_ndtr_impl, _ndtr
from numbax._src.scipy.stats.args import documented, log_diff_exp, promote

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
_LOGPDF = "The log density, shaped like the broadcast arguments."
_PDF = "The density, shaped like the broadcast arguments."
_CDF = "P[X <= x], shaped like the broadcast arguments."
_LOGCDF = "log P[X <= x], shaped like the broadcast arguments."
_SF = "P[X > x], shaped like the broadcast arguments."
_LOGSF = "log P[X > x], shaped like the broadcast arguments."
_PPF = "The quantiles, shaped like the broadcast arguments."



def _log_of(p: Any, complement: Any) -> Any:
    """log(p) where p <= 1/2, log1p(-complement) above (p + complement = 1)."""
    return where(p > 0.5, log1p(-complement), log(p))


# ----------------------------------------------------------------------------- beta


@documented(_LOGPDF)
def beta_logpdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log density of the beta distribution on [loc, loc + scale].

    >>> float(beta_logpdf(0.5, 1.0, 1.0))
    0.0
    """
    x, a, b, loc, scale = promote("beta.logpdf", x, a, b, loc, scale)
    y = (x - loc) / scale
    value = (_xlogy(a - 1, y) + _xlog1py(b - 1, -y)) - _betaln(a, b) - log(scale)
    value = where((x > loc + scale) | (x < loc), const(x, -np.inf), value)
    return where((a <= 0) | (b <= 0) | (scale <= 0), const(x, np.nan), value)


@documented(_PDF)
def beta_pdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The beta density, exp(beta.logpdf)."""
    return exp(beta_logpdf(*promote("beta.pdf", x, a, b, loc, scale)))


@documented(_CDF)
def beta_cdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """betainc(a, b, y) with y = (x - loc)/scale clipped to [0, 1].

    >>> float(beta_cdf(0.25, 1.0, 1.0))
    0.25
    """
    return _beta_cdf(*promote("beta.cdf", x, a, b, loc, scale))


def _beta_cdf(x: Any, a: Any, b: Any, loc: Any, scale: Any) -> Any:
    return lax_special.betainc(a, b, clip((x - loc) / scale, 0, 1))


@documented(_LOGCDF)
def beta_logcdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log(beta.cdf), as log1p(-beta.sf) where the cdf exceeds 1/2.

    Unlike JAX (log(cdf) everywhere): keeps its precision as the cdf approaches 1.
    """
    args = promote("beta.logcdf", x, a, b, loc, scale)
    return _log_of(_beta_cdf(*args), _beta_sf(*args))


@documented(_SF)
def beta_sf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """betainc(b, a, 1 - y) with y clipped to [0, 1].

    >>> float(beta_sf(0.25, 1.0, 1.0))
    0.75
    """
    return _beta_sf(*promote("beta.sf", x, a, b, loc, scale))


def _beta_sf(x: Any, a: Any, b: Any, loc: Any, scale: Any) -> Any:
    return lax_special.betainc(b, a, 1 - clip((x - loc) / scale, 0, 1))


@documented(_LOGSF)
def beta_logsf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log(beta.sf), as log1p(-beta.cdf) where the sf exceeds 1/2.

    Unlike JAX (log(sf) everywhere): keeps its precision as the sf approaches 1.
    """
    args = promote("beta.logsf", x, a, b, loc, scale)
    return _log_of(_beta_sf(*args), _beta_cdf(*args))


# ----------------------------------------------------------------------------- gamma


@documented(_LOGPDF)
def gamma_logpdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log density of the gamma distribution with shape a, -inf below loc.

    >>> float(gamma_logpdf(1.0, 1.0))
    -1.0
    """
    x, a, loc, scale = promote("gamma.logpdf", x, a, loc, scale)
    ok = x >= loc
    y = where(ok, (x - loc) / scale, const(x, 1))
    value = _xlogy(a - 1, y) - y - lax.lgamma(a) - log(scale)
    return where(ok, value, const(x, -np.inf))


@documented(_PDF)
def gamma_pdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The gamma density, exp(gamma.logpdf)."""
    return exp(gamma_logpdf(*promote("gamma.pdf", x, a, loc, scale)))


@documented(_CDF)
def gamma_cdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """gammainc(a, y), y = (x - loc)/scale clipped below at 0.

    >>> round(float(gamma_cdf(1.0, 1.0)), 12)
    0.632120558829
    """
    return _gamma_cdf(*promote("gamma.cdf", x, a, loc, scale))


def _gamma_cdf(x: Any, a: Any, loc: Any, scale: Any) -> Any:
    return lax_special.igamma(a, clip((x - loc) / scale, 0, np.inf))


@documented(_LOGCDF)
def gamma_logcdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log(gamma.cdf), as log1p(-gamma.sf) where the cdf exceeds 1/2.

    Unlike JAX (log(cdf) everywhere): keeps its precision as the cdf approaches 1.
    """
    args = promote("gamma.logcdf", x, a, loc, scale)
    return _log_of(_gamma_cdf(*args), _gamma_sf(*args))


@documented(_SF)
def gamma_sf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """gammaincc(a, y), 1 below loc.

    >>> round(float(gamma_sf(1.0, 1.0)), 12)
    0.367879441171
    """
    return _gamma_sf(*promote("gamma.sf", x, a, loc, scale))


def _gamma_sf(x: Any, a: Any, loc: Any, scale: Any) -> Any:
    y = (x - loc) / scale
    return where(y < 0, const(x, 1), lax_special.igammac(a, where(y < 0, const(x, 0), y)))


@documented(_LOGSF)
def gamma_logsf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log(gamma.sf), as log1p(-gamma.cdf) where the sf exceeds 1/2.

    Unlike JAX (log(sf) everywhere): keeps its precision as the sf approaches 1.
    """
    args = promote("gamma.logsf", x, a, loc, scale)
    return _log_of(_gamma_sf(*args), _gamma_cdf(*args))


# ----------------------------------------------------------------------------- chi2


@documented(_LOGPDF)
def chi2_logpdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log density of the chi-squared distribution with df degrees of freedom.

    >>> round(float(chi2_logpdf(1.0, 2.0)), 12)
    -1.19314718056
    """
    x, df, loc, scale = promote("chi2.logpdf", x, df, loc, scale)
    y = (x - loc) / scale
    half = df / 2
    value = (half - 1) * log(y) - y / 2 - lax.lgamma(half) - half * math.log(2) - log(scale)
    return where(x < loc, const(x, -np.inf), value)


@documented(_PDF)
def chi2_pdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The chi-squared density, exp(chi2.logpdf)."""
    return exp(chi2_logpdf(*promote("chi2.pdf", x, df, loc, scale)))


@documented(_CDF)
def chi2_cdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """gammainc(df/2, (x - loc)/(2 scale)), clipped below at 0.

    >>> round(float(chi2_cdf(2.0, 2.0)), 12)
    0.632120558829
    """
    return _chi2_cdf(*promote("chi2.cdf", x, df, loc, scale))


def _chi2_cdf(x: Any, df: Any, loc: Any, scale: Any) -> Any:
    return lax_special.igamma(df / 2, clip((x - loc) / (2 * scale), 0, np.inf))


@documented(_LOGCDF)
def chi2_logcdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log(chi2.cdf), as log1p(-chi2.sf) where the cdf exceeds 1/2.

    Unlike JAX (log(cdf) everywhere): keeps its precision as the cdf approaches 1.
    """
    args = promote("chi2.logcdf", x, df, loc, scale)
    return _log_of(_chi2_cdf(*args), _chi2_sf(*args))


@documented(_SF)
def chi2_sf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """gammaincc(df/2, (x - loc)/(2 scale)), clipped below at 0.

    >>> round(float(chi2_sf(2.0, 2.0)), 12)
    0.367879441171
    """
    return _chi2_sf(*promote("chi2.sf", x, df, loc, scale))


def _chi2_sf(x: Any, df: Any, loc: Any, scale: Any) -> Any:
    return lax_special.igammac(df / 2, clip((x - loc) / (2 * scale), 0, np.inf))


@documented(_LOGSF)
def chi2_logsf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log(chi2.sf), as log1p(-chi2.cdf) where the sf exceeds 1/2.

    Unlike JAX (log(sf) everywhere): keeps its precision as the sf approaches 1.
    """
    args = promote("chi2.logsf", x, df, loc, scale)
    return _log_of(_chi2_sf(*args), _chi2_cdf(*args))


# ----------------------------------------------------------------------------- t


@documented(_LOGPDF)
def t_logpdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log density of Student's t distribution with df degrees of freedom.

    >>> round(float(t_logpdf(0.0, 1.0)), 12)
    -1.144729885849
    """
    x, df, loc, scale = promote("t.logpdf", x, df, loc, scale)
    z = (x - loc) / scale
    half = df / 2
    normalizer = (lax.lgamma(half) - lax.lgamma(half + 0.5)
                  + 0.5 * log(math.pi * df * scale * scale))
    return -(normalizer + (half + 0.5) * log1p(z * z / df))


@documented(_PDF)
def t_pdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """Student's t density, exp(t.logpdf)."""
    return exp(t_logpdf(*promote("t.pdf", x, df, loc, scale)))


# ----------------------------------------------------------------------------- pareto


@documented(_LOGPDF)
def pareto_logpdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log density of the Pareto distribution: log(b/scale) - (b + 1) log(y), -inf for
    y < 1, y = (x - loc)/scale.

    >>> round(float(pareto_logpdf(1.0, 2.0)), 12)
    0.69314718056
    """
    x, b, loc, scale = promote("pareto.logpdf", x, b, loc, scale)
    y = (x - loc) / scale
    value = -(log(scale / b) + (b + 1) * log(y))
    return where(x < loc + scale, const(x, -np.inf), value)


@documented(_PDF)
def pareto_pdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The Pareto density, exp(pareto.logpdf)."""
    return exp(pareto_logpdf(*promote("pareto.pdf", x, b, loc, scale)))


@documented(_CDF)
def pareto_cdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """1 - y^-b, 0 below loc + scale.

    >>> float(pareto_cdf(2.0, 1.0))
    0.5
    """
    x, b, loc, scale = promote("pareto.cdf", x, b, loc, scale)
    y = (x - loc) / scale
    return where(x < loc + scale, const(x, 0), -expm1(-b * log(y)))


@documented(_LOGCDF)
def pareto_logcdf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log1p(-y^-b), -inf below loc + scale."""
    x, b, loc, scale = promote("pareto.logcdf", x, b, loc, scale)
    y = (x - loc) / scale
    return where(x < loc + scale, const(x, -np.inf), log1p(-power(y, -b)))


@documented(_LOGSF)
def pareto_logsf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """-b log(y), 0 below loc + scale.

    >>> round(float(pareto_logsf(2.0, 1.0)), 12)
    -0.69314718056
    """
    x, b, loc, scale = promote("pareto.logsf", x, b, loc, scale)
    y = (x - loc) / scale
    return where(x < loc + scale, const(x, 0), -b * log(y))


@documented(_SF)
def pareto_sf(x: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """exp(pareto.logsf)."""
    return exp(pareto_logsf(*promote("pareto.sf", x, b, loc, scale)))


@documented(_PPF)
def pareto_ppf(q: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """loc + scale (1 - q)^(-1/b), nan outside [0, 1].

    >>> float(pareto_ppf(0.5, 1.0))
    2.0
    """
    q, b, loc, scale = promote("pareto.ppf", q, b, loc, scale)
    value = loc + scale * power(1 - q, -1 / b)
    return where((q < 0) | (q > 1) | (q != q), const(q, np.nan), value)


# ----------------------------------------------------------------------------- gennorm


@documented(_LOGPDF)
def gennorm_logpdf(x: Any, beta: Any) -> Any:
    """log density of the generalized normal distribution: log(beta/2) - lgamma(1/beta)
    - |x|^beta.

    >>> round(float(gennorm_logpdf(0.0, 2.0)), 12)
    -0.572364942925
    """
    x, beta = promote("gennorm.logpdf", x, beta)
    return log(0.5 * beta) - lax.lgamma(1 / beta) - power(abs_(x), beta)


@documented(_PDF)
def gennorm_pdf(x: Any, beta: Any) -> Any:
    """The generalized normal density, exp(gennorm.logpdf)."""
    return exp(gennorm_logpdf(*promote("gennorm.pdf", x, beta)))


@documented(_CDF)
def gennorm_cdf(x: Any, beta: Any) -> Any:
    """(1 + sign(x) gammainc(1/beta, |x|^beta)) / 2, from gammaincc in the left tail.

    >>> float(gennorm_cdf(0.0, 2.0))
    0.5
    """
    x, beta = promote("gennorm.cdf", x, beta)
    tail = 0.5 * lax_special.igammac(1 / beta, power(abs_(x), beta))
    return where(x < 0, tail, 1 - tail)


# ----------------------------------------------------------------------------- circular


@documented(_LOGPDF)
def vonmises_logpdf(x: Any, kappa: Any) -> Any:
    """log density of the von Mises distribution: kappa (cos x - 1) - log(2 pi i0e(kappa));
    nan for kappa <= 0.

    >>> round(float(vonmises_logpdf(0.0, 1.0)), 12)
    -1.073791424917
    """
    x, kappa = promote("vonmises.logpdf", x, kappa)
    value = kappa * (cos(x) - 1) - log(2 * math.pi * lax_special.bessel_i0e(kappa))
    return where(kappa > 0, value, const(x, np.nan))


@documented(_PDF)
def vonmises_pdf(x: Any, kappa: Any) -> Any:
    """The von Mises density, exp(vonmises.logpdf)."""
    return exp(vonmises_logpdf(*promote("vonmises.pdf", x, kappa)))


@documented(_LOGPDF)
def wrapcauchy_logpdf(x: Any, c: Any) -> Any:
    """log density of the wrapped Cauchy distribution on [0, 2 pi]: -inf outside it, nan
    unless 0 < c < 1.

    >>> round(float(wrapcauchy_logpdf(1.0, 0.5)), 12)
    -1.78264295633
    """
    x, c = promote("wrapcauchy.logpdf", x, c)
    value = log(1 - c * c) - math.log(2 * math.pi) - log(1 + c * c - 2 * c * cos(x))
    value = where((x >= 0) & (x <= 2 * math.pi), value, const(x, -np.inf))
    return where((c > 0) & (c < 1), value, const(x, np.nan))


@documented(_PDF)
def wrapcauchy_pdf(x: Any, c: Any) -> Any:
    """The wrapped Cauchy density, exp(wrapcauchy.logpdf)."""
    return exp(wrapcauchy_logpdf(*promote("wrapcauchy.pdf", x, c)))


# ----------------------------------------------------------------------------- truncnorm


def _log_gauss_mass(a: Any, b: Any) -> Any:
    """log(ndtr(b) - ndtr(a)) for a <= b, from whichever tail keeps its precision."""
    left = b <= 0
    right = a > 0
    central = ~(left | right)
    lo = where(right, -b, a)
    hi = where(right, -a, b)
    tail = log_diff_exp(_log_ndtr_impl(hi, 3), _log_ndtr_impl(lo, 3))
    middle = log1p(-_ndtr(a) - _ndtr(-b))
    return where(central, middle, tail)


@documented(_LOGPDF)
def truncnorm_logpdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log density of the normal distribution truncated to [a, b] (standardized bounds):
    -inf outside, nan when a >= b.

    >>> round(float(truncnorm_logpdf(0.0, -1.0, 1.0)), 12)
    -0.537223386903
    """
    x, a, b, loc, scale = promote("truncnorm.logpdf", x, a, b, loc, scale)
    z = (x - loc) / scale
    value = -0.5 * z * z - log(scale) - _LOG_SQRT_2PI - _log_gauss_mass(a, b)
    value = where((z < a) | (z > b), const(x, -np.inf), value)
    return where(a >= b, const(x, np.nan), value)


@documented(_PDF)
def truncnorm_pdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The truncated normal density, exp(truncnorm.logpdf)."""
    return exp(truncnorm_logpdf(*promote("truncnorm.pdf", x, a, b, loc, scale)))


def _truncnorm_logcdf(z: Any, a: Any, b: Any) -> Any:
    mass = _log_gauss_mass(a, b)
    inside_z = clip(z, a, b)
    log_cdf = _log_gauss_mass(a, inside_z) - mass
    log_sf = _log_gauss_mass(inside_z, b) - mass
    value = where(log_cdf > -0.1, log1p(-exp(log_sf)), log_cdf)
    value = where(z >= b, const(z, 0), where(z <= a, const(z, -np.inf), value))
    return where(a >= b, const(z, np.nan), value)


@documented(_LOGCDF)
def truncnorm_logcdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log P[X <= x] of the truncated normal (nan when a >= b).

    >>> round(float(truncnorm_logcdf(0.0, -1.0, 1.0)), 12)
    -0.69314718056
    """
    x, a, b, loc, scale = promote("truncnorm.logcdf", x, a, b, loc, scale)
    return _truncnorm_logcdf((x - loc) / scale, a, b)


@documented(_CDF)
def truncnorm_cdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """exp(truncnorm.logcdf)."""
    return exp(truncnorm_logcdf(*promote("truncnorm.cdf", x, a, b, loc, scale)))


@documented(_LOGSF)
def truncnorm_logsf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log P[X > x] of the truncated normal: the logcdf of the reflected distribution."""
    x, a, b, loc, scale = promote("truncnorm.logsf", x, a, b, loc, scale)
    return _truncnorm_logcdf(-(x - loc) / scale, -b, -a)


@documented(_SF)
def truncnorm_sf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """exp(truncnorm.logsf)."""
    return exp(truncnorm_logsf(*promote("truncnorm.sf", x, a, b, loc, scale)))
