"""CUDA kernels for shape and indexing primitives: one grid-stride thread per output element
(or per update, row or output of a scan/argmax), index arithmetic on compile-time constants.

`render(eqn, cfg)` gives a kernel module's source and its launch steps: (function, element
count) pairs the driver launches in order, each with (inputs..., output) as arguments. The
semantics are those of the eager impls in numbax/_src/lax/{shape_ops,indexing,reductions}.py."""
from __future__ import annotations

import numba
import numpy as np

from numbax._src import core
from numbax._src.compiler.cpu import loops as codegen_cpu
from numbax._src.compiler.cpu.loops import cast, dtype_ctor, render_scalar
from numbax._src.compiler.cuda import complex_rules as cuda_complex
from numbax._src.compiler.cuda.loops import _header, _prod, _strides
from numbax._src.core import Jaxpr, JaxprEqn, Literal

KERNELS = frozenset({"iota", "slice", "rev", "pad", "concatenate", "dynamic_slice",
                     "dynamic_update_slice", "gather", "scatter", "scatter-add", "scatter-mul",
                     "scatter-min", "scatter-max", "cumsum",
                     "cumprod", "cummax", "cummin", "argmax", "argmin", "take_along_axis",
                     "scatter_add_along_axis"})
_ATOMIC = frozenset(np.dtype(d) for d in (np.int32, np.int64, np.uint32, np.uint64, np.float32,
                                          np.float64))


_INT_CAS = frozenset(np.dtype(d) for d in (np.int32, np.int64, np.uint32, np.uint64))
# float scatter-mul: a compare-and-swap loop on the element's bits (an int view of the buffer)
_FLOAT_CAS = {np.dtype(np.float32): ("np.int32", "cd.mul_bits_f32"),
              np.dtype(np.float64): ("np.int64", "cd.mul_bits_f64")}


def supported(eqn: JaxprEqn) -> bool:
    """Whether the CUDA lowering covers this equation's dtypes: scatter-add/min/max need
    numba's atomics (32/64-bit ints and floats); scatter-mul a compare-and-swap loop, which
    numba.cuda has for 32/64-bit integers (floats go through their bits)."""
    name = eqn.primitive.name
    if name == "scatter-add" and eqn.invars[0].aval.dtype.kind == "c":
        return True  # no complex atomics: float atomics on the parts (cuda_complex)
    if name in ("scatter-add", "scatter-min", "scatter-max", "scatter_add_along_axis"):
        return eqn.invars[0].aval.dtype in _ATOMIC
    if name == "scatter-mul":
        return eqn.invars[0].aval.dtype in _INT_CAS or eqn.invars[0].aval.dtype in _FLOAT_CAS
    return True


def _flat(idx: list[str], shape) -> str:
    st = _strides(shape)
    return " + ".join(f"({e}) * {s}" for e, s in zip(idx, st, strict=True) if shape) or "0"


def _module(tag: str, funcs: dict[str, tuple[str, list[str]]]) -> str:
    head = _header(Jaxpr([], [], [], []), core.PrintNames()).split("\n", 2)[2]
    parts = [f"# numbax {codegen_cpu.NUMBAX_VERSION} | numba {numba.__version__} | cuda | {tag}",
             head, ""]
    for name, (params, body) in funcs.items():
        parts += ["", f"@cuda.jit(cache=CACHE)\ndef {name}({params}):", *body]
    return "\n".join(parts) + "\n"


def _grid(n: int, shape, body: list[str], pre: list[str] = ()) -> list[str]:
    """A grid-stride loop over n elements of `shape`: j<d> is element i's index along axis d."""
    lines = [f"    {line}" for line in pre] + ["    i = cuda.grid(1)", f"    while i < {n}:"]
    st = _strides(shape)
    lines += [f"        j{d} = (i // {st[d]}) % {shape[d]}" for d in range(len(shape))]
    lines += [f"        {line}" for line in body] + ["        i += cuda.gridsize(1)"]
    return lines


def _scalar(x, name: str) -> str:
    """A rank-0 operand inside a kernel: a literal's typed constant or element 0 of a buffer."""
    if isinstance(x, Literal):
        return render_scalar(x.val, x.aval.dtype)
    return f"{name}[0]"


