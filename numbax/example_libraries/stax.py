"""numbax.example_libraries.stax: JAX's minimal neural-network layer library. A layer is an
(init_fun(rng, input_shape) -> (output_shape, params), apply_fun(params, inputs, **kwargs)) pair.
"""
from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable
from typing import Any

import numbax.numpy as jnp
from numbax import lax
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.nn.functions import (
    elu,
    gelu,
    leaky_relu,
    log_softmax,
    relu,
    selu,
    sigmoid,
    softmax,
    softplus,
    standardize,
)
from numbax._src.nn.initializers import glorot_normal, normal, ones, zeros

__all__ = [
    "BatchNorm", "Dense", "Dropout", "Elu", "Exp", "FanInConcat", "FanInSum", "FanOut",
    "Flatten", "Gelu", "Identity", "LeakyRelu", "LogSoftmax", "Relu", "Selu", "Sigmoid",
    "Softmax", "Softplus", "Tanh", "elementwise", "glorot", "logsoftmax", "parallel", "randn",
    "serial", "shape_dependent",
    # convolution and pooling layers (issue 18)
    "AvgPool", "Conv", "Conv1DTranspose", "ConvTranspose", "GeneralConv",
    "GeneralConvTranspose", "MaxPool", "SumPool",
]

# JAX's short names: initializer factories and the log-softmax function.
glorot = glorot_normal
randn = normal
logsoftmax = log_softmax

Layer = tuple[Callable, Callable]


def _random():
    """numbax.random, imported late (it sits above example_libraries in the package)."""
    from numbax import random

    return random


def _check_shape(layer: str, input_shape: Any, min_ndim: int = 1) -> tuple:
    """input_shape as a tuple of ints (-1 allowed for a batch axis), else a clear error."""
    try:
        shape = tuple(operator.index(d) for d in input_shape)
    except TypeError:
        raise NumbaxTypeError(
            f"stax.{layer}: input_shape is {input_shape!r}, expected a tuple of ints such as "
            "(-1, 784) (-1 marks a batch size not yet known).") from None
    if len(shape) < min_ndim:
        raise NumbaxValueError(
            f"stax.{layer}: input_shape {shape} has rank {len(shape)}, expected rank >= "
            f"{min_ndim}.")
    return shape


_GLOROT_NORMAL = glorot_normal()
_NORMAL = normal()


def Dense(out_dim: int, W_init: Callable = _GLOROT_NORMAL,  # noqa: N802, N803
          b_init: Callable = _NORMAL) -> Layer:  # noqa: N803
    """A dense layer: inputs @ W + b with W of shape (input_shape[-1], out_dim)."""
    if isinstance(out_dim, bool) or not isinstance(out_dim, int) or out_dim <= 0:
        raise NumbaxValueError(f"stax.Dense: out_dim is {out_dim!r}, expected a positive int.")

    def init_fun(rng, input_shape):
        input_shape = _check_shape("Dense", input_shape)
        if input_shape[-1] <= 0:
            raise NumbaxValueError(
                f"stax.Dense: input_shape {input_shape} has last dimension {input_shape[-1]}, "
                "expected a known positive feature size.")
        output_shape = input_shape[:-1] + (out_dim,)
        k1, k2 = _random().split(rng)
        W, b = W_init(k1, (input_shape[-1], out_dim)), b_init(k2, (out_dim,))  # noqa: N806
        return output_shape, (W, b)

    def apply_fun(params, inputs, **kwargs):
        W, b = params  # noqa: N806
        return jnp.dot(inputs, W) + b

    return init_fun, apply_fun


def BatchNorm(axis: Any = (0, 1, 2), epsilon: float = 1e-5, center: bool = True,  # noqa: N802
              scale: bool = True, beta_init: Callable = zeros,
              gamma_init: Callable = ones) -> Layer:
    """Batch normalization over `axis`, with learnt shift (beta) and scale (gamma)."""
    axis = (axis,) if isinstance(axis, int) else tuple(axis)

    def init_fun(rng, input_shape):
        input_shape = _check_shape("BatchNorm", input_shape)
        shape = tuple(d for i, d in enumerate(input_shape) if i not in axis)
        k1, k2 = _random().split(rng)
        beta = beta_init(k1, shape) if center else ()
        gamma = gamma_init(k2, shape) if scale else ()
        return input_shape, (beta, gamma)

    def apply_fun(params, x, **kwargs):
        beta, gamma = params
        ed = tuple(None if i in axis else slice(None) for i in range(jnp.ndim(x)))
        z = standardize(x, axis, epsilon=epsilon)
        if center and scale:
            return gamma[ed] * z + beta[ed]
        if center:
            return z + beta[ed]
        if scale:
            return gamma[ed] * z
        return z

    return init_fun, apply_fun


