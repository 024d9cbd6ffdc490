"""numbax.random: JAX's samplers on the threefry keys of prng.py, with JAX's exact transforms.

Every sampler follows jax/_src/random/core.py (JAX 0.10) step for step, so the same key gives
the same bits. Values built only from bit operations (bits, split, fold_in, uniform, randint,
bernoulli, permutation) are bit-identical to JAX, and so is `normal` in float32/float16 run
eagerly (erf_inv's eager impl is XLA:CPU's float32 algorithm, see lax/erf_inv_xla.py); those
that go through other transcendental functions (log, log1p, exp, erf, tan, ...: numpy's libm and
scipy here, XLA's own approximations in JAX) agree to a few ulp.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax import numpy as jnp
from numbax._src import dtypes, prng
from numbax._src.core import Tracer, get_aval
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.lax import elementwise as ew
from numbax._src.lax import shape_ops
from numbax._src.lax import sort as lax_sort
from numbax._src.lax.control_flow import loops
from numbax._src.prng import PRNGKeyArray, canonicalize_shape, check_key

# ----------------------------------------------------------------------------- keys


def _return_key(data: Any, typed: bool) -> Any:
    return PRNGKeyArray(data) if typed else data


def _seed_data(api: str, seed: Any) -> Any:
    if isinstance(seed, PRNGKeyArray):
        raise NumbaxTypeError(f"{api}: seed is a PRNG key, expected an integer scalar seed.")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        aval = get_aval(seed)
        if aval.ndim or aval.dtype.kind not in "iu":
            raise NumbaxTypeError(
                f"{api}: seed has shape {aval.shape} and dtype {aval.dtype}, expected an "
                "integer scalar. Use numbax.vmap to make a batch of keys from seeds."
            )
    return jnp.asarray(prng.seed_to_key_data(seed))


def PRNGKey(seed: Any) -> Any:
    """A raw (legacy) threefry key: uint32[2] holding the 64-bit seed as [hi, lo].

    >>> import numbax
    >>> numbax.random.PRNGKey(42)
    Array([ 0, 42], dtype=uint32)
    """
    return _seed_data("random.PRNGKey", seed)


def key(seed: Any, *, impl: Any = None) -> PRNGKeyArray:
    """A typed threefry key (a `PRNGKeyArray` of shape ()) made from an integer seed."""
    if impl not in (None, "threefry2x32"):
        raise NumbaxValueError(
            f"random.key: impl is {impl!r}, expected 'threefry2x32' (the only PRNG numbax has)."
        )
    return PRNGKeyArray(_seed_data("random.key", seed))


def key_data(keys: Any) -> Any:
    """The uint32[..., 2] data under a typed key array (a raw key is returned as is)."""
    data, _ = check_key("random.key_data", keys, allow_batched=True)
    return data


def wrap_key_data(key_bits_array: Any, *, impl: Any = None) -> PRNGKeyArray:
    """A typed key array over uint32[..., 2] data."""
    data, _ = check_key("random.wrap_key_data", jnp.asarray(key_bits_array), allow_batched=True)
    return PRNGKeyArray(data)


def split(key: Any, num: int | tuple[int, ...] = 2) -> Any:
    """`num` new keys (a leading axis, or the shape `num`) derived from one key."""
    data, typed = check_key("random.split", key)
    shape = canonicalize_shape("random.split", num if isinstance(num, Sequence) else (num,),
                               "num")
    return _return_key(prng.split_data(data, shape), typed)


def fold_in(key: Any, data: Any) -> Any:
    """A new key that is a deterministic function of `key` and the 32-bit integer `data`."""
    kdata, typed = check_key("random.fold_in", key)
    if isinstance(data, (int, np.integer)) and not isinstance(data, bool):
        word = np.uint32(int(data) & 0xFFFFFFFF)
    else:
        aval = get_aval(data)
        if aval.ndim or aval.dtype.kind not in "iub":
            raise NumbaxTypeError(
                f"random.fold_in: data has shape {aval.shape} and dtype {aval.dtype}, expected "
                "an integer scalar. Use numbax.vmap for a batch."
            )
        word = ew.convert_element_type(data, np.uint32)
    return _return_key(prng.fold_in_data(kdata, word), typed)


def _split_raw(data: Any, num: int = 2) -> list[Any]:
    keys = prng.split_data(data, (num,))
    return [shape_ops.reshape(shape_ops.slice(keys, (i, 0), (i + 1, 2)), (2,))
            for i in range(num)]


# ----------------------------------------------------------------------------- checks


def _float_dtype(api: str, dtype: Any, kinds: str = "f") -> np.dtype:
    dt = dtypes.default_float_dtype() if dtype is None else dtypes.canonicalize_dtype(
        dtype, context=api)
    if dt.kind not in kinds:
        raise NumbaxTypeError(
            f"{api}: dtype is {dt}, expected a floating dtype. Pass e.g. "
            "dtype=numbax.numpy.float32."
        )
    return dt


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


def bits(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Uniform random unsigned integers (default uint64 with x64 on, else uint32)."""
    data, _ = check_key("random.bits", key)
    dt = prng.default_uint_dtype() if dtype is None else dtypes.canonicalize_dtype(
        dtype, context="random.bits")
    if dt.kind != "u":
        raise NumbaxTypeError(
            f"random.bits: dtype is {dt}, expected an unsigned integer dtype such as uint32."
        )
    shape = canonicalize_shape("random.bits", shape)
    return prng.random_bits(data, dt.itemsize * 8, shape)


