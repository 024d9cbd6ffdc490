"""CUDA library kernels the driver launches for one equation: the transpose gather and the
shared-memory tiled matmul that dot_general lowers to."""
from __future__ import annotations

import numba
import numpy as np

from numbax._src import core
from numbax._src.compiler import codegen_cpu
from numbax._src.compiler.codegen_cpu import cast, dtype_ctor, render_scalar
from numbax._src.compiler.codegen_cuda import Config, _cdiv, _header, _prod, _strides
from numbax._src.core import Jaxpr


def render_transpose(shape: tuple[int, ...], perm: tuple[int, ...], cfg: Config) -> str:
    """out[j] = x[perm-gathered index]: a grid-stride gather with constant strides."""
    ist = _strides(shape)
    oshape = [shape[p] for p in perm]
    ost = _strides(oshape)
    n = _prod(shape)
    lines = ["    i = cuda.grid(1)", f"    while i < {n}:"]
    terms = []
    for d, p in enumerate(perm):
        lines.append(f"        j{d} = (i // {ost[d]}) % {oshape[d]}")
        terms.append(f"j{d} * {ist[p]}")
    lines += [f"        o0[i] = a0[{' + '.join(terms) or '0'}]", "        i += cuda.gridsize(1)"]
    head = _header(Jaxpr([], [], [], []), core._Names()).split("\n", 2)[2]
    return (f"# numbax {codegen_cpu.NUMBAX_VERSION} | numba {numba.__version__} | cuda | "
            f"transpose {tuple(shape)} {tuple(perm)}\n{head}\n\n\n@cuda.jit(cache=CACHE)\n"
            "def kernel(a0, o0):\n" + "\n".join(lines) + "\n")


def render_matmul(nb: int, m: int, n: int, kdim: int, dtypes: tuple, cfg: Config) -> str:
    """C[b] = A[b] @ B[b] (flat row-major): BM x BM output tiles staged through shared memory
    in BK-deep slices, each thread accumulating an R x R register block."""
    tx, r, bk = cfg.mm_tx, cfg.mm_r, cfg.mm_bk
    bm, nt = tx * r, tx * tx
    da, db, dc = (np.dtype(d) for d in dtypes)
    zero = render_scalar(0, dc)
    loads = bm * bk // nt
    p = "    "
    lines = [f"{p}tx = cuda.threadIdx.x", f"{p}ty = cuda.threadIdx.y", f"{p}b = cuda.blockIdx.z",
             f"{p}m0 = cuda.blockIdx.y * {bm}", f"{p}n0 = cuda.blockIdx.x * {bm}",
             f"{p}tid = ty * {tx} + tx",
             f"{p}sa = cuda.shared.array(({bm}, {bk}), {dtype_ctor(dc)})",
             f"{p}sb = cuda.shared.array(({bk}, {bm}), {dtype_ctor(dc)})"]
    lines += [f"{p}c{i}_{j} = {zero}" for i in range(r) for j in range(r)]
    lines.append(f"{p}for k0 in range(0, {kdim}, {bk}):")
    q = p * 2
    for ll in range(loads):
        lines += [f"{q}e = tid + {ll * nt}", f"{q}gm = m0 + e // {bk}", f"{q}gk = k0 + e % {bk}",
                  f"{q}sa[e // {bk}, e % {bk}] = "
                  f"{cast(dc, f'a0[b * {m * kdim} + gm * {kdim} + gk]')}"
                  f" if gm < {m} and gk < {kdim} else {zero}"]
    for ll in range(loads):
        lines += [f"{q}e = tid + {ll * nt}", f"{q}gk = k0 + e // {bm}", f"{q}gn = n0 + e % {bm}",
                  f"{q}sb[e // {bm}, e % {bm}] = {cast(dc, f'a1[b * {kdim * n} + gk * {n} + gn]')}"
                  f" if gk < {kdim} and gn < {n} else {zero}"]
    lines += [f"{q}cuda.syncthreads()", f"{q}for kk in range({bk}):"]
    w = q + p
    lines += [f"{w}x{i} = sa[ty + {tx * i}, kk]" for i in range(r)]
    lines += [f"{w}y{j} = sb[kk, tx + {tx * j}]" for j in range(r)]
    lines += [f"{w}c{i}_{j} += x{i} * y{j}" for i in range(r) for j in range(r)]
    lines.append(f"{q}cuda.syncthreads()")
    for i in range(r):
        lines.append(f"{p}gm = m0 + ty + {tx * i}")
        for j in range(r):
            lines += [f"{p}gn = n0 + tx + {tx * j}",
                      f"{p}if gm < {m} and gn < {n}:",
                      f"{p}    o0[b * {m * n} + gm * {n} + gn] = c{i}_{j}"]
    head = _header(Jaxpr([], [], [], []), core._Names()).split("\n", 2)[2]
    return (f"# numbax {codegen_cpu.NUMBAX_VERSION} | numba {numba.__version__} | cuda | "
            f"matmul {nb}x{m}x{kdim} @ {nb}x{kdim}x{n} {da.name},{db.name}->{dc.name}\n{head}"
            "\n\n\n@cuda.jit(cache=CACHE)\ndef kernel(a0, a1, o0):\n" + "\n".join(lines) + "\n")


def matmul_grid(nb: int, m: int, n: int, cfg: Config) -> str:
    bm = cfg.mm_tx * cfg.mm_r
    return f"[({_cdiv(n, bm)}, {_cdiv(m, bm)}, {nb}), ({cfg.mm_tx}, {cfg.mm_tx})]"
