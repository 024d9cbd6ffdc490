"""jnp.ufunc: numpy's ufunc objects (call, reduce, accumulate, at, reduceat, outer) over
numbax functions, frompyfunc, and the ufunc forms of add, multiply, maximum, ... as JAX has."""
from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from numbax._src import dtypes
from numbax._src.core import get_aval
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.lax import elementwise as lax
from numbax._src.lax import reductions as lax_reductions
from numbax._src.lax import shape_ops
from numbax._src.numpy import reductions, ufuncs
from numbax._src.numpy.lax_numpy import asarray, canonicalize_axes, canonicalize_axis
from numbax._src.numpy.lax_numpy import where as _select

__all__ = [
    "ufunc", "frompyfunc", "add", "subtract", "multiply", "maximum", "minimum", "negative",
    "bitwise_and", "bitwise_or", "bitwise_xor", "logical_and", "logical_or", "logical_xor",
    "logaddexp", "logaddexp2",
]


class ufunc:  # noqa: N801  (numpy's and JAX's name)
    """A universal function: `func` applied elementwise with broadcasting, plus numpy's
    reduce/accumulate/at/reduceat/outer methods (specialised where a faster form exists,
    otherwise a scan over the axis).

    >>> add.reduce(asarray([[1, 2, 3], [4, 5, 6]]))
    Array([5, 7, 9], dtype=int64)
    """

    def __init__(self, func: Callable[..., Any], /, nin: int, nout: int, *,
                 name: str | None = None, nargs: int | None = None, identity: Any = None,
                 call: Callable | None = None, reduce: Callable | None = None,
                 accumulate: Callable | None = None, at: Callable | None = None,
                 reduceat: Callable | None = None) -> None:
        if not callable(func):
            raise NumbaxTypeError(f"numbax.numpy.ufunc: func has type {type(func).__name__}, "
                                  "expected a callable.")
        self.__doc__ = func.__doc__ or (
            f"numpy.{getattr(func, '__name__', 'ufunc')} as a jnp.ufunc (elementwise, with "
            "reduce/accumulate/at/reduceat/outer).")
        self.__name__ = name or getattr(func, "__name__", "ufunc")
        self._props = dict(func=func, nin=operator.index(nin), nout=operator.index(nout),
                           nargs=operator.index(nargs or nin), identity=identity, call=call,
                           reduce=reduce, accumulate=accumulate, at=at, reduceat=reduceat)

    nin = property(lambda self: self._props["nin"])
    nout = property(lambda self: self._props["nout"])
    nargs = property(lambda self: self._props["nargs"])
    identity = property(lambda self: self._props["identity"])

    def _key(self) -> tuple:
        return (self._props["func"], self.__name__, self.identity, self.nin, self.nout,
                self.nargs)

    def __hash__(self) -> int:
        return hash(self._key())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ufunc) and self._key() == other._key()

    def __repr__(self) -> str:
        return f"<jnp.ufunc '{self.__name__}'>"

    def __call__(self, *args: Any, out: None = None, where: None = None) -> Any:
        if out is not None:
            raise NumbaxValueError(f"{self}: out is not supported (arrays are immutable); use "
                                   "the returned value.")
        if where is not None:
            raise NumbaxValueError(f"{self}: where is not supported; combine the result with "
                                   "numbax.numpy.where.")
        if len(args) != self.nin:
            raise NumbaxTypeError(f"{self}: got {len(args)} arguments, expected {self.nin}.")
        call = self._props["call"]
        if call is not None:
            return call(*args)
        from numbax._src.numpy.vectorize import vectorize

        return vectorize(self._props["func"])(*args)

    def _binary(self, method: str) -> None:
        if self.nin != 2 or self.nout != 1:
            raise NumbaxValueError(f"{self}.{method}: only binary ufuncs with one output have "
                                   f"{method}; this one has nin={self.nin}, nout={self.nout}.")

    def _result_dtype(self, a: Any, dtype: Any) -> np.dtype:
        if dtype is not None:
            return dtypes.canonicalize_dtype(dtype, context=f"{self}")
        one = shape_ops.full((), 1, get_aval(a).dtype)
        return get_aval(asarray(self(one, one))).dtype

    def reduce(self, a: Any, axis: Any = 0, dtype: Any = None, out: None = None,
               keepdims: bool = False, initial: Any = None, where: Any = None) -> Any:
        """numpy.ufunc.reduce: folds the ufunc over `axis` (None: all; a tuple folds several,
        which numpy allows for reorderable ufuncs)."""
        self._binary("reduce")
        if out is not None:
            raise NumbaxValueError(f"{self}.reduce: out is not supported; use the result.")
        a = asarray(a)
        if where is not None:
            where = asarray(where)
            if get_aval(where).dtype != np.bool_:
                raise NumbaxTypeError(f"{self}.reduce: where has dtype {get_aval(where).dtype}, "
                                      "expected bool.")
            if self.identity is None and initial is None:
                raise NumbaxValueError(f"{self}.reduce: {self.__name__} has no identity, so a "
                                       "where mask needs initial=.")
        special = self._props["reduce"]
        if special is not None:
            return special(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial,
                           where=where)
        return self._reduce_by_scan(a, axis, dtype, keepdims, initial, where)

    def _reduce_by_scan(self, a: Any, axis: Any, dtype: Any, keepdims: bool, initial: Any,
                        where_: Any) -> Any:
        from numbax._src.lax.control_flow.loops import scan
        from numbax._src.numpy.shapes import moveaxis, reshape

        dtype = self._result_dtype(a, dtype)
        shape = get_aval(a).shape
        axes = canonicalize_axes(axis, len(shape), f"{self.__name__}.reduce")
        kept = tuple(d for i, d in enumerate(shape) if i not in axes)
        n = int(np.prod([shape[i] for i in axes], dtype=np.int64))
        x = reshape(moveaxis(a, axes, tuple(range(len(axes)))), (n,) + kept)
        if where_ is not None:
            mask = reshape(moveaxis(ufuncs.broadcast_to_shape(where_, shape), axes,
                                    tuple(range(len(axes)))), (n,) + kept)
        start = self.identity if initial is None else initial
        if start is None and n == 0:
            raise NumbaxValueError(f"{self}.reduce: zero-size array to a reduction with no "
                                   "identity; pass initial=.")
        x = lax.convert_element_type(x, dtype)
        if start is None:
            init = shape_ops.reshape(shape_ops.slice(x, (0,) + (0,) * len(kept), (1,) + kept),
                                     kept)
            x = shape_ops.slice(x, (1,) + (0,) * len(kept), (n,) + kept)
            mask = None if where_ is None else shape_ops.slice(
                mask, (1,) + (0,) * len(kept), (n,) + kept)
        else:
            init = shape_ops.full(kept, 0, dtype)
            init = ufuncs.add(init, lax.convert_element_type(asarray(start), dtype))

        def step(carry: Any, xs: Any) -> tuple[Any, None]:
            value = lax.convert_element_type(asarray(self(carry, xs[0])), dtype)
            return (value if xs[1] is None else _select(xs[1], value, carry)), None

        result, _ = scan(step, init, (x, None if where_ is None else mask))
        if keepdims:
            result = reshape(result, tuple(1 if i in axes else d for i, d in enumerate(shape)))
        return result

    def accumulate(self, a: Any, axis: int = 0, dtype: Any = None, out: None = None) -> Any:
        """numpy.ufunc.accumulate: the running fold along one axis."""
        self._binary("accumulate")
        if out is not None:
            raise NumbaxValueError(f"{self}.accumulate: out is not supported; use the result.")
        a = asarray(a)
        if axis is None or isinstance(axis, (tuple, list)):
            raise NumbaxValueError(f"{self}.accumulate: axis is {axis!r}, expected one int.")
        special = self._props["accumulate"]
        if special is not None:
            return special(a, axis=axis, dtype=dtype)
        from numbax._src.lax.control_flow.loops import scan
        from numbax._src.numpy.shapes import moveaxis

        dtype = self._result_dtype(a, dtype)
        ax = canonicalize_axis(axis, get_aval(a).ndim, f"{self.__name__}.accumulate")
        x = lax.convert_element_type(moveaxis(a, ax, 0), dtype)
        n = get_aval(x).shape[0]
        if n == 0:
            return lax.convert_element_type(a, dtype)
        rest = get_aval(x).shape[1:]
        first = shape_ops.reshape(shape_ops.slice(x, (0,) * (len(rest) + 1), (1,) + rest), rest)

        def step(carry: Any, xi: Any) -> tuple[Any, Any]:
            value = lax.convert_element_type(asarray(self(carry, xi)), dtype)
            return value, value

        _, tail = scan(step, first, shape_ops.slice(x, (1,) + (0,) * len(rest), (n,) + rest))
        out_ = shape_ops.concatenate([shape_ops.reshape(first, (1,) + rest), tail], 0)
        return moveaxis(out_, 0, ax)

    def at(self, a: Any, indices: Any, b: Any = None, /, *, inplace: bool = True) -> Any:
        """numpy.ufunc.at: a copy of `a` with the ufunc applied at `indices` (repeated indices
        apply repeatedly). Unlike numpy, pass inplace=False."""
        if inplace:
            raise NumbaxValueError(f"{self}.at: inplace is True, but arrays are immutable. Pass "
                                   "inplace=False to get the updated array back.")
        if (b is None) != (self.nin == 1):
            raise NumbaxTypeError(f"{self}.at: takes {'no' if self.nin == 1 else 'one'} operand "
                                  "b for a ufunc with nin={self.nin}.")
        special = self._props["at"]
        if special is not None:
            return special(a, indices) if b is None else special(a, indices, b)
        return self._at_by_loop(asarray(a), indices, b)

    def _at_by_loop(self, a: Any, indices: Any, b: Any) -> Any:
        from numbax._src.lax.control_flow.loops import fori_loop

        dtype = self._result_dtype(a, None)
        a = lax.convert_element_type(a, dtype)
        idx = indices if isinstance(indices, tuple) else (indices,)
        arrays = [asarray(i) for i in idx if not isinstance(i, slice) and i is not None
                  and i is not Ellipsis]
        shapes = [get_aval(i).shape for i in arrays]
        bshape = ufuncs.broadcast_shapes("ufunc.at", *shapes) if shapes else ()
        if not bshape:
            current = a.at[indices].get()
            new = self(current) if b is None else self(current, b)
            return a.at[indices].set(new)
        count = int(np.prod(bshape, dtype=np.int64))
        flat = [shape_ops.reshape(ufuncs.broadcast_to_shape(asarray(i), bshape), (count,))
                if not isinstance(i, slice) and i is not None and i is not Ellipsis else i
                for i in idx]
        if b is not None:
            b = asarray(b)
            tail = get_aval(b).shape[len(bshape):] if get_aval(b).ndim > len(bshape) else ()
            b = shape_ops.reshape(ufuncs.broadcast_to_shape(b, bshape + tail), (count,) + tail)

        def body(k: Any, acc: Any) -> Any:
            here = tuple(v[k] if not isinstance(v, slice) and v is not None
                         and v is not Ellipsis else v for v in flat)
            current = acc.at[here].get()
            new = self(current) if b is None else self(current, b[k])
            return acc.at[here].set(new)

        return fori_loop(0, count, body, a)

    def reduceat(self, a: Any, indices: Any, axis: int = 0, dtype: Any = None,
                 out: None = None) -> Any:
        """numpy.ufunc.reduceat: out[i] folds a[indices[i]:indices[i+1]] along axis (just
        a[indices[i]] where indices[i] >= indices[i+1]; the last runs to the end)."""
        self._binary("reduceat")
        if out is not None:
            raise NumbaxValueError(f"{self}.reduceat: out is not supported; use the result.")
        from numbax._src.lax.control_flow.loops import fori_loop
        from numbax._src.numpy.indexing import take
        from numbax._src.numpy.shapes import moveaxis

        a = asarray(a)
        if get_aval(a).ndim == 0:
            raise NumbaxValueError(f"{self}.reduceat: a has shape (), expected at least 1 "
                                   "dimension.")
        idx = asarray(indices)
        if get_aval(idx).ndim != 1 or kind_of(get_aval(idx).dtype) not in "iu":
            raise NumbaxValueError(f"{self}.reduceat: indices has shape {get_aval(idx).shape} "
                                   f"and dtype {get_aval(idx).dtype}, expected 1-d integers.")
        dtype = get_aval(a).dtype if dtype is None else dtypes.canonicalize_dtype(dtype)
        ax = canonicalize_axis(axis, get_aval(a).ndim, f"{self.__name__}.reduceat")
        x = lax.convert_element_type(moveaxis(a, ax, 0), dtype)
        n = get_aval(x).shape[0]
        idx = lax.convert_element_type(idx, np.int64)
        m = get_aval(idx).shape[0]
        start = shape_ops.reshape(idx, (m,) + (1,) * (get_aval(x).ndim - 1))
        nxt = shape_ops.concatenate([shape_ops.slice(idx, (1,), (m,)),
                                     shape_ops.full((1,), n, np.int64)], 0)
        stop = shape_ops.reshape(nxt, (m,) + (1,) * (get_aval(x).ndim - 1))
        acc = take(x, idx, axis=0, mode="clip")

        def body(i: Any, acc: Any) -> Any:
            row = shape_ops.reshape(take(x, shape_ops.reshape(i, (1,)), axis=0, mode="clip"),
                                    get_aval(x).shape[1:])
            inside = lax.bitwise_and(ufuncs.greater(i, start), ufuncs.less(i, stop))
            return _select(inside, lax.convert_element_type(asarray(self(acc, row)), dtype), acc)

        return moveaxis(fori_loop(0, n, body, acc), 0, ax)

    def outer(self, A: Any, B: Any, /) -> Any:  # noqa: N803
        """numpy.ufunc.outer: the ufunc of every pair, of shape A.shape + B.shape."""
        self._binary("outer")
        a, b = asarray(A), asarray(B)
        a = shape_ops.reshape(a, get_aval(a).shape + (1,) * get_aval(b).ndim)
        return self(a, b)


