"""Matrix products on the CPU: Numba loops around a register-tile kernel written in LLVM vectors.

Why numbax has its own GEMM: numpy's OpenBLAS picks its kernels for one CPU family, and where
that family lacks AVX-512 while the host has it (the 2-core dev VM sets
``OPENBLAS_CORETYPE=Haswell`` on an AVX-512 Zen 5), every product runs at the AVX2 peak,
about half of what the host can do. jax.jit's own kernels use AVX-512 there; the MLP step is
GEMM-bound, so numbax lost it on BLAS alone. Where Numba's target has AVX-512, every product
comes here, since it also beat OpenBLAS's own AVX-512 kernels once the grid was timed per
shape (`library.own_gemm`; `config.cpu_matmul` overrides it).

The kernel (`register_tile`, a Numba intrinsic) keeps an ``MR x NR`` tile of C in ``MR * 2``
vector registers of the target's width: 64 bytes with AVX-512 (12 x 32 float32, 12 x 16
float64), 32 with AVX2's 16 registers (6 x 16 float32; on AVX2 hosts library.py prefers
OpenBLAS's kernel driven on the same threads, blas_parts.py). For each k it
loads row k of B's strip (two vectors), broadcasts A's ``MR`` values of column k and issues
``2 * MR`` FMAs. LLVM's auto-vectoriser does not find this (it left a 6x32 tile written in
Numba scalar, 18 GFLOP/s), so the vectors are spelled out in IR: one thread runs it at the
FMA peak of the Zen 5 VM (~270 GFLOP/s float32, measured with the tile in L1).

Operands are C-contiguous arrays or transposes of one. A C-contiguous A is read in place
through its row stride; only a short last row strip is copied, zero-padded, into the workspace.
A transposed A (a weight gradient's xᵀ @ d) of k ≥ 256, or of k ≥ 64 and 512 rows or more, is
packed (`packs_a`), a block of row strips per k block, in the order the tile reads it: read in
place, the tile's column of A was one cache line a k at the row stride apart, 256 lines a tile,
which pushed B's strip out of L1 (at a stride of 2 KiB all into two of its sets). Packed, xᵀ @
d at batch 2048 and a transposed 1000² went from ~105 to ~140 GFLOP/s on one Emerald Rapids
core; a C-contiguous A packed the same way lost ~12 % (docs/performance.md). B's column strips
are packed per k block into a contiguous ``KC x NR`` layout (vector copies, or
`transpose_block` for a transposed B), except that C-contiguous B is read in place when the
part reuses each strip too few times to repay the copy. Loop order per part: k blocks of about
``KC`` (`k_blocks`), blocks of ``NC_STRIPS`` column strips, then each row strip of A (it stays
in L1) meets the block's packed column strips of B (from L2). The other order (each B strip
kept in L1 for a block of row strips of A streamed from L2) ran up to 11 % slower on one Xeon
core (the strip held 32 of its 48 KiB of L1 and the stream evicted it). Threads take the parts
of a grid of C from a counter (product_parts.py), so no two threads write the same part of C
and fast cores take more; a shape's first calls time a few grids and keep the fastest
(`product_parts.tuned_grid`).

An epilogue (compiler/epilogues.py: a dense layer's bias row and activation, an update's base
+ scale * C) is applied to each tile of C right after its last k block, while the tile is still
in L1 (`gemm_epilogues.finish_tile`), instead of by a later pass over the whole of C.
"""
from __future__ import annotations

import time
from types import SimpleNamespace

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from numbax._src.compiler.cpu.runtime import compile_ahead, host_isa, product_parts
from numbax._src.compiler.cpu.runtime import gemm_epilogues as ep
from numbax._src.compiler.cpu.runtime.gemm_operands import flat_operand, workspace