def _uniform(data: Any, shape: tuple[int, ...], dtype: np.dtype, minval: Any, maxval: Any):
    minval = ew.convert_element_type(jnp.asarray(minval), dtype)
    maxval = ew.convert_element_type(jnp.asarray(maxval), dtype)
    finfo = np.finfo(dtype)
    nbits, nmant = finfo.bits, finfo.nmant
    uint = prng.UINT_DTYPES[nbits]
    raw = prng.random_bits(data, nbits, shape)
    float_bits = ew.bitwise_or(ew.shift_right_logical(raw, np.array(nbits - nmant, uint)),
                               np.array(1.0, dtype).view(uint))
    floats = ew.sub(ew.bitcast_convert_type(float_bits, dtype), np.array(1.0, dtype))
    scaled = jnp.add(jnp.multiply(floats, jnp.subtract(maxval, minval)), minval)
    return jnp.broadcast_to(jnp.maximum(minval, scaled), shape)


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
    lo = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype))
    u = _uniform(data, shape, dtype, lo, np.array(1.0, dtype))
    return ew.mul(np.array(np.sqrt(2), dtype), ew.erf_inv(u))


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
    if dtype.kind == "c":
        real = np.dtype(f"f{dtype.itemsize // 2}")
        k_re, k_im = _split_raw(data)
        re = _normal_real(k_re, shape, real)
        im = _normal_real(k_im, shape, real)
        z = ew.complex(re, im)
        return ew.div(z, np.array(np.sqrt(2), dtype))
    return _normal_real(data, shape, dtype)


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


# ----------------------------------------------------------------------------- simple transforms


