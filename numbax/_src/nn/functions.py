"""numbax.nn activations and normalisers: compositions of numbax.numpy ops with JAX's
derivative conventions (relu'(0) = 0, softmax/log_softmax shifted by a stop_gradient max)."""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from numbax._src import core, dtypes, jnp
from numbax._src.custom_derivatives import custom_jvp, stop_gradient
from numbax._src.eager_compile import compiled_when_eager
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.numpy import special as _special

__all__ = [
    "celu", "elu", "gelu", "glu", "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh",
    "identity", "leaky_relu", "log1mexp", "log_sigmoid", "log_softmax", "logmeanexp",
    "logsumexp", "mish", "one_hot", "relu", "relu6", "selu", "sigmoid", "silu", "soft_sign",
    "softmax", "softplus", "sparse_plus", "sparse_sigmoid", "squareplus", "standardize",
    "swish", "tanh",
]

logsumexp = _special.logsumexp
tanh = jnp.tanh


def _array(api: str, x: Any) -> Any:
    """x as a numbax array (lists allowed), or a NumbaxTypeError naming `api`."""
    if isinstance(x, (list, tuple)) or core.is_array_like(x):
        return jnp.asarray(x)
    raise NumbaxTypeError(
        f"numbax.nn.{api}: x has type {type(x).__name__}, expected an array or a number. "
        "Pass a numbax/numpy array or a Python scalar.")


def _inexact(api: str, x: Any, bools_to_default: bool = False) -> Any:
    """x converted to its inexact dtype (integers up to 32 bits to float32, as JAX's math
    functions); `bools_to_default`: bools to the default float, where JAX's formula meets a
    weak Python scalar first (softplus, soft_sign)."""
    x = _array(api, x)
    dtype = core.get_aval(x).dtype
    if bools_to_default and dtype == dtypes.bool_:
        return _default_float(api, x)
    if not dtypes.is_inexact(dtype):
        return x.astype(dtypes.to_inexact(dtype))
    return x


def _default_float(api: str, x: Any) -> Any:
    """x with integers and bools converted to the default float (float64 with x64 on), as
    JAX's elu, selu, leaky_relu and hard_sigmoid give them (their `where` meets a weak float)."""
    from numbax._src.lax import elementwise as lax

    x = _array(api, x)
    aval = core.get_aval(x)
    if dtypes.is_inexact(aval.dtype):
        return x
    return lax.convert_element_type(x, dtypes.default_float_dtype(), aval.weak_type)


def _floating(api: str, x: Any) -> Any:
    """x, which must be a float or complex array: JAX's logistic-based functions (sigmoid,
    silu, glu) refuse integers and bools with a TypeError rather than converting them."""
    x = _array(api, x)
    dtype = core.get_aval(x).dtype
    if not dtypes.is_inexact(dtype):
        raise NumbaxTypeError(f"numbax.nn.{api}: x has dtype {dtype}, expected a floating or "
                              f"complex dtype (as in JAX). Convert it first, e.g. "
                              f"x.astype(float).")
    return x


@custom_jvp
def _relu(x: Any) -> Any:
    return jnp.maximum(x, 0)


_relu.defjvps(lambda g, ans, x: jnp.where(x > 0, g, jnp.zeros_like(g)))


def relu(x: Any) -> Any:
    """Rectified linear unit, max(x, 0); its derivative at 0 is 0, as in JAX.

    Args:
      x: input array.

    Returns:
      An array of x's shape and dtype.

    Unlike JAX: relu is a plain function calling a custom_jvp (so bad input is reported
    by name before tracing), not the custom_jvp object itself.

    >>> import numbax
    >>> float(numbax.grad(relu)(0.0))
    0.0
    """
    return _relu(_array("relu", x))


@custom_jvp
def _relu6(x: Any) -> Any:
    return jnp.minimum(jnp.maximum(x, 0), 6.0)


_relu6.defjvps(lambda g, ans, x: jnp.where((x > 0) & (x < 6), g, jnp.zeros_like(g)))


def relu6(x: Any) -> Any:
    """min(max(x, 0), 6), with derivative 0 at both kinks (JAX's convention).

    >>> float(relu6(7.0))
    6.0
    """
    return _relu6(_array("relu6", x))


