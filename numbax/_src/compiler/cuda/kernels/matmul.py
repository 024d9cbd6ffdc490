"""CUDA library kernels the driver launches for one equation: the transpose gather and the
register-blocked, double-buffered tiled matmul that dot_general lowers to.

The matmul reads both operands through compile-time strides (batch, row, contraction), so a
dot_general whose operands are transposed views of their buffers (xᵀ@y, x@yᵀ, batched einsums)
runs without a transpose kernel first. Each block of TY x TX threads computes a BM x BN output
tile (BM = TY*TM, BN = TX*TN), each thread a TM x TN register block over rows ty + TY*i and
columns tx + TX*j (conflict-free shared reads, coalesced stores). K is walked in BK-deep slices
staged in two shared buffers, A stored k-major (transposed) and padded so the stores are
conflict-free; the next slice is loaded into registers while the current one is multiplied.
When there are too few output tiles to fill the GPU the contraction is split over several
blocks (split-K) that write partial tiles to a scratch buffer, summed in a fixed order by a
second kernel (deterministic, no atomics).
"""
from __future__ import annotations

import numpy as np

from numbax._src.compiler import ir
from numbax._src.compiler.cuda.config import Config, cdiv, prod, strides
from numbax._src.compiler.cuda.modules import module, planned
from numbax._src.compiler.source import cast, dtype_ctor, render_scalar

_PAD = 4  # shared-row padding: k-major stores of k-contiguous loads hit distinct banks


def render_transpose(shape: tuple[int, ...], perm: tuple[int, ...], cfg: Config) -> str:
    """out[j] = x[perm-gathered index]: a grid-stride gather with constant strides."""
    ist = strides(shape)
    oshape = [shape[p] for p in perm]
    ost = strides(oshape)
    n = prod(shape)
    lines = ["    i = cuda.grid(1)", f"    while i < {n}:"]
    terms = []
    for d, p in enumerate(perm):
        lines.append(f"        j{d} = (i // {ost[d]}) % {oshape[d]}")
        terms.append(f"j{d} * {ist[p]}")
    lines += [f"        o0[i] = a0[{' + '.join(terms) or '0'}]", "        i += cuda.gridsize(1)"]
    return (_head(f"transpose {tuple(shape)} {tuple(perm)}")
            + "\n\n\n@cuda.jit(cache=CACHE)\ndef kernel(a0, o0):\n" + "\n".join(lines) + "\n")


class MatmulShape:
    """C[b, i, j] = sum_k A[b, i, k] * B[b, k, j] with A, B read through element strides
    (batch, row, contraction) and (batch, contraction, column); C is contiguous."""

    def __init__(self, nb: int, m: int, n: int, k: int, dtypes: tuple,
                 a_strides: tuple[int, int, int] | None = None,
                 b_strides: tuple[int, int, int] | None = None) -> None:
        self.nb, self.m, self.n, self.k = nb, m, n, k
        self.da, self.db, self.dc = (np.dtype(d) for d in dtypes)
        self.sa = tuple(a_strides) if a_strides is not None else (m * k, k, 1)
        self.sb = tuple(b_strides) if b_strides is not None else (k * n, n, 1)