def frompyfunc(func: Callable[..., Any], /, nin: int, nout: int, *,
               identity: Any = None) -> ufunc:
    """numpy.frompyfunc, as JAX: a ufunc from a scalar function traceable by numbax
    (vectorized with vmap, unlike numpy's object arrays).

    >>> hypot = frompyfunc(lambda x, y: (x * x + y * y) ** 0.5, 2, 1)
    >>> hypot.outer(asarray([3.0]), asarray([4.0, 0.0]))
    Array([[5., 3.]], dtype=float64)
    """
    return ufunc(func, nin, nout, identity=identity)


# ----------------------------------------------------------------------------- jnp's ufuncs


def _direct(fn: Callable, takes_dtype: bool = True) -> Callable:
    """ufunc.reduce through the numpy reduction taking the same arguments."""
    def reduce(a: Any, *, axis: Any, dtype: Any, keepdims: bool, initial: Any,
               where: Any) -> Any:
        if takes_dtype:
            return fn(a, axis, dtype, keepdims=keepdims, initial=initial, where=where)
        out = fn(a, axis, keepdims=keepdims, initial=initial, where=where)
        return out if dtype is None else lax.convert_element_type(out, dtype)

    return reduce


def _logical(fn: Callable) -> Callable:
    def reduce(a: Any, *, axis: Any, dtype: Any, keepdims: bool, initial: Any,
               where: Any) -> Any:
        out = fn(ufuncs.asbool(asarray(a)), axis, keepdims=keepdims, where=where)
        if initial is not None:
            combine = ufuncs.logical_and if fn is reductions.all else ufuncs.logical_or
            out = combine(out, initial)
        return out if dtype is None else lax.convert_element_type(out, dtype)

    return reduce


