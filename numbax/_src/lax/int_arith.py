"""XLA's integer semantics on numpy arrays where numpy's differ: division and remainder by
zero (x / 0 is all ones, x % 0 is x), division truncating toward zero, and arithmetic right
shifts of unsigned integers (their bits shifted as signed). Floats keep numpy's results."""
from __future__ import annotations

import numpy as np

from numbax._src.dtypes import kind_of


def div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """lax.div: integers divide rounding toward zero (C), MIN / -1 wraps to MIN, and x / 0 is
    -1 (all bits set, for unsigned too); floats divide as numpy does."""
    if kind_of(x.dtype) not in "iu":
        return np.divide(x, y)
    x, y = np.asarray(x), np.asarray(y)
    zero = y == 0
    safe = np.where(zero, np.ones((), y.dtype), y)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        q = np.floor_divide(x, safe)
        fix = (np.remainder(x, safe) != 0) & ((x < 0) != (safe < 0))
    q = (q + fix).astype(x.dtype)
    return np.where(zero, ~np.zeros((), x.dtype), q) if zero.any() else q


def rem(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """lax.rem: the remainder with the dividend's sign (C fmod); for integers x % 0 is x."""
    if kind_of(x.dtype) not in "iu":
        return np.fmod(x, y)
    x, y = np.asarray(x), np.asarray(y)
    zero = y == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.fmod(x, np.where(zero, np.ones((), y.dtype), y))
    return np.where(zero, x, r).astype(x.dtype) if zero.any() else r


def shift_right_arithmetic(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """lax.shift_right_arithmetic: unsigned operands shift their signed view (XLA's result:
    uint8 0x80 >> 1 is 0xC0), and shifts of `bits` or more fill with the sign bit."""
    x, y = np.asarray(x), np.asarray(y)
    if kind_of(x.dtype) != "u":
        return np.right_shift(x, y)
    signed = np.dtype(f"i{x.dtype.itemsize}")
    amount = np.minimum(y, x.dtype.itemsize * 8 - 1).astype(signed)
    return np.right_shift(x.view(signed), amount).view(x.dtype)
