"""numbax.nn.initializers: functions returning init(key, shape, dtype) for weight arrays,
drawn with numbax.random (JAX's formulas, so the same key gives JAX's statistics)."""
from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from numbax._src import dtypes, jnp
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError

__all__ = [
    "Initializer", "constant", "delta_orthogonal", "glorot_normal", "glorot_uniform",
    "he_normal", "he_uniform", "kaiming_normal", "kaiming_uniform", "lecun_normal",
    "lecun_uniform", "normal", "ones", "orthogonal", "truncated_normal", "uniform",
    "variance_scaling", "xavier_normal", "xavier_uniform", "zeros",
]

Initializer = Callable[..., Any]


def _random():
    """numbax's samplers (_src/random.py), imported late: random imports nn's neighbours."""
    from numbax._src import random

    return random


def _shape(api: str, shape: Any) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        out = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise NumbaxTypeError(
            f"numbax.nn.initializers.{api}: shape is {shape!r}, expected a tuple of ints. "
            "Pass a shape such as (3, 4).") from None
    if any(d < 0 for d in out):
        raise NumbaxValueError(
            f"numbax.nn.initializers.{api}: shape {out} has a negative dimension, expected "
            "sizes >= 0.")
    return out


def _float_dtype(api: str, dtype: Any) -> np.dtype:
    dtype = dtypes.default_float_dtype() if dtype is None else np.dtype(dtype)
    if kind_of(dtype) != "f":
        raise NumbaxTypeError(
            f"numbax.nn.initializers.{api}: dtype is {dtype}, expected a floating dtype. "
            "Pass dtype=numbax.numpy.float32 or float64.")
    return dtype


def zeros(key: Any, shape: Any, dtype: Any = None) -> Any:
    """An array of zeros (the key is ignored).

    >>> zeros(None, (2,)).tolist()
    [0.0, 0.0]
    """
    dtype = dtypes.default_float_dtype() if dtype is None else dtype
    return jnp.zeros(_shape("zeros", shape), dtype)


def ones(key: Any, shape: Any, dtype: Any = None) -> Any:
    """An array of ones (the key is ignored).

    >>> ones(None, (2,)).tolist()
    [1.0, 1.0]
    """
    dtype = dtypes.default_float_dtype() if dtype is None else dtype
    return jnp.ones(_shape("ones", shape), dtype)


def constant(value: Any, dtype: Any = None) -> Initializer:
    """An initializer filling with `value`.

    >>> constant(-7.0)(None, (2,)).tolist()
    [-7.0, -7.0]
    """
    default = dtype

    def init(key: Any, shape: Any, dtype: Any = default) -> Any:
        dtype = dtypes.default_float_dtype() if dtype is None else dtype
        return jnp.full(_shape("constant", shape), value, dtype=dtype)

    return init


def uniform(scale: Any = 1e-2, dtype: Any = None) -> Initializer:
    """An initializer drawing from U[0, scale).

    >>> import numbax
    >>> uniform(2.0)(numbax.random.PRNGKey(0), (3,)).shape
    (3,)
    """
    default = dtype

    def init(key: Any, shape: Any, dtype: Any = default) -> Any:
        dtype = _float_dtype("uniform", dtype)
        return _random().uniform(key, _shape("uniform", shape), dtype) * jnp.asarray(scale, dtype)

    return init


def normal(stddev: Any = 1e-2, dtype: Any = None) -> Initializer:
    """An initializer drawing from N(0, stddev^2).

    >>> import numbax
    >>> normal(1.0)(numbax.random.PRNGKey(0), (3,)).shape
    (3,)
    """
    default = dtype

    def init(key: Any, shape: Any, dtype: Any = default) -> Any:
        dtype = _float_dtype("normal", dtype)
        return _random().normal(key, _shape("normal", shape), dtype) * jnp.asarray(stddev, dtype)

    return init


def truncated_normal(stddev: Any = 1e-2, dtype: Any = None, lower: Any = -2.0,
                     upper: Any = 2.0) -> Initializer:
    """An initializer drawing stddev * (a standard normal truncated to [lower, upper]).

    >>> import numbax
    >>> truncated_normal(1.0)(numbax.random.PRNGKey(0), (3,)).shape
    (3,)
    """
    default = dtype

    def init(key: Any, shape: Any, dtype: Any = default) -> Any:
        dtype = _float_dtype("truncated_normal", dtype)
        draw = _random().truncated_normal(key, lower, upper, _shape("truncated_normal", shape),
                                          dtype)
        return draw * jnp.asarray(stddev, dtype)

    return init


