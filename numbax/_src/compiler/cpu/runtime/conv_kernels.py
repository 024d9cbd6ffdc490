"""The compiled loops of CPU convolutions: gemm.py's register tile driven over a convolution's
input in place (no patch matrix), in the two forms `conv.py` chooses between.

* **Output tiles** (`tiles_run`; forward and input-gradient convolutions). The input is a
  channels-last grid (N, spatial..., C). A tile is ``MR`` output positions whose windows start
  ``rsa`` elements apart in the grid (consecutive positions of one output row, or, for stride 1,
  running on through the padding columns into the next row: `build_tiles`); for each segment of
  the window that is contiguous in the grid (a row of taps x channels, or one tap) one
  `register_tile` call multiplies the tile's ``MR`` rows by the kernel's matching rows (B,
  (taps x channels, out channels)) into a tile of C kept in L1; the tile's valid rows are then
  copied into the output (rows, out channels).
* **Window lines** (`lines_run`; kernel-gradient convolutions: few output positions, a long
  window). For each output position, each line of the window (one input channel and all but
  the last window dimension) is one `register_tile` call over the taps of the line that fall
  inside the input (the padding is never materialised): rows are the input's batch index
  (``rsa`` apart), k the taps along the line, B the kernel's line read in place. Every call
  accumulates into a per-thread buffer of whole tiles.
* **Direct** (`direct_run`; depthwise convolutions, one input channel per group): a loop over
  output positions and taps, vectorised over the output channels; a GEMM tile would use one
  of its 32 columns.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from numbax._src.compiler.cpu.runtime import gemm
from numbax._src.compiler.cpu.runtime.gemm import tile_kernel

# The convolutions' register tile: gemm.py's, which follows Numba's target: 12 rows by two
# 64-byte vectors with AVX-512, 6 rows by two 32-byte vectors with AVX2. (The 12-row tile of
# split 64-byte vectors, kept on every host before, spilled on AVX2's 16 registers: a 1-D
# convolution of 32 x 200 x 128 by 5 taps to 64 channels ran 15 GMAC/s on a Zen 3 core,
# OpenBLAS's GEMM 27.)
MR, VEC_BYTES = gemm.MR, gemm.VEC_BYTES
register_tile = tile_kernel(MR, VEC_BYTES)


@njit(cache=True, error_model="numpy")
def _walk_tiles(starts_out, step, amax, first, rows):
    """`build_tiles`' walk: fills first/rows when they have room, and returns the tile count
    (-1 when a tile cannot fit below amax)."""
    m = len(starts_out)
    fill = len(first) > 0
    count = 0
    j = 0
    while j < m:
        start = starts_out[j]
        over = start + (MR - 1) * step - amax
        if over > 0:  # whole steps back, so the position stays on one of the rows
            start -= -(-over // step) * step
            if start < 0:
                return -1
        if fill:
            first[count] = start
        for i in range(MR):
            address = start + i * step
            if j == m or starts_out[j] < address:
                break  # a position between this tile's rows: the next tile starts there
            if starts_out[j] == address:
                if fill:
                    rows[count, i] = j
                j += 1
        count += 1
    return count


def build_tiles(starts_out: np.ndarray, step: int, amax: int) -> tuple[np.ndarray, np.ndarray]:
    """Tiles over output positions whose grid addresses `starts_out` (sorted, in output order)
    are given: each tile is MR addresses `step` apart from its first, the first uncovered
    position (moved back so no row passes `amax`). Returns (first address of each tile, and for
    each of its rows the output position it computes or -1); empty when a tile cannot fit.
    Two walks: the first counts the tiles, so the tables take no more room than they need."""
    count = _walk_tiles(starts_out, step, amax, np.empty(0, np.int64),
                        np.empty((0, MR), np.int32))
    if count < 0:
        return np.empty(0, np.int64), np.empty((0, MR), np.int32)
    first, rows = np.empty(count, np.int64), np.full((count, MR), -1, np.int32)
    _walk_tiles(starts_out, step, amax, first, rows)
    return first, rows


# Tiles sharing each pass over the kernel (`tiles_run`'s `block`): a (column strip, segment)
# block of B, 24 KiB for 64 float32 channels x 3 taps, is loaded once for 4 tiles and stays in
# L1 across them, instead of once per tile. 16-core Xeon, issue 18's forward at 16 threads:
# 12.2 ms with 1, 10.0 with 4, 10.2 with 8, 10.9 with 16 (jax.jit 10.1); one Zen 5 thread:
# the same within 1 %.
TILE_BLOCK = 4


@njit(cache=True, error_model="numpy")
def tiles_run(x, first, rows, t_lo, t_hi, rsa, csa, seg_a, seg_b, seg_kc, group_a, group_b,
              group_col, group_width, w, ldb, out, ldo, block):
    """Tiles [t_lo, t_hi) of an output-tile convolution: out[r, group_col[g] + j] for each
    valid row r of a tile and j < group_width[g] = sum over segments q of
    x[first + group_a[g] + seg_a[q] + i*rsa + k] * w[group_b[g] + (seg_b[q] + k)*ldb + j],
    k < seg_kc[q] (all offsets in elements of the flat arrays). `block` tiles share each pass
    over the kernel: a (column strip, segment) block of it is read once for all of them."""
    nr_full = 2 * (VEC_BYTES // out.itemsize)
    span = MR * nr_full
    tiles = np.empty(block * span, out.dtype)
    for tb in range(t_lo, t_hi, block):
        te = min(tb + block, t_hi)
        for g in range(len(group_a)):
            for j0 in range(0, group_width[g], nr_full):
                for q in range(len(seg_a)):
                    b_at = group_b[g] + seg_b[q] * ldb + j0
                    for t in range(tb, te):
                        register_tile(seg_kc[q], x, first[t] + group_a[g] + seg_a[q], rsa,
                                      csa, w, b_at, ldb, tiles, (t - tb) * span, nr_full,
                                      q > 0)
                nr = min(nr_full, group_width[g] - j0)
                for t in range(tb, te):
                    at = (t - tb) * span
                    for i in range(MR):
                        r = rows[t, i]
                        if r < 0:
                            continue
                        dst = r * ldo + group_col[g] + j0
                        for j in range(nr):
                            out[dst + j] = tiles[at + i * nr_full + j]


@njit(cache=True, parallel=True, error_model="numpy")
def tiles_threads(x, first, rows, rsa, csa, seg_a, seg_b, seg_kc, group_a, group_b, group_col,
                  group_width, w, ldb, out, ldo, block, nthreads):
    """`tiles_run` over all tiles, in 4 * nthreads chunks on Numba's pool."""
    total = len(first)
    chunks = 4 * nthreads
    for c in prange(chunks):
        lo, hi = total * c // chunks, total * (c + 1) // chunks
        tiles_run(x, first, rows, lo, hi, rsa, csa, seg_a, seg_b, seg_kc, group_a, group_b,
                  group_col, group_width, w, ldb, out, ldo, block)


