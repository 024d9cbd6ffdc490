"""numbax.random's count samplers (poisson, binomial, multinomial): JAX's rejection loops.

Each follows jax/_src/random/core.py step for step: the same keys are split in the same order,
every loop draws for the whole array until all elements are accepted (an accepted element is
redrawn and may be overwritten, as in JAX), and the Knuth / inversion branches for small means
run beside the transformed-rejection ones and are selected per element.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from numbax._src import dtypes, jnp, prng
from numbax._src.core import get_aval
from numbax._src.dtypes import finfo_of
from numbax._src.eager_compile import compiled_when_eager
from numbax._src.errors import NumbaxValueError
from numbax._src.lax import elementwise as ew
from numbax._src.lax.control_flow import loops
from numbax._src.prng import canonicalize_shape, check_key
from numbax._src.random import _check_shape, _float_dtype, _int_dtype, _param_shapes, _uniform
from numbax._src.random_keys import _split_raw

_F32 = np.dtype(np.float32)


def _quiet(sampler: Callable) -> Callable:
    """Run eagerly, the rejection loops meet inf/nan on purpose (p = 1, rejected candidates);
    numpy's floating-point warnings about them would be noise, as JAX gives none."""

    @functools.wraps(sampler)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with np.errstate(all="ignore"):
            return sampler(*args, **kwargs)

    return wrapper

# ----------------------------------------------------------------------------- poisson