def exponential(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Exponential(1) draws: -log1p(-u)."""
    data, _ = check_key("random.exponential", key)
    dtype = _float_dtype("random.exponential", dtype)
    shape = canonicalize_shape("random.exponential", shape)
    u = _uniform(data, shape, dtype, 0.0, 1.0)
    return ew.neg(ew.log1p(ew.neg(u)))


def _gumbel(data: Any, shape: tuple[int, ...], dtype: np.dtype, mode: str) -> Any:
    info = np.finfo(dtype)
    if mode == "high":
        u = _uniform(data, (2,) + shape, dtype, 0.0, 1.0)
        high, low = u[0], u[1]
        x = jnp.where(high >= 0.5, high,
                      high + np.array(2.0 ** -info.nmant, dtype) * low + info.tiny)
        return ew.neg(ew.log(ew.neg(ew.log1p(ew.neg(x)))))
    u = _uniform(data, shape, dtype, np.array(info.tiny, dtype), 1.0)
    return ew.neg(ew.log(ew.neg(ew.log(u))))


def gumbel(key: Any, shape: Sequence[int] = (), dtype: Any = None,
           mode: str | None = None) -> Any:
    """Standard Gumbel draws: -log(-log(u)), u uniform in [tiny, 1)."""
    data, _ = check_key("random.gumbel", key)
    dtype = _float_dtype("random.gumbel", dtype)
    shape = canonicalize_shape("random.gumbel", shape)
    mode = "low" if mode is None else mode
    if mode not in ("low", "high"):
        raise NumbaxValueError(f"random.gumbel: mode is {mode!r}, expected 'low' or 'high'.")
    return _gumbel(data, shape, dtype, mode)


def bernoulli(key: Any, p: Any = 0.5, shape: Sequence[int] | None = None,
              mode: str = "low") -> Any:
    """Boolean draws, True with probability p: uniform(shape, p.dtype) < p."""
    data, _ = check_key("random.bernoulli", key)
    if mode not in ("low", "high"):
        raise NumbaxValueError(f"random.bernoulli: mode is {mode!r}, expected 'low' or 'high'.")
    p = jnp.asarray(p)
    dtype = get_aval(p).dtype
    if dtype.kind != "f":
        raise NumbaxTypeError(
            f"random.bernoulli: p has dtype {dtype}, expected a floating dtype. Pass a float "
            "probability."
        )
    shape = _opt_shape("random.bernoulli", shape)
    if shape is None:
        shape = tuple(get_aval(p).shape)
    else:
        _check_shape("random.bernoulli", shape, p=p)
    if mode == "high":
        u = _uniform(data, (2,) + shape, dtype, 0.0, 1.0)
        u2 = jnp.multiply(u[1], np.array(2.0 ** -np.finfo(dtype).nmant, dtype))
        return jnp.less(u2, jnp.subtract(p, u[0]))
    return jnp.less(_uniform(data, shape, dtype, 0.0, 1.0), p)


# ----------------------------------------------------------------------------- integers


def _convert_and_clip_integer(val: Any, dtype: np.dtype) -> Any:
    src = get_aval(val).dtype
    lo = max(np.iinfo(dtype).min, np.iinfo(src).min)
    hi = min(np.iinfo(dtype).max, np.iinfo(src).max)
    return jnp.clip(val, np.array(lo, src), np.array(hi, src)).astype(dtype)


def _randint(data: Any, shape: tuple[int, ...], minval: Any, maxval: Any,
             dtype: np.dtype) -> Any:
    if get_aval(minval).dtype.kind not in "iu":
        minval = minval.astype(dtypes.default_int_dtype())
    if get_aval(maxval).dtype.kind not in "iu":
        maxval = maxval.astype(dtypes.default_int_dtype())
    top = _convert_and_clip_integer(jnp.asarray(np.array(np.iinfo(dtype).max, dtype)),
                                    get_aval(maxval).dtype)
    maxval_out_of_range = jnp.greater(maxval, top)
    minval = _convert_and_clip_integer(minval, dtype)
    maxval = _convert_and_clip_integer(maxval, dtype)
    minval = jnp.broadcast_to(minval, shape)
    maxval = jnp.broadcast_to(maxval, shape)
    maxval_out_of_range = jnp.broadcast_to(maxval_out_of_range, shape)
    nbits = np.iinfo(dtype).bits
    k1, k2 = _split_raw(data)
    higher_bits = prng.random_bits(k1, nbits, shape)
    lower_bits = prng.random_bits(k2, nbits, shape)
    udt = prng.UINT_DTYPES[nbits]
    span = ew.convert_element_type(ew.sub(maxval, minval), udt)
    span = ew.select(ew.le(maxval, minval), shape_ops.full(shape, 1, udt), span)
    span = ew.select(jnp.logical_and(maxval_out_of_range, ew.gt(maxval, minval)),
                     ew.add(span, np.array(1, udt)), span)
    multiplier = ew.rem(np.array(2 ** (nbits // 2), udt), span)
    multiplier = ew.rem(ew.mul(multiplier, multiplier), span)
    offset = ew.add(ew.mul(ew.rem(higher_bits, span), multiplier), ew.rem(lower_bits, span))
    offset = ew.rem(offset, span)
    return ew.add(minval, ew.convert_element_type(offset, dtype))


def randint(key: Any, shape: Sequence[int], minval: Any, maxval: Any, dtype: Any = None) -> Any:
    """Integers in [minval, maxval), by JAX's double-width modulus (slightly biased when the
    span is not a power of two, exactly as in JAX)."""
    data, _ = check_key("random.randint", key)
    dtype = dtypes.default_int_dtype() if dtype is None else dtypes.canonicalize_dtype(
        dtype, context="random.randint")
    if dtype.kind not in "iu":
        raise NumbaxTypeError(
            f"random.randint: dtype is {dtype}, expected an integer dtype such as int32."
        )
    shape = canonicalize_shape("random.randint", shape)
    minval, maxval = jnp.asarray(minval), jnp.asarray(maxval)
    _check_shape("random.randint", shape, minval=minval, maxval=maxval)
    info = np.iinfo(dtype)
    if info.bits < 32:
        i32 = np.dtype(np.int32)
        minval = jnp.clip(minval.astype(i32), int(info.min), int(info.max))
        maxval = jnp.clip(maxval.astype(i32), int(info.min), int(info.max) + 1)
        return _randint(data, shape, minval, maxval, i32).astype(dtype)
    return _randint(data, shape, minval, maxval, dtype)


def _shuffle(data: Any, x: Any, axis: int) -> Any:
    size = math.prod(get_aval(x).shape)
    num_rounds = int(np.ceil(3 * np.log(max(1, size)) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(num_rounds):
        data, subkey = _split_raw(data)
        sort_keys = prng.random_bits(subkey, 32, tuple(get_aval(x).shape))
        _, x = lax_sort.sort_key_val(sort_keys, x, axis)
    return x


def _canonical_axis(api: str, axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise NumbaxValueError(
            f"{api}: axis is {axis}, expected an axis of an array of rank {ndim}."
        )
    return axis % ndim


def permutation(key: Any, x: Any, axis: int = 0, independent: bool = False) -> Any:
    """A random permutation of arange(x) (int x) or of x along `axis` (sort by random keys)."""
    data, _ = check_key("random.permutation", key)
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return _shuffle(data, jnp.arange(int(x)), 0)
    x = jnp.asarray(x)
    aval = get_aval(x)
    if aval.ndim == 0:
        if aval.dtype.kind not in "iu" or isinstance(x, Tracer):
            raise NumbaxTypeError(
                f"random.permutation: x has shape () and dtype {aval.dtype}, expected a "
                "concrete integer or an array of rank >= 1."
            )
        return _shuffle(data, jnp.arange(int(x)), 0)
    axis = _canonical_axis("random.permutation", axis, aval.ndim)
    if independent or aval.ndim == 1:
        return _shuffle(data, x, axis)
    ind = _shuffle(data, jnp.arange(aval.shape[axis]), 0)
    return jnp.take(x, ind, axis)


def choice(key: Any, a: Any, shape: Sequence[int] = (), replace: bool = True, p: Any = None,
           axis: int = 0) -> Any:
    """Samples of arange(a) (int a) or of a's entries along `axis`, optionally weighted by p."""
    data, _ = check_key("random.choice", key)
    shape = canonicalize_shape("random.choice", shape)
    arr = jnp.asarray(a)
    aval = get_aval(arr)
    if aval.ndim == 0:
        if isinstance(arr, Tracer):
            raise NumbaxTypeError("random.choice: a is a traced scalar, expected a concrete int.")
        n_inputs = int(arr)
    else:
        axis = _canonical_axis("random.choice", axis, aval.ndim)
        n_inputs = aval.shape[axis]
    n_draws = math.prod(shape)
    if n_draws == 0:
        return jnp.zeros(shape, dtype=aval.dtype)
    if n_inputs <= 0:
        raise NumbaxValueError(
            f"random.choice: a has {n_inputs} entries, expected at least one."
        )
    if not replace and n_draws > n_inputs:
        raise NumbaxValueError(
            f"random.choice: shape {shape} asks for {n_draws} samples from {n_inputs} entries "
            "with replace=False, expected at most as many samples as entries."
        )
    if p is None:
        if replace:
            ind = randint(key, shape, 0, n_inputs)
            result = ind if aval.ndim == 0 else jnp.take(arr, ind, axis)
        else:
            src = n_inputs if aval.ndim == 0 else arr
            perm = permutation(key, src, axis)
            result = jnp.take(perm, jnp.arange(n_draws), axis if aval.ndim else 0)
    else:
        p_arr = jnp.asarray(p)
        p_arr = p_arr.astype(dtypes.to_inexact(get_aval(p_arr).dtype))
        if get_aval(p_arr).shape != (n_inputs,):
            raise NumbaxValueError(
                f"random.choice: p has shape {get_aval(p_arr).shape}, expected ({n_inputs},) "
                "(one probability per entry of a along axis)."
            )
        if replace:
            p_cuml = jnp.cumsum(p_arr)
            pdt = get_aval(p_cuml).dtype
            r = p_cuml[-1] * (1 - _uniform(data, shape, pdt, 0.0, 1.0))
            ind = jnp.searchsorted(p_cuml, r).astype(dtypes.default_int_dtype())
        else:
            g = _gumbel(data, (n_inputs,), get_aval(p_arr).dtype, "low") + jnp.log(p_arr)
            ind = lax_sort.top_k(g, n_draws)[1].astype(dtypes.default_int_dtype())
        result = ind if aval.ndim == 0 else jnp.take(arr, ind, axis)
    out_shape = shape if aval.ndim == 0 else (
        aval.shape[:axis] + tuple(shape) + aval.shape[axis + 1:])
    return jnp.reshape(result, out_shape)