def choose_tiles(s: MatmulShape, cfg: Config) -> tuple[tuple[int, ...], int, int]:
    """(tile (TY, TX, TM, TN, BK), splits, K per split): large tiles for float32 when they
    still fill every SM, else the small tile; split-K when even those leave SMs idle."""
    big, small = cfg.mm_big, cfg.mm_small
    tiles = lambda t: s.nb * cdiv(s.m, t[0] * t[2]) * cdiv(s.n, t[1] * t[3])  # noqa: E731
    tile = big if s.dc == np.float32 and tiles(big) >= cfg.mm_sms else small
    splits = 1
    count = tiles(tile)
    if count < cfg.mm_sms and s.k >= 2 * cfg.mm_split_k:
        splits = max(1, min(s.k // cfg.mm_split_k, cdiv(2 * cfg.mm_sms, count)))
    bk = tile[4]
    kc = cdiv(cdiv(max(s.k, 1), splits), bk) * bk
    splits = cdiv(max(s.k, 1), kc)
    return tile, splits, kc


def plan_matmul(s: MatmulShape, cfg: Config) -> ir.Kernel:
    """The matmul module and how to launch it: `kernel(a0, a1, o0)`, or with split-K
    `kernel(a0, a1, o0, p0)` writing partials to scratch p0 and `finish(a0, a1, o0, p0)`."""
    tile, splits, kc = choose_tiles(s, cfg)
    src = render_matmul(s, cfg, tile, splits, kc)
    ty, tx, tm, tn, _ = tile
    blocks = cdiv(s.m, ty * tm) * cdiv(s.n, tx * tn) * s.nb * splits
    if s.nb * s.m * s.n == 0:
        return planned(src, [])
    if splits == 1:
        return planned(src, [("kernel", blocks, ty * tx)])
    total = s.nb * s.m * s.n
    fin = max(1, min(cdiv(total, cfg.threads), cfg.max_blocks))
    return planned(src, [("kernel", blocks, ty * tx), ("finish", fin, cfg.threads)],
                      scratch=[(splits * total, s.dc)])


def render_matmul(s: MatmulShape, cfg: Config, tile: tuple[int, ...] | None = None,
                  splits: int = 1, kc: int | None = None) -> str:
    """The source of one matmul module (see the module docstring for the scheme)."""
    if tile is None:
        tile, splits, kc = choose_tiles(s, cfg)
    ty_, tx_, tm, tn, bk = tile
    bm, bn, nt = ty_ * tm, tx_ * tn, ty_ * tx_
    lda, ldb = bm + _PAD, bn + _PAD
    assert (bm * bk) % nt == 0 and (bk * bn) % nt == 0, tile  # every thread loads equally
    m, n, k, dc = s.m, s.n, s.k, s.dc
    zero = render_scalar(0, dc)
    gn, gm = cdiv(n, bn), cdiv(m, bm)
    sab, sam, sak = s.sa
    sbb, sbk, sbn = s.sb
    fma = dc.kind == "f"
    p, q, w = "    ", "        ", "            "
    out = "p0" if splits > 1 else "o0"
    lines = [f"{p}tid = cuda.threadIdx.x", f"{p}tx = tid % {tx_}", f"{p}ty = tid // {tx_}",
             f"{p}bid = cuda.blockIdx.x", f"{p}n0 = (bid % {gn}) * {bn}", f"{p}bid //= {gn}",
             f"{p}m0 = (bid % {gm}) * {bm}", f"{p}z = bid // {gm}"]
    if splits > 1:
        lines += [f"{p}b = z // {splits}", f"{p}kb = (z % {splits}) * {kc}",
                  f"{p}ke = min(kb + {kc}, {k})", f"{p}ns = (ke - kb + {bk - 1}) // {bk}"]
    else:
        lines += [f"{p}b = z", f"{p}kb = 0", f"{p}ke = {k}", f"{p}ns = {cdiv(k, bk)}"]
    lines += [f"{p}sa = cuda.shared.array({2 * bk * lda}, {dtype_ctor(dc)})",
              f"{p}sb = cuda.shared.array({2 * bk * ldb}, {dtype_ctor(dc)})"]
    # per-thread load coordinates (loop invariant): A row r / depth d, B depth d / column c
    la, lb = bm * bk // nt, bk * bn // nt
    a_m_fast = sam == 1 and sak != 1
    b_k_fast = sbk == 1 and sbn != 1
    for ll in range(la):
        e = f"(tid + {ll * nt})"
        r, d = (f"{e} % {bm}", f"{e} // {bm}") if a_m_fast else (f"{e} // {bk}", f"{e} % {bk}")
        lines += [f"{p}ar{ll} = {r}", f"{p}ad{ll} = {d}",
                  f"{p}ao{ll} = b * {sab} + (m0 + ar{ll}) * {sam} + ad{ll} * {sak}",
                  f"{p}av{ll} = m0 + ar{ll} < {m}", f"{p}as{ll} = U(ad{ll} * {lda} + ar{ll})",
                  f"{p}ra{ll} = {zero}"]
    for ll in range(lb):
        e = f"(tid + {ll * nt})"
        c, d = (f"{e} // {bk}", f"{e} % {bk}") if b_k_fast else (f"{e} % {bn}", f"{e} // {bn}")
        lines += [f"{p}bc{ll} = {c}", f"{p}bd{ll} = {d}",
                  f"{p}bo{ll} = b * {sbb} + bd{ll} * {sbk} + (n0 + bc{ll}) * {sbn}",
                  f"{p}bv{ll} = n0 + bc{ll} < {n}", f"{p}bs{ll} = U(bd{ll} * {ldb} + bc{ll})",
                  f"{p}rb{ll} = {zero}"]
    lines += [f"{p}c{i}_{j} = {zero}" for i in range(tm) for j in range(tn)]

    def loads(pad: str, t: str) -> list[str]:
        """Global loads of slice t (k0 = kb + t*BK) into the prefetch registers."""
        out_ = [f"{pad}k0 = kb + {t} * {bk}"]
        for ll in range(la):
            out_ += [f"{pad}ra{ll} = {cast(dc, f'a0[U(ao{ll} + k0 * {sak})]')} "
                     f"if av{ll} and k0 + ad{ll} < ke else {zero}"]
        for ll in range(lb):
            out_ += [f"{pad}rb{ll} = {cast(dc, f'a1[U(bo{ll} + k0 * {sbk})]')} "
                     f"if bv{ll} and k0 + bd{ll} < ke else {zero}"]
        return out_

    def stores(pad: str, buf: str) -> list[str]:
        return ([f"{pad}sa[U({buf} * {bk * lda}) + as{ll}] = ra{ll}" for ll in range(la)]
                + [f"{pad}sb[U({buf} * {bk * ldb}) + bs{ll}] = rb{ll}" for ll in range(lb)])

    lines += loads(p, "0") + stores(p, "0")
    lines += [f"{p}cuda.syncthreads()", f"{p}for t in range(ns):", f"{q}cur = t % 2",
              f"{q}if t + 1 < ns:", *loads(w, "(t + 1)")]
    lines += [f"{q}pa = U(cur * {bk * lda} + ty)", f"{q}pb = U(cur * {bk * ldb} + tx)",
              f"{q}for kk in range({bk}):"]
    lines += [f"{w}x{i} = sa[pa + U({ty_ * i})]" for i in range(tm)]
    lines += [f"{w}y{j} = sb[pb + U({tx_ * j})]" for j in range(tn)]
    for i in range(tm):
        for j in range(tn):
            acc = f"c{i}_{j}"
            lines.append(f"{w}{acc} = cuda.fma(x{i}, y{j}, {acc})" if fma
                         else f"{w}{acc} += x{i} * y{j}")
    lines += [f"{w}pa += U({lda})", f"{w}pb += U({ldb})", f"{q}if t + 1 < ns:"]
    lines += stores(w, "(1 - cur)") + [f"{q}cuda.syncthreads()"]
    base = f"(z * {m * n})" if splits > 1 else f"(b * {m * n})"
    for i in range(tm):
        lines += [f"{p}gm = m0 + ty + {ty_ * i}", f"{p}if gm < {m}:",
                  f"{q}ob = {base} + gm * {n} + n0 + tx"]
        for j in range(tn):
            lines += [f"{q}if n0 + tx + {tx_ * j} < {n}:",
                      f"{w}{out}[ob + {tx_ * j}] = c{i}_{j}"]
    # (with split-K, z = b * splits + s, so partial slab s of batch b sits at z * m * n; the
    # finish kernel below reads it back in that layout)
    src = (_head(f"matmul {s.nb}x{m}x{k} @ {s.nb}x{k}x{n} "
                        f"{s.da.name},{s.db.name}->{dc.name} strides {s.sa} {s.sb} "
                        f"tile {tile} splits {splits}")
           + "\nU = np.uint64  # unsigned indices: numba emits no negative-index wraparound\n"
           + "\n\n@cuda.jit(cache=CACHE)\n"
           + f"def kernel(a0, a1, o0{', p0' if splits > 1 else ''}):\n"
           + "\n".join(lines) + "\n")
    if splits > 1:
        src += _render_finish(s, splits)
    return src


def _render_finish(s: MatmulShape, splits: int) -> str:
    """o0[b, i, j] = sum over splits of p0[b * splits + s, i, j], in split order."""
    mn, total = s.m * s.n, s.nb * s.m * s.n
    lines = ["    i = cuda.grid(1)", f"    while i < {total}:", f"        b = i // {mn}",
             f"        base = b * {splits * mn} + i - b * {mn}", "        acc = p0[base]"]
    lines += [f"        acc += p0[base + {j * mn}]" for j in range(1, splits)]
    lines += ["        o0[i] = acc", "        i += cuda.gridsize(1)"]
    return ("\n\n@cuda.jit(cache=CACHE)\ndef finish(a0, a1, o0, p0):\n"
            + "\n".join(lines) + "\n")


def _head(what: str) -> str:
    """A module header without kernels (module() with no functions)."""
    return module(what, {}).rstrip("\n")
