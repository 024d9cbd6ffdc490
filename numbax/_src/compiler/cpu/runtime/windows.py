"""Windowed reductions in compiled CPU programs: reduce_window's sum/max/min and the
select-and-scatter/gather pair behind max pooling's derivatives, as Numba loops.

An operand is viewed as (B, X1, X2, X3, Cc): B the leading dimensions without a window, up to
three windowed dimensions (any dimension between them counts as one, with a window of 1), and
Cc the trailing dimensions without a window (a channels-last image's channels), which the
innermost loops run over with unit stride, vectorised. `layout` says whether a configuration
has this form (no base dilation, no negative padding); others run the eager implementation.
Each loop mirrors the eager implementation's order and its NaN rules (lax.max's, through
sc.fmax: NaN wins and +0.0 beats -0.0; and a selection that moves on only to a strictly better
candidate), so jit gives what eager gives.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from numbax._src.compiler.cpu.runtime import scalars as sc
from numbax._src.compiler.cpu.runtime import threads as rt_threads
from numbax._src.compiler.cpu.runtime.gemm_operands import read_only
from numbax._src.lax.conv_numpy import dilate_shape, stride_dim
from numbax._src.lax.windowed_reductions import max_identity, min_identity

BYTES_PER_NS = 4.0  # a windowed pass's throughput on one core, for the thread count
_OPTS = {"error_model": "numpy", "cache": True}


@dataclass(frozen=True)
class Layout:
    """The (B, X1, X2, X3, Cc) view of an operand and its output, and the three windowed
    dimensions' window, stride, low padding and window dilation."""

    operand: tuple
    out: tuple
    window: tuple
    strides: tuple
    low: tuple
    dilation: tuple

    @property
    def disjoint(self) -> bool:
        """Whether windows of different X1 outputs never share an element (so the outputs'
        X1 rows may be scattered into in parallel)."""
        return self.strides[0] >= (self.window[0] - 1) * self.dilation[0] + 1


@functools.lru_cache(maxsize=256)
def layout(shape: tuple, window_dimensions: tuple, window_strides: tuple, padding: tuple,
           base_dilation: tuple, window_dilation: tuple) -> Layout | None:
    """The operand's (B, X1, X2, X3, Cc) layout for these window params, or None."""
    if any(d != 1 for d in base_dilation) or any(lo < 0 or hi < 0 for lo, hi in padding):
        return None
    plain = [w == 1 and s == 1 and lo == hi == 0 for w, s, (lo, hi)
             in zip(window_dimensions, window_strides, padding)]
    if all(plain):
        return None  # an identity (or a copy): nothing worth a kernel
    first = plain.index(False)
    last = len(plain) - 1 - plain[::-1].index(False)
    middle = range(first, last + 1)
    if len(middle) > 3:
        return None
    unit = 3 - len(middle)
    out = stride_dim_all(shape, window_dimensions, window_strides, padding, window_dilation)
    b, cc = math.prod(shape[:first]), math.prod(shape[last + 1:])
    pick = list(middle)
    return Layout((b, *(1,) * unit, *(shape[i] for i in pick), cc),
                  (b, *(1,) * unit, *(out[i] for i in pick), cc),
                  (*(1,) * unit, *(window_dimensions[i] for i in pick)),
                  (*(1,) * unit, *(window_strides[i] for i in pick)),
                  (*(0,) * unit, *(padding[i][0] for i in pick)),
                  (*(1,) * unit, *(window_dilation[i] for i in pick)))


def stride_dim_all(shape, window_dimensions, window_strides, padding, window_dilation):
    """The output shape of a windowed reduction without base dilation."""
    dilated = dilate_shape(window_dimensions, window_dilation)
    return tuple(stride_dim(n + lo + hi, w, s)
                 for n, w, s, (lo, hi) in zip(shape, dilated, window_strides, padding))


# ----------------------------------------------------------------------------- kernels


# kinds of reduction (one compiled loop serves all three, the branch outside the vector loop)
SUM, MAX, MIN = 0, 1, 2


@njit(**_OPTS)
def _reduce_rows(x, y, lo_row, hi_row, geometry, kind, fill):
    """Output rows [lo_row, hi_row) of (B * O1) of y = the windows of x folded by `kind`
    (SUM, or MAX/MIN as lax.max/min: NaN wins, -0.0 < +0.0) from `fill`, in window order; taps in
    the padding are skipped (they hold `fill`)."""
    _, o1s, o2s, o3s, cc = y.shape
    _, x1s, x2s, x3s, _ = x.shape
    w1, w2, w3, s1, s2, s3, p1, p2, p3, d1, d2, d3 = geometry
    for row in range(lo_row, hi_row):
        b, o1 = row // o1s, row % o1s
        for o2 in range(o2s):
            for o3 in range(o3s):
                out = y[b, o1, o2, o3]
                for c in range(cc):
                    out[c] = fill
                for k1 in range(w1):
                    i1 = o1 * s1 - p1 + k1 * d1
                    if i1 < 0 or i1 >= x1s:
                        continue
                    for k2 in range(w2):
                        i2 = o2 * s2 - p2 + k2 * d2
                        if i2 < 0 or i2 >= x2s:
                            continue
                        for k3 in range(w3):
                            i3 = o3 * s3 - p3 + k3 * d3
                            if i3 < 0 or i3 >= x3s:
                                continue
                            src = x[b, i1, i2, i3]
                            if kind == SUM:
                                for c in range(cc):
                                    out[c] += src[c]
                            elif kind == MAX:
                                for c in range(cc):
                                    out[c] = sc.fmax(out[c], src[c])
                            else:
                                for c in range(cc):
                                    out[c] = sc.fmin(out[c], src[c])


