"""The eager (numpy) kernels of conv_general_dilated, on operands in canonical (N, C, spatial...)
and (O, I, spatial...) order: GEMMs over window taps or output positions on a flattened
padded grid, and im2col for the rest; each picked by the shape at hand."""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def dilate_shape(shape: Sequence[int], dilation: Sequence[int]) -> tuple[int, ...]:
    """The size of each dimension after inserting dilation - 1 holes between elements."""
    return tuple(0 if d == 0 else 1 + r * (d - 1) for d, r in zip(shape, dilation, strict=True))


def stride_dim(size: int, window: int, stride: int) -> int:
    """How many windows of `window` fit at `stride` steps in `size` elements."""
    return max(0, (size - window) // stride + 1) if size >= window else 0


def dilate_and_pad(x: np.ndarray, dilation: Sequence[int], padding,
                   out: np.ndarray | None = None) -> np.ndarray:
    """x (N, C, spatial...) with dilation - 1 zeros between elements and (lo, hi) zeros at the
    ends of each spatial dim (negative amounts crop), in one allocation, or written into `out`
    (zeros of the result's shape, any layout)."""
    if out is None and all(d == 1 for d in dilation) and all(
            lo == 0 and hi == 0 for lo, hi in padding):
        return x
    sizes = dilate_shape(x.shape[2:], dilation)
    out_shape = [n + lo + hi for n, (lo, hi) in zip(sizes, padding)]
    if out is None:
        out = np.zeros((*x.shape[:2], *out_shape), x.dtype)
    src, dst = [slice(None)] * 2, [slice(None)] * 2
    for n, d, (lo, _), size in zip(x.shape[2:], dilation, padding, out_shape):
        first = max(0, -(lo // d))
        last = min(n - 1, (size - 1 - lo) // d) if size > 0 else -1
        if last < first:
            return out
        src.append(slice(first, last + 1))
        dst.append(slice(lo + first * d, lo + last * d + 1, d))
    out[tuple(dst)] = x[tuple(src)]
    return out


_PATCH_BYTES = 1 << 26  # im2col chunks of at most 64 MiB


def _by_stride(axes: Sequence[int], strides: Sequence[int]) -> list[int]:
    """Axes ordered outermost (largest stride) first, so copies read memory in order."""
    return sorted(axes, key=lambda a: -abs(strides[a]))


def _im2col_conv(x: np.ndarray, w: np.ndarray, strides: Sequence[int],
                    rhs_dilation: Sequence[int], groups_f: int, groups_b: int) -> np.ndarray:
    """x (N, C, S...) (already dilated and padded) * w (O, I, K...) -> (N / groups_b, O, out...).

    im2col: a strided view holds every window; it is copied into a patch matrix (in chunks)
    whose axes follow x's memory order, rows (batch, output positions) and columns (channels,
    window positions) each kept together, and one matrix product per group does the rest."""
    nsp = x.ndim - 2
    big_n = x.shape[0]
    big_o, in_f = w.shape[:2]
    ksize = w.shape[2:]
    kdil = dilate_shape(ksize, rhs_dilation)
    out_sp = tuple(stride_dim(s, k, st) for s, k, st in zip(x.shape[2:], kdil, strides))
    groups = groups_f * groups_b
    n, o = big_n // groups_b, big_o // groups
    if n * big_o * math.prod(out_sp) == 0 or in_f == 0 or math.prod(ksize) == 0:
        return np.zeros((n, big_o, *out_sp), x.dtype)
    xg = x.reshape(groups_b, n, groups_f, in_f, *x.shape[2:])
    windows = np.lib.stride_tricks.sliding_window_view(xg, kdil, axis=tuple(range(4, 4 + nsp)))
    pick = (slice(None),) * 4 + tuple(slice(0, (m - 1) * st + 1, st)
                                      for m, st in zip(out_sp, strides))
    pick += tuple(slice(None, None, r) for r in rhs_dilation)
    windows = windows[pick]  # (B, n, G, c, out..., K...)
    rows = _by_stride([1, *range(4, 4 + nsp)], windows.strides)
    cols = _by_stride([3, *range(4 + nsp, 4 + 2 * nsp)], windows.strides)
    rows_last = min(abs(windows.strides[a]) for a in rows) < min(
        abs(windows.strides[a]) for a in cols)
    # the kernel as (groups, o, columns in `cols` order)
    wg = w.reshape(groups, o, in_f, *ksize)
    wm = wg.transpose(0, 1, *[2 + (0 if a == 3 else a - 3 - nsp) for a in cols])
    kdim = in_f * math.prod(ksize)
    wm = np.ascontiguousarray(wm.reshape(groups, o, kdim))  # BLAS wants contiguous blocks
    wm_t = np.ascontiguousarray(wm.transpose(0, 2, 1))
    row_sizes = [windows.shape[a] for a in rows]
    chunk_axis = rows[0]
    per_row = math.prod(row_sizes[1:]) * kdim * groups * x.itemsize
    chunk = max(1, _PATCH_BYTES // max(1, per_row))
    total = row_sizes[0]
    res = np.empty((groups, o, *row_sizes) if rows_last else (groups, *row_sizes, o), x.dtype)
    for start in range(0, total, chunk):
        stop = min(total, start + chunk)
        part = windows[(slice(None),) * chunk_axis + (slice(start, stop),)]
        m = (stop - start) * math.prod(row_sizes[1:])
        if rows_last:
            patches = part.transpose(0, 2, *cols, *rows).reshape(groups, kdim, m)
            for g in range(groups):  # 2-D products: numpy's stacked matmul may skip BLAS
                block = wm[g] @ patches[g]
                res[g, :, start:stop] = block.reshape(o, stop - start, *row_sizes[1:])
        else:
            patches = part.transpose(0, 2, *rows, *cols).reshape(groups, m, kdim)
            for g in range(groups):
                block = patches[g] @ wm_t[g]
                res[g, start:stop] = block.reshape(stop - start, *row_sizes[1:], o)
    # to (n, groups, o, out...) with out in spatial order
    row_pos = {a: i for i, a in enumerate(rows)}
    offset = 2 if rows_last else 1
    o_axis = 1 if rows_last else 1 + len(rows)
    order = [offset + row_pos[1], 0, o_axis,
             *[offset + row_pos[a] for a in range(4, 4 + nsp)]]
    return res.transpose(order).reshape(n, big_o, *out_sp)


def _flat_strides(shape: Sequence[int]) -> list[int]:
    """Row-major element strides of a spatial grid."""
    return [math.prod(shape[d + 1:]) for d in range(len(shape))]


def _tap_conv(x: np.ndarray, w: np.ndarray, rhs_dilation: Sequence[int], out_sp: tuple,
              groups_f: int, groups_b: int) -> np.ndarray:
    """Stride-1 convolution as one GEMM per window tap: with x channels-last and its padded
    spatial grid flattened (images one after another), tap k reads rows shifted by the tap's
    flat offset, a contiguous block, so no patch matrix is built. Rows past an image's valid
    outputs read into the next image; they are cropped at the end."""
    big_n, chans = x.shape[:2]
    big_o, in_f = w.shape[:2]
    grid = x.shape[2:]
    cells = math.prod(grid)
    n, o = big_n // groups_b, big_o // (groups_f * groups_b)
    xl = np.ascontiguousarray(np.moveaxis(x, 1, -1)).reshape(big_n * cells, chans)
    rows = n * cells  # the rows of one batch group
    out = np.zeros((rows, big_o), x.dtype)
    part = np.empty((rows, o), x.dtype)
    steps = [s * r for s, r in zip(_flat_strides(grid), rhs_dilation)]
    for tap in np.ndindex(*w.shape[2:]):
        off = sum(t * s for t, s in zip(tap, steps))
        span = rows - off
        for gb in range(groups_b):
            for gf in range(groups_f):
                group = gb * groups_f + gf
                cols = slice(group * o, (group + 1) * o)
                kernel = np.ascontiguousarray(w[(cols, slice(None), *tap)].T)  # (in_f, o)
                lhs = xl[gb * rows + off:(gb + 1) * rows, gf * in_f:(gf + 1) * in_f]
                np.matmul(lhs, kernel, out=part[:span])
                np.add(out[:span, cols], part[:span], out=out[:span, cols])
    out = out.reshape(n, *grid, big_o)[(slice(None), *(slice(0, m) for m in out_sp))]
    return np.moveaxis(out, -1, 1)


def _position_conv(x: np.ndarray, w: np.ndarray, strides: Sequence[int],
                   rhs_dilation: Sequence[int], out_sp: tuple) -> np.ndarray:
    """A convolution with few output positions and a large window (a kernel gradient) as one
    GEMM per output position: x laid out (C, grid..., N) and flattened reads, for each
    position, a contiguous block of rows; the kernel, spread onto the same flattened grid
    (zeros between its taps), is the other operand."""
    big_n, chans = x.shape[:2]
    big_o = w.shape[0]
    grid = x.shape[2:]
    cells = math.prod(grid)
    flat = _flat_strides(grid)
    xl = np.ascontiguousarray(np.moveaxis(x, 0, -1)).reshape(chans * cells, big_n)
    steps = [s * r for s, r in zip(flat, rhs_dilation)]
    taps = np.array([sum(t * s for t, s in zip(tap, steps)) for tap in np.ndindex(*w.shape[2:])],
                    dtype=np.int64)
    span = int(taps.max()) + 1
    depth = (chans - 1) * cells + span
    spread = np.zeros((depth, big_o), x.dtype)  # the kernel on the flattened grid
    index = (np.arange(chans)[:, None] * cells + taps[None, :]).ravel()
    spread[index] = w.reshape(big_o, chans * len(taps)).T
    out = np.empty((big_n, big_o, *out_sp), x.dtype)
    position_steps = [s * f for s, f in zip(strides, flat)]
    for pos in np.ndindex(*out_sp):
        off = sum(p * s for p, s in zip(pos, position_steps))
        out[(slice(None), slice(None), *pos)] = xl[off:off + depth].T @ spread
    return out


def canonical_conv(x: np.ndarray, w: np.ndarray, strides: Sequence[int],
                   rhs_dilation: Sequence[int], groups_f: int, groups_b: int) -> np.ndarray:
    """x (N, C, S...) (already dilated and padded) * w (O, I, K...) -> (N / groups_b, O, out...),
    by the cheapest of the three forms for the shape."""
    kdil = dilate_shape(w.shape[2:], rhs_dilation)
    out_sp = tuple(stride_dim(s, k, st) for s, k, st in zip(x.shape[2:], kdil, strides))
    n_out = x.shape[0] // groups_b
    if n_out * w.shape[0] * math.prod(out_sp) == 0 or w.shape[1] == 0 or 0 in w.shape[2:]:
        return np.zeros((n_out, w.shape[0], *out_sp), x.dtype)
    window, outputs = math.prod(w.shape[2:]), math.prod(out_sp)
    if all(s == 1 for s in strides) and w.shape[1] >= 8 and window <= outputs:
        return _tap_conv(x, w, rhs_dilation, out_sp, groups_f, groups_b)
    if groups_f == groups_b == 1 and outputs < window:
        return _position_conv(x, w, strides, rhs_dilation, out_sp)
    return _im2col_conv(x, w, strides, rhs_dilation, groups_f, groups_b)
