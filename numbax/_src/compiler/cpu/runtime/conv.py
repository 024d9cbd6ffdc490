"""conv_general_dilated in compiled CPU programs: each configuration is planned once (which of
four forms runs it, by estimated cost; layouts, padding and offset tables) and then run on
numbax's register tile (conv_kernels' tiles and window lines), a direct loop (depthwise), or
batched products of window patches (conv_patches.py: few output positions).

`plan` takes shapes and params only, so the lowering asks it at compile time whether the
kernels take an equation (float32/float64 operands); the rest run the eager implementation.
"""
from __future__ import annotations

import functools
import itertools
import math
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from numbax._src.compiler.cpu.loops import POOL_MAX_BYTES, POOL_MIN_BYTES
from numbax._src.compiler.cpu.runtime import compile_ahead, conv_patches, copies
from numbax._src.compiler.cpu.runtime import conv_kernels as ck
from numbax._src.compiler.cpu.runtime import kernels as kc
from numbax._src.compiler.cpu.runtime import threads as rt_threads
from numbax._src.compiler.cpu.runtime.conv_kernels import MR, VEC_BYTES
from numbax._src.compiler.cpu.runtime.gemm_operands import read_only
from numbax._src.compiler.cpu.runtime.library import busy_site, gemm_threads
from numbax._src.lax.conv_numpy import dilate_and_pad, dilate_shape, stride_dim

# Cost model of the forms (ns), set from measurements on the 2-core Zen 5 VM
# (docs/performance.md, issue 18): the tile's multiply-adds, each register_tile call's fixed
# cost (C's tile read and written), and the bytes a copy of the input moves.
MACS_PER_NS = 64.0
DIRECT_MACS_PER_NS = 12.0  # the direct (depthwise) loop: vector FMAs bound by their loads
CALL_NS = 15.0
COPY_BYTES_PER_NS = 5.0

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


@dataclass(frozen=True)
class Shape:
    """A convolution in canonical terms: lhs (N, C, S...), rhs (O, I, K...), out (N / Gb, O,
    Out...), with the params that shape it."""

    lhs_shape: tuple
    rhs_shape: tuple
    dtype: np.dtype
    strides: tuple
    padding: tuple
    lhs_dilation: tuple
    rhs_dilation: tuple
    specs: tuple
    groups_f: int
    groups_b: int

    @property
    def d(self) -> int:
        return len(self.strides)

    def lhs(self, role: int) -> int:
        return self.lhs_shape[self.specs[0][role]]

    def rhs(self, role: int) -> int:
        return self.rhs_shape[self.specs[1][role]]

    @functools.cached_property
    def spatial(self) -> tuple:
        return tuple(self.lhs(2 + i) for i in range(self.d))

    @functools.cached_property
    def window(self) -> tuple:
        return tuple(self.rhs(2 + i) for i in range(self.d))

    @functools.cached_property
    def padded(self) -> tuple:
        dilated = dilate_shape(self.spatial, self.lhs_dilation)
        return tuple(n + lo + hi for n, (lo, hi) in zip(dilated, self.padding))

    @functools.cached_property
    def out_spatial(self) -> tuple:
        kd = dilate_shape(self.window, self.rhs_dilation)
        return tuple(stride_dim(p, k, s) for p, k, s in zip(self.padded, kd, self.strides))

    @functools.cached_property
    def macs(self) -> int:
        """Multiply-adds of the convolution (what its thread count is chosen from)."""
        return (math.prod(self.out_spatial) * self.lhs(0) // self.groups_b
                * math.prod(self.rhs_shape))


def _strides(shape: tuple) -> tuple:
    """Element strides of a C-contiguous array of `shape`."""
    return tuple(math.prod(shape[i + 1:]) for i in range(len(shape)))