# One vector register of Numba's target: 64-byte zmm with AVX-512, else 32-byte ymm (AVX2).
VEC_BYTES = 64 if host_isa.numba_target_has("avx512f") else 32
# Rows of the C tile: 2 * MR accumulators + 2 B vectors + 1 broadcast fit the target's vector
# registers (32 zmm: 12 rows; 16 ymm: 6 rows, the Haswell-class kernel's 6 x 16 float32).
MR = 12 if VEC_BYTES == 64 else 6
# k block: a row strip of A, MR x KC (24 KiB of float32 with AVX-512), stays in L1 (48 KiB on
# the Xeon) while the column strips of B stream past (KC = 256: up to 5 % slower on one Xeon
# core, up to 16 % on 16, each k block a pass over C)
KC = 512
# A last k block shorter than this is spread over the others (784 = 3 x 261.3, not 3 x 256 +
# 16, when KC was 256): a 16-deep block cost a whole pass over C for 2 % of the work (k_blocks)
K_TAIL_MERGED_BELOW = KC // 4
KC_MAX = KC + K_TAIL_MERGED_BELOW  # the longest k block, what workspaces are sized for
MC_STRIPS = 32  # row strips of a transposed A packed at a time (384 x KC)
# Column strips of B a part runs through per row strip: their packed k block (1 MiB of
# float32 or float64) stays in the 2 MiB L2 while each row strip of A, in L1, meets them all
NC_STRIPS = 16
# From this many row strips in a part, C-contiguous B is packed too: its in-place rows, n
# elements apart, cost a TLB entry each and share few L1 sets when n is a power of two (on the
# Xeon's 16 threads, 1000^2 in parts of 21 row strips ran ~20 % faster packed than in place).
PACK_B_FROM_ROW_STRIPS = 4
CACHE_LINE = 64  # bytes


def _lanes(dtype) -> int:
    return VEC_BYTES // (dtype.bitwidth // 8)


def _data(context, builder, arrty, value, offset):
    """Pointer to element `offset` of a flat array value."""
    data = cgutils.create_struct_proxy(arrty)(context, builder, value=value).data
    return builder.gep(data, [offset])


def _vector_ptr(builder, ptr, index, vty):
    return builder.bitcast(builder.gep(ptr, [index]), vty.as_pointer())


def splat(builder, vty, scalar):
    """<scalar> in every lane of an LLVM vector of type `vty` (one broadcast instruction)."""
    one = builder.insert_element(ir.Constant(vty, ir.Undefined), scalar,
                                 ir.Constant(ir.IntType(32), 0))
    return builder.shuffle_vector(one, ir.Constant(vty, ir.Undefined),
                                  ir.Constant(ir.VectorType(ir.IntType(32), vty.count), None))


