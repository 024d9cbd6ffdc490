"""numbax.random: JAX's samplers on the threefry keys of prng.py, with JAX's exact transforms.

Every sampler follows jax/_src/random/core.py (JAX 0.10) step for step, so the same key gives
the same bits. Values built only from bit operations (bits, split, fold_in, uniform, randint,
bernoulli, permutation) are bit-identical to JAX, and so is `normal` in float32/float16 run
eagerly (erf_inv's eager impl is XLA:CPU's float32 algorithm, see lax/erf_inv_xla.py); those
that go through other transcendental functions (log, log1p, exp, erf, tan, ...: numpy's libm and
scipy here, XLA's own approximations in JAX) agree to a few ulp.
"""
from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax._src import dtypes, jnp, prng
from numbax._src.core import Tracer, get_aval
from numbax._src.dtypes import finfo_of, kind_of
from numbax._src.eager_compile import compiled_when_eager
from numbax._src.errors import NumbaxDTypeError, NumbaxTypeError, NumbaxValueError
from numbax._src.lax import elementwise as ew
from numbax._src.prng import canonicalize_shape, check_key
from numbax._src.random_keys import _split_raw

# ----------------------------------------------------------------------------- checks


def _float_dtype(api: str, dtype: Any, kinds: str = "f") -> np.dtype:
    """The canonical sampler dtype; JAX raises ValueError for a non-float one (TypeError too)."""
    dt = dtypes.default_float_dtype() if dtype is None else dtypes.canonicalize_dtype(
        dtype, context=api)
    if kind_of(dt) not in kinds:
        what = "floating" if kinds == "f" else "floating or complex"
        raise NumbaxDTypeError(
            f"{api}: dtype is {dt}, expected a {what} dtype. Pass e.g. "
            "dtype=numbax.numpy.float32."
        )
    return dt


def _int_dtype(api: str, dtype: Any) -> np.dtype:
    dt = dtypes.default_int_dtype() if dtype is None else dtypes.canonicalize_dtype(
        dtype, context=api)
    if kind_of(dt) not in "iu":
        raise NumbaxDTypeError(
            f"{api}: dtype is {dt}, expected an integer dtype. Pass e.g. "
            "dtype=numbax.numpy.int32."
        )
    return dt


def _check_safe_cast(api: str, dtype: np.dtype, **params: Any) -> None:
    """JAX refuses parameters that would lose precision when cast to the sampler's dtype."""
    for name, value in params.items():
        if type(value) in (bool, int, float):
            continue  # Python scalars are weakly typed
        aval = get_aval(value)
        src = aval.dtype
        unsafe = (kind_of(src) == "c" and kind_of(dtype) != "c") or (
            kind_of(src) == kind_of(dtype) and src.itemsize > dtype.itemsize and not aval.weak_type)
        if unsafe:
            raise NumbaxValueError(
                f"{api}: {name} has dtype {src}, expected a dtype that casts safely to "
                f"dtype={dtype}. Convert {name} first or pass dtype={src}."
            )


def _param_shapes(api: str, shape: Any, **params: Any) -> tuple[int, ...]:
    """The draw shape: `shape` checked against the parameters, or their broadcast shape."""
    shape = _opt_shape(api, shape)
    if shape is None:
        return _broadcast_param_shapes(api, **params)
    _check_shape(api, shape, **params)
    return shape


def _check_shape(api: str, shape: tuple[int, ...], **params: Any) -> None:
    """Each parameter's shape must broadcast to exactly `shape`."""
    for name, value in params.items():
        pshape = tuple(np.shape(value)) if not isinstance(value, Tracer) else get_aval(
            value).shape
        try:
            out = np.broadcast_shapes(shape, pshape)
        except ValueError:
            out = None
        if out != shape:
            raise NumbaxValueError(
                f"{api}: {name} has shape {pshape}, expected a shape that broadcasts to "
                f"shape={shape}. Pass a shape that {name} broadcasts to, or leave shape=None."
            )


