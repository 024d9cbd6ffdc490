"""dtype rules: JAX's type promotion lattice with weak Python scalars, x64 canonicalisation, the
jax_numpy_dtype_promotion / jax_numpy_rank_promotion checks, and jax.dtypes' helpers."""
from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import ml_dtypes
import numpy as np

from numbax._src.config import config
from numbax._src.errors import (
    NumbaxOverflowError,
    NumbaxTypeError,
    NumbaxValueError,
    ShapeDtypeError,
    TypePromotionError,
)

bool_ = np.dtype(np.bool_)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)
# bfloat16 is ml_dtypes' numpy dtype (JAX's own): numpy sees kind "V", so numbax asks kind_of.
bfloat16 = np.dtype(ml_dtypes.bfloat16)

# float0 is JAX's dtype for tangents of integer values: zero-sized, carries no data.
float0 = np.dtype([("float0", np.void, 0)])

_X64_TO_X32 = {int64: int32, uint64: uint32, float64: float32, complex128: complex64}
_SUPPORTED_KINDS = "biufc"

# Printed names in jaxprs (JAX's short forms).
_SHORT_NAMES = {
    bool_: "bool", int8: "i8", int16: "i16", int32: "i32", int64: "i64",
    uint8: "u8", uint16: "u16", uint32: "u32", uint64: "u64",
    float16: "f16", float32: "f32", float64: "f64", complex64: "c64", complex128: "c128",
    bfloat16: "bf16",
}


def kind_of(dtype: np.dtype) -> str:
    """dtype.kind ("b", "i", "u", "f", "c"), with bfloat16 a float: numpy calls it "V"."""
    kind = dtype.kind
    return "f" if kind == "V" and dtype == bfloat16 else kind


def short_name(dtype: np.dtype) -> str:
    try:
        name = _SHORT_NAMES.get(dtype)  # the common case first: printing is on jit's path
    except TypeError:  # an unhashable dtype-like
        name = None
    if name is not None:
        return name
    if dtype == float0:
        return "float0"
    if is_extended_dtype(dtype):
        return str(dtype)
    return _SHORT_NAMES.get(np.dtype(dtype), str(dtype))


_NUMERIC = frozenset(_SHORT_NAMES)  # the native numeric dtypes: canonical but for x64


def canonicalize_dtype(dtype: Any, *, context: str = "numbax") -> np.dtype:
    """Checks that `dtype` is a numeric dtype, in the machine's byte order, narrowed to 32 bits
    when x64 is off."""
    # (on every operation's path: a native numeric dtype needs no checks)
    dt = dtype if isinstance(dtype, np.dtype) and dtype in _NUMERIC else checked_dtype(
        dtype, context=context)
    if not config.hot("jax_enable_x64"):
        return _X64_TO_X32.get(dt, dt)
    return dt


def checked_dtype(dtype: Any, *, context: str = "numbax") -> np.dtype:
    """`dtype` checked to be a numeric dtype, in the machine's byte order, not narrowed."""
    try:
        dt = np.dtype(dtype)
    except TypeError as err:
        raise NumbaxTypeError(
            f"{context}: dtype {dtype!r} is not a dtype. Use a numeric dtype such as "
            "numbax.numpy.float32."
        ) from err
    if dt == float0:
        return dt
    if not dt.isnative:  # big-endian data: values keep their meaning in the native order
        dt = dt.newbyteorder("=")
    if kind_of(dt) not in _SUPPORTED_KINDS:
        raise NumbaxTypeError(
            f"{context}: dtype {dt} is not supported; numbax arrays hold booleans, integers, "
            "floats or complex numbers. Convert the data to a numeric dtype first."
        )
    return dt


