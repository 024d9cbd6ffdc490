"""numbax.random's discrete samplers: bernoulli, randint, permutation, choice, categorical,
rademacher and geometric, each JAX's transform of threefry bits (bit-identical where exact)."""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax._src import dtypes, jnp, prng
from numbax._src.core import Tracer, get_aval
from numbax._src.dtypes import finfo_of, kind_of
from numbax._src.eager_compile import compiled_when_eager
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.lax import elementwise as ew
from numbax._src.lax import shape_ops
from numbax._src.lax import sort as lax_sort
from numbax._src.prng import canonicalize_shape, check_key
from numbax._src.random import (
    _check_shape,
    _gumbel,
    _gumbel_mode,
    _int_dtype,
    _opt_shape,
    _param_shapes,
    _uniform,
)
from numbax._src.random_keys import _split_raw

# ----------------------------------------------------------------------------- bernoulli


@compiled_when_eager
def bernoulli(key: Any, p: Any = 0.5, shape: Sequence[int] | None = None,
              mode: str = "low") -> Any:
    """Boolean draws, True with probability p: uniform(shape, p.dtype) < p."""
    data, _ = check_key("random.bernoulli", key)
    if mode not in ("low", "high"):
        raise NumbaxValueError(f"random.bernoulli: mode is {mode!r}, expected 'low' or 'high'.")
    p = jnp.asarray(p)
    dtype = get_aval(p).dtype
    if kind_of(dtype) != "f":
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
        u2 = jnp.multiply(u[1], np.array(2.0 ** -finfo_of(dtype).nmant, dtype))
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
    if kind_of(get_aval(minval).dtype) not in "iu":
        minval = minval.astype(dtypes.default_int_dtype())
    if kind_of(get_aval(maxval).dtype) not in "iu":
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


@compiled_when_eager
def randint(key: Any, shape: Sequence[int], minval: Any, maxval: Any, dtype: Any = None) -> Any:
    """Integers in [minval, maxval), by JAX's double-width modulus (slightly biased when the
    span is not a power of two, exactly as in JAX)."""
    data, _ = check_key("random.randint", key)
    dtype = _int_dtype("random.randint", dtype)
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


@compiled_when_eager
def permutation(key: Any, x: Any, axis: int = 0, independent: bool = False) -> Any:
    """A random permutation of arange(x) (int x) or of x along `axis` (sort by random keys)."""
    data, _ = check_key("random.permutation", key)
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return _shuffle(data, jnp.arange(int(x)), 0)
    x = jnp.asarray(x)
    aval = get_aval(x)
    if aval.ndim == 0:
        if kind_of(aval.dtype) not in "iu" or isinstance(x, Tracer):
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


@compiled_when_eager
def choice(key: Any, a: Any, shape: Sequence[int] = (), replace: bool = True, p: Any = None,
           axis: int = 0, mode: str | None = None) -> Any:
    """Samples of arange(a) (int a) or of a's entries along `axis`, optionally weighted by p.

    Args:
      key: a single PRNG key.
      a: an int n (sample from arange(n)) or an array (sample its entries along `axis`).
      shape: the sample shape.
      replace: sample with replacement (default) or without.
      p: optional probabilities, one per entry of `a` along `axis`.
      axis: the axis of `a` to sample along.
      mode: the gumbel mode used for weighted sampling without replacement.

    Returns:
      The samples: shape `shape` for an int `a`, else a.shape with `axis` replaced by `shape`.
    """
    data, _ = check_key("random.choice", key)
    mode = _gumbel_mode("random.choice", mode)
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
            g = _gumbel(data, (n_inputs,), get_aval(p_arr).dtype, mode) + jnp.log(p_arr)
            ind = lax_sort.top_k(g, n_draws)[1].astype(dtypes.default_int_dtype())
        result = ind if aval.ndim == 0 else jnp.take(arr, ind, axis)
    out_shape = shape if aval.ndim == 0 else (
        aval.shape[:axis] + tuple(shape) + aval.shape[axis + 1:])
    return jnp.reshape(result, out_shape)