def _prefetch_tile(builder, pc, ldc, rows: int, row_elements: int, itemsize: int,
                   i64) -> None:
    """Asks for the C tile's cache lines (each row's two vectors) in L2, for writing, before the k
    loop: the tile reads or writes them only after it, ~3000 cycles later, and C (a 2000^2
    float32 C is 16 MB) is mostly in L3 or memory, so its 24 lines otherwise arrive as
    misses at the end of every tile. One Xeon core (taskset, four sittings of best-of-11):
    2000^2 118-129 -> 127-133 GFLOP/s, 1000^2 and x @ W1 at batch 2048 +2-4 %. To L2 rather
    than L1: the B strip (32 KiB) and A's column pass through the 48 KiB L1 meanwhile."""
    i8p = ir.IntType(8).as_pointer()
    i32 = ir.IntType(32)
    prefetch = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
        "llvm.prefetch.p0i8")
    write, to_l2, data = ir.Constant(i32, 1), ir.Constant(i32, 2), ir.Constant(i32, 1)
    for i in range(rows):
        c_row = builder.gep(pc, [builder.mul(ldc, ir.Constant(i64, i))])
        for j in range(0, row_elements, CACHE_LINE // itemsize):
            line = builder.bitcast(builder.gep(c_row, [ir.Constant(i64, j)]), i8p)
            builder.call(prefetch, [line, write, to_l2, data])


def tile_kernel(rows: int, vector_bytes: int):
    """The register-tile intrinsic of `rows` rows by two vectors of `vector_bytes` bytes (see
    `register_tile`): gemm.py's takes the target's registers (MR, VEC_BYTES), the
    convolutions keep the shape their plans are sized for (conv_kernels.py)."""

    @intrinsic
    def register_tile(typingctx, kc, a, a_off, rsa, csa, b, b_off, ldb, c, c_off, ldc,
                      accumulate):
        """c[i*ldc + j] (+)= sum over k < kc of a[i*rsa + k*csa] * b[k*ldb + j], for i < rows
        and j < 2 * lanes, on flat arrays from the given offsets (`accumulate`: add to C, else
        store). One call site per caller: each inlined copy is a fully unrolled tile, and
        LLVM's time to optimise the threaded driver grew with every copy."""
        ip = types.intp
        sig = types.void(ip, a, ip, ip, ip, b, ip, ip, c, ip, ip, types.boolean)

        def codegen(context, builder, sig, args):
            kc, a, a_off, rsa, csa, b, b_off, ldb, c, c_off, ldc, accumulate = args
            dtype = sig.args[1].dtype
            lanes = vector_bytes // (dtype.bitwidth // 8)
            align = dtype.bitwidth // 8
            vty = ir.VectorType(context.get_value_type(dtype), lanes)
            i64 = kc.type
            pa = _data(context, builder, sig.args[1], a, a_off)
            pb = _data(context, builder, sig.args[5], b, b_off)
            pc = _data(context, builder, sig.args[8], c, c_off)
            fma = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(vty, [vty] * 3),
                f"llvm.fma.v{lanes}f{dtype.bitwidth}")
            # Accumulators as allocas: LLVM's mem2reg keeps all 2 * rows in registers.
            accs = [[cgutils.alloca_once_value(builder, ir.Constant(vty, None))
                     for _ in range(2)] for _ in range(rows)]
            a_rows = [builder.gep(pa, [builder.mul(rsa, ir.Constant(i64, i))])
                      for i in range(rows)]
            _prefetch_tile(builder, pc, ldc, rows, 2 * lanes, align, i64)
            with cgutils.for_range(builder, kc) as loop:
                k = loop.index
                b_row = builder.gep(pb, [builder.mul(k, ldb)])
                bv = [builder.load(_vector_ptr(builder, b_row, ir.Constant(i64, h * lanes), vty),
                                   align=align) for h in range(2)]
                ka = builder.mul(k, csa)
                for i in range(rows):
                    av = splat(builder, vty, builder.load(builder.gep(a_rows[i], [ka])))
                    for h in range(2):
                        acc = builder.call(fma, [av, bv[h], builder.load(accs[i][h])])
                        builder.store(acc, accs[i][h])
            with builder.if_then(accumulate):
                for i in range(rows):
                    c_row = builder.gep(pc, [builder.mul(ldc, ir.Constant(i64, i))])
                    for h in range(2):
                        p = _vector_ptr(builder, c_row, ir.Constant(i64, h * lanes), vty)
                        acc = builder.load(accs[i][h])
                        builder.store(builder.fadd(builder.load(p, align=align), acc),
                                      accs[i][h])
            for i in range(rows):
                c_row = builder.gep(pc, [builder.mul(ldc, ir.Constant(i64, i))])
                for h in range(2):
                    p = _vector_ptr(builder, c_row, ir.Constant(i64, h * lanes), vty)
                    builder.store(builder.load(accs[i][h]), p, align=align)
            return context.get_dummy_value()

        return sig, codegen

    return register_tile


register_tile = tile_kernel(MR, VEC_BYTES)
# The last row strip of a batch of 2^k rows (k >= 5) holds 8 or 4 of the 12 (128 = 10 x 12 +
# 8, 256 = 21 x 12 + 4): tiles of that many rows write it into C directly, where the 12-row
# tile computed a third or two thirds of padding into scratch and copied the rest out.
SHORT_ROWS = (8, 4) if MR == 12 else ()
register_tile_8 = tile_kernel(8, VEC_BYTES)
register_tile_4 = tile_kernel(4, VEC_BYTES)