def render(eqn: JaxprEqn, cfg) -> tuple[str, list[tuple[str, int]]]:
    name = eqn.primitive.name
    p = eqn.params
    out = eqn.outvars[0].aval
    oshape, n = out.shape, _prod(out.shape)
    ins = [x.aval for x in eqn.invars]
    args = ", ".join([f"a{k}" for k in range(len(ins))] + ["o0"])
    tag = f"{name} {tuple(a.shape for a in ins)} -> {oshape} {out.dtype.name}"
    odt = dtype_ctor(out.dtype)
    if name == "iota":
        body = [f"o0[i] = {odt}(j{p['dimension']})"]
    elif name == "slice":
        strides = p["strides"] or (1,) * len(oshape)
        idx = [f"{s} + j{d} * {t}" for d, (s, t) in enumerate(zip(p["start_indices"], strides))]
        body = [f"o0[i] = a0[{_flat(idx, ins[0].shape)}]"]
    elif name == "rev":
        idx = [f"{oshape[d] - 1} - j{d}" if d in p["dimensions"] else f"j{d}"
               for d in range(len(oshape))]
        body = [f"o0[i] = a0[{_flat(idx, oshape)}]"]
    elif name == "pad":
        xs = ins[0].shape
        conds, idx = [], []
        for d, (_lo, _, interior) in enumerate(p["padding_config"]):
            step = interior + 1
            conds.append(f"t{d} >= 0 and t{d} % {step} == 0 and t{d} // {step} < {xs[d]}")
            idx.append(f"t{d} // {step}")
        body = [f"t{d} = j{d} - {lo}" for d, (lo, _, _) in enumerate(p["padding_config"])]
        body += [f"v = {_scalar(eqn.invars[1], 'a1')}"]
        if conds:
            body += [f"if {' and '.join(conds)}:", f"    v = a0[{_flat(idx, xs)}]"]
        else:
            body += ["v = a0[0]"]
        body += ["o0[i] = v"]
    elif name == "concatenate":
        dim, off, body = p["dimension"], 0, []
        for k, a in enumerate(ins):
            size = a.shape[dim]
            if size == 0:
                continue
            idx = [f"j{d} - {off}" if d == dim else f"j{d}" for d in range(len(oshape))]
            body += [f"{'if' if not body else 'elif'} j{dim} < {off + size}:",
                     f"    o0[i] = a{k}[{_flat(idx, a.shape)}]"]
            off += size
    elif name in ("dynamic_slice", "dynamic_update_slice"):
        xs = ins[0].shape
        sizes = p["slice_sizes"] if name == "dynamic_slice" else ins[1].shape
        first = 1 if name == "dynamic_slice" else 2
        pre = [f"s{d} = min(max(np.int64({_scalar(eqn.invars[first + d], f'a{first + d}')}), "
               f"0), {xs[d] - sizes[d]})" for d in range(len(xs))]
        if name == "dynamic_slice":
            idx = [f"s{d} + j{d}" for d in range(len(xs))]
            body = [f"o0[i] = a0[{_flat(idx, xs)}]"]
        else:
            conds = [f"0 <= j{d} - s{d} < {sizes[d]}" for d in range(len(xs))]
            idx = [f"j{d} - s{d}" for d in range(len(xs))]
            body = [f"if {' and '.join(conds) or 'True'}:",
                    f"    o0[i] = a1[{_flat(idx, sizes)}]", "else:", "    o0[i] = a0[i]"]
        return _module(tag, {"kernel": (args, _grid(n, oshape, body, pre))}), [("kernel", n)]
    elif name == "gather":
        return _gather(eqn, tag, args)
    elif name in ("scatter", "scatter-add", "scatter-mul", "scatter-min", "scatter-max"):
        return _scatter(eqn, tag, args)
    elif name in ("cumsum", "cumprod", "cummax", "cummin", "argmax", "argmin"):
        return _rows(eqn, tag, args)
    elif name in ("take_along_axis", "scatter_add_along_axis"):
        return _along_axis(eqn, tag, args)
    else:
        raise NotImplementedError(f"jit(backend='gpu'): primitive {name} has no CUDA lowering")
    return _module(tag, {"kernel": (args, _grid(n, oshape, body))}), [("kernel", n)]


def _index_columns(eqn: JaxprEqn, b: str, clip: bool) -> tuple[list[str], str, list[str]]:
    """Lines reading element b's indices (clipped, or with validity `ok`) and the operand's
    flat offset of the indexed part."""
    xs = eqn.invars[0].aval.shape
    axes = eqn.params["axes"]
    kk = len(axes)
    xst = _strides(xs)
    lines, terms = ["ok = True"], []
    for k, a in enumerate(axes):
        lines.append(f"c{k} = np.int64(a1[{b} * {kk} + {k}])")
        if not clip:
            lines.append(f"ok = ok and 0 <= c{k} < {xs[a]}")
        lines.append(f"c{k} = min(max(c{k}, 0), {max(xs[a] - 1, 0)})")
        terms.append(f"c{k} * {xst[a]}")
    return lines, " + ".join(terms) or "0", [d for d in range(len(xs)) if d not in axes]