def elementwise(fun: Callable, **fun_kwargs: Any) -> Layer:
    """A layer applying `fun` elementwise (no parameters)."""

    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        return fun(inputs, **fun_kwargs)

    return init_fun, apply_fun


Tanh = elementwise(jnp.tanh)
Relu = elementwise(relu)
Exp = elementwise(jnp.exp)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)


def _flatten() -> Layer:
    """Flattens all but the leading (batch) dimension."""

    def init_fun(rng, input_shape):
        input_shape = _check_shape("Flatten", input_shape)
        return (input_shape[0], math.prod(input_shape[1:])), ()

    def apply_fun(params, inputs, **kwargs):
        return jnp.reshape(inputs, (inputs.shape[0], -1))

    return init_fun, apply_fun


Flatten = _flatten()


def _identity() -> Layer:
    """Returns its input."""

    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        return inputs

    return init_fun, apply_fun


Identity = _identity()


def FanOut(num: int) -> Layer:  # noqa: N802
    """Copies its input into a list of `num` outputs."""

    def init_fun(rng, input_shape):
        return [input_shape] * num, ()

    def apply_fun(params, inputs, **kwargs):
        return [inputs] * num

    return init_fun, apply_fun


def _fan_in_sum() -> Layer:
    """Sums a list of inputs."""

    def init_fun(rng, input_shape):
        return input_shape[0], ()

    def apply_fun(params, inputs, **kwargs):
        return functools.reduce(operator.add, inputs)

    return init_fun, apply_fun


FanInSum = _fan_in_sum()


def FanInConcat(axis: int = -1) -> Layer:  # noqa: N802
    """Concatenates a list of inputs along `axis`."""

    def init_fun(rng, input_shape):
        ax = axis % len(input_shape[0])
        concat_size = sum(shape[ax] for shape in input_shape)
        out_shape = tuple(input_shape[0][:ax]) + (concat_size,) + tuple(input_shape[0][ax + 1:])
        return out_shape, ()

    def apply_fun(params, inputs, **kwargs):
        return jnp.concatenate(inputs, axis)

    return init_fun, apply_fun


def Dropout(rate: float, mode: str = "train") -> Layer:  # noqa: N802
    """Dropout; in "train" mode keeps each entry with probability `rate`, scaled by 1/rate.

    `rate` is the keep probability, as in JAX's stax. apply_fun needs rng= in train mode.
    """
    if mode not in ("train", "test"):
        raise NumbaxValueError(f"stax.Dropout: mode is {mode!r}, expected 'train' or 'test'.")

    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.get("rng", None)
        if rng is None:
            raise NumbaxValueError(
                "stax.Dropout: rng is None, expected a PRNG key. Call apply_fun(params, "
                "inputs, rng=key) with a key from numbax.random.PRNGKey.")
        if mode == "train":
            keep = _random().bernoulli(rng, rate, jnp.shape(inputs))
            return jnp.where(keep, inputs / rate, 0)
        return inputs

    return init_fun, apply_fun


def serial(*layers: Layer) -> Layer:
    """Composes layers in sequence; params is a list with one entry per layer."""
    nlayers = len(layers)
    init_funs, apply_funs = zip(*layers) if layers else ((), ())

    def init_fun(rng, input_shape):
        params = []
        for init in init_funs:
            rng, layer_rng = _random().split(rng)
            input_shape, param = init(layer_rng, input_shape)
            params.append(param)
        return input_shape, params

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        rngs = _random().split(rng, nlayers) if rng is not None else (None,) * nlayers
        for fun, param, layer_rng in zip(apply_funs, params, rngs):
            inputs = fun(param, inputs, rng=layer_rng, **kwargs)
        return inputs

    return init_fun, apply_fun


