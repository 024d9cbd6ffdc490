"""numpy's dtype surface: scalar types, abstract classes, predicates, finfo/iinfo, constants."""
from __future__ import annotations

from typing import Any

import numpy as np

from numbax._src import basearray, core, dtypes
from numbax._src.array import Array
from numbax._src.dtypes import finfo_of, kind_of
from numbax._src.errors import NumbaxDTypeError, NumbaxTypeError

__all__ = [
    "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64", "complex64", "complex128", "int_", "uint",
    "float_", "complex_", "double", "single", "cdouble", "csingle",
    "generic", "number", "inexact", "floating", "complexfloating", "integer", "signedinteger",
    "unsignedinteger", "dtype", "issubdtype", "isdtype", "result_type", "promote_types",
    "can_cast", "finfo", "iinfo", "newaxis", "pi", "e", "inf", "nan", "euler_gamma", "ndarray",
    "iscomplexobj", "isrealobj", "issubsctype", "character", "flexible", "object_",
    "ComplexWarning", "isscalar", "iterable",
]


class _ScalarMeta(type):
    """A numpy scalar type that builds numbax Arrays when called: jnp.float32(1.0)."""

    dtype: np.dtype

    def __hash__(cls) -> int:
        return hash(cls.dtype.type)

    def __eq__(cls, other: object) -> bool:
        return other is cls or other == cls.dtype.type

    def __ne__(cls, other: object) -> bool:
        return not cls == other

    def __call__(cls, x: Any) -> Any:
        from numbax._src.numpy.lax_numpy import asarray

        return asarray(x, dtype=cls.dtype)

    def __instancecheck__(cls, instance: object) -> bool:
        return isinstance(instance, cls.dtype.type)

    def __repr__(cls) -> str:
        return f"numbax.numpy.{cls.__name__}"


def _make_scalar_type(name: str, np_type: type) -> type:
    return _ScalarMeta(name, (), {"dtype": np.dtype(np_type), "__module__": "numbax.numpy"})


bool_ = _make_scalar_type("bool_", np.bool_)
int8 = _make_scalar_type("int8", np.int8)
int16 = _make_scalar_type("int16", np.int16)
int32 = _make_scalar_type("int32", np.int32)
int64 = _make_scalar_type("int64", np.int64)
uint8 = _make_scalar_type("uint8", np.uint8)
uint16 = _make_scalar_type("uint16", np.uint16)
uint32 = _make_scalar_type("uint32", np.uint32)
uint64 = _make_scalar_type("uint64", np.uint64)
float16 = _make_scalar_type("float16", np.float16)
bfloat16 = _make_scalar_type("bfloat16", dtypes.bfloat16.type)
float32 = single = _make_scalar_type("float32", np.float32)
float64 = double = _make_scalar_type("float64", np.float64)
complex64 = csingle = _make_scalar_type("complex64", np.complex64)
complex128 = cdouble = _make_scalar_type("complex128", np.complex128)
int_ = int64
uint = uint64
float_ = float64
complex_ = complex128

# The abstract classes are numpy's own, so np.issubdtype and isinstance work with both.
generic = np.generic
number = np.number
inexact = np.inexact
floating = np.floating
complexfloating = np.complexfloating
integer = np.integer
signedinteger = np.signedinteger
unsignedinteger = np.unsignedinteger
character = np.character
flexible = np.flexible
object_ = np.object_  # numpy's type, as JAX exports it (numbax arrays hold no objects)
ComplexWarning = np.exceptions.ComplexWarning
iterable = np.iterable

newaxis = None
pi = np.pi
e = np.e
inf = np.inf
nan = np.nan
euler_gamma = np.euler_gamma
ndarray = basearray.Array  # the public type: arrays and tracers, as jax.Array


def _np_type(x: Any) -> Any:
    """What numpy's dtype predicates accept for `x` (numbax scalar types become numpy ones)."""
    if isinstance(x, _ScalarMeta):
        return x.dtype.type
    if isinstance(x, (Array, core.Tracer)):
        return x.dtype
    return x


def dtype(dtype: Any, align: bool = False, copy: bool = False) -> np.dtype:  # noqa: A002
    """numpy.dtype, canonicalised (64-bit types narrow when x64 is off)."""
    if dtype is None:
        return dtypes.default_float_dtype()
    return dtypes.canonicalize_dtype(_np_type(dtype), context="numbax.numpy.dtype")


def issubdtype(arg1: Any, arg2: Any) -> bool:
    """numpy.issubdtype, accepting numbax scalar types and arrays' dtypes (bfloat16 is a
    floating type)."""
    return dtypes.issubdtype(_np_type(arg1), _np_type(arg2))


issubsctype = issubdtype


def isdtype(dtype: Any, kind: Any) -> bool:  # noqa: A002
    """numpy.isdtype (the array-API predicate)."""
    dt = np.dtype(_np_type(dtype))
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if dt == dtypes.bfloat16:  # numpy does not know it as a float: ask as float16 would
        return any(np.dtype(_np_type(k)) == dt if not isinstance(k, str) else
                   np.isdtype(dtypes.float16, k) for k in kinds)
    return np.isdtype(dt, tuple(_np_type(k) if not isinstance(k, str) else k for k in kinds))