def _strips(width: int, nr: int) -> int:
    return -(-width // nr)


# ----------------------------------------------------------------------------- output tiles


@dataclass
class TilePlan:
    """An output-tile convolution (conv_kernels.tiles_run) with its tables."""

    in_place: bool  # the input is the grid itself (channels-last, no padding or dilation)
    grid_shape: tuple  # (N, padded spatial..., C)
    slack: int
    first: np.ndarray
    rows: np.ndarray
    rsa: int
    seg_a: np.ndarray
    seg_b: np.ndarray
    seg_kc: np.ndarray
    group_a: np.ndarray
    group_b: np.ndarray
    group_col: np.ndarray
    group_width: np.ndarray
    kernel_in_place: bool  # the kernel's memory is already B: (taps x channels, out channels)
    ldb: int
    cost: float
    grids: list = field(default_factory=list)  # the last grid and output (`_buffer`)
    outs: list = field(default_factory=list)


# Bytes that all plans' pools may keep alive together (a pool's buffers die with its plan,
# when `plan`'s cache drops it).
POOL_BUDGET_BYTES = 1 << 30
_pooled_bytes = [0]


def _release(nbytes: int) -> None:
    _pooled_bytes[0] -= nbytes


def _buffer(pool: list, size: int, dtype: np.dtype, zeroed: bool) -> np.ndarray:
    """A flat buffer of `size` elements: the pool's last one when nothing else holds it any
    more, else a fresh one (zeros when `zeroed`), which the pool then keeps while the budget
    allows. A reused grid needs no zeroing: its padding and dilation holes are never written.
    Fresh buffers of tens of MB are page-faulted and zeroed by the OS on first touch, as
    kernels.take explains."""
    nbytes = size * dtype.itemsize
    buf = kc.take(pool) if POOL_MIN_BYTES <= nbytes <= POOL_MAX_BYTES else None
    if buf is not None:
        pool.append(buf)
        return buf
    buf = np.zeros(size, dtype) if zeroed else np.empty(size, dtype)
    if POOL_MIN_BYTES <= nbytes <= POOL_MAX_BYTES and (
            _pooled_bytes[0] + nbytes <= POOL_BUDGET_BYTES):
        _pooled_bytes[0] += nbytes
        weakref.finalize(buf, _release, nbytes)
        pool.append(buf)
    return buf


def _channels_last(spec: tuple, d: int) -> bool:
    """Whether an operand laid out by `spec` is (batch-like, spatial..., feature-like) in
    memory."""
    return tuple(spec) == (0, d + 1, *range(1, d + 1))


def _in_place(cv: Shape) -> bool:
    """Whether the input is its own grid: channels-last, no padding or dilation."""
    return (all(r == 1 for r in cv.lhs_dilation) and all(p == (0, 0) for p in cv.padding)
            and _channels_last(cv.specs[0], cv.d))


def _window_starts(cv: Shape, dims: int) -> np.ndarray:
    """The grid element offset of each output position's window over the batch and the first
    `dims` output dimensions, in output order."""
    gs, image = _strides(cv.padded), math.prod(cv.padded)
    starts = np.zeros(1, np.int64)
    for n, s, g in zip(cv.out_spatial[:dims], cv.strides, gs):
        starts = np.add.outer(starts, np.arange(n, dtype=np.int64) * s * g).ravel()
    nb = cv.lhs(0) // cv.groups_b
    return np.add.outer(np.arange(nb, dtype=np.int64) * image, starts).ravel() * cv.lhs(1)


def _tile_cost(cv: Shape) -> float:
    """`_tile_plan`'s cost, estimated from sizes alone (the tiles are counted when built)."""
    groups = cv.groups_f * cv.groups_b
    og, cg = cv.rhs(0) // groups, cv.lhs(1) // cv.groups_f
    nr = 2 * (VEC_BYTES // cv.dtype.itemsize)
    out, window = cv.out_spatial, cv.window
    lines = cv.lhs(0) // cv.groups_b * math.prod(out[:-1])
    if cv.strides[-1] == 1:  # tiles run on through the padding columns into the next line
        tiles = -(-lines * cv.padded[-1] // MR)
    else:
        tiles = lines * -(-out[-1] // MR)
    merge = cv.groups_f == 1 and cv.rhs_dilation[-1] == 1
    segments = math.prod(window[:-1] if merge else window)
    strips = groups * _strips(og, nr)
    macs = tiles * MR * strips * nr * math.prod(window) * cg
    copy = 0 if _in_place(cv) else 2 * cv.lhs(0) * math.prod(cv.padded) * cv.lhs(1)
    return (macs / MACS_PER_NS + tiles * strips * segments * CALL_NS
            + copy * cv.dtype.itemsize / COPY_BYTES_PER_NS)


def _tile_plan(cv: Shape) -> TilePlan | None:
    d, c = cv.d, cv.lhs(1)
    groups = cv.groups_f * cv.groups_b
    nb = cv.lhs(0) // cv.groups_b
    og = cv.rhs(0) // groups
    cg = c // cv.groups_f
    padded, window = cv.padded, cv.window
    nr = 2 * (VEC_BYTES // cv.dtype.itemsize)
    grid_shape = (cv.lhs(0), *padded, c)
    gs = _strides(padded)  # grid strides in positions
    image = math.prod(padded)
    merge = cv.groups_f == 1 and cv.rhs_dilation[-1] == 1  # a row of taps x channels is one run
    seg_a, seg_b, seg_kc = [], [], []
    for tap in itertools.product(*(range(k) for k in (window[:-1] if merge else window))):
        position = sum(t * r * g for t, r, g in zip(tap, cv.rhs_dilation, gs))
        seg_a.append(position * c)
        flat = sum(t * s for t, s in zip(tap, _strides(window)))
        seg_b.append(flat * cg)
        seg_kc.append(window[-1] * c if merge else cg)
    if cv.groups_f > 1:
        group_a = [g * cg for g in range(groups)]
    else:
        group_a = [g * nb * image * c for g in range(groups)]
    ldb = _strips(og, nr) * nr
    kg = math.prod(window) * cg
    reach = max(group_a) + max(a + k for a, k in zip(seg_a, seg_kc)) - 1 if seg_a else 0
    starts = _window_starts(cv, d)
    step = cv.strides[-1] * c
    in_place = _in_place(cv)
    size = math.prod(grid_shape)
    first, rows = ck.build_tiles(starts, step, size - 1 - reach) if in_place else ((), ())
    slack = 0
    if len(first) == 0:  # a copy of the input, with room for the last tile's rows
        in_place, slack = False, (MR - 1) * step
        first, rows = ck.build_tiles(starts, step, size + slack - 1 - reach)
    kernel_in_place = groups == 1 and ldb == og and tuple(cv.specs[1]) == (
        d + 1, d, *range(d))
    calls = len(first) * sum(_strips(og, nr) for _ in range(groups)) * len(seg_a)
    macs = len(first) * MR * groups * ldb * kg
    copy = 0 if in_place else 2 * size * cv.dtype.itemsize
    cost = macs / MACS_PER_NS + calls * CALL_NS + copy / COPY_BYTES_PER_NS
    i64 = functools.partial(np.asarray, dtype=np.int64)
    return TilePlan(in_place, grid_shape, slack, first, rows, step, i64(seg_a), i64(seg_b),
                    i64(seg_kc), i64(group_a), i64([g * kg * ldb for g in range(groups)]),
                    i64([g * og for g in range(groups)]), i64([og] * groups),
                    kernel_in_place, ldb, cost)


def _grid(cv: Shape, plan: TilePlan, lhs: np.ndarray, threads: int) -> np.ndarray:
    """The input as the plan's flat grid: lhs itself, or its dilated and padded channels-last
    copy with `slack` zeros after it (a channels-last input without dilation or cropping
    copied row by row on `threads` threads)."""
    if plan.in_place:
        return read_only(lhs.reshape(-1))
    flat = _buffer(plan.grids, math.prod(plan.grid_shape) + plan.slack, lhs.dtype, True)
    grid = flat[:math.prod(plan.grid_shape)].reshape(plan.grid_shape)
    if threads > 1 and _channels_last(cv.specs[0], cv.d) and all(
            r == 1 for r in cv.lhs_dilation) and all(lo >= 0 and hi >= 0
                                                     for lo, hi in cv.padding):
        offsets = _row_offsets(lhs.shape[:-2], plan.grid_shape, cv.padding)
        n = min(threads, rt_threads.pool_size())
        with rt_threads.running(n):
            ck.fill_rows(lhs.reshape(-1), flat, offsets, lhs.shape[-2] * lhs.shape[-1], n)
        return read_only(flat)
    canonical = np.transpose(lhs, cv.specs[0])  # (N, C, S...)
    d = cv.d
    dilate_and_pad(canonical, cv.lhs_dilation, cv.padding,
                   out=np.moveaxis(grid, d + 1, 1))
    return read_only(flat)


def _row_offsets(outer: tuple, grid_shape: tuple, padding) -> np.ndarray:
    """Where each row of a channels-last input (every index but its last spatial one and the
    channel) starts in the padded grid, in elements."""
    strides = _strides(grid_shape)
    at = np.full(1, sum(lo * g for (lo, _), g in zip(padding, strides[1:])), np.int64)
    for n, g in zip(outer, strides):
        at = np.add.outer(at, np.arange(n, dtype=np.int64) * g).ravel()
    return at


def _tile_kernel(cv: Shape, plan: TilePlan, rhs: np.ndarray) -> np.ndarray:
    """The kernel as B: per group (taps x channels, out channels padded to whole strips)."""
    if plan.kernel_in_place:
        return read_only(rhs.reshape(-1))
    d = cv.d
    groups = cv.groups_f * cv.groups_b
    w = np.transpose(rhs, cv.specs[1])  # (O, I, K...)
    og = w.shape[0] // groups
    w = w.reshape(groups, og, *w.shape[1:])
    w = np.transpose(w, (0, *range(3, 3 + d), 2, 1)).reshape(groups, -1, og)
    b = np.zeros((groups, w.shape[1], plan.ldb), rhs.dtype)
    b[:, :, :og] = w
    return read_only(b.reshape(-1))


def _run_tiles(cv: Shape, plan: TilePlan, lhs: np.ndarray, rhs: np.ndarray,
               threads: int) -> tuple[np.ndarray, int]:
    """The tiles' channels-last result and the threads they ran on (`_threaded`)."""
    x = _grid(cv, plan, lhs, threads)
    w = _tile_kernel(cv, plan, rhs)
    o = cv.rhs(0)
    rows = cv.lhs(0) // cv.groups_b * math.prod(cv.out_spatial)
    flat = _buffer(plan.outs, rows * o, lhs.dtype, False)
    args = (plan.rsa, 1, plan.seg_a, plan.seg_b, plan.seg_kc, plan.group_a, plan.group_b,
            plan.group_col, plan.group_width, w, plan.ldb, flat, o, ck.TILE_BLOCK)
    threads = _threaded(ck.tiles_threads, threads, lambda: (x, plan.first, plan.rows, *args,
                                                            threads))
    if threads > 1:
        with rt_threads.running(min(threads, rt_threads.pool_size())):
            ck.tiles_threads(x, plan.first, plan.rows, *args, threads)
    else:
        ck.tiles_run(x, plan.first, plan.rows, 0, len(plan.first), *args)
    return flat.reshape(cv.lhs(0) // cv.groups_b, *cv.out_spatial, o), threads  # channels-last


def _threaded(function, threads: int, arguments) -> int:
    """`threads`, or 1 while numbax's compile helper builds the form's threaded kernel
    `function` (compile_ahead.threaded_ready; the one-thread kernel runs meanwhile)."""
    if threads > 1 and not compile_ahead.threaded_ready(function, arguments):
        return 1
    return threads


# ----------------------------------------------------------------------------- direct


@dataclass
class DirectPlan:
    """A depthwise convolution run by conv_kernels.direct_run, on the same grid as tiles."""

    in_place: bool
    grid_shape: tuple
    lines: np.ndarray
    step: int
    width: int
    toff: np.ndarray
    mult: int
    cost: float
    slack: int = 0
    grids: list = field(default_factory=list)
    outs: list = field(default_factory=list)


def _direct_cost(cv: Shape) -> float | None:
    """`_direct_plan`'s cost, or None unless each group has one input channel."""
    if cv.groups_b != 1 or cv.rhs(1) != 1:
        return None
    copy = 0 if _in_place(cv) else 2 * cv.lhs(0) * math.prod(cv.padded) * cv.lhs(1)
    return cv.macs / DIRECT_MACS_PER_NS + copy * cv.dtype.itemsize / COPY_BYTES_PER_NS


def _direct_plan(cv: Shape) -> DirectPlan | None:
    cost = _direct_cost(cv)
    if cost is None:
        return None
    c, d = cv.lhs(1), cv.d
    gs = _strides(cv.padded)
    toff = [sum(t * r * g for t, r, g in zip(tap, cv.rhs_dilation, gs)) * c
            for tap in itertools.product(*(range(k) for k in cv.window))]
    in_place = _in_place(cv)
    return DirectPlan(in_place, (cv.lhs(0), *cv.padded, c), _window_starts(cv, d - 1),
                      cv.strides[-1] * c, cv.out_spatial[-1], np.asarray(toff, np.int64),
                      cv.rhs(0) // c, cost)


def _run_direct(cv: Shape, plan: DirectPlan, lhs: np.ndarray, rhs: np.ndarray,
                threads: int) -> tuple[np.ndarray, int]:
    """The direct form's channels-last result and the threads it ran on (`_threaded`)."""
    x = _grid(cv, plan, lhs, threads)
    taps = math.prod(cv.window)
    w = np.ascontiguousarray(np.moveaxis(np.transpose(rhs, cv.specs[1])[:, 0], 0, -1))
    w = read_only(w.reshape(taps, cv.rhs(0)))
    o = cv.rhs(0)
    rows = cv.lhs(0) * math.prod(cv.out_spatial)
    out = _buffer(plan.outs, rows * o, lhs.dtype, False).reshape(rows, o)
    args = (plan.step, plan.width, plan.toff, plan.mult, w, out)
    threads = _threaded(ck.direct_threads, threads, lambda: (x, plan.lines, *args, threads))
    if threads > 1:
        with rt_threads.running(min(threads, rt_threads.pool_size())):
            ck.direct_threads(x, plan.lines, *args, threads)
    else:
        ck.direct_run(x, plan.lines, 0, ck.direct_units(plan.lines, plan.width, o), *args)
    return out.reshape(cv.lhs(0), *cv.out_spatial, o), threads  # channels-last


# ----------------------------------------------------------------------------- window lines


@dataclass
class LinePlan:
    """A window-line convolution (conv_kernels.lines_run) with its tables."""

    a_off: np.ndarray
    b_off: np.ndarray
    kcs: np.ndarray
    rsa: int
    csa: int
    ldb: int
    row_starts: np.ndarray
    col_starts: np.ndarray
    strip_rows: int
    ldc: int
    kernel_in_place: bool
    kernel_shape: tuple  # B's layout when copied: (I, K..., groups, width)
    row_map: np.ndarray
    col_map: np.ndarray
    cost: float


def _overlapping(size: int, width: int) -> tuple[list[int], np.ndarray]:
    """Strip starts covering `size` by strips of `width` (the last moved back to end at
    size), and where each index lands in the buffer of whole strips."""
    count = _strips(size, width)
    starts = [min(k * width, size - width) for k in range(count)]
    index = np.arange(size)
    last = (count - 1) * width
    where = np.where(index < last, index, last + index - starts[-1])
    return starts, where


def _line_cost(cv: Shape) -> float | None:
    """`_line_plan`'s cost, estimated from sizes alone (window lines not clipped by the
    padding), or None when the form does not apply: feature groups, lhs dilation, fewer batch
    rows than a tile."""
    groups = cv.groups_b
    nb, og = cv.lhs(0) // groups, cv.rhs(0) // groups
    if cv.groups_f != 1 or any(r != 1 for r in cv.lhs_dilation) or nb < MR:
        return None
    nr = 2 * (VEC_BYTES // cv.dtype.itemsize)
    ms, ns = _strips(nb, MR), _strips(og, nr)
    positions = math.prod(cv.out_spatial)
    calls = cv.rhs(1) * math.prod(cv.window[:-1]) * positions * groups * ms * ns
    macs = cv.macs * (ms * MR / nb) * (ns * nr / og)
    parts = positions * groups * ms * MR * ns * nr
    copy = 0 if og >= nr and cv.specs[1][0] == cv.d + 1 else 2 * math.prod(cv.rhs_shape)
    return (macs / MACS_PER_NS + calls * CALL_NS
            + (copy + parts) * cv.dtype.itemsize / COPY_BYTES_PER_NS)


def _line_plan(cv: Shape) -> LinePlan | None:
    d = cv.d
    if _line_cost(cv) is None:
        return None
    groups = cv.groups_b
    nb, og = cv.lhs(0) // groups, cv.rhs(0) // groups
    nr = 2 * (VEC_BYTES // cv.dtype.itemsize)
    lhs_st = _strides(cv.lhs_shape)
    sn, sc = lhs_st[cv.specs[0][0]], lhs_st[cv.specs[0][1]]
    ss = [lhs_st[a] for a in cv.specs[0][2:]]
    window, out_sp, spatial = cv.window, cv.out_spatial, cv.spatial
    kernel_in_place = og >= nr and cv.specs[1][0] == d + 1
    width = og if og >= nr else nr
    kernel_shape = (cv.rhs(1), *window, groups, width)
    if kernel_in_place:
        rhs_st = _strides(cv.rhs_shape)
        ri, rk = rhs_st[cv.specs[1][1]], [rhs_st[a] for a in cv.specs[1][2:]]
    else:
        st = _strides(kernel_shape)
        ri, rk = st[0], list(st[1:1 + d])
    # lines: (input channel, window index in all but the last dimension)
    line_index = np.stack(np.meshgrid(np.arange(cv.rhs(1)), *(np.arange(k) for k in window[:-1]),
                                      indexing="ij"), -1).reshape(-1, d)
    out_index = np.stack(np.meshgrid(*(np.arange(n) for n in out_sp), indexing="ij"),
                         -1).reshape(-1, d)
    lo = [p[0] for p in cv.padding]
    a_off = line_index[:, None, 0] * sc + np.zeros((1, len(out_index)), np.int64)
    b_off = line_index[:, None, 0] * ri + np.zeros((1, len(out_index)), np.int64)
    valid = np.ones(a_off.shape, bool)
    for i in range(d - 1):
        p = (out_index[None, :, i] * cv.strides[i] + line_index[:, None, 1 + i]
             * cv.rhs_dilation[i] - lo[i])
        valid &= (p >= 0) & (p < spatial[i])
        a_off = a_off + p * ss[i]
        b_off = b_off + line_index[:, None, 1 + i] * rk[i]
    base = out_index[:, -1] * cv.strides[-1] - lo[-1]
    r = cv.rhs_dilation[-1]
    k_lo = np.maximum(0, -(base // r))  # ceil(-base / r)
    k_hi = np.minimum(window[-1] - 1, (spatial[-1] - 1 - base) // r)
    kcs = np.where(valid, np.maximum(k_hi - k_lo + 1, 0)[None, :], 0)
    a_off = a_off + ((base + k_lo * r) * ss[-1])[None, :]
    b_off = b_off + (k_lo * rk[-1])[None, :]
    row_starts, row_map = _overlapping(nb, MR)
    col_starts, col_map = _overlapping(og, nr) if og >= nr else ([0], np.arange(og))
    ms, ns = len(row_starts), len(col_starts)
    col_stride = og if kernel_in_place else width
    calls = int(np.count_nonzero(kcs)) * groups * ms * ns
    macs = int(kcs.sum()) * groups * ms * MR * ns * nr
    copy = 0 if kernel_in_place else 2 * math.prod(kernel_shape) * cv.dtype.itemsize
    parts = len(out_index) * groups * ms * MR * ns * nr * cv.dtype.itemsize
    cost = macs / MACS_PER_NS + calls * CALL_NS + (copy + parts) / COPY_BYTES_PER_NS
    i64 = functools.partial(np.asarray, dtype=np.int64)
    return LinePlan(
        i64(a_off), i64(b_off), i64(kcs), sn, cv.rhs_dilation[-1] * ss[-1], rk[-1],
        i64([[g * nb + s for s in row_starts] for g in range(groups)]),
        i64([[g * col_stride + s for s in col_starts] for g in range(groups)]),
        ms * MR, ns * nr, kernel_in_place, kernel_shape, row_map, col_map, cost)


def _line_kernel(cv: Shape, plan: LinePlan, rhs: np.ndarray) -> np.ndarray:
    """The kernel read in place by the lines, or copied to (I, K..., groups, width)."""
    if plan.kernel_in_place:
        return read_only(rhs.reshape(-1))
    d = cv.d
    w = np.transpose(rhs, cv.specs[1])  # (O, I, K...)
    groups, og = plan.kernel_shape[-2], w.shape[0] // plan.kernel_shape[-2]
    w = w.reshape(groups, og, *w.shape[1:])
    b = np.zeros(plan.kernel_shape, rhs.dtype)
    b[..., :og] = np.transpose(w, (2, *range(3, 3 + d), 0, 1))
    return read_only(b.reshape(-1))


def _run_lines(cv: Shape, plan: LinePlan, lhs: np.ndarray, rhs: np.ndarray,
               threads: int) -> tuple[np.ndarray, int]:
    """The window lines' channels-last result and the threads they ran on (`_threaded`)."""
    x = read_only(lhs.reshape(-1))
    w = _line_kernel(cv, plan, rhs)
    groups = plan.row_starts.shape[0]
    positions = plan.a_off.shape[1]
    size = positions * groups * plan.strip_rows * plan.ldc
    threads = max(1, min(threads, plan.a_off.shape[0]))
    args = (plan.a_off, plan.b_off, plan.kcs, plan.rsa, plan.csa, plan.ldb, plan.row_starts,
            plan.col_starts, plan.strip_rows, plan.ldc)
    threads = _threaded(ck.lines_threads, threads, lambda: (
        x, w, np.zeros((threads, 1), lhs.dtype), *args, threads))
    parts = np.zeros((threads, size), lhs.dtype)
    if threads > 1:
        with rt_threads.running(min(threads, rt_threads.pool_size())):
            ck.lines_threads(x, w, parts, *args, threads)
    else:
        ck.lines_run(x, w, parts[0], 0, plan.a_off.shape[0], *args)
    blocks = parts[0].reshape(positions, groups, plan.strip_rows, plan.ldc)
    picked = blocks[:, :, plan.row_map][:, :, :, plan.col_map]  # (S', G, nb, og)
    nb, og = picked.shape[2:]
    out = np.transpose(picked, (2, 0, 1, 3)).reshape(nb, *cv.out_spatial, groups * og)
    return out, threads  # channels-last


# ----------------------------------------------------------------------------- entry


@functools.lru_cache(maxsize=64)
def plan(lhs_shape: tuple, rhs_shape: tuple, dtype: np.dtype, window_strides: tuple,
         padding: tuple, lhs_dilation: tuple, rhs_dilation: tuple, dimension_numbers: tuple,
         feature_group_count: int, batch_group_count: int):
    """(Shape, the plan of the form with the least estimated cost) for a float32/float64
    convolution with operands of these shapes, or None when the kernels do not take it (it
    runs eagerly). Only the chosen form's tables are built."""
    if np.dtype(dtype) not in _FLOATS or len(lhs_shape) < 3:
        return None
    cv = Shape(tuple(lhs_shape), tuple(rhs_shape), np.dtype(dtype), tuple(window_strides),
               tuple(tuple(p) for p in padding), tuple(lhs_dilation), tuple(rhs_dilation),
               tuple(tuple(s) for s in dimension_numbers), feature_group_count,
               batch_group_count)
    if 0 in lhs_shape or 0 in rhs_shape or 0 in cv.out_spatial:
        return None
    patches = functools.partial(conv_patches.patch_plan, copy_bytes_per_ns=COPY_BYTES_PER_NS)
    costs = [(cost, build) for cost, build in (
        (_tile_cost(cv), _tile_plan), (_line_cost(cv), _line_plan),
        (_direct_cost(cv), _direct_plan),
        (conv_patches.patch_cost(cv, COPY_BYTES_PER_NS), patches)) if cost is not None]
    return cv, min(costs, key=lambda pair: pair[0])[1](cv)


def conv_general_dilated(lhs: np.ndarray, rhs: np.ndarray, window_strides: tuple,
                         padding: tuple, lhs_dilation: tuple, rhs_dilation: tuple,
                         dimension_numbers: tuple, feature_group_count: int,
                         batch_group_count: int, preferred_element_type: Any) -> list:
    """lax.conv_general_dilated for a configuration `plan` takes (the lowering checked)."""
    if preferred_element_type is not None:
        lhs = lhs.astype(preferred_element_type, copy=False)
        rhs = rhs.astype(preferred_element_type, copy=False)
    lhs, rhs = np.ascontiguousarray(lhs), np.ascontiguousarray(rhs)
    cv, chosen = plan(lhs.shape, rhs.shape, lhs.dtype, window_strides, padding, lhs_dilation,
                      rhs_dilation, dimension_numbers, feature_group_count, batch_group_count)
    # a busy machine's choice of one thread or every core: this configuration's own timings
    site = busy_site(("conv", lhs.shape, rhs.shape, lhs.dtype.char, window_strides, padding,
                      lhs_dilation, rhs_dilation, dimension_numbers, feature_group_count,
                      batch_group_count), cv.macs)
    threads = gemm_threads(cv.macs, site)
    run = {TilePlan: _run_tiles, LinePlan: _run_lines, DirectPlan: _run_direct,
           conv_patches.PatchPlan: conv_patches.run_patches}[type(chosen)]
    out, threads = run(cv, chosen, lhs, rhs, threads)
    rt_threads.measured(site, threads)
    out_spec = cv.specs[2]
    d = cv.d
    if _channels_last(out_spec, d):
        return [out]
    canonical = np.moveaxis(out, d + 1, 1)  # (N, O, Out...)
    # on threads, in tiles (numpy's one-thread strided copy of a 64 x 16 x 28 x 28 result
    # took 0.5 ms, half the convolution's time)
    return [copies.copy(np.transpose(canonical, np.argsort(out_spec)))]