def sigmoid(x: Any) -> Any:
    """The logistic function 1 / (1 + exp(-x)) (the lax.logistic primitive).

    >>> float(sigmoid(0.0))
    0.5
    """
    from numbax._src.lax import elementwise as lax

    return lax.logistic(_floating("sigmoid", x))


@compiled_when_eager
def softplus(x: Any) -> Any:
    """log(1 + exp(x)), stable for large |x| (jnp.logaddexp(x, 0)).

    >>> float(softplus(1000.0))
    1000.0
    """
    return jnp.logaddexp(_inexact("softplus", x, bools_to_default=True), 0)


@compiled_when_eager
def log_sigmoid(x: Any) -> Any:
    """log(sigmoid(x)) = -softplus(-x), finite for large |x|.

    >>> float(log_sigmoid(-1000.0))
    -1000.0
    """
    return -softplus(-_inexact("log_sigmoid", x))


@compiled_when_eager
def soft_sign(x: Any) -> Any:
    """x / (|x| + 1).

    >>> float(soft_sign(1.0))
    0.5
    """
    x = _inexact("soft_sign", x, bools_to_default=True)
    return x / (jnp.abs(x) + 1)


@compiled_when_eager
def silu(x: Any) -> Any:
    """x * sigmoid(x) (also called swish).

    >>> round(float(silu(1.0)), 6)
    0.731059
    """
    x = _floating("silu", x)
    return x * sigmoid(x)


swish = silu


def leaky_relu(x: Any, negative_slope: Any = 1e-2) -> Any:
    """x where x >= 0, else negative_slope * x.

    >>> float(leaky_relu(-2.0, 0.1))
    -0.2
    """
    x = _default_float("leaky_relu", x)
    return jnp.where(x >= 0, x, negative_slope * x)


@compiled_when_eager
def elu(x: Any, alpha: Any = 1.0) -> Any:
    """x where x > 0, else alpha * (exp(x) - 1); the unused branch never overflows.

    >>> float(elu(0.0))
    0.0
    """
    x = _default_float("elu", x)
    safe_x = jnp.where(x > 0, 0.0, x)
    return jnp.where(x > 0, x, alpha * jnp.expm1(safe_x))


@compiled_when_eager
def celu(x: Any, alpha: Any = 1.0) -> Any:
    """max(x, 0) + alpha * expm1(min(x, 0) / alpha).

    >>> float(celu(-1.0, 1.0)) == float(elu(-1.0))
    True
    """
    x = _default_float("celu", x)
    return jnp.maximum(x, 0.0) + alpha * jnp.expm1(jnp.minimum(x, 0.0) / alpha)


@compiled_when_eager
def selu(x: Any) -> Any:
    """scale * elu(x, alpha) with the self-normalising constants.

    >>> round(float(selu(1.0)), 6)
    1.050701
    """
    alpha = 1.6732632423543772848170429916717
    scale = 1.0507009873554804934193349852946
    return scale * elu(_default_float("selu", x), alpha)


@compiled_when_eager
def gelu(x: Any, approximate: bool = True) -> Any:
    """Gaussian error linear unit: the tanh approximation, or x/2 * erfc(-x/sqrt 2) exactly.

    >>> round(float(gelu(1.0, approximate=False)), 6)
    0.841345
    """
    from numbax._src.lax import elementwise as lax

    x = _inexact("gelu", x)
    if approximate:
        sqrt_2_over_pi = np.sqrt(2 / np.pi).astype(core.get_aval(x).dtype)
        cdf = 0.5 * (1.0 + jnp.tanh(sqrt_2_over_pi * (x + 0.044715 * (x ** 3))))
        return x * cdf
    sqrt_half = np.sqrt(0.5).astype(core.get_aval(x).dtype)
    return 0.5 * x * lax.erfc(-x * sqrt_half)


def hard_tanh(x: Any) -> Any:
    """x clipped to [-1, 1] (derivative 1 at the kinks, as JAX's where form gives).

    >>> float(hard_tanh(3.0))
    1.0
    """
    x = _array("hard_tanh", x)  # integers stay integers, as in JAX
    if dtypes.kind_of(core.get_aval(x).dtype) == "u":  # (no -1 to clip to)
        return jnp.minimum(x, 1)
    return jnp.where(x > 1, 1, jnp.where(x < -1, -1, x))


