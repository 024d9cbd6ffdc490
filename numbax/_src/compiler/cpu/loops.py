"""CPU loop nests: each nest of the kernel graph becomes one readable @njit kernel module.

Elementwise nests and reductions over general axes are rendered here; reductions over the
leading axes alone are columns.py's, over the trailing axes (and the passes fused after them:
softmax) rows.py's. Every fused equation is one line with the equation as its comment;
scalar forms come from the lowering registry (compiler/lowerings/), CPU overrides included."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from numbax._src import core
from numbax._src.compiler import fusion, ir, registry
from numbax._src.compiler.cpu import outline, pool_tasks, work
from numbax._src.compiler.cpu.indices import (
    ROW_LITERAL_MAX,
    UNROLL_MAX,
    absolute_tails,
    direct_axes,
    index,
    iota_index,
    literal_tails,
    map_axes,
    operand_index,
    picks_along_rows,
    store_index,
    tail_index,
    tail_view,
)
from numbax._src.compiler.cpu.modules import decorator, header
from numbax._src.compiler.cpu.runtime import threads
from numbax._src.compiler.registry import Fusion
from numbax._src.compiler.source import cast, dtype_ctor, render_scalar
from numbax._src.core import Jaxpr, JaxprEqn, Literal, Var
from numbax._src.interpreters.ad import add_any_p
from numbax._src.lax import elementwise as lx

PRANGE_MIN = 2**19  # compiled control flow's loops run serially below this (control_flow.py)
# Full reductions run in prange chunks with 2 or more Numba threads and this many elements;
# PAR_REDUCE_THREADS (None: numba.get_num_threads() at render time) is for tests. Measured
# (docs/performance.md, bench_cpu.py --sweep): on 16 idle cores a chunked sum wins from 2**18
# elements, a sum of exp from 2**15; on the idle 2-core VM the same (sum 0.61x serial at
# 2**18, logsumexp 0.56x at 2**15) once chunk bounds are unsigned (see rows.render_rows).
PAR_REDUCE_MIN = 2**18
PAR_REDUCE_MIN_HEAVY = 2**15  # kernels calling fastmath exp/log/tanh/...
PAR_REDUCE_THREADS: int | None = None
PAR_REDUCE_CHUNK_MIN = 2**12  # elements per chunk at least
# A reduction over the leading axis alone (column sums: a bias gradient) runs in chunks of
# this many leading indices, each into its own row of partials, combined in chunk order: the
# chunks run under prange, and the serial twin runs the same chunks, so both give the same
# bits whatever the thread count (serially, a 2048 x 512 bias gradient took 1.7 ms of a 12.7
# ms training step on 16 cores).
COLUMN_CHUNK = 64
# ... under prange from this many tasks (batch 128 took 2.3-3.7 ms with its 2-chunk bias
# gradients on 16 Xeon cores against 1.4 ms serial), fewer chunks cut into column blocks of at
# least COLUMN_BLOCK_MIN (`column_blocks`; each column adds its rows in the same order).
COLUMN_PAR_CHUNKS = 16
COLUMN_BLOCK_MIN = 16
NARROW_LINES_MAX = 192  # body lines a narrow column reduction writes out
LANES = 16  # independent max/min accumulators per row pass (8 when the pass body is longer)
LANES_MIN_WIDTH = 64  # rows narrower than this run a one-lane twin (rows.py)
# Float32 sums in row passes add BLOCK operands in float32 vector lanes, then widen the block's
# partial into the float64 accumulator: a float64 accumulator alone makes LLVM vectorise the
# whole pass 8 wide, halving exp's throughput (1M exp-sums on one VM core: 348 -> 218 us;
# a plain 1e7 sum 900 -> 741 us). Each float32 lane adds BLOCK/16 operands, as few as
# numpy's pairwise sum does per partial.
BLOCK = 1024
LANES_BODY_MAX = 64  # lanes x equations in a pass body at most (longer bodies, fewer lanes)
# Kernel outputs of this many bytes reuse the driver's previous buffer once the caller has
# dropped it (kernels.take): fresh pages of a large np.empty are faulted and zeroed.
POOL_MIN_BYTES = 2**23
POOL_MAX_BYTES = 2**28
# The knobs that change generated code; part of every disk-cache key.
CODEGEN_CONFIG = (("prange_min", PRANGE_MIN), ("error_model", "numpy"),
                  ("parallel_min_ns", threads.PARALLEL_MIN_NS),
                  ("fastmath", "reduce_ops accumulators, fm Horner contract"), ("row_groups", 1),
                  ("f32_sum_acc", "float64", "float32 blocks", BLOCK),
                  ("par_reduce_min", PAR_REDUCE_MIN, PAR_REDUCE_MIN_HEAVY, PAR_REDUCE_CHUNK_MIN),
                  ("lanes", LANES, LANES_MIN_WIDTH, LANES_BODY_MAX),
                  ("outline_rows", outline.OUTLINE_MIN_WIDTH, outline.ON_THIS_HOST),
                  ("column_chunk", COLUMN_CHUNK, COLUMN_PAR_CHUNKS, COLUMN_BLOCK_MIN),
                  ("pool_bytes", POOL_MIN_BYTES, POOL_MAX_BYTES), ("unroll_max", UNROLL_MAX),
                  ("row_literal_max", ROW_LITERAL_MAX))


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

    def __init__(self, nest: ir.LoopNest, flat: bool = False,
                 absolute_rows: bool = True) -> None:
        self.nest = nest
        self.flat = flat  # one loop over the flattened operands, one size n0 (vector_form)
        self.names: dict[Var, str] = {v: f"a{k}" for k, v in enumerate(nest.inputs)}
        self.out_names = {v: f"o{k}" for k, v in enumerate(nest.outputs)}
        self.consts: list[str] = []
        self.const_names: dict[str, str] = {}  # a literal's source -> its name in the kernel
        self.scalars: list[str] = []  # float literals passed as f0, f1, ... (their sources)
        self.scalar_dtypes: list[np.dtype] = []  # ... and their dtypes
        self.temps = 0
        self.comments: dict[int, str] = {}
        self.pp_names = core.PrintNames(generic_shapes=True, flat=flat)
        sub = Jaxpr([], nest.inputs, nest.eqns, nest.outputs)
        self.header = header(sub, variants_tag(nest), self.pp_names)
        self.sizes = ["n0"] if flat else [f"n{d}" for d in range(len(nest.shape))]
        # An iota reads the absolute outer index, as does an index map reading rows off it
        # (with `absolute_rows`; row groups do not: rows.py); a native-pool task runs
        # rows [lo, hi) as a kernel over hi - lo rows, so such kernels take the first row's
        # index as r0.
        self.absolute_rows = absolute_rows
        self.row0 = any(fusion.kind_of(e) is Fusion.SOURCE or
                        absolute_rows and fusion.rows_off_index(e) for e in nest.eqns)
        self.views: tuple = ()  # the driver's reshaped views of the arrays (ir.Kernel.views)
        # arrays the kernel reads or writes through 1-d views, at flat indices with their rows'
        # sizes written in (indices.literal_tails), and those a slice reads at the absolute
        # row, all of whose reads are then at the absolute row: one base for an array's loads,
        # which LLVM groups (`x[:, :2] / x[:, 2:]` read at i0 + r0 and at i0 ran its scalar
        # loop, 1.4 ms for 1e6 rows on the VM; 0.32 at one base). (Read both ways, an input
        # rules out a task (pool_tasks._reads_by_rows): r0 is 0 wherever the kernel runs.)
        self.tails: frozenset[Var] = frozenset()
        self.tails_absolute: frozenset[Var] = frozenset()
        self.blocks: dict[str, str] = {}  # arrays read and written through a block of short
        self.block_at = ""  # rows (rows.py: name -> buffer), at this subscript of the buffers

    def element(self, name: str, subscript: str) -> str:
        """Array `name`'s element at `subscript`, or at block_at of its rows' block."""
        return f"{self.blocks[name]}[{self.block_at}]" if name in self.blocks else \
            f"{name}[{subscript}]"

    def const(self, lit: Literal) -> str:
        """A literal's name in the kernel: integers and booleans are module constants (shift
        amounts, masks, seeds: structure LLVM folds); floats are parameters (f0, f1, ...) the
        driver passes, since values such as mean's 1/n come from the shapes."""
        text = render_scalar(lit.val, lit.aval.dtype)
        if text not in self.const_names:
            if np.dtype(lit.aval.dtype).kind in "fc":
                self.const_names[text] = f"f{len(self.scalars)}"
                self.scalars.append(text)
                self.scalar_dtypes.append(np.dtype(lit.aval.dtype))
            else:
                self.const_names[text] = f"c{len(self.consts)}"
                self.consts.append(f"{self.const_names[text]} = {text}")
        return self.const_names[text]

    def temp(self) -> str:
        self.temps += 1
        return f"t{self.temps - 1}"

    def comment(self, eqn: JaxprEqn) -> str:
        key = id(eqn)  # the nest holds its equations while it is rendered
        if key not in self.comments:  # each variant and recomputing pass prints it again
            self.comments[key] = core.pp_eqn(eqn, self.pp_names, 0)
        return self.comments[key]

    def size_params(self) -> list[str]:
        """The sizes n0, n1, ..., then r0 where an iota needs the first row's index."""
        return [*self.sizes, "r0"] if self.row0 else list(self.sizes)

    def params(self) -> str:
        """Arrays (inputs, then outputs), the nest's sizes n0, n1, ... (and r0), the float
        literals f0, f1, ...: the kernel's source holds no size, so one compiled kernel serves
        every shape of its structure. (Call after rendering the bodies: they name the
        literals.)"""
        return ", ".join([*self.names.values(), *self.out_names.values(), *self.size_params(),
                          *(f"f{j}" for j in range(len(self.scalars)))])

    def args(self, nest: ir.LoopNest) -> tuple[str, ...]:
        """What the driver passes after the arrays: the sizes (and r0 = 0: the driver runs
        every row), then the literals' sources."""
        sizes = (int(np.prod(nest.shape, dtype=np.int64)),) if self.flat else nest.shape
        return (*(str(n) for n in sizes), *(("0",) if self.row0 else ()), *self.scalars)


