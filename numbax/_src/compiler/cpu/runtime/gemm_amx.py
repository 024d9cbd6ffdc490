"""bfloat16 matrix products on Intel AMX tiles (Sapphire Rapids and later Xeons).

Numba's CPU target has no bfloat16, so a program's bfloat16 values are computed in float32
(compiler/narrow_floats.py) and its products ran on the float32 GEMM: a 1000² bfloat16 product
took 2.5 ms on 16 Xeon cores where jax.jit, on the same cores' AMX units, took 0.77. AMX holds
eight 1 KiB tile registers; one ``tdpbf16ps`` adds a 16 x 32 bfloat16 tile times a 32 x 16 one
into a 16 x 16 float32 tile (8192 multiply-adds, its products exact in float32, denormal
inputs and outputs flushed to zero). Where the host has it (`available`), narrow_floats keeps
a bfloat16 product's operands in bfloat16 where its matrices are large enough (`takes`; any
batch, as attention's heads) and the driver's product comes here (library.py).

The kernel (`_tile_block`, a Numba intrinsic of the immediate-tile-number LLVM intrinsics)
computes a 32 x 32 block of C in four accumulator tiles: for each 32 of k it loads two A tiles
and two B tiles and issues the four products. Operands are packed first, zero-padded to
multiples of 32, so that every tile is 1 KiB of contiguous memory (`_pack_a`: 16 rows of 32
k; `_pack_b`: B's 16-column panel in AMX's pair-interleaved layout, row kk holding k = 2kk and
2kk + 1 of each column): read in place at a power-of-two row stride, a 1024² product ran at a
third of the packed speed (its tile rows shared L1 sets). Packing moves whole 64-byte rows,
interleaves two rows of B in one shuffle, and transposes 16 x 16 blocks of 32-bit pairs for
transposed operands (a weight gradient's xᵀ, an input gradient's Wᵀ). Threads take parts of
C (`_grid`: 2 row blocks by up to 8 column blocks) from a counter, configure their tiles once
(`_tiles_on`, ldtilecfg: 0.3 us a block when each block did it) and run each part's k in
blocks of up to K_BLOCK, its column blocks down its rows; a block's last k block writes it
into the result, rounded to bfloat16, while it is in L1 (with k in one block the tiles are
stored into a 32 x 32 scratch of the thread's, not into a padded C). A stack of products
(`matmul_batched`) is one list of parts in one parallel region, or, with two or more products
a thread and k in one block, whole products a part, each packed by the thread that multiplies
it (`_whole_products`). Sums are rounded 16 at a time by AVX512-BF16's conversion
(`_round16`). One Emerald Rapids core ran 500-800 GFLOP/s on the MLP's shapes and 1024² (its
bare ``tdpbf16ps`` loop: ~1000), against ~140 for the float32 GEMM (docs/performance.md).

Linux hands out AMX's 8 KiB of register state only to a process that asks
(``arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)``); a tile instruction before that
kills the process with SIGILL, so `available` asks once and every call here goes through it.
"""
from __future__ import annotations

import ctypes
import math
import sys

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from numbax._src import dtypes
from numbax._src.compiler.cpu.runtime import host_isa, product_parts
from numbax._src.compiler.cpu.runtime.gemm import transpose_block
from numbax._src.compiler.cpu.runtime.gemm_operands import read_only
from numbax._src.config import config

BF16 = dtypes.bfloat16
F32 = np.dtype(np.float32)
BLOCK = 32  # rows and columns of C per `_tile_block`: 2 x 2 tiles of 16 x 16
K_STEP = 32  # bfloat16 values of k per tile
ROW_GROUP = 2  # row blocks of a part (64 rows of A: 128 KiB a k block, in L2)
K_BLOCK = 1024  # most k a part runs before its next column block (k split evenly beyond it)
# A stack of at least this many products a thread, k in one block, runs a whole product a part
# (`_whole_products`), its operands packed by the thread that multiplies them
WHOLE_PRODUCTS_PER_THREAD = 2
# Smallest product taken (m, n, k): below a tile's rows the padding is most of the work
MIN_ROWS, MIN_K = 16, 32
# A product's multiply-adds per float32-GEMM multiply-add of time (600-800 against ~140 GFLOP/s
# on one core): the thread rule, written for the float32 GEMM, sees this share of its work
SPEEDUP = 4

