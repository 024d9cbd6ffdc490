"""numpy.pad: constant padding is lax.pad; edge/reflect/symmetric/wrap are static gathers;
the statistic and ramp modes live in padding_stats."""
from __future__ import annotations

from typing import Any

import numpy as np

from numbax._src.core import get_aval
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.lax import elementwise as lax
from numbax._src.lax import shape_ops
from numbax._src.lax.key_arrays import KeyArrayBase, unsupported
from numbax._src.numpy import padding_stats
from numbax._src.numpy.lax_numpy import asarray, concrete_value
from numbax._src.numpy.shapes import _slice_axis, concatenate, repeat

__all__ = ["pad"]


def _pad_widths(pad_width: Any, ndim_: int) -> list[tuple[int, int]]:
    pw = concrete_value(pad_width, "numbax.numpy.pad: pad_width")
    if kind_of(pw.dtype) not in "iu":
        raise NumbaxTypeError(f"numbax.numpy.pad: pad_width has dtype {pw.dtype}, expected "
                              "integers.")
    try:
        pw = np.broadcast_to(pw, (ndim_, 2))
    except ValueError:
        raise NumbaxValueError(
            f"numbax.numpy.pad: pad_width has shape {pw.shape}, expected one that broadcasts "
            f"to ({ndim_}, 2)."
        ) from None
    if (pw < 0).any():
        raise NumbaxValueError(f"numbax.numpy.pad: pad_width {pw.tolist()} has negative "
                               "entries, expected widths >= 0.")
    return [(int(lo), int(hi)) for lo, hi in pw]


_NUMERIC_MODES = ("maximum", "minimum", "mean", "median", "linear_ramp")


def _pad_keys(keys: KeyArrayBase, pad_width: Any, mode: Any, kwargs: dict) -> Any:
    """pad of a typed key array, as JAX: the modes that only move keys ('edge', 'reflect',
    'symmetric', 'wrap', 'empty') pad each key word; 'constant' (a number made a key) is a
    ValueError, the statistic modes a TypeError."""
    if isinstance(mode, str) and mode == "constant":
        raise NumbaxValueError(
            "numbax.numpy.pad: array is a key array (dtype key<fry>) and mode is 'constant', "
            "which fills with a number; a number cannot be converted to a key (JAX raises "
            "ValueError too). Use mode='edge', 'reflect', 'symmetric' or 'wrap', or "
            "concatenate explicit keys.")
    if callable(mode) or mode in _NUMERIC_MODES:
        raise unsupported("numbax.numpy.pad", f"array (padded with mode={mode!r})")
    words = [pad(keys._word(i), pad_width, mode, **kwargs) for i in range(keys.num_words)]
    return type(keys)._from_words(words)


def pad(array: Any, pad_width: Any, mode: str = "constant", **kwargs: Any) -> Any:
    """numpy.pad with every numpy mode, a callable one included.

    Args:
      array: the array. pad_width: static widths, broadcastable to (ndim, 2).
      mode: 'constant' (lax.pad), 'edge', 'reflect', 'symmetric', 'wrap' (slices, rev and
        concatenate; reflect_type), 'maximum', 'minimum', 'mean', 'median' (stat_length),
        'linear_ramp' (end_values) or 'empty' (zeros, as in JAX). constant_values, stat_length
        and end_values are static, broadcastable to (ndim, 2). A callable mode is called as
        `mode(vector, (lo, hi), axis, kwargs)` and returns the padded vector (as in JAX, it
        cannot write in place).

    Returns:
      The padded array.

    >>> pad([1, 2, 3], 2, mode="reflect")
    Array([3, 2, 1, 2, 3, 2, 1], dtype=int64)
    """
    if isinstance(array, KeyArrayBase):
        return _pad_keys(array, pad_width, mode, kwargs)
    array = asarray(array)
    a_shape = get_aval(array).shape
    widths = _pad_widths(pad_width, len(a_shape))
    if callable(mode):
        return _pad_func(array, widths, mode, kwargs)
    allowed = _KWARGS.get(mode, frozenset())
    if set(kwargs) - allowed:
        raise NumbaxValueError(
            f"numbax.numpy.pad: got keyword arguments {sorted(set(kwargs) - allowed)} for mode "
            f"{mode!r}, expected only {sorted(allowed)}. Drop them or change the mode."
        )
    if mode == "constant":
        cv = concrete_value(kwargs.get("constant_values", 0),
                            "numbax.numpy.pad: constant_values")
        cv = np.broadcast_to(cv, (len(a_shape), 2))
        dtype = get_aval(array).dtype
        if len(set(cv.ravel().tolist())) <= 1:
            value = lax.convert_element_type(cv.ravel()[0] if cv.size else 0, dtype)
            return shape_ops.pad(array, value, tuple((lo, hi, 0) for lo, hi in widths))
        for ax, (lo, hi) in enumerate(widths):
            config = [(0, 0, 0)] * len(a_shape)
            config[ax] = (lo, 0, 0)
            array = shape_ops.pad(array, lax.convert_element_type(cv[ax, 0], dtype),
                                  tuple(config))
            config[ax] = (0, hi, 0)
            array = shape_ops.pad(array, lax.convert_element_type(cv[ax, 1], dtype),
                                  tuple(config))
        return array
    if mode == "empty":  # JAX's undefined padding is zeros
        return shape_ops.pad(array, lax.convert_element_type(0, get_aval(array).dtype),
                             tuple((lo, hi, 0) for lo, hi in widths))
    if mode in padding_stats.STATS:
        return padding_stats.pad_stat(array, widths, mode, kwargs.get("stat_length"))
    if mode == "linear_ramp":
        return padding_stats.pad_linear_ramp(array, widths, kwargs.get("end_values", 0))
    if mode not in ("edge", "reflect", "symmetric", "wrap"):
        raise NumbaxValueError(
            f"numbax.numpy.pad: mode {mode!r} is not supported, expected 'constant', 'edge', "
            "'linear_ramp', 'maximum', 'mean', 'median', 'minimum', 'reflect', 'symmetric', "
            "'wrap' or 'empty'."
        )
    reflect_type = kwargs.get("reflect_type", "even")
    if reflect_type not in ("even", "odd"):
        raise NumbaxValueError(f"numbax.numpy.pad: reflect_type has {reflect_type!r}, expected "
                               "'even' or 'odd'.")
    for ax, (lo, hi) in enumerate(widths):
        if reflect_type == "odd" and get_aval(array).shape[ax] > 1:
            array = _pad_axis_odd(array, ax, lo, hi, mode)
        else:
            array = _pad_axis(array, ax, lo, hi, mode)
    return array