@intrinsic
def transpose_block(typingctx, src, src_off, lds, dst, dst_off, ldd):
    """dst[dst_off + c*ldd + r] = src[src_off + r*lds + c] for r, c < lanes: one square block
    transposed in registers (lanes vector loads, log2(lanes) rounds of two-vector shuffles that
    swap the off-diagonal half-blocks at each scale, lanes vector stores)."""
    ip = types.intp
    sig = types.void(src, ip, ip, dst, ip, ip)

    def codegen(context, builder, sig, args):
        src, src_off, lds, dst, dst_off, ldd = args
        dtype = sig.args[0].dtype
        lanes = _lanes(dtype)
        vty = ir.VectorType(context.get_value_type(dtype), lanes)
        i64 = lds.type
        align = dtype.bitwidth // 8
        ps = _data(context, builder, sig.args[0], src, src_off)
        pd = _data(context, builder, sig.args[3], dst, dst_off)
        rows = [builder.load(_vector_ptr(builder, ps, builder.mul(lds, ir.Constant(i64, r)), vty),
                             align=align) for r in range(lanes)]
        h = lanes // 2
        while h:
            # Rows r and r + h (r without bit h) trade their off-diagonal h-wide blocks.
            low = [c if not c & h else lanes + c - h for c in range(lanes)]
            high = [c + h if not c & h else lanes + c for c in range(lanes)]
            for r in range(lanes):
                if r & h:
                    continue
                top, bottom = rows[r], rows[r + h]
                rows[r] = builder.shuffle_vector(top, bottom, ir.Constant(
                    ir.VectorType(ir.IntType(32), lanes), low))
                rows[r + h] = builder.shuffle_vector(top, bottom, ir.Constant(
                    ir.VectorType(ir.IntType(32), lanes), high))
            h //= 2
        for r in range(lanes):
            builder.store(rows[r], _vector_ptr(builder, pd, builder.mul(ldd, ir.Constant(i64, r)),
                                               vty), align=align)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _copy_strip_row(typingctx, src, src_off, dst, dst_off):
    """dst[dst_off + j] = src[src_off + j] for j < 2 * lanes: one row of a B strip in two
    vector loads and stores (Numba's indexed loop did not vectorise: 0.3 ms of a 0.7 ms
    product went to packing)."""
    sig = types.void(src, types.intp, dst, types.intp)

    def codegen(context, builder, sig, args):
        src, src_off, dst, dst_off = args
        dtype = sig.args[0].dtype
        lanes = _lanes(dtype)
        vty = ir.VectorType(context.get_value_type(dtype), lanes)
        align = dtype.bitwidth // 8
        ps = _data(context, builder, sig.args[0], src, src_off)
        pd = _data(context, builder, sig.args[2], dst, dst_off)
        for h in range(2):
            at = ir.Constant(src_off.type, h * lanes)
            builder.store(builder.load(_vector_ptr(builder, ps, at, vty), align=align),
                          _vector_ptr(builder, pd, at, vty), align=align)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _copy_a_column(typingctx, src, src_off, dst, dst_off):
    """dst[dst_off + i] = src[src_off + i] for i < MR: a transposed A's column of one row
    strip, as one MR-lane vector load and store (LLVM splits it into the target's vectors;
    Numba's indexed loop stayed scalar, 1.3 cycles an element, so packing a panel cost more
    than the 2.5 tiles that use it)."""
    sig = types.void(src, types.intp, dst, types.intp)

    def codegen(context, builder, sig, args):
        src, src_off, dst, dst_off = args
        dtype = sig.args[0].dtype
        vty = ir.VectorType(context.get_value_type(dtype), MR)
        align = dtype.bitwidth // 8
        ps = _data(context, builder, sig.args[0], src, src_off)
        pd = _data(context, builder, sig.args[2], dst, dst_off)
        builder.store(builder.load(builder.bitcast(ps, vty.as_pointer()), align=align),
                      builder.bitcast(pd, vty.as_pointer()), align=align)
        return context.get_dummy_value()

    return sig, codegen


@njit(cache=True, error_model="numpy", inline="always")
def _pack_b(b, rsb, csb, k0, kc, j0, nr, nr_full, lanes, buf, off):
    """buf[off + k*nr_full + j] = B[k0 + k, j0 + j], zero past column nr: one column strip of
    a k block, contiguous, so the register tile reads it in one stream from L1."""
    if nr < nr_full:
        buf[off:off + kc * nr_full] = 0
    if rsb == 1 and nr == nr_full:  # transposed B: square blocks through registers
        kb = kc - kc % lanes
        for jj in range(0, nr_full, lanes):
            for kk in range(0, kb, lanes):
                transpose_block(b, (j0 + jj) * csb + k0 + kk, csb, buf,
                                 off + kk * nr_full + jj, nr_full)
        for k in range(kb, kc):
            for j in range(nr_full):
                buf[off + k * nr_full + j] = b[(j0 + j) * csb + k0 + k]
        return
    if csb == 1 and nr == nr_full:  # rows of B contiguous: vector copies
        for k in range(kc):
            _copy_strip_row(b, (k0 + k) * rsb + j0, buf, off + k * nr_full)
        return
    for k in range(kc):
        src = (k0 + k) * rsb + j0 * csb
        dst = off + k * nr_full
        for j in range(nr):
            buf[dst + j] = b[src + j * csb]


