"""numbax.random's continuous samplers that transform uniform or normal draws (cauchy, laplace,
logistic, lognormal, pareto, maxwell, double_sided_maxwell, rayleigh, triangular, wald,
weibull_min), each JAX's transform step for step: the same key gives JAX's draws to a few ulp
(the transcendental functions are numpy's here, XLA's in JAX)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax._src import jnp
from numbax._src.dtypes import finfo_of
from numbax._src.eager_compile import compiled_when_eager
from numbax._src.lax import elementwise as ew
from numbax._src.prng import canonicalize_shape, check_key
from numbax._src.random import (
    _check_safe_cast,
    _exponential,
    _float_dtype,
    _normal,
    _normal_real,
    _param_shapes,
    _uniform,
)
from numbax._src.random_discrete import _rademacher
from numbax._src.random_keys import _split_raw

# ----------------------------------------------------------------------------- parameter-free


def _simple(api: str, key: Any, shape: Any, dtype: Any) -> tuple[Any, tuple[int, ...], Any]:
    data, _ = check_key(api, key)
    dtype = _float_dtype(api, dtype)
    return data, canonicalize_shape(api, shape), dtype


@compiled_when_eager
def cauchy(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Standard Cauchy draws: tan(pi * (u - 1/2)), u uniform in [eps, 1).

    Args:
      key: a single PRNG key.
      shape: the result shape.
      dtype: a float dtype (default: numbax's default float).

    Returns:
      Draws of shape `shape`.
    """
    data, shape, dtype = _simple("random.cauchy", key, shape, dtype)
    u = _uniform(data, shape, dtype, finfo_of(dtype).eps, 1.0)
    return ew.tan(ew.mul(np.array(np.pi, dtype), ew.sub(u, np.array(0.5, dtype))))


