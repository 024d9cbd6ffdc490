"""Operators and methods shared by Array and Tracer, all dispatching to numbax.numpy."""
from __future__ import annotations

from numbax._src import core
from numbax._src.array import Array


def _jnp():
    import numbax.numpy as jnp  # the numpy layer sits above Array

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


def _astype(self, dtype, copy=False):
    return _jnp().asarray(self, dtype=dtype) if not copy else _jnp().array(self, dtype=dtype)


_METHODS = (
    "sum", "mean", "max", "min", "prod", "argmax", "argmin", "std", "var", "all", "any",
    "cumsum", "cumprod", "ravel", "squeeze", "clip", "round", "dot", "conj", "conjugate",
    "swapaxes", "flatten", "nonzero", "sort", "argsort", "take", "repeat", "trace",
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
    cls.__getitem__ = lambda self, idx: _jnp()._getitem(self, idx)
    cls.T = property(lambda self: _jnp().transpose(self))
    cls.mT = property(lambda self: _jnp().swapaxes(self, -1, -2))
    cls.real = property(lambda self: _jnp().real(self))
    cls.imag = property(lambda self: _jnp().imag(self))
    cls.at = property(lambda self: _jnp()._IndexUpdateHelper(self))
    cls.__round__ = lambda self, ndigits=None: _jnp().round(self, ndigits or 0)


# numpy functions called on tracers dispatch to numbax.numpy: plain-numpy code traces.
_UFUNC_ALIASES = {"divide": "true_divide", "abs": "absolute"}


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    if method != "__call__" or kwargs.get("out") is not None:
        return NotImplemented
    fn = getattr(_jnp(), _UFUNC_ALIASES.get(ufunc.__name__, ufunc.__name__), None)
    if fn is None:
        return NotImplemented
    return fn(*inputs, **kwargs)


def _array_function(self, func, types, args, kwargs):
    fn = getattr(_jnp(), func.__name__, None)
    if fn is None or fn is func:
        return NotImplemented
    return fn(*args, **kwargs)


_install(Array)
_install(core.Tracer)
core.Tracer.__array_ufunc__ = _array_ufunc
core.Tracer.__array_function__ = _array_function