def _gather(eqn: JaxprEqn, tag: str, args: str):
    from numbax._src.lax import indexing

    x, idx = (v.aval for v in eqn.invars)
    out = eqn.outvars[0].aval
    n = _prod(out.shape)
    nbd = idx.ndim - 1
    mode, fill = eqn.params["mode"], eqn.params["fill_value"]
    if mode == "fill" and fill is None:
        fill = indexing._default_fill(x.dtype)
    fill_s = render_scalar(0 if fill is None else fill, x.dtype)
    if x.size == 0:
        body = [f"o0[i] = {fill_s}"]
        return _module(tag, {"kernel": (args, _grid(n, out.shape, body))}), [("kernel", n)]
    rest_size = _prod(out.shape[nbd:])
    lines, base, rest = _index_columns(eqn, f"(i // {rest_size})", mode == "clip")
    xst = _strides(x.shape)
    src = " + ".join([base, *(f"j{nbd + q} * {xst[d]}" for q, d in enumerate(rest))])
    body = lines + [f"v = a0[{src}]"]
    if mode == "fill":
        body += ["if not ok:", f"    v = {fill_s}"]
    body += ["o0[i] = v"]
    return _module(tag, {"kernel": (args, _grid(n, out.shape, body))}), [("kernel", n)]


def _scatter(eqn: JaxprEqn, tag: str, args: str):
    x, idx, upd = (v.aval for v in eqn.invars)
    n_out, n_upd = _prod(x.shape), _prod(upd.shape)
    copy = _grid(n_out, (n_out,), ["o0[i] = a0[i]"])
    funcs = {"copy": (args, copy)}
    if n_out == 0 or n_upd == 0:
        return _module(tag, funcs), [("copy", n_out)]
    nbd = idx.ndim - 1
    rest_size = _prod(upd.shape[nbd:])
    lines, base, rest = _index_columns(eqn, f"(i // {rest_size})", eqn.params["mode"] == "clip")
    xst = _strides(x.shape)
    dst = " + ".join([base, *(f"j{nbd + q} * {xst[d]}" for q, d in enumerate(rest))])
    name = eqn.primitive.name
    if name == "scatter":
        store = [f"o0[{dst}] = a2[i]"]
    elif name == "scatter-mul" and x.dtype in _FLOAT_CAS:  # CAS on the element's bits
        bits, mul = _FLOAT_CAS[x.dtype]
        store = ["v = a2[i]", f"ov = o0.view({bits})", f"old = ov[{dst}]", "while True:",
                 f"    got = cuda.atomic.cas(ov, {dst}, old, {mul}(old, v))",
                 "    if got == old:", "        break", "    old = got"]
    elif name == "scatter-mul":  # a compare-and-swap loop on the integer itself
        store = ["v = a2[i]", f"old = o0[{dst}]", "while True:",
                 f"    got = cuda.atomic.cas(o0, {dst}, old, {cast(x.dtype, 'old * v')})",
                 "    if got == old:", "        break", "    old = got"]
    elif name == "scatter-add" and x.dtype.kind == "c":
        store = cuda_complex.scatter_add_parts(dst, x.dtype)
    else:
        store = [f"cuda.atomic.{name[8:]}(o0, {dst}, a2[i])"]
    funcs["kernel"] = (args, _grid(n_upd, upd.shape, [*lines, "if ok:",
                                                      *(f"    {s}" for s in store)]))
    steps = [("copy", n_out), ("kernel", n_upd)]
    if name in ("scatter-min", "scatter-max") and x.dtype.kind == "f":
        # np.minimum/maximum propagate NaN; numba's float atomics do not promise to, so
        # later launches store every NaN update, then restore NaNs of the operand.
        nan_upd = [*lines, "if ok and a2[i] != a2[i]:", f"    o0[{dst}] = a2[i]"]
        funcs["nan_updates"] = (args, _grid(n_upd, upd.shape, nan_upd))
        funcs["nan_operand"] = (args, _grid(n_out, (n_out,),
                                            ["if a0[i] != a0[i]:", "    o0[i] = a0[i]"]))
        steps += [("nan_updates", n_upd), ("nan_operand", n_out)]
    return _module(tag, funcs), steps


