"""Array operations inside compiled control flow written as loops, where Numba's array
functions ran several times slower (reductions over some axes, concatenations) or took seconds
to compile (an array stored into a block of another). `fn` is the
control-flow renderer (control_flow.Function: fresh names, the outer loop's choice, the
printing names of the comments)."""
from __future__ import annotations

from numbax._src import core
from numbax._src.compiler import registry
from numbax._src.compiler.cpu import loops, work
from numbax._src.compiler.cpu.runtime import threads
from numbax._src.compiler.source import cast, render_scalar
from numbax._src.core import JaxprEqn
from numbax._src.lax import reductions as lr

# reductions over the last axis alone, of rows this long, as a call a row (`reduce_loops`;
# shorter rows in line: a call and a view cost ~20-30 ns)
ROW_CALL_MIN = 64
_ROW_FUNCTIONS = {lr.reduce_sum_p: "rd.row_sum", lr.reduce_max_p: "rd.row_max",
                  lr.reduce_min_p: "rd.row_min"}
# `_accumulate_column_blocks`' blocks of the last axis: a thread's share of a column pass
COLUMN_BLOCK = 64
# `whole_reduce_loops`' chunks of the flat array (a fixed count: the bits on any thread count)
WHOLE_CHUNKS = 64


def reduce_loops(fn, eqn: JaxprEqn, x: str, lines: list[str], pad: str) -> str:
    """A reduction over some axes as loops: the kept axes outer (the first a prange where
    the work pays), the reduced ones inner in order, one accumulator an output element,
    with the fused kernels' identity and combine (the monoid; max/min propagate NaN). Without
    this form max/min/prod over an axis sent the whole loop to the host (a softmax in a
    scanned training step). A float sum adds in x's dtype: over the last axis alone in vector
    lanes, each row one call of reductions.row_sum (row_max, row_min likewise; a 512 x 512
    float32 row sum 193 -> 12 µs on one VM core, the plain chain waiting on each add) where
    rows have ROW_CALL_MIN elements, else in axis order (the bits of Numba's
    `np.sum(x, axis=)`, which ran 4.7x slower: an n-body step's two sums of 256 x 256 x 3)."""
    aval, out_aval = eqn.invars[0].aval, eqn.outvars[0].aval
    axes = sorted(eqn.params["axes"])
    kept = [d for d in range(aval.ndim) if d not in axes]
    monoid = loops.monoid(eqn)
    acc_dtype = aval.dtype if eqn.primitive is lr.reduce_sum_p and \
        aval.dtype.kind == "f" else loops.acc_dtype(eqn)
    out, acc = fn.fresh(), fn.fresh()
    idx = [fn.fresh() for _ in range(aval.ndim)]
    fn.new_array(eqn.outvars[0], out, out_aval.shape, lines, pad)
    work_ns = work.eqns_ns(aval.shape, [eqn], [eqn.invars[0], eqn.outvars[0]])
    if kept[-1] == aval.ndim - 1 and axes[0] < kept[-1] and acc_dtype == out_aval.dtype:
        if fn.outer_loop(aval.shape[kept[0]], work_ns, decide=False) == "range":
            _accumulate_rows(fn, eqn, x, out, idx, kept, monoid, lines, pad)
        else:
            _accumulate_column_blocks(fn, eqn, x, out, idx, kept, monoid, lines, pad,
                                      fn.outer_loop(aval.shape[-1], work_ns))
        return out
    outer = fn.outer_loop(aval.shape[kept[0]], work_ns)
    inner = pad
    for d in kept:
        lines.append(f"{inner}for {idx[d]} in {outer if d == kept[0] else 'range'}"
                     f"({aval.shape[d]}):")
        inner += "    "
    at = ", ".join(idx[d] for d in kept)
    row = _ROW_FUNCTIONS.get(eqn.primitive)
    if row and axes == [aval.ndim - 1] and aval.shape[-1] >= ROW_CALL_MIN and \
            aval.dtype.kind == "f" and acc_dtype == aval.dtype:
        zero = f", {render_scalar(0, acc_dtype)}" if eqn.primitive is lr.reduce_sum_p else ""
        lines.append(f"{inner}{out}[{at}] = {row}({x}[{at}]{zero})  "
                     f"# {core.pp_eqn(eqn, fn.pp, 0)}")
        return out
    lines.append(f"{inner}{acc} = {render_scalar(monoid.identity(aval.dtype), acc_dtype)}")
    body = inner
    for d in axes:
        lines.append(f"{body}for {idx[d]} in range({aval.shape[d]}):")
        body += "    "
    element = f"{x}[{', '.join(idx)}]"
    lines.append(f"{body}{acc} = {monoid.combine(acc, element, aval.dtype)}  "
                 f"# {core.pp_eqn(eqn, fn.pp, 0)}")
    value = acc if acc_dtype == out_aval.dtype else cast(out_aval.dtype, acc)
    lines.append(f"{inner}{out}[{at}] = {value}")
    return out