@compiled_when_eager
def laplace(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Standard Laplace draws: sign(u) * log1p(-|u|), u uniform in (-1, 1).

    Args:
      key: a single PRNG key.
      shape: the result shape.
      dtype: a float dtype (default: numbax's default float).

    Returns:
      Draws of shape `shape`.
    """
    data, shape, dtype = _simple("random.laplace", key, shape, dtype)
    u = _uniform(data, shape, dtype, -1.0 + finfo_of(dtype).epsneg, 1.0)
    return ew.mul(ew.sign(u), ew.log1p(ew.neg(ew.abs(u))))


@compiled_when_eager
def logistic(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Standard logistic draws: log(u) - log1p(-u), u uniform in [tiny, 1).

    Args:
      key: a single PRNG key.
      shape: the result shape.
      dtype: a float dtype (default: numbax's default float).

    Returns:
      Draws of shape `shape`.
    """
    data, shape, dtype = _simple("random.logistic", key, shape, dtype)
    x = _uniform(data, shape, dtype, finfo_of(dtype).tiny, 1.0)
    return ew.sub(ew.log(x), ew.log1p(ew.neg(x)))


@compiled_when_eager
def maxwell(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Maxwell draws: the Euclidean norm of three standard normal draws.

    Args:
      key: a single PRNG key.
      shape: the result shape.
      dtype: a float dtype (default: numbax's default float).

    Returns:
      Draws of shape `shape`.
    """
    data, shape, dtype = _simple("random.maxwell", key, shape, dtype)
    return _maxwell(data, shape, dtype)


def _maxwell(data: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    z = _normal_real(data, shape + (3,), dtype)
    return jnp.sqrt(jnp.sum(z * z, axis=-1))


@compiled_when_eager
def double_sided_maxwell(key: Any, loc: Any, scale: Any, shape: Sequence[int] = (),
                         dtype: Any = None) -> Any:
    """Double-sided Maxwell draws: a random sign times a Maxwell draw, scaled and shifted.

    As in JAX, the result shape is `shape` + the broadcast shape of loc and scale (or that
    shape twice when `shape` is ()).

    Args:
      key: a single PRNG key.
      loc: the location.
      scale: the scale.
      shape: the leading result shape.
      dtype: a float dtype (default: numbax's default float).

    Returns:
      Draws of shape shape + broadcast(loc, scale).shape.
    """
    data, shape, dtype = _simple("random.double_sided_maxwell", key, shape, dtype)
    params = _param_shapes("random.double_sided_maxwell", None, loc=jnp.asarray(loc),
                           scale=jnp.asarray(scale))
    if not shape:
        shape = params
    shape = shape + params
    k_maxwell, k_sign = _split_raw(data)
    maxwell_rvs = _maxwell(k_maxwell, shape, dtype)
    sign = _rademacher(k_sign, shape, dtype)
    return sign * maxwell_rvs * scale + loc


# ----------------------------------------------------------------------------- with parameters


_ONE_F32 = np.float32(1)


@compiled_when_eager
def lognormal(key: Any, sigma: Any = _ONE_F32, shape: Sequence[int] | None = None,
              dtype: Any = None) -> Any:
    """Log-normal draws: exp(sigma * n), n standard normal.

    Args:
      key: a single PRNG key.
      sigma: the log-scale standard deviation, broadcastable to `shape`.
      shape: the result shape (default: sigma's shape).
      dtype: a float or complex dtype (default: numbax's default float).

    Returns:
      Draws of shape `shape`.
    """
    data, _ = check_key("random.lognormal", key)
    dtype = _float_dtype("random.lognormal", dtype, "fc")
    _check_safe_cast("random.lognormal", dtype, sigma=sigma)
    sigma = jnp.asarray(sigma)
    shape = _param_shapes("random.lognormal", shape, sigma=sigma)
    return ew.exp(_normal(data, shape, dtype) * sigma.astype(dtype))


@compiled_when_eager
def pareto(key: Any, b: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Pareto(b) draws on [1, inf): exp(e / b), e exponential.

    Args:
      key: a single PRNG key.
      b: the shape parameter (> 0), broadcastable to `shape`.
      shape: the result shape (default: b's shape).
      dtype: a float dtype (default: numbax's default float).

    Returns:
      Draws of shape `shape`.
    """
    data, _ = check_key("random.pareto", key)
    dtype = _float_dtype("random.pareto", dtype)
    _check_safe_cast("random.pareto", dtype, b=b)
    b = jnp.asarray(b)
    shape = _param_shapes("random.pareto", shape, b=b)
    return ew.exp(_exponential(data, shape, dtype) / b.astype(dtype))


@compiled_when_eager
def rayleigh(key: Any, scale: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Rayleigh(scale) draws: scale * sqrt(-2 log(u)).

    Args:
      key: a single PRNG key.
      scale: the scale (> 0), broadcastable to `shape`.
      shape: the result shape (default: scale's shape).
      dtype: a float dtype (default: numbax's default float).

    Returns:
      Draws of shape `shape`.
    """
    data, _ = check_key("random.rayleigh", key)
    dtype = _float_dtype("random.rayleigh", dtype)
    _check_safe_cast("random.rayleigh", dtype, scale=scale)
    scale = jnp.asarray(scale)
    shape = _param_shapes("random.rayleigh", shape, scale=scale)
    u = _uniform(data, shape, dtype, 0.0, 1.0)
    scale = jnp.broadcast_to(scale.astype(dtype), shape)
    return ew.mul(scale, ew.sqrt(ew.mul(ew.log(u), np.array(-2, dtype))))


@compiled_when_eager
def triangular(key: Any, left: Any, mode: Any, right: Any, shape: Sequence[int] | None = None,
               dtype: Any = None) -> Any:
    """Triangular(left, mode, right) draws by inverting the CDF.

    Args:
      key: a single PRNG key.
      left, mode, right: the support's ends and the peak (left <= mode <= right),
        broadcastable to `shape`.
      shape: the result shape (default: the parameters' broadcast shape).
      dtype: a float dtype (default: numbax's default float).

    Returns:
      Draws of shape `shape`.
    """
    data, _ = check_key("random.triangular", key)
    dtype = _float_dtype("random.triangular", dtype)
    _check_safe_cast("random.triangular", dtype, left=left, mode=mode, right=right)
    left, mode, right = jnp.asarray(left), jnp.asarray(mode), jnp.asarray(right)
    shape = _param_shapes("random.triangular", shape, left=left, mode=mode, right=right)
    left, mode, right = (jnp.broadcast_to(v.astype(dtype), shape) for v in (left, mode, right))
    fc = (mode - left) / (right - left)
    u = _uniform(data, shape, dtype, 0.0, 1.0)
    out1 = left + jnp.sqrt(u * (right - left) * (mode - left))
    out2 = right - jnp.sqrt((1 - u) * (right - left) * (right - mode))
    return jnp.where(u < fc, out1, out2)


@compiled_when_eager
def wald(key: Any, mean: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Wald (inverse Gaussian, unit shape) draws by Michael, Schucany and Haas' transform.

    Args:
      key: a single PRNG key.
      mean: the mean (> 0), broadcastable to `shape`.
      shape: the result shape (default: mean's shape).
      dtype: a float dtype (default: numbax's default float).

    Returns:
      Draws of shape `shape`.
    """
    data, _ = check_key("random.wald", key)
    dtype = _float_dtype("random.wald", dtype)
    _check_safe_cast("random.wald", dtype, mean=mean)
    mean = jnp.asarray(mean)
    shape = _param_shapes("random.wald", shape, mean=mean)
    k1, k2 = _split_raw(data)
    mean = jnp.broadcast_to(mean.astype(dtype), shape)
    v = _normal_real(k1, shape, dtype)
    z = _uniform(k2, shape, dtype, 0.0, 1.0)
    y = ew.integer_pow(v, 2)
    y_sq = ew.integer_pow(y, 2)
    mean_sq = ew.integer_pow(mean, 2)
    sqrt_term = jnp.sqrt(4 * mean * y + mean_sq * y_sq)
    x = mean + mean_sq * y / 2 - mean / 2 * sqrt_term
    return jnp.where(z <= mean / (mean + x), x, mean_sq / x)


@compiled_when_eager
def weibull_min(key: Any, scale: Any, concentration: Any, shape: Sequence[int] = (),
                dtype: Any = None) -> Any:
    """Weibull draws: scale * (-log1p(-u)) ** (1 / concentration).

    Args:
      key: a single PRNG key.
      scale: the scale (> 0).
      concentration: the shape parameter (> 0).
      shape: the uniform draws' shape (the result broadcasts it with the parameters, as in
        JAX).
      dtype: a float dtype (default: numbax's default float).

    Returns:
      Draws of the broadcast shape of `shape`, scale and concentration.
    """
    data, shape, dtype = _simple("random.weibull_min", key, shape, dtype)
    u = _uniform(data, shape, dtype, 0.0, 1.0)
    return jnp.power(-ew.log1p(ew.neg(u)), 1.0 / concentration) * scale
