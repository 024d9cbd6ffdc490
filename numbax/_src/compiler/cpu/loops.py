"""CPU loop nests: each nest of the kernel graph becomes one readable @njit kernel module.

Elementwise nests and reductions over leading or general axes are rendered here; reductions
over the trailing axes and the passes fused after them (softmax) are rows.py's. Every fused
equation is one line with the equation as its comment; scalar forms come from the lowering
registry (compiler/lowerings/), CPU overrides included."""
from __future__ import annotations

import numpy as np

from numbax._src import core
from numbax._src.compiler import fusion, ir, registry
from numbax._src.compiler.registry import Fusion
from numbax._src.compiler.source import cast, jaxpr_comment, render_scalar, version_line
from numbax._src.core import Jaxpr, JaxprEqn, Literal, Var

PRANGE_MIN = 2**19  # smaller loops run serially: threads do not pay here (docs/performance.md)
# Full reductions run in prange chunks with 2 or more Numba threads and this many elements;
# PAR_REDUCE_THREADS (None: numba.get_num_threads() at render time) is for tests. Measured
# (docs/performance.md, bench_cpu.py --sweep): on 16 idle cores a chunked sum wins from 2**18
# elements, a sum of exp from 2**15; on the idle 2-core VM the same (sum 0.61x serial at
# 2**18, logsumexp 0.56x at 2**15) once chunk bounds are unsigned (see rows.render_rows).
PAR_REDUCE_MIN = 2**18
PAR_REDUCE_MIN_HEAVY = 2**15  # kernels calling fastmath exp/log/tanh/...
PAR_REDUCE_THREADS: int | None = None
PAR_REDUCE_CHUNK_MIN = 2**12  # elements per chunk at least
LANES = 16  # independent max/min accumulators per row pass (8 when the pass body is longer)
# Kernel outputs of this many bytes reuse the driver's previous buffer once the caller has
# dropped it (kernels.take): fresh pages of a large np.empty are faulted and zeroed.
POOL_MIN_BYTES = 2**23
POOL_MAX_BYTES = 2**28
# The knobs that change generated code; part of every disk-cache key.
CODEGEN_CONFIG = (("prange_min", PRANGE_MIN), ("error_model", "numpy"),
                  ("fastmath", "reduce_ops accumulators, fm Horner contract"), ("row_groups", 1),
                  ("f32_sum_acc", "float64"),
                  ("par_reduce_min", PAR_REDUCE_MIN, PAR_REDUCE_MIN_HEAVY, PAR_REDUCE_CHUNK_MIN),
                  ("lanes", LANES), ("pool_bytes", POOL_MIN_BYTES, POOL_MAX_BYTES))


def lowering(eqn: JaxprEqn) -> registry.Lowering:
    """The CPU lowering of a fused equation (registry.fusible vouched for it)."""
    return registry.lowering(eqn.primitive, "cpu")


def monoid(eqn: JaxprEqn) -> registry.Monoid:
    return lowering(eqn).monoid


def acc_dtype(eqn: JaxprEqn) -> np.dtype:
    """The accumulator dtype of a reduction equation."""
    return monoid(eqn).acc_dtype(eqn.invars[0].aval.dtype)


def is_reduction(eqn: JaxprEqn) -> bool:
    return fusion.kind_of(eqn) is Fusion.REDUCTION


class LoopKernel:
    """Naming state while one loop nest is rendered."""

    def __init__(self, nest: ir.LoopNest) -> None:
        self.nest = nest
        self.names: dict[Var, str] = {v: f"a{k}" for k, v in enumerate(nest.inputs)}
        self.out_names = {v: f"o{k}" for k, v in enumerate(nest.outputs)}
        self.consts: list[str] = []
        self.temps = 0
        self.pp_names = core.PrintNames()
        sub = Jaxpr([], nest.inputs, nest.eqns, nest.outputs)
        self.header = header(sub, loop_kind(nest)[0], self.pp_names)

    def const(self, lit: Literal) -> str:
        text = render_scalar(lit.val, lit.aval.dtype)
        name = f"c{len(self.consts)}"
        self.consts.append(f"{name} = {text}")
        return name

    def temp(self) -> str:
        self.temps += 1
        return f"t{self.temps - 1}"

    def comment(self, eqn: JaxprEqn) -> str:
        return core.pp_eqn(eqn, self.pp_names, 0)

    def params(self) -> str:
        return ", ".join([*self.names.values(), *self.out_names.values()])


def index(idx: list[str]) -> str:
    return ", ".join(idx) if idx else "()"


def store_index(idx: list[str]) -> str:
    """Like index, for assignments: Numba types `o[...] = v` on 0-d arrays, not `o[()] = v`."""
    return ", ".join(idx) if idx else "..."


def _bcast_index(eqn: JaxprEqn, idx: list[str]) -> str:
    x = eqn.invars[0]
    shape = eqn.params["shape"]
    parts = []
    for i, d in enumerate(eqn.params["broadcast_dimensions"]):
        parts.append("0" if x.aval.shape[i] == 1 and shape[d] != 1 else idx[d])
    return index(parts)