def _bitwise(prim_fn: Callable, combine: Callable) -> Callable:
    def reduce(a: Any, *, axis: Any, dtype: Any, keepdims: bool, initial: Any,
               where: Any) -> Any:
        a = asarray(a)
        if kind_of(get_aval(a).dtype) not in "biu":
            raise NumbaxTypeError(f"numbax.numpy.{combine.__name__}.reduce: a has dtype "
                                  f"{get_aval(a).dtype}, expected integers or booleans.")
        fill = -1 if prim_fn is lax_reductions.reduce_and else 0
        if where is not None:
            a = _select(ufuncs.broadcast_to_shape(where, get_aval(a).shape), a,
                       lax.convert_element_type(fill, get_aval(a).dtype))
        shape = get_aval(a).shape
        axes = canonicalize_axes(axis, len(shape), f"{combine.__name__}.reduce")
        out = prim_fn(a, axes) if axes else a
        if keepdims:
            out = shape_ops.reshape(out, tuple(1 if i in axes else d for i, d in enumerate(shape)))
        if initial is not None:
            out = combine(out, initial)
        return out if dtype is None else lax.convert_element_type(out, dtype)

    return reduce


def _logsumexp(base2: bool) -> Callable:
    def reduce(a: Any, *, axis: Any, dtype: Any, keepdims: bool, initial: Any,
               where: Any) -> Any:
        from numbax._src.numpy.special import logsumexp

        (a,) = ufuncs.promote_dtypes_inexact("logaddexp.reduce", a)
        ln2 = lax.convert_element_type(np.log(2), get_aval(a).dtype)
        x = lax.mul(a, ln2) if base2 else a
        out = logsumexp(x, axis=axis, keepdims=keepdims, where=where)
        out = lax.div(out, ln2) if base2 else out
        if initial is not None:
            out = (ufuncs.logaddexp2 if base2 else ufuncs.logaddexp)(out, initial)
        return out if dtype is None else lax.convert_element_type(out, dtype)

    return reduce


