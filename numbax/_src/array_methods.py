"""Operators and methods shared by Array and Tracer, all dispatching to numbax.numpy."""
from __future__ import annotations

from typing import Any

from numbax._src import core
from numbax._src.array import Array


def _jnp():
    from numbax._src import jnp  # the numpy layer sits above Array

    return jnp


def _forward(name: str, swap: bool = False):
    def method(self, other):
        fn = getattr(_jnp(), name)
        if not core.is_array_like(other) and not isinstance(other, (list, tuple)):
            return NotImplemented
        return fn(other, self) if swap else fn(self, other)

    method.__name__ = name
    return method


_BINARY = {
    "add": "add", "sub": "subtract", "mul": "multiply", "truediv": "true_divide",
    "floordiv": "floor_divide", "mod": "remainder", "pow": "power", "matmul": "matmul",
    "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor", "lshift": "left_shift",
    "rshift": "right_shift", "divmod": "divmod",
}
_COMPARE = {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal",
            "gt": "greater", "ge": "greater_equal"}
_UNARY = {"neg": "negative", "pos": "positive", "abs": "absolute", "invert": "invert"}


def _method(name: str):
    def method(self, *args, **kwargs):
        return getattr(_jnp(), name)(self, *args, **kwargs)

    method.__name__ = name
    return method


def _reshape(self, *shape, order="C"):
    if len(shape) == 1 and not isinstance(shape[0], int):
        shape = shape[0]
    return _jnp().reshape(self, shape, order=order)


def _transpose(self, *axes):
    if len(axes) == 1 and not isinstance(axes[0], int):
        axes = axes[0]
    return _jnp().transpose(self, axes or None)


def _compress(self, condition, axis=None, *, size=None, fill_value=0, out=None):
    return _jnp().compress(condition, self, axis, size=size, fill_value=fill_value, out=out)


def _astype(self, dtype, copy=False):
    return _jnp().asarray(self, dtype=dtype) if not copy else _jnp().array(self, dtype=dtype)


