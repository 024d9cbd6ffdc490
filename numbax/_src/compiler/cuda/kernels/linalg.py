"""Linear algebra on the GPU: cholesky, triangular_solve, lu, qr, eigh, svd (real floats).

Each primitive is one kernel with one thread block per matrix of the batch (grid-stride over
the batch); the block's threads cooperate over rows/columns with cuda.syncthreads() between
steps. Matrices are copied into float64 scratch (float32 inputs too, cast back at the end).
Semantics are those of the numpy impls in lax/linalg.py; eigenvector/singular-vector signs
may differ from LAPACK's (qr follows LAPACK's Householder convention, so q and r match).
"""
from __future__ import annotations

import textwrap

import numpy as np

from numbax._src.compiler import ir
from numbax._src.compiler.cuda.config import Config, prod
from numbax._src.compiler.cuda.modules import module, planned
from numbax._src.core import JaxprEqn

F64 = np.float64


def code(text: str, **consts) -> list[str]:
    """A dedented source template, `{name}` filled with compile-time constants."""
    return textwrap.dedent(text).strip("\n").format(**consts).split("\n")


def indent(lines: list[str], n: int) -> list[str]:
    return [" " * n + line for line in lines]


def plan(tag: str, eqn: JaxprEqn, cfg: Config, batch: int, work: bool, body: list[str],
          scratch: list[tuple[int, object]], shared: list[str] = ()) -> ir.Kernel:
    """One kernel: `body` runs per matrix b of the batch, one block per matrix."""
    nin, nout = len(eqn.invars), len(eqn.outvars)
    args = ", ".join([f"a{k}" for k in range(nin)] + [f"o{k}" for k in range(nout)]
                     + [f"s{k}" for k in range(len(scratch))])
    lines = ["    tid = cuda.threadIdx.x", *indent(list(shared), 4),
             "    b = cuda.blockIdx.x", f"    while b < {batch}:"]
    lines += indent(body, 8) + ["        b += cuda.gridDim.x"]
    launches = [("kernel", min(batch, cfg.max_blocks), cfg.threads)] if batch and work else []
    return planned(module(tag, {"kernel": (args, lines)}), launches, scratch)


