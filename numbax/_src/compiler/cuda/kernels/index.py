"""CUDA kernels for shape and indexing primitives: one grid-stride thread per output element
(or per update, row or output of a scan/argmax), index arithmetic on compile-time constants.

Each renderer takes (eqn, cfg) and returns an ir.Kernel whose launches take (inputs...,
output). The semantics are those of the eager impls in numbax/_src/lax/{shape_ops,indexing,
reductions,along_axis}.py."""
from __future__ import annotations

import numpy as np

from numbax._src.compiler import ir
from numbax._src.compiler.cuda.config import Config, prod, strides
from numbax._src.compiler.cuda.modules import eqn_args as _args
from numbax._src.compiler.cuda.modules import eqn_kernel as _kernel
from numbax._src.compiler.cuda.modules import grid_kernel as _one
from numbax._src.compiler.cuda.modules import grid_loop as _grid
from numbax._src.compiler.source import cast, dtype_ctor, render_scalar
from numbax._src.core import JaxprEqn, Literal
from numbax._src.lax import along_axis as la
from numbax._src.lax import indexing as ix
from numbax._src.lax import reductions as lr
from numbax._src.lax import scatter as lsc

# numba's atomics (scatter-add/min/max): 32/64-bit ints and floats
ATOMIC_DTYPES = frozenset(np.dtype(d) for d in (np.int32, np.int64, np.uint32, np.uint64,
                                                np.float32, np.float64))
_INT_CAS = frozenset(np.dtype(d) for d in (np.int32, np.int64, np.uint32, np.uint64))
# float scatter-mul: a compare-and-swap loop on the element's bits (an int view of the buffer)
_FLOAT_CAS = {np.dtype(np.float32): ("np.int32", "sc.mul_bits_f32"),
              np.dtype(np.float64): ("np.int64", "sc.mul_bits_f64")}
CAS_DTYPES = _INT_CAS | frozenset(_FLOAT_CAS)


def _flat(idx: list[str], shape) -> str:
    st = strides(shape)
    return " + ".join(f"({e}) * {s}" for e, s in zip(idx, st, strict=True) if shape) or "0"


def _scalar(x, name: str) -> str:
    """A rank-0 operand inside a kernel: a literal's typed constant or element 0 of a buffer."""
    if isinstance(x, Literal):
        return render_scalar(x.val, x.aval.dtype)
    return f"{name}[0]"


def iota(eqn: JaxprEqn, cfg: Config) -> ir.Kernel:
    odt = dtype_ctor(eqn.outvars[0].aval.dtype)
    return _one(eqn, cfg, eqn.outvars[0].aval.shape, [f"o0[i] = {odt}(j{eqn.params['dimension']})"])


def slice_(eqn: JaxprEqn, cfg: Config) -> ir.Kernel:
    p, oshape = eqn.params, eqn.outvars[0].aval.shape
    steps = p["strides"] or (1,) * len(oshape)
    idx = [f"{s} + j{d} * {t}" for d, (s, t) in enumerate(zip(p["start_indices"], steps))]
    return _one(eqn, cfg, oshape, [f"o0[i] = a0[{_flat(idx, eqn.invars[0].aval.shape)}]"])


def rev(eqn: JaxprEqn, cfg: Config) -> ir.Kernel:
    oshape = eqn.outvars[0].aval.shape
    idx = [f"{oshape[d] - 1} - j{d}" if d in eqn.params["dimensions"] else f"j{d}"
           for d in range(len(oshape))]
    return _one(eqn, cfg, oshape, [f"o0[i] = a0[{_flat(idx, oshape)}]"])


def pad(eqn: JaxprEqn, cfg: Config) -> ir.Kernel:
    xs = eqn.invars[0].aval.shape
    conds, idx = [], []
    for d, (_lo, _, interior) in enumerate(eqn.params["padding_config"]):
        step = interior + 1
        conds.append(f"t{d} >= 0 and t{d} % {step} == 0 and t{d} // {step} < {xs[d]}")
        idx.append(f"t{d} // {step}")
    body = [f"t{d} = j{d} - {lo}" for d, (lo, _, _) in enumerate(eqn.params["padding_config"])]
    body += [f"v = {_scalar(eqn.invars[1], 'a1')}"]
    if conds:
        body += [f"if {' and '.join(conds)}:", f"    v = a0[{_flat(idx, xs)}]"]
    else:
        body += ["v = a0[0]"]
    return _one(eqn, cfg, eqn.outvars[0].aval.shape, body + ["o0[i] = v"])