def parallel(*layers: Layer) -> Layer:
    """Applies layers[k] to inputs[k]; pairs with FanOut and FanInSum/FanInConcat.

    As in JAX, init_fun returns (output_shapes, params) as two tuples, one entry per layer;
    apply_fun returns a list of outputs.
    """
    nlayers = len(layers)
    init_funs, apply_funs = zip(*layers) if layers else ((), ())

    def init_fun(rng, input_shape):
        rngs = _random().split(rng, nlayers)
        pairs = [init(r, shape) for init, r, shape in zip(init_funs, rngs, input_shape)]
        return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        rngs = _random().split(rng, nlayers) if rng is not None else (None,) * nlayers
        return [f(p, x, rng=r, **kwargs)
                for f, p, x, r in zip(apply_funs, params, inputs, rngs)]

    return init_fun, apply_fun


def shape_dependent(make_layer: Callable[[tuple], Layer]) -> Layer:
    """Delays building a layer until its input shape is known."""

    def init_fun(rng, input_shape):
        return make_layer(input_shape)[0](rng, input_shape)

    def apply_fun(params, inputs, **kwargs):
        return make_layer(inputs.shape)[1](params, inputs, **kwargs)

    return init_fun, apply_fun


# ----------------------------------------------------------------------------- conv and pooling

_BIAS_INIT = normal(1e-6)


def _conv_spec(layer: str, dimension_numbers: Any, filter_shape: Any, strides: Any
               ) -> tuple[tuple[str, str, str], tuple[int, ...], tuple[int, ...]]:
    """Checked (dimension_numbers, filter_shape, strides): three layout strings, positive
    sizes, and strides defaulting to ones."""
    try:
        lhs_spec, rhs_spec, out_spec = dimension_numbers
        ok = all(isinstance(spec, str) for spec in dimension_numbers)
    except (TypeError, ValueError):
        ok = False
    if not ok or "I" not in rhs_spec or "O" not in rhs_spec or "C" not in out_spec:
        raise NumbaxValueError(
            f"stax.{layer}: dimension_numbers is {dimension_numbers!r}, expected three layout "
            "strings such as ('NHWC', 'HWIO', 'NHWC').")
    try:
        filter_shape = tuple(operator.index(d) for d in filter_shape)
        strides = (1,) * len(filter_shape) if strides is None else tuple(
            operator.index(s) for s in strides)
    except TypeError:
        raise NumbaxTypeError(
            f"stax.{layer}: filter_shape is {filter_shape!r} and strides {strides!r}, expected "
            "tuples of ints.") from None
    if len(filter_shape) != len(rhs_spec) - 2 or len(strides) != len(filter_shape):
        raise NumbaxValueError(
            f"stax.{layer}: filter_shape {filter_shape} and strides {strides} need "
            f"{len(rhs_spec) - 2} entries each (the spatial dims of {rhs_spec!r}).")
    return (lhs_spec, rhs_spec, out_spec), filter_shape, strides


def _conv_layer(layer: str, dimension_numbers: Any, out_chan: int, filter_shape: Any,
                strides: Any, padding: Any, W_init: Callable | None,  # noqa: N803
                b_init: Callable, transpose: bool) -> Layer:
    dn, filter_shape, strides = _conv_spec(layer, dimension_numbers, filter_shape, strides)
    lhs_spec, rhs_spec, out_spec = dn
    if isinstance(out_chan, bool) or not isinstance(out_chan, int) or out_chan <= 0:
        raise NumbaxValueError(f"stax.{layer}: out_chan is {out_chan!r}, expected a positive "
                               "int.")
    w_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

    def init_fun(rng, input_shape):
        input_shape = _check_shape(layer, input_shape, len(lhs_spec))
        sizes = iter(filter_shape)
        kernel_shape = tuple(out_chan if c == "O" else input_shape[lhs_spec.index("C")]
                             if c == "I" else next(sizes) for c in rhs_spec)
        shape_fn = lax.conv_transpose_shape_tuple if transpose else lax.conv_general_shape_tuple
        output_shape = shape_fn(input_shape, kernel_shape, strides, padding, dn)
        bias_shape = tuple(out_chan if c == "C" else 1 for c in out_spec)
        k1, k2 = _random().split(rng)
        return output_shape, (w_init(k1, kernel_shape), b_init(k2, bias_shape))

    def apply_fun(params, inputs, **kwargs):
        W, b = params  # noqa: N806
        if transpose:
            out = lax.conv_transpose(inputs, W, strides, padding, dimension_numbers=dn)
        else:
            out = lax.conv_general_dilated(inputs, W, strides, padding, dimension_numbers=dn)
        return out + b

    return init_fun, apply_fun