@compiled_when_eager
def hard_sigmoid(x: Any) -> Any:
    """relu6(x + 3) / 6.

    >>> float(hard_sigmoid(0.0))
    0.5
    """
    return relu6(_default_float("hard_sigmoid", x) + 3.0) / 6.0


@compiled_when_eager
def hard_silu(x: Any) -> Any:
    """x * hard_sigmoid(x) (also called hard_swish).

    >>> float(hard_silu(3.0))
    3.0
    """
    x = _default_float("hard_silu", x)
    return x * hard_sigmoid(x)


hard_swish = hard_silu


def _masked(x: Any, where: Any, fill: float) -> Any:
    if where is None:
        return x
    return jnp.where(where, x, fill)


def _check_axis(api: str, x: Any, axis: Any) -> Any:
    ndim = core.get_aval(x).ndim
    axes = tuple(range(ndim)) if axis is None else (axis if isinstance(axis, tuple) else (axis,))
    for a in axes:
        try:
            a = operator.index(a)
        except TypeError:
            raise NumbaxTypeError(
                f"numbax.nn.{api}: axis has type {type(a).__name__}, expected an int or a tuple "
                "of ints. Pass axis=-1 or a tuple.") from None
        if not -max(ndim, 1) <= a < max(ndim, 1):
            raise NumbaxValueError(
                f"numbax.nn.{api}: axis {a} is out of bounds for x of shape "
                f"{core.get_aval(x).shape}. Pass an axis in [-{ndim}, {ndim}).")
    return axes if axis is None else axis


@compiled_when_eager
def log_softmax(x: Any, axis: Any = -1, where: Any = None) -> Any:
    """x - logsumexp(x, axis), stable for large inputs (the max shift is a stop_gradient).

    Args:
      x: input array.
      axis: the axis or axes to normalise over (None: all).
      where: entries to include; masked-out outputs are -inf.

    Returns:
      An array of x's shape.

    >>> [round(float(v), 4) for v in log_softmax(np.array([0.0, 0.0]))]
    [-0.6931, -0.6931]
    """
    x = _inexact("log_softmax", x)
    axis = _check_axis("log_softmax", x, axis)
    x_safe = _masked(x, where, -np.inf)
    x_max = jnp.max(x_safe, axis, keepdims=True)
    shifted = x_safe - stop_gradient(x_max)
    exp_shifted = _masked(jnp.exp(shifted), where, 0.0)
    result = shifted - jnp.log(jnp.sum(exp_shifted, axis, keepdims=True))
    return _masked(result, where, -np.inf)


@compiled_when_eager
def softmax(x: Any, axis: Any = -1, where: Any = None) -> Any:
    """exp(x) / sum(exp(x), axis), computed on x - max(x); jvp y * (dx - sum(y * dx)).

    Args:
      x: input array.
      axis: the axis or axes to normalise over (None: all).
      where: entries to include; masked-out outputs are 0.

    Returns:
      An array of x's shape whose entries along `axis` sum to 1.

    >>> [float(v) for v in softmax(np.array([0.0, 0.0]))]
    [0.5, 0.5]
    """
    x = _inexact("softmax", x)
    axis = _check_axis("softmax", x, axis)
    return _softmax_impl(x, axis, where)


def _softmax_impl(x: Any, axis: Any, where: Any) -> Any:
    @custom_jvp
    def soft(x, where):
        x_safe = _masked(x, where, -np.inf)
        x_max = jnp.max(x_safe, axis, keepdims=True)
        unnormalized = jnp.exp(x_safe - x_max)
        result = unnormalized / jnp.sum(unnormalized, axis, keepdims=True)
        return _masked(result, where, 0.0)

    @soft.defjvp
    def soft_jvp(primals, tangents):
        (x, where), (x_dot, _) = primals, tangents
        y = soft(x, where)
        y_dot = _masked(y * x_dot, where, 0.0)
        return y, y * (x_dot - jnp.sum(y_dot, axis, keepdims=True))

    if where is not None:
        where = jnp.asarray(where, dtype=bool)
    return soft(x, where)