def concatenate(eqn: JaxprEqn, cfg: Config) -> ir.Kernel:
    oshape = eqn.outvars[0].aval.shape
    dim, off, body = eqn.params["dimension"], 0, []
    for k, x in enumerate(eqn.invars):
        size = x.aval.shape[dim]
        if size == 0:
            continue
        idx = [f"j{d} - {off}" if d == dim else f"j{d}" for d in range(len(oshape))]
        body += [f"{'if' if not body else 'elif'} j{dim} < {off + size}:",
                 f"    o0[i] = a{k}[{_flat(idx, x.aval.shape)}]"]
        off += size
    return _one(eqn, cfg, oshape, body)


def _starts(eqn: JaxprEqn, first: int, sizes) -> list[str]:
    """Start indices clamped so the window fits (as the eager impl)."""
    xs = eqn.invars[0].aval.shape
    return [f"s{d} = min(max(np.int64({_scalar(eqn.invars[first + d], f'a{first + d}')}), "
            f"0), {xs[d] - sizes[d]})" for d in range(len(xs))]


def dynamic_slice(eqn: JaxprEqn, cfg: Config) -> ir.Kernel:
    xs, sizes = eqn.invars[0].aval.shape, eqn.params["slice_sizes"]
    idx = [f"s{d} + j{d}" for d in range(len(xs))]
    return _one(eqn, cfg, eqn.outvars[0].aval.shape, [f"o0[i] = a0[{_flat(idx, xs)}]"],
                _starts(eqn, 1, sizes))


def dynamic_update_slice(eqn: JaxprEqn, cfg: Config) -> ir.Kernel:
    xs, sizes = eqn.invars[0].aval.shape, eqn.invars[1].aval.shape
    conds = [f"0 <= j{d} - s{d} < {sizes[d]}" for d in range(len(xs))]
    idx = [f"j{d} - s{d}" for d in range(len(xs))]
    body = [f"if {' and '.join(conds) or 'True'}:", f"    o0[i] = a1[{_flat(idx, sizes)}]",
            "else:", "    o0[i] = a0[i]"]
    return _one(eqn, cfg, eqn.outvars[0].aval.shape, body, _starts(eqn, 2, sizes))


def _index_columns(eqn: JaxprEqn, b: str, clip: bool) -> tuple[list[str], str, list[str]]:
    """Lines reading element b's indices (clipped, or with validity `ok`) and the operand's
    flat offset of the indexed part."""
    xs = eqn.invars[0].aval.shape
    axes = eqn.params["axes"]
    kk = len(axes)
    xst = strides(xs)
    lines, terms = ["ok = True"], []
    for k, a in enumerate(axes):
        lines.append(f"c{k} = np.int64(a1[{b} * {kk} + {k}])")
        if not clip:
            lines.append(f"ok = ok and 0 <= c{k} < {xs[a]}")
        lines.append(f"c{k} = min(max(c{k}, 0), {max(xs[a] - 1, 0)})")
        terms.append(f"c{k} * {xst[a]}")
    return lines, " + ".join(terms) or "0", [d for d in range(len(xs)) if d not in axes]


def gather(eqn: JaxprEqn, cfg: Config) -> ir.Kernel:
    args = _args(eqn)
    x, idx = (v.aval for v in eqn.invars)
    out = eqn.outvars[0].aval
    n = prod(out.shape)
    nbd = idx.ndim - 1
    mode, fill = eqn.params["mode"], eqn.params["fill_value"]
    if mode == "fill" and fill is None:
        fill = ix.default_fill(x.dtype)
    fill_s = render_scalar(0 if fill is None else fill, x.dtype)
    if x.size == 0:
        return _one(eqn, cfg, out.shape, [f"o0[i] = {fill_s}"])
    rest_size = prod(out.shape[nbd:])
    lines, base, rest = _index_columns(eqn, f"(i // {rest_size})", mode == "clip")
    xst = strides(x.shape)
    src = " + ".join([base, *(f"j{nbd + q} * {xst[d]}" for q, d in enumerate(rest))])
    body = lines + [f"v = a0[{src}]"]
    if mode == "fill":
        body += ["if not ok:", f"    v = {fill_s}"]
    body += ["o0[i] = v"]
    return _kernel(eqn, cfg, {"kernel": (args, _grid(n, out.shape, body))}, [("kernel", n)])


