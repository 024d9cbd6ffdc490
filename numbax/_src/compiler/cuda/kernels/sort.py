"""lax.sort on the GPU (stable, multi-operand, `num_keys` keys, NaNs last as numpy).

Sort order: the keys in turn (NaNs last, all NaNs equal), then the original position, so the
order is total and every variant gives the one stable result. Three variants, picked at render
time from the static shape (`variant`):
- "rowwise" (rows of at most ROWWISE_MAX): one thread per row, a bottom-up merge sort of the
  row's positions in global memory.
- "block" (rows that fit one tile): one block sorts TILE // P rows (P = the row length rounded
  up to a power of two) in shared memory, a bitonic sort of (key 0, position) pairs, then
  gathers every operand through the permutation.
- "merge" (longer rows): the tile kernel sorts each TILE-long chunk of a row into scratch
  (key 0, position) buffers, then ceil(log2(n / TILE)) merge passes, one kernel each (the run
  width is a compile-time constant): a block finds where its stretch of the merge path cuts
  the two runs (binary search along the diagonal), stages those slices in shared memory, and
  each thread merges MERGE_ITEMS outputs from its own diagonal; the buffers ping-pong and the
  last pass gathers the outputs.
Key 0 travels with the positions; keys 1.. are read through the positions only on ties. The
`is_stable` param changes nothing: the result is always the stable one (as on the CPU)."""
from __future__ import annotations

import numpy as np

from numbax._src.compiler import ir
from numbax._src.compiler.cuda.config import Config, cdiv, prod
from numbax._src.compiler.cuda.modules import module, planned
from numbax._src.compiler.source import dtype_ctor
from numbax._src.core import JaxprEqn

ROWWISE_MAX = 4  # rows up to this long: one thread per row