@compiled_when_eager
def categorical(key: Any, logits: Any, axis: int = -1, shape: Sequence[int] | None = None,
                replace: bool = True, mode: str | None = None) -> Any:
    """Indices drawn from softmax(logits, axis), by the Gumbel-max (top-k) trick.

    Args:
      key: a single PRNG key.
      logits: unnormalised log probabilities along `axis`.
      axis: the category axis of `logits`.
      shape: the result shape; must end with logits' batch shape (default: that shape).
      replace: draw with replacement (default) or without (top-k of perturbed logits).
      mode: the gumbel mode ('low', 'high' or 'highest').

    Returns:
      Integer category indices of shape `shape`.
    """
    data, _ = check_key("random.categorical", key)
    mode = _gumbel_mode("random.categorical", mode)
    logits = jnp.asarray(logits)
    aval = get_aval(logits)
    if aval.ndim == 0 or kind_of(aval.dtype) != "f":
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
        g = _gumbel(data, (*prefix, *logits_shape), aval.dtype, mode)
        expanded = jnp.reshape(logits, (1,) * len(prefix) + aval.shape)
        return jnp.argmax(g + expanded, axis=axis + len(prefix)).astype(
            dtypes.default_int_dtype())
    logits = logits + _gumbel(data, aval.shape, aval.dtype, mode)
    k = math.prod(prefix)
    if k > aval.shape[axis]:
        raise NumbaxValueError(
            f"random.categorical: shape asks for {k} samples without replacement, expected at "
            f"most {aval.shape[axis]} (the number of categories)."
        )
    _, indices = lax_sort.top_k(jnp.moveaxis(logits, axis, -1), k)
    perm = (indices.ndim - 1, *range(indices.ndim - 1))
    return jnp.reshape(jnp.transpose(indices, perm), shape).astype(dtypes.default_int_dtype())


# ----------------------------------------------------------------------------- signs & counts


@compiled_when_eager
def rademacher(key: Any, shape: Sequence[int] = (), dtype: Any = None) -> Any:
    """Random signs: -1 or +1 with equal probability (2 * bernoulli(0.5) - 1).

    Args:
      key: a single PRNG key.
      shape: the result shape.
      dtype: the result dtype (default: numbax's default int).

    Returns:
      An array of `shape` and `dtype` holding -1 and 1.
    """
    data, _ = check_key("random.rademacher", key)
    dtype = dtypes.default_int_dtype() if dtype is None else dtypes.canonicalize_dtype(
        dtype, context="random.rademacher")
    shape = canonicalize_shape("random.rademacher", shape)
    return _rademacher(data, shape, dtype)


def _rademacher(data: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    half = jnp.asarray(0.5, dtype=dtypes.default_float_dtype())
    b = jnp.less(_uniform(data, shape, get_aval(half).dtype, 0.0, 1.0), half).astype(dtype)
    return (2 * b - 1).astype(dtype)


@compiled_when_eager
def geometric(key: Any, p: Any, shape: Sequence[int] | None = None, dtype: Any = None) -> Any:
    """Geometric(p) draws on {1, 2, ...}: floor(log(u) / log1p(-p)) + 1.

    Args:
      key: a single PRNG key.
      p: success probability per trial, broadcastable to `shape`.
      shape: the result shape (default: p's shape).
      dtype: an integer dtype (default: numbax's default int).

    Returns:
      Integer trial counts of shape `shape`.
    """
    data, _ = check_key("random.geometric", key)
    dtype = _int_dtype("random.geometric", dtype)
    p = jnp.asarray(p)
    shape = _param_shapes("random.geometric", shape, p=p)
    p = p.astype(dtypes.to_inexact(get_aval(p).dtype))
    u = _uniform(data, shape, get_aval(p).dtype, 0.0, 1.0)
    u = jnp.where(u == 0, jnp.ones_like(u), u)
    log_one_minus_p = jnp.broadcast_to(ew.log1p(ew.neg(p)), shape)
    g = ew.add(ew.floor(ew.div(ew.log(u), log_one_minus_p)), np.array(1, get_aval(u).dtype))
    return g.astype(dtype)
