"""numbax.scipy.stats' multivariate distributions: multivariate_normal and dirichlet."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from numbax._src.errors import NumbaxValueError
from numbax._src.lax import elementwise as lax
from numbax._src.lax import linalg as lax_linalg
from numbax._src.numpy import reductions, shapes, ufuncs
from numbax._src.numpy.creation import diagonal
from numbax._src.numpy.lax_numpy import where
from numbax._src.numpy.ufuncs import abs as abs_
from numbax._src.numpy.ufuncs import exp, log
from numbax._src.scipy.special.args import const
from numbax._src.scipy.special.log_fns import _xlogy
from numbax._src.scipy.stats.args import documented

_LOG_2PI = math.log(2 * math.pi)


@documented("The log density of each point (the last axis of x reduced when mean is a vector).")
def multivariate_normal_logpdf(x: Any, mean: Any, cov: Any, allow_singular: None = None) -> Any:
    """log density of the multivariate normal N(mean, cov), through the Cholesky factor of
    cov (a scalar cov is a multiple of the identity; a scalar mean makes it univariate).

    >>> round(float(multivariate_normal_logpdf(np.zeros(2), np.zeros(2), np.eye(2))), 12)
    -1.837877066409
    """
    if allow_singular is not None:
        raise NotImplementedError(
            "numbax.scipy.stats.multivariate_normal.logpdf: allow_singular is not supported "
            "(as in JAX); leave it None.")
    x, mean, cov = ufuncs.promote_dtypes_inexact("scipy.stats.multivariate_normal.logpdf",
                                                 x, mean, cov)
    if mean.ndim == 0:
        return -0.5 * (x - mean) ** 2 / cov - 0.5 * (_LOG_2PI + log(cov))
    n = mean.shape[-1]
    y = x - mean
    if cov.ndim == 0:
        return (-0.5 * reductions.sum(y * y, axis=-1) / cov - 0.5 * n * (_LOG_2PI + log(cov)))
    if cov.ndim < 2 or cov.shape[-2:] != (n, n):
        raise NumbaxValueError(
            f"numbax.scipy.stats.multivariate_normal.logpdf: cov has shape {cov.shape}, "
            f"expected (..., {n}, {n}) to match mean's last axis {n}.")
    chol = lax_linalg.cholesky(cov)
    batch = np.broadcast_shapes(chol.shape[:-2], y.shape[:-1])
    chol = shapes.broadcast_to(chol, batch + (n, n))
    y = shapes.broadcast_to(y, batch + (n,))
    z = lax_linalg.triangular_solve(chol, y[..., None], left_side=True, lower=True)[..., 0]
    log_det = reductions.sum(log(diagonal(chol, axis1=-2, axis2=-1)), axis=-1)
    return -0.5 * reductions.sum(z * z, axis=-1) - 0.5 * n * _LOG_2PI - log_det


@documented("The density of each point.")
def multivariate_normal_pdf(x: Any, mean: Any, cov: Any) -> Any:
    """exp(multivariate_normal.logpdf)."""
    return exp(multivariate_normal_logpdf(x, mean, cov))


@documented("The log density of each point (the first axis of x reduced).")
def dirichlet_logpdf(x: Any, alpha: Any) -> Any:
    """log density of the Dirichlet distribution; x holds the K components (or K - 1, the
    last then being 1 - sum) along its first axis; -inf off the simplex.

    >>> round(float(dirichlet_logpdf(np.array([0.5, 0.5]), np.array([1.0, 1.0]))), 12)
    0.0
    """
    x, alpha = ufuncs.promote_dtypes_inexact("scipy.stats.dirichlet.logpdf", x, alpha)
    if alpha.ndim != 1:
        raise NumbaxValueError(
            f"numbax.scipy.stats.dirichlet.logpdf: alpha has shape {alpha.shape}, expected "
            "a one-dimensional array.")
    k = alpha.shape[0]
    if x.ndim == 0 or x.shape[0] not in (k, k - 1):
        raise NumbaxValueError(
            f"numbax.scipy.stats.dirichlet.logpdf: x has shape {x.shape}, expected {k} or "
            f"{k - 1} entries along its first axis (alpha has {k}).")
    if x.shape[0] == k - 1:
        x = shapes.concatenate([x, 1 - reductions.sum(x, axis=0, keepdims=True)], axis=0)
    normalizer = reductions.sum(lax.lgamma(alpha)) - lax.lgamma(reductions.sum(alpha))
    alpha_b = alpha.reshape((k,) + (1,) * (x.ndim - 1))
    value = reductions.sum(_xlogy(alpha_b - 1, x), axis=0) - normalizer
    simplex = reductions.all(x > 0, axis=0) & (abs_(reductions.sum(x, axis=0) - 1) < 1e-6)
    return where(simplex, value, const(value, -np.inf))


@documented("The density of each point.")
def dirichlet_pdf(x: Any, alpha: Any) -> Any:
    """exp(dirichlet.logpdf)."""
    return exp(dirichlet_logpdf(x, alpha))