@njit(parallel=True, **_OPTS)
def _reduce_threads(x, y, geometry, kind, fill, nthreads):
    rows = y.shape[0] * y.shape[1]
    chunks = 4 * nthreads
    for c in prange(chunks):
        _reduce_rows(x, y, rows * c // chunks, rows * (c + 1) // chunks, geometry, kind, fill)


@njit(inline="always", **_OPTS)
def _update(src, best, which, k, is_max, strict):
    """which[c] = k where src[c] is better than best[c] (the comparison a loop of its own,
    vectorised), then best = the extreme of the two."""
    if is_max and strict:
        for c in range(len(best)):
            which[c] = k if src[c] > best[c] else which[c]
            best[c] = sc.fmax(best[c], src[c])
    elif is_max:
        for c in range(len(best)):
            which[c] = k if src[c] >= best[c] else which[c]
            best[c] = sc.fmax(best[c], src[c])
    elif strict:
        for c in range(len(best)):
            which[c] = k if src[c] < best[c] else which[c]
            best[c] = sc.fmin(best[c], src[c])
    else:
        for c in range(len(best)):
            which[c] = k if src[c] <= best[c] else which[c]
            best[c] = sc.fmin(best[c], src[c])


@njit(inline="always", **_OPTS)
def _taps(o1, o2, o3, geometry, shape, taps):
    """The operand position of each flat window position of the window at (o1, o2, o3) into
    taps[k] = (i1, i2, i3, inside)."""
    w1, w2, w3, s1, s2, s3, p1, p2, p3, d1, d2, d3 = geometry
    k = 0
    for k1 in range(w1):
        i1 = o1 * s1 - p1 + k1 * d1
        for k2 in range(w2):
            i2 = o2 * s2 - p2 + k2 * d2
            for k3 in range(w3):
                i3 = o3 * s3 - p3 + k3 * d3
                taps[k, 0], taps[k, 1], taps[k, 2] = i1, i2, i3
                taps[k, 3] = 0 <= i1 < shape[1] and 0 <= i2 < shape[2] and 0 <= i3 < shape[3]
                k += 1


@njit(inline="always", **_OPTS)
def _select(x, b, taps, is_max, strict, best, which, filler):
    """For each channel, the flat window position the window with these taps selects (into
    `which`): the first tap, replaced by each later one better than the extreme so far (taps in
    the padding hold the identity, the row `filler`)."""
    for k in range(len(taps)):
        src = x[b, taps[k, 0], taps[k, 1], taps[k, 2]] if taps[k, 3] else filler
        if k == 0:
            best[:] = src
            which[:] = 0
        else:
            _update(src, best, which, k, is_max, strict)


@njit(**_OPTS)
def _selected_rows(values, x, out, lo_row, hi_row, geometry, is_max, strict, fill, scatter):
    """For output rows [lo_row, hi_row) of (B * O1), each window's selection (`_select`):
    with `scatter`, out (zeros, x's shape) += the window's value of `values` at the element it
    selects (select_and_scatter_add; a selected padding tap drops it); else out[window] =
    `values` (x's shape) at that element, 0 for padding (select_and_gather_add)."""
    _, o1s, o2s, o3s, cc = values.shape if scatter else out.shape
    best = np.empty(cc, x.dtype)
    filler = np.full(cc, fill, x.dtype)
    which = np.empty(cc, np.int32)
    taps = np.empty((geometry[0] * geometry[1] * geometry[2], 4), np.int64)
    for row in range(lo_row, hi_row):
        b, o1 = row // o1s, row % o1s
        for o2 in range(o2s):
            for o3 in range(o3s):
                _taps(o1, o2, o3, geometry, x.shape, taps)
                _select(x, b, taps, is_max, strict, best, which, filler)
                if scatter:
                    window = values[b, o1, o2, o3]
                    for k in range(len(taps)):
                        if taps[k, 3]:
                            cell = out[b, taps[k, 0], taps[k, 1], taps[k, 2]]
                            for c in range(cc):
                                cell[c] += window[c] if which[c] == k else 0
                    continue
                window = out[b, o1, o2, o3]
                window[:] = 0
                for k in range(len(taps)):
                    if taps[k, 3]:
                        cell = values[b, taps[k, 0], taps[k, 1], taps[k, 2]]
                        for c in range(cc):
                            window[c] = cell[c] if which[c] == k else window[c]


@njit(parallel=True, **_OPTS)
def _selected_threads(values, x, out, geometry, is_max, strict, fill, scatter, unit,
                      nthreads):
    """`_selected_rows` in parallel chunks of `unit` output rows: whole B entries, or X1 rows
    when windows of different rows are disjoint, so no two threads add into one element."""
    shape = values.shape if scatter else out.shape
    units = shape[0] * shape[1] // unit
    chunks = min(4 * nthreads, units)
    for c in prange(chunks):
        _selected_rows(values, x, out, units * c // chunks * unit,
                       units * (c + 1) // chunks * unit, geometry, is_max, strict, fill,
                       scatter)


# ----------------------------------------------------------------------------- entries


def _geometry(lay: Layout) -> tuple:
    return tuple(np.int64(v) for v in (*lay.window, *lay.strides, *lay.low, *lay.dilation))


def _threads(nbytes: int, rows: int) -> int:
    return min(rt_threads.threads_for(nbytes / BYTES_PER_NS), rows)


def _identity(dtype: np.dtype, for_max: bool):
    """max's identity (the lowest value) or min's, of `dtype`."""
    return dtype.type(max_identity(dtype) if for_max else min_identity(dtype))


def reduce_window(x: np.ndarray, kind: int, window_dimensions: tuple, window_strides: tuple,
                  padding: tuple, window_dilation: tuple) -> list[np.ndarray]:
    """reduce_window_{sum,max,min} of x (kind SUM, MAX or MIN), for a layout `layout`
    takes."""
    x = np.ascontiguousarray(x)
    ones = (1,) * x.ndim
    lay = layout(x.shape, window_dimensions, window_strides, padding, ones, window_dilation)
    y = np.empty(lay.out, x.dtype)
    fill = x.dtype.type(0) if kind == SUM else _identity(x.dtype, kind == MAX)
    x5 = read_only(x).reshape(lay.operand)
    n = _threads(x.nbytes + y.nbytes, lay.out[0] * lay.out[1])
    if n > 1:
        with rt_threads.running(n):
            _reduce_threads(x5, y, _geometry(lay), kind, fill, n)
    else:
        _reduce_rows(x5, y, 0, lay.out[0] * lay.out[1], _geometry(lay), kind, fill)
    return [y.reshape(stride_dim_all(x.shape, window_dimensions, window_strides, padding,
                                     window_dilation))]


def _selected(values, operand, out, lay, is_max, strict, scatter, nbytes):
    fill = _identity(operand.dtype, is_max)
    v5 = read_only(values).reshape(lay.out if scatter else lay.operand)
    x5 = read_only(operand).reshape(lay.operand)
    o5 = out.reshape(lay.operand if scatter else lay.out)
    rows = lay.out[0] * lay.out[1]
    unit = 1 if lay.disjoint or not scatter else lay.out[1]
    n = _threads(nbytes, rows // unit)
    if n > 1:
        with rt_threads.running(n):
            _selected_threads(v5, x5, o5, _geometry(lay), is_max, strict, fill, scatter, unit, n)
    else:
        _selected_rows(v5, x5, o5, 0, rows, _geometry(lay), is_max, strict, fill, scatter)


def select_and_scatter_add(source: np.ndarray, operand: np.ndarray, is_max: bool, strict: bool,
                           window_dimensions: tuple, window_strides: tuple,
                           padding: tuple) -> list[np.ndarray]:
    """select_and_scatter_add for a layout `layout` takes; the selection rule (`is_max`,
    `strict`) is windowed_reductions.select_rule's."""
    source, operand = np.ascontiguousarray(source), np.ascontiguousarray(operand)
    ones = (1,) * operand.ndim
    lay = layout(operand.shape, window_dimensions, window_strides, padding, ones, ones)
    out = np.zeros(operand.shape, source.dtype)
    _selected(source, operand, out, lay, is_max, strict, True, operand.nbytes + 2 * out.nbytes)
    return [out]


def select_and_gather_add(tangents: np.ndarray, operand: np.ndarray, is_max: bool, strict: bool,
                          window_dimensions: tuple, window_strides: tuple, padding: tuple,
                          window_dilation: tuple) -> list[np.ndarray]:
    """select_and_gather_add for a layout `layout` takes (no base dilation)."""
    tangents, operand = np.ascontiguousarray(tangents), np.ascontiguousarray(operand)
    ones = (1,) * operand.ndim
    lay = layout(operand.shape, window_dimensions, window_strides, padding, ones,
                 window_dilation)
    out = np.empty(lay.out, tangents.dtype)
    _selected(tangents, operand, out, lay, is_max, strict, False,
              2 * operand.nbytes + out.nbytes)
    return [out.reshape(stride_dim_all(operand.shape, window_dimensions, window_strides,
                                       padding, window_dilation))]
