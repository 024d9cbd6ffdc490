"""lax.sort on the GPU (stable, multi-operand, `num_keys` keys, NaNs last as numpy)."""
from __future__ import annotations

import numpy as np

from numbax._src.compiler.codegen_cuda import Config, KernelPlan, _cdiv, _prod
from numbax._src.compiler.cuda_index import _module
from numbax._src.core import JaxprEqn

KERNELS = frozenset({"sort"})


def _less(u: str, v: str, dtype) -> str:
    """u < v in sort order: NaNs last (all NaNs equal), as numpy's argsort."""
    if np.dtype(dtype).kind == "f":
        return f"({u} < {v} or ({v} != {v} and {u} == {u}))"
    if np.dtype(dtype) == np.bool_:
        return f"((not {u}) and {v})"
    return f"({u} < {v})"


def supported(eqn: JaxprEqn) -> bool:
    return all(v.aval.dtype.kind != "c" for v in eqn.invars)


def render(eqn: JaxprEqn, cfg: Config) -> KernelPlan:
    """lax.sort along one dimension: one thread per row, a stable bottom-up merge sort of the
    row's positions (two int64 scratch rows, p0 and p1), then every operand gathered through
    the permutation. Arguments: operands a<k>, outputs o<k>, p0, p1."""
    p = eqn.params
    avals = [v.aval for v in eqn.invars]
    shape, dim, nk = avals[0].shape, p["dimension"], p["num_keys"]
    length = shape[dim]
    inner = _prod(shape[dim + 1:])
    rows = _prod(shape) // length if length else 0
    nops = len(avals)
    tag = f"sort {tuple(a.dtype.name for a in avals)} {shape} dim={dim} num_keys={nk}"
    # right-before-left decision over the keys in order: d = 1 take right, 2 take left
    cmp = ["d = 0"]
    for k in range(nk):
        pad = "" if k == 0 else "    "
        if k:
            cmp.append("if d == 0:")
        u, v = f"u{k}", f"v{k}"  # one name per key: keys of different dtypes
        cmp += [f"{pad}{u} = a{k}[base + y * {inner}]", f"{pad}{v} = a{k}[base + x * {inner}]",
                f"{pad}if {_less(u, v, avals[k].dtype)}:", f"{pad}    d = 1",
                f"{pad}elif {_less(v, u, avals[k].dtype)}:", f"{pad}    d = 2"]
    body = [f"base = (r // {inner}) * {length * inner} + r % {inner}",
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
    body += [f"    o{k}[base + q * {inner}] = a{k}[base + x * {inner}]" for k in range(nops)]
    args = ", ".join([f"a{k}" for k in range(nops)] + [f"o{k}" for k in range(nops)]
                     + ["p0", "p1"])
    lines = ["    r = cuda.grid(1)", f"    while r < {rows}:"]
    lines += [f"        {line}" for line in body] + ["        r += cuda.gridsize(1)"]
    n = _prod(shape)
    blocks = max(1, min(_cdiv(rows, cfg.threads), cfg.max_blocks))
    return KernelPlan(_module(tag, {"kernel": (args, lines)}),
                      [("kernel", blocks, cfg.threads)] if rows else [],
                      scratch=[(n, np.int64), (n, np.int64)])