def _broadcast_param_shapes(api: str, **params: Any) -> tuple[int, ...]:
    shapes = {name: tuple(get_aval(v).shape) for name, v in params.items()}
    try:
        return tuple(np.broadcast_shapes(*shapes.values()))
    except ValueError as err:
        listed = ", ".join(f"{n} has shape {s}" for n, s in shapes.items())
        raise NumbaxValueError(
            f"{api}: {listed}; expected shapes that broadcast together."
        ) from err


def _shape_only(shape: tuple[int, ...]) -> np.ndarray:
    """A zero-cost numpy stand-in of the given shape, for shape checks."""
    return np.broadcast_to(np.empty((), np.float32), shape)


def _opt_shape(api: str, shape: Any) -> tuple[int, ...] | None:
    return None if shape is None else canonicalize_shape(api, shape)


# ----------------------------------------------------------------------------- bits & uniform


@compiled_when_eager
def bits(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Uniform random unsigned integers (default uint64 with x64 on, else uint32)."""
    data, _ = check_key("random.bits", key)
    dt = prng.default_uint_dtype() if dtype is None else dtypes.canonicalize_dtype(
        dtype, context="random.bits")
    if kind_of(dt) != "u":
        raise NumbaxDTypeError(
            f"random.bits: dtype is {dt}, expected an unsigned integer dtype such as uint32."
        )
    shape = canonicalize_shape("random.bits", shape)
    return prng.random_bits(data, dt.itemsize * 8, shape)


def uniform_bits(dtype: np.dtype) -> int:
    """How many random bits JAX draws per float of `dtype` in its uniform transform: the
    float's width, but 8 for bfloat16 (whose 7 mantissa bits are taken from an 8-bit draw)."""
    finfo = finfo_of(dtype)
    return 8 if finfo.nmant < 8 else finfo.bits


def _uniform(data: Any, shape: tuple[int, ...], dtype: np.dtype, minval: Any, maxval: Any):
    raw = prng.random_bits(data, uniform_bits(dtype), shape)
    return _uniform_from_bits(raw, shape, dtype, minval, maxval)


def _uniform_from_bits(raw: Any, shape: tuple[int, ...], dtype: np.dtype, minval: Any,
                       maxval: Any) -> Any:
    """JAX's uniform transform: the top bits of `raw` (uniform_bits(dtype) of them) as the
    mantissa of a float in [1, 2), minus 1, scaled."""
    minval = ew.convert_element_type(jnp.asarray(minval), dtype)
    maxval = ew.convert_element_type(jnp.asarray(maxval), dtype)
    finfo = finfo_of(dtype)
    nbits, nmant = finfo.bits, finfo.nmant
    uint = prng.UINT_DTYPES[nbits]
    shift = get_aval(raw).dtype.itemsize * 8 - nmant
    if get_aval(raw).dtype != uint:  # bfloat16's 8-bit draw
        raw = ew.convert_element_type(raw, uint)
    float_bits = ew.bitwise_or(ew.shift_right_logical(raw, np.array(shift, uint)),
                               np.array(1.0, dtype).view(uint))
    floats = ew.sub(ew.bitcast_convert_type(float_bits, dtype), np.array(1.0, dtype))
    scaled = jnp.add(jnp.multiply(floats, jnp.subtract(maxval, minval)), minval)
    return jnp.broadcast_to(jnp.maximum(minval, scaled), shape)


@compiled_when_eager
def uniform(key: Any, shape: Sequence[int] = (), dtype: Any = None, minval: Any = 0.0,
            maxval: Any = 1.0) -> Any:
    """Uniform floats in [minval, maxval), from the top mantissa bits (JAX's transform).

    >>> import numbax
    >>> numbax.random.uniform(numbax.random.PRNGKey(0), (2,), "float32")
    Array([0.947667 , 0.9785799], dtype=float32)
    """
    data, _ = check_key("random.uniform", key)
    dtype = _float_dtype("random.uniform", dtype)
    shape = canonicalize_shape("random.uniform", shape)
    _check_shape("random.uniform", shape, minval=minval, maxval=maxval)
    return _uniform(data, shape, dtype, minval, maxval)


# ----------------------------------------------------------------------------- normal family


def _normal_real(data: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    raw = prng.random_bits(data, uniform_bits(dtype), shape)
    return _normal_from_bits(raw, shape, dtype)


def _normal_from_bits(raw: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    lo = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype))
    u = _uniform_from_bits(raw, shape, dtype, lo, np.array(1.0, dtype))
    return ew.mul(np.array(np.sqrt(2), dtype), ew.erf_inv(u))


@compiled_when_eager
def normal(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Standard normal draws: sqrt(2) * erf_inv(u), u uniform in (-1, 1).

    Run eagerly, float32 and float16 draws are JAX's bits (erf_inv's eager impl is XLA's float32
    algorithm). Unlike JAX: under jit on the CPU, erf_inv is Giles' float64 approximation
    rounded once, so compiled float32 draws can differ from JAX's in the last bit or two; float64
    draws use scipy's erfinv (a few ulp from XLA's float64 polynomial).

    >>> import numbax
    >>> with numbax.config.override("jax_enable_x64", False):
    ...     numbax.random.normal(numbax.random.PRNGKey(0), (2,))
    Array([1.6226422, 2.0252647], dtype=float32)
    """
    data, _ = check_key("random.normal", key)
    dtype = _float_dtype("random.normal", dtype, "fc")
    shape = canonicalize_shape("random.normal", shape)
    return _normal(data, shape, dtype)


def _normal(data: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    if kind_of(dtype) == "c":
        real = np.dtype(f"f{dtype.itemsize // 2}")
        k_re, k_im = _split_raw(data)
        re = _normal_real(k_re, shape, real)
        im = _normal_real(k_im, shape, real)
        z = ew.complex_(re, im)
        return ew.div(z, np.array(np.sqrt(2), dtype))
    return _normal_real(data, shape, dtype)


@compiled_when_eager
def truncated_normal(key: Any, lower: Any, upper: Any, shape: Sequence[int] | None = None,
                     dtype: Any = None) -> Any:
    """Standard normal draws restricted to the open interval (lower, upper)."""
    data, _ = check_key("random.truncated_normal", key)
    dtype = _float_dtype("random.truncated_normal", dtype)
    lower, upper = jnp.asarray(lower), jnp.asarray(upper)
    shape = _opt_shape("random.truncated_normal", shape)
    if shape is None:
        shape = _broadcast_param_shapes("random.truncated_normal", lower=lower, upper=upper)
    else:
        _check_shape("random.truncated_normal", shape, lower=lower, upper=upper)
    sqrt2 = np.array(np.sqrt(2), dtype)
    lower = ew.convert_element_type(lower, dtype)
    upper = ew.convert_element_type(upper, dtype)
    a = ew.erf(ew.div(lower, sqrt2))
    b = ew.erf(ew.div(upper, sqrt2))
    u = _uniform(data, shape, dtype, a, b)
    out = ew.mul(sqrt2, ew.erf_inv(u))
    lo = ew.nextafter(lower, np.array(np.inf, dtype))
    hi = ew.nextafter(upper, np.array(-np.inf, dtype))
    return jnp.clip(out, lo, hi)


@compiled_when_eager
def multivariate_normal(key: Any, mean: Any, cov: Any, shape: Sequence[int] | None = None,
                        dtype: Any = None, method: str = "cholesky") -> Any:
    """mean + factor @ z with z standard normal and factor @ factor.T == cov.

    The factor comes from numbax.numpy.linalg (cholesky, eigh or svd), so cov may be traced.
    """
    data, _ = check_key("random.multivariate_normal", key)
    if method not in ("svd", "eigh", "cholesky"):
        raise NumbaxValueError(
            f"random.multivariate_normal: method is {method!r}, expected 'svd', 'eigh' or "
            "'cholesky'."
        )
    mean, cov = jnp.asarray(mean), jnp.asarray(cov)
    dt = dtypes.to_inexact(jnp.result_type(mean, cov))
    dtype = dt if dtype is None else _float_dtype("random.multivariate_normal", dtype)
    m_aval, c_aval = get_aval(mean), get_aval(cov)
    if m_aval.ndim < 1 or c_aval.ndim < 2 or c_aval.shape[-2:] != (m_aval.shape[-1],) * 2:
        raise NumbaxValueError(
            f"random.multivariate_normal: mean has shape {m_aval.shape} and cov has shape "
            f"{c_aval.shape}, expected mean (..., n) and cov (..., n, n)."
        )
    m_batch = _shape_only(m_aval.shape[:-1])
    c_batch = _shape_only(c_aval.shape[:-2])
    batch = _broadcast_param_shapes("random.multivariate_normal", mean=m_batch, cov=c_batch)
    shape = batch if shape is None else canonicalize_shape("random.multivariate_normal", shape)
    _check_shape("random.multivariate_normal", shape, mean=m_batch, cov=c_batch)
    c = cov.astype(dtype)
    if method == "cholesky":
        factor = jnp.linalg.cholesky(c)
    elif method == "eigh":
        w, v = jnp.linalg.eigh(c)
        factor = v * jnp.sqrt(w[..., None, :])
    else:
        u, s, _ = jnp.linalg.svd(c)
        factor = u * jnp.sqrt(s[..., None, :])
    z = _normal_real(data, shape + m_aval.shape[-1:], dtype)
    return jnp.add(mean.astype(dtype), jnp.einsum("...ij,...j->...i", factor, z))


@compiled_when_eager
def orthogonal(key: Any, n: int, shape: Sequence[int] = (), dtype: Any = None,
               m: int | None = None) -> Any:
    """Haar-random matrices with orthonormal columns (or rows): Q of QR(normal), sign-fixed.

    Args:
      key: a single PRNG key.
      n: the number of rows (a concrete int).
      shape: the batch shape.
      dtype: a float dtype (default: numbax's default float).
      m: the number of columns (default n). For n < m the rows are orthonormal.

    Returns:
      An array of shape (*shape, n, m).
    """
    data, _ = check_key("random.orthogonal", key)
    dtype = _float_dtype("random.orthogonal", dtype, "fc")
    shape = canonicalize_shape("random.orthogonal", shape)
    n = _concrete_size("random.orthogonal", "n", n)
    m = n if m is None else _concrete_size("random.orthogonal", "m", m)
    z = _normal(data, (*shape, max(n, m), min(n, m)), dtype)
    q, r = jnp.linalg.qr(z)
    d = jnp.diagonal(r, axis1=-2, axis2=-1)
    x = q * jnp.expand_dims(jnp.sign(d), -2)
    return jnp.swapaxes(x, -1, -2) if n < m else x


def _concrete_size(api: str, name: str, value: Any) -> int:
    try:
        size = operator.index(value)
    except TypeError as err:
        raise NumbaxTypeError(
            f"{api}: {name} has type {type(value).__name__}, expected a concrete int. Mark it "
            "static under jit."
        ) from err
    if size < 0:
        raise NumbaxValueError(f"{api}: {name} is {size}, expected a non-negative size.")
    return size


# ----------------------------------------------------------------------------- log transforms


@compiled_when_eager
def exponential(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Exponential(1) draws: -log1p(-u), u uniform in [0, 1).

    Args:
      key: a single PRNG key.
      shape: the result shape.
      dtype: a float dtype (default: numbax's default float).

    Returns:
      An array of `shape` and `dtype`.
    """
    data, _ = check_key("random.exponential", key)
    dtype = _float_dtype("random.exponential", dtype)
    shape = canonicalize_shape("random.exponential", shape)
    return _exponential(data, shape, dtype)


def _exponential(data: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    u = _uniform(data, shape, dtype, 0.0, 1.0)
    return ew.neg(ew.log1p(ew.neg(u)))


def _clz32(x: Any) -> Any:
    """lax.clz of uint32 values (leading zero bits, 32 for 0) by five halving steps."""
    u32 = np.dtype(np.uint32)
    n = jnp.zeros_like(x)
    for s in (16, 8, 4, 2, 1):
        top_zero = ew.eq(ew.shift_right_logical(x, np.array(32 - s, u32)), np.array(0, u32))
        n = ew.select(top_zero, ew.add(n, np.array(s, u32)), n)
        x = ew.select(top_zero, ew.shift_left(x, np.array(s, u32)), x)
    return ew.add(n, ew.convert_element_type(ew.eq(x, np.array(0, u32)), u32))


def _safe_int_to_float(bits: Any) -> Any:
    """float32 in (0, 1) from 64-bit fixed-point fractions uint32[2, ...] (JAX's helper).

    Shifts by 32 are avoided with selects (XLA defines them as 0; compiled code need not).
    """
    u32 = np.dtype(np.uint32)
    hi, lo = bits[0], bits[1]
    hiclz, loclz = _clz32(hi), _clz32(lo)
    hi_all_zero = ew.eq(hiclz, np.array(32, u32))
    safe_hiclz = ew.select(hi_all_zero, jnp.zeros_like(hiclz), hiclz)
    safe_loclz = ew.select(ew.eq(loclz, np.array(32, u32)), jnp.zeros_like(loclz), loclz)
    from_lo = ew.select(ew.eq(hiclz, np.array(0, u32)), jnp.zeros_like(lo),
                        ew.shift_right_logical(lo, ew.sub(np.array(32, u32), safe_hiclz)))
    mantissa = ew.bitwise_or(
        ew.select(hi_all_zero, jnp.zeros_like(hi), ew.shift_left(hi, safe_hiclz)),
        ew.select(hi_all_zero, ew.shift_left(lo, safe_loclz), from_lo))
    mantissa = ew.shift_right_logical(mantissa, np.array(32 - 23 - 1, u32))
    mantissa = ew.bitwise_and(mantissa, np.array((1 << 23) - 1, u32))
    count = ew.select(hi_all_zero, ew.add(np.array(32, u32), loclz), hiclz)
    exp = ew.shift_left(ew.sub(np.array(126, u32), count), np.array(23, u32))
    exp = ew.bitwise_and(exp, np.array((1 << 30) - (1 << 22), u32))
    return ew.bitcast_convert_type(ew.bitwise_or(exp, mantissa), np.dtype(np.float32))


def _gumbel(data: Any, shape: tuple[int, ...], dtype: np.dtype, mode: str) -> Any:
    info = finfo_of(dtype)
    if mode == "highest" and dtype == np.float32:
        u32 = np.dtype(np.uint32)
        bits = prng.random_bits(data, 32, (2,) + shape)
        neg = ew.bitwise_not(bits)
        carry = ew.convert_element_type(ew.eq(neg[1], np.array(0xFFFFFFFF, u32)), u32)
        neg = ew.add(neg, jnp.stack([carry, jnp.ones_like(carry)]))
        flip = ew.lt(bits[0], np.array(1 << 31, u32))
        x = _safe_int_to_float(jnp.where(flip, bits, neg))
        return jnp.where(flip, ew.neg(ew.log(ew.neg(ew.log1p(ew.neg(x))))),
                         ew.neg(ew.log(ew.neg(ew.log(x)))))
    if mode in ("high", "highest"):
        u = _uniform(data, (2,) + shape, dtype, 0.0, 1.0)
        high, low = u[0], u[1]
        x = jnp.where(high >= 0.5, high,
                      high + np.array(2.0 ** -info.nmant, dtype) * low + info.tiny)
        return ew.neg(ew.log(ew.neg(ew.log1p(ew.neg(x)))))
    u = _uniform(data, shape, dtype, np.array(info.tiny, dtype), 1.0)
    return ew.neg(ew.log(ew.neg(ew.log(u))))


def _gumbel_mode(api: str, mode: str | None) -> str:
    mode = "low" if mode is None else mode
    if mode not in ("low", "high", "highest"):
        raise NumbaxValueError(
            f"{api}: mode is {mode!r}, expected 'low', 'high' or 'highest' (or None)."
        )
    return mode


@compiled_when_eager
def gumbel(key: Any, shape: Sequence[int] = (), dtype: Any = None,
           mode: str | None = None) -> Any:
    """Standard Gumbel draws: -log(-log(u)).

    Args:
      key: a single PRNG key.
      shape: the result shape.
      dtype: a float dtype (default: numbax's default float).
      mode: 'low' (default; u uniform in [tiny, 1)), 'high' (two draws per value for the
        left tail) or 'highest' (64 random bits per float32 value), as in JAX.

    Returns:
      An array of `shape` and `dtype`.
    """
    data, _ = check_key("random.gumbel", key)
    dtype = _float_dtype("random.gumbel", dtype)
    shape = canonicalize_shape("random.gumbel", shape)
    return _gumbel(data, shape, dtype, _gumbel_mode("random.gumbel", mode))
