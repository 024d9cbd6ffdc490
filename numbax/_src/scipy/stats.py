"""numbax.scipy.stats.norm's functions: standardise by (loc, scale), then special functions."""
from __future__ import annotations

from typing import Any

import numpy as np

import numbax.numpy as jnp
from numbax._src import core
from numbax._src.scipy import special

_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)


def _standardized(api: str, x: Any, loc: Any, scale: Any) -> tuple[Any, Any, Any]:
    x, loc, scale = special._real_float(f"stats.norm.{api}", x, loc, scale)
    return x, (x - loc) / scale, scale


def norm_logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log of the normal density: -((x - loc)/scale)^2 / 2 - log(scale) - log(sqrt(2 pi)).

    >>> round(float(norm_logpdf(0.0)), 6)
    -0.918939
    """
    x, z, scale = _standardized("logpdf", x, loc, scale)
    dtype = core.get_aval(x).dtype.type
    return -dtype(0.5) * jnp.square(z) - jnp.log(scale) - dtype(_LOG_SQRT_2PI)


def norm_pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The normal density exp(logpdf).

    >>> round(float(norm_pdf(0.0)), 6)
    0.398942
    """
    return jnp.exp(norm_logpdf(x, loc, scale))


def norm_cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P[X <= x] = ndtr((x - loc) / scale).

    >>> float(norm_cdf(0.0))
    0.5
    """
    _, z, _ = _standardized("cdf", x, loc, scale)
    return special._ndtr(z)


def norm_logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log P[X <= x] = log_ndtr((x - loc) / scale), accurate in the far left tail.

    >>> round(float(norm_logcdf(-40.0)), 4)
    -804.6084
    """
    _, z, _ = _standardized("logcdf", x, loc, scale)
    return special.log_ndtr(z)


def norm_sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """P[X > x] = ndtr(-(x - loc) / scale).

    >>> float(norm_sf(0.0))
    0.5
    """
    _, z, _ = _standardized("sf", x, loc, scale)
    return special._ndtr(-z)


def norm_logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """log P[X > x] = log_ndtr(-(x - loc) / scale).

    >>> round(float(norm_logsf(40.0)), 4)
    -804.6084
    """
    _, z, _ = _standardized("logsf", x, loc, scale)
    return special.log_ndtr(-z)


def norm_ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The quantile function loc + scale * ndtri(q).

    >>> float(norm_ppf(0.5))
    0.0
    """
    q, loc, scale = special._real_float("stats.norm.ppf", q, loc, scale)
    return loc + scale * special.ndtri(q)