def categorical(key: Any, logits: Any, axis: int = -1, shape: Sequence[int] | None = None,
                replace: bool = True) -> Any:
    """Indices drawn from softmax(logits, axis), by the Gumbel-max (top-k) trick."""
    data, _ = check_key("random.categorical", key)
    logits = jnp.asarray(logits)
    aval = get_aval(logits)
    if aval.ndim == 0 or aval.dtype.kind != "f":
        raise NumbaxTypeError(
            f"random.categorical: logits has shape {aval.shape} and dtype {aval.dtype}, "
            "expected a floating array of rank >= 1."
        )
    axis = _canonical_axis("random.categorical", axis, aval.ndim)
    batch_shape = aval.shape[:axis] + aval.shape[axis + 1:]
    if shape is None:
        shape = batch_shape
    else:
        shape = canonicalize_shape("random.categorical", shape)
        try:
            ok = np.broadcast_shapes(shape, batch_shape) == shape
        except ValueError:
            ok = False
        if not ok:
            raise NumbaxValueError(
                f"random.categorical: shape is {shape}, expected a shape that the batch shape "
                f"{batch_shape} of logits (logits.shape without axis) broadcasts to."
            )
    prefix = shape[:len(shape) - len(batch_shape)]
    if replace:
        logits_shape = list(shape[len(shape) - len(batch_shape):])
        logits_shape.insert(axis, aval.shape[axis])
        g = _gumbel(data, (*prefix, *logits_shape), aval.dtype, "low")
        expanded = jnp.reshape(logits, (1,) * len(prefix) + aval.shape)
        return jnp.argmax(g + expanded, axis=axis + len(prefix)).astype(
            dtypes.default_int_dtype())
    logits = logits + _gumbel(data, aval.shape, aval.dtype, "low")
    k = math.prod(prefix)
    if k > aval.shape[axis]:
        raise NumbaxValueError(
            f"random.categorical: shape asks for {k} samples without replacement, expected at "
            f"most {aval.shape[axis]} (the number of categories)."
        )
    _, indices = lax_sort.top_k(jnp.moveaxis(logits, axis, -1), k)
    perm = (indices.ndim - 1, *range(indices.ndim - 1))
    return jnp.reshape(jnp.transpose(indices, perm), shape).astype(dtypes.default_int_dtype())


