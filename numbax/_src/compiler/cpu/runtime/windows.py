"""Windowed reductions in compiled CPU programs: reduce_window's sum/max/min and the
select-and-scatter/gather pair behind max pooling's derivatives, as Numba loops.

An operand is viewed as (B, X1, X2, X3, Cc): B the leading dimensions without a window, up to
three windowed dimensions (any dimension between them counts as one, with a window of 1), and
Cc the trailing dimensions without a window (a channels-last image's channels), which the
innermost loops run over with unit stride, vectorised; a single channel (Cc = 1, a
channels-first image) runs in bands of its plane laid out by stride phase, each tap one long
contiguous run over the band (`_reduce_planes`). `layout` says whether a configuration
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

from numbax._src.compiler.cpu.runtime import compile_ahead
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
U64 = np.uint64
# max pooling's selection runs tap by tap over a row's channels and routes a window's channels
# together (masked vector loops) from this many channels; fewer (a channels-first image's
# one) select window by window, in registers
CHANNELS_MIN = 8
# a single channel's bands of output rows: their phased source rows this many elements at most
# (64 KiB of float32: in L2 with the accumulator)
PHASE_BAND = 16384
COPY_CHUNK = 16  # `_copy_run`'s unit: one AVX-512 vector of float32


@njit(inline="always", **_OPTS)
def _span(outs, ins, stride, low, offset):
    """The outputs o in [lo, hi) whose tap o * stride - low + offset lies in [0, ins)."""
    lo = max(0, -((offset - low) // stride))
    hi = min(outs, (ins - 1 + low - offset) // stride + 1)
    return lo, max(lo, hi)


@njit(inline="always", **_OPTS)
def _op(a, b, kind):
    if kind == SUM:
        return a + b
    return sc.fmax(a, b) if kind == MAX else sc.fmin(a, b)


@njit(inline="always", **_OPTS)
def _fold_run(dst, d0, src, s0, n, step, kind):
    """dst[d0 + t] = dst[d0 + t] folded by `kind` with src[s0 + t * step] for t < n.

    Indices are uint64: an index Numba cannot prove non-negative gets a wrap-around test,
    which kept LLVM from vectorising the loop (5-8x slower). The unit step is a loop of its own
    (a step LLVM cannot see is not vectorised); LLVM moves the branch on `kind` out of the
    loop itself. (A constant step of 2, pooling's usual stride, was slower on the short rows
    of a channels-first image: 14 outputs a row.)"""
    d0, s0, n = U64(d0), U64(s0), U64(n)
    if step == 1:
        for t in range(n):
            dst[d0 + t] = _op(dst[d0 + t], src[s0 + t], kind)
    else:
        for t in range(n):
            dst[d0 + t] = _op(dst[d0 + t], src[s0 + t * U64(step)], kind)


@njit(inline="always", **_OPTS)
def _copy_chunk(dst, d0, src, s0, step, size):
    """dst[d0 + t] = src[s0 + t * step] for t < size, a constant at each call (so LLVM
    vectorises the loop whole); step 1 or 2, also made a constant here."""
    if step == 1:
        for t in range(U64(size)):
            dst[d0 + t] = src[s0 + t]
    else:
        for t in range(U64(size)):
            dst[d0 + t] = src[s0 + U64(2) * t]


@njit(inline="always", **_OPTS)
def _copy_run(dst, d0, src, s0, n, step):
    """dst[d0 + t] = src[s0 + t * step] for t < n. Steps 1 and 2 (pooling's) copy chunks of
    COPY_CHUNK (`_copy_chunk`), the last overlapping the one before (a copy may repeat); a
    run under COPY_CHUNK copies two overlapping halves, a run under half of it element by
    element. LLVM leaves a run of a dozen or two with a count it cannot see to the scalar
    remainder of its wide loop (4x slower)."""
    d0, s0, n, step = U64(d0), U64(s0), U64(n), U64(step)
    chunk, half = U64(COPY_CHUNK), U64(COPY_CHUNK // 2)
    if n < half or step > 2:
        for t in range(n):
            dst[d0 + t] = src[s0 + t * step]
    elif n < chunk:
        _copy_chunk(dst, d0, src, s0, step, COPY_CHUNK // 2)
        _copy_chunk(dst, d0 + n - half, src, s0 + (n - half) * step, step, COPY_CHUNK // 2)
    else:
        c = U64(0)
        while c < n:
            c = min(c, n - chunk)
            _copy_chunk(dst, d0 + c, src, s0 + c * step, step, COPY_CHUNK)
            c += chunk


@njit(inline="always", **_OPTS)
def _fill_run(dst, d0, n, value):
    d0, n = U64(d0), U64(n)
    for t in range(n):
        dst[d0 + t] = value


@njit(inline="always", **_OPTS)
def _phase_band(phased, source, u0, us, vs, geometry, fill, x2s, x3s):
    """Rows [u0, u0 + us) of each phase (r2, r3) of a padded single-channel plane:
    phased[r2, r3, u, v] = source[u * s2 + r2 - p2, v * s3 + r3 - p3], `fill` outside it."""
    _, _, _, _, s2, s3, _, p2, p3, _, _, _ = geometry
    for r2 in range(s2):
        for r3 in range(s3):
            base = (r2 * s3 + r3) * us * vs
            lo, hi = _span(vs, x3s, s3, p3, r3)
            for u in range(us):
                row = base + u * vs
                i2 = (u0 + u) * s2 + r2 - p2
                if i2 < 0 or i2 >= x2s or hi == lo:
                    _fill_run(phased, row, vs, fill)
                    continue
                _fill_run(phased, row, lo, fill)
                _copy_run(phased, row + lo, source, i2 * x3s + lo * s3 + r3 - p3, hi - lo, s3)
                _fill_run(phased, row + hi, vs - hi, fill)


@njit(**_OPTS)
def _reduce_planes(x, y, lo_row, hi_row, geometry, kind, fill):
    """`_reduce_rows` for a single channel (cc = 1: a channels-first image's planes). A band
    of output rows folds each tap (k2, k3) over the whole band as one contiguous run: the
    band's source rows are first laid out as their stride phases, padded with `fill` (a tap in
    the padding folds `fill`, which leaves an output as it was: the identity of max/min, and
    0 added to a sum that starts at +0.0 and so is never -0.0). Each phase row holds the
    band's outputs and the window's overhang; the accumulator rows are as long, their extra
    columns dropped. Per-row runs of a dozen or two strided outputs did not vectorise: 64 x 32
    planes of 56^2 pooled 3x3 with stride 2 took 5.5 ms (sum) and 10.8 (max) on one VM core,
    4.1 this way."""
    _, o1s, o2s, o3s = y.shape
    _, x1s, x2s, x3s = x.shape
    w1, w2, w3, s1, s2, s3, p1, p2, p3, d1, d2, d3 = geometry
    over2, vs = (w2 - 1) * d2 // s2, o3s + (w3 - 1) * d3 // s3
    band = max(1, min(o2s, PHASE_BAND // (s2 * s3 * vs) - over2))
    us = band + over2
    phased = np.empty(s2 * s3 * us * vs, x.dtype)
    acc = np.empty(band * vs, x.dtype)
    for row in range(lo_row, hi_row):
        b, o1 = row // o1s, row % o1s
        for o2a in range(0, o2s, band):
            rows = min(band, o2s - o2a)
            _fill_run(acc, 0, len(acc), fill)
            for k1 in range(w1):
                i1 = o1 * s1 - p1 + k1 * d1
                if i1 < 0 or i1 >= x1s:
                    continue
                source = x[b, i1].reshape(x2s * x3s)
                _phase_band(phased, source, o2a, rows + over2, vs, geometry, fill, x2s, x3s)
                for k2 in range(w2):
                    a2, r2 = (k2 * d2) // s2, (k2 * d2) % s2
                    for k3 in range(w3):
                        a3, r3 = (k3 * d3) // s3, (k3 * d3) % s3
                        start = ((r2 * s3 + r3) * (rows + over2) + a2) * vs + a3
                        _fold_run(acc, 0, phased, start, (rows - 1) * vs + o3s, 1, kind)
            out = y[b, o1].reshape(o2s * o3s)
            for o2 in range(rows):
                _copy_run(out, (o2a + o2) * o3s, acc, o2 * vs, o3s, 1)


@njit(**_OPTS)
def _reduce_rows(x, y, lo_row, hi_row, geometry, kind, fill, cc):
    """Output rows [lo_row, hi_row) of (B * O1) of y = the windows of x folded by `kind`
    (SUM, or MAX/MIN as lax.max/min: NaN wins, -0.0 < +0.0) from `fill`, in window order; taps in
    the padding are skipped (they hold `fill`). x is (B, X1, X2, X3 * cc) and y (B, O1, O2,
    O3 * cc). A row is filled with `fill`, then each tap (k1, k2, k3) in window order is folded
    into every output of the row it reaches: each output still meets its taps in window order,
    and the innermost loop runs along the row (contiguous where the stride is 1). A single
    channel runs in `_reduce_planes`."""
    if cc == 1:
        _reduce_planes(x, y, lo_row, hi_row, geometry, kind, fill)
        return
    _, o1s, o2s, o3c = y.shape
    _, x1s, x2s, x3c = x.shape
    o3s, x3s = o3c // cc, x3c // cc
    w1, w2, w3, s1, s2, s3, p1, p2, p3, d1, d2, d3 = geometry
    for row in range(lo_row, hi_row):
        b, o1 = row // o1s, row % o1s
        plane = y[b, o1].reshape(o2s * o3c)
        plane[:] = fill
        for k1 in range(w1):
            i1 = o1 * s1 - p1 + k1 * d1
            if i1 < 0 or i1 >= x1s:
                continue
            source = x[b, i1].reshape(x2s * x3c)
            for k2 in range(w2):
                lo2, hi2 = _span(o2s, x2s, s2, p2, k2 * d2)
                for k3 in range(w3):
                    lo3, hi3 = _span(o3s, x3s, s3, p3, k3 * d3)
                    if hi3 == lo3:
                        continue
                    for o2 in range(lo2, hi2):
                        at = (o2 * s2 - p2 + k2 * d2) * x3c + (k3 * d3 - p3) * cc
                        if s3 == 1 or cc == 1:  # one run: contiguous, or strided by s3
                            _fold_run(plane, o2 * o3c + lo3 * cc, source, at + lo3 * s3 * cc,
                                      (hi3 - lo3) * cc, s3 if cc == 1 else 1, kind)
                        else:
                            for o3 in range(lo3, hi3):
                                _fold_run(plane, o2 * o3c + o3 * cc, source,
                                          at + o3 * s3 * cc, cc, 1, kind)


@njit(parallel=True, **_OPTS)
def _reduce_threads(x, y, geometry, kind, fill, cc, nthreads):
    rows = y.shape[0] * y.shape[1]
    chunks = 4 * nthreads
    for c in prange(chunks):
        _reduce_rows(x, y, rows * c // chunks, rows * (c + 1) // chunks, geometry, kind, fill,
                     cc)


@njit(inline="always", **_OPTS)
def _better(value, best, is_max, strict):
    """Whether a later tap's `value` takes the selection from `best`, the extreme so far
    (strictly better, or as good, by `strict`)."""
    if is_max:
        return value > best if strict else value >= best
    return value < best if strict else value <= best


@njit(inline="always", **_OPTS)
def _take_at(best, which, i, value, k, is_max, strict):
    """Tap k's `value` into the selection at i: the first tap sets it; a later one takes the
    place where it is better (`_better`), and best becomes the extreme of the two."""
    if k == 0:
        best[i] = value
        which[i] = 0
    else:
        which[i] = k if _better(value, best[i], is_max, strict) else which[i]
        best[i] = sc.fmax(best[i], value) if is_max else sc.fmin(best[i], value)


@njit(inline="always", **_OPTS)
def _take_run(best, which, d0, src, s0, n, step, k, is_max, strict):
    """Tap k's values src[s0 + t * step] into the selection at d0 + t, t < n (`_take_at`);
    uint64 indices and constant steps, as `_fold_run`'s."""
    d0, s0, n = U64(d0), U64(s0), U64(n)
    if step == 1:
        for t in range(n):
            _take_at(best, which, d0 + t, src[s0 + t], k, is_max, strict)
    else:
        for t in range(n):
            _take_at(best, which, d0 + t, src[s0 + t * U64(step)], k, is_max, strict)


@njit(**_OPTS)
def _select_row(x, b, o1, geometry, is_max, strict, filler, o2s, cc, best, which):
    """Each window of output row (b, o1) of CHANNELS_MIN channels or more: the flat window
    position it selects (into `which`, O2 * O3 * cc): the first tap, replaced by each later one
    better than the extreme so far (`best`; taps in the padding hold the identity, `filler`'s
    one value). Taps run in window order, each over the whole row in runs of channels."""
    o3c = len(which) // o2s
    _, x1s, x2s, x3c = x.shape
    o3s, x3s = o3c // cc, x3c // cc
    w1, w2, w3, s1, s2, s3, p1, p2, p3, d1, d2, d3 = geometry
    k = 0
    for k1 in range(w1):
        i1 = o1 * s1 - p1 + k1 * d1
        inside = 0 <= i1 < x1s
        source = x[b, i1 if inside else 0].reshape(x2s * x3c)
        for k2 in range(w2):
            lo2, hi2 = _span(o2s, x2s, s2, p2, k2 * d2)
            for k3 in range(w3):
                lo3, hi3 = _span(o3s, x3s, s3, p3, k3 * d3)
                for o2 in range(o2s):
                    row = o2 * o3c
                    if not (inside and lo2 <= o2 < hi2) or hi3 == lo3:
                        _take_run(best, which, row, filler, 0, o3c, 0, k, is_max, strict)
                        continue
                    _take_run(best, which, row, filler, 0, lo3 * cc, 0, k, is_max, strict)
                    _take_run(best, which, row + hi3 * cc, filler, 0, o3c - hi3 * cc, 0, k,
                              is_max, strict)
                    at = (o2 * s2 - p2 + k2 * d2) * x3c + (k3 * d3 - p3) * cc
                    if s3 == 1:  # the windows' channels run on into the next window's
                        _take_run(best, which, row + lo3 * cc, source, at + lo3 * cc,
                                  (hi3 - lo3) * cc, 1, k, is_max, strict)
                    else:
                        for o3 in range(lo3, hi3):
                            _take_run(best, which, row + o3 * cc, source, at + o3 * s3 * cc,
                                      cc, 1, k, is_max, strict)
                k += 1


@njit(**_OPTS)
def _route_channels(values, out, b, o1, geometry, t1, t2, t3, which, scatter, cc, x1s, x2s,
                    x3s):
    """`_selected_rows`' second pass for one output row of many channels: for each window
    and each of its taps inside the operand, the channels that selected the tap, as one loop
    over the channels (vectorised, masked)."""
    _, _, o2s, o3c = values.shape if scatter else out.shape
    w1, w2, w3, s1, s2, s3, p1, p2, p3, d1, d2, d3 = geometry
    for o2 in range(o2s):
        for o3 in range(o3c // cc):
            chosen = which[o2 * o3c + o3 * cc:o2 * o3c + (o3 + 1) * cc]
            here = U64(o3 * cc)
            if not scatter:
                out[b, o1, o2, o3 * cc:(o3 + 1) * cc] = 0
            for k in range(len(t1)):
                i1, i2 = o1 * s1 - p1 + t1[k], o2 * s2 - p2 + t2[k]
                i3 = o3 * s3 - p3 + t3[k]
                if not (0 <= i1 < x1s and 0 <= i2 < x2s and 0 <= i3 < x3s):
                    continue
                there = U64(i3 * cc)
                if scatter:
                    cell, window = out[b, i1, i2], values[b, o1, o2]
                    for c in range(U64(cc)):
                        cell[there + c] += window[here + c] if chosen[c] == k else 0
                else:
                    cell, window = values[b, i1, i2], out[b, o1, o2]
                    for c in range(U64(cc)):
                        window[here + c] = cell[there + c] if chosen[c] == k else \
                            window[here + c]


@njit(inline="always", **_OPTS)
def _select_window(x, b, o1, o2, o3, c, geometry, is_max, strict, fill, cc, checked):
    """The element window (o1, o2, o3) of channel c selects, as (i1, i2, i3); i3 = -1 for a
    padding tap. Its taps in window order: the first sets the selection, a later one takes it
    where `_better`, best becoming the extreme of the two (a tap in the padding holds `fill`).
    Unless `checked`, every tap lies inside x."""
    _, x1s, x2s, x3c = x.shape
    w1, w2, w3, s1, s2, s3, p1, p2, p3, d1, d2, d3 = geometry
    best, j1, j2, j3 = fill, -1, -1, -1
    first = True
    for k1 in range(w1):
        i1 = o1 * s1 - p1 + k1 * d1
        for k2 in range(w2):
            i2 = o2 * s2 - p2 + k2 * d2
            for k3 in range(w3):
                i3 = o3 * s3 - p3 + k3 * d3
                inside = not checked or (0 <= i1 < x1s and 0 <= i2 < x2s and
                                         0 <= i3 < x3c // cc)
                value = x[b, i1, i2, i3 * cc + c] if inside else fill
                take = first or _better(value, best, is_max, strict)
                j1, j2 = (i1, i2) if take else (j1, j2)
                j3 = (i3 if inside else -1) if take else j3
                best = value if first else (
                    sc.fmax(best, value) if is_max else sc.fmin(best, value))
                first = False
    return j1, j2, j3


@njit(**_OPTS)
def _select_each(values, x, out, b, o1, geometry, is_max, strict, fill, scatter, cc):
    """`_selected_rows` for output row (b, o1) of few channels (under CHANNELS_MIN): each
    window's selection in registers (`_select_window`; without bounds tests inside the
    operand), and at once its scatter (or gather). A channels-first image's rows are a dozen
    outputs long: too short for `_select_row`'s vector runs, whose scalar remainders kept best
    and which in memory and branched on each candidate (15 ns a tap on the VM's Zen 4, 55 on a
    Xeon; this, 4)."""
    _, o1s, o2s, o3c = values.shape if scatter else out.shape
    _, x1s, x2s, x3c = x.shape
    w1, w2, w3, s1, s2, s3, p1, p2, p3, d1, d2, d3 = geometry
    lo3 = _span(o3c // cc, x3c // cc, s3, p3, 0)[0]
    hi3 = _span(o3c // cc, x3c // cc, s3, p3, (w3 - 1) * d3)[1]
    rows_inside = (_span(o1s, x1s, s1, p1, 0)[0] <= o1 <
                   _span(o1s, x1s, s1, p1, (w1 - 1) * d1)[1])
    lo2 = _span(o2s, x2s, s2, p2, 0)[0]
    hi2 = _span(o2s, x2s, s2, p2, (w2 - 1) * d2)[1]
    for o2 in range(o2s):
        inner = rows_inside and lo2 <= o2 < hi2
        for o3 in range(o3c // cc):
            for c in range(cc):
                if inner and lo3 <= o3 < hi3:
                    j1, j2, j3 = _select_window(x, b, o1, o2, o3, c, geometry, is_max, strict,
                                                fill, cc, False)
                else:
                    j1, j2, j3 = _select_window(x, b, o1, o2, o3, c, geometry, is_max, strict,
                                                fill, cc, True)
                at = o3 * cc + c
                if scatter:
                    if j3 >= 0:
                        out[b, j1, j2, j3 * cc + c] += values[b, o1, o2, at]
                else:
                    out[b, o1, o2, at] = values[b, j1, j2, j3 * cc + c] if j3 >= 0 else 0


@njit(**_OPTS)
def _selected_rows(values, x, out, lo_row, hi_row, geometry, is_max, strict, fill, scatter,
                   cc):
    """For output rows [lo_row, hi_row) of (B * O1), each window's selection: with `scatter`,
    out (zeros, x's shape) += the window's value of `values` at the element it selects (a
    selected padding tap drops it), windows in order (select_and_scatter_add); else
    out[window] = `values` (x's shape) at that element, 0 for padding
    (select_and_gather_add). Arrays are (B, ., ., . * cc), as `_reduce_rows` takes them.
    Few channels select window by window (`_select_each`); many select a row's windows tap by
    tap, vectorised over the channels (`_select_row`), then route them (`_route_channels`)."""
    _, o1s, o2s, o3c = values.shape if scatter else out.shape
    _, x1s, x2s, x3c = x.shape
    x3s = x3c // cc
    if cc < CHANNELS_MIN:
        for row in range(lo_row, hi_row):
            _select_each(values, x, out, row // o1s, row % o1s, geometry, is_max, strict,
                         fill, scatter, cc)
        return
    w1, w2, w3, s1, s2, s3, p1, p2, p3, d1, d2, d3 = geometry
    best = np.empty(o2s * o3c, x.dtype)
    which = np.empty(o2s * o3c, np.int32)
    filler = np.full(1, fill, x.dtype)
    taps = w1 * w2 * w3  # each flat window position's offsets along the three dimensions
    t1, t2, t3 = np.empty(taps, np.int64), np.empty(taps, np.int64), np.empty(taps, np.int64)
    for k in range(taps):
        t1[k], t2[k], t3[k] = k // (w2 * w3) * d1, k // w3 % w2 * d2, k % w3 * d3
    for row in range(lo_row, hi_row):
        b, o1 = row // o1s, row % o1s
        _select_row(x, b, o1, geometry, is_max, strict, filler, o2s, cc, best, which)
        _route_channels(values, out, b, o1, geometry, t1, t2, t3, which, scatter, cc,
                        x1s, x2s, x3s)


@njit(parallel=True, **_OPTS)
def _selected_threads(values, x, out, geometry, is_max, strict, fill, scatter, cc, unit,
                      nthreads):
    """`_selected_rows` in parallel chunks of `unit` output rows: whole B entries, or X1 rows
    when windows of different rows are disjoint, so no two threads add into one element."""
    shape = values.shape if scatter else out.shape
    units = shape[0] * shape[1] // unit
    chunks = min(4 * nthreads, units)
    for c in prange(chunks):
        _selected_rows(values, x, out, units * c // chunks * unit,
                       units * (c + 1) // chunks * unit, geometry, is_max, strict, fill,
                       scatter, cc)


# ----------------------------------------------------------------------------- entries


def _geometry(lay: Layout) -> tuple:
    return tuple(np.int64(v) for v in (*lay.window, *lay.strides, *lay.low, *lay.dilation))


def _threads(nbytes: int, rows: int) -> int:
    return min(rt_threads.threads_for(nbytes / BYTES_PER_NS), rows)


def _identity(dtype: np.dtype, for_max: bool):
    """max's identity (the lowest value) or min's, of `dtype`."""
    return dtype.type(max_identity(dtype) if for_max else min_identity(dtype))


def _rows(shape5: tuple) -> tuple:
    """A (B, X1, X2, X3, Cc) layout as the kernels take it: (B, X1, X2, X3 * Cc)."""
    return (*shape5[:3], shape5[3] * shape5[4])


def reduce_window(x: np.ndarray, kind: int, window_dimensions: tuple, window_strides: tuple,
                  padding: tuple, window_dilation: tuple) -> list[np.ndarray]:
    """reduce_window_{sum,max,min} of x (kind SUM, MAX or MIN), for a layout `layout`
    takes."""
    x = np.ascontiguousarray(x)
    ones = (1,) * x.ndim
    lay = layout(x.shape, window_dimensions, window_strides, padding, ones, window_dilation)
    y = np.empty(_rows(lay.out), x.dtype)
    fill = x.dtype.type(0) if kind == SUM else _identity(x.dtype, kind == MAX)
    x4 = read_only(x).reshape(_rows(lay.operand))
    cc = lay.out[4]
    n = _threads(x.nbytes + y.nbytes, lay.out[0] * lay.out[1])
    if n > 1 and compile_ahead.threaded_ready(
            _reduce_threads, lambda: (x4, y, _geometry(lay), kind, fill, cc, n)):
        with rt_threads.running(n):
            _reduce_threads(x4, y, _geometry(lay), kind, fill, cc, n)
    else:
        _reduce_rows(x4, y, 0, lay.out[0] * lay.out[1], _geometry(lay), kind, fill, cc)
    return [y.reshape(stride_dim_all(x.shape, window_dimensions, window_strides, padding,
                                     window_dilation))]


def _selected(values, operand, out, lay, is_max, strict, scatter, nbytes):
    fill = _identity(operand.dtype, is_max)
    outer, inner = _rows(lay.out), _rows(lay.operand)
    v4 = read_only(values).reshape(outer if scatter else inner)
    x4 = read_only(operand).reshape(inner)
    o4 = out.reshape(inner if scatter else outer)
    rows = lay.out[0] * lay.out[1]
    unit = 1 if lay.disjoint or not scatter else lay.out[1]
    n = _threads(nbytes, rows // unit)
    cc = lay.out[4]
    if n > 1 and compile_ahead.threaded_ready(_selected_threads, lambda: (
            v4, x4, o4, _geometry(lay), is_max, strict, fill, scatter, cc, unit, n)):
        with rt_threads.running(n):
            _selected_threads(v4, x4, o4, _geometry(lay), is_max, strict, fill, scatter, cc,
                              unit, n)
    else:
        _selected_rows(v4, x4, o4, 0, rows, _geometry(lay), is_max, strict, fill, scatter, cc)


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