def _poisson_knuth(data: Any, lam: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    """Knuth: multiply uniforms until the product drops below exp(-lam)."""
    max_iters = np.array(np.iinfo(dtype).max, dtype)

    def cond_fn(carry):
        i, _, _, log_prod = carry
        return jnp.logical_and(jnp.any(log_prod > -lam), i < max_iters)

    def body_fn(carry):
        i, k, rng, log_prod = carry
        rng, subkey = _split_raw(rng)
        k = jnp.where(log_prod > -lam, k + 1, k)
        u = _uniform(subkey, shape, _F32, 0.0, 1.0)
        return i + 1, k, rng, log_prod + ew.log(u)

    init = (np.array(0, dtype), jnp.zeros(shape, dtype), data, jnp.zeros(shape, _F32))
    k = loops.while_loop(cond_fn, body_fn, init)[1]
    return (k - 1).astype(dtype)


def _poisson_rejection(data: Any, lam: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    """Hormann's transformed rejection (PTRS) for lam >= 10."""
    max_iters = np.array(np.iinfo(dtype).max, dtype)
    log_lam = ew.log(lam)
    b = 0.931 + 2.53 * ew.sqrt(lam)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2)

    def body_fn(carry):
        i, k_out, accepted, rng = carry
        rng, subkey_0, subkey_1 = _split_raw(rng, 3)
        u = _uniform(subkey_0, shape, _F32, 0.0, 1.0) - 0.5
        v = _uniform(subkey_1, shape, _F32, 0.0, 1.0)
        u_shifted = 0.5 - jnp.abs(u)
        k = ew.floor((2 * a / u_shifted + b) * u + lam + 0.43)
        s = ew.log(v * inv_alpha / (a / (u_shifted * u_shifted) + b))
        t = -lam + k * log_lam - ew.lgamma(k + 1)
        accept1 = (u_shifted >= 0.07) & (v <= v_r)
        reject = (k < 0) | ((u_shifted < 0.013) & (v > u_shifted))
        accept = accept1 | (~reject & (s <= t))
        return i + 1, jnp.where(accept, k, k_out), accepted | accept, rng

    def cond_fn(carry):
        i, _, accepted, _ = carry
        return jnp.logical_and(jnp.any(~accepted), i < max_iters)

    init = (np.array(0, dtype), jnp.full(shape, -1, _F32), jnp.zeros(shape, bool), data)
    k = loops.while_loop(cond_fn, body_fn, init)[1]
    return k.astype(dtype)


@_quiet
@compiled_when_eager
def poisson(key: Any, lam: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Poisson(lam) draws: Knuth's method for lam < 10, transformed rejection above.

    Args:
      key: a single PRNG key.
      lam: the rate (mean), >= 0, broadcastable to `shape`; computed in float32 as in JAX.
      shape: the result shape (default: lam's shape).
      dtype: an integer dtype (default: numbax's default int).

    Returns:
      Integer counts of shape `shape` (0 where lam == 0).
    """
    data, _ = check_key("random.poisson", key)
    dtype = _int_dtype("random.poisson", dtype)
    lam = jnp.asarray(lam)
    if shape is None:
        shape = tuple(get_aval(lam).shape)
    else:
        shape = canonicalize_shape("random.poisson", shape)
        _check_shape("random.poisson", shape, lam=lam)
    lam = jnp.broadcast_to(lam, shape).astype(_F32)
    use_knuth = jnp.isnan(lam) | (lam < 10)
    lam_knuth = jnp.where(use_knuth, lam, jnp.zeros_like(lam))
    lam_rejection = jnp.where(use_knuth, jnp.full_like(lam, 1e5), lam)
    result = jnp.where(use_knuth, _poisson_knuth(data, lam_knuth, shape, dtype),
                       _poisson_rejection(data, lam_rejection, shape, dtype))
    return jnp.where(lam == 0, jnp.zeros_like(result), result)


# ----------------------------------------------------------------------------- binomial

_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                  0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                  0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                  0.00833056343336287)


def _stirling_approx_tail(k: Any) -> Any:
    """log(k!) minus Stirling's approximation: a table for k <= 9, a series above."""
    dtype = get_aval(k).dtype
    table = jnp.asarray(np.array(_STIRLING_TAIL, dtype))
    use_table = k <= 9
    k = jnp.clip(k, np.array(0.0, dtype), np.array(9.0, dtype))
    kp1sq = (k + 1) * (k + 1)
    approx = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)
    return jnp.where(use_table, table[ew.floor(k).astype(np.int32)], approx)


def _binomial_inversion(data: Any, count: Any, prob: Any, shape: tuple[int, ...],
                        dtype: np.dtype) -> Any:
    """Counts geometric waiting times until they pass `count` (for count * p <= 10)."""
    pdt = get_aval(prob).dtype
    max_iters = np.array(finfo_of(dtype).max, dtype)
    log1minusprob = ew.log1p(ew.neg(prob))

    def body_fn(carry):
        i, num_geom, geom_sum, rng = carry
        subkey, rng = _split_raw(rng)
        num_geom_out = jnp.where(geom_sum <= count, num_geom + 1, num_geom)
        u = _uniform(subkey, shape, pdt, 0.0, 1.0)
        geom = ew.ceil(ew.log(u) / log1minusprob)
        return i + 1, num_geom_out, geom_sum + geom, rng

    def cond_fn(carry):
        i, _, geom_sum, _ = carry
        return jnp.logical_and(jnp.any(geom_sum <= count), i < max_iters)

    init = (np.array(0, np.int32), jnp.zeros(shape, pdt), jnp.zeros(shape, pdt), data)
    k = loops.while_loop(cond_fn, body_fn, init)[1]
    return (k - 1).astype(dtype)


def _btrs(data: Any, count: Any, prob: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    """Hormann's BTRS transformed rejection (for count * p > 10)."""
    pdt = get_aval(prob).dtype
    max_iters = np.array(finfo_of(dtype).max, dtype)
    stddev = ew.sqrt(count * prob * (1 - prob))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = count * prob + 0.5
    v_r = 0.92 - 4.2 / b
    r = prob / (1 - prob)
    alpha = (2.83 + 5.1 / b) * stddev
    m = ew.floor((count + 1) * prob)

    def body_fn(carry):
        i, k_out, accepted, rng = carry
        rng, subkey_0, subkey_1 = _split_raw(rng, 3)
        u = _uniform(subkey_0, shape, pdt, 0.0, 1.0)
        v = _uniform(subkey_1, shape, pdt, 0.0, 1.0)
        u = u - 0.5
        us = 0.5 - jnp.abs(u)
        accept1 = (us >= 0.07) & (v <= v_r)
        k = ew.floor((2 * a / us + b) * u + c)
        reject = (k < 0) | (k > count)
        v = ew.log(v * alpha / (a / (us * us) + b))
        ub = ((m + 0.5) * ew.log((m + 1) / (r * (count - m + 1)))
              + (count + 1) * ew.log((count - m + 1) / (count - k + 1))
              + (k + 0.5) * ew.log(r * (count - k + 1) / (k + 1))
              + _stirling_approx_tail(m)
              + _stirling_approx_tail(count - m)
              - _stirling_approx_tail(k)
              - _stirling_approx_tail(count - k))
        accept = accept1 | (~reject & (v <= ub))
        return i + 1, jnp.where(accept, k, k_out), accepted | accept, rng

    def cond_fn(carry):
        i, _, accepted, _ = carry
        return jnp.logical_and(jnp.any(~accepted), i < max_iters)

    init = (np.array(0, np.int32), jnp.full(shape, -1, pdt), jnp.zeros(shape, bool), data)
    return loops.while_loop(cond_fn, body_fn, init)[1].astype(dtype)


def _binomial(data: Any, count: Any, prob: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    prob = prob.astype(dtypes.to_inexact(get_aval(prob).dtype))
    pdt = get_aval(prob).dtype
    count = jnp.broadcast_to(count.astype(pdt), shape)
    prob = jnp.broadcast_to(prob, shape)
    p_lt_half = prob < 0.5
    q = jnp.where(p_lt_half, prob, 1.0 - prob)
    count_nan_or_neg = jnp.isnan(count) | (count < 0.0)
    count_inf = jnp.isinf(count)
    q_is_nan = jnp.isnan(q)
    q_l_0 = q < 0.0
    q = jnp.where(q_is_nan | q_l_0, jnp.full_like(q, 0.01), q)
    use_inversion = count_nan_or_neg | (count * q <= 10.0)
    count = ew.floor(count)
    count_inv = jnp.where(use_inversion, count, jnp.zeros_like(count))
    count_btrs = jnp.where(use_inversion, jnp.full_like(count, 1e4), count)
    q_btrs = jnp.where(use_inversion, jnp.full_like(q, 0.5), q)
    samples = jnp.where(use_inversion, _binomial_inversion(data, count_inv, q, shape, dtype),
                        _btrs(data, count_btrs, q_btrs, shape, dtype))
    invalid = q_l_0 | q_is_nan | count_nan_or_neg
    samples = jnp.where(invalid, jnp.full_like(samples, np.nan), samples)
    samples = jnp.where(count_inf & ~invalid, jnp.full_like(samples, np.inf), samples)
    keep = p_lt_half | count_nan_or_neg | q_is_nan | count_inf
    return jnp.where(keep, samples, count.astype(dtype) - samples)


@_quiet
@compiled_when_eager
def binomial(key: Any, n: Any, p: Any, shape: Sequence[int] | None = None,
             dtype: Any = None) -> Any:
    """Binomial(n, p) draws: inversion for n * min(p, 1 - p) <= 10, BTRS rejection above.

    Args:
      key: a single PRNG key.
      n: the number of trials (floored; nan or negative gives nan, inf gives inf).
      p: the success probability (nan or negative gives nan).
      shape: the result shape (default: the broadcast shape of n and p).
      dtype: a float dtype (default: numbax's default float), as in JAX.

    Returns:
      Counts of shape `shape` as floats.
    """
    data, _ = check_key("random.binomial", key)
    dtype = _float_dtype("random.binomial", dtype)
    n, p = jnp.asarray(n), jnp.asarray(p)
    shape = _param_shapes("random.binomial", shape, n=n, p=p)
    return _binomial(data, n, p, shape, dtype)


@_quiet
@compiled_when_eager
def multinomial(key: Any, n: Any, p: Any, *, shape: Sequence[int] | None = None,
                dtype: Any = None, unroll: int | bool = 1) -> Any:
    """Multinomial(n, p) counts over p's last axis, as a scan of conditional binomials.

    Args:
      key: a single PRNG key.
      n: the number of trials, broadcastable to shape[:-1].
      p: category probabilities along the last axis (normalised per draw).
      shape: the result shape (default: p's shape); its last axis is the category axis.
      dtype: a float dtype for the counts (default: numbax's default float).
      unroll: passed to the scan over categories (lax.scan's unroll).

    Returns:
      Counts of shape `shape` summing to n along the last axis.
    """
    data, _ = check_key("random.multinomial", key)
    dtype = _float_dtype("random.multinomial", dtype)
    n, p = jnp.asarray(n), jnp.asarray(p)
    inexact = dtypes.to_inexact(jnp.result_type(n, p))
    n, p = n.astype(inexact), p.astype(inexact)
    shape = tuple(get_aval(p).shape) if shape is None else canonicalize_shape(
        "random.multinomial", shape)
    if not shape:
        raise NumbaxValueError(
            "random.multinomial: p has shape () and shape is None or (), expected a category "
            "axis (p of shape (..., k))."
        )
    _check_shape("random.multinomial", shape[:-1], n=n)
    _check_shape("random.multinomial", shape, p=p)
    n = jnp.broadcast_to(n, shape[:-1])
    p = jnp.moveaxis(jnp.broadcast_to(p, shape), -1, 0)
    remaining = jnp.flip(jnp.cumsum(jnp.flip(p, 0), 0), 0)
    ratios = p / jnp.where(remaining == 0, jnp.ones_like(remaining), remaining)
    keys = prng.split_data(data, (shape[-1],))

    def step(remainder, ratio_key):
        ratio, k = ratio_key
        count = _binomial(k, remainder, jnp.clip(ratio, 0, 1), tuple(get_aval(remainder).shape),
                          get_aval(remainder).dtype)
        return remainder - count, count

    _, counts = loops.scan(step, n, (ratios, keys), unroll=unroll)
    return jnp.moveaxis(counts, 0, -1).astype(dtype)