def _cumulative(fn: Callable, upcast: bool = True) -> Callable:
    def accumulate(a: Any, *, axis: int, dtype: Any) -> Any:
        a = asarray(a)
        ax = canonicalize_axis(axis, get_aval(a).ndim, "accumulate")
        if upcast:
            return fn(a, ax, dtype)
        out = fn(a, axis=ax)
        return out if dtype is None else lax.convert_element_type(out, dtype)

    return accumulate


def _at(method: str, transform: Callable | None = None) -> Callable:
    def at(a: Any, indices: Any, b: Any) -> Any:
        values = transform(b) if transform is not None else b
        return getattr(asarray(a).at[indices], method)(values)

    return at


def _negative_at(a: Any, indices: Any) -> Any:
    a = asarray(a)
    return a.at[indices].set(ufuncs.negative(a.at[indices].get()))


def _make(fn: Callable, nin: int, identity: Any, **methods: Any) -> ufunc:
    return ufunc(fn, nin, 1, name=fn.__name__, identity=identity, call=fn, **methods)


add = _make(ufuncs.add, 2, 0, reduce=_direct(reductions.sum),
            accumulate=_cumulative(reductions.cumsum), at=_at("add"))
multiply = _make(ufuncs.multiply, 2, 1, reduce=_direct(reductions.prod),
                 accumulate=_cumulative(reductions.cumprod), at=_at("multiply"))