def python_scalar_dtype(value: Any) -> np.dtype:
    """The canonical dtype of a weakly typed Python scalar (bool, int, float, complex)."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return canonicalize_dtype(int64)
    if isinstance(value, float):
        return canonicalize_dtype(float64)
    if isinstance(value, complex):
        return canonicalize_dtype(complex128)
    raise NumbaxTypeError(f"numbax: {type(value).__name__} is not a Python scalar type")


def python_scalar_value(value: Any, dtype: Any) -> np.ndarray:
    """A Python scalar as the 0-d numpy array of `dtype` it becomes where it meets an array
    (a weak operand converted to the array's dtype), as JAX converts it: a Python int must fit
    the default integer type (int64; int32 with x64 off; OverflowError beyond), then wraps
    around to a narrower integer dtype (C-style, modulo 2**bits: 300 and -1 become 44 and 255
    in uint8) or rounds to a float one; out-of-range floats become inf, without numpy's
    overflow warning."""
    dtype = np.dtype(dtype)
    if isinstance(value, int) and not isinstance(value, (bool, np.generic)):
        default = default_int_dtype()
        low, high = _INT_RANGES[default]
        if not low <= value <= high:
            raise NumbaxOverflowError(_python_int_overflow_message(value, dtype, default))
        bounds = _INT_RANGES.get(dtype)
        if bounds is not None:
            if bounds[0] <= value <= bounds[1]:
                return np.array(value, dtype)
            return np.array(value, default).astype(dtype)  # integer casts wrap silently
    if isinstance(value, bool) or dtype == float64 or dtype == complex128 or (
            kind_of(dtype) in "bfc" and abs(value) <= 65504.0):
        return np.array(value, dtype=dtype)  # nothing overflows (65504: float16's largest)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.array(value, dtype=dtype)


_INT_RANGES = {dt: (int(np.iinfo(dt).min), int(np.iinfo(dt).max))
               for dt in (int8, int16, int32, int64, uint8, uint16, uint32, uint64)}


def _python_int_overflow_message(value: int, dtype: np.dtype, default: np.dtype) -> str:
    if kind_of(dtype) in "iu":
        bits = 8 * dtype.itemsize
        wrapped = value % 2 ** bits
        if kind_of(dtype) == "i" and wrapped >= 2 ** (bits - 1):
            wrapped -= 2 ** bits
        low, high = _INT_RANGES[default]
        literal = wrapped if low <= wrapped <= high else f"np.{dtype.name}({wrapped})"
        fix = (f"Pass {literal} instead: the value modulo 2**{bits} read as {dtype}, which "
               "C-style wrap-around would give")
    else:
        fix = f"Pass it as a float instead (float(value)) to get a {dtype} value"
    return (f"Python int {value} is too large to convert to {dtype}: Python ints that meet "
            f"arrays must fit {default} (the default integer type), as in JAX. {fix}.")


def default_float_dtype() -> np.dtype:
    return canonicalize_dtype(float64)


def index_dtype(size: int) -> np.dtype:
    """The dtype of indices into `size` elements from searchsorted, digitize and argpartition:
    int32 whenever they fit, with x64 on too, as JAX gives them."""
    return np.dtype(np.int32) if size <= np.iinfo(np.int32).max else default_int_dtype()


def default_int_dtype() -> np.dtype:
    return canonicalize_dtype(int64)


# JAX's type promotion lattice (its documentation's "Type promotion semantics"): each type's
# direct successors. "i*", "f*" and "c*" are the weak kinds of Python int, float and complex
# scalars; a Python bool is strong (b1). Two types promote to their least upper bound. Unlike
# numpy's rules, an integer joins any float at the float's width (int32 with float32 is
# float32 under x64 too, int16 with float16 is float16) and any complex at the complex's
# (int32 with complex64 is complex64), and int64 with uint64 is a weak float.
_LATTICE = {
    "b1": ("i*",), "u8": ("i16", "u16"), "u16": ("i32", "u32"), "u32": ("i64", "u64"),
    "u64": ("f*",), "i*": ("u8", "i8"), "i8": ("i16",), "i16": ("i32",), "i32": ("i64",),
    "i64": ("f*",), "f*": ("c*", "f16", "bf16"), "bf16": ("f32",), "f16": ("f32",),
    "f32": ("f64", "c64"), "f64": ("c128",), "c*": ("c64",), "c64": ("c128",), "c128": (),
}
# With x64 off no promotion makes a 64-bit type of narrower ones: uint32 with int32 is int32.
_LATTICE_X32 = {**_LATTICE, "u32": ("i32", "u64")}
_NODE = {dt: name for dt, name in _SHORT_NAMES.items() if dt != bool_} | {bool_: "b1"}
_NODE_DTYPE = {name: dt for dt, name in _NODE.items()}
_WEAK_NODE = {"b": "b1", "i": "i*", "u": "i*", "f": "f*", "c": "c*"}
_WEAK_DEFAULT = {"i*": int64, "f*": float64, "c*": complex128}


def _upper_sets(lattice: dict) -> dict:
    """Each type's upper set: itself and every type it promotes to."""
    above: dict = {}

    def visit(node: str) -> frozenset:
        if node not in above:
            above[node] = frozenset({node}).union(*(visit(n) for n in lattice[node]))
        return above[node]

    for node in lattice:
        visit(node)
    return above


_ABOVE = {True: _upper_sets(_LATTICE), False: _upper_sets(_LATTICE_X32)}
# (x64, *operand pairs) -> their join: promotion runs for every operation; a handful of
# combinations in practice, at most JOINS_MAX kept
_JOINS: dict = {}
JOINS_MAX = 4096


def _join(above: dict, nodes: frozenset) -> str:
    """The least upper bound of lattice nodes: the common successor all others are above."""
    common = frozenset.intersection(*(above[n] for n in nodes))
    return next(n for n in common if common <= above[n])


def result_type(*dtypes_and_weak: tuple[np.dtype, bool]) -> tuple[np.dtype, bool]:
    """Promotes (dtype, weak_type) pairs on JAX's lattice (`_LATTICE`), narrowed to 32 bits
    when x64 is off; the result is weak when the join is a weak kind: all operands weak, a
    weak scalar of a higher kind than every strong dtype (int32 + 1.0, bool + 1), or int64
    with uint64."""
    if not dtypes_and_weak:
        raise ValueError("result_type needs at least one dtype")
    if config.hot("jax_numpy_dtype_promotion") == "strict":
        _check_strict([np.dtype(dt) for dt, weak in dtypes_and_weak if not weak],
                      [np.dtype(dt) for dt, weak in dtypes_and_weak if weak])
    joined, weak = lattice_join(dtypes_and_weak)
    return canonicalize_dtype(joined), weak


def lattice_join(dtypes_and_weak) -> tuple[np.dtype, bool]:
    """The least upper bound of (dtype, weak_type) pairs on JAX's lattice, not narrowed (as
    jnp.promote_types gives it: int64 with int8 is int64 under x64 off too); a weak kind's
    join is its 64-bit default, weak."""
    key = (config.hot("jax_enable_x64"), *dtypes_and_weak)
    joined = _JOINS.get(key)
    if joined is None:
        if len(_JOINS) >= JOINS_MAX:
            _JOINS.clear()
        joined = _JOINS[key] = _lattice_join(key[0], dtypes_and_weak)
    return joined


def _lattice_join(x64: bool, dtypes_and_weak) -> tuple[np.dtype, bool]:
    try:
        nodes = frozenset(_WEAK_NODE[kind_of(np.dtype(dt))] if weak else _NODE[np.dtype(dt)]
                          for dt, weak in dtypes_and_weak)
    except KeyError:  # a dtype outside the lattice (float0, say): numpy's rules
        return np.result_type(*(dt for dt, _ in dtypes_and_weak)), False
    joined = _join(_ABOVE[bool(x64)], nodes)
    if joined in _WEAK_DEFAULT:
        return _WEAK_DEFAULT[joined], True
    return _NODE_DTYPE[joined], False


# Under strict promotion a weak scalar of kind k may join strong dtypes of these kinds (JAX's
# strict lattice: weak int -> any int or float or complex, weak float -> float or complex).
_STRICT_WEAK_TO_STRONG = {"b": "b", "i": "iufc", "u": "iufc", "f": "fc", "c": "c"}


def _check_strict(strong: list[np.dtype], weak: list[np.dtype]) -> None:
    """jax_numpy_dtype_promotion="strict": no implicit promotion between different strong
    dtypes, nor of a weak scalar into a strong dtype of a lower kind."""
    fixed = [*strong, *(w for w in weak if w.kind == "b")]  # Python bools are strong in JAX
    kinds = {kind_of(dt) for dt in fixed}
    if len(set(fixed)) <= 1 and all(kinds <= set(_STRICT_WEAK_TO_STRONG[w.kind])
                                    for w in weak if w.kind != "b"):
        return
    names = ", ".join([*(str(dt) for dt in strong), *(f"weak {dt.kind}" for dt in weak)])
    raise TypePromotionError(
        f"Input dtypes ({names}) have no available implicit dtype promotion path when "
        "jax_numpy_dtype_promotion=strict. Try explicitly casting inputs to the desired output "
        "type, or set jax_numpy_dtype_promotion=standard.")


def check_rank_promotion(fun_name: str, shapes: Sequence[tuple[int, ...]]) -> None:
    """jax_numpy_rank_promotion: "warn"/"raise" when operands of different nonzero ranks
    broadcast (rank-0 operands never count), as JAX's numpy functions do."""
    mode = config.jax_numpy_rank_promotion
    if mode == "allow" or len({len(s) for s in shapes if s}) < 2:
        return
    listed = " ".join(str(tuple(s)) for s in shapes)
    if mode == "warn":
        warnings.warn(f"Following NumPy automatic rank promotion for {fun_name} on shapes "
                      f"{listed}. Set the jax_numpy_rank_promotion config option to 'allow' to "
                      "disable this warning.", stacklevel=4)
        return
    raise ShapeDtypeError(
        f"numbax.numpy.{fun_name}: operands could not be broadcast together on shapes {listed} "
        "with the config option jax_numpy_rank_promotion='raise'. Expand the lower-rank "
        "operand explicitly (x[None], jnp.expand_dims) or set the option to 'allow'.")


def is_float(dtype: np.dtype) -> bool:
    return kind_of(np.dtype(dtype)) in "fc"


def is_inexact(dtype: np.dtype) -> bool:
    return kind_of(np.dtype(dtype)) in "fc"


def is_integer(dtype: np.dtype) -> bool:
    return np.dtype(dtype).kind in "iu"


def to_inexact(dtype: np.dtype) -> np.dtype:
    """The float dtype that math functions (sin, sqrt, mean, true division) return for `dtype`,
    as in JAX: float32 for bools and integers of up to 32 bits, float64 for 64-bit integers
    (float32 with x64 off). numpy gives float16 for 8-bit ones and float64 from 32 bits."""
    dt = np.dtype(dtype)
    if kind_of(dt) in "fc":
        return dt
    return canonicalize_dtype(float64 if dt.itemsize == 8 else float32)


def finfo_of(dtype: Any) -> Any:
    """numpy.finfo of `dtype` (not canonicalised); ml_dtypes.finfo for bfloat16."""
    return ml_dtypes.finfo(dtype) if _is_bfloat16(dtype) else np.finfo(dtype)


def finfo(dtype: Any) -> Any:
    """finfo of the canonical dtype."""
    return finfo_of(canonicalize_dtype(dtype))


def iinfo(dtype: Any) -> np.iinfo:
    return np.iinfo(canonicalize_dtype(dtype))


# ----------------------------------------------------------------------------- jax.dtypes


class extended(np.generic):  # noqa: N801 - JAX's name
    """Scalar type category of extended dtypes (dtypes numpy does not have, e.g. PRNG keys):
    issubdtype(key_array.dtype, extended) is True."""


class prng_key(extended):  # noqa: N801 - JAX's name
    """Scalar type category of PRNG key dtypes: issubdtype(key.dtype, prng_key) is True."""



def is_extended_dtype(dtype: Any) -> bool:
    """Whether `dtype` is an extended dtype object (a key array's `key<fry>`), not numpy's."""
    t = getattr(dtype, "type", None)
    return not isinstance(dtype, (np.dtype, type)) and isinstance(t, type) and issubclass(
        t, extended)


def _extended_type(dtype: Any) -> type | None:
    """The category class of an extended dtype (numbax key arrays' dtype is "key<fry>")."""
    t = getattr(dtype, "type", None)
    if isinstance(t, type) and issubclass(t, extended):
        return t
    if isinstance(dtype, str) and dtype.startswith("key<") and dtype.endswith(">"):
        return prng_key
    if isinstance(dtype, type) and issubclass(dtype, extended):
        return dtype
    return None


def _as_np_dtype(dtype: Any, api: str) -> np.dtype:
    try:
        return np.dtype(dtype)
    except TypeError:
        raise NumbaxTypeError(f"{api}: {dtype!r} is not a dtype; pass a numpy dtype, a scalar "
                              "type such as numbax.numpy.float32, or its name.") from None


def public_canonicalize_dtype(dtype: Any, allow_extended_dtype: bool = False) -> Any:
    """jax.dtypes.canonicalize_dtype: the dtype numbax computes in for `dtype` (64-bit types
    narrow to 32-bit when jax_enable_x64 is off)."""
    if _extended_type(dtype) is not None:
        if allow_extended_dtype:
            return dtype
        raise NumbaxValueError(f"numbax.dtypes.canonicalize_dtype: {dtype} is an extended dtype;"
                               " pass allow_extended_dtype=True to accept it.")
    return canonicalize_dtype(_as_np_dtype(dtype, "numbax.dtypes.canonicalize_dtype"),
                              context="numbax.dtypes.canonicalize_dtype")


def _dtype_and_weak(x: Any) -> tuple[np.dtype, bool]:
    if x is None:
        return default_float_dtype(), False
    if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
        return python_scalar_dtype(x), True
    if isinstance(x, (str, np.dtype, type)):
        return canonicalize_dtype(_as_np_dtype(x, "numbax.dtypes.result_type"),
                                  context="numbax.dtypes.result_type"), False
    dt = getattr(x, "dtype", None)
    if dt is None:
        raise NumbaxTypeError(f"numbax.dtypes.result_type: argument {x!r} of type "
                              f"{type(x).__name__} is neither an array, a scalar nor a dtype.")
    return canonicalize_dtype(dt, context="numbax.dtypes.result_type"), bool(
        getattr(x, "weak_type", False))


def public_result_type(*args: Any, return_weak_type_flag: bool = False) -> Any:
    """jax.dtypes.result_type: the dtype of an operation on `args` (arrays, Python scalars,
    dtypes), under numbax's promotion rules (NumPy 2, weak Python scalars)."""
    if not args:
        raise NumbaxValueError("numbax.dtypes.result_type: got no arguments, expected at least "
                               "one array, scalar or dtype.")
    dtype, weak = result_type(*[_dtype_and_weak(x) for x in args])
    return (dtype, weak) if return_weak_type_flag else dtype


def _is_bfloat16(x: Any) -> bool:
    if isinstance(x, type) and x.__module__ == "numpy":
        return False
    try:
        return np.dtype(getattr(x, "dtype", x)) == bfloat16
    except TypeError:
        return False


def issubdtype(a: Any, b: Any) -> bool:
    """numpy.issubdtype, also for extended dtypes (PRNG keys) and bfloat16 (a floating type,
    which numpy alone does not know)."""
    ta, tb = _extended_type(a), _extended_type(b)
    if ta is not None or tb is not None:
        return ta is not None and tb is not None and issubclass(ta, tb)
    if _is_bfloat16(a):
        return _is_bfloat16(b) or b in (np.floating, np.inexact, np.number, np.generic)
    return bool(np.issubdtype(_dtype_of(a, "numbax.dtypes.issubdtype"), b))


def itemsize_bits(dtype: Any) -> int:
    """The size of one element of `dtype` in bits (bool: 8)."""
    if _extended_type(dtype) is not None:
        raise NumbaxValueError(f"numbax.dtypes.itemsize_bits: {dtype} is an extended dtype, "
                               "expected a numeric dtype.")
    if dtype is None:
        raise NumbaxTypeError("numbax.dtypes.itemsize_bits: dtype is None, expected a dtype.")
    return _as_np_dtype(dtype, "numbax.dtypes.itemsize_bits").itemsize * 8


def _dtype_of(x: Any, api: str) -> np.dtype:
    """The dtype of a dtype-like (dtype, scalar type, name) or of an array."""
    if isinstance(x, (np.dtype, str, type)):
        return _as_np_dtype(x, api)
    dt = getattr(x, "dtype", None)
    if dt is None:
        raise NumbaxTypeError(f"{api}: {x!r} of type {type(x).__name__} is neither a dtype nor "
                              "an array.")
    return _as_np_dtype(dt, api)


def scalar_type_of(x: Any) -> type:
    """The Python scalar type (bool, int, float or complex) of the dtype of `x`."""
    if isinstance(x, bool):
        return bool
    for t in (int, float, complex):
        if isinstance(x, t) and not isinstance(x, np.generic):
            return t
    dt = getattr(x, "dtype", None)
    kind = kind_of(np.dtype(dt)) if dt is not None and _extended_type(dt) is None else None
    types = {"b": bool, "i": int, "u": int, "f": float, "c": complex}
    if kind not in types:
        raise NumbaxTypeError(f"numbax.dtypes.scalar_type_of: {x!r} has no numeric dtype; pass "
                              "an array or a scalar of a boolean, integer, float or complex "
                              "dtype.")
    return types[kind]


def public_finfo(dtype: Any) -> Any:
    """Machine limits of a floating dtype (not canonicalised: finfo(float64) is float64's)."""
    dt = _dtype_of(dtype, "numbax.dtypes.finfo")
    if kind_of(dt) not in "fc":
        raise NumbaxTypeError(f"numbax.dtypes.finfo: dtype {dt} is not a floating dtype; use "
                              "numbax.dtypes.iinfo for integers.")
    return finfo_of(dt)


def public_iinfo(int_type: Any) -> np.iinfo:
    """Machine limits of an integer dtype (not canonicalised)."""
    dt = _dtype_of(int_type, "numbax.dtypes.iinfo")
    if dt.kind not in "iu":
        raise NumbaxTypeError(f"numbax.dtypes.iinfo: dtype {dt} is not an integer dtype; use "
                              "numbax.dtypes.finfo for floats.")
    return np.iinfo(dt)