@njit(cache=True, error_model="numpy", inline="always")
def _pack_a(a, rsa, csa, k0, kc, i0, mr, buf, off):
    """buf[off + k*MR + i] = A[i0 + i, k0 + k], zero past row mr: one row strip of a k block,
    in the order the register tile broadcasts it."""
    if mr < MR:
        buf[off:off + kc * MR] = 0
    if csa == 1:  # rows of A contiguous: read each row in one stream
        for i in range(mr):
            src = (i0 + i) * rsa + k0
            for k in range(kc):
                buf[off + k * MR + i] = a[src + k]
        return
    if rsa == 1 and mr == MR:  # transposed A: each column's MR values are contiguous
        for k in range(kc):
            _copy_a_column(a, i0 + (k0 + k) * csa, buf, off + k * MR)
        return
    for k in range(kc):
        src = i0 * rsa + (k0 + k) * csa
        for i in range(mr):
            buf[off + k * MR + i] = a[src + i * rsa]


# A transposed A is packed from this k up: below it the tile's column of A spans fewer lines
# than B's strip and L1 holds both (64 x 128^3 and 128 x 64^3 batched products lost 6-7 %
# packed on the 2-core Emerald Rapids VM, 16 x 256^3 gained or tied).
PACK_A_FROM_K = 256
# ... and from PACK_A_MIN_K up with PACK_A_FROM_ROWS rows or more: a row block's columns of A
# then span more lines than L1 holds beside B's strip, re-read for every column strip of B (a
# batch-128 weight gradient 784 x 128 x 512: 8 % faster packed; under 512 rows even or slower,
# 128^3 by 7-11 %: docs/performance.md, "Weight gradients at batch 64-128").
PACK_A_MIN_K = 64
PACK_A_FROM_ROWS = 512


def packs_a(csa: int, kk: int, m: int) -> bool:
    """Whether `_gemm_part` packs A (`a_panel_size`) for an m x kk A: A transposed, k at least
    PACK_A_FROM_K, or at least PACK_A_MIN_K with PACK_A_FROM_ROWS rows or more."""
    return csa != 1 and (kk >= PACK_A_FROM_K or (kk >= PACK_A_MIN_K and m >= PACK_A_FROM_ROWS))


def a_panel_size(a_packed: bool, row_strips: int) -> int:
    """Elements of `_gemm_part`'s packed A for a part of `row_strips` row strips: up to
    MC_STRIPS strips of one k block where it packs A (`packs_a`), else the short last strip."""
    return (min(MC_STRIPS, row_strips) if a_packed else 1) * MR * KC_MAX


def b_block_size(column_strips: int, nr_full: int) -> int:
    """Elements of the packed B strips of one k block that a part holds at once."""
    return min(column_strips, NC_STRIPS) * KC_MAX * nr_full