def block_sum(acc: str, out: str, T: int) -> list[str]:
    """Tree sum of every thread's `acc` through shared `sh`; every thread gets `out`."""
    return code("""
        sh[tid] = {acc}
        cuda.syncthreads()
        h = {half}
        while h > 0:
            if tid < h:
                sh[tid] += sh[tid + h]
            cuda.syncthreads()
            h //= 2
        {out} = sh[0]
        cuda.syncthreads()""", acc=acc, out=out, half=T // 2)


def less(u: str, v: str) -> str:
    """u < v with NaNs last (all NaNs equal), as the sort kernels."""
    return f"({u} < {v} or ({v} != {v} and {u} == {u}))"


def cholesky(eqn: JaxprEqn, cfg: Config) -> ir.Kernel:
    """Right-looking, column by column on the lower triangle; a non-positive pivot (or NaN)
    makes the whole matrix NaN, as the impl. Scratch s0: the float64 working copy."""
    shape = eqn.invars[0].aval.shape
    n, batch = shape[-1], prod(shape[:-2])
    body = code("""
        o = b * {nn}
        for t in range(tid, {nn}, {T}):
            s0[o + t] = a0[o + t]
        bad = False
        for k in range({n}):
            cuda.syncthreads()
            d = s0[o + k * {n} + k]
            if not (d > 0.0):
                bad = True
                break
            r = math.sqrt(d)
            for i in range(k + 1 + tid, {n}, {T}):
                s0[o + i * {n} + k] /= r
            cuda.syncthreads()
            if tid == 0:
                s0[o + k * {n} + k] = r
            m = {n} - k - 1
            for t in range(tid, m * m, {T}):
                i = k + 1 + t // m
                j = k + 1 + t % m
                if j <= i:
                    s0[o + i * {n} + j] -= s0[o + i * {n} + k] * s0[o + j * {n} + k]
        cuda.syncthreads()
        for t in range(tid, {nn}, {T}):
            if bad:
                o0[o + t] = math.nan
            elif t % {n} <= t // {n}:
                o0[o + t] = s0[o + t]
            else:
                o0[o + t] = 0.0""", n=n, nn=n * n, T=cfg.threads)
    tag = f"cholesky {eqn.invars[0].aval.dtype.name} {shape}"
    return plan(tag, eqn, cfg, batch, n > 0, body, [(batch * n * n, F64)])


# ----------------------------------------------------------------------------- triangular_solve


def triangular_solve(eqn: JaxprEqn, cfg: Config) -> ir.Kernel:
    """Solved as M X = B' with M = op(a) (left side) or op(a)ᵀ (right side, B' = bᵀ), M
    triangular: step k updates the rows still to solve with column k (threads over rows x
    right-hand sides), x_k = B'_k / M_kk at the end. Scratch s0: B' in float64."""
    p = eqn.params
    ashape, bshape = eqn.invars[0].aval.shape, eqn.invars[1].aval.shape
    m, batch = ashape[-1], prod(ashape[:-2])
    left = p["left_side"]
    nr = bshape[-1] if left else bshape[-2]
    tr = p["transpose_a"] != (not left)
    low = p["lower"] != tr

    def mat(i: str, j: str) -> str:
        return f"a0[oa + {j} * {m} + {i}]" if tr else f"a0[oa + {i} * {m} + {j}]"

    def bidx(i: str, c: str) -> str:
        return f"ob + {i} * {nr} + {c}" if left else f"ob + {c} * {m} + {i}"

    diag = "1.0" if p["unit_diagonal"] else mat("k", "k")
    row = "k + 1 + t // {nr}" if low else "t // {nr}"
    body = code(f"""
        oa = b * {{mm}}
        ob = b * {{mr}}
        for t in range(tid, {{mr}}, {{T}}):
            i = t // {{nr}}
            c = t % {{nr}}
            s0[ob + t] = a1[{bidx("i", "c")}]
        for q in range({{m}}):
            k = {"q" if low else f"{m - 1} - q"}
            cuda.syncthreads()
            d = {diag}
            rem = {{m}} - 1 - q
            for t in range(tid, rem * {{nr}}, {{T}}):
                j = {row}
                c = t % {{nr}}
                s0[ob + j * {{nr}} + c] -= {mat("j", "k")} * (s0[ob + k * {{nr}} + c] / d)
        cuda.syncthreads()
        for t in range(tid, {{mr}}, {{T}}):
            k = t // {{nr}}
            c = t % {{nr}}
            o0[{bidx("k", "c")}] = s0[ob + t] / {diag}""", m=m, mm=m * m, mr=m * nr, nr=nr,
                 T=cfg.threads)
    tag = (f"triangular_solve {eqn.invars[0].aval.dtype.name} {ashape} {bshape} "
           f"left_side={left} lower={p['lower']} transpose_a={p['transpose_a']} "
           f"unit_diagonal={p['unit_diagonal']}")
    return plan(tag, eqn, cfg, batch, m * nr > 0, body, [(batch * m * nr, F64)])


# ----------------------------------------------------------------------------- lu


def lu(eqn: JaxprEqn, cfg: Config) -> ir.Kernel:
    """Partial pivoting as LAPACK's getrf: the pivot is the first row of largest |value| in
    the column (a block argmax in shared memory), whole rows swapped, the column scaled by
    the pivot's reciprocal (skipped for a zero pivot), a rank-1 trailing update."""
    shape = eqn.invars[0].aval.shape
    n, batch = shape[-1], prod(shape[:-2])
    T = cfg.threads
    body = code("""
        o = b * {nn}
        op = b * {n}
        for t in range(tid, {nn}, {T}):
            s0[o + t] = a0[o + t]
        for t in range(tid, {n}, {T}):
            o2[op + t] = t
        for k in range({n}):
            cuda.syncthreads()
            bv = -1.0
            bi = {n}
            for i in range(k + tid, {n}, {T}):
                v = abs(s0[o + i * {n} + k])
                if v > bv:
                    bv = v
                    bi = i
            sv[tid] = bv
            si[tid] = bi
            cuda.syncthreads()
            h = {half}
            while h > 0:
                if tid < h:
                    v = sv[tid + h]
                    i = si[tid + h]
                    if v > sv[tid] or (v == sv[tid] and i < si[tid]):
                        sv[tid] = v
                        si[tid] = i
                cuda.syncthreads()
                h //= 2
            p = si[0]
            if p >= {n}:
                p = k
            if tid == 0:
                o1[op + k] = p
                xi = o2[op + k]
                o2[op + k] = o2[op + p]
                o2[op + p] = xi
            if p != k:
                for j in range(tid, {n}, {T}):
                    x = s0[o + k * {n} + j]
                    s0[o + k * {n} + j] = s0[o + p * {n} + j]
                    s0[o + p * {n} + j] = x
            cuda.syncthreads()
            d = s0[o + k * {n} + k]
            if d != 0.0:
                r = 1.0 / d
                for i in range(k + 1 + tid, {n}, {T}):
                    s0[o + i * {n} + k] *= r
            cuda.syncthreads()
            m = {n} - k - 1
            for t in range(tid, m * m, {T}):
                i = k + 1 + t // m
                j = k + 1 + t % m
                s0[o + i * {n} + j] -= s0[o + i * {n} + k] * s0[o + k * {n} + j]
        cuda.syncthreads()
        for t in range(tid, {nn}, {T}):
            o0[o + t] = s0[o + t]""", n=n, nn=n * n, T=T, half=T // 2)
    shared = [f"sv = cuda.shared.array({T}, np.float64)",
              f"si = cuda.shared.array({T}, np.int64)"]
    tag = f"lu {eqn.invars[0].aval.dtype.name} {shape}"
    return plan(tag, eqn, cfg, batch, n > 0, body, [(batch * n * n, F64)], shared)


# ----------------------------------------------------------------------------- qr


def householder(h: str, rows: int, ld: int, steps: str, end: str, T: int) -> list[str]:
    """LAPACK's geqr2 on buffer `h` (offset oh, row stride ld): for j < steps, dlarfg's
    reflector (beta = -sign(alpha) norm, v[0] = 1 implicit, v below the diagonal, tau into
    `tau[ot + j]`), then applied to columns j+1..end-1 (one thread per column)."""
    x = f"{h}[oh + i * {ld} + j]"
    lines = code(f"""
        for j in range({steps}):
            cuda.syncthreads()
            alpha = {h}[oh + j * {ld} + j]
            acc = 0.0
            for i in range(j + 1 + tid, {rows}, {T}):
                acc += {x} * {x}""")
    lines += indent(block_sum("acc", "xn2", T), 4)
    lines += indent(code(f"""
            tj = 0.0
            if xn2 != 0.0:
                nrm = math.hypot(alpha, math.sqrt(xn2))
                beta = -nrm if alpha >= 0.0 else nrm
                tj = (beta - alpha) / beta
                scal = 1.0 / (alpha - beta)
                for i in range(j + 1 + tid, {rows}, {T}):
                    {x} *= scal
                if tid == 0:
                    {h}[oh + j * {ld} + j] = beta
            if tid == 0:
                tau[ot + j] = tj
            cuda.syncthreads()
            if tj != 0.0:
                for cc in range(j + 1 + tid, {end}, {T}):
                    s = {h}[oh + j * {ld} + cc]
                    for i in range(j + 1, {rows}):
                        s += {x} * {h}[oh + i * {ld} + cc]
                    s *= tj
                    {h}[oh + j * {ld} + cc] -= s
                    for i in range(j + 1, {rows}):
                        {h}[oh + i * {ld} + cc] -= s * {x}"""), 4)
    return lines


def form_q(h: str, q: str, rows: int, ld: int, kq: int, steps: str, first: str,
            start: str, T: int) -> list[str]:
    """LAPACK's org2r: columns first..kq-1 of Q (rows x kq, offset oq) = H_0 ... H_{steps-1}
    applied to the identity's columns, the reflectors applied backwards; reflector j only
    changes columns start.. (start = max(j, first), as numba-cuda's max needs a device)."""
    hx = f"{h}[oh + i * {ld} + j]"
    return code(f"""
        for t in range(tid, {rows * kq}, {T}):
            cc = t % {kq}
            if cc >= {first}:
                {q}[oq + t] = 1.0 if t // {kq} == cc else 0.0
        for j in range({steps} - 1, -1, -1):
            cuda.syncthreads()
            tj = tau[ot + j]
            if tj != 0.0:
                for cc in range({start} + tid, {kq}, {T}):
                    s = {q}[oq + j * {kq} + cc]
                    for i in range(j + 1, {rows}):
                        s += {hx} * {q}[oq + i * {kq} + cc]
                    s *= tj
                    {q}[oq + j * {kq} + cc] -= s
                    for i in range(j + 1, {rows}):
                        {q}[oq + i * {kq} + cc] -= s * {hx}
        cuda.syncthreads()""")


def qr(eqn: JaxprEqn, cfg: Config) -> ir.Kernel:
    """Householder QR (geqrf) and Q formed from the reflectors (orgqr), as numpy's qr.
    Scratch: s0 the factored matrix, s1 Q, s2 the taus."""
    shape = eqn.invars[0].aval.shape
    m, n, batch = shape[-2], shape[-1], prod(shape[:-2])
    k = min(m, n)
    kq = m if eqn.params["full_matrices"] else k
    T = cfg.threads
    body = code(f"""
        oh = b * {m * n}
        oq = b * {m * kq}
        ot = b * {k}
        for t in range(tid, {m * n}, {T}):
            s0[oh + t] = a0[oh + t]""")
    body = [*body, "h0 = s0", "q0 = s1", "tau = s2"]
    body += householder("h0", m, n, str(k), str(n), T)
    body += form_q("h0", "q0", m, n, kq, str(k), "0", "j", T)
    body += code(f"""
        for t in range(tid, {m * kq}, {T}):
            o0[oq + t] = q0[oq + t]
        for t in range(tid, {kq * n}, {T}):
            i = t // {n}
            if i <= t % {n}:
                o1[b * {kq * n} + t] = h0[oh + t]
            else:
                o1[b * {kq * n} + t] = 0.0""")
    shared = [f"sh = cuda.shared.array({T}, np.float64)"]
    tag = f"qr {eqn.invars[0].aval.dtype.name} {shape} full_matrices={kq == m}"
    scratch = [(batch * m * n, F64), (batch * m * kq, F64), (batch * k, F64)]
    return plan(tag, eqn, cfg, batch, True, body, scratch, shared)


# ----------------------------------------------------------------------------- Jacobi