@njit(cache=True, parallel=True, error_model="numpy")
def fill_rows(src, dst, offsets, length, nthreads):
    """dst[offsets[r]:offsets[r] + length] = src[r * length:(r + 1) * length] for every row r,
    in nthreads chunks on Numba's pool: the input copied into a padded grid at the memory
    bandwidth of every core (one numpy copy streamed it on one core: ~4 ms of a 12 ms
    forward convolution on a 16-core Xeon)."""
    total = len(offsets)
    for c in prange(nthreads):
        for r in range(total * c // nthreads, total * (c + 1) // nthreads):
            at = offsets[r]
            base = r * length
            for e in range(length):
                dst[at + e] = src[base + e]


@njit(cache=True, error_model="numpy")
def lines_run(lhs, rhs, part, l_lo, l_hi, a_off, b_off, kcs, rsa, csa, ldb, row_starts,
              col_starts, strip_rows, ldc):
    """Window lines [l_lo, l_hi) of a window-line convolution into `part` (flat, zeroed by
    the caller): for each output position s with kcs[l, s] > 0 and each (row strip, column
    strip) pair of group g, part[((s * G + g) * strip_rows + 12 r) * ldc + 32 c ...] +=
    lhs rows row_starts[g, r] + i (rsa apart) x the line's kcs[l, s] taps (csa apart), times
    rhs[b_off[l, s] + k*ldb + col_starts[g, c] + j]."""
    nr_full = 2 * (VEC_BYTES // part.itemsize)
    groups, ms = row_starts.shape
    ns = col_starts.shape[1]
    positions = a_off.shape[1]
    for line in range(l_lo, l_hi):
        for s in range(positions):
            kc = kcs[line, s]
            if kc <= 0:
                continue
            for g in range(groups):
                block = (s * groups + g) * strip_rows
                for r in range(ms):
                    for c in range(ns):
                        register_tile(kc, lhs, a_off[line, s] + row_starts[g, r] * rsa, rsa,
                                      csa, rhs, b_off[line, s] + col_starts[g, c], ldb, part,
                                      (block + r * MR) * ldc + c * nr_full, ldc, True)


@njit(cache=True, parallel=True, error_model="numpy")
def lines_threads(lhs, rhs, parts, a_off, b_off, kcs, rsa, csa, ldb, row_starts, col_starts,
                  strip_rows, ldc, nthreads):
    """`lines_run` over all lines, thread th into parts[th], then parts[0] = their sum."""
    total = a_off.shape[0]
    for th in prange(nthreads):
        lo, hi = total * th // nthreads, total * (th + 1) // nthreads
        lines_run(lhs, rhs, parts[th], lo, hi, a_off, b_off, kcs, rsa, csa, ldb, row_starts,
                  col_starts, strip_rows, ldc)
    size = parts.shape[1]
    for e in prange(size):
        total_e = parts[0, e]
        for th in range(1, nthreads):
            total_e += parts[th, e]
        parts[0, e] = total_e


DIRECT_POSITIONS_BELOW = 8  # fewer channels: direct_run's loop over positions is innermost
# positions of a line summed at a time over the positions: the sums stay in L1, and one long
# line (jnp.convolve of a million samples) is many units for threads
DIRECT_SEGMENT = 2048


@njit(cache=True, error_model="numpy")
def direct_units(lines, width, channels):
    """`direct_run`'s units of work: each line's segments of DIRECT_SEGMENT positions where
    the loop over positions is innermost, else whole lines."""
    if channels < DIRECT_POSITIONS_BELOW:
        return len(lines) * -(-width // DIRECT_SEGMENT)
    return len(lines)


@njit(cache=True, error_model="numpy")
def direct_run(x, lines, u_lo, u_hi, step, width, toff, mult, w, out):
    """Units [u_lo, u_hi) (`direct_units`) of a depthwise convolution: out[line * width + i, o]
    = sum over taps t of x[lines[line] + i*step + toff[t] + o // mult] * w[t, o], the taps in
    order (so the units' split changes no bits).

    The innermost loop runs over channels (vectorised across them) where there are enough of
    them, else over a segment's positions into a segment of sums: with one channel (vmap of
    jnp.convolve, 512 lines of 512 and 9 taps) the channel loop made each position a slice
    and a scalar sum: 5.6 ms for the convolution against 0.25. A whole line of sums for one
    signal of a million samples left L1 at every tap, and ran on one thread."""
    channels = out.shape[1]
    if channels < DIRECT_POSITIONS_BELOW:
        flat = out.ravel()  # (a view)
        segments = -(-width // DIRECT_SEGMENT)
        acc = np.empty(min(width, DIRECT_SEGMENT), out.dtype)
        for unit in range(u_lo, u_hi):
            line, lo = unit // segments, unit % segments * DIRECT_SEGMENT
            n = min(DIRECT_SEGMENT, width - lo)
            base = line * width + lo
            for o in range(channels):
                acc[:] = 0
                start = lines[line] + lo * step + o // mult
                fused = 0
                if step == 1:  # contiguous slices: the loops vectorise (4.5x)
                    # four taps a pass over the sums, each added in tap order as one at a
                    # time would (the same bits, a quarter of the sums' loads and stores)
                    while fused + 4 <= len(toff):
                        f = fused
                        x0 = x[start + toff[f]:start + toff[f] + n]
                        x1 = x[start + toff[f + 1]:start + toff[f + 1] + n]
                        x2 = x[start + toff[f + 2]:start + toff[f + 2] + n]
                        x3 = x[start + toff[f + 3]:start + toff[f + 3] + n]
                        w0, w1, w2, w3 = w[f, o], w[f + 1, o], w[f + 2, o], w[f + 3, o]
                        for i in range(n):
                            acc[i] = (((acc[i] + x0[i] * w0) + x1[i] * w1) + x2[i] * w2) \
                                + x3[i] * w3
                        fused += 4
                for t in range(fused, len(toff)):
                    wt = w[t, o]
                    src = start + toff[t]
                    if step == 1:
                        xs = x[src:src + n]
                        for i in range(n):
                            acc[i] += xs[i] * wt
                    else:
                        for i in range(n):
                            acc[i] += x[src + i * step] * wt
                for i in range(n):
                    flat[(base + i) * channels + o] = acc[i]
        return
    for line in range(u_lo, u_hi):
        for i in range(width):
            start = lines[line] + i * step
            acc = out[line * width + i]
            acc[:] = 0
            for t in range(len(toff)):
                src = start + toff[t]
                wt = w[t]
                if mult == 1:
                    for o in range(channels):
                        acc[o] += x[src + o] * wt[o]
                    continue
                for g in range(channels // mult):
                    v = x[src + g]
                    for j in range(g * mult, (g + 1) * mult):
                        acc[j] += v * wt[j]


@njit(parallel=True, cache=True, error_model="numpy")
def direct_threads(x, lines, step, width, toff, mult, w, out, nthreads):
    """`direct_run` over all units, in up to 4 * nthreads chunks on Numba's pool."""
    total = direct_units(lines, width, out.shape[1])
    chunks = min(4 * nthreads, total)
    for c in prange(chunks):
        direct_run(x, lines, total * c // chunks, total * (c + 1) // chunks, step, width, toff,
                   mult, w, out)