def _accumulate_rows(fn, eqn: JaxprEqn, x: str, out: str, idx: list[str], kept: list[int],
                     monoid, lines: list[str], pad: str) -> None:
    """A reduction whose last axis is kept as one pass over x in memory order, each element
    combined into its output element, the outputs starting at the identity: the kept axis
    innermost vectorises and its outputs' chains are independent, where an accumulator an
    output element waited on each add in turn (a 10-state HMM's column logsumexp: two such
    reductions of 10 x 10 a step). Each output combines its elements in the same order, so the
    bits are the other form's."""
    aval = eqn.invars[0].aval
    dtype = eqn.outvars[0].aval.dtype
    at = ", ".join(idx[d] for d in kept)
    inner = pad
    for d in kept:
        lines.append(f"{inner}for {idx[d]} in range({aval.shape[d]}):")
        inner += "    "
    lines.append(f"{inner}{out}[{at}] = {render_scalar(monoid.identity(aval.dtype), dtype)}")
    inner = pad
    for d in range(aval.ndim):
        lines.append(f"{inner}for {idx[d]} in range({aval.shape[d]}):")
        inner += "    "
    element = f"{x}[{', '.join(idx)}]"
    lines.append(f"{inner}{out}[{at}] = {monoid.combine(f'{out}[{at}]', element, aval.dtype)}"
                 f"  # {core.pp_eqn(eqn, fn.pp, 0)}")


def _accumulate_column_blocks(fn, eqn: JaxprEqn, x: str, out: str, idx: list[str],
                              kept: list[int], monoid, lines: list[str], pad: str,
                              outer: str) -> None:
    """`_accumulate_rows` on threads: a prange over blocks of COLUMN_BLOCK indices of the
    last axis (kept), each block's pass over x in memory order; the bits are the serial
    form's. The scalar form's prange over output elements walked x's columns (a 512 x 512
    float32 column max: 1275 µs on one VM core, 33 in blocks). The block's bounds are uint64:
    signed bounds made Numba test each index for wrap-around, which kept LLVM from
    vectorising the loop (296 µs)."""
    aval = eqn.invars[0].aval
    dtype = eqn.outvars[0].aval.dtype
    width = aval.shape[-1]
    block, lo, hi = fn.fresh(), fn.fresh(), fn.fresh()
    lines.append(f"{pad}for {block} in {outer}({-(-width // COLUMN_BLOCK)}):")
    pad += "    "
    lines.append(f"{pad}{lo} = np.uint64({block} * {COLUMN_BLOCK})")
    lines.append(f"{pad}{hi} = np.uint64(min({block} * {COLUMN_BLOCK} + {COLUMN_BLOCK}, "
                 f"{width}))")
    at = ", ".join(idx[d] for d in kept)
    for over in (kept, range(aval.ndim)):  # the outputs' identity, then one pass over x
        inner = pad
        for d in over:
            bounds = f"{lo}, {hi}" if d == aval.ndim - 1 else str(aval.shape[d])
            lines.append(f"{inner}for {idx[d]} in range({bounds}):")
            inner += "    "
        if over is kept:
            lines.append(f"{inner}{out}[{at}] = "
                         f"{render_scalar(monoid.identity(aval.dtype), dtype)}")
    element = f"{x}[{', '.join(idx)}]"
    lines.append(f"{inner}{out}[{at}] = {monoid.combine(f'{out}[{at}]', element, aval.dtype)}"
                 f"  # {core.pp_eqn(eqn, fn.pp, 0)}")