def geometry(cfg: Config) -> tuple[int, int, int]:
    """(TILE: elements one block sorts in shared memory, threads of a tile block, MERGE_ITEMS:
    outputs one merge thread writes; a merge block writes at most TILE). At most 2048, so a
    block's (key, position) pairs fit 48 KB of shared memory. Small under the simulator
    (threads=32), so rows of a few dozen elements already take the merge path."""
    if cfg.threads >= 128:
        tile = min(8 * cfg.threads, 2048)
        return tile, min(cfg.threads, tile // 2), 8
    return cfg.threads, cfg.threads // 2, 4


def variant(length: int, cfg: Config) -> str:
    if length <= ROWWISE_MAX:
        return "rowwise"
    return "block" if length <= geometry(cfg)[0] else "merge"


def _less(u: str, v: str, dtype) -> str:
    """u < v in sort order: NaNs last (all NaNs equal), as numpy's argsort."""
    if np.dtype(dtype).kind == "f":
        return f"({u} < {v} or ({v} != {v} and {u} == {u}))"
    if np.dtype(dtype) == np.bool_:
        return f"((not {u}) and {v})"
    return f"({u} < {v})"


class _Sort:
    """The static facts of one sort equation that every kernel of it is rendered from."""

    def __init__(self, eqn: JaxprEqn, cfg: Config) -> None:
        p = eqn.params
        self.avals = [v.aval for v in eqn.invars]
        shape, dim = self.avals[0].shape, p["dimension"]
        self.nk, self.nops = p["num_keys"], len(self.avals)
        self.n = shape[dim]
        self.inner = prod(shape[dim + 1:])
        self.rows = prod(shape) // self.n if self.n else 0
        self.cfg = cfg
        self.tag = (f"sort {tuple(a.dtype.name for a in self.avals)} {shape} dim={dim} "
                    f"num_keys={self.nk}")
        # key 0 as it sits in shared memory and scratch (bool as uint8)
        kd = np.dtype(self.avals[0].dtype)
        self.carry = np.dtype(np.uint8) if kd == np.bool_ else kd
        self.pos = np.dtype(np.int32 if self.n + 8 * cfg.threads < 2 ** 31 else np.int64)

    def base(self, r: str) -> str:
        """Flat offset of row r's first element."""
        r = r if r.isidentifier() else f"({r})"
        if self.inner == 1:
            return f"{r} * {self.n}"
        return f"({r} // {self.inner}) * {self.n * self.inner} + {r} % {self.inner}"

    def args(self, scratch: bool) -> str:
        names = [f"a{k}" for k in range(self.nops)] + [f"o{k}" for k in range(self.nops)]
        return ", ".join(names + (["p0", "p1", "k0", "k1"] if scratch else []))

    def before(self, u: str, x: str, v: str, y: str) -> str:
        """Call of the device function: position x (key 0 value u) sorts before y (value v)."""
        tail = "".join(f", a{k}" for k in range(1, self.nk))
        return f"before({u}, {x}, {v}, {y}{', b' if self.nk > 1 else ''}{tail})"

    def before_func(self) -> str:
        keys = "".join(f", a{k}" for k in range(1, self.nk))
        lines = ["@cuda.jit(device=True)",
                 f"def before(u, x, v, y{', b' if self.nk > 1 else ''}{keys}):",
                 f"    if {_less('u', 'v', self.carry)}:", "        return True",
                 f"    if {_less('v', 'u', self.carry)}:", "        return False"]
        for k in range(1, self.nk):
            uk, vk = f"u{k}", f"v{k}"
            lines += [f"    {uk} = a{k}[b + x * {self.inner}]",
                      f"    {vk} = a{k}[b + y * {self.inner}]",
                      f"    if {_less(uk, vk, self.avals[k].dtype)}:", "        return True",
                      f"    if {_less(vk, uk, self.avals[k].dtype)}:", "        return False"]
        return "\n".join(lines + ["    return x < y"])

    def gather(self, pad: str, q: str, val: str, pos: str) -> list[str]:
        """Write element q of row (offset b) of every output: key 0 from its carried value."""
        first = val if self.carry == self.avals[0].dtype else f"a0[b + {pos} * {self.inner}]"
        lines = [f"{pad}o0[b + {q} * {self.inner}] = {first}"]
        return lines + [f"{pad}o{k}[b + {q} * {self.inner}] = a{k}[b + {pos} * {self.inner}]"
                        for k in range(1, self.nops)]


def _kernel(name: str, params: str, body: list[str]) -> str:
    return "\n".join(["", "", "@cuda.jit(cache=CACHE)", f"def {name}({params}):", *body])


def _tile_kernel(s: _Sort, chunked: bool) -> tuple[str, int, int]:
    """Bitonic sort in shared memory of segments of P elements, segment = (row, chunk); R
    segments per block. Padding (position >= n) sorts last, by position."""
    tile, threads, _ = geometry(s.cfg)
    n = s.n
    p = tile if chunked else max(2, 1 << (n - 1).bit_length())
    chunks = cdiv(n, p)
    r_seg = tile // p
    size = r_seg * p
    t = min(threads, size // 2)
    groups = cdiv(s.rows * chunks, r_seg)
    lines = [f"    sk = cuda.shared.array({size}, {dtype_ctor(s.carry)})",
             f"    sp = cuda.shared.array({size}, {dtype_ctor(s.pos)})",
             "    tid = cuda.threadIdx.x", "    g = cuda.blockIdx.x",
             f"    while g < {groups}:",
             f"        for i in range(tid, {size}, {t}):",
             f"            r = (g * {r_seg} + i // {p}) // {chunks}",
             f"            q = ((g * {r_seg} + i // {p}) % {chunks}) * {p} + i % {p}",
             f"            if r < {s.rows} and q < {n}:",
             f"                sk[i] = a0[{s.base('r')} + q * {s.inner}]",
             "            else:", f"                q = {n} + i % {p}",
             "            sp[i] = q",
             "        cuda.syncthreads()",
             "        k = 2", f"        while k <= {p}:", "            j = k >> 1",
             "            while j > 0:",
             f"                for c in range(tid, {size // 2}, {t}):",
             "                    i = 2 * c - (c & (j - 1))",  # the pair (i, i + j)
             "                    m = i + j",
             "                    x = sp[i]", "                    y = sp[m]",
             "                    u = sk[i]", "                    v = sk[m]",
             f"                    if x >= {n} or y >= {n}:",
             "                        m_first = y < x", "                    else:"]
    if s.nk > 1:
        row = f"(g * {r_seg} + i // {p}) // {chunks}"  # the segment's row
        lines.append(f"                        b = {s.base(row)}")
    lines += [f"                        m_first = {s.before('v', 'y', 'u', 'x')}",
              f"                    if m_first == ((i & k & {p - 1}) == 0):",
              "                        sp[i] = y", "                        sp[m] = x",
              "                        sk[i] = v", "                        sk[m] = u",
              "                cuda.syncthreads()", "                j >>= 1",
              "            k <<= 1",
              f"        for i in range(tid, {size}, {t}):"]
    if chunked:  # r_seg == 1: block g sorts chunk g % chunks of row g // chunks
        lines += [f"            q = (g % {chunks}) * {p} + i",
                  f"            if q < {n}:",
                  f"                p0[(g // {chunks}) * {n} + q] = sp[i]",
                  f"                k0[(g // {chunks}) * {n} + q] = sk[i]"]
    else:
        lines += [f"            r = g * {r_seg} + i // {p}", f"            q = i % {p}",
                  f"            if r < {s.rows} and q < {n}:",
                  f"                b = {s.base('r')}",
                  *s.gather("                ", "q", "sk[i]", "sp[i]")]
    lines += ["        cuda.syncthreads()", "        g += cuda.gridDim.x"]
    blocks = max(1, min(groups, s.cfg.max_blocks))
    return _kernel("tile", s.args(chunked), lines), blocks, t


def _merge_kernel(s: _Sort, name: str, w: int, src: int, final: bool) -> tuple[str, int, int]:
    """Merge sorted runs of w into runs of 2w. Block g writes the S = T * E outputs from t0 of
    a row: threads 0 and 1 find where the block's first and last merge-path diagonals cut the
    two runs (binary search in global memory), the block stages those input slices in shared
    memory (coalesced), each thread merges E outputs from its own diagonal into registers, and
    the block stores them through shared memory (coalesced)."""
    tile, _, e = geometry(s.cfg)
    t = min(s.cfg.threads, tile // e)
    size = t * e  # divides 2 * w: a block never straddles two merges
    n, bpr = s.n, cdiv(s.n, size)
    ps, ks, pd, kd = f"p{src}", f"k{src}", f"p{1 - src}", f"k{1 - src}"
    search = ["    while i0 < i1:",  # how many of the first d outputs come from run A
              "        m = (i0 + i1) // 2"]
    lines = [f"    sk = cuda.shared.array({size}, {dtype_ctor(s.carry)})",
             f"    sp = cuda.shared.array({size}, {dtype_ctor(s.pos)})",
             "    cut = cuda.shared.array(2, np.int64)",
             f"    kv = cuda.local.array({e}, {dtype_ctor(s.carry)})",
             f"    pv = cuda.local.array({e}, {dtype_ctor(s.pos)})",
             "    tid = cuda.threadIdx.x", "    g = cuda.blockIdx.x",
             f"    while g < {s.rows * bpr}:",
             f"        r = g // {bpr}", f"        t0 = (g % {bpr}) * {size}",
             f"        s0 = r * {n}", f"        b = {s.base('r')}",
             f"        lo = t0 - t0 % {2 * w}", f"        mid = min(lo + {w}, {n})",
             f"        hi = min(lo + {2 * w}, {n})", f"        cnt = min(t0 + {size}, hi) - t0",
             "        if tid < 2:",
             "            d = t0 + tid * cnt - lo",
             "            i0 = max(0, d - (hi - mid))", "            i1 = min(d, mid - lo)",
             *(f"        {line}" for line in search),
             "                xa = s0 + lo + m", "                xb = s0 + mid + d - 1 - m",
             f"                if {s.before(f'{ks}[xa]', f'{ps}[xa]', f'{ks}[xb]', f'{ps}[xb]')}:",
             "                    i0 = m + 1", "                else:",
             "                    i1 = m",
             "            cut[tid] = i0",
             "        cuda.syncthreads()",
             "        la = cut[1] - cut[0]", "        lb = cnt - la",
             "        ga = s0 + lo + cut[0]", "        gb = s0 + mid + t0 - lo - cut[0] - la",
             f"        for i in range(tid, cnt, {t}):",
             "            if i < la:",
             f"                sk[i] = {ks}[ga + i]", f"                sp[i] = {ps}[ga + i]",
             "            else:",
             f"                sk[i] = {ks}[gb + i]", f"                sp[i] = {ps}[gb + i]",
             "        cuda.syncthreads()",
             f"        d = min(tid * {e}, cnt)",
             "        i0 = max(0, d - lb)", "        i1 = min(d, la)",
             *(f"    {line}" for line in search),
             "            xb = la + d - 1 - m",
             f"            if {s.before('sk[m]', 'sp[m]', 'sk[xb]', 'sp[xb]')}:",
             "                i0 = m + 1", "            else:", "                i1 = m",
             "        ia = i0", "        ib = la + d - i0",
             "        u = sk[max(0, min(ia, la - 1))]", "        x = sp[max(0, min(ia, la - 1))]",
             "        v = sk[min(ib, cnt - 1)]", "        y = sp[min(ib, cnt - 1)]",
             f"        for q in range({e}):",  # a constant trip count: kv, pv in registers
             f"            if q < cnt - d and (ia >= la or (ib < cnt and "
             f"{s.before('v', 'y', 'u', 'x')})):",
             "                kv[q] = v", "                pv[q] = y", "                ib += 1",
             "                if ib < cnt:",
             "                    v = sk[ib]", "                    y = sp[ib]",
             "            elif q < cnt - d:",
             "                kv[q] = u", "                pv[q] = x", "                ia += 1",
             "                if ia < la:",
             "                    u = sk[ia]", "                    x = sp[ia]",
             "        cuda.syncthreads()",
             f"        for q in range({e}):",
             "            if q < cnt - d:",
             "                sk[d + q] = kv[q]", "                sp[d + q] = pv[q]",
             "        cuda.syncthreads()",
             f"        for i in range(tid, cnt, {t}):"]
    if final:
        lines += ["            q = t0 + i", *s.gather("            ", "q", "sk[i]", "sp[i]")]
    else:
        lines += [f"            {kd}[s0 + t0 + i] = sk[i]",
                  f"            {pd}[s0 + t0 + i] = sp[i]"]
    lines += ["        cuda.syncthreads()", "        g += cuda.gridDim.x"]
    blocks = max(1, min(s.rows * bpr, s.cfg.max_blocks))
    return _kernel(name, s.args(True), lines), blocks, t


def _rowwise_kernel(s: _Sort) -> tuple[str, int]:
    """One thread per row: a stable bottom-up merge sort of the row's positions (scratch p0,
    p1), then every operand gathered through the permutation."""
    length, inner, nk = s.n, s.inner, s.nk
    cmp = ["d = 0"]  # right-before-left decision over the keys: d = 1 take right, 2 take left
    for k in range(nk):
        pad = "" if k == 0 else "    "
        if k:
            cmp.append("if d == 0:")
        u, v = f"u{k}", f"v{k}"  # one name per key: keys of different dtypes
        cmp += [f"{pad}{u} = a{k}[base + y * {inner}]", f"{pad}{v} = a{k}[base + x * {inner}]",
                f"{pad}if {_less(u, v, s.avals[k].dtype)}:", f"{pad}    d = 1",
                f"{pad}elif {_less(v, u, s.avals[k].dtype)}:", f"{pad}    d = 2"]
    body = [f"base = {s.base('r')}",
            f"s0 = r * {length}",
            f"for q in range({length}):", "    p0[s0 + q] = q",
            "w = 1", "flip = False",
            f"while w < {length}:",
            "    if flip:", "        src = p1", "        dst = p0",
            "    else:", "        src = p0", "        dst = p1",
            "    lo = 0",
            f"    while lo < {length}:",
            f"        mid = min(lo + w, {length})", f"        hi = min(lo + 2 * w, {length})",
            "        i0 = lo", "        i1 = mid", "        t = lo",
            "        while t < hi:",
            "            take_right = i0 >= mid",
            "            if i0 < mid and i1 < hi:",
            "                x = src[s0 + i0]", "                y = src[s0 + i1]",
            *(f"                {line}" for line in cmp),
            "                take_right = d == 1",
            "            if take_right:",
            "                dst[s0 + t] = src[s0 + i1]", "                i1 += 1",
            "            else:",
            "                dst[s0 + t] = src[s0 + i0]", "                i0 += 1",
            "            t += 1",
            "        lo += 2 * w",
            "    w *= 2", "    flip = not flip",
            f"for q in range({length}):",
            "    if flip:", "        x = p1[s0 + q]", "    else:", "        x = p0[s0 + q]"]
    body += [f"    o{k}[base + q * {inner}] = a{k}[base + x * {inner}]" for k in range(s.nops)]
    lines = ["    r = cuda.grid(1)", f"    while r < {s.rows}:"]
    lines += [f"        {line}" for line in body] + ["        r += cuda.gridsize(1)"]
    blocks = max(1, min(cdiv(s.rows, s.cfg.threads), s.cfg.max_blocks))
    return _kernel("kernel", s.args(False) + ", p0, p1", lines), blocks


def render(eqn: JaxprEqn, cfg: Config) -> ir.Kernel:
    """lax.sort along one dimension; arguments: operands a<k>, outputs o<k>, then scratch."""
    s = _Sort(eqn, cfg)
    kind = variant(s.n, cfg) if s.rows else "rowwise"  # no rows: nothing launched
    head = module(f"{s.tag} {kind}", {}).rstrip("\n")
    size = s.rows * s.n
    if kind == "rowwise":
        src, blocks = _rowwise_kernel(s)
        return planned(head + src + "\n", [("kernel", blocks, cfg.threads)] if s.rows else [],
                       scratch=[(size, np.int64), (size, np.int64)])
    parts = [head, "", "", s.before_func()]
    src, blocks, threads = _tile_kernel(s, chunked=kind == "merge")
    parts.append(src)
    launches = [("tile", blocks, threads)]
    if kind == "block":
        return planned("\n".join(parts) + "\n", launches)
    w, j = geometry(cfg)[0], 0
    while w < s.n:
        name = f"merge{j}"
        src, blocks, threads = _merge_kernel(s, name, w, j % 2, final=2 * w >= s.n)
        parts.append(src)
        launches.append((name, blocks, threads))
        w, j = 2 * w, j + 1
    return planned("\n".join(parts) + "\n", launches,
                   scratch=[(size, s.pos), (size, s.pos), (size, s.carry), (size, s.carry)])
