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

from numbax._src.compiler.cuda.kernels.index import _module
from numbax._src.compiler.cuda.loops import Config, KernelPlan, _prod
from numbax._src.core import JaxprEqn

KERNELS = frozenset({"cholesky", "triangular_solve", "lu", "qr", "eigh", "svd"})
MAX_SWEEPS = 40  # cyclic Jacobi (eigh, svd): sweeps before giving up on convergence
F64 = np.float64


def supported(eqn: JaxprEqn) -> bool:
    avals = [v.aval for v in eqn.invars]
    if any(a.dtype not in (np.float32, np.float64) for a in avals):
        return False  # complex matrices stay on the CPU
    if eqn.primitive.name in ("qr", "svd"):
        return 0 not in avals[0].shape[-2:]
    return True


def _code(text: str, **consts) -> list[str]:
    """A dedented source template, `{name}` filled with compile-time constants."""
    return textwrap.dedent(text).strip("\n").format(**consts).split("\n")


def _indent(lines: list[str], n: int) -> list[str]:
    return [" " * n + line for line in lines]


def _plan(tag: str, eqn: JaxprEqn, cfg: Config, batch: int, work: bool, body: list[str],
          scratch: list[tuple[int, object]], shared: list[str] = ()) -> KernelPlan:
    """One kernel: `body` runs per matrix b of the batch, one block per matrix."""
    nin, nout = len(eqn.invars), len(eqn.outvars)
    args = ", ".join([f"a{k}" for k in range(nin)] + [f"o{k}" for k in range(nout)]
                     + [f"s{k}" for k in range(len(scratch))])
    lines = ["    tid = cuda.threadIdx.x", *_indent(list(shared), 4),
             "    b = cuda.blockIdx.x", f"    while b < {batch}:"]
    lines += _indent(body, 8) + ["        b += cuda.gridDim.x"]
    launches = [("kernel", min(batch, cfg.max_blocks), cfg.threads)] if batch and work else []
    return KernelPlan(_module(tag, {"kernel": (args, lines)}), launches, scratch)