# ----------------------------------------------------------------------------- gamma family


def _gamma_one(data: Any, alpha: Any, log_space: bool) -> Any:
    """One Marsaglia-Tsang draw (JAX's `_gamma_one`: the same keys, loops and boost)."""
    dtype = get_aval(alpha).dtype

    def c(v):
        return np.array(v, dtype)

    boost_mask = ew.ge(alpha, c(1))
    alpha_orig = alpha
    alpha = ew.select(boost_mask, alpha, ew.add(alpha, c(1)))
    d = ew.sub(alpha, c(1.0 / 3.0))
    cc = ew.div(c(1.0 / 3.0), ew.sqrt(d))

    def cond_fn(state):
        _, x, v, u = state
        first = ew.ge(u, ew.sub(c(1), ew.mul(c(0.0331), ew.mul(x, x))))
        second = ew.ge(ew.log(u), ew.add(ew.mul(x, c(0.5)),
                                         ew.mul(d, ew.add(ew.sub(c(1), v), ew.log(v)))))
        return ew.bitwise_and(first, second)

    def next_kxv(state):
        k, _, _ = state
        k, sub = _split_raw(k)
        x = _normal_real(sub, (), dtype)
        return k, x, ew.add(c(1), ew.mul(x, cc))

    def body_fn(state):
        k = state[0]
        k, x_key, u_key = _split_raw(k, 3)
        _, x, v = loops.while_loop(lambda s: ew.le(s[2], c(0)), next_kxv,
                                   (x_key, c(0), c(-1)))
        big_x = ew.mul(x, x)
        big_v = ew.mul(ew.mul(v, v), v)
        u = _uniform(u_key, (), dtype, 0.0, 1.0)
        return k, big_x, big_v, u

    k, sub = _split_raw(data)
    _, _, v, _ = loops.while_loop(cond_fn, body_fn, (k, c(0), c(1), c(2)))
    if log_space:
        u = _uniform(sub, (), dtype, 0.0, 1.0)
        log_samples = ew.neg(ew.neg(ew.log1p(ew.neg(u))))
        log_boost = ew.select(jnp.logical_or(boost_mask, ew.eq(log_samples, c(0))), c(0),
                              ew.mul(log_samples, ew.div(c(1), alpha_orig)))
        return ew.add(ew.add(ew.log(d), ew.log(v)), log_boost)
    samples = ew.sub(c(1), _uniform(sub, (), dtype, 0.0, 1.0))
    boost = ew.select(boost_mask, c(1), ew.pow(samples, ew.div(c(1), alpha_orig)))
    return ew.mul(ew.mul(d, v), boost)