_SYS_ARCH_PRCTL = 158  # x86-64
_ARCH_REQ_XCOMP_PERM = 0x1023
_XFEATURE_XTILEDATA = 18
_host: list[bool] = []  # host_has_amx's answer, found once per process


def _tile_data_granted() -> bool:
    """Whether Linux lets this process use AMX's tile registers."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.syscall(_SYS_ARCH_PRCTL, _ARCH_REQ_XCOMP_PERM, _XFEATURE_XTILEDATA) == 0
    except (OSError, AttributeError):
        return False


def host_has_amx() -> bool:
    """Whether Numba's target has AMX's tiles and bfloat16 products and Linux grants them to
    this process (asked once: the grant is what keeps a tile instruction from SIGILL)."""
    if not _host:
        _host.append(host_isa.numba_target_has("amx-tile") and host_isa.numba_target_has(
            "amx-bf16") and _tile_data_granted())
    return _host[0]


def available() -> bool:
    """Whether bfloat16 products run here: an AMX host and `config.cpu_amx` on."""
    return config.hot("cpu_amx") and host_has_amx()


def takes(m: int, k: int, n: int) -> bool:
    """Whether an (m, k) @ (k, n) bfloat16 product is worth the tiles (shapes only)."""
    return m >= MIN_ROWS and n >= MIN_ROWS and k >= MIN_K


def takes_product(x_shape: tuple, y_shape: tuple, dimension_numbers) -> bool:
    """`takes` for a dot_general's operand shapes: its matrices' sizes (free axes of each
    side, the contracted ones; any batch axes)."""
    (xc, yc), (xb, yb) = dimension_numbers
    m = math.prod(x_shape[d] for d in range(len(x_shape)) if d not in xc and d not in xb)
    n = math.prod(y_shape[d] for d in range(len(y_shape)) if d not in yc and d not in yb)
    return takes(m, math.prod(x_shape[d] for d in xc), n)


def _round_up(n: int) -> int:
    return -(-n // BLOCK) * BLOCK


# -- the tile kernel ---------------------------------------------------------------------------

_I8, _I16, _I64 = ir.IntType(8), ir.IntType(16), ir.IntType(64)
_BYTE_PTR = _I8.as_pointer()
_TILE_BYTES = 1024


def _const(value: int, ty=_I64) -> ir.Constant:
    return ir.Constant(ty, value)


def _declare(builder, name: str, args: list):
    return cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(ir.VoidType(), args), name)


def _bytes_at(context, builder, arrty, value, offset):
    """i8* to element `offset` of a flat array value."""
    data = cgutils.create_struct_proxy(arrty)(context, builder, value=value).data
    return builder.bitcast(builder.gep(data, [offset]), _BYTE_PTR)


def _configure_tiles(builder) -> None:
    """ldtilecfg: palette 1, tiles 0-7 all 16 rows of 64 bytes (the register's full size)."""
    config_ty = ir.ArrayType(_I8, 64)
    cfg = cgutils.alloca_once(builder, config_ty)
    builder.store(ir.Constant(config_ty, None), cfg)
    raw = builder.bitcast(cfg, _BYTE_PTR)
    builder.store(_const(1, _I8), builder.gep(raw, [_const(0)]))  # palette
    for tile in range(8):
        colsb = builder.bitcast(builder.gep(raw, [_const(16 + 2 * tile)]), _I16.as_pointer())
        builder.store(_const(64, _I16), colsb)
        builder.store(_const(16, _I8), builder.gep(raw, [_const(48 + tile)]))
    builder.call(_declare(builder, "llvm.x86.ldtilecfg", [_BYTE_PTR]), [raw])


@intrinsic
def _tile_block(typingctx, steps, a, a_off, b, b_off, strip, c, c_off, ldc, accumulate):
    """c[32 x 32 float32 block at c_off, row stride ldc] (+)= the sum over `steps` k steps of
    A's two packed 16-row strips (from a_off, the second `strip` elements on) times B's two
    packed 16-column panels (from b_off, likewise): tiles 0-3 accumulate C (loaded from it
    where `accumulate`, else zeroed), 4-5 hold A's tiles of a step, 6-7 B's."""
    ip = types.intp
    sig = types.void(ip, a, ip, b, ip, ip, c, ip, ip, types.boolean)

    def codegen(context, builder, sig, args):
        steps, a, a_off, b, b_off, strip, c, c_off, ldc, accumulate = args
        load = _declare(builder, "llvm.x86.tileloadd64", [_I8, _BYTE_PTR, _I64])
        store = _declare(builder, "llvm.x86.tilestored64", [_I8, _BYTE_PTR, _I64])
        zero = _declare(builder, "llvm.x86.tilezero", [_I8])
        product = _declare(builder, "llvm.x86.tdpbf16ps", [_I8, _I8, _I8])
        tile = [_const(t, _I8) for t in range(8)]
        pa = _bytes_at(context, builder, sig.args[1], a, a_off)
        pb = _bytes_at(context, builder, sig.args[3], b, b_off)
        pc = _bytes_at(context, builder, sig.args[6], c, c_off)
        second = builder.mul(strip, _const(2))  # bytes to the second strip / panel
        row = _const(64)  # a packed tile's row stride, bytes
        ldc_bytes = builder.mul(ldc, _const(4))
        lower = builder.mul(ldc_bytes, _const(16))
        c_tiles = (_const(0), _const(64), lower, builder.add(lower, _const(64)))
        with builder.if_else(accumulate) as (then, otherwise):
            with then:
                for t, offset in enumerate(c_tiles):
                    builder.call(load, [tile[t], builder.gep(pc, [offset]), ldc_bytes])
            with otherwise:
                for t in range(4):
                    builder.call(zero, [tile[t]])
        with cgutils.for_range(builder, steps) as loop:
            at = builder.mul(loop.index, _const(_TILE_BYTES))
            builder.call(load, [tile[4], builder.gep(pa, [at]), row])
            builder.call(load, [tile[6], builder.gep(pb, [at]), row])
            builder.call(product, [tile[0], tile[4], tile[6]])
            builder.call(load, [tile[7], builder.gep(pb, [builder.add(at, second)]), row])
            builder.call(product, [tile[1], tile[4], tile[7]])
            builder.call(load, [tile[5], builder.gep(pa, [builder.add(at, second)]), row])
            builder.call(product, [tile[2], tile[5], tile[6]])
            builder.call(product, [tile[3], tile[5], tile[7]])
        for t, offset in enumerate(c_tiles):
            builder.call(store, [tile[t], builder.gep(pc, [offset]), ldc_bytes])
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _tiles_on(typingctx):
    """Configures this thread's tiles for `_tile_block` (ldtilecfg, ~0.1 us: once per
    thread's run of parts, not per block)."""
    def codegen(context, builder, sig, args):
        _configure_tiles(builder)
        return context.get_dummy_value()

    return types.void(), codegen


@intrinsic
def _tiles_off(typingctx):
    """Returns this thread's tiles to their initial state (tilerelease), so the kernel does
    not save and restore 8 KiB of them at every context switch after the product."""
    def codegen(context, builder, sig, args):
        builder.call(_declare(builder, "llvm.x86.tilerelease", []), [])
        return context.get_dummy_value()

    return types.void(), codegen


@intrinsic
def _move(typingctx, src, src_off, dst, dst_off):
    """dst[dst_off:] = src[src_off:] for 64 bytes (one row of a tile) in one vector load and
    store: Numba's indexed loop kept each element's negative-index check and did not
    vectorise (packing took twice the product's time)."""
    sig = types.void(src, types.intp, dst, types.intp)

    def codegen(context, builder, sig, args):
        src, src_off, dst, dst_off = args
        vty = ir.VectorType(_I8, 64)
        ps = builder.bitcast(_bytes_at(context, builder, sig.args[0], src, src_off),
                             vty.as_pointer())
        pd = builder.bitcast(_bytes_at(context, builder, sig.args[2], dst, dst_off),
                             vty.as_pointer())
        builder.store(builder.load(ps, align=1), pd, align=1)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _interleave(typingctx, src, first, second, dst, dst_off):
    """dst[dst_off + 2j] = src[first + j], dst[dst_off + 2j + 1] = src[second + j] for j < 16
    (16-bit elements): two rows' 16 values as 16 pairs, AMX's layout for B (one shuffle)."""
    ip = types.intp
    sig = types.void(src, ip, ip, dst, ip)

    def codegen(context, builder, sig, args):
        src, first, second, dst, dst_off = args
        half, whole = ir.VectorType(_I16, 16), ir.VectorType(_I16, 32)
        rows = [builder.load(builder.bitcast(_bytes_at(context, builder, sig.args[0], src, at),
                                             half.as_pointer()), align=2)
                for at in (first, second)]
        mask = ir.Constant(ir.VectorType(ir.IntType(32), 32),
                           [j // 2 + 16 * (j % 2) for j in range(32)])
        pairs = builder.shuffle_vector(rows[0], rows[1], mask)
        pd = builder.bitcast(_bytes_at(context, builder, sig.args[3], dst, dst_off),
                             whole.as_pointer())
        builder.store(pairs, pd, align=2)
        return context.get_dummy_value()

    return sig, codegen


class _BFloat(ir.Type):
    """LLVM's `bfloat` (llvmlite names no such type): the target of `_round16`'s fptrunc."""

    def _to_string(self) -> str:
        return "bfloat"

    def __eq__(self, other) -> bool:
        return isinstance(other, _BFloat)

    def __hash__(self) -> int:
        return hash("bfloat")


@intrinsic
def _round16(typingctx, src, src_off, dst, dst_off):
    """dst[dst_off + j] = the bfloat16 bits of float32 src[src_off + j] for j < 16: one fptrunc,
    which LLVM lowers to AVX512-BF16's vcvtneps2bf16 (nearest, ties to even; NaN quiet). It
    treats subnormal inputs as zero, where `_rounded_bits` rounds them, but the tiles' float32
    sums hold none (their subnormal results are flushed). A block's rows took 0.43 ns an
    element through `_rounded_bits`, 0.10 this way: half of attention's time on one core."""
    sig = types.void(src, types.intp, dst, types.intp)

    def codegen(context, builder, sig, args):
        src, src_off, dst, dst_off = args
        floats, halves = ir.VectorType(ir.FloatType(), 16), ir.VectorType(_I16, 16)
        value = builder.load(builder.bitcast(_bytes_at(context, builder, sig.args[0], src,
                                                       src_off), floats.as_pointer()), align=4)
        rounded = builder.bitcast(builder.fptrunc(value, ir.VectorType(_BFloat(), 16)), halves)
        builder.store(rounded, builder.bitcast(_bytes_at(context, builder, sig.args[2], dst,
                                                         dst_off), halves.as_pointer()), align=2)
        return context.get_dummy_value()

    return sig, codegen


# -- packing, products, the result ---------------------------------------------------------------

@njit(cache=True, error_model="numpy", inline="always")
def _pack_a(a, src, rsa, csa, m, k, kp, ap, ap32, base, strip):
    """Rows 16 strip .. 16 strip + 15 of A (flat from `src`; strides rsa / csa, one of them
    1) into packed tiles: tile s of the strip at ap[base + s * 512], 16 rows of 32 k, zero
    past m and k. A whole tile of a C-contiguous A is 16 row moves; of a transposed A
    (rsa 1), its 16 column pairs interleaved as for B, then transposed as 32-bit pairs in
    place (`ap32`, the same memory); edge tiles go element by element."""
    r0 = strip * 16
    whole = k // 32 if r0 + 16 <= m else 0
    for s in range(whole):
        tile = base + s * 512
        if csa == 1:
            for i in range(16):
                _move(a, src + (r0 + i) * rsa + s * 32, ap, tile + i * 32)
        else:
            for w in range(16):
                col = src + (s * 32 + 2 * w) * csa + r0
                _interleave(a, col, col + csa, ap, tile + w * 32)
            transpose_block(ap32, tile // 2, 16, ap32, tile // 2, 16)
    for s in range(whole, kp // 32):
        tile = base + s * 512
        for i in range(16):
            row = r0 + i
            for j in range(32):
                col = s * 32 + j
                ap[tile + i * 32 + j] = a[src + row * rsa + col * csa] if row < m and col < k \
                    else 0


@njit(cache=True, error_model="numpy", inline="always")
def _pack_b(b, b32, src, rsb, csb, k, n, kp, bp, bp32, base, panel):
    """Columns 16 panel .. 16 panel + 15 of B (flat from `src`; strides rsb / csb, one of
    them 1) into AMX's layout at bp[base:]: row kk of the panel holds (k = 2kk, 2kk + 1) of
    each column in turn, zero past k and n. A whole panel of a C-contiguous B interleaves
    two rows' 16 columns a row pair; of a transposed B (rsb 1, an even column stride: `b32`
    its 32-bit view), each column's pairs are already 32-bit words, so 16 of them transpose
    as one block; edges go element by element."""
    c0 = panel * 16
    pairs = k // 2 if c0 + 16 <= n else 0
    if csb == 1:
        for kk in range(pairs):
            row = src + 2 * kk * rsb + c0
            _interleave(b, row, row + rsb, bp, base + kk * 32)
    elif csb % 2 == 0 and src % 2 == 0 and b32.size:
        pairs -= pairs % 16  # whole 16 x 16 blocks of words
        for kk in range(0, pairs, 16):
            transpose_block(b32, (src + c0 * csb) // 2 + kk, csb // 2, bp32,
                            (base + kk * 32) // 2, 16)
    else:
        pairs = 0
    for kk in range(pairs, kp // 2):
        for c in range(16):
            col = c0 + c
            for j in range(2):
                r = 2 * kk + j
                bp[base + kk * 32 + c * 2 + j] = b[src + r * rsb + col * csb] \
                    if r < k and col < n else 0


@njit(cache=True, error_model="numpy", inline="always")
def _rounded_bits(u):
    """The bfloat16 bits of the float32 whose bits are `u` (uint32): nearest, ties to even;
    NaN the quiet NaN of its sign (as ml_dtypes casts, and scalars.round_to_bfloat16).
    Without branches, so the row loop vectorises."""
    nearest = (u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
    quiet = ((u >> np.uint32(16)) & np.uint32(0x8000)) | np.uint32(0x7FC0)
    return np.uint16(quiet if u & np.uint32(0x7FFFFFFF) > np.uint32(0x7F800000) else nearest)


@njit(cache=True, parallel=True, error_model="numpy")
def _product(a, a_batch, rsa, csa, b, b32, b_batch, rsb, csb, m, k, n, ap, bp, mp, np_, cp,
             scratch, out, round_out, threads, row_group, group_columns, counter):
    """out[i] (m x n) = A[i] @ B[i] for i < nb (A[i] from a_batch * i in the flat `a`, B[i]
    likewise; nb = out's or cp's first axis): every operand packed (one region: the strips
    and panels of all as items of one list); each padded C[i] (mp x np, float32) in parts of
    up to `row_group` x `group_columns` blocks of 32 x 32, taken from `counter` (zero on
    entry) on `threads` threads. A part runs k in blocks of at most K_BLOCK: for each, its
    column blocks in turn, each down the part's row blocks, so one B panel's k block is
    reused from L1 and the part's A rows from L2. Where `out` is C itself (float32 of whole
    blocks) it is `cp` and `out` is empty; else each block goes into `out` as its last k
    block ends, rounded to bfloat16 bits (`round_out`) or copied, from `cp` (k in several
    blocks) or, with k in one block and `cp` empty, from the thread's row of `scratch` (the
    whole padded C of a stack of heads, written and read back, was most of their time)."""
    nb = max(out.shape[0], cp.shape[0])
    kp = ap.size // (nb * mp)
    strips, panels = mp // 16, np_ // 16
    strip = 16 * kp  # elements of a packed strip or panel
    ap32, bp32 = ap.view(np.uint32), bp.view(np.uint32)
    for item in prange(nb * (strips + panels)):
        i, q = item // (strips + panels), item % (strips + panels)
        if q < strips:
            _pack_a(a, i * a_batch, rsa, csa, m, k, kp, ap, ap32, (i * strips + q) * strip, q)
        else:
            q -= strips
            _pack_b(b, b32, i * b_batch, rsb, csb, k, n, kp, bp, bp32,
                    (i * panels + q) * strip, q)
    row_blocks, column_blocks = mp // BLOCK, np_ // BLOCK
    row_groups = (row_blocks + row_group - 1) // row_group
    per_product = row_groups * ((column_blocks + group_columns - 1) // group_columns)
    k_steps = kp // K_STEP
    k_blocks = (k_steps * K_STEP + K_BLOCK - 1) // K_BLOCK
    c, blocks = cp.reshape(-1), scratch.reshape(-1)
    c_bits, block_bits, flat_out = c.view(np.uint32), blocks.view(np.uint32), out.reshape(-1)
    finish, in_scratch = out.size > 0, c.size == 0
    for th in prange(threads):
        _tiles_on()
        p = product_parts.take(counter)
        while p < nb * per_product:
            i, q = p // per_product, p % per_product
            rg, cg = q % row_groups, q // row_groups
            a0, b0, c0 = i * mp * kp, i * np_ * kp, i * mp * np_
            for kb in range(k_blocks):
                s0 = k_steps * kb // k_blocks
                steps = k_steps * (kb + 1) // k_blocks - s0
                for cb in range(cg * group_columns, min((cg + 1) * group_columns,
                                                        column_blocks)):
                    for rb in range(rg * row_group, min((rg + 1) * row_group, row_blocks)):
                        if in_scratch:  # (k in one block: kb is 0)
                            _tile_block(steps, ap, a0 + 2 * rb * strip, bp, b0 + 2 * cb * strip,
                                        strip, blocks, th * BLOCK * BLOCK, BLOCK, False)
                            # block row r at th * 1024 + 32 r: as C's rows at stride 32
                            _finish_block(blocks, block_bits,
                                          th * BLOCK * BLOCK - (rb * BLOCK + cb) * BLOCK, BLOCK,
                                          flat_out, i * m * n, m, n, rb, cb, round_out)
                            continue
                        _tile_block(steps, ap, a0 + 2 * rb * strip + s0 * 512, bp,
                                    b0 + 2 * cb * strip + s0 * 512, strip, c,
                                    c0 + rb * BLOCK * np_ + cb * BLOCK, np_, kb > 0)
                        if finish and kb == k_blocks - 1:  # the block while it is in L1
                            _finish_block(c, c_bits, c0, np_, flat_out, i * m * n, m, n, rb,
                                          cb, round_out)
            p = product_parts.take(counter)
        _tiles_off()


@njit(cache=True, parallel=True, error_model="numpy")
def _whole_products(a, a_batch, rsa, csa, b, b32, b_batch, rsb, csb, m, k, n, ap, bp, mp, np_,
                    scratch, out, round_out, threads, counter):
    """out[i] (m x n) = A[i] @ B[i] for i < out.shape[0], k in one block: each of `threads`
    threads takes whole products from `counter` (zero on entry), packs A[i] and B[i] into its
    own rows of `ap` and `bp` (each mp x kp and kp x np, flat) and computes every 32 x 32
    block of C[i] into its row of `scratch`, then into `out`. The packed operands stay in L1
    and L2 (a stack packed up front crossed memory twice: attention's 256 heads of 128 x 64
    wrote and read back 8 MB)."""
    nb, kp = out.shape[0], ap.size // (threads * mp)
    strips, panels, strip = mp // 16, np_ // 16, 16 * kp
    ap32, bp32 = ap.view(np.uint32), bp.view(np.uint32)
    blocks = scratch.reshape(-1)
    block_bits, flat_out = blocks.view(np.uint32), out.reshape(-1)
    for th in prange(threads):
        _tiles_on()
        a0, b0, c0 = th * mp * kp, th * np_ * kp, th * BLOCK * BLOCK
        i = product_parts.take(counter)
        while i < nb:
            for q in range(strips):
                _pack_a(a, i * a_batch, rsa, csa, m, k, kp, ap, ap32, a0 + q * strip, q)
            for q in range(panels):
                _pack_b(b, b32, i * b_batch, rsb, csb, k, n, kp, bp, bp32, b0 + q * strip, q)
            for cb in range(np_ // BLOCK):
                for rb in range(mp // BLOCK):
                    _tile_block(kp // K_STEP, ap, a0 + 2 * rb * strip, bp, b0 + 2 * cb * strip,
                                strip, blocks, c0, BLOCK, False)
                    _finish_block(blocks, block_bits, c0 - (rb * BLOCK + cb) * BLOCK, BLOCK,
                                  flat_out, i * m * n, m, n, rb, cb, round_out)
            i = product_parts.take(counter)
        _tiles_off()


@njit(cache=True, error_model="numpy", inline="always")
def _finish_block(c, bits, c0, np_, flat_out, out0, m, n, rb, cb, round_out):
    """Block (rb, cb) of the padded C (from c0 in `c`) into `flat_out` (m x n from out0):
    its bfloat16 bits, rounded (`round_out`), or its float32 values, without the padding.
    (Unsigned indices: a signed one keeps Numba's negative-index check, which stopped the row
    loop from vectorising.)"""
    j0 = cb * BLOCK
    width = min(BLOCK, n - j0)
    vectors = width - width % 16  # (the rest element by element)
    for i in range(rb * BLOCK, min((rb + 1) * BLOCK, m)):
        row, out_row = np.uintp(c0 + i * np_ + j0), np.uintp(out0 + i * n + j0)
        if round_out:
            for j in range(0, vectors, 16):
                _round16(c, row + np.uintp(j), flat_out, out_row + np.uintp(j))
            for j in range(vectors, width):
                flat_out[out_row + np.uintp(j)] = _rounded_bits(bits[row + np.uintp(j)])
        else:
            for j in range(width):
                flat_out[out_row + np.uintp(j)] = c[row + np.uintp(j)]


def _grid(row_blocks: int, column_blocks: int, threads: int) -> tuple[int, int]:
    """(row blocks, column blocks) of C a part holds: ROW_GROUP rows, and columns enough for
    four parts a thread, at most 8 (8 B panels of a k block, 512 KiB, in L2). Of six grids
    timed (16 and 8 Xeon threads, 2 on the VM; 1000², 2000², 4096² and the MLP's shapes) this
    was fastest or within 5 % of it nearly everywhere; one 32 x 32 block a part was 5-30 %
    slower, 8 row blocks with columns for two parts a thread up to 30 % (docs/performance.md)."""
    row_groups = -(-row_blocks // ROW_GROUP)
    return ROW_GROUP, max(1, min(8, row_groups * column_blocks // (4 * threads)))


def matmul(x: np.ndarray, y: np.ndarray, out_dtype, threads: int) -> np.ndarray:
    """x @ y for bfloat16 matrices (m, k) and (k, n), any strides, on AMX tiles: a float32
    result, or bfloat16 rounded from float32 sums (`out_dtype`)."""
    return matmul_batched(x[None], y[None], out_dtype, threads)[0]


def _flat_stack(x: np.ndarray):
    """(flat read-only uint16 view, elements between matrices, row stride, column stride) of a
    stack of bfloat16 matrices each C-contiguous or the transpose of one, in one block; copied
    into C order where they are neither. (Read-only always: Numba compiles `_product` once per
    combination of writeable and read-only operands.)"""
    nb, rows, cols = x.shape
    for view, rs, cs in ((x, cols, 1), (np.transpose(x, (0, 2, 1)), 1, rows)):
        if view.flags.c_contiguous:
            return read_only(view.reshape(-1).view(np.uint16)), rows * cols, rs, cs
    flat = np.ascontiguousarray(x).reshape(-1).view(np.uint16)
    return read_only(flat), rows * cols, cols, 1


def matmul_batched(x: np.ndarray, y: np.ndarray, out_dtype, threads: int) -> np.ndarray:
    """x[i] @ y[i] for stacks of bfloat16 matrices (nb, m, k) and (nb, k, n), any strides, on
    AMX tiles, all in one parallel region (attention's heads: hundreds of products too small
    to share): a float32 result, or bfloat16 rounded from float32 sums (`out_dtype`)."""
    if not host_has_amx():  # (also what asks Linux for the tiles before their first use)
        raise RuntimeError("gemm_amx.matmul: this host or process has no AMX tiles")
    (nb, m, k), n = x.shape, y.shape[2]
    a, a_batch, rsa, csa = _flat_stack(x)
    b, b_batch, rsb, csb = _flat_stack(y)
    mp, kp, np_ = _round_up(m), _round_up(k), _round_up(n)
    rounds = np.dtype(out_dtype) == BF16
    # a transposed B's columns as 32-bit pairs of k (an even column stride), else unused
    b32 = b.view(np.uint32) if csb != 1 and csb % 2 == 0 and b.size % 2 == 0 \
        else np.empty(0, np.uint32)
    if kp <= K_BLOCK and nb >= WHOLE_PRODUCTS_PER_THREAD * threads:  # a product a part
        out = np.empty((nb, m, n), np.uint16 if rounds else F32)
        _whole_products(a, a_batch, rsa, csa, b, b32, b_batch, rsb, csb, m, k, n,
                        np.empty(threads * mp * kp, np.uint16),
                        np.empty(threads * kp * np_, np.uint16), mp, np_,
                        np.empty((threads, BLOCK * BLOCK), F32), out, rounds, threads,
                        np.zeros(1, np.int64))
        return out.view(BF16) if rounds else out
    ap = np.empty(nb * mp * kp, np.uint16)
    bp = np.empty(nb * kp * np_, np.uint16)
    row_group, group = _grid(mp // BLOCK, np_ // BLOCK, max(1, threads // max(nb, 1)))
    parts = nb * -(-mp // (BLOCK * row_group)) * -(-np_ // (BLOCK * group))
    threads = max(1, min(threads, parts))
    scratch = np.empty((threads, BLOCK * BLOCK), F32)
    if not rounds and (mp, np_) == (m, n):  # C itself is the result
        cp = out = np.empty((nb, m, n), F32)
    else:
        out = np.empty((nb, m, n), np.uint16 if rounds else F32)
        cp = np.empty((nb, mp, np_) if kp > K_BLOCK else (0, 0, 0), F32)
    _product(a, a_batch, rsa, csa, b, b32, b_batch, rsb, csb, m, k, n, ap, bp, mp, np_, cp,
             scratch, out if out is not cp else np.empty((0, 0, 0), F32), rounds, threads,
             row_group, group, np.zeros(1, np.int64))
    return out.view(BF16) if rounds else out