_ATOMIC_OPS = {lsc.scatter_add_p: "add", lsc.scatter_sub_p: "sub", lsc.scatter_min_p: "min",
               lsc.scatter_max_p: "max"}


def scatter(eqn: JaxprEqn, cfg: Config) -> ir.Kernel:
    """A copy of the operand, then one thread per update: a plain store (scatter), numba's
    atomics (add/min/max) or a compare-and-swap loop (mul)."""
    args = _args(eqn)
    x, idx, upd = (v.aval for v in eqn.invars)
    n_out, n_upd = prod(x.shape), prod(upd.shape)
    copy = _grid(n_out, (n_out,), ["o0[i] = a0[i]"])
    funcs = {"copy": (args, copy)}
    if n_out == 0 or n_upd == 0:
        return _kernel(eqn, cfg, funcs, [("copy", n_out)])
    nbd = idx.ndim - 1
    rest_size = prod(upd.shape[nbd:])
    lines, base, rest = _index_columns(eqn, f"(i // {rest_size})", eqn.params["mode"] == "clip")
    xst = strides(x.shape)
    dst = " + ".join([base, *(f"j{nbd + q} * {xst[d]}" for q, d in enumerate(rest))])
    prim = eqn.primitive
    if prim is lsc.scatter_p:
        store = [f"o0[{dst}] = a2[i]"]
    elif prim is lsc.scatter_mul_p and x.dtype in _FLOAT_CAS:  # CAS on the element's bits
        bits, mul = _FLOAT_CAS[x.dtype]
        store = ["v = a2[i]", f"ov = o0.view({bits})", f"old = ov[{dst}]", "while True:",
                 f"    got = cuda.atomic.cas(ov, {dst}, old, {mul}(old, v))",
                 "    if got == old:", "        break", "    old = got"]
    elif prim is lsc.scatter_mul_p:  # a compare-and-swap loop on the integer itself
        store = ["v = a2[i]", f"old = o0[{dst}]", "while True:",
                 f"    got = cuda.atomic.cas(o0, {dst}, old, {cast(x.dtype, 'old * v')})",
                 "    if got == old:", "        break", "    old = got"]
    elif prim is lsc.scatter_add_p and x.dtype.kind == "c":
        # no complex atomics: two float atomics add the parts through a float view of o0
        part = dtype_ctor(np.empty((), x.dtype).real.dtype)
        store = ["v = a2[i]", f"of = o0.view({part})", f"q = 2 * ({dst})",
                 "cuda.atomic.add(of, q, v.real)", "cuda.atomic.add(of, q + 1, v.imag)"]
    else:
        store = [f"cuda.atomic.{_ATOMIC_OPS[prim]}(o0, {dst}, a2[i])"]
    funcs["kernel"] = (args, _grid(n_upd, upd.shape, [*lines, "if ok:",
                                                      *(f"    {s}" for s in store)]))
    steps = [("copy", n_out), ("kernel", n_upd)]
    if prim in (lsc.scatter_min_p, lsc.scatter_max_p) and x.dtype.kind == "f":
        # np.minimum/maximum propagate NaN; numba's float atomics do not promise to, so
        # later launches store every NaN update, then restore NaNs of the operand.
        nan_upd = [*lines, "if ok and a2[i] != a2[i]:", f"    o0[{dst}] = a2[i]"]
        funcs["nan_updates"] = (args, _grid(n_upd, upd.shape, nan_upd))
        funcs["nan_operand"] = (args, _grid(n_out, (n_out,),
                                            ["if a0[i] != a0[i]:", "    o0[i] = a0[i]"]))
        steps += [("nan_updates", n_upd), ("nan_operand", n_out)]
    return _kernel(eqn, cfg, funcs, steps)


def take_along_axis(eqn: JaxprEqn, cfg: Config) -> ir.Kernel:
    return _along_axis(eqn, cfg)


def scatter_add_along_axis(eqn: JaxprEqn, cfg: Config) -> ir.Kernel:
    return _along_axis(eqn, cfg)