@compiled_when_eager
def standardize(x: Any, axis: Any = -1, mean: Any = None, variance: Any = None,
                epsilon: Any = 1e-5, where: Any = None) -> Any:
    """(x - mean) / sqrt(variance + epsilon), the moments over `axis` unless given.

    The variance is the 'fast' mean(x^2) - mean(x)^2 clipped at 0, as JAX's default.

    >>> [round(float(v), 4) for v in standardize(np.array([1.0, 3.0]), epsilon=0.0)]
    [-1.0, 1.0]
    """
    x = _inexact("standardize", x)
    axis = _check_axis("standardize", x, axis)
    if where is None:
        count = None
    else:
        where = jnp.broadcast_to(jnp.asarray(where, dtype=bool), core.get_aval(x).shape)
        count = jnp.sum(where.astype(core.get_aval(x).dtype), axis, keepdims=True)

    def _mean(v):
        if count is None:
            return jnp.mean(v, axis, keepdims=True)
        return jnp.sum(_masked(v, where, 0.0), axis, keepdims=True) / count

    if mean is None:
        mean = _mean(x)
    if variance is None:
        variance = jnp.clip(_mean(jnp.square(x)) - jnp.square(mean), 0)
    return jnp.subtract(x, mean) * jnp.reciprocal(jnp.sqrt(variance + epsilon))


def one_hot(x: Any, num_classes: int, *, dtype: Any = None, axis: int = -1) -> Any:
    """One-hot encoding: out[..., k, ...] = (x[...] == k), k in range(num_classes).

    Args:
      x: array of class indices (out-of-range or non-integer values give all zeros).
      num_classes: number of classes; a Python int, concrete under jit.
      dtype: output dtype (default: the default float dtype).
      axis: where the new class axis goes in the output.

    Returns:
      An array of shape x.shape with num_classes inserted at `axis`.

    Unlike JAX: the default dtype is numbax's default float (float64 unless
    jax_enable_x64 is off), like every numbax constructor.

    >>> one_hot(np.array([0, 2]), 3).tolist()
    [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    """
    if isinstance(num_classes, core.Tracer):
        raise NumbaxTypeError(
            "numbax.nn.one_hot: num_classes is a traced value, expected a concrete int. "
            "Mark it static (jit(..., static_argnums=...)).")
    if isinstance(num_classes, (bool, np.bool_)) or not isinstance(
            num_classes, (int, np.integer)):
        raise NumbaxTypeError(
            f"numbax.nn.one_hot: num_classes has type {type(num_classes).__name__} "
            f"({num_classes!r}), expected a non-negative int. Pass an int such as 10.")
    if num_classes < 0:
        raise NumbaxValueError(
            f"numbax.nn.one_hot: num_classes is {num_classes}, expected a non-negative int.")
    x = _array("one_hot", x)
    ndim = core.get_aval(x).ndim
    try:
        axis = operator.index(axis)
    except TypeError:
        raise NumbaxTypeError(
            f"numbax.nn.one_hot: axis has type {type(axis).__name__}, expected an int. "
            "Named axes are not supported.") from None
    if not -(ndim + 1) <= axis < ndim + 1:
        raise NumbaxValueError(
            f"numbax.nn.one_hot: axis {axis} is out of bounds for an output of rank {ndim + 1} "
            f"(x has shape {core.get_aval(x).shape}). Pass an axis in [{-(ndim + 1)}, {ndim}].")
    axis = axis % (ndim + 1)
    dtype = dtypes.default_float_dtype() if dtype is None else dtype
    lhs = jnp.expand_dims(x, axis)
    rhs_shape = [1] * ndim
    rhs_shape.insert(axis, num_classes)
    rhs = jnp.arange(num_classes, dtype=core.get_aval(x).dtype).reshape(rhs_shape)
    return (lhs == rhs).astype(dtype)


# ----------------------------------------------------------------------------- more activations


def identity(x: Any) -> Any:
    """The identity activation: x itself, as an array.

    Args:
      x: input array.

    Returns:
      x as a numbax array (same shape and dtype).
    """
    return _array("identity", x)


@compiled_when_eager
def squareplus(x: Any, b: Any = 4) -> Any:
    """A smooth relu: (x + sqrt(x^2 + b)) / 2.

    Args:
      x: input array.
      b: smoothness (>= 0); b = 0 gives relu.

    Returns:
      An array of x's shape.

    >>> float(squareplus(0.0))
    1.0
    """
    x = _array("squareplus", x)
    return (x + jnp.sqrt(jnp.square(x) + b)) / 2