def _iota_index(eqn: JaxprEqn, idx: list[str], flat: bool) -> str:
    """The loop's index along iota's dimension (iota's shape is the nest's, fusion.fits); a
    flattened loop divides its one index back into that dimension's."""
    shape, dim = eqn.params["shape"], eqn.params["dimension"]
    if not flat:
        return idx[dim]
    inner = int(np.prod(shape[dim + 1:], dtype=np.int64))
    at = idx[0] if inner == 1 else f"({idx[0]} // {inner})"
    return at if dim == 0 else f"({at} % {shape[dim]})"


def _reduction_line(eqn: JaxprEqn, acc: str, v: str, out: Var, nans: dict[Var, str] | None,
                    par_reduce: bool) -> list[str]:
    """The accumulator update of a reduction equation. Row passes (`nans` given) update
    through the reduce_ops helpers, max/min of floats beside a NaN flag; a prange reduction
    uses the in-place operator Numba recognises."""
    m = monoid(eqn)
    dtype = eqn.invars[0].aval.dtype
    if nans is not None:
        if out in nans:
            return [f"{nans[out]} = {nans[out]} | ({v} != {v})", m.row_update(acc, v)]
        if m.reassociates and dtype.kind in "fc":
            return [m.row_update(acc, v)]
    if par_reduce and m.inplace:
        return [f"{acc} {m.inplace} {v}"]
    return [f"{acc} = {m.combine(acc, v, dtype)}"]


def body(k: LoopKernel, idx: list[str], flat: bool, accs: dict[Var, str], lines: list[str],
         pad: str, par_reduce: bool, eqns: list[JaxprEqn] | None = None,
         seed: dict[Var, str] | None = None, no_store: frozenset = frozenset(),
         nans: dict[Var, str] | None = None,
         stash: dict[Var, str] | None = None) -> dict[Var, str]:
    """One line per fused equation (with the equation as a comment), inside the loops.

    `seed` gives values already computed as scalars (per-row results of earlier passes),
    `no_store` the recomputed equations whose outputs an earlier pass stored, `nans` the
    NaN flags of vectorised max/min accumulators (row passes: updates go through `rd.*`), and
    `stash` values also stored into an output's buffer (a later pass reads them back).
    Returns the scalar names of the equations' values."""
    nest = k.nest
    full = index(idx)
    value: dict[Var, str] = dict(seed or {})
    shape_rank = len(nest.shape)

    def read(x) -> str:
        if isinstance(x, Literal):
            return k.const(x)
        if x in value:
            return value[x]
        name = k.names[x]
        if x.aval.ndim == 0 and shape_rank > 0:
            return f"{name}s"  # loaded once before the loops
        return f"{name}[{full}]"

    for eqn in nest.eqns if eqns is None else eqns:
        out = eqn.outvars[0]
        comment = k.comment(eqn)
        kind = fusion.kind_of(eqn)
        if kind is Fusion.BROADCAST:
            x = eqn.invars[0]
            expr = read(x) if isinstance(x, Literal) or x.aval.ndim == 0 or x in value else (
                f"{k.names[x]}[{_bcast_index(eqn, idx)}]")
        elif kind is Fusion.REDUCTION:
            update = _reduction_line(eqn, accs[out], read(eqn.invars[0]), out, nans, par_reduce)
            lines.extend(pad + u for u in update)
            lines[-1] += f"  # {comment}"
            continue
        elif kind is Fusion.SOURCE:
            expr = cast(out.aval.dtype, _iota_index(eqn, idx, flat))
        else:
            low = lowering(eqn)
            expr = low.scalar([read(x) for x in eqn.invars], eqn)
            if low.cast and not (out.aval.dtype == np.float64 and all(
                    x.aval.dtype == np.float64 for x in eqn.invars)):
                expr = cast(out.aval.dtype, expr)
        t = k.temp()
        value[out] = t
        lines.append(f"{pad}{t} = {expr}  # {comment}")
        if out in k.out_names and out not in no_store:
            target = f"{k.out_names[out]}[{full if idx else '...'}]"
            lines.append(f"{pad}{target} = {t}")
        if stash and out in stash:
            lines.append(f"{pad}{stash[out]}[{full}] = {t}  # kept for the last pass")
    return value


def loop_kind(nest: ir.LoopNest) -> tuple[bool, bool]:
    """(parallel outer loop, parallel scalar reduction) from the static sizes."""
    size = int(np.prod(nest.shape, dtype=np.int64))
    if size < PRANGE_MIN or not nest.shape:
        return False, False
    axes = nest.reduce_axes or ()
    if 0 not in axes:
        return True, False
    full = len(axes) == len(nest.shape)
    reds = [e for e in nest.eqns if is_reduction(e)]
    if full and all(monoid(e).inplace for e in reds):
        return True, True
    return False, False


def acc_inits(reductions: list[JaxprEqn], accs: dict[Var, str], pad: str) -> list[str]:
    out = []
    for e in reductions:
        dtype = e.invars[0].aval.dtype
        init = render_scalar(monoid(e).identity(dtype), acc_dtype(e))
        out.append(f"{pad}{accs[e.outvars[0]]} = {init}")
    return out


