"""dtype rules: NumPy 2 promotion with weak Python scalars (NEP 50), and x64 canonicalisation."""
from __future__ import annotations

from typing import Any

import numpy as np

from numbax._src.config import config
from numbax._src.errors import NumbaxTypeError

bool_ = np.dtype(np.bool_)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)

# float0 is JAX's dtype for tangents of integer values: zero-sized, carries no data.
float0 = np.dtype([("float0", np.void, 0)])

_X64_TO_X32 = {int64: int32, uint64: uint32, float64: float32, complex128: complex64}
_SUPPORTED_KINDS = "biufc"

# Printed names in jaxprs (JAX's short forms).
_SHORT_NAMES = {
    bool_: "bool", int8: "i8", int16: "i16", int32: "i32", int64: "i64",
    uint8: "u8", uint16: "u16", uint32: "u32", uint64: "u64",
    float16: "f16", float32: "f32", float64: "f64", complex64: "c64", complex128: "c128",
}


def short_name(dtype: np.dtype) -> str:
    if dtype == float0:
        return "float0"
    return _SHORT_NAMES.get(np.dtype(dtype), str(dtype))


def canonicalize_dtype(dtype: Any, *, context: str = "numbax") -> np.dtype:
    """Checks that `dtype` is a numeric dtype and narrows 64-bit types when x64 is off."""
    try:
        dt = np.dtype(dtype)
    except TypeError as err:
        raise NumbaxTypeError(
            f"{context}: dtype {dtype!r} is not a dtype. Use a numeric dtype such as "
            "numbax.numpy.float32."
        ) from err
    if dt == float0:
        return dt
    if dt.kind not in _SUPPORTED_KINDS:
        raise NumbaxTypeError(
            f"{context}: dtype {dt} is not supported; numbax arrays hold booleans, integers, "
            "floats or complex numbers. Convert the data to a numeric dtype first."
        )
    if not config.jax_enable_x64:
        return _X64_TO_X32.get(dt, dt)
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


def default_float_dtype() -> np.dtype:
    return canonicalize_dtype(float64)


def default_int_dtype() -> np.dtype:
    return canonicalize_dtype(int64)


def _weak_representative(dtype: np.dtype) -> Any:
    # A Python scalar of the same kind stands for a weak type: numpy applies NEP 50 to it.
    return {"b": False, "i": 0, "u": 0, "f": 0.0, "c": 0j}[dtype.kind]


def result_type(*dtypes_and_weak: tuple[np.dtype, bool]) -> tuple[np.dtype, bool]:
    """Promotes (dtype, weak_type) pairs with NumPy 2 rules; the result is weak iff all are."""
    if not dtypes_and_weak:
        raise ValueError("result_type needs at least one dtype")
    strong = [np.dtype(dt) for dt, weak in dtypes_and_weak if not weak]
    weak = [dt for dt, is_weak in dtypes_and_weak if is_weak]
    if not strong:
        # All weak: the widest kind wins, at its default precision.
        widest = max((np.dtype(dt) for dt in weak), key=lambda dt: "biufc".index(dt.kind))
        return python_scalar_dtype(_weak_representative(widest)), True
    reps = [_weak_representative(np.dtype(dt)) for dt in weak]
    out = np.result_type(*strong, *reps)
    return canonicalize_dtype(out), False


def is_float(dtype: np.dtype) -> bool:
    return np.dtype(dtype).kind in "fc"


def is_inexact(dtype: np.dtype) -> bool:
    return np.dtype(dtype).kind in "fc"


def is_integer(dtype: np.dtype) -> bool:
    return np.dtype(dtype).kind in "iu"


def to_inexact(dtype: np.dtype) -> np.dtype:
    """The float dtype that math functions (sin, sqrt, mean) return for `dtype` (NumPy rules)."""
    dt = np.dtype(dtype)
    if dt.kind in "fc":
        return dt
    if dt.itemsize <= 1:
        return float16
    if dt.itemsize == 2:
        return float32
    return canonicalize_dtype(float64)


def finfo(dtype: Any) -> np.finfo:
    return np.finfo(canonicalize_dtype(dtype))


def iinfo(dtype: Any) -> np.iinfo:
    return np.iinfo(canonicalize_dtype(dtype))