def _along_axis(eqn: JaxprEqn, tag: str, args: str):
    """take_along_axis: out[..j..] = x[..idx[..j..]..] along `axis`; scatter_add_along_axis:
    zeros, then out[..idx[..j..]..] += u[..j..] with atomics. idx broadcasts (size-1 dims);
    negative indices wrap as numpy's. The CPU backend raises IndexError for indices out of
    bounds; kernels cannot raise, so those elements read 0 / are dropped (numbax's own
    callers, sort's and cumulative ops' derivatives, only pass in-bounds permutations)."""
    name, axis = eqn.primitive.name, eqn.params["axis"]
    x, idx = eqn.invars[0].aval, eqn.invars[1].aval
    out = eqn.outvars[0].aval
    shape = idx.shape if name == "take_along_axis" else x.shape  # the iteration space
    n = _prod(shape)
    size = x.shape[axis] if name == "take_along_axis" else out.shape[axis]
    ipos = [f"j{d}" if idx.shape[d] != 1 else "0" for d in range(len(shape))]
    lines = [f"c = np.int64(a1[{_flat(ipos, idx.shape)}])", "if c < 0:", f"    c += {size}",
             f"ok = 0 <= c < {size}"]
    at = [f"j{d}" if d != axis else "c" for d in range(len(shape))]
    if name == "take_along_axis":
        body = lines + [f"o0[i] = a0[{_flat(at, x.shape)}] if ok else {render_scalar(0, x.dtype)}"]
        return _module(tag, {"kernel": (args, _grid(n, shape, body))}), [("kernel", n)]
    n_out = _prod(out.shape)
    zero = _grid(n_out, (n_out,), [f"o0[i] = {render_scalar(0, out.dtype)}"])
    body = lines + ["if ok:", f"    cuda.atomic.add(o0, {_flat(at, out.shape)}, a0[i])"]
    return (_module(tag, {"zero": (args, zero), "kernel": (args, _grid(n, shape, body))}),
            [("zero", n_out), ("kernel", n)])


_CUM = {"cumsum": "acc + v", "cumprod": "acc * v",
        "cummax": "(acc if (acc != acc or acc >= v) else v)",
        "cummin": "(acc if (acc != acc or acc <= v) else v)"}
_CUM_INT = {"cummax": "max(acc, v)", "cummin": "min(acc, v)"}


def _rows(eqn: JaxprEqn, tag: str, args: str):
    """One thread per row along `axis`: a serial scan (cum*) or arg-reduction (argmax/min)."""
    name, p = eqn.primitive.name, eqn.params
    x = eqn.invars[0].aval
    axis = p["axis"] if "axis" in p else p["axes"][0]
    length = x.shape[axis]
    inner = _prod(x.shape[axis + 1:])
    rows = _prod(x.shape) // max(length, 1) if length else 0
    if name.startswith("arg"):
        rows = _prod(eqn.outvars[0].aval.shape)
    pre = [f"base = (r // {inner}) * {length * inner} + r % {inner}"]
    if name.startswith("cum"):
        odt = eqn.outvars[0].aval.dtype
        comb = (_CUM_INT.get(name) if x.dtype.kind in "iub" else None) or _CUM[name]
        pos = f"{length - 1} - q" if p["reverse"] else "q"
        first = f"{length - 1}" if p["reverse"] else "0"
        body = pre + [f"f = base + {first} * {inner}", f"acc = {cast(odt, 'a0[f]')}",
                      "o0[f] = acc", f"for q in range(1, {length}):",
                      f"    f = base + ({pos}) * {inner}", f"    v = {cast(odt, 'a0[f]')}",
                      f"    acc = {cast(odt, comb)}", "    o0[f] = acc"]
    else:
        better = "v > best" if name == "argmax" else "v < best"
        if x.dtype.kind == "f":  # the first NaN wins, as np.argmax/argmin
            better = f"best == best and ({better} or v != v)"
        body = pre + ["best = a0[base]", "bi = 0", f"for q in range(1, {length}):",
                      f"    v = a0[base + q * {inner}]", f"    if {better}:", "        best = v",
                      "        bi = q", f"o0[r] = {dtype_ctor(eqn.outvars[0].aval.dtype)}(bi)"]
    lines = ["    r = cuda.grid(1)", f"    while r < {rows}:"]
    lines += [f"        {line}" for line in body] + ["        r += cuda.gridsize(1)"]
    return _module(tag, {"kernel": (args, lines)}), [("kernel", rows)]