def _gamma(api: str, key: Any, a: Any, shape: Any, dtype: Any, log_space: bool) -> Any:
    data, _ = check_key(api, key)
    dtype = _float_dtype(api, dtype)
    a = jnp.asarray(a)
    shape = _opt_shape(api, shape)
    if shape is None:
        shape = tuple(get_aval(a).shape)
    else:
        _check_shape(api, shape, a=a)
    return _gamma_data(data, jnp.broadcast_to(a.astype(dtype), shape), log_space)


def _gamma_data(data: Any, a: Any, log_space: bool) -> Any:
    shape = tuple(get_aval(a).shape)
    size = math.prod(shape)
    if size == 0:
        return a
    keys = prng.split_data(data, (size,))
    alphas = jnp.reshape(a, (size,))
    samples = loops.map(lambda args: _gamma_one(args[0], args[1], log_space), (keys, alphas))
    return jnp.reshape(samples, shape)


def gamma(key: Any, a: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Gamma(a, 1) draws by Marsaglia-Tsang rejection (JAX's algorithm and key schedule).

    Unlike JAX: not differentiable with respect to `a` (no implicit-reparameterisation
    gradient yet).
    """
    return _gamma("random.gamma", key, a, shape, dtype, log_space=False)


def loggamma(key: Any, a: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """log of Gamma(a, 1) draws, computed in log space (accurate for small a)."""
    return _gamma("random.loggamma", key, a, shape, dtype, log_space=True)


def beta(key: Any, a: Any, b: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Beta(a, b) draws as Ga / (Ga + Gb), from log-space gamma draws."""
    data, _ = check_key("random.beta", key)
    dtype = _float_dtype("random.beta", dtype)
    a, b = jnp.asarray(a), jnp.asarray(b)
    shape = _opt_shape("random.beta", shape)
    if shape is None:
        shape = _broadcast_param_shapes("random.beta", a=a, b=b)
    else:
        _check_shape("random.beta", shape, a=a, b=b)
    key_a, key_b = _split_raw(data)
    log_ga = _gamma_data(key_a, jnp.broadcast_to(a.astype(dtype), shape), True)
    log_gb = _gamma_data(key_b, jnp.broadcast_to(b.astype(dtype), shape), True)
    log_max = jnp.maximum(log_ga, log_gb)
    ga = jnp.exp(log_ga - log_max)
    gb = jnp.exp(log_gb - log_max)
    return ga / (ga + gb)


def dirichlet(key: Any, alpha: Any, shape: Sequence[int] | None = None,
              dtype: Any = None) -> Any:
    """Dirichlet(alpha) draws over the last axis: softmax of log-gamma draws."""
    data, _ = check_key("random.dirichlet", key)
    dtype = _float_dtype("random.dirichlet", dtype)
    alpha = jnp.asarray(alpha)
    a_shape = tuple(get_aval(alpha).shape)
    if not a_shape:
        raise NumbaxValueError(
            "random.dirichlet: alpha has shape (), expected rank >= 1 (the concentrations "
            "along the last axis)."
        )
    shape = _opt_shape("random.dirichlet", shape)
    if shape is None:
        shape = a_shape[:-1]
    else:
        _check_shape("random.dirichlet", shape, alpha=_shape_only(a_shape[:-1]))
    full = shape + a_shape[-1:]
    log_g = _gamma_data(data, jnp.broadcast_to(alpha.astype(dtype), full), True)
    shifted = log_g - jnp.max(log_g, axis=-1, keepdims=True)
    e = jnp.exp(shifted)
    return e / jnp.sum(e, axis=-1, keepdims=True)
