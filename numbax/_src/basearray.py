"""numbax.Array as users see it: the abstract type that concrete arrays, GPU arrays, key arrays
and tracers all are (isinstance(x, numbax.Array) holds inside jit/grad/vmap too, as in JAX),
and typeof, the abstract value of a value."""
from __future__ import annotations

import abc
from typing import Any

from numbax._src import array, core, prng
from numbax._src.errors import NumbaxTypeError


class Array(abc.ABC):  # noqa: B024 - a registration-only base, as jax.Array
    """The type of numbax arrays, for annotations and isinstance checks.

    Concrete Arrays (CPU and GPU), typed PRNG key arrays and the tracers that stand for arrays
    inside jit, grad and vmap are all instances. Create arrays with numbax.numpy functions
    (numbax.numpy.asarray), not by calling this class.
    """

    __slots__ = ()


Array.__module__ = "numbax"
Array.register(array.Array)
Array.register(core.Tracer)
Array.register(prng.PRNGKeyArray)


def typeof(x: Any) -> core.ShapedArray:
    """The abstract value of `x`: its shape, dtype and weak type.

    >>> import numbax, numbax.numpy as jnp
    >>> numbax.typeof(jnp.ones((2, 3), jnp.float32))
    ShapedArray(float32[2,3])
    """
    if isinstance(x, prng.PRNGKeyArray):  # JAX's key<fry>[...] type
        return core.ShapedArray(x.shape, x.dtype)
    if not core.is_array_like(x):
        raise NumbaxTypeError(f"numbax.typeof: x of type {type(x).__name__} is not a valid "
                              "numbax type; pass an array or a Python/numpy scalar.")
    return core.get_aval(x)