_KWARGS = {"constant": frozenset({"constant_values"}), "reflect": frozenset({"reflect_type"}),
           "symmetric": frozenset({"reflect_type"}), "linear_ramp": frozenset({"end_values"}),
           **{m: frozenset({"stat_length"}) for m in padding_stats.STATS}}


def _pad_func(array: Any, widths: list[tuple[int, int]], func: Any, kwargs: dict) -> Any:
    """A callable mode, as JAX: zero-pad, then apply func along each axis in turn."""
    from numbax._src.numpy.vectorize import apply_along_axis

    zero = lax.convert_element_type(0, get_aval(array).dtype)
    array = shape_ops.pad(array, zero, tuple((lo, hi, 0) for lo, hi in widths))
    for ax in range(len(widths)):
        array = apply_along_axis(func, ax, array, widths[ax], ax, kwargs)
    return array


def _pad_axis_odd(x: Any, ax: int, lo: int, hi: int, mode: str) -> Any:
    """reflect_type='odd': each reflected chunk is 2 * edge - mirror, and a pad wider than the
    array reflects the already padded array again, chunk by chunk, as numpy's loop does."""
    n = get_aval(x).shape[ax]
    period = n - 1 if mode == "reflect" else n  # values one reflection can supply
    while lo or hi:
        length = get_aval(x).shape[ax]
        usable = length // period * period if mode == "symmetric" else (
            (length - 1) // period * period)
        skip = 1 if mode == "reflect" else 0  # reflect leaves the edge value out
        left = right = None
        if lo:
            k = min(usable, lo)
            mirror = shape_ops.rev(_slice_axis(x, ax, skip, skip + k), (ax,))
            left = lax.sub(lax.mul(_const(x, 2), _edge(x, ax, 0, k)), mirror)
            lo -= k
        if hi:
            k = min(usable, hi)
            mirror = shape_ops.rev(_slice_axis(x, ax, length - skip - k, length - skip), (ax,))
            right = lax.sub(lax.mul(_const(x, 2), _edge(x, ax, length - 1, k)), mirror)
            hi -= k
        x = concatenate([p for p in (left, x, right) if p is not None], ax)
    return x


def _const(x: Any, value: int) -> Any:
    return lax.convert_element_type(value, get_aval(x).dtype)


def _edge(x: Any, ax: int, i: int, k: int) -> Any:
    """x[i] along ax, repeated k times along ax."""
    return repeat(_slice_axis(x, ax, i, i + 1), k, ax)


def _pad_axis(x: Any, ax: int, lo: int, hi: int, mode: str) -> Any:
    n = get_aval(x).shape[ax]
    if not lo and not hi:
        return x
    if n == 0:
        raise NumbaxValueError(f"numbax.numpy.pad: cannot pad an empty axis {ax} with mode "
                               f"{mode!r}.")
    if mode == "edge":
        first = _slice_axis(x, ax, 0, 1)
        last = _slice_axis(x, ax, n - 1, n)
        return concatenate([repeat(first, lo, ax), x, repeat(last, hi, ax)], ax)
    if mode == "wrap":
        idx = np.concatenate([np.arange(-lo, 0) % n, np.arange(n), np.arange(n, n + hi) % n])
    else:
        # Reflect about the edges (reflect: without repeating them; symmetric: with).
        period = 2 * n - 2 if mode == "reflect" else 2 * n
        if period == 0:
            idx = np.zeros(lo + n + hi, dtype=np.int64)
        else:
            pos = np.arange(-lo, n + hi) % period
            mirror = period - pos if mode == "reflect" else period - 1 - pos
            idx = np.where(pos < n, pos, mirror)
    return _gather_static(x, ax, idx)


def _gather_static(x: Any, ax: int, idx: np.ndarray) -> Any:
    """x taken at concrete indices along ax, as slices of contiguous runs joined by concatenate."""
    pieces = []
    start = 0
    idx = idx.tolist()
    while start < len(idx):
        stop = start + 1
        step = 1 if stop >= len(idx) else idx[stop] - idx[start]
        if step not in (1, -1):
            step = 1
        while stop < len(idx) and idx[stop] - idx[stop - 1] == step:
            stop += 1
        lo, hi = (idx[start], idx[stop - 1]) if step == 1 else (idx[stop - 1], idx[start])
        piece = _slice_axis(x, ax, lo, hi + 1)
        pieces.append(piece if step == 1 or stop - start == 1 else shape_ops.rev(piece, (ax,)))
        start = stop
    return pieces[0] if len(pieces) == 1 else shape_ops.concatenate(pieces, ax)
