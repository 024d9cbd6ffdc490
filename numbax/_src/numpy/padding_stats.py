"""numpy.pad's modes computed from the array's values: maximum, minimum, mean and median
(over stat_length edge elements) and linear_ramp (towards end_values). Each axis is padded
in turn, its statistics taken over the array padded along the earlier axes, as numpy does."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from numbax._src import dtypes
from numbax._src.core import get_aval
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxValueError
from numbax._src.lax import elementwise as lax
from numbax._src.lax import shape_ops
from numbax._src.numpy import lax_numpy, quantiles, reductions
from numbax._src.numpy.lax_numpy import concrete_value
from numbax._src.numpy.shapes import _slice_axis, concatenate, repeat

STATS: dict[str, Callable] = {"maximum": reductions.max, "minimum": reductions.min,
                              "mean": reductions.mean, "median": quantiles.median}


def as_pairs(x: Any, ndim: int, name: str, as_index: bool = False) -> list[tuple]:
    """numpy's _as_pairs: one (before, after) per axis; a size-2 value is (before, after)
    for every axis, and None stands for the whole axis."""
    if x is None:
        return [(None, None)] * ndim
    x = concrete_value(x, f"numbax.numpy.pad: {name}")
    if as_index:
        x = np.round(x).astype(np.int64)
        if x.size and x.min() < 0:
            raise NumbaxValueError(f"numbax.numpy.pad: {name} has negative entries, expected "
                                   "lengths >= 0.")
    if x.ndim < 3 and x.size == 1:
        return [(x.ravel()[0].item(), x.ravel()[0].item())] * ndim
    if x.ndim < 3 and x.size == 2 and x.shape != (2, 1):
        return [(x.ravel()[0].item(), x.ravel()[1].item())] * ndim
    try:
        pairs = np.broadcast_to(x, (ndim, 2))
    except ValueError:
        raise NumbaxValueError(f"numbax.numpy.pad: {name} has shape {x.shape}, expected one "
                               f"that broadcasts to ({ndim}, 2).") from None
    return [(lo.item(), hi.item()) for lo, hi in pairs]


def pad_stat(x: Any, widths: list[tuple[int, int]], mode: str, stat_length: Any) -> Any:
    lengths = as_pairs(stat_length, len(widths), "stat_length", as_index=True)
    for ax, ((lo, hi), (l_len, r_len)) in enumerate(zip(widths, lengths, strict=True)):
        if lo or hi:
            x = _pad_axis_stat(x, ax, lo, hi, mode, l_len, r_len)
    return x


def _pad_axis_stat(x: Any, ax: int, lo: int, hi: int, mode: str, l_len: int | None,
                   r_len: int | None) -> Any:
    n = get_aval(x).shape[ax]
    l_len = n if l_len is None or l_len > n else l_len
    r_len = n if r_len is None or r_len > n else r_len
    if min(l_len, r_len) == 0:
        raise NumbaxValueError(f"numbax.numpy.pad: mode {mode!r} has no values to take along "
                               f"axis {ax} (stat_length 0 or an empty axis), expected at least "
                               "one.")
    left = _stat(x, ax, 0, l_len, mode)
    right = left if l_len == r_len == n else _stat(x, ax, n - r_len, n, mode)
    return concatenate([repeat(left, lo, ax), x, repeat(right, hi, ax)], ax)


def _stat(x: Any, ax: int, start: int, stop: int, mode: str) -> Any:
    """The statistic of x[start:stop] along ax (kept as a dimension of 1), rounded half to
    even for integer arrays (numpy's _round_if_needed)."""
    dtype = get_aval(x).dtype
    value = STATS[mode](_slice_axis(x, ax, start, stop), axis=ax, keepdims=True)
    if kind_of(dtype) in "iu" and kind_of(get_aval(value).dtype) not in "iu":
        value = lax_numpy.round(value)
    return lax.convert_element_type(value, dtype)


def pad_linear_ramp(x: Any, widths: list[tuple[int, int]], end_values: Any) -> Any:
    ends = as_pairs(end_values, len(widths), "end_values")
    for ax, ((lo, hi), (first, last)) in enumerate(zip(widths, ends, strict=True)):
        if not lo and not hi:
            continue
        n = get_aval(x).shape[ax]
        if n == 0:
            raise NumbaxValueError(f"numbax.numpy.pad: cannot pad an empty axis {ax} with "
                                   "mode 'linear_ramp'.")
        left = _ramp(x, ax, first, _slice_axis(x, ax, 0, 1), lo)
        right = shape_ops.rev(_ramp(x, ax, last, _slice_axis(x, ax, n - 1, n), hi), (ax,))
        x = concatenate([left, x, right], ax)
    return x


def _ramp(x: Any, ax: int, start: Any, edge: Any, num: int) -> Any:
    """numpy.linspace(start, edge, num, endpoint=False) along ax in x's dtype (integers floor
    the float ramp, as numpy's linspace does)."""
    dtype = get_aval(x).dtype
    ftype = dtype if kind_of(dtype) in "fc" else dtypes.default_float_dtype()
    shape = list(get_aval(edge).shape)
    shape[ax] = num
    steps = shape_ops.broadcast_in_dim(shape_ops.iota(ftype, num), tuple(shape), (ax,))
    start = lax.convert_element_type(start, ftype)
    edge = lax.convert_element_type(edge, ftype)
    step = lax.div(lax.sub(edge, start), lax.convert_element_type(num, ftype))
    ramp = lax.add(lax.mul(steps, shape_ops.broadcast_in_dim(step, tuple(shape),
                                                             tuple(range(len(shape))))), start)
    if kind_of(dtype) in "iu":
        ramp = lax.floor(ramp)
    return lax.convert_element_type(ramp, dtype)