@compiled_when_eager
def sparse_plus(x: Any) -> Any:
    """0 for x <= -1, x for x >= 1, and (x + 1)^2 / 4 between (a piecewise-smooth softplus).

    Args:
      x: input array.

    Returns:
      An array of x's shape.

    >>> [float(v) for v in sparse_plus(np.array([-2.0, 0.0, 2.0]))]
    [0.0, 0.25, 2.0]
    """
    x = _array("sparse_plus", x)
    return jnp.where(x <= -1.0, 0.0, jnp.where(x >= 1.0, x, (x + 1.0) ** 2 / 4))


@compiled_when_eager
def sparse_sigmoid(x: Any) -> Any:
    """A piecewise-linear sigmoid: clip((x + 1) / 2, 0, 1), the derivative of sparse_plus.

    Args:
      x: input array.

    Returns:
      An array of x's shape with values in [0, 1].

    >>> [float(v) for v in sparse_sigmoid(np.array([-2.0, 0.0, 2.0]))]
    [0.0, 0.5, 1.0]
    """
    x = _array("sparse_sigmoid", x)
    return 0.5 * jnp.clip(x + 1.0, 0.0, 2.0)


@compiled_when_eager
def mish(x: Any) -> Any:
    """The mish activation: x * tanh(softplus(x)).

    Args:
      x: input array.

    Returns:
      An array of x's shape.
    """
    x = _array("mish", x)
    return x * jnp.tanh(softplus(x))


@compiled_when_eager
def glu(x: Any, axis: int = -1) -> Any:
    """Gated linear unit: the first half of x along `axis` times sigmoid of the second half.

    Args:
      x: input array whose size along `axis` is even.
      axis: the axis to halve.

    Returns:
      An array of x's shape with `axis` halved.

    >>> glu(np.array([2.0, 0.0])).tolist()
    [1.0]
    """
    x = _array("glu", x)
    _check_axis("glu", x, axis)
    size = core.get_aval(x).shape[axis]
    if size % 2:
        raise NumbaxValueError(
            f"numbax.nn.glu: x has shape {core.get_aval(x).shape}, expected an even size along "
            f"axis {axis} (it is split in two halves).")
    x1, x2 = jnp.split(x, 2, axis)
    return x1 * sigmoid(x2)


@compiled_when_eager
def logmeanexp(x: Any, axis: Any = None, where: Any = None, keepdims: bool = False) -> Any:
    """log(mean(exp(x))) over `axis`: logsumexp minus the log of the count of entries.

    Args:
      x: input array.
      axis: the axis or axes to reduce (None: all).
      where: optional mask of the entries to include (the count is then the mask's sum).
      keepdims: keep the reduced axes with size 1.

    Returns:
      The reduced array.

    >>> round(float(logmeanexp(np.log(np.array([1.0, 3.0])))), 6)
    0.693147
    """
    x = _inexact("logmeanexp", x)
    _check_axis("logmeanexp", x, axis)
    lse = logsumexp(x, axis=axis, where=where, keepdims=keepdims)
    mask = jnp.ones(core.get_aval(x).shape, bool) if where is None else jnp.broadcast_to(
        jnp.asarray(where, dtype=bool), core.get_aval(x).shape)
    count = jnp.sum(mask, axis=axis, keepdims=keepdims).astype(core.get_aval(lse).dtype)
    return lse - jnp.log(count)


@custom_jvp
def _log1mexp(x: Any) -> Any:
    return jnp.where(x < np.log(2.0), jnp.log(-jnp.expm1(-x)), jnp.log1p(-jnp.exp(-x)))


_log1mexp.defjvps(lambda g, ans, x: g / jnp.expm1(x))


@compiled_when_eager
def log1mexp(x: Any) -> Any:
    """log(1 - exp(-x)) for x >= 0, stable near 0 and for large x (Maechler's switch at log 2).

    Args:
      x: input array (undefined for x < 0).

    Returns:
      An array of x's shape; its derivative is 1 / expm1(x), as in JAX.

    >>> round(float(log1mexp(np.log(2.0))), 6)
    -0.693147
    """
    return _log1mexp(_inexact("log1mexp", x))