def whole_reduction(eqn: JaxprEqn) -> bool:
    """A float sum, max or min over every axis of an array large enough for threads
    (`whole_reduce_loops`)."""
    if eqn.primitive not in _ROW_FUNCTIONS:
        return False
    aval = eqn.invars[0].aval
    if aval.ndim == 0 or aval.dtype.kind != "f" or len(eqn.params["axes"]) != aval.ndim or \
            aval.size < WHOLE_CHUNKS * 64:
        return False
    work_ns = work.eqns_ns(aval.shape, [eqn], [eqn.invars[0]])
    return work_ns >= threads.PARALLEL_MIN_NS


def whole_reduce_loops(fn, eqn: JaxprEqn, x: str, lines: list[str], pad: str) -> str:
    """A whole-array reduction (`whole_reduction`) in WHOLE_CHUNKS chunks of the flat array,
    a prange over them where the loop may take threads, each chunk one call of
    reductions.row_sum / row_max / row_min (vectorised; a float32 sum in float64), the
    partials then combined in order: the same bits on any thread count. The
    array forms ran on one thread, max and min as a scalar chain (a while loop testing
    `max(abs(x * x - a)) > tol` over 1e6 floats each step)."""
    aval, out_aval = eqn.invars[0].aval, eqn.outvars[0].aval
    monoid = loops.monoid(eqn)
    acc_dtype = loops.acc_dtype(eqn)
    work_ns = work.eqns_ns(aval.shape, [eqn], [eqn.invars[0]])
    outer = fn.outer_loop(WHOLE_CHUNKS, work_ns)
    flat, parts, chunk, lo, hi, out = (fn.fresh() for _ in range(6))
    fn.new_array(None, parts, f"({WHOLE_CHUNKS},)", lines, pad, dtype=acc_dtype)
    identity = render_scalar(monoid.identity(aval.dtype), acc_dtype)
    zero = f", {identity}" if eqn.primitive is lr.reduce_sum_p else ""
    size = aval.size
    lines += [f"{pad}{flat} = {x}.reshape({size})",
              f"{pad}for {chunk} in {outer}({WHOLE_CHUNKS}):",
              f"{pad}    {lo} = np.uint64({chunk} * {size // WHOLE_CHUNKS})",
              f"{pad}    {hi} = np.uint64({size} if {chunk} == {WHOLE_CHUNKS - 1} else "
              f"({chunk} + 1) * {size // WHOLE_CHUNKS})",
              f"{pad}    {parts}[{chunk}] = {_ROW_FUNCTIONS[eqn.primitive]}("
              f"{flat}[{lo}:{hi}]{zero})  # {core.pp_eqn(eqn, fn.pp, 0)}",
              f"{pad}{out} = {identity}",
              f"{pad}for {chunk} in range({WHOLE_CHUNKS}):",
              f"{pad}    {monoid.row_update(out, f'{parts}[{chunk}]')}"]
    if acc_dtype != out_aval.dtype:
        lines.append(f"{pad}{out} = {cast(out_aval.dtype, out)}")
    return out


def concat_loops(fn, eqn: JaxprEqn, ins: list[str], lines: list[str], pad: str) -> str:
    """A concatenation as one loop nest per operand writing its block of a new array: Numba's
    `np.concatenate` of three 4096 x 1 columns (a `jnp.stack` in an ODE's right-hand side)
    took 13.7 µs against 0.6 for the loops, and an RK4 step calls it four times."""
    aval = eqn.outvars[0].aval
    axis = eqn.params["dimension"]
    out = fn.fresh()
    fn.new_array(eqn.outvars[0], out, aval.shape, lines, pad,
                 f"  # {core.pp_eqn(eqn, fn.pp, 0)}")
    at = 0
    for x, name in zip(eqn.invars, ins, strict=True):
        shape = x.aval.shape
        idx = [fn.fresh() for _ in shape]
        inner = pad
        for i, n in zip(idx, shape, strict=True):
            lines.append(f"{inner}for {i} in range({n}):")
            inner += "    "
        target = [f"{i} + {at}" if d == axis and at else i for d, i in enumerate(idx)]
        lines.append(f"{inner}{out}[{', '.join(target)}] = {name}[{', '.join(idx)}]")
        at += shape[axis]
    return out


