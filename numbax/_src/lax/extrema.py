"""JAX's max and min on numpy arrays (NaN wins and -0.0 < +0.0, where np.maximum keeps its
second operand on a tie of zeros), shared by the eager rules of max, min, clamp, the max/min
reductions, cummax/cummin and the max/min windows."""
from __future__ import annotations

from typing import Any

import numpy as np

from numbax._src.dtypes import kind_of


def _is_float(x: np.ndarray) -> bool:
    return kind_of(x.dtype) == "f"


def maximum(x: Any, y: Any, out: np.ndarray | None = None) -> np.ndarray:
    """lax.max: NaN if either is NaN, else the larger, +0.0 beating -0.0."""
    x, y = np.asarray(x), np.asarray(y)
    if not (_is_float(x) and _is_float(y)):
        return np.maximum(x, y, out=out)
    take_x = (x > y) | (x != x) | ((x == y) & np.signbit(y))
    return _select(take_x, x, y, out)


def minimum(x: Any, y: Any, out: np.ndarray | None = None) -> np.ndarray:
    """lax.min: NaN if either is NaN, else the smaller, -0.0 beating +0.0."""
    x, y = np.asarray(x), np.asarray(y)
    if not (_is_float(x) and _is_float(y)):
        return np.minimum(x, y, out=out)
    take_x = (x < y) | (x != x) | ((x == y) & np.signbit(x))
    return _select(take_x, x, y, out)


def _select(take_x: np.ndarray, x: np.ndarray, y: np.ndarray,
            out: np.ndarray | None) -> np.ndarray:
    if out is None:
        return np.where(take_x, x, y)
    np.copyto(out, np.where(take_x, x, y))
    return out


def _signed_zeros(r: np.ndarray, seen: np.ndarray, negative: bool) -> np.ndarray:
    """r with its zeros given the sign JAX's order implies: `seen` marks where a zero of the
    winning sign (-0.0 if `negative`) took part; the other zeros get the other sign."""
    zero = np.zeros((), r.dtype)
    winner, loser = (-zero, zero) if negative else (zero, -zero)
    return np.where(r == 0, np.where(seen, winner, loser), r)


def _zeros_of_sign(x: np.ndarray, negative: bool) -> np.ndarray:
    return (x == 0) & (np.signbit(x) == negative)


def reduce_max(x: Any, axis: Any) -> np.ndarray:
    """np.max over `axis`, its zero results +0.0 wherever a +0.0 was reduced."""
    r = np.asarray(np.max(x, axis=axis))
    if not _is_float(r) or not (r == 0).any():
        return r
    return _signed_zeros(r, np.any(_zeros_of_sign(x, False), axis=axis), False)


def reduce_min(x: Any, axis: Any) -> np.ndarray:
    """np.min over `axis`, its zero results -0.0 wherever a -0.0 was reduced."""
    r = np.asarray(np.min(x, axis=axis))
    if not _is_float(r) or not (r == 0).any():
        return r
    return _signed_zeros(r, np.any(_zeros_of_sign(x, True), axis=axis), True)


def cummax(x: np.ndarray, axis: int) -> np.ndarray:
    """np.maximum.accumulate with lax.max's order of zeros."""
    r = np.maximum.accumulate(x, axis=axis)
    if not _is_float(r) or not (r == 0).any():
        return r
    return _signed_zeros(r, np.logical_or.accumulate(_zeros_of_sign(x, False), axis=axis),
                         False)


def cummin(x: np.ndarray, axis: int) -> np.ndarray:
    """np.minimum.accumulate with lax.min's order of zeros."""
    r = np.minimum.accumulate(x, axis=axis)
    if not _is_float(r) or not (r == 0).any():
        return r
    return _signed_zeros(r, np.logical_or.accumulate(_zeros_of_sign(x, True), axis=axis),
                         True)
