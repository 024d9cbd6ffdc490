"""numbax.scipy.stats.gaussian_kde: kernel density estimation with Gaussian kernels (a pytree,
so it passes through jit and vmap)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from numbax._src import core, random_discrete, random_keys
from numbax._src import random as nb_random
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.lax import linalg as lax_linalg
from numbax._src.numpy import lax_numpy, linalg, reductions, shapes, ufuncs
from numbax._src.numpy.creation import diagonal
from numbax._src.numpy.linalg_ops import matmul
from numbax._src.scipy.special.log_fns import logsumexp
from numbax._src.scipy.special.normal import _ndtr
from numbax._src.tree_util import register_pytree_node_class

__all__ = ["gaussian_kde"]


def _inexact_2d(api: str, x: Any) -> Any:
    if not (isinstance(x, (list, tuple)) or core.is_array_like(x)):
        raise NumbaxTypeError(
            f"numbax.scipy.stats.gaussian_kde.{api}: got {type(x).__name__}, expected an "
            "array.")
    x = lax_numpy.asarray(x)
    if kind_of(x.dtype) == "c":
        raise NotImplementedError(
            f"numbax.scipy.stats.gaussian_kde.{api}: complex data is not supported (as in "
            "JAX).")
    (x,) = ufuncs.promote_dtypes_inexact(f"scipy.stats.gaussian_kde.{api}", x)
    return shapes.atleast_2d(x)


@register_pytree_node_class
@dataclass(frozen=True, init=False)
class gaussian_kde:  # noqa: N801 (scipy's and JAX's name)
    """A Gaussian kernel density estimate of a d-dimensional dataset (d, n).

    Args:
      dataset: the samples, shape (n,) or (d, n).
      bw_method: 'scott' (default), 'silverman', a scalar factor, or a callable taking the
        kde and returning the factor.
      weights: optional sample weights, shape (n,), normalised to sum 1.

    >>> kde = gaussian_kde(np.array([0.0, 1.0, 2.0]))
    >>> round(float(kde.integrate_box_1d(-np.inf, np.inf)), 12)
    1.0
    """

    neff: Any
    dataset: Any
    weights: Any
    covariance: Any
    inv_cov: Any

    def __init__(self, dataset: Any, bw_method: Any = None, weights: Any = None) -> None:
        dataset = _inexact_2d("__init__", dataset)
        if not dataset.size > 1:
            raise NumbaxValueError(
                "numbax.scipy.stats.gaussian_kde: dataset has one element; it needs several.")
        d, n = dataset.shape
        if weights is not None:
            dataset, weights = ufuncs.promote_dtypes_inexact("scipy.stats.gaussian_kde",
                                                             dataset, weights)
            weights = shapes.atleast_1d(weights)
            if weights.ndim != 1 or weights.shape[0] != n:
                raise NumbaxValueError(
                    f"numbax.scipy.stats.gaussian_kde: weights has shape {weights.shape}, "
                    f"expected ({n},), one weight per sample.")
            weights = weights / reductions.sum(weights)
        else:
            weights = lax_numpy.asarray(np.full(n, 1.0 / n, dtype=dataset.dtype))
        self._set("dataset", dataset)
        self._set("weights", weights)
        neff = self._set("neff", 1 / reductions.sum(weights * weights))
        if bw_method is None or (isinstance(bw_method, str) and bw_method == "scott"):
            factor = neff ** (-1.0 / (d + 4))
        elif isinstance(bw_method, str) and bw_method == "silverman":
            factor = (neff * (d + 2) / 4.0) ** (-1.0 / (d + 4))
        elif callable(bw_method):
            factor = bw_method(self)
        elif not isinstance(bw_method, str) and np.ndim(bw_method) == 0:
            factor = bw_method
        else:
            raise NumbaxValueError(
                f"numbax.scipy.stats.gaussian_kde: bw_method is {bw_method!r}, expected "
                "'scott', 'silverman', a scalar, or a callable.")
        mean = reductions.sum(dataset * weights, axis=1, keepdims=True)
        centred = dataset - mean
        # numpy's cov(rowvar=1, bias=False, aweights=weights), weights summing to 1
        data_cov = matmul(centred * weights, centred.T) / (1 - reductions.sum(weights ** 2))
        self._set("covariance", data_cov * factor ** 2)
        self._set("inv_cov", linalg.inv(data_cov) / factor ** 2)

    def _set(self, name: str, value: Any) -> Any:
        object.__setattr__(self, name, value)
        return value

    def tree_flatten(self) -> tuple[tuple, None]:
        return (self.neff, self.dataset, self.weights, self.covariance, self.inv_cov), None

    @classmethod
    def tree_unflatten(cls, aux_data: Any, children: Any) -> gaussian_kde:
        kde = cls.__new__(cls)
        for name, value in zip(("neff", "dataset", "weights", "covariance", "inv_cov"),
                               children, strict=True):
            kde._set(name, value)
        return kde

    @property
    def d(self) -> int:
        """The dimension of the data."""
        return self.dataset.shape[0]

    @property
    def n(self) -> int:
        """The number of samples."""
        return self.dataset.shape[1]

    def _points(self, api: str, points: Any) -> Any:
        points = _inexact_2d(api, points)
        d, m = points.shape
        if d != self.d:
            if d == 1 and m == self.d:
                return points.reshape((self.d, 1))
            raise NumbaxValueError(
                f"numbax.scipy.stats.gaussian_kde.{api}: points have dimension {d}, the "
                f"dataset has dimension {self.d}.")
        return points

    def _log_kernels(self, points: Any) -> Any:
        """log(w_i) + log N(x_j; data_i, covariance) for every (sample i, point j)."""
        whitening = lax_linalg.cholesky(self.inv_cov)
        data = matmul(self.dataset.T, whitening)
        xs = matmul(points.T, whitening)
        log_norm = (reductions.sum(ufuncs.log(diagonal(whitening)))
                    - 0.5 * self.d * math.log(2 * math.pi))
        sq = reductions.sum((data[:, None, :] - xs[None, :, :]) ** 2, axis=-1)
        return ufuncs.log(self.weights)[:, None] + log_norm - 0.5 * sq

    def evaluate(self, points: Any) -> Any:
        """The density at points (d, m) (or (m,) when d = 1): an array of shape (m,)."""
        points = self._points("evaluate", points)
        return reductions.sum(ufuncs.exp(self._log_kernels(points)), axis=0)

    def __call__(self, points: Any) -> Any:
        return self.evaluate(points)

    def pdf(self, x: Any) -> Any:
        """The density at x, as evaluate."""
        return self.evaluate(x)

    def logpdf(self, x: Any) -> Any:
        """The log density at x, by logsumexp over the kernels."""
        points = self._points("logpdf", x)
        return logsumexp(self._log_kernels(points), axis=0)

    def integrate_gaussian(self, mean: Any, cov: Any) -> Any:
        """The integral of the density times a Gaussian N(mean, cov)."""
        mean = shapes.atleast_1d(shapes.squeeze(lax_numpy.asarray(mean)))
        cov = shapes.atleast_2d(lax_numpy.asarray(cov))
        if mean.shape != (self.d,) or cov.shape != (self.d, self.d):
            raise NumbaxValueError(
                f"numbax.scipy.stats.gaussian_kde.integrate_gaussian: mean has shape "
                f"{mean.shape} and cov {cov.shape}, expected ({self.d},) and "
                f"({self.d}, {self.d}).")
        return self._convolve(self.covariance + cov, self.dataset, self.weights, mean)

    def _convolve(self, total_cov: Any, target: Any, weights: Any, mean: Any) -> Any:
        chol = lax_linalg.cholesky(total_cov)
        norm = 1 / ((2 * math.pi) ** (self.d / 2) * reductions.prod(diagonal(chol)))
        diff = target - mean[:, None]
        solved = lax_linalg.triangular_solve(chol, diff, left_side=True, lower=True)
        arg = 0.5 * reductions.sum(solved * solved, axis=0)
        return norm * reductions.sum(ufuncs.exp(-arg) * weights)

    def integrate_box_1d(self, low: Any, high: Any) -> Any:
        """The probability mass between low and high (1-D data only)."""
        if self.d != 1:
            raise NumbaxValueError(
                "numbax.scipy.stats.gaussian_kde.integrate_box_1d: the data is "
                f"{self.d}-dimensional; this handles 1-D densities only.")
        if np.ndim(low) != 0 or np.ndim(high) != 0:
            raise NumbaxValueError(
                "numbax.scipy.stats.gaussian_kde.integrate_box_1d: low and high must be "
                "scalars.")
        sigma = ufuncs.sqrt(self.covariance[0, 0])
        lo = (low - self.dataset[0]) / sigma
        hi = (high - self.dataset[0]) / sigma
        return reductions.sum(self.weights * (_ndtr(hi) - _ndtr(lo)))

    def integrate_kde(self, other: gaussian_kde) -> Any:
        """The integral of the product of this density and another kde's."""
        if other.d != self.d:
            raise NumbaxValueError(
                f"numbax.scipy.stats.gaussian_kde.integrate_kde: the kdes have dimensions "
                f"{self.d} and {other.d}; they must match.")
        total = self.covariance + other.covariance
        small, large = (self, other) if self.n < other.n else (other, self)
        values = [self._convolve(total, large.dataset, large.weights, small.dataset[:, i])
                  for i in range(small.n)]
        return reductions.sum(shapes.stack(values) * small.weights)

    def resample(self, key: Any, shape: tuple[int, ...] = ()) -> Any:
        """Draws samples: a data point chosen by weight plus Gaussian noise of the kernel's
        covariance. Returns shape (d, *shape)."""
        shape = tuple(shape)
        ind_key, eps_key = random_keys.split(key)
        ind = random_discrete.choice(ind_key, self.n, shape=shape, p=self.weights)
        zeros = lax_numpy.asarray(np.zeros(self.d, self.covariance.dtype))
        eps = nb_random.multivariate_normal(eps_key, zeros, self.covariance, shape=shape,
                                            dtype=self.dataset.dtype)
        return self.dataset[:, ind] + shapes.moveaxis(eps, -1, 0)

    def integrate_box(self, low_bounds: Any, high_bounds: Any, maxpts: Any = None) -> Any:
        """Not supported (as in JAX): use integrate_box_1d."""
        raise NotImplementedError(
            "numbax.scipy.stats.gaussian_kde.integrate_box: only 1-D box integrals are "
            "supported (as in JAX); use integrate_box_1d.")

    def set_bandwidth(self, bw_method: Any = None) -> None:
        """Not supported (as in JAX): build a new gaussian_kde with the bandwidth instead."""
        raise NotImplementedError(
            "numbax.scipy.stats.gaussian_kde.set_bandwidth: changing the bandwidth is not "
            "supported (as in JAX); construct a new gaussian_kde(dataset, bw_method=...).")
