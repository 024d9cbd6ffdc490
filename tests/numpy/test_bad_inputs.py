"""Every public numbax.numpy function refuses non-numeric data with a TypeError."""
import numpy as np
import pytest

import numbax.numpy as jnp

S = np.array(["a", "b", "c"])  # a str array: numpy's dtype '<U1'
OBJ = np.array([object(), object(), object()], dtype=object)
V = np.arange(3.0)

UNARY = [
    "abs", "sin", "exp", "sqrt", "negative", "isnan", "isfinite", "sum", "prod", "mean", "var",
    "std", "max", "min", "argmax", "argmin", "all", "any", "cumsum", "cumprod", "nansum",
    "nanmean", "nanmax", "nanmin", "nanvar", "nanstd", "nanprod", "median", "ptp", "average",
    "count_nonzero", "ravel", "transpose", "squeeze", "atleast_1d", "atleast_2d", "atleast_3d",
    "flip", "flipud", "sort", "argsort", "diff", "ediff1d", "unique", "nonzero", "argwhere",
    "flatnonzero", "asarray", "array", "zeros_like", "ones_like", "empty_like", "diag",
    "diagflat", "round", "around", "nan_to_num", "real", "imag", "sign", "floor", "trunc",
    "cumulative_sum", "cumulative_prod", "nancumsum", "nancumprod", "logical_not", "invert",
    "signbit", "isposinf", "isneginf", "angle", "isreal", "iscomplex", "square",
]
BINARY = [
    "add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "equal", "less",
    "logaddexp", "logaddexp2", "fmax", "fmin", "arctan2", "hypot", "isclose", "allclose",
    "array_equal", "dot", "matmul", "vdot", "inner", "outer", "kron", "searchsorted",
    "floor_divide", "remainder", "fmod", "copysign", "heaviside", "logical_and",
]


@pytest.mark.parametrize("bad", [S, OBJ], ids=["str", "object"])
@pytest.mark.parametrize("name", UNARY)
def test_unary_refuses_non_numeric(name, bad):
    with pytest.raises(TypeError):
        getattr(jnp, name)(bad)


@pytest.mark.parametrize("bad", [S, OBJ], ids=["str", "object"])
@pytest.mark.parametrize("name", BINARY)
def test_binary_refuses_non_numeric(name, bad):
    with pytest.raises(TypeError):
        getattr(jnp, name)(bad, V)
    with pytest.raises(TypeError):
        getattr(jnp, name)(V, bad)


@pytest.mark.parametrize("call", [
    lambda b: jnp.reshape(b, (3,)), lambda b: jnp.swapaxes(b, 0, 0),
    lambda b: jnp.moveaxis(b, 0, 0), lambda b: jnp.expand_dims(b, 0),
    lambda b: jnp.broadcast_to(b, (2, 3)), lambda b: jnp.broadcast_arrays(b, V),
    lambda b: jnp.concatenate([b, V]), lambda b: jnp.stack([b, V]), lambda b: jnp.hstack([b]),
    lambda b: jnp.vstack([b]), lambda b: jnp.dstack([b]), lambda b: jnp.column_stack([b]),
    lambda b: jnp.split(b, 3), lambda b: jnp.array_split(b, 2), lambda b: jnp.tile(b, 2),
    lambda b: jnp.repeat(b, 2), lambda b: jnp.roll(b, 1), lambda b: jnp.rot90(b[None]),
    lambda b: jnp.fliplr(b[None]), lambda b: jnp.pad(b, 1), lambda b: jnp.append(b, V),
    lambda b: jnp.where(V > 0, b, V), lambda b: jnp.select([V > 0], [b]),
    lambda b: jnp.clip(b, 0, 1), lambda b: jnp.full((2,), b[0]),
    lambda b: jnp.full_like(V, b[0]), lambda b: jnp.linspace(b[0], 1.0),
    lambda b: jnp.logspace(b[0], 1.0), lambda b: jnp.geomspace(b[0], 1.0),
    lambda b: jnp.tril(b[None]), lambda b: jnp.triu(b[None]), lambda b: jnp.trace(b[None]),
    lambda b: jnp.diagonal(b[None]), lambda b: jnp.meshgrid(b, V),
    lambda b: jnp.tensordot(b, V, 1), lambda b: jnp.einsum("i,i", b, V),
    lambda b: jnp.cross(b, V), lambda b: jnp.quantile(b, 0.5), lambda b: jnp.percentile(b, 5),
    lambda b: jnp.lexsort([b]), lambda b: jnp.interp(b, V, V), lambda b: jnp.astype(b, float),
    lambda b: jnp.array_equiv(b, V), lambda b: jnp.vecdot(b, V), lambda b: jnp.gcd(b, 2),
    lambda b: jnp.result_type(b), lambda b: jnp.arange(b[0]),
], ids=lambda c: "call")
@pytest.mark.parametrize("bad", [S, OBJ], ids=["str", "object"])
def test_other_functions_refuse_non_numeric(call, bad):
    with pytest.raises(TypeError):
        call(bad)


@pytest.mark.parametrize("name,args", [
    ("zeros", ((2,), object)), ("ones", ((2,), "U3")), ("empty", ((2,), "S2")),
    ("full", ((2,), 1, object)), ("eye", (2, None, 0, object)), ("identity", (2, "U1")),
    ("tri", (2, None, 0, object)), ("arange", (3, None, None, object)), ("indices", ((2,), "U1")),
    ("linspace", (0, 1, 3, True, False, object)), ("dtype", (object,)),
])
def test_constructors_refuse_non_numeric_dtypes(name, args):
    with pytest.raises(TypeError, match="not supported|not a dtype"):
        getattr(jnp, name)(*args)