def vector_update(eqn: JaxprEqn) -> bool:
    """Whether a row pass updates this reduction's accumulator through a reduce_ops helper
    LLVM vectorises: sums and products of floats, max and min of real floats."""
    m, kind = monoid(eqn), eqn.invars[0].aval.dtype.kind
    return m.row_update is not None and (m.reassociates and kind in "fc" or
                                         m.selects and kind == "f")


def _reduction_line(eqn: JaxprEqn, acc: str, v: str, row: bool,
                    par_reduce: bool) -> list[str]:
    """The accumulator update of a reduction equation. Row passes update sums and products of
    floats and max/min of real floats through the reduce_ops helpers (vectorised); a prange
    reduction uses the in-place operator Numba recognises."""
    m = monoid(eqn)
    dtype = eqn.invars[0].aval.dtype
    if row and vector_update(eqn):
        return [m.row_update(acc, v)]
    if par_reduce and m.inplace:
        return [f"{acc} {m.inplace} {v}"]
    return [f"{acc} = {m.combine(acc, v, dtype)}"]


def body(k: LoopKernel, idx: list[str], flat: bool, accs: dict[Var, str], lines: list[str],
         pad: str, par_reduce: bool, eqns: list[JaxprEqn] | None = None,
         seed: dict[Var, str] | None = None, no_store: frozenset = frozenset(),
         row: bool = False,
         stash: dict[Var, str] | None = None) -> dict[Var, str]:
    """One line per fused equation (with the equation as a comment), inside the loops.

    `seed` gives values already computed as scalars (per-row results of earlier passes),
    `no_store` the recomputed equations whose outputs an earlier pass stored, `row` whether
    this is a row pass (vectorised accumulator updates through `rd.*`), and
    `stash` values also stored into an output's buffer (a later pass reads them back).
    Returns the scalar names of the equations' values."""
    nest = k.nest
    full = index(idx)
    absolute = [f"({idx[0]} + r0)", *idx[1:]] if k.row0 and idx else idx  # the absolute row
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
        if x in k.tails:
            at = absolute if x in k.tails_absolute else idx
            return f"{name}[{tail_index(direct_axes(at), x.aval.shape)}]"
        return k.element(name, full)

    for eqn in nest.eqns if eqns is None else eqns:
        out = eqn.outvars[0]
        comment = k.comment(eqn)
        if fusion.kind_of(eqn) is Fusion.REDUCTION:
            update = _reduction_line(eqn, accs[out], read(eqn.invars[0]), row, par_reduce)
            lines.extend(pad + u for u in update)
            lines[-1] += f"  # {comment}"
            continue
        at = idx
        if k.row0 and idx and (fusion.kind_of(eqn) is Fusion.SOURCE or
                               k.absolute_rows and fusion.rows_off_index(eqn)):
            at = absolute
        x = eqn.invars[0] if eqn.invars else None
        if isinstance(x, Var) and x in k.tails and x not in value and \
                fusion.kind_of(eqn) is Fusion.INDEX_MAP:
            at = absolute if x in k.tails_absolute else idx
            expr = f"{k.names[x]}[{tail_index(map_axes(eqn, at), x.aval.shape)}]"
        else:
            expr = scalar_expr(eqn, at, flat, value, k.names, read)
        t = k.temp()
        value[out] = t
        lines.append(f"{pad}{t} = {expr}  # {comment}")
        if out in k.out_names and out not in no_store:
            where = tail_index(direct_axes(idx), out.aval.shape) if out in k.tails else full
            target = k.element(k.out_names[out], where if idx else "...")
            lines.append(f"{pad}{target} = {t}")
        if stash and out in stash:
            lines.append(f"{pad}{k.element(stash[out], full)} = {t}  # kept for the last pass")
    return value


