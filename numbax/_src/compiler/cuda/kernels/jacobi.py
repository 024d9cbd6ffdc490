"""CUDA kernels of the symmetric eigendecomposition and the SVD: cyclic Jacobi sweeps, one block
per matrix (rotations of disjoint pairs in parallel, a round-robin ordering of the pairs),
converged when no off-diagonal element is above the dtype's tolerance."""
from __future__ import annotations

from numbax._src.compiler import ir
from numbax._src.compiler.cuda.config import Config, prod
from numbax._src.compiler.cuda.kernels.linalg import (
    F64,
    code,
    form_q,
    householder,
    indent,
    less,
    plan,
)
from numbax._src.core import JaxprEqn
from numbax._src.dtypes import finfo_of

MAX_SWEEPS = 40  # cyclic Jacobi: sweeps before giving up on convergence


def _pair(n_even: int) -> list[str]:
    """Pair k of round r of a round-robin tournament on n_even players (p < q)."""
    return code(f"""
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
    return code(f"""
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
    lines = code(f"""
        for sweep in range({MAX_SWEEPS}):
            cuda.syncthreads()
            if tid == 0:
                fl[0] = 0
            for r in range({ne - 1}):
                cuda.syncthreads()
                for k in range(tid, {ne // 2}, {T}):""")
    lines += indent(_pair(ne), 12)
    lines += indent(rot, 12)
    lines += indent(code("""
                    rot[orr + 2 * k] = c
                    rot[orr + 2 * k + 1] = s
                cuda.syncthreads()"""), 8)
    lines += indent(update, 8)
    lines += indent(code("""
            cuda.syncthreads()
            done = fl[0] == 0
            cuda.syncthreads()
            if done:
                break"""), 4)
    return lines


def _pair_loop(n: int, total: int, T: int, inner: str) -> list[str]:
    """Threads over (pair k, index `inner`), pair fastest; p, q, c, s of the pair bound."""
    ne = n + n % 2
    lines = code(f"""
        for t in range(tid, {total}, {T}):
            k = t % {ne // 2}
            {inner} = t // {ne // 2}""")
    lines += indent(_pair(ne), 4)
    lines += indent(code(f"""
            c = rot[orr + 2 * k]
            s = rot[orr + 2 * k + 1]
            if q < {n} and s != 0.0:"""), 4)
    return lines


def _rank(idx: str, key: str, count: int, descending: bool) -> list[str]:
    """rk = the position of element `idx` in a stable sort of key(0..count-1)."""
    a, b = ("x", "y") if descending else ("y", "x")
    return code(f"""
        x = {key.format(idx)}
        rk = 0
        for l in range({count}):
            y = {key.format("l")}
            if {less(a, b)} or (not {less(b, a)} and l < {idx}):
                rk += 1""")


def _eps(eqn: JaxprEqn) -> float:
    return float(finfo_of(eqn.invars[0].aval.dtype).eps)


# ----------------------------------------------------------------------------- eigh


def eigh(eqn: JaxprEqn, cfg: Config) -> ir.Kernel:
    """Two-sided cyclic Jacobi on the symmetric matrix read from one triangle; Vᵀ kept by
    rows (s1). Eigenvalues ascending, eigenvectors as columns, signs arbitrary."""
    shape = eqn.invars[0].aval.shape
    n, batch = shape[-1], prod(shape[:-2])
    T, ne = cfg.threads, n + n % 2
    tri = "j <= i" if eqn.params["lower"] else "j >= i"
    body = code(f"""
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
    rot = [f"if q < {n}:", *indent(code(f"""
        app = w[o + p * {n} + p]
        aqq = w[o + q * {n} + q]
        apq = w[o + p * {n} + q]"""), 4)]
    rot += indent(_rotation("app", "aqq", "apq", _eps(eqn)), 4)
    rot = ["c = 1.0", "s = 0.0", *rot]
    upd = _pair_loop(n, ne // 2 * n, T, "j")
    upd += code(f"""
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
    upd += indent(code(f"""
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
    body += indent(_rank("i", f"w[o + {{0}} * {n + 1}]", n, False), 4)
    body += indent(code(f"""
        o1[b * {n} + rk] = x
        for j in range({n}):
            o0[o + j * {n} + rk] = vt[o + i * {n} + j]"""), 4)
    shared = ["fl = cuda.shared.array(1, np.int32)"]
    tag = f"eigh {eqn.invars[0].aval.dtype.name} {shape} lower={eqn.params['lower']}"
    scratch = [(batch * n * n, F64), (batch * n * n, F64), (batch * ne, F64)]
    return plan(tag, eqn, cfg, batch, n > 0, body, scratch, shared)


# ----------------------------------------------------------------------------- svd


def svd(eqn: JaxprEqn, cfg: Config) -> ir.Kernel:
    """One-sided (Hestenes) Jacobi on the columns of X = a (m >= n) or aᵀ (m < n), ll x kk,
    rotations accumulated in Y (kk x kk). Singular values are the column norms, sorted
    descending; the X side's vectors are the normalised columns, completed to an orthonormal
    basis (zero singular values, full_matrices) by the Householder Q of those columns."""
    p = eqn.params
    shape = eqn.invars[0].aval.shape
    m, n, batch = shape[-2], shape[-1], prod(shape[:-2])
    kk, ll, tall = min(m, n), max(m, n), m >= n
    kf = ll if p["full_matrices"] else kk
    uv, T, ne = p["compute_uv"], cfg.threads, kk + kk % 2
    src = "i * {n} + j" if tall else "j * {n} + i"
    body = code(f"""
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
    rot = code(f"""
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
    rot += indent(_rotation("al", "be", "ga", _eps(eqn)), 4)
    upd = _pair_loop(kk, ne // 2 * ll, T, "i")
    upd += indent(code(f"""
                xp = {col.format("p")}
                xq = {col.format("q")}
                {col.format("p")} = c * xp - s * xq
                {col.format("q")} = s * xp + c * xq"""), 8)
    if uv:
        upd += _pair_loop(kk, ne // 2 * kk, T, "i")
        upd += indent(code(f"""
                yp = y0[oy + i * {kk} + p]
                yq = y0[oy + i * {kk} + q]
                y0[oy + i * {kk} + p] = c * yp - s * yq
                y0[oy + i * {kk} + q] = s * yp + c * yq"""), 8)
    body += _sweeps(kk, rot, upd, T)
    body += code(f"""
        cuda.syncthreads()
        for j in range(tid, {kk}, {T}):
            acc = 0.0
            for i in range({ll}):
                acc += {col.format("j")} * {col.format("j")}
            sv[b * {kk} + j] = math.sqrt(acc)
        cuda.syncthreads()
        for j in range(tid, {kk}, {T}):""")
    body += indent(_rank("j", f"sv[b * {kk} + {{0}}]", kk, True), 4)
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
    return plan(tag, eqn, cfg, batch, True, body, scratch, shared)


def _svd_vectors(m: int, n: int, kk: int, ll: int, kf: int, tall: bool, T: int) -> list[str]:
    """U and Vᵀ: Y's columns permuted by rank; X's normalised columns (s4 = their copy for
    the Householder completion, s5 its taus, s6 the ll x kf basis)."""
    y_out = (f"o2[b * {kk * n} + rk * {n} + i]" if tall else f"o1[b * {m * m} + i * {m} + rk]")
    b_out = (f"o1[b * {m * kf} + i * {kf} + cc]" if tall else f"o2[b * {kf * n} + cc * {n} + i]")
    lines = indent(code(f"""
        sj = x
        for i in range({kk}):
            {y_out} = y0[oy + i * {kk} + j]
        for i in range({ll}):
            v = x0[ox + i * {kk} + j] / sj if sj > 0.0 else 0.0
            s6[b * {ll * kf} + i * {kf} + rk] = v
            s4[b * {ll * kk} + i * {kk} + rk] = v"""), 4)
    lines += code(f"""
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
    inner = householder("s4", ll, kk, "nz", "nz", T)
    inner += form_q("s4", "s6", ll, kk, kf, "nz", "nz", "nz", T)
    lines += indent(inner, 4)
    lines += code(f"""
        cuda.syncthreads()
        for t in range(tid, {ll * kf}, {T}):
            i = t // {kf}
            cc = t % {kf}
            {b_out} = s6[b * {ll * kf} + t]""")
    return lines