def _block_sum(acc: str, out: str, T: int) -> list[str]:
    """Tree sum of every thread's `acc` through shared `sh`; every thread gets `out`."""
    return _code("""
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


def _less(u: str, v: str) -> str:
    """u < v with NaNs last (all NaNs equal), as the sort kernels."""
    return f"({u} < {v} or ({v} != {v} and {u} == {u}))"


def render(eqn: JaxprEqn, cfg: Config) -> KernelPlan:
    return _RENDER[eqn.primitive.name](eqn, cfg)


# ----------------------------------------------------------------------------- cholesky


def _cholesky(eqn: JaxprEqn, cfg: Config) -> KernelPlan:
    """Right-looking, column by column on the lower triangle; a non-positive pivot (or NaN)
    makes the whole matrix NaN, as the impl. Scratch s0: the float64 working copy."""
    shape = eqn.invars[0].aval.shape
    n, batch = shape[-1], _prod(shape[:-2])
    body = _code("""
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
    return _plan(tag, eqn, cfg, batch, n > 0, body, [(batch * n * n, F64)])


# ----------------------------------------------------------------------------- triangular_solve


def _triangular_solve(eqn: JaxprEqn, cfg: Config) -> KernelPlan:
    """Solved as M X = B' with M = op(a) (left side) or op(a)ᵀ (right side, B' = bᵀ), M
    triangular: step k updates the rows still to solve with column k (threads over rows x
    right-hand sides), x_k = B'_k / M_kk at the end. Scratch s0: B' in float64."""
    p = eqn.params
    ashape, bshape = eqn.invars[0].aval.shape, eqn.invars[1].aval.shape
    m, batch = ashape[-1], _prod(ashape[:-2])
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
    body = _code(f"""
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
    return _plan(tag, eqn, cfg, batch, m * nr > 0, body, [(batch * m * nr, F64)])


# ----------------------------------------------------------------------------- lu


def _lu(eqn: JaxprEqn, cfg: Config) -> KernelPlan:
    """Partial pivoting as LAPACK's getrf: the pivot is the first row of largest |value| in
    the column (a block argmax in shared memory), whole rows swapped, the column scaled by
    the pivot's reciprocal (skipped for a zero pivot), a rank-1 trailing update."""
    shape = eqn.invars[0].aval.shape
    n, batch = shape[-1], _prod(shape[:-2])
    T = cfg.threads
    body = _code("""
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
    return _plan(tag, eqn, cfg, batch, n > 0, body, [(batch * n * n, F64)], shared)


# ----------------------------------------------------------------------------- qr


def _householder(h: str, rows: int, ld: int, steps: str, end: str, T: int) -> list[str]:
    """LAPACK's geqr2 on buffer `h` (offset oh, row stride ld): for j < steps, dlarfg's
    reflector (beta = -sign(alpha) norm, v[0] = 1 implicit, v below the diagonal, tau into
    `tau[ot + j]`), then applied to columns j+1..end-1 (one thread per column)."""
    x = f"{h}[oh + i * {ld} + j]"
    lines = _code(f"""
        for j in range({steps}):
            cuda.syncthreads()
            alpha = {h}[oh + j * {ld} + j]
            acc = 0.0
            for i in range(j + 1 + tid, {rows}, {T}):
                acc += {x} * {x}""")
    lines += _indent(_block_sum("acc", "xn2", T), 4)
    lines += _indent(_code(f"""
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


def _form_q(h: str, q: str, rows: int, ld: int, kq: int, steps: str, first: str,
            start: str, T: int) -> list[str]:
    """LAPACK's org2r: columns first..kq-1 of Q (rows x kq, offset oq) = H_0 ... H_{steps-1}
    applied to the identity's columns, the reflectors applied backwards; reflector j only
    changes columns start.. (start = max(j, first), as numba-cuda's max needs a device)."""
    hx = f"{h}[oh + i * {ld} + j]"
    return _code(f"""
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


def _qr(eqn: JaxprEqn, cfg: Config) -> KernelPlan:
    """Householder QR (geqrf) and Q formed from the reflectors (orgqr), as numpy's qr.
    Scratch: s0 the factored matrix, s1 Q, s2 the taus."""
    shape = eqn.invars[0].aval.shape
    m, n, batch = shape[-2], shape[-1], _prod(shape[:-2])
    k = min(m, n)
    kq = m if eqn.params["full_matrices"] else k
    T = cfg.threads
    body = _code(f"""
        oh = b * {m * n}
        oq = b * {m * kq}
        ot = b * {k}
        for t in range(tid, {m * n}, {T}):
            s0[oh + t] = a0[oh + t]""")
    body = [*body, "h0 = s0", "q0 = s1", "tau = s2"]
    body += _householder("h0", m, n, str(k), str(n), T)
    body += _form_q("h0", "q0", m, n, kq, str(k), "0", "j", T)
    body += _code(f"""
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
    return _plan(tag, eqn, cfg, batch, True, body, scratch, shared)


# ----------------------------------------------------------------------------- Jacobi


def _pair(n_even: int) -> list[str]:
    """Pair k of round r of a round-robin tournament on n_even players (p < q)."""
    return _code(f"""
        if k == 0:
            p = r
            q = {n_even - 1}
        else:
            p = (r + k) % {n_even - 1}
            q = (r - k + {n_even - 1}) % {n_even - 1}
        if p > q:
            z = p
            p = q
            q = z""")


def _rotation(app: str, aqq: str, apq: str, eps: float) -> list[str]:
    """The Jacobi rotation (c, s) that zeroes apq of [[app, apq], [apq, aqq]] (Golub-Van Loan
    8.4.1); identity when |apq| <= eps sqrt(|app aqq|) (then the pair counts as converged)."""
    return _code(f"""
        c = 1.0
        s = 0.0
        if abs({apq}) > {eps!r} * math.sqrt(abs({app})) * math.sqrt(abs({aqq})) \\
                and abs({apq}) > 1e-300:
            th = ({aqq} - {app}) / (2.0 * {apq})
            tt = 1.0 / (abs(th) + math.sqrt(1.0 + th * th))
            if th < 0.0:
                tt = -tt
            c = 1.0 / math.sqrt(1.0 + tt * tt)
            s = tt * c
            fl[0] = 1""")


def _sweeps(n: int, rot: list[str], update: list[str], T: int) -> list[str]:
    """Cyclic Jacobi in parallel order: each round computes n/2 disjoint rotations (into
    rot[orr + 2k], rot[orr + 2k + 1]) then applies them; stops after a sweep with no
    rotation or MAX_SWEEPS sweeps."""
    ne = n + n % 2
    lines = _code(f"""
        for sweep in range({MAX_SWEEPS}):
            cuda.syncthreads()
            if tid == 0:
                fl[0] = 0
            for r in range({ne - 1}):
                cuda.syncthreads()
                for k in range(tid, {ne // 2}, {T}):""")
    lines += _indent(_pair(ne), 12)
    lines += _indent(rot, 12)
    lines += _indent(_code("""
                    rot[orr + 2 * k] = c
                    rot[orr + 2 * k + 1] = s
                cuda.syncthreads()"""), 8)
    lines += _indent(update, 8)
    lines += _indent(_code("""
            cuda.syncthreads()
            done = fl[0] == 0
            cuda.syncthreads()
            if done:
                break"""), 4)
    return lines


def _pair_loop(n: int, total: int, T: int, inner: str) -> list[str]:
    """Threads over (pair k, index `inner`), pair fastest; p, q, c, s of the pair bound."""
    ne = n + n % 2
    lines = _code(f"""
        for t in range(tid, {total}, {T}):
            k = t % {ne // 2}
            {inner} = t // {ne // 2}""")
    lines += _indent(_pair(ne), 4)
    lines += _indent(_code(f"""
            c = rot[orr + 2 * k]
            s = rot[orr + 2 * k + 1]
            if q < {n} and s != 0.0:"""), 4)
    return lines


def _rank(idx: str, key: str, count: int, descending: bool) -> list[str]:
    """rk = the position of element `idx` in a stable sort of key(0..count-1)."""
    a, b = ("x", "y") if descending else ("y", "x")
    return _code(f"""
        x = {key.format(idx)}
        rk = 0
        for l in range({count}):
            y = {key.format("l")}
            if {_less(a, b)} or (not {_less(b, a)} and l < {idx}):
                rk += 1""")


def _eps(eqn: JaxprEqn) -> float:
    return float(np.finfo(eqn.invars[0].aval.dtype).eps)


# ----------------------------------------------------------------------------- eigh


def _eigh(eqn: JaxprEqn, cfg: Config) -> KernelPlan:
    """Two-sided cyclic Jacobi on the symmetric matrix read from one triangle; Vᵀ kept by
    rows (s1). Eigenvalues ascending, eigenvectors as columns, signs arbitrary."""
    shape = eqn.invars[0].aval.shape
    n, batch = shape[-1], _prod(shape[:-2])
    T, ne = cfg.threads, n + n % 2
    tri = "j <= i" if eqn.params["lower"] else "j >= i"
    body = _code(f"""
        o = b * {n * n}
        orr = b * {ne}
        w = s0
        vt = s1
        rot = s2
        for t in range(tid, {n * n}, {T}):
            i = t // {n}
            j = t % {n}
            if {tri}:
                w[o + t] = a0[o + t]
            else:
                w[o + t] = a0[o + j * {n} + i]
            vt[o + t] = 1.0 if i == j else 0.0""")
    rot = [f"if q < {n}:", *_indent(_code(f"""
        app = w[o + p * {n} + p]
        aqq = w[o + q * {n} + q]
        apq = w[o + p * {n} + q]"""), 4)]
    rot += _indent(_rotation("app", "aqq", "apq", _eps(eqn)), 4)
    rot = ["c = 1.0", "s = 0.0", *rot]
    upd = _pair_loop(n, ne // 2 * n, T, "j")
    upd += _code(f"""
                x = w[o + p * {n} + j]
                y = w[o + q * {n} + j]
                w[o + p * {n} + j] = c * x - s * y
                w[o + q * {n} + j] = s * x + c * y
                x = vt[o + p * {n} + j]
                y = vt[o + q * {n} + j]
                vt[o + p * {n} + j] = c * x - s * y
                vt[o + q * {n} + j] = s * x + c * y
        cuda.syncthreads()""")
    upd += _pair_loop(n, ne // 2 * n, T, "j")
    upd += _indent(_code(f"""
                x = w[o + j * {n} + p]
                y = w[o + j * {n} + q]
                if j == p:
                    w[o + j * {n} + p] = c * x - s * y
                    w[o + j * {n} + q] = 0.0
                elif j == q:
                    w[o + j * {n} + p] = 0.0
                    w[o + j * {n} + q] = s * x + c * y
                else:
                    w[o + j * {n} + p] = c * x - s * y
                    w[o + j * {n} + q] = s * x + c * y"""), 8)
    body += _sweeps(n, rot, upd, T)
    body += [f"for i in range(tid, {n}, {T}):"]
    body += _indent(_rank("i", f"w[o + {{0}} * {n + 1}]", n, False), 4)
    body += _indent(_code(f"""
        o1[b * {n} + rk] = x
        for j in range({n}):
            o0[o + j * {n} + rk] = vt[o + i * {n} + j]"""), 4)
    shared = ["fl = cuda.shared.array(1, np.int32)"]
    tag = f"eigh {eqn.invars[0].aval.dtype.name} {shape} lower={eqn.params['lower']}"
    scratch = [(batch * n * n, F64), (batch * n * n, F64), (batch * ne, F64)]
    return _plan(tag, eqn, cfg, batch, n > 0, body, scratch, shared)


# ----------------------------------------------------------------------------- svd


def _svd(eqn: JaxprEqn, cfg: Config) -> KernelPlan:
    """One-sided (Hestenes) Jacobi on the columns of X = a (m >= n) or aᵀ (m < n), ll x kk,
    rotations accumulated in Y (kk x kk). Singular values are the column norms, sorted
    descending; the X side's vectors are the normalised columns, completed to an orthonormal
    basis (zero singular values, full_matrices) by the Householder Q of those columns."""
    p = eqn.params
    shape = eqn.invars[0].aval.shape
    m, n, batch = shape[-2], shape[-1], _prod(shape[:-2])
    kk, ll, tall = min(m, n), max(m, n), m >= n
    kf = ll if p["full_matrices"] else kk
    uv, T, ne = p["compute_uv"], cfg.threads, kk + kk % 2
    src = "i * {n} + j" if tall else "j * {n} + i"
    body = _code(f"""
        ox = b * {ll * kk}
        oy = b * {kk * kk}
        orr = b * {ne}
        x0 = s0
        y0 = s1
        rot = s2
        sv = s3
        for t in range(tid, {ll * kk}, {T}):
            i = t // {kk}
            j = t % {kk}
            x0[ox + t] = a0[b * {m * n} + {src.format(n=n)}]
        for t in range(tid, {kk * kk}, {T}):
            y0[oy + t] = 1.0 if t // {kk} == t % {kk} else 0.0""")
    col = f"x0[ox + i * {kk} + {{}}]"
    rot = _code(f"""
        c = 1.0
        s = 0.0
        if q < {kk}:
            al = 0.0
            be = 0.0
            ga = 0.0
            for i in range({ll}):
                xp = {col.format("p")}
                xq = {col.format("q")}
                al += xp * xp
                be += xq * xq
                ga += xp * xq""")
    rot += _indent(_rotation("al", "be", "ga", _eps(eqn)), 4)
    upd = _pair_loop(kk, ne // 2 * ll, T, "i")
    upd += _indent(_code(f"""
                xp = {col.format("p")}
                xq = {col.format("q")}
                {col.format("p")} = c * xp - s * xq
                {col.format("q")} = s * xp + c * xq"""), 8)
    if uv:
        upd += _pair_loop(kk, ne // 2 * kk, T, "i")
        upd += _indent(_code(f"""
                yp = y0[oy + i * {kk} + p]
                yq = y0[oy + i * {kk} + q]
                y0[oy + i * {kk} + p] = c * yp - s * yq
                y0[oy + i * {kk} + q] = s * yp + c * yq"""), 8)
    body += _sweeps(kk, rot, upd, T)
    body += _code(f"""
        cuda.syncthreads()
        for j in range(tid, {kk}, {T}):
            acc = 0.0
            for i in range({ll}):
                acc += {col.format("j")} * {col.format("j")}
            sv[b * {kk} + j] = math.sqrt(acc)
        cuda.syncthreads()
        for j in range(tid, {kk}, {T}):""")
    body += _indent(_rank("j", f"sv[b * {kk} + {{0}}]", kk, True), 4)
    body += [f"    o0[b * {kk} + rk] = x"]
    if uv:
        body += _svd_vectors(m, n, kk, ll, kf, tall, T)
    shared = ["fl = cuda.shared.array(1, np.int32)", f"sh = cuda.shared.array({T}, np.float64)"]
    tag = (f"svd {eqn.invars[0].aval.dtype.name} {shape} full_matrices={p['full_matrices']} "
           f"compute_uv={uv}")
    scratch = [(batch * ll * kk, F64), (batch * kk * kk, F64), (batch * ne, F64),
               (batch * kk, F64)]
    if uv:
        scratch += [(batch * ll * kk, F64), (batch * kk, F64), (batch * ll * kf, F64)]
    return _plan(tag, eqn, cfg, batch, True, body, scratch, shared)


def _svd_vectors(m: int, n: int, kk: int, ll: int, kf: int, tall: bool, T: int) -> list[str]:
    """U and Vᵀ: Y's columns permuted by rank; X's normalised columns (s4 = their copy for
    the Householder completion, s5 its taus, s6 the ll x kf basis)."""
    y_out = (f"o2[b * {kk * n} + rk * {n} + i]" if tall else f"o1[b * {m * m} + i * {m} + rk]")
    b_out = (f"o1[b * {m * kf} + i * {kf} + cc]" if tall else f"o2[b * {kf * n} + cc * {n} + i]")
    lines = _indent(_code(f"""
        sj = x
        for i in range({kk}):
            {y_out} = y0[oy + i * {kk} + j]
        for i in range({ll}):
            v = x0[ox + i * {kk} + j] / sj if sj > 0.0 else 0.0
            s6[b * {ll * kf} + i * {kf} + rk] = v
            s4[b * {ll * kk} + i * {kk} + rk] = v"""), 4)
    lines += _code(f"""
        cuda.syncthreads()
        nz = 0
        for j in range({kk}):
            if sv[b * {kk} + j] > 0.0:
                nz += 1
        if nz < {kf}:
            oh = b * {ll * kk}
            ot = b * {kk}
            oq = b * {ll * kf}
            tau = s5""")
    inner = _householder("s4", ll, kk, "nz", "nz", T)
    inner += _form_q("s4", "s6", ll, kk, kf, "nz", "nz", "nz", T)
    lines += _indent(inner, 4)
    lines += _code(f"""
        cuda.syncthreads()
        for t in range(tid, {ll * kf}, {T}):
            i = t // {kf}
            cc = t % {kf}
            {b_out} = s6[b * {ll * kf} + t]""")
    return lines


_RENDER = {"cholesky": _cholesky, "triangular_solve": _triangular_solve, "lu": _lu,
           "qr": _qr, "eigh": _eigh, "svd": _svd}