def _axis_size(shape: tuple[int, ...], axis: Any) -> int:
    if isinstance(axis, (int, np.integer)):
        return shape[axis]
    return math.prod(shape[i] for i in axis)


def _compute_fans(shape: tuple[int, ...], in_axis: Any = -2, out_axis: Any = -1,
                  batch_axis: Any = ()) -> tuple[float, float]:
    """(fan_in, fan_out): in/out sizes times the receptive field (axes not named)."""
    if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
        raise NumbaxValueError(
            f"numbax.nn.initializers.variance_scaling: shape {shape} has rank {len(shape)}, "
            "expected rank >= 2 with the default in_axis. Pass in_axis/out_axis explicitly.")
    try:
        in_size = _axis_size(shape, in_axis)
        out_size = _axis_size(shape, out_axis)
        batch_size = _axis_size(shape, batch_axis)
    except IndexError:
        raise NumbaxValueError(
            f"numbax.nn.initializers.variance_scaling: in_axis={in_axis}, out_axis={out_axis} "
            f"or batch_axis={batch_axis} is out of bounds for shape {shape}.") from None
    receptive_field_size = math.prod(shape) / in_size / out_size / batch_size
    return in_size * receptive_field_size, out_size * receptive_field_size


_MODES = ("fan_in", "fan_out", "fan_avg", "fan_geo_avg")
_DISTRIBUTIONS = ("truncated_normal", "normal", "uniform")


def variance_scaling(scale: Any, mode: str, distribution: str, in_axis: Any = -2,
                     out_axis: Any = -1, batch_axis: Sequence[int] = (),
                     dtype: Any = None) -> Initializer:
    """An initializer with variance scale / n, n given by `mode` from the fans of the shape.

    Args:
      scale: the variance scale.
      mode: "fan_in", "fan_out", "fan_avg" or "fan_geo_avg".
      distribution: "truncated_normal", "normal" or "uniform".
      in_axis, out_axis, batch_axis: axes of the input, output and batch dimensions.
      dtype: the default dtype of the weights.

    Returns:
      init(key, shape, dtype).

    Unlike JAX: complex dtypes are not supported.

    >>> import numbax
    >>> variance_scaling(1.0, "fan_in", "normal")(numbax.random.PRNGKey(0), (4, 3)).shape
    (4, 3)
    """
    if mode not in _MODES:
        raise NumbaxValueError(
            f"numbax.nn.initializers.variance_scaling: mode is {mode!r}, expected one of "
            f"{_MODES}.")
    if distribution not in _DISTRIBUTIONS:
        raise NumbaxValueError(
            f"numbax.nn.initializers.variance_scaling: distribution is {distribution!r}, "
            f"expected one of {_DISTRIBUTIONS}.")
    default = dtype

    def init(key: Any, shape: Any, dtype: Any = default) -> Any:
        shape = _shape("variance_scaling", shape)
        dtype = _float_dtype("variance_scaling", dtype)
        fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
        denominator = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2,
                       "fan_geo_avg": (fan_in * fan_out) ** 0.5}[mode]
        variance = scale / denominator
        random = _random()
        if distribution == "truncated_normal":
            stddev = np.sqrt(variance) / 0.87962566103423978
            return random.truncated_normal(key, -2, 2, shape, dtype) * jnp.asarray(stddev, dtype)
        if distribution == "normal":
            return random.normal(key, shape, dtype) * jnp.asarray(np.sqrt(variance), dtype)
        draw = random.uniform(key, shape, dtype, -1, 1)
        return draw * jnp.asarray(np.sqrt(3 * variance), dtype)

    return init


def glorot_uniform(in_axis: Any = -2, out_axis: Any = -1, batch_axis: Sequence[int] = (),
                   dtype: Any = None) -> Initializer:
    """variance_scaling(1.0, "fan_avg", "uniform") (Glorot & Bengio 2010)."""
    return variance_scaling(1.0, "fan_avg", "uniform", in_axis, out_axis, batch_axis, dtype)


def glorot_normal(in_axis: Any = -2, out_axis: Any = -1, batch_axis: Sequence[int] = (),
                  dtype: Any = None) -> Initializer:
    """variance_scaling(1.0, "fan_avg", "truncated_normal")."""
    return variance_scaling(1.0, "fan_avg", "truncated_normal", in_axis, out_axis, batch_axis,
                            dtype)


def lecun_uniform(in_axis: Any = -2, out_axis: Any = -1, batch_axis: Sequence[int] = (),
                  dtype: Any = None) -> Initializer:
    """variance_scaling(1.0, "fan_in", "uniform")."""
    return variance_scaling(1.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def lecun_normal(in_axis: Any = -2, out_axis: Any = -1, batch_axis: Sequence[int] = (),
                 dtype: Any = None) -> Initializer:
    """variance_scaling(1.0, "fan_in", "truncated_normal")."""
    return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis,
                            dtype)