def scalar_expr(eqn: JaxprEqn, idx: list[str], flat: bool, value: dict[Var, str],
                names: dict[Var, str], read: Callable[[Any], str]) -> str:
    """The scalar expression of an elementwise, broadcast or iota equation at loop index
    `idx` (one name per loop, or the flat index when `flat`). `value` holds operands already
    computed as scalars in the loop, `names` the arrays of the others, `read` an operand's
    scalar at the index. Shared by fused loop kernels and control flow's loop nests."""
    out = eqn.outvars[0]
    kind = fusion.kind_of(eqn)
    if kind is Fusion.INDEX_MAP:
        x = eqn.invars[0]
        if isinstance(x, Literal) or x.aval.ndim == 0 or x in value:
            return read(x)
        return f"{names[x]}[{operand_index(eqn, idx, names[x])}]"
    if kind is Fusion.SOURCE:
        return cast(out.aval.dtype, iota_index(eqn, idx, flat))
    low = lowering(eqn)
    if kind is Fusion.LOOKUP:  # the table whole, by its name
        return cast(out.aval.dtype, low.scalar(
            [names[eqn.invars[0]], *(read(x) for x in eqn.invars[1:])], eqn))
    expr = low.scalar([read(x) for x in eqn.invars], eqn)
    return cast(out.aval.dtype, expr) if low.cast and not keeps_dtype(eqn) else expr