def arg_loops(fn, eqn: JaxprEqn, x: str, lines: list[str], pad: str) -> str:
    """argmax/argmin over one axis of a real array as loops in memory order: each output starts
    at the axis's first element, and an element replaces it when larger (smaller), or when it
    is the first NaN (lax.argmax's order: the first extremum, a NaN beyond every number). The
    library call copied and reshaped its operand and cast its result each step (Viterbi's
    backpointers)."""
    aval, out_aval = eqn.invars[0].aval, eqn.outvars[0].aval
    (axis,) = eqn.params["axes"]
    larger = eqn.primitive is lr.argmax_p
    out, best = fn.fresh(), fn.fresh()
    idx = [fn.fresh() for _ in range(aval.ndim)]
    fn.new_array(eqn.outvars[0], out, out_aval.shape, lines, pad)
    fn.new_array(None, best, out_aval.shape, lines, pad, dtype=aval.dtype)
    at = ", ".join(idx[d] for d in range(aval.ndim) if d != axis)
    inner = pad
    for d in range(aval.ndim):
        if d != axis:
            lines.append(f"{inner}for {idx[d]} in range({aval.shape[d]}):")
            inner += "    "
    first = ", ".join("0" if d == axis else idx[d] for d in range(aval.ndim))
    lines += [f"{inner}{best}[{at}] = {x}[{first}]", f"{inner}{out}[{at}] = 0"]
    inner = pad
    for d in range(aval.ndim):
        start = "1, " if d == axis else ""
        lines.append(f"{inner}for {idx[d]} in range({start}{aval.shape[d]}):")
        inner += "    "
    v, b = fn.fresh(), fn.fresh()
    beyond = f"{v} > {b}" if larger else f"{v} < {b}"
    lines += [f"{inner}{v}, {b} = {x}[{', '.join(idx)}], {best}[{at}]",
              f"{inner}if {beyond} or ({v} != {v} and {b} == {b}):  "
              f"# {core.pp_eqn(eqn, fn.pp, 0)}",
              f"{inner}    {best}[{at}], {out}[{at}] = {v}, {idx[axis]}"]
    return out


def block_store(fn, target: str, starts: list[str], src: str, shape: tuple[int, ...],
                lines: list[str], pad: str, note: str = "") -> None:
    """`target[starts[0]:starts[0] + shape[0], ...] = src` (an array `src` of `shape`; a
    leading start with no axis of `src` indexes one element of its axis, as a scan's `ys[i]`)
    as a loop nest copying element by element. Numba compiles its array-into-slice
    assignment with a formatted shape-mismatch error (`raise_with_shape_context`: str, repr and
    join over unicode), 4.7 of an LSTM scan's 12 s of compile on the 2-core VM, once per
    process; the loops compile in milliseconds and vectorise the same."""
    idx = [fn.fresh() for _ in shape]
    lead = len(starts) - len(shape)
    inner = pad
    for i, n in zip(idx, shape, strict=True):
        lines.append(f"{inner}for {i} in range({n}):")
        inner += "    "
    at = [*starts[:lead], *(f"{s} + {i}" if s != "0" else i
                            for s, i in zip(starts[lead:], idx, strict=True))]
    element = f"{src}[{', '.join(idx)}]" if idx else src
    lines.append(f"{inner}{target}[{', '.join(at)}] = {element}{note}")


def loops_for_arg(x: core.ShapedArray, axis: int) -> bool:
    """Whether argmax/argmin over `axis` of `x` are loops (`arg_loops`): a real array
    of two or more axes (a 0-d result stays a scalar, the library's form) and a non-empty axis."""
    return x.dtype.kind in "biuf" and x.ndim >= 2 and x.shape[axis] > 0


def partial_reduction(eqn: JaxprEqn) -> bool:
    """A reduction the fused kernels take (sum, prod, max, min, and, or; not of complex
    values) over some but not all axes (`reduce_loops`)."""
    if not loops.is_reduction(eqn) or not registry.fusible(eqn, "cpu"):
        return False
    return 0 < len(eqn.params["axes"]) < eqn.invars[0].aval.ndim
