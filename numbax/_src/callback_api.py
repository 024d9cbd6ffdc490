"""jax.pure_callback and jax.experimental.io_callback: a Python function called on concrete
arrays from inside traced programs (the primitives live in callbacks.py)."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from numbax._src import callbacks, core, dtypes
from numbax._src import tree_util as tu
from numbax._src.array import Array
from numbax._src.core import ShapedArray
from numbax._src.errors import NumbaxTypeError, NumbaxValueError


def to_user_array(x: Any) -> Array:
    """A concrete value as the numbax Array a callback receives."""
    return x if isinstance(x, Array) else Array._from_numpy(np.asarray(x))


callbacks.install_user_array(to_user_array)


class FlatCallback:
    """A user function of (args, kwargs) pytrees called with flat arrays: the callback param
    of the callback primitives. Equal for the same function and argument structure, as JAX's
    _FlatCallback, so equal calls give equal equations."""

    __slots__ = ("callback_func", "in_tree", "static_args", "returns")

    def __init__(self, callback_func: Callable, in_tree: tu.PyTreeDef,
                 static_args: tuple = (), returns: bool = True) -> None:
        self.callback_func = callback_func
        self.in_tree = in_tree
        self.static_args = static_args
        self.returns = returns

    def __call__(self, *flat_args: Any) -> list:
        leaves = callbacks.merge_static([to_user_array(x) for x in flat_args],
                                        self.static_args)
        args, kwargs = tu.tree_unflatten(self.in_tree, leaves)
        out = self.callback_func(*args, **kwargs)
        return tu.tree_leaves(out) if self.returns else []

    def _key(self) -> tuple:
        return (self.callback_func, self.in_tree, tuple(map(id, self.static_args)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FlatCallback) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash((self.callback_func, self.in_tree))

    def __repr__(self) -> str:
        return getattr(self.callback_func, "__name__", type(self.callback_func).__name__)


def split_args(api: str, args: tuple, kwargs: dict) -> tuple[tu.PyTreeDef, list, tuple]:
    """(in_tree, the array leaves, (position, value) of every other leaf): non-array leaves
    (strings, objects) reach the callback unchanged without being traced, as in JAX."""
    flat, in_tree = tu.tree_flatten((args, kwargs))
    dyn, static = [], []
    for i, x in enumerate(flat):
        if core.is_array_like(x):
            dyn.append(x)
        else:
            static.append((i, x))
    return in_tree, dyn, tuple(static)


def result_avals(api: str, result_shape_dtypes: Any) -> tuple[list[ShapedArray], Any]:
    """The flat avals promised by result_shape_dtypes (leaves with .shape and .dtype)."""
    leaves, tree = tu.tree_flatten(result_shape_dtypes)
    avals = []
    for i, leaf in enumerate(leaves):
        shape, dtype = getattr(leaf, "shape", None), getattr(leaf, "dtype", None)
        if shape is None or dtype is None:
            raise NumbaxTypeError(
                f"{api}: result_shape_dtypes leaf {i} is a {type(leaf).__name__}, expected an "
                "object with .shape and .dtype (e.g. numbax.ShapeDtypeStruct(shape, dtype)).")
        dtype = np.dtype(dtype)
        if dtypes.canonicalize_dtype(dtype) != dtype:
            raise NumbaxValueError(
                f"{api}: result_shape_dtypes leaf {i} has dtype {dtype}, which is 64-bit "
                "while jax_enable_x64 is disabled. Ask for the 32-bit dtype.")
        avals.append(ShapedArray(tuple(int(d) for d in shape), dtype))
    return avals, tree


def _check_callable(api: str, callback: Any) -> None:
    if not callable(callback):
        raise NumbaxTypeError(f"{api}: callback is a {type(callback).__name__}, expected a "
                              "callable.")


def pure_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args: Any,
                  sharding: Any = None, vmap_method: str | None = None, **kwargs: Any) -> Any:
    """Calls a pure Python function on concrete arrays from inside jit/vmap/scan.

    The callback receives Arrays (on the CPU) and returns a pytree of arrays matching
    `result_shape_dtypes`. It is assumed pure: under jit it runs at every call, it is
    skipped when nothing uses its result, and under vmap it runs as `vmap_method` says:
    "sequential" (once per example), "expand_dims" (once, unbatched inputs with a size-1
    leading axis), "broadcast_all" (once, every input with the batch axis) or
    "legacy_vectorized". Without a vmap_method, vmap raises NotImplementedError, as in JAX.
    Differentiating through it raises; wrap it in custom_jvp/custom_vjp.

    Args:
      callback: the Python function.
      result_shape_dtypes: pytree of objects with .shape and .dtype (ShapeDtypeStruct).
      *args, **kwargs: passed to the callback (array leaves as Arrays).
      sharding: accepted for JAX compatibility (numbax runs callbacks on the host).
      vmap_method: how vmap calls the callback (see above).

    Returns:
      The callback's results, as Arrays shaped like result_shape_dtypes.

    >>> import numbax, numpy as np
    >>> f = lambda x: numbax.pure_callback(np.sin, numbax.ShapeDtypeStruct((), np.float64), x)
    >>> float(numbax.jit(f)(0.5))
    0.479425538604203
    """
    _check_callable("pure_callback", callback)
    if vmap_method is not None and vmap_method not in callbacks.VMAP_METHODS:
        raise NumbaxValueError(
            f"pure_callback: vmap_method must be one of the allowed methods "
            f"{[*callbacks.VMAP_METHODS, None]}, but got: {vmap_method!r}")
    avals, out_tree = result_avals("pure_callback", result_shape_dtypes)
    in_tree, dyn, static = split_args("pure_callback", args, kwargs)
    outs = callbacks.pure_callback_p.bind(
        *dyn, callback=FlatCallback(callback, in_tree, static), result_avals=tuple(avals),
        sharding=sharding, vmap_method=vmap_method)
    return tu.tree_unflatten(out_tree, outs)


def io_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args: Any,
                sharding: Any = None, ordered: bool = False, **kwargs: Any) -> Any:
    """Calls an impure Python function (I/O, state) on concrete arrays from traced code.

    Unlike pure_callback it is never dropped, even when its result is unused; under vmap it
    runs once per example (an ordered one cannot be vmapped); it cannot be differentiated.
    numbax runs every callback of a program in program order, so `ordered=True` holds.

    >>> import numbax, numpy as np
    >>> seen = []
    >>> def log(x):
    ...     seen.append(float(x))
    ...     return np.float64(len(seen))
    >>> out = numbax.jit(lambda x: io_callback(log, numbax.ShapeDtypeStruct((), np.float64),
    ...                                        x))(2.0)
    >>> seen, float(out)
    ([2.0], 1.0)
    """
    _check_callable("io_callback", callback)
    avals, out_tree = result_avals("io_callback", result_shape_dtypes)
    in_tree, dyn, static = split_args("io_callback", args, kwargs)
    outs = callbacks.io_callback_p.bind(
        *dyn, callback=FlatCallback(callback, in_tree, static), result_avals=tuple(avals),
        sharding=sharding, ordered=bool(ordered))
    return tu.tree_unflatten(out_tree, outs)


def flat_callbacks(api: str, callback: Callable, args: Sequence, kwargs: dict):
    """(flat array args, FlatCallback that returns nothing) for the debug callbacks."""
    _check_callable(api, callback)
    in_tree, dyn, static = split_args(api, tuple(args), kwargs)
    return dyn, FlatCallback(callback, in_tree, static, returns=False)


def effects_barrier() -> None:
    """Waits until every callback issued so far (jax.debug.callback, io_callback...) has run,
    as JAX's jax.effects_barrier.

    numbax runs callbacks synchronously, inside the call that issues them (the compiled driver
    calls them between kernels), so by the time this is reached they have all run.

    >>> import numbax
    >>> numbax.effects_barrier()
    """