@njit(cache=True)
def k_blocks(kk):
    """How many k blocks `_gemm_part` cuts k into, of equal length (±1) up to KC_MAX: k // KC
    where the rest is under K_TAIL_MERGED_BELOW, else ceil(k / KC). x @ W1 (k = 784) at batch
    128-2048 on one and two Emerald Rapids cores: 0-5 % faster (median ~3 %) than blocks of
    256, 256, 256 and 16 (KC was 256), each of which read and wrote all of C."""
    if kk > KC and kk % KC < K_TAIL_MERGED_BELOW:
        return kk // KC
    return -(-kk // KC)


# the same three inside `_gemm_part` (the Python ones size workspaces on every call, where a
# compiled function's dispatch would cost more than the arithmetic)
_packs_a_compiled = njit(cache=True)(packs_a)
_a_panel_size_compiled = njit(cache=True)(a_panel_size)
_b_block_size_compiled = njit(cache=True)(b_block_size)


def workspace_size(itemsize: int, row_strips: int, column_strips: int,
                   a_packed: bool) -> int:
    """Elements of scratch `_gemm_part` needs for a part of `row_strips` x `column_strips`
    strips: its packed A (`a_panel_size`), a block of its packed B strips of one k block, one
    C tile."""
    nr_full = 2 * (VEC_BYTES // itemsize)
    used = (a_panel_size(a_packed, row_strips) + b_block_size(column_strips, nr_full)
            + MR * nr_full)
    # rounded up, plus one line, so the threads' rows never share a cache line
    lane = VEC_BYTES // itemsize
    return (used + lane - 1) // lane * lane + lane


@njit(cache=True, error_model="numpy")
def _gemm_part(a, rsa, csa, b, rsb, csb, c, m, n, kk, s0, s1, t0, t1, work, bias, epilogue,
               scale):
    """C's row strips [s0, s1) x column strips [t0, t1) of C = A @ B, A[i, k] = a[i*rsa + k*csa],
    B[k, j] = b[k*rsb + j*csb], C[i, j] = c[i*n + j] (all flat), with `work` as scratch
    (`workspace_size` elements), then `epilogue` with `bias` and `scale` (NO_EPILOGUE: none).

    Loop order: per k block, per block of NC_STRIPS column strips, each row strip of A (it
    stays in L1) meets the block's column strips of B (the block, KC x NC_STRIPS * NR, stays in
    L2) in the register tile. A B strip is packed once per k block, just before the first row
    strip uses it; a transposed A's row strips MC_STRIPS at a time (`_pack_a`), once per k block
where the part has no more row strips than that (2-3 % of such a product). (With the
    column blocks outermost, as in BLIS, 2000^2 ran ~3 % slower on a VM core: each k block of
    A came from memory again for the next column block.)"""
    lanes = VEC_BYTES // c.itemsize
    nr_full = 2 * lanes
    pack_a = _packs_a_compiled(csa, kk, m)  # A transposed: its row strips are packed (see above)
    b_off = _a_panel_size_compiled(pack_a, s1 - s0)
    tile_off = b_off + _b_block_size_compiled(t1 - t0, nr_full)
    # B's rows read in place when the part reuses each strip too few times to repay a copy
    in_place_b = csb == 1 and s1 - s0 < PACK_B_FROM_ROW_STRIPS
    ragged = m % MR != 0 and s1 * MR > m  # this part holds the short last row strip
    blocks = k_blocks(kk)
    for kb in range(blocks):
        k0 = kk * kb // blocks
        kc = kk * (kb + 1) // blocks - k0
        finish = epilogue != ep.NO_EPILOGUE and k0 + kc == kk  # C's tiles are final in this block
        if ragged and not pack_a:
            _pack_a(a, rsa, csa, k0, kc, (s1 - 1) * MR, m - (s1 - 1) * MR, work, 0)
        for tb in range(t0, t1, NC_STRIPS):  # (A's k block is read again per column block)
            te = min(tb + NC_STRIPS, t1)
            for sb in range(s0, s1, MC_STRIPS):
                se = min(sb + MC_STRIPS, s1)
                # a part of one block of row strips keeps its packed A for the later column
                # blocks (nothing else writes the panel's slots)
                if pack_a and (tb == t0 or s1 - s0 > MC_STRIPS):
                    for s in range(sb, se):
                        _pack_a(a, rsa, csa, k0, kc, s * MR, min(MR, m - s * MR), work,
                                (s - sb) * MR * kc)
                for s in range(sb, se):
                    i0 = s * MR
                    mr = min(MR, m - i0)
                    for t in range(tb, te):
                        j0 = t * nr_full
                        nr = min(nr_full, n - j0)
                        b_at = b_off + (t - tb) * kc * nr_full  # (the block's own slot)
                        if s == s0 and not (in_place_b and nr == nr_full):
                            # packed just before its first tile, then read from L2 by the
                            # later row strips of this k block
                            _pack_b(b, rsb, csb, k0, kc, j0, nr, nr_full, lanes, work, b_at)
                        whole = mr == MR and nr == nr_full
                        short = nr == nr_full and mr in SHORT_ROWS  # (never MR)
                        aa, a_off, ra, ca = (work, (s - sb) * MR * kc, 1, MR) if pack_a \
                            else (a, i0 * rsa + k0 * csa, rsa, csa) if mr == MR or short \
                            else (work, 0, 1, MR)
                        # another partial tile goes through the tile scratch, then its valid
                        # part into C
                        cc, c_off, ldc = (c, i0 * n + j0, n) if whole or short \
                            else (work, tile_off, nr_full)
                        bb, bo, ldb = (b, k0 * rsb + j0, rsb) if in_place_b and nr == nr_full \
                            else (work, b_at, nr_full)
                        ep.before_tile(bias, i0 * n + j0, n, mr, nr, epilogue, finish)
                        if not short:
                            register_tile(kc, aa, a_off, ra, ca, bb, bo, ldb, cc, c_off, ldc,
                                          whole and k0 > 0)
                        elif mr == 8:
                            register_tile_8(kc, aa, a_off, ra, ca, bb, bo, ldb, cc, c_off, ldc,
                                            k0 > 0)
                        else:
                            register_tile_4(kc, aa, a_off, ra, ca, bb, bo, ldb, cc, c_off, ldc,
                                            k0 > 0)
                        if not (whole or short):
                            _tile_out(c, i0 * n + j0, n, mr, nr, work, tile_off, nr_full, k0 > 0)
                        if finish:
                            ep.finish_tile(c, i0 * n + j0, n, mr, nr, bias, j0, epilogue, scale)


@njit(cache=True, error_model="numpy", inline="always")
def _tile_out(c, c_off, n, mr, nr, work, tile_off, ldt, accumulate):
    """C's valid mr x nr corner of a partial tile computed into the scratch tile (stored, or
    added where an earlier k block wrote C)."""
    for i in range(mr):
        for j in range(nr):
            if accumulate:
                c[c_off + i * n + j] += work[tile_off + i * ldt + j]
            else:
                c[c_off + i * n + j] = work[tile_off + i * ldt + j]


@njit(cache=True, parallel=True, error_model="numpy")
def _gemm_threads(a, rsa, csa, b, rsb, csb, c, m, n, kk, row_parts, column_parts, work, bias,
                  epilogue, scale, next_part):
    """`_gemm_part` over a row_parts x column_parts grid of C, on one thread per row of
    `work` (its scratch), each taking the next part from the counter `next_part` (zero on
    entry) until none is left (product_parts.py: the fast cores take the slow ones' share)."""
    ms = (m + MR - 1) // MR
    ns = (n + 2 * (VEC_BYTES // c.itemsize) - 1) // (2 * (VEC_BYTES // c.itemsize))
    parts = row_parts * column_parts
    for th in prange(work.shape[0]):
        p = product_parts.take(next_part)
        while p < parts:
            r, q = p // column_parts, p % column_parts
            _gemm_part(a, rsa, csa, b, rsb, csb, c, m, n, kk, ms * r // row_parts,
                       ms * (r + 1) // row_parts, ns * q // column_parts,
                       ns * (q + 1) // column_parts, work[th], bias, epilogue, scale)
            p = product_parts.take(next_part)


def supports(x: np.ndarray, y: np.ndarray) -> bool:
    """Whether `matmul` takes these operands: 2D float32/float64 of one dtype, each C- or
    Fortran-contiguous (the layouts `passes.fold_transposes` hands to products)."""
    return (x.ndim == 2 and y.ndim == 2 and x.dtype == y.dtype
            and x.dtype in (np.float32, np.float64) and x.shape[1] == y.shape[0]
            and (x.flags.c_contiguous or x.flags.f_contiguous)
            and (y.flags.c_contiguous or y.flags.f_contiguous))


_serial_requests: dict = {}  # dtype -> what compile_ahead keeps its `_gemm_part` request on


def serial_ready(dtype) -> bool:
    """Whether `matmul` may run now without compiling its one-thread code for `dtype` in line:
    once `_gemm_part` is on disk for it, or where no helper takes it; False while the compile
    helper builds it, and library.py runs products on BLAS meanwhile. A fresh install's first
    product compiled it in line: 3.6 s of the batch-128 MLP step's 6.9 s first call on the
    2-core VM, ~10 s beside two busy loops."""
    dtype = np.dtype(dtype)
    holder = _serial_requests.get(dtype)
    if holder is None:
        holder = _serial_requests.setdefault(dtype, SimpleNamespace())
    return compile_ahead.runtime_ready(_gemm_part, lambda: _part_arguments(dtype), holder)


def _part_arguments(dtype: np.dtype) -> tuple:
    """Arguments of `matmul`'s one-thread call of `_gemm_part`, of its types for `dtype`."""
    one = np.zeros(1, dtype)
    row, epilogue = ep.epilogue_args(dtype, (1, 1), None, "none")
    a, lda, _ = flat_operand(one.reshape(1, 1))
    return (a, lda, 1, a, lda, 1, one, 1, 1, 1, 0, 1, 0, 1, one, row, epilogue, 1.0)


def matmul(x: np.ndarray, y: np.ndarray, threads: int = 1,
           out: np.ndarray | None = None, bias: np.ndarray | None = None,
           activation: str = "none", scale: float = 1.0) -> np.ndarray:
    """x @ y for operands `supports` accepts, on `threads` Numba threads (1: serial), into
    `out` when given (a C-contiguous array of the result's shape and dtype, e.g. one matrix of
    a batched result); with `bias` (a vector of y.shape[1] values of the same dtype) the
    dense layer act(x @ y + bias), `activation` "none", "relu", "gelu" (tanh form), "tanh"
    or "sigmoid"; with activation "update" bias + scale * (x @ y), `bias` of the result's shape."""
    if not supports(x, y):
        raise ValueError(
            f"gemm_cpu.matmul takes two 2D float32/float64 arrays of one dtype, each C- or "
            f"Fortran-contiguous, with x.shape[1] == y.shape[0]; got x {x.dtype}{x.shape} and "
            f"y {y.dtype}{y.shape}: call np.dot for other operands")
    (m, kk), n = x.shape, y.shape[1]
    row, epilogue = ep.epilogue_args(x.dtype, (m, n), bias, activation)
    if out is None:
        out = np.empty((m, n), x.dtype)
    elif out.shape != (m, n) or out.dtype != x.dtype or not out.flags.c_contiguous \
            or not out.flags.writeable or np.may_share_memory(out, row):
        raise ValueError(  # (C is summed in place over k blocks: an update's base would change)
            f"gemm_cpu.matmul: out must be a writeable C-contiguous {x.dtype} array of shape "
            f"{(m, n)}, apart from the epilogue's operand; got {out.dtype}{out.shape} "
            f"(C-contiguous: {out.flags.c_contiguous})")
    if out.size == 0:
        return out
    c = out.reshape(-1)
    if kk == 0:
        out.fill(0)
        if epilogue != ep.NO_EPILOGUE:
            ep.finish_block(c, 0, m, n, row, epilogue, scale)
        return out
    a, rsa, csa = flat_operand(x)
    b, rsb, csb = flat_operand(y)
    ms, ns = -(-m // MR), -(-n // (2 * (VEC_BYTES // x.itemsize)))
    threads = max(threads, 1)
    b_in_place_below = PACK_B_FROM_ROW_STRIPS if csb == 1 else 0
    grids = product_parts.candidates(ms, ns, threads, b_in_place_below, csa != 1)
    (rows, cols), trial = product_parts.tuned_grid(
        (m, n, kk, csa, csb, x.dtype.char, threads), grids)
    workers = min(rows * cols, threads)
    work = workspace(x.dtype, workers, workspace_size(
        x.itemsize, -(-ms // rows), -(-ns // cols), packs_a(csa, kk, m)))
    counter = np.zeros(1, np.int64) if workers > 1 else None  # (serial calls: none)
    if workers > 1 and not _gemm_threads.overloads and not compile_ahead.runtime_ready(
            _gemm_threads, lambda: (
            a, rsa, csa, b, rsb, csb, c, m, n, kk, rows, cols, work, row, epilogue, scale,
            counter)):  # one thread while the helper compiles the threaded form (not timed)
        workers, trial = 1, None
        work = workspace(x.dtype, 1, workspace_size(x.itemsize, ms, ns, packs_a(csa, kk, m)))
    start = time.perf_counter()
    if workers == 1:  # one thread, or a trial's grid of one part (timed as any other)
        _gemm_part(a, rsa, csa, b, rsb, csb, c, m, n, kk, 0, ms, 0, ns, work[0], row, epilogue,
                   scale)
    else:
        _gemm_threads(a, rsa, csa, b, rsb, csb, c, m, n, kk, rows, cols, work, row, epilogue,
                      scale, counter)
    product_parts.record(trial, (rows, cols), time.perf_counter() - start)
    return out