def he_uniform(in_axis: Any = -2, out_axis: Any = -1, batch_axis: Sequence[int] = (),
               dtype: Any = None) -> Initializer:
    """variance_scaling(2.0, "fan_in", "uniform") (He et al. 2015)."""
    return variance_scaling(2.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def he_normal(in_axis: Any = -2, out_axis: Any = -1, batch_axis: Sequence[int] = (),
              dtype: Any = None) -> Initializer:
    """variance_scaling(2.0, "fan_in", "truncated_normal")."""
    return variance_scaling(2.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis,
                            dtype)


xavier_uniform = glorot_uniform
xavier_normal = glorot_normal
kaiming_uniform = he_uniform
kaiming_normal = he_normal


def orthogonal(scale: Any = 1.0, column_axis: int = -1, dtype: Any = None) -> Initializer:
    """An initializer of (semi-)orthogonal weights: random.orthogonal reshaped, times scale.

    The matrix has shape (prod(shape) / shape[column_axis], shape[column_axis]); its columns
    are orthonormal when it is tall, its rows when it is wide.

    Args:
      scale: the factor applied to the orthogonal matrix.
      column_axis: the axis of `shape` that holds the columns.
      dtype: the default dtype of the weights.

    Returns:
      init(key, shape, dtype) for shapes of rank >= 2.

    >>> import numbax
    >>> w = orthogonal()(numbax.random.PRNGKey(0), (3, 2))
    >>> bool(numbax.numpy.allclose(w.T @ w, numbax.numpy.eye(2)))
    True
    """
    default = dtype

    def init(key: Any, shape: Any, dtype: Any = default) -> Any:
        shape = _shape("orthogonal", shape)
        dtype = _float_dtype("orthogonal", dtype)
        if len(shape) < 2:
            raise NumbaxValueError(
                f"numbax.nn.initializers.orthogonal: shape {shape} has rank {len(shape)}, "
                "expected rank >= 2.")
        if not -len(shape) <= column_axis < len(shape):
            raise NumbaxValueError(
                f"numbax.nn.initializers.orthogonal: column_axis {column_axis} is out of "
                f"bounds for shape {shape}.")
        if 0 in shape:
            return jnp.zeros(shape, dtype)
        n_cols = shape[column_axis]
        n_rows = math.prod(shape) // n_cols
        q = _random().orthogonal(key, n_rows, (), dtype, n_cols)
        rest = tuple(d for i, d in enumerate(shape) if i != column_axis % len(shape))
        q = jnp.moveaxis(jnp.reshape(q, rest + (n_cols,)), -1, column_axis)
        return jnp.asarray(scale, dtype) * q

    return init


def delta_orthogonal(scale: Any = 1.0, column_axis: int = -1, dtype: Any = None) -> Initializer:
    """A convolution-kernel initializer: zeros except an orthogonal (in, out) matrix at the
    spatial centre (Xiao et al. 2018, the delta-orthogonal kernel).

    Args:
      scale: the factor applied to the orthogonal matrix.
      column_axis: the column axis of that matrix.
      dtype: the default dtype of the weights.

    Returns:
      init(key, shape, dtype) for 3D, 4D or 5D kernels (spatial..., in, out) with in <= out.

    >>> import numbax
    >>> w = delta_orthogonal()(numbax.random.PRNGKey(0), (3, 2, 2))
    >>> [float(abs(w[i]).sum() > 0) for i in range(3)]
    [0.0, 1.0, 0.0]
    """
    default = dtype

    def init(key: Any, shape: Any, dtype: Any = default) -> Any:
        shape = _shape("delta_orthogonal", shape)
        dtype = _float_dtype("delta_orthogonal", dtype)
        if len(shape) not in (3, 4, 5):
            raise NumbaxValueError(
                f"numbax.nn.initializers.delta_orthogonal: shape {shape} has rank "
                f"{len(shape)}, expected a 3D, 4D or 5D kernel shape.")
        if shape[-1] < shape[-2]:
            raise NumbaxValueError(
                f"numbax.nn.initializers.delta_orthogonal: shape {shape} has fan_in "
                f"{shape[-2]} > fan_out {shape[-1]}, expected fan_in <= fan_out.")
        matrix = orthogonal(scale=scale, column_axis=column_axis, dtype=dtype)(key, shape[-2:])
        centre = tuple((k - 1) // 2 for k in shape[:-2])
        return jnp.zeros(shape, dtype).at[centre].set(matrix)

    return init