# Primitives whose CPU scalar form of float32 operands is float32 in Numba (infix arithmetic,
# the fm.* fast math): no cast, which costs Numba ~1 ms of typing per line (float64 results
# need none either way). tests/compiler/cpu/test_codegen_cpu.py types each form.
KEEPS_FLOAT32 = frozenset({lx.add_p, add_any_p, lx.sub_p, lx.mul_p, lx.div_p, lx.neg_p,
                           lx.square_p, lx.exp_p, lx.log_p, lx.log1p_p, lx.expm1_p, lx.tanh_p,
                           lx.logistic_p})


def keeps_dtype(eqn: JaxprEqn) -> bool:
    """Whether the equation's scalar form already has its output dtype (no cast needed)."""
    dtype = eqn.outvars[0].aval.dtype
    if dtype not in (np.float32, np.float64) or any(x.aval.dtype != dtype for x in eqn.invars):
        return False
    return dtype == np.float64 or eqn.primitive in KEEPS_FLOAT32


def parallel_form(nest: ir.LoopNest) -> tuple[bool, bool]:
    """(outer loop can be a prange, scalar reduction under that prange) from the nest's
    structure alone: the kernel module then holds a parallel and a serial variant."""
    if not nest.shape:
        return False, False
    axes = nest.reduce_axes or ()
    full = len(axes) == len(nest.shape)
    if 0 not in axes or not full:  # (a kept axis runs outermost: `loop_order`)
        return True, False
    reds = [e for e in nest.eqns if is_reduction(e)]
    if all(monoid(e).inplace for e in reds):  # a full reduction
        return True, True
    return False, False