def GeneralConv(dimension_numbers: Any, out_chan: int, filter_shape: Any,  # noqa: N802
                strides: Any = None, padding: Any = "VALID", W_init: Callable | None = None,  # noqa: N803
                b_init: Callable = _BIAS_INIT) -> Layer:
    """A convolution layer (lax.conv_general_dilated + bias) in the given layout; W_init
    defaults to glorot_normal over the kernel's I and O axes, b_init to normal(1e-6)."""
    return _conv_layer("GeneralConv", dimension_numbers, out_chan, filter_shape, strides,
                       padding, W_init, b_init, transpose=False)


def GeneralConvTranspose(dimension_numbers: Any, out_chan: int, filter_shape: Any,  # noqa: N802
                         strides: Any = None, padding: Any = "VALID",
                         W_init: Callable | None = None,  # noqa: N803
                         b_init: Callable = _BIAS_INIT) -> Layer:
    """A transposed-convolution layer (lax.conv_transpose + bias) in the given layout."""
    return _conv_layer("GeneralConvTranspose", dimension_numbers, out_chan, filter_shape,
                       strides, padding, W_init, b_init, transpose=True)


Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))
Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))
ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))


def _pooling_layer(name: str, reducer: Callable, init_val: float,
                   average: bool = False) -> Callable[..., Layer]:
    def PoolingLayer(window_shape: Any, strides: Any = None, padding: Any = "VALID",  # noqa: N802
                     spec: str | None = None) -> Layer:
        try:
            window = tuple(operator.index(d) for d in window_shape)
            step = (1,) * len(window) if strides is None else tuple(
                operator.index(s) for s in strides)
        except TypeError:
            raise NumbaxTypeError(
                f"stax.{name}: window_shape is {window_shape!r} and strides {strides!r}, "
                "expected tuples of ints.") from None
        if len(step) != len(window):
            raise NumbaxValueError(
                f"stax.{name}: strides {step} and window_shape {window} need equal lengths.")
        if spec is not None and (len(spec) != len(window) + 2 or "N" not in spec
                                 or "C" not in spec):
            raise NumbaxValueError(
                f"stax.{name}: spec is {spec!r}, expected a layout string of length "
                f"{len(window) + 2} holding 'N' and 'C' (such as 'NHWC').")
        batch_feature = (0, len(window) + 1) if spec is None else (spec.index("N"),
                                                                   spec.index("C"))
        full_window, full_strides = list(window), list(step)
        for i in sorted(batch_feature):
            full_window.insert(i, 1)
            full_strides.insert(i, 1)
        full_window, full_strides = tuple(full_window), tuple(full_strides)

        def init_fun(rng, input_shape):
            input_shape = _check_shape(name, input_shape, len(full_window))
            pads = lax.padtype_to_pads(input_shape, full_window, full_strides, padding) \
                if isinstance(padding, str) else padding
            return lax.reduce_window_shape_tuple(input_shape, full_window, full_strides,
                                                 pads), ()

        def apply_fun(params, inputs, **kwargs):
            out = lax.reduce_window(inputs, init_val, reducer, full_window, full_strides,
                                    padding)
            if not average:
                return out
            # divide by how many real (unpadded) elements each window held
            spatial = tuple(d for i, d in enumerate(inputs.shape) if i not in batch_feature)
            counts = lax.reduce_window(jnp.ones(spatial, inputs.dtype), 0.0, lax.add, window,
                                       step, padding)
            return out / jnp.expand_dims(counts, sorted(batch_feature))

        return init_fun, apply_fun

    PoolingLayer.__name__ = PoolingLayer.__qualname__ = name
    PoolingLayer.__doc__ = (f"stax.{name}(window_shape, strides=None, padding='VALID', spec="
                            "None): a pooling layer over the spatial dims of `spec` (default: "
                            "all but the first and last).")
    return PoolingLayer


MaxPool = _pooling_layer("MaxPool", lax.max, -float("inf"))
SumPool = _pooling_layer("SumPool", lax.add, 0.0)
AvgPool = _pooling_layer("AvgPool", lax.add, 0.0, average=True)