def _along_axis(eqn: JaxprEqn, cfg: Config) -> ir.Kernel:
    """take_along_axis: out[..j..] = x[..idx[..j..]..] along `axis`; scatter_add_along_axis:
    zeros, then out[..idx[..j..]..] += u[..j..] with atomics. idx broadcasts (size-1 dims);
    negative indices wrap as numpy's. The CPU backend raises IndexError for indices out of
    bounds; kernels cannot raise, so those elements read 0 / are dropped (numbax's own
    callers, sort's and cumulative ops' derivatives, only pass in-bounds permutations)."""
    args, axis = _args(eqn), eqn.params["axis"]
    take = eqn.primitive is la.take_along_axis_p
    x, idx = eqn.invars[0].aval, eqn.invars[1].aval
    out = eqn.outvars[0].aval
    # the iteration space: every output element (take: idx's size-1 dims broadcast, so
    # idx.shape can be smaller than the output) or every update (scatter)
    shape = out.shape if take else x.shape
    n = prod(shape)
    size = x.shape[axis] if take else out.shape[axis]
    ipos = [f"j{d}" if idx.shape[d] != 1 else "0" for d in range(len(shape))]
    lines = [f"c = np.int64(a1[{_flat(ipos, idx.shape)}])", "if c < 0:", f"    c += {size}",
             f"ok = 0 <= c < {size}"]
    at = [f"j{d}" if d != axis else "c" for d in range(len(shape))]
    if take:
        read = f"o0[i] = a0[{_flat(at, x.shape)}] if ok else {render_scalar(0, x.dtype)}"
        return _one(eqn, cfg, shape, [*lines, read])
    n_out = prod(out.shape)
    zero = _grid(n_out, (n_out,), [f"o0[i] = {render_scalar(0, out.dtype)}"])
    body = lines + ["if ok:", f"    cuda.atomic.add(o0, {_flat(at, out.shape)}, a0[i])"]
    return _kernel(eqn, cfg, {"zero": (args, zero), "kernel": (args, _grid(n, shape, body))},
                   [("zero", n_out), ("kernel", n)])


# cumulative ops' steps: (float/complex form, integer form)
_CUM = {lr.cumsum_p: ("acc + v", "acc + v"), lr.cumprod_p: ("acc * v", "acc * v"),
        lr.cummax_p: ("(acc if (acc != acc or acc >= v) else v)", "max(acc, v)"),
        lr.cummin_p: ("(acc if (acc != acc or acc <= v) else v)", "min(acc, v)")}


def scan_rows(eqn: JaxprEqn, cfg: Config) -> ir.Kernel:
    """One thread per row along `axis`: a serial scan (cum*) or arg-reduction (argmax/min)."""
    prim, p, args = eqn.primitive, eqn.params, _args(eqn)
    x = eqn.invars[0].aval
    axis = p["axis"] if "axis" in p else p["axes"][0]
    length = x.shape[axis]
    inner = prod(x.shape[axis + 1:])
    rows = prod(x.shape) // max(length, 1) if length else 0
    if prim not in _CUM:  # argmax/argmin: one thread per output
        rows = prod(eqn.outvars[0].aval.shape)
    pre = [f"base = (r // {inner}) * {length * inner} + r % {inner}"]
    if prim in _CUM:
        odt = eqn.outvars[0].aval.dtype
        comb = _CUM[prim][1 if x.dtype.kind in "iub" else 0]
        pos = f"{length - 1} - q" if p["reverse"] else "q"
        first = f"{length - 1}" if p["reverse"] else "0"
        body = pre + [f"f = base + {first} * {inner}", f"acc = {cast(odt, 'a0[f]')}",
                      "o0[f] = acc", f"for q in range(1, {length}):",
                      f"    f = base + ({pos}) * {inner}", f"    v = {cast(odt, 'a0[f]')}",
                      f"    acc = {cast(odt, comb)}", "    o0[f] = acc"]
    else:
        better = "v > best" if prim is lr.argmax_p else "v < best"
        if x.dtype.kind == "f":  # the first NaN wins, as np.argmax/argmin
            better = f"best == best and ({better} or v != v)"
        body = pre + ["best = a0[base]", "bi = 0", f"for q in range(1, {length}):",
                      f"    v = a0[base + q * {inner}]", f"    if {better}:", "        best = v",
                      "        bi = q", f"o0[r] = {dtype_ctor(eqn.outvars[0].aval.dtype)}(bi)"]
    lines = ["    r = cuda.grid(1)", f"    while r < {rows}:"]
    lines += [f"        {line}" for line in body] + ["        r += cuda.gridsize(1)"]
    return _kernel(eqn, cfg, {"kernel": (args, lines)}, [("kernel", rows)])