def _view(self, dtype=None, type=None):  # noqa: A002 - numpy's name
    """ndarray.view as JAX's: the same bits as `dtype`; a narrower dtype multiplies the last
    axis, a wider one divides it (bools travel as uint8)."""
    import numpy as np

    from numbax._src import dtypes
    from numbax._src.lax import convert

    if type is not None:
        raise NotImplementedError("numbax.Array.view: the `type` argument is not supported "
                                  "(as in JAX); pass only a dtype.")
    if dtype is None:
        return self
    new = dtypes.canonicalize_dtype(dtype, context="numbax.Array.view")
    x = self.astype(np.uint8) if self.dtype == np.bool_ else self
    target = np.dtype(np.uint8) if new == np.bool_ else new
    old_size, new_size = x.dtype.itemsize, target.itemsize
    if old_size != new_size and (x.ndim == 0 or (x.shape[-1] * old_size) % new_size):
        raise ValueError(f"numbax.Array.view: an array of shape {self.shape} and dtype "
                         f"{self.dtype} cannot be viewed as {new}: the last axis must hold a "
                         f"whole number of {new} items ({new_size} bytes each).")
    if new_size > old_size:
        x = x.reshape(*x.shape[:-1], x.shape[-1] * old_size // new_size, new_size // old_size)
    out = convert.bitcast_convert_type(x, target)
    if new_size < old_size:
        out = out.reshape(*out.shape[:-2], out.shape[-2] * out.shape[-1])
    return out.astype(np.bool_) if new == np.bool_ else out


def _byteswap(self, inplace=False):
    """ndarray.byteswap: each element's bytes in reverse order (never in place: arrays are
    immutable, as in JAX)."""
    import numpy as np

    if inplace:
        raise TypeError("numbax.Array.byteswap: inplace=True is not supported (arrays are "
                        "immutable, as in JAX); use the returned array.")
    size = self.dtype.itemsize // (2 if self.dtype.kind == "c" else 1)  # (complex: each part)
    if size == 1:
        return self
    reversed_bytes = _view(self.reshape(-1), np.uint8).reshape(-1, size)[:, ::-1]
    return _view(reversed_bytes.reshape(-1), self.dtype).reshape(self.shape)


def _flat(self):
    raise NotImplementedError("numbax Arrays do not implement the arr.flat property (as JAX "
                              "Arrays): consider arr.flatten() instead.")


_METHODS = (
    "sum", "mean", "max", "min", "prod", "argmax", "argmin", "std", "var", "all", "any",
    "cumsum", "cumprod", "ravel", "squeeze", "clip", "round", "dot", "conj", "conjugate",
    "swapaxes", "flatten", "nonzero", "sort", "argsort", "take", "repeat", "trace",
    "diagonal", "ptp", "searchsorted", "choose", "argpartition",
)


def _install(cls: type) -> None:
    for dunder, name in _BINARY.items():
        setattr(cls, f"__{dunder}__", _forward(name))
        setattr(cls, f"__r{dunder}__", _forward(name, swap=True))
    for dunder, name in _COMPARE.items():
        setattr(cls, f"__{dunder}__", _forward(name))
    for dunder, name in _UNARY.items():
        setattr(cls, f"__{dunder}__", _method(name))
    for name in _METHODS:
        setattr(cls, name, _method(name))
    cls.flatten = _method("ravel")
    cls.reshape = _reshape
    cls.transpose = _transpose
    cls.astype = _astype
    cls.compress = _compress
    cls.view = _view
    cls.byteswap = _byteswap
    cls.flat = property(_flat)
    cls.__getitem__ = lambda self, idx: _jnp()._getitem(self, idx)
    cls.T = property(lambda self: _jnp().transpose(self))
    cls.mT = property(lambda self: _jnp().swapaxes(self, -1, -2))
    cls.real = property(lambda self: _jnp().real(self))
    cls.imag = property(lambda self: _jnp().imag(self))
    cls.at = property(lambda self: _jnp()._IndexUpdateHelper(self))
    cls.__round__ = _operator_round


def _operator_round(self: Any, ndigits: int | None = None) -> Any:
    """round(x[, ndigits]) as in JAX: without ndigits (as round(7.5) of a float gives an
    int) the rounded array converted to the default integer dtype, of any shape."""
    out = _jnp().round(self, ndigits or 0)
    return out.astype(int) if ndigits is None else out


# numpy functions on tracers dispatch to numbax.numpy, so plain-numpy code traces. On concrete
# Arrays a function numbax.numpy lacks runs in numpy on the buffers; on tracers it is an error
# (numpy cannot compute with a value that does not exist yet).
_UFUNC_ALIASES = {"divide": "true_divide", "abs": "absolute"}
_NAMESPACES = {"numpy": "", "numpy.linalg": "linalg"}


def _numbax_equivalent(module: str | None, name: str):
    sub = _NAMESPACES.get(module or "numpy")
    if sub is None:
        return None
    namespace = _jnp() if not sub else getattr(_jnp(), sub, None)
    return getattr(namespace, name, None)


def _to_numpy_tree(tree):
    from numbax._src import tree_util

    return tree_util.tree_map(lambda x: x._value if isinstance(x, Array) else x, tree)


def _unsupported(kind: str, name: str, self) -> TypeError:
    from numbax._src.errors import NumbaxTypeError

    return NumbaxTypeError(
        f"numpy.{name} ({kind}) was called on a traced value ({self._describe()}), and "
        f"numbax.numpy has no {name}. Rewrite that step with numbax.numpy / numbax.lax "
        "functions, or compute it outside the transformed function."
    )


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    name = _UFUNC_ALIASES.get(ufunc.__name__, ufunc.__name__)
    fn = _numbax_equivalent("numpy", name) if method == "__call__" else None
    if fn is not None and kwargs.get("out") is None:
        return fn(*inputs, **kwargs)
    if isinstance(self, core.Tracer):
        raise _unsupported(f"ufunc method {method!r}", name, self)
    return getattr(ufunc, method)(*_to_numpy_tree(inputs), **_to_numpy_tree(kwargs))


def _array_function(self, func, types, args, kwargs):
    fn = _numbax_equivalent(func.__module__, func.__name__)
    if fn is not None and fn is not func:
        return fn(*args, **kwargs)
    if isinstance(self, core.Tracer):
        raise _unsupported("function", func.__name__, self)
    return func(*_to_numpy_tree(args), **_to_numpy_tree(kwargs))


_install(Array)
_install(core.Tracer)
for _cls in (Array, core.Tracer):
    _cls.__array_ufunc__ = _array_ufunc
    _cls.__array_function__ = _array_function
