"""numbax.random's gamma sampler and its implicit-reparameterisation gradient, as in JAX.

Draws are Marsaglia-Tsang rejection with JAX's key schedule (one split key per element, the same
inner loops and boost for a < 1), so they follow JAX's draws to a few ulp. The derivative of a
draw with respect to `a` is JAX's: the implicit gradient dx/da = -(dP/da) / (dP/dx) at the
draw's quantile, P the regularised lower incomplete gamma function, with dP/da from P's series
(x <= 1 or x <= a) or from the continued fraction of Q = 1 - P (otherwise), both
differentiated term by term.

`random_gamma_p` is JAX's primitive (key data, a; param log_space). Its block lives here, beside
the sampler it binds, as JAX keeps it in jax/_src/random: its impl is the sampler's composition
of lax ops. `gamma`/`loggamma` go through a custom_jvp of the same composition instead, so under
jit they inline and compile as ordinary loops.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax._src import core, jnp, prng
from numbax._src.core import Primitive, ShapedArray, get_aval
from numbax._src.custom_derivatives import custom_jvp
from numbax._src.dtypes import finfo_of, kind_of
from numbax._src.eager_compile import compiled_when_eager
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import ad, batching
from numbax._src.lax import elementwise as ew
from numbax._src.lax.control_flow import loops
from numbax._src.prng import canonicalize_shape, check_key
from numbax._src.random import (
    _check_safe_cast,
    _concrete_size,
    _exponential,
    _float_dtype,
    _normal_from_bits,
    _normal_real,
    _param_shapes,
    _shape_only,
    _uniform_from_bits,
    uniform_bits,
)
from numbax._src.random_discrete import _rademacher
from numbax._src.random_keys import _split_raw

# ----------------------------------------------------------------------------- the sampler


def _gamma_many(keys: Any, alpha: Any, log_space: bool) -> Any:
    """Marsaglia-Tsang draws for n keys and n alphas: vmap of JAX's `_gamma_one`, written out.

    Every element takes exactly the steps of its own loop (the same splits, normal and uniform
    draws, rejection test and boost for alpha < 1); the whole-array loops stop once no element
    is still rejecting, and finished elements keep their values. So eager calls cost a few
    array operations per round, not per element.
    """
    n = get_aval(alpha).shape[0]
    dtype = get_aval(alpha).dtype
    nbits = uniform_bits(dtype)

    def c(v):
        return np.array(v, dtype)

    def split(ks, num):
        parts = prng.split_many(ks, num)
        return [jnp.reshape(parts[:, i, :], (n, 2)) for i in range(num)]

    def keep(active, new, old):
        mask = active if get_aval(new).ndim == 1 else active[:, None]
        return jnp.where(mask, new, old)

    boost_mask = ew.ge(alpha, c(1))
    alpha_orig = alpha
    alpha = ew.select(boost_mask, alpha, ew.add(alpha, c(1)))
    d = ew.sub(alpha, c(1.0 / 3.0))
    cc = ew.div(c(1.0 / 3.0), ew.sqrt(d))

    def rejected(x, v, u):
        first = ew.ge(u, ew.sub(c(1), ew.mul(c(0.0331), ew.mul(x, x))))
        second = ew.ge(ew.log(u), ew.add(ew.mul(x, c(0.5)),
                                         ew.mul(d, ew.add(ew.sub(c(1), v), ew.log(v)))))
        return ew.bitwise_and(first, second)

    def next_kxv(state):
        active, k, x, v = state
        k_new, sub = split(k, 2)
        x_new = _normal_from_bits(prng.random_bits_many(sub, nbits), (n,), dtype)
        v_new = ew.add(c(1), ew.mul(x_new, cc))
        k, x, v = keep(active, k_new, k), keep(active, x_new, x), keep(active, v_new, v)
        return ew.bitwise_and(active, ew.le(v, c(0))), k, x, v

    def body_fn(state):
        active, k, big_x, big_v, u = state
        k_new, x_key, u_key = split(k, 3)
        zeros = jnp.zeros((n,), dtype)
        _, _, x, v = loops.while_loop(lambda s: jnp.any(s[0]), next_kxv,
                                      (active, x_key, zeros, zeros - 1))
        u_new = _uniform_from_bits(prng.random_bits_many(u_key, nbits), (n,), dtype, 0.0, 1.0)
        k = keep(active, k_new, k)
        big_x = keep(active, ew.mul(x, x), big_x)
        big_v = keep(active, ew.mul(ew.mul(v, v), v), big_v)
        u = keep(active, u_new, u)
        return ew.bitwise_and(active, rejected(big_x, big_v, u)), k, big_x, big_v, u

    k, sub = split(keys, 2)
    x0, v0, u0 = jnp.zeros((n,), dtype), jnp.ones((n,), dtype), jnp.full((n,), 2, dtype)
    state = loops.while_loop(lambda s: jnp.any(s[0]), body_fn,
                             (rejected(x0, v0, u0), k, x0, v0, u0))
    v = state[3]
    u = _uniform_from_bits(prng.random_bits_many(sub, nbits), (n,), dtype, 0.0, 1.0)
    if log_space:
        log_samples = ew.log1p(ew.neg(u))
        log_boost = ew.select(jnp.logical_or(boost_mask, ew.eq(log_samples, c(0))),
                              jnp.zeros_like(u), ew.mul(log_samples, ew.div(c(1), alpha_orig)))
        return ew.add(ew.add(ew.log(d), ew.log(v)), log_boost)
    samples = ew.sub(c(1), u)
    boost = ew.select(boost_mask, jnp.ones_like(u), ew.pow(samples, ew.div(c(1), alpha_orig)))
    return ew.mul(ew.mul(d, v), boost)


def _gamma_sample(keys: Any, a: Any, log_space: bool) -> Any:
    """Draws for every element of `a` from keys of shape a.shape[:k] + (2,): each key is
    split into one key per element of the trailing a.shape[k:] (JAX's `_gamma_impl`)."""
    a_shape = tuple(get_aval(a).shape)
    key_shape = tuple(get_aval(keys).shape[:-1])
    count = math.prod(a_shape[len(key_shape):])
    size = math.prod(a_shape)
    if size == 0:
        return a
    per_key = prng.split_many(jnp.reshape(keys, (-1, 2)), count)
    samples = _gamma_many(jnp.reshape(per_key, (size, 2)), jnp.reshape(a, (size,)), log_space)
    return jnp.reshape(samples, a_shape)


# ----------------------------------------------------------------------------- the gradient


def _series_terms(x: Any, a: Any, enabled: Any) -> tuple[Any, Any]:
    """S = sum_n x^n / ((a+1)...(a+n)) and dS/da, summed while the derivative still moves."""
    eps = finfo_of(get_aval(a).dtype).eps

    def body(state):
        active, r, term, total, dterm, dtotal = state
        r_new = r + 1
        dterm_new = dterm * (x / r_new) - (term * x) / (r_new * r_new)
        dtotal_new = dtotal + dterm_new
        term_new = term * (x / r_new)
        total_new = total + term_new
        still = active & (jnp.abs(dterm_new / dtotal_new) > eps)
        keep = lambda new, old: jnp.where(active, new, old)  # noqa: E731
        return (still, keep(r_new, r), keep(term_new, term), keep(total_new, total),
                keep(dterm_new, dterm), keep(dtotal_new, dtotal))

    ones, zeros = jnp.ones_like(a), jnp.zeros_like(a)
    state = loops.while_loop(lambda s: jnp.any(s[0]), body,
                             (enabled, a, ones, ones, zeros, zeros))
    return state[3], state[5]


def _fraction_terms(x: Any, a: Any, enabled: Any) -> tuple[Any, Any]:
    """F with Q(a, x) = x^a e^-x / Gamma(a) * F (Legendre's continued fraction, convergents
    p_k / q_k with rescaling) and dF/da, up to 2000 steps."""
    eps = finfo_of(get_aval(a).dtype).eps
    big = 1 / eps

    def body(state):
        (active, ans, y, z, k, p1, q1, p2, q2, dp2, dq2, dp1, dq1, dans) = state
        k = k + 1
        y_new, z_new = y + 1, z + 2
        yk = y_new * k
        p = p1 * z_new - p2 * yk
        q = q1 * z_new - q2 * yk
        # d/da: dy/da = dz/da = -1
        dp = dp1 * z_new - p1 - dp2 * yk + p2 * k
        dq = dq1 * z_new - q1 - dq2 * yk + q2 * k
        nonzero = q != 0
        ans_new = jnp.where(nonzero, p / jnp.where(nonzero, q, 1), ans)
        dans_new = jnp.where(nonzero, (dp - ans_new * dq) / jnp.where(nonzero, q, 1), dans)
        moved = jnp.where(nonzero, jnp.abs(dans_new - dans), jnp.ones_like(dans))
        rescale = jnp.abs(p) > big
        scale = lambda v: jnp.where(rescale, v * eps, v)  # noqa: E731
        new = (ans_new, y_new, z_new, scale(p), scale(q), scale(p1), scale(q1),
               scale(dp1), scale(dq1), scale(dp), scale(dq), dans_new)
        old = (ans, y, z, p1, q1, p2, q2, dp2, dq2, dp1, dq1, dans)
        kept = tuple(jnp.where(active, n, o) for n, o in zip(new, old))
        (ans, y, z, p1, q1, p2, q2, dp2, dq2, dp1, dq1, dans) = kept
        return (active & (moved > eps), ans, y, z, k, p1, q1, p2, q2, dp2, dq2, dp1, dq1, dans)

    one = jnp.ones_like(x)
    y = 1 - a
    z = x + y + 1
    p2, q2, p1, q1 = one, x, x + 1, z * x
    ans = p1 / q1
    zeros = jnp.zeros_like(x)
    dq1 = -x
    dans = (zeros - ans * dq1) / q1
    init = (enabled, ans, y, z, np.array(0, get_aval(x).dtype), p1, q1, p2, q2,
            zeros, zeros, zeros, dq1, dans)
    state = loops.while_loop(lambda s: jnp.logical_and(s[4] < 2000, jnp.any(s[0])), body, init)
    return state[1], state[13]


def random_gamma_grad(a: Any, x: Any) -> Any:
    """dx/da of a Gamma(a, 1) draw x at a fixed quantile (JAX's lax.random_gamma_grad).

    nan where a <= 0, x < 0 or either is nan; 0 at x == 0.
    """
    with np.errstate(all="ignore"):  # both branches run everywhere, as in JAX
        return _random_gamma_grad(a, x)


def _random_gamma_grad(a: Any, x: Any) -> Any:
    a, x = jnp.broadcast_arrays(jnp.asarray(a), jnp.asarray(x))
    dtype = get_aval(a).dtype
    is_nan = jnp.isnan(a) | jnp.isnan(x)
    x_is_zero = x == 0
    domain_error = (x < 0) | (a <= 0)
    use_fraction = (x > 1) & (x > a)
    log_ax = a * ew.log(x) - x - ew.lgamma(a)
    underflow = log_ax < -np.log(finfo_of(dtype).max)
    enabled = ~(x_is_zero | domain_error | underflow | is_nan)
    s, ds = _series_terms(x, a, enabled & ~use_fraction)
    lower = -(ds + s * (ew.log(x) - ew.digamma(a + 1))) * x / a
    f, df = _fraction_terms(x, a, enabled & use_fraction)
    upper = (df + f * (ew.log(x) - ew.digamma(a))) * x
    out = jnp.where(use_fraction, upper, lower)
    out = jnp.where(x_is_zero, jnp.zeros_like(out), out)
    return jnp.where(domain_error | is_nan, jnp.full_like(out, np.nan), out)


def _gamma_grad(sample: Any, a: Any, log_space: bool) -> Any:
    """d sample / d a; for log-space draws d log(x) / d a = (dx/da) / x."""
    if not log_space:
        return random_gamma_grad(a, sample)
    x = ew.exp(sample)
    x = jnp.where(x == 0, jnp.full_like(x, finfo_of(get_aval(x).dtype).tiny), x)
    return random_gamma_grad(a, x) / x


def _make_gamma_cjvp(log_space: bool) -> custom_jvp:
    def draw(keys, a):
        return _gamma_sample(keys, a, log_space)

    fn = custom_jvp(draw)

    @fn.defjvp
    def _jvp(primals, tangents):
        keys, a = primals
        ans = fn(keys, a)
        return ans, tangents[1] * _gamma_grad(ans, a, log_space)

    return fn


_GAMMA = {False: _make_gamma_cjvp(False), True: _make_gamma_cjvp(True)}


# ----------------------------------------------------------------------------- random_gamma_p


random_gamma_p = Primitive("random_gamma")


def _random_gamma_abstract_eval(key: ShapedArray, a: ShapedArray, *,
                                log_space: bool) -> list[ShapedArray]:
    k = key.ndim - 1
    if key.dtype != np.uint32 or key.ndim < 1 or key.shape[-1] != 2 or kind_of(a.dtype) != "f" or \
            tuple(a.shape[:k]) != tuple(key.shape[:-1]):
        raise NumbaxTypeError(
            f"random_gamma: key has shape {key.shape} and dtype {key.dtype}, a has shape "
            f"{a.shape} and dtype {a.dtype}; expected uint32 key data of shape "
            "a.shape[:k] + (2,) and a floating a."
        )
    return [ShapedArray(a.shape, a.dtype)]


def _random_gamma_impl(key: Any, a: Any, *, log_space: bool) -> list[Any]:
    return [_gamma_sample(jnp.asarray(key), jnp.asarray(a), log_space)]


def _random_gamma_batch(axis_size: int, vals: Sequence[Any], dims: Sequence[int | None], *,
                        log_space: bool) -> tuple[list[Any], list[int]]:
    key, a = (batching.bdim_at_front(v, d, axis_size) for v, d in zip(vals, dims))
    return [random_gamma_p.bind(key, a, log_space=log_space)], [0]


core.abstract_eval_rules[random_gamma_p] = _random_gamma_abstract_eval
core.impl_rules[random_gamma_p] = _random_gamma_impl
ad.defjvp(random_gamma_p, None,
          lambda t, ans, key, a, *, log_space: t * _gamma_grad(ans, a, log_space))
batching.batch_rules[random_gamma_p] = _random_gamma_batch


# ----------------------------------------------------------------------------- public


def _gamma(api: str, key: Any, a: Any, shape: Any, dtype: Any, log_space: bool) -> Any:
    data, _ = check_key(api, key)
    dtype = _float_dtype(api, dtype)
    a = jnp.asarray(a)
    shape = _param_shapes(api, shape, a=a)
    return _GAMMA[log_space](data, jnp.broadcast_to(a.astype(dtype), shape))


@compiled_when_eager
def gamma(key: Any, a: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Gamma(a, 1) draws by Marsaglia-Tsang rejection (JAX's algorithm and key schedule).

    Differentiable in `a` through the implicit reparameterisation gradient, as in JAX.

    Args:
      key: a single PRNG key.
      a: the shape parameter (> 0), broadcastable to `shape`.
      shape: the result shape (default: a's shape).
      dtype: a float dtype (default: numbax's default float).

    Returns:
      Draws of shape `shape`.
    """
    return _gamma("random.gamma", key, a, shape, dtype, log_space=False)


@compiled_when_eager
def loggamma(key: Any, a: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """log of Gamma(a, 1) draws, computed in log space (accurate for small a).

    Args:
      key: a single PRNG key.
      a: the shape parameter (> 0), broadcastable to `shape`.
      shape: the result shape (default: a's shape).
      dtype: a float dtype (default: numbax's default float).

    Returns:
      log-draws of shape `shape`, differentiable in `a`.
    """
    return _gamma("random.loggamma", key, a, shape, dtype, log_space=True)


@compiled_when_eager
def beta(key: Any, a: Any, b: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Beta(a, b) draws as Ga / (Ga + Gb), from log-space gamma draws.

    Args:
      key: a single PRNG key.
      a, b: the shape parameters (> 0), broadcastable to `shape`.
      shape: the result shape (default: the broadcast shape of a and b).
      dtype: a float dtype (default: numbax's default float).

    Returns:
      Draws in [0, 1] of shape `shape`, differentiable in a and b.
    """
    data, _ = check_key("random.beta", key)
    dtype = _float_dtype("random.beta", dtype)
    _check_safe_cast("random.beta", dtype, a=a, b=b)
    a, b = jnp.asarray(a), jnp.asarray(b)
    shape = _param_shapes("random.beta", shape, a=a, b=b)
    key_a, key_b = _split_raw(data)
    log_ga = _GAMMA[True](key_a, jnp.broadcast_to(a.astype(dtype), shape))
    log_gb = _GAMMA[True](key_b, jnp.broadcast_to(b.astype(dtype), shape))
    log_max = jnp.maximum(log_ga, log_gb)
    ga = jnp.exp(log_ga - log_max)
    gb = jnp.exp(log_gb - log_max)
    return ga / (ga + gb)


@compiled_when_eager
def dirichlet(key: Any, alpha: Any, shape: Sequence[int] | None = None,
              dtype: Any = None) -> Any:
    """Dirichlet(alpha) draws over the last axis: the softmax of log-gamma draws.

    Args:
      key: a single PRNG key.
      alpha: concentrations (> 0) along the last axis; its leading axes broadcast to `shape`.
      shape: the batch shape (default: alpha.shape[:-1]).
      dtype: a float dtype (default: numbax's default float).

    Returns:
      Draws of shape shape + alpha.shape[-1:], summing to 1 along the last axis.
    """
    data, _ = check_key("random.dirichlet", key)
    dtype = _float_dtype("random.dirichlet", dtype)
    alpha = jnp.asarray(alpha)
    a_shape = tuple(get_aval(alpha).shape)
    if not a_shape:
        raise NumbaxValueError(
            "random.dirichlet: alpha has shape (), expected rank >= 1 (the concentrations "
            "along the last axis)."
        )
    shape = _param_shapes("random.dirichlet", shape, alpha=_shape_only(a_shape[:-1]))
    full = shape + a_shape[-1:]
    log_g = _GAMMA[True](data, jnp.broadcast_to(alpha.astype(dtype), full))
    e = jnp.exp(log_g - jnp.max(log_g, axis=-1, keepdims=True))
    return e / jnp.sum(e, axis=-1, keepdims=True)


@compiled_when_eager
def chisquare(key: Any, df: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Chi-square(df) draws: 2 * exp(loggamma(df / 2)).

    Args:
      key: a single PRNG key.
      df: degrees of freedom (> 0), broadcastable to `shape`.
      shape: the result shape (default: df's shape).
      dtype: a float dtype (default: numbax's default float).

    Returns:
      Draws of shape `shape`.
    """
    data, _ = check_key("random.chisquare", key)
    dtype = _float_dtype("random.chisquare", dtype)
    _check_safe_cast("random.chisquare", dtype, df=df)
    df = jnp.asarray(df)
    shape = _param_shapes("random.chisquare", shape, df=df)
    return _chisquare(data, df, shape, dtype)


def _chisquare(data: Any, df: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    half_df = df.astype(dtype) / np.array(2, dtype)
    log_g = _GAMMA[True](data, jnp.broadcast_to(half_df, shape))
    return jnp.exp(log_g) * np.array(2, dtype)


@compiled_when_eager
def f(key: Any, dfnum: Any, dfden: Any, shape: Sequence[int] | None = None,
      dtype: Any = None) -> Any:
    """F(dfnum, dfden) draws: (chi2(dfnum) / dfnum) / (chi2(dfden) / dfden).

    Args:
      key: a single PRNG key.
      dfnum, dfden: numerator and denominator degrees of freedom, broadcastable to `shape`.
      shape: the result shape (default: the broadcast shape of dfnum and dfden).
      dtype: a float dtype (default: numbax's default float).

    Returns:
      Draws of shape `shape`.
    """
    data, _ = check_key("random.f", key)
    dtype = _float_dtype("random.f", dtype)
    _check_safe_cast("random.f", dtype, dfnum=dfnum, dfden=dfden)
    dfnum, dfden = jnp.asarray(dfnum), jnp.asarray(dfden)
    shape = _param_shapes("random.f", shape, dfnum=dfnum, dfden=dfden)
    dfnum, dfden = dfnum.astype(dtype), dfden.astype(dtype)
    key_dfd, key_dfn = _split_raw(data)
    num = _chisquare(key_dfn, dfnum, shape, dtype) / dfnum
    den = _chisquare(key_dfd, dfden, shape, dtype) / dfden
    return num / den


@compiled_when_eager
def t(key: Any, df: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Student's t(df) draws: n * sqrt((df / 2) / g), n normal, g ~ Gamma(df / 2).

    Args:
      key: a single PRNG key.
      df: degrees of freedom (> 0), broadcastable to `shape`.
      shape: the result shape (default: df's shape).
      dtype: a float dtype (default: numbax's default float).

    Returns:
      Draws of shape `shape`.
    """
    data, _ = check_key("random.t", key)
    dtype = _float_dtype("random.t", dtype)
    _check_safe_cast("random.t", dtype, df=df)
    df = jnp.asarray(df)
    shape = _param_shapes("random.t", shape, df=df)
    key_n, key_g = _split_raw(data)
    n = _normal_real(key_n, shape, dtype)
    half_df = df.astype(dtype) / np.array(2, dtype)
    g = _GAMMA[False](key_g, jnp.broadcast_to(half_df, shape))
    return n * jnp.sqrt(half_df / g)


@compiled_when_eager
def generalized_normal(key: Any, p: float, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Generalized normal draws with density proportional to exp(-|x|^p): r * g^(1/p).

    Args:
      key: a single PRNG key.
      p: the exponent (> 0); 2 gives N(0, 1/2), 1 the Laplace distribution.
      shape: the result shape.
      dtype: a float dtype (default: numbax's default float).

    Returns:
      Draws of shape `shape`.
    """
    data, _ = check_key("random.generalized_normal", key)
    dtype = _float_dtype("random.generalized_normal", dtype)
    shape = canonicalize_shape("random.generalized_normal", shape)
    return _generalized_normal(data, p, shape, dtype)


def _generalized_normal(data: Any, p: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    k_g, k_r = _split_raw(data)
    inv_p = 1 / p  # a Python scalar stays weakly typed, as in JAX
    g = _GAMMA[False](k_g, jnp.broadcast_to(jnp.asarray(inv_p).astype(dtype), shape))
    r = _rademacher(k_r, shape, dtype)
    return r * g ** inv_p


@compiled_when_eager
def ball(key: Any, d: int, p: float = 2, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Uniform draws from the unit Lp ball in d dimensions (generalized normal / radius).

    Args:
      key: a single PRNG key.
      d: the dimension (a concrete int).
      p: the norm's exponent (default 2, the Euclidean ball).
      shape: the batch shape.
      dtype: a float dtype (default: numbax's default float).

    Returns:
      Points of shape (*shape, d) with Lp norm < 1.
    """
    data, _ = check_key("random.ball", key)
    dtype = _float_dtype("random.ball", dtype)
    shape = canonicalize_shape("random.ball", shape)
    d = _concrete_size("random.ball", "d", d)
    k1, k2 = _split_raw(data)
    g = _generalized_normal(k1, p, (*shape, d), dtype)
    e = _exponential(k2, shape, dtype)
    radius = (jnp.sum(jnp.abs(g) ** p, axis=-1) + e) ** (1 / p)
    return g / radius[..., None]