def _general_target(k: LoopKernel, eqn: JaxprEqn, idx: list[str]) -> str:
    axes = eqn.params["axes"]
    kept = [i for d, i in enumerate(idx) if d not in axes]
    return f"{k.out_names[eqn.outvars[0]]}[{store_index(kept)}]"


def _init_outputs(k: LoopKernel, reductions: list[JaxprEqn], lines: list[str], pad: str) -> None:
    for e in reductions:
        init = render_scalar(monoid(e).identity(e.invars[0].aval.dtype), e.outvars[0].aval.dtype)
        lines.append(f"{pad}{k.out_names[e.outvars[0]]}[...] = {init}")


def render_loop(nest: ir.LoopNest) -> ir.Kernel:
    """One kernel module for a loop nest that is not a row group (those are rows.py's)."""
    k = LoopKernel(nest)
    shape = nest.shape
    rank = len(shape)
    axes = nest.reduce_axes
    parallel, par_reduce = loop_kind(nest)
    flat = (axes is None and rank > 1 and not any(
        fusion.kind_of(e) is Fusion.BROADCAST for e in nest.eqns)
        and all(v.aval.ndim in (0, rank) for v in nest.inputs))
    trailing = axes is not None and axes == tuple(range(rank - len(axes), rank))
    lines: list[str] = []
    pad = "    "
    if rank:
        lines.extend(f"{pad}{k.names[v]}s = {k.names[v]}[()]" for v in nest.inputs
                     if v.aval.ndim == 0)
    views: tuple = ()
    if flat:  # the driver passes 1-d views: Numba vectorises those loops, not reshapes
        size = int(np.prod(shape, dtype=np.int64))
        views = tuple((size,) if v.aval.ndim > 1 else None
                      for v in [*nest.inputs, *nest.outputs])
        loop_shape = (size,)
    else:
        loop_shape = shape
    idx = [f"i{d}" for d in range(len(loop_shape))]
    reductions = [e for e in nest.eqns if is_reduction(e)]
    accs = {e.outvars[0]: f"acc{j}" for j, e in enumerate(reductions)}
    kept = rank - len(axes) if trailing else len(loop_shape)
    if axes is not None and not trailing:
        _init_outputs(k, reductions, lines, pad)
        accs = {e.outvars[0]: _general_target(k, e, idx) for e in reductions}
    body_pad = pad
    for d, n in enumerate(loop_shape):
        if trailing and d == kept:
            lines.extend(acc_inits(reductions, accs, body_pad))
        loop = "prange" if d == 0 and parallel else "range"
        lines.append(f"{body_pad}for {idx[d]} in {loop}({n}):")
        body_pad += "    "
    if trailing and kept == len(loop_shape):
        lines.extend(acc_inits(reductions, accs, body_pad))
    body(k, idx, flat, accs, lines, body_pad, par_reduce)
    if trailing:
        store_pad = pad + "    " * kept
        for e in reductions:
            out = e.outvars[0]
            if out in k.out_names:
                target = f"{k.out_names[out]}[{store_index(idx[:kept])}]"
                lines.append(f"{store_pad}{target} = {cast(out.aval.dtype, accs[out])}")
    consts = "\n".join(k.consts)
    src = (f"{k.header}\n{consts}\n\n\n{decorator(parallel)}\ndef kernel({k.params()}):\n"
           + "\n".join(lines) + "\n")
    return ir.Kernel(src, parallel=parallel, views=views)


def header(jaxpr: Jaxpr, parallel: bool, names: core.PrintNames) -> str:
    """Versions, backend and the jaxpr implemented (printed with the names the comments use),
    then the imports every CPU module may use: numpy, Numba, and the runtime as fm (fast
    math), rd (reduction accumulators), sc (scalar helpers) and xe (XLA's float32 erf_inv)."""
    return "\n".join([
        version_line("cpu", f"parallel={parallel}"),
        jaxpr_comment(jaxpr, names),
        "import math  # noqa: F401",
        "",
        "import numpy as np  # noqa: F401",
        "from numba import njit, prange  # noqa: F401",
        "",
        "from numbax._src.compiler.cpu.runtime import fastmath as fm  # noqa: F401",
        "from numbax._src.compiler.cpu.runtime import reductions as rd  # noqa: F401",
        "from numbax._src.compiler.cpu.runtime import scalars as sc  # noqa: F401",
        "from numbax._src.compiler.cpu.runtime import xla_erf_inv as xe  # noqa: F401",
        "",
        'CACHE = "__file__" in globals()  # Numba caches only modules loaded from a file',
    ])


def decorator(parallel: bool) -> str:
    """Kernels are called from the Python driver only, never as first-class functions inside
    Numba code, so they need no cfunc wrapper (skipping it saves ~5 ms of LLVM per kernel)."""
    return (f"@njit(parallel={parallel}, error_model=\"numpy\", cache=CACHE, fastmath=False, "
            "no_cfunc_wrapper=True)")