def _dtype_and_weak(x: Any, api: str) -> tuple[np.dtype, bool]:
    if isinstance(x, (core.Tracer, Array, np.ndarray, np.generic, int, float, complex)):
        aval = core.get_aval(x)
        return aval.dtype, aval.weak_type
    if isinstance(x, (list, tuple)):
        return core.get_aval(np.asarray(x)).dtype, False
    try:
        return dtypes.canonicalize_dtype(_np_type(x), context=f"numbax.numpy.{api}"), False
    except NumbaxTypeError:
        raise NumbaxTypeError(
            f"numbax.numpy.{api}: argument {x!r} of type {type(x).__name__} is neither an array "
            "nor a dtype. Pass arrays, Python scalars or numeric dtypes."
        ) from None


def result_type(*args: Any) -> np.dtype:
    """jnp.result_type: JAX's type promotion lattice, Python scalars weak, narrowed to 32 bits
    when x64 is off."""
    if not args:
        raise NumbaxTypeError("numbax.numpy.result_type: got no arguments, expected at least "
                              "one array or dtype.")
    key_dtypes = {getattr(x, "dtype", x) for x in args
                  if dtypes.is_extended_dtype(getattr(x, "dtype", x))}
    if key_dtypes:  # key arrays (or their dtype) only promote with themselves, as in JAX
        if len(key_dtypes) == 1 and all(dtypes.is_extended_dtype(getattr(x, "dtype", x))
                                        for x in args):
            return key_dtypes.pop()
        raise NumbaxDTypeError(
            "numbax.numpy.result_type: arguments mix dtype key<fry> (key arrays) with other "
            "dtypes, expected key<fry> alone; key dtypes take part in no type promotion."
        )
    dtype_out, _ = dtypes.result_type(*[_dtype_and_weak(x, "result_type") for x in args])
    return dtype_out


def promote_types(type1: Any, type2: Any) -> np.dtype:
    """jnp.promote_types: the join of two types on JAX's type promotion lattice, not narrowed
    under x64 off (`promote_types(int64, int8)` is int64 there too, as in JAX). The builtin
    types int, float and complex are weak: they keep a typed counterpart's width
    (`promote_types('uint8', int)` is uint8, where numpy gives int64); int32 with float32 is
    float32, where numpy gives float64."""
    return dtypes.lattice_join([_promotion_operand(type1), _promotion_operand(type2)])[0]


_BUILTIN_DTYPES = {int: np.dtype(np.int64), float: np.dtype(np.float64),
                   complex: np.dtype(np.complex128)}


def _promotion_operand(t: Any) -> tuple[np.dtype, bool]:
    """(dtype, weak) for promote_types: the builtin scalar types stand for weak values
    (tested by identity: np.dtype('int64') == int is True)."""
    for builtin, dtype in _BUILTIN_DTYPES.items():
        if t is builtin:
            return dtype, True
    return dtypes.checked_dtype(_np_type(t), context="numbax.numpy.promote_types"), False


def can_cast(from_: Any, to: Any, casting: str = "safe") -> bool:
    """numpy.can_cast on dtypes (or arrays' dtypes)."""
    src = _dtype_and_weak(from_, "can_cast")[0]
    return bool(np.can_cast(src, np.dtype(_np_type(to)), casting=casting))


def finfo(dtype: Any) -> np.finfo:  # noqa: A002
    """numpy.finfo of the canonical dtype."""
    dt = _dtype_and_weak(dtype, "finfo")[0] if not isinstance(dtype, type) else dtype
    dt = dtypes.canonicalize_dtype(_np_type(dt), context="numbax.numpy.finfo")
    if dt == dtypes.bfloat16:
        return dtypes.finfo(dt)
    if kind_of(dt) not in "fc":
        raise NumbaxTypeError(f"numbax.numpy.finfo: dtype {dt} is not inexact, expected a "
                              "floating or complex dtype. Use numbax.numpy.iinfo for integers.")
    return finfo_of(dt)


def iinfo(int_type: Any) -> np.iinfo:
    """numpy.iinfo of the canonical dtype."""
    dt = int_type if isinstance(int_type, type) else _dtype_and_weak(int_type, "iinfo")[0]
    dt = dtypes.canonicalize_dtype(_np_type(dt), context="numbax.numpy.iinfo")
    if kind_of(dt) not in "iu":
        raise NumbaxTypeError(f"numbax.numpy.iinfo: dtype {dt} is not an integer dtype. "
                              "Use numbax.numpy.finfo for floats.")
    return np.iinfo(dt)


def iscomplexobj(x: Any) -> bool:
    return _dtype_and_weak(x, "iscomplexobj")[0].kind == "c"  # bfloat16 ("V") is real


def isrealobj(x: Any) -> bool:
    return not iscomplexobj(x)


def isscalar(element: Any) -> bool:
    """numpy.isscalar, as JAX: True also for 0-d arrays (numbax, numpy, traced), since a
    Python scalar becomes a 0-d array under jit.

    >>> isscalar(1.0), isscalar(np.array(2)), isscalar(np.ones(2))
    (True, True, False)
    """
    if np.isscalar(element):
        return True
    if isinstance(element, (np.ndarray, Array, core.Tracer)):
        return core.get_aval(element).ndim == 0
    return False