def runs_parallel(nest: ir.LoopNest) -> bool:
    """Whether the driver may call the prange variant at the nest's sizes (the thread runtime
    decides at each call): the structure allows one and the work could pay for a thread (a
    column reduction: it has COLUMN_PAR_CHUNKS chunks of rows for the threads)."""
    if column_form(nest) and column_blocks(nest) * -(-column_rows(nest) // COLUMN_CHUNK) \
            < COLUMN_PAR_CHUNKS:  # (chunks as the kernel cuts them: 1000 rows are 16)
        return False
    first = loop_order(nest)[0] if nest.shape else 0
    if first and nest.shape[first] < 2:  # a kept axis run outermost: a prange of one trip
        return False
    return parallel_form(nest)[0] and work.work_ns(nest) >= threads.PARALLEL_MIN_NS


def variants_tag(nest: ir.LoopNest) -> str:
    return "variants=kernel(parallel),kernel_serial" if parallel_form(nest)[0] else (
        "variants=kernel")


def acc_inits(reductions: list[JaxprEqn], accs: dict[Var, str], pad: str) -> list[str]:
    out = []
    for e in reductions:
        dtype = e.invars[0].aval.dtype
        init = render_scalar(monoid(e).identity(dtype), acc_dtype(e))
        out.append(f"{pad}{accs[e.outvars[0]]} = {init}")
    return out


def _general_targets(k: LoopKernel, reductions: list[JaxprEqn], idx: list[str],
                     lines: list[str], pad: str) -> tuple[dict[Var, str], list[str]]:
    """Where a general reduction (a kept axis after a reduced one) adds each term, set to the
    identity first: its output, or a scratch array of the accumulator dtype where that is wider
    (float32 sums add into float64, as the column form's partials do, not into float32 one
    term at a time); and the lines that copy the scratch arrays into the outputs after."""
    targets: dict[Var, str] = {}
    copies: list[str] = []
    for j, e in enumerate(reductions):
        out = e.outvars[0]
        kept_dims = [d for d in range(len(idx)) if d not in e.params["axes"]]
        kept = store_index([idx[d] for d in kept_dims])
        name = k.out_names[out]
        wide = np.dtype(acc_dtype(e)) != np.dtype(out.aval.dtype)
        if wide:
            sizes = ", ".join(k.sizes[d] for d in kept_dims)
            lines.append(f"{pad}s{j} = np.empty(({sizes},), {dtype_ctor(acc_dtype(e))})")
            copies += [f"{pad}{'    ' * n}for {idx[d]} in range({k.sizes[d]}):"
                       for n, d in enumerate(kept_dims)]
            copies.append(f"{pad}{'    ' * len(kept_dims)}{name}[{kept}] = "
                          f"{cast(out.aval.dtype, f's{j}[{kept}]')}")
            name = f"s{j}"
        init = render_scalar(monoid(e).identity(e.invars[0].aval.dtype),
                             acc_dtype(e) if wide else out.aval.dtype)
        lines.append(f"{pad}{name}[...] = {init}")
        targets[out] = f"{name}[{kept}]"
    return targets, copies


def render_loop(nest: ir.LoopNest, column_body: Callable[..., str]) -> ir.Kernel:
    """One kernel module for a loop nest that is not a row group (those are rows.py's): the
    function `kernel`, and `kernel_serial` beside it when `kernel` holds a prange (the driver
    calls the serial one below PRANGE_MIN elements; each compiles on its first call).
    `column_body` (columns.column_body, which uses this module's helpers) renders the bodies
    of a reduction over the leading axes."""
    rank = len(nest.shape)
    can_parallel, par_reduce = parallel_form(nest)
    flat = (nest.reduce_axes is None and rank > 1 and not any(
        fusion.kind_of(e) in (Fusion.INDEX_MAP, Fusion.LOOKUP) for e in nest.eqns)
        and all(v.aval.ndim in (0, rank) for v in nest.inputs))
    k = LoopKernel(nest, flat=vector_form(nest))
    views: tuple = ()
    if flat:  # the driver passes 1-d views: Numba vectorises those loops, not reshapes
        size = int(np.prod(nest.shape, dtype=np.int64))
        views = tuple((size,) if v.aval.ndim > 1 else None
                      for v in [*nest.inputs, *nest.outputs])
    elif not k.flat:
        k.tails = literal_tails(nest)
        k.tails_absolute = absolute_tails(nest, k.tails) if k.absolute_rows else frozenset()
        if k.tails:
            views = tuple(tail_view(v.aval.shape) if v in k.tails
                          else None for v in [*nest.inputs, *nest.outputs])
    k.views = views
    variants = [("kernel", True), ("kernel_serial", False)] if can_parallel else [
        ("kernel", False)]
    rows_independent = can_parallel and not par_reduce and not column_form(nest) and (
        nest.reduce_axes is None or trailing_axes(nest))
    layout = pool_tasks.chunk_layout(nest, k.names, k.out_names, views, k.absolute_rows,
                                     k.tails) if rows_independent else None
    # a flat map's prange runs the serial variant's loop on chunks of the threads' (its body is
    # written after the serial one, which names the literals)
    chunked = layout is not None and layout.align == pool_tasks.ALIGN_FLAT
    bodies = ["" if chunked and parallel else
              column_body(k, parallel) if column_form(nest) else
              _loop_body(k, parallel, par_reduce and parallel, flat)
              for _, parallel in variants]
    if chunked:
        bodies[0] = pool_tasks.chunk_calls(
            layout, [*k.names.values(), *k.out_names.values()], k.size_params(),
            [f"f{j}" for j in range(len(k.scalars))])
    # rows apart only where each row's work is its own: maps and trailing reductions (whose
    # accumulators start inside the row), not reductions into outputs the rows share
    # (a row: the innermost loop of a map, the reduced axes of a trailing reduction)
    by_rows = not (flat or k.flat or column_form(nest)) and rank >= 2 and (
        nest.reduce_axes is None or trailing_axes(nest) and rank > len(nest.reduce_axes))
    depth = rank - 1 if nest.reduce_axes is None else rank - len(nest.reduce_axes)
    functions = outline.row_functions(k.params(), decorator(False), variants, bodies,
                                      nest.shape[-1] if by_rows else 0, depth)
    functions += [f"{decorator(parallel)}\ndef {name}({k.params()}"
                  f"{', nchunk' if chunked and parallel else ''}):\n{body}"
                  for (name, parallel), body in zip(variants, bodies, strict=True)]
    if layout is not None:
        functions.append(pool_tasks.task_source(layout, k.size_params(), k.scalar_dtypes))
    parts: list[str] = []  # a column reduction's chunks as pool jobs (kernel_pool)
    if can_parallel and column_form(nest):
        pool = column_body(k, False, parts)
        functions += pool_tasks.pool_functions(k.params(), pool, parts, decorator(False))
    consts = "\n".join(k.consts)
    src = f"{k.header}\n{consts}\n\n\n" + "\n\n".join(functions)
    outer = 0  # the task's outer loop: over every element of a flat kernel, else axis 0
    if layout is not None:
        outer = int(np.prod(nest.shape, dtype=np.int64)) if flat or k.flat else nest.shape[0]
    return ir.Kernel(src, parallel=runs_parallel(nest), views=views, args=k.args(nest),
                     function="kernel_serial" if can_parallel else "kernel",
                     work_ns=work.work_ns(nest), task=layout is not None,
                     chunks=(outer, pool_tasks.ALIGN_FLAT) if chunked else None,
                     task_rows=outer, task_align=layout.align if layout else 1,
                     pool_parts=bool(parts))


def trailing_axes(nest: ir.LoopNest) -> bool:
    """Whether the nest reduces trailing axes only (each outer index has its own results)."""
    axes, rank = nest.reduce_axes, len(nest.shape)
    return axes is not None and axes == tuple(range(rank - len(axes), rank))


def vector_form(nest: ir.LoopNest) -> bool:
    """Whether the nest renders as a loop over flat vectors with one size argument: it maps
    elementwise over operands of its whole shape (or scalars), so its source is the same at
    every rank and one compiled kernel serves a matrix's update and a vector's. (An iota needs
    the sizes of its dimensions, so its nests keep them.)"""
    return nest.reduce_axes is None and len(nest.shape) >= 1 and all(
        fusion.kind_of(e) not in (Fusion.INDEX_MAP, Fusion.SOURCE, Fusion.LOOKUP)
        for e in nest.eqns) and all(
        v.aval.ndim in (0, len(nest.shape)) for v in nest.inputs)


def scalar_loads(k: LoopKernel, pad: str) -> list[str]:
    """The 0-d inputs read once before the loops (as `a<k>s`)."""
    return [f"{pad}{k.names[v]}s = {k.names[v]}[()]" for v in k.nest.inputs if v.aval.ndim == 0]


def column_form(nest: ir.LoopNest) -> bool:
    """Whether the nest reduces leading axes alone and keeps at least one (columns.py): a
    bias gradient's rows, or a (batch, tokens, features) array's batch and token axes."""
    axes = nest.reduce_axes
    return bool(axes) and axes == tuple(range(len(axes))) and len(nest.shape) > len(axes)


def column_rows(nest: ir.LoopNest) -> int:
    """A column reduction's rows: the product of its reduced (leading) axes."""
    return int(np.prod(nest.shape[:len(nest.reduce_axes)], dtype=np.int64))


def column_blocks(nest: ir.LoopNest) -> int:
    """Column blocks a column reduction's chunks are cut into (the kernel computes the same at
    run time): enough for COLUMN_PAR_CHUNKS tasks, none under COLUMN_BLOCK_MIN wide (along
    the first kept axis); one for a nest with an iota (block indices are unsigned: signed,
    the inner loop ran 3x slower)."""
    if any(fusion.kind_of(e) is Fusion.SOURCE for e in nest.eqns):
        return 1
    chunks = max(1, -(-column_rows(nest) // COLUMN_CHUNK))
    first_kept = nest.shape[len(nest.reduce_axes)]
    return max(1, min(-(-COLUMN_PAR_CHUNKS // chunks), first_kept // COLUMN_BLOCK_MIN))


def loop_order(nest: ir.LoopNest) -> list[int]:
    """The nest's axes from the outermost loop in: in order, except that a reduction over axis 0
    which keeps a later axis (not leading axes alone: those are columns.py's) runs its first
    kept axis outermost, where a prange writes disjoint outputs (NCHW's batch-norm sums over
    (0, 2, 3) by channel). Each output element still adds its terms in the reduced axes' order,
    so the bits are those of the nest's own order."""
    axes, rank = nest.reduce_axes or (), len(nest.shape)
    if 0 not in axes or len(axes) == rank or column_form(nest):
        return list(range(rank))
    first = min(set(range(rank)) - set(axes))
    return [first, *(d for d in range(rank) if d != first)]


def _loop_body(k: LoopKernel, parallel: bool, par_reduce: bool, flat: bool) -> str:
    nest = k.nest
    rank = len(nest.shape)
    axes = nest.reduce_axes
    trailing = trailing_axes(nest)
    lines: list[str] = []
    pad = "    "
    if rank:
        lines.extend(scalar_loads(k, pad))
    bounds = [" * ".join(k.sizes)] if flat or k.flat else list(k.sizes)
    if len(bounds) >= 2 and (nest.shape[-1] <= UNROLL_MAX or picks_along_rows(nest)):
        bounds[-1] = str(nest.shape[-1])  # unrolled: the loop around it can vectorise
    if flat and k.row0:  # a task's slice of the 1-d views: its length, not the nest's size
        bounds = [f"{next(iter(k.out_names.values()))}.shape[0]"]
    idx = [f"i{d}" for d in range(len(bounds))]
    reductions = [e for e in nest.eqns if is_reduction(e)]
    accs = {e.outvars[0]: f"acc{j}" for j, e in enumerate(reductions)}
    kept = rank - len(axes) if trailing else len(bounds)
    copies: list[str] = []
    if axes is not None and not trailing:
        accs, copies = _general_targets(k, reductions, idx, lines, pad)
    body_pad = pad
    order = loop_order(nest) if len(bounds) == rank else list(range(len(bounds)))
    # a general reduction whose kept axes all run outside its reduced ones (NCHW batch norm's
    # sums over (0, 2, 3) by channel) adds into a local accumulator, loaded from its target
    # before the reduced loops and stored after them: the same additions in the same order,
    # without a store and a load of the target around each (three sums of 32 x 16 x 32 x 32
    # on one VM core: 3.2 -> 2.9 ms)
    outside = len(order) - len(axes) if axes is not None and not trailing else 0
    local = {} if not outside or set(order[:outside]) & set(axes) else {
        e.outvars[0]: f"acc{j}" for j, e in enumerate(reductions)}
    for at, d in enumerate(order):
        if trailing and d == kept:
            lines.extend(acc_inits(reductions, accs, body_pad))
        if local and at == outside:
            lines += [f"{body_pad}{local[v]} = {accs[v]}" for v in local]
        loop = "prange" if at == 0 and parallel else "range"
        lines.append(f"{body_pad}for {idx[d]} in {loop}({bounds[d]}):")
        body_pad += "    "
    if trailing and kept == len(bounds):
        lines.extend(acc_inits(reductions, accs, body_pad))
    body(k, idx, flat, local or accs, lines, body_pad, par_reduce)
    lines += [f"{pad}{'    ' * outside}{accs[v]} = {local[v]}" for v in local]
    if trailing:
        store_pad = pad + "    " * kept
        for e in reductions:
            out = e.outvars[0]
            if out in k.out_names:
                target = f"{k.out_names[out]}[{store_index(idx[:kept])}]"
                lines.append(f"{store_pad}{target} = {cast(out.aval.dtype, accs[out])}")
    return "\n".join(lines + copies) + "\n"