subtract = _make(ufuncs.subtract, 2, None, at=_at("add", ufuncs.negative))
maximum = _make(ufuncs.maximum, 2, None, reduce=_direct(reductions.max, False),
                accumulate=_cumulative(lax_reductions.cummax, False), at=_at("max"))
minimum = _make(ufuncs.minimum, 2, None, reduce=_direct(reductions.min, False),
                accumulate=_cumulative(lax_reductions.cummin, False), at=_at("min"))
negative = _make(ufuncs.negative, 1, None, at=_negative_at)
bitwise_and = _make(ufuncs.bitwise_and, 2, -1,
                    reduce=_bitwise(lax_reductions.reduce_and, ufuncs.bitwise_and))
bitwise_or = _make(ufuncs.bitwise_or, 2, 0,
                   reduce=_bitwise(lax_reductions.reduce_or, ufuncs.bitwise_or))
bitwise_xor = _make(ufuncs.bitwise_xor, 2, 0)
logical_and = _make(ufuncs.logical_and, 2, True, reduce=_logical(reductions.all))
logical_or = _make(ufuncs.logical_or, 2, False, reduce=_logical(reductions.any))
logical_xor = _make(ufuncs.logical_xor, 2, False)
logaddexp = _make(ufuncs.logaddexp, 2, -np.inf, reduce=_logsumexp(False))
logaddexp2 = _make(ufuncs.logaddexp2, 2, -np.inf, reduce=_logsumexp(True))
