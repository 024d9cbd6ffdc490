"""CPU row groups: a reduction over trailing axes and the passes fused after it (softmax,
logsumexp, layer norm) as one kernel over rows (fusion.fuse_rows); each pass loops over a row
while per-row results stay scalars."""
from __future__ import annotations

import numba
import numpy as np

from numbax._src.compiler import fusion, ir, registry
from numbax._src.compiler.cpu import loops, outline, pool_tasks, work
from numbax._src.compiler.cpu.indices import ROW_LITERAL_MAX, index, store_index
from numbax._src.compiler.cpu.loops import (
    LoopKernel,
    acc_dtype,
    acc_inits,
    body,
    is_reduction,
    lowering,
    monoid,
)
from numbax._src.compiler.cpu.modules import decorator
from numbax._src.compiler.fusion import recompute
from numbax._src.compiler.registry import Fusion
from numbax._src.compiler.source import cast, dtype_ctor, render_scalar
from numbax._src.core import JaxprEqn, Literal, Var

# Rows this short (elements reduced per row) whose work calls exp, log, pow, ... (in a pass over
# the row or on its results) run in blocks of SHORT_BLOCK rows whose full rows are copied into
# buffers holding the block's column j contiguously (_short_rows_body), so the calls run in
# vector loops across rows. Without such calls the copies cost more than the rows' scalar
# loops (unit vectors of 200k 10-wide rows: 0.33 ms as rows, 1.0-1.6 in blocks). A call after
# the reduction counts too: an n-body step's r2 ** -1.5 of each pair's 3-wide sum ran once a
# row, scalar, 56.6 ms for 2000 bodies on the VM's 2 cores; in blocks 9.8.
SHORT_ROWS_MAX = ROW_LITERAL_MAX
SHORT_BLOCK = 256

_ROW_FASTMATH = ("# fastmath: only in reduction accumulators (reduce_ops): rd.add/rd.mul "
                 "{reassoc, contract} (rd.max_/rd.min_: llvm.maximum/minimum, no flags); and "
                 "fm.* Horner steps {contract}")



def render_rows(nest: ir.LoopNest) -> ir.Kernel:
    """A reduction over trailing axes, and the passes fused after it (fusion.fuse_rows): an
    outer loop over the kept axes (prange when large), then per outer index one inner loop nest
    per pass; per-row results stay scalars, full-size values of earlier passes are recomputed,
    except exp/log-heavy ones the last pass needs, which an output row carries (_stash_plan):
    softmax reads its row twice, computes exp once and writes the row twice (in cache).

    Trailing axes that every access indexes in full are flattened into one loop (the driver
    passes reshaped views); passes holding max/min (or integer/bool) accumulators are unrolled
    into LANES independent accumulators (LLVM does not vectorise those selects), with `_narrow`
    twins of one lane that rows narrower than LANES_MIN_WIDTH run (half the compile); a full
    reduction over one flat loop has a variant that runs in chunks under prange (partials
    combined serially), which the driver calls with 2 or more Numba threads and at least
    PAR_REDUCE_MIN elements. Like loops.render_loop, the source holds no size: `kernel` is
    the parallel variant (rows or chunks under prange) when the structure allows one, with
    `kernel_serial` beside it."""
    k = LoopKernel(nest, absolute_rows=False)  # (a row's index is the row's: no r0 here)
    kept = fusion.trailing(nest)
    views: tuple = ()
    bounds = list(k.sizes)
    if _rows_flattenable(nest, kept):
        bounds = [*k.sizes[:kept], " * ".join(k.sizes[kept:])]
        flat_shape = (*nest.shape[:kept], int(np.prod(nest.shape[kept:], dtype=np.int64)))
        views = tuple(flat_shape if v.aval.shape == nest.shape else None
                      for v in [*nest.inputs, *nest.outputs])
        k.views = views
    chunked = kept == 0 and len(bounds) == 1  # a full reduction over one loop
    mode = "rows" if kept > 0 and loops.parallel_form(nest)[0] else "chunks" if chunked else None
    variants = [("kernel", mode), ("kernel_serial", None)] if mode else [("kernel", None)]
    # the innermost loop's length: the flattened trailing axes, or the last axis
    width = int(np.prod(nest.shape[kept:], dtype=np.int64)) if len(bounds) == kept + 1 \
        else nest.shape[-1]
    row_passes = [eqns for kind, eqns in nest.passes or [("row", nest.eqns)] if kind == "row"]
    short = kept > 0 and len(bounds) == kept + 1 and width <= SHORT_ROWS_MAX and any(
        lowering(e).heavy for e in nest.eqns)
    lanes = not short and any(not _plain([e for e in eqns if is_reduction(e)])
                              for eqns in row_passes)
    if lanes:  # and the same without lanes, for rows they never fill (compiled when called)
        variants += [(f"{name}_narrow", m) for name, m in variants]
    whole = width >= loops.BLOCK  # rows long enough for whole float32 blocks
    bodies = [_short_rows_body(k, m, kept, bounds) if short else
              _rows_body(k, m, kept, bounds, name.endswith("_narrow"), whole)
              for name, m in variants]
    # (rows of whole float32 blocks keep their loops inline: their block loop nests inside the
    # row either way, and a 4000-wide row logsumexp ran 1.2x slower outlined)
    blocks = whole and any(_blocks(e) for e in nest.eqns if is_reduction(e))
    functions = outline.row_functions(k.params(), decorator(False), variants, bodies,
                                      0 if blocks else width, kept,
                                      lambda name, m: m != "chunks")
    functions += [f"{decorator(m is not None)}\ndef {name}({k.params()}"
                  f"{', nchunk' if m == 'chunks' else ''}):\n{body}"
                  for (name, m), body in zip(variants, bodies, strict=True)]
    parts: list[str] = []  # kernel_part<p> and its C task, per pass (pool form)
    if mode == "chunks" and not lanes:
        pool = _rows_body(k, "pool", kept, bounds, False, whole, parts)
    tail = "_narrow" if lanes and width < loops.LANES_MIN_WIDTH else ""
    layout = pool_tasks.chunk_layout(nest, k.names, k.out_names, views, False) \
        if mode == "rows" else None
    if layout is not None:
        functions.append(pool_tasks.task_source(layout, k.size_params(), k.scalar_dtypes,
                                                ("", "_narrow") if lanes else ("",)))
    if parts:  # (its tasks compile when the pool first runs them)
        functions += pool_tasks.pool_functions(k.params(), pool, parts, decorator(False))
    consts = "\n".join(k.consts)
    first, rest = k.header.split("\n", 1)
    if lanes:
        first = first.replace("kernel_serial", "kernel_serial, each also _narrow")
    notes = _ROW_FASTMATH
    if mode == "chunks":
        notes += "\n# kernel: the full reduction in chunks under prange, partials combined"
    src = f"{first}\n{notes}\n{rest}\n{consts}\n\n\n" + "\n\n".join(functions)
    if mode == "rows":
        parallel = loops.runs_parallel(nest)
    else:
        parallel = mode == "chunks" and _parallel_reduction(nest)
    size = int(np.prod(nest.shape, dtype=np.int64))
    return ir.Kernel(src, parallel=parallel, views=views, args=k.args(nest),
                     function=("kernel_serial" if mode else "kernel") + tail,
                     parallel_function="kernel" + tail, work_ns=work.work_ns(nest),
                     chunks=(size, loops.PAR_REDUCE_CHUNK_MIN) if mode == "chunks" else None,
                     task=layout is not None, task_rows=nest.shape[0] if layout else 0,
                     task_align=layout.align if layout else 1, task_function="kernel_task" + tail,
                     pool_parts=bool(parts))


def _rows_body(k: LoopKernel, mode: str | None, kept: int, bounds: list[str],
               narrow: bool, whole: bool, parts: list[str] | None = None) -> str:
    """The body of one variant of a row-group kernel; `mode` "rows" runs the rows under
    prange, "chunks" a full reduction's one loop in chunks under prange (nchunk of them, an
    argument), "pool" the same chunks as native pool jobs (`kernel_pool`: each pass's chunk
    body becomes `kernel_part<p>`, appended to `parts` with its C task), None everything
    serially; `narrow`: one accumulator lane per reduction; `whole`: rows of BLOCK or more,
    whose float32 sums loop whole blocks a constant count (shorter rows are one block)."""
    nest = k.nest
    passes = nest.passes or [("row", list(nest.eqns))]
    idx = [f"i{d}" for d in range(len(bounds))]
    pad = "    "
    lines = loops.scalar_loads(k, pad)
    lines.extend(f"{pad}m{d} = {b}" for d, b in enumerate(bounds))
    last = len(bounds) - 1
    for d in range(kept):
        loop = "prange" if d == 0 and mode == "rows" else "range"
        lines.append(f"{pad}for {idx[d]} in {loop}(m{d}):")
        pad += "    "
    chunks = mode in ("chunks", "pool")
    if chunks:  # nchunk (an argument: threads.chunks) cuts m<last> into equal chunks
        lines.append(f"{pad}chunk = -(-m{last} // nchunk)")
    seed: dict[Var, str] = {}
    row_defs: list[JaxprEqn] = []  # elementwise equations of earlier row passes (recomputed)
    n_acc = 0
    stash, stash_pass = _stash_plan(k, passes)
    for p, (kind, eqns) in enumerate(passes):
        seeds = [(name, v.aval.dtype) for v, name in seed.items()]  # a pool part's inputs
        if kind == "outer":
            values = body(k, idx[:kept], False, {}, lines, pad, False, eqns=eqns, seed=seed)
            seed.update({e.outvars[0]: values[e.outvars[0]] for e in eqns})
            continue
        reductions = [e for e in eqns if is_reduction(e)]
        accs = {e.outvars[0]: f"acc{n_acc + j}" for j, e in enumerate(reductions)}
        n_acc += len(reductions)
        store_here = {v: o for v, o in stash.items() if stash_pass[v] == p}
        reload = []  # the last pass loads the kept values before any store overwrites them
        if p == len(passes) - 1 and stash:
            reload = [f"sv{j} = {o}[{index(idx)}]" for j, o in enumerate(stash.values())]
            seed = {**seed, **{v: f"sv{j}" for j, v in enumerate(stash)}}
        again = recompute(eqns, row_defs, seed)
        lanes = 1 if narrow else _lanes(reductions, len(again) + len(eqns))
        ppad = pad
        if chunks:
            for e in reductions:
                lines.append(f"{pad}p{accs[e.outvars[0]]} = np.empty(nchunk, "
                             f"{dtype_ctor(acc_dtype(e))})")
            block_at = len(lines)  # the chunk body, kernel_part<p>'s in the pool form
            if mode == "chunks":
                lines.append(f"{pad}for ic in prange(nchunk):")
            ppad = pad + "    "
            # unsigned bounds: with a signed start Numba's negative-index wraparound stays in
            # the loop and blocks vectorisation (a 1e7 sum: 5.9 ms chunked vs 1.4 ms, 2 cores)
            lines.append(f"{ppad}lo = np.uint64(min(ic * chunk, m{last}))")
            lines.append(f"{ppad}hi = np.uint64(min(ic * chunk + chunk, m{last}))")
        lane_accs = [accs] + [{v: f"{a}_{j}" for v, a in accs.items()} for j in range(1, lanes)]
        for la in lane_accs:
            lines.extend(acc_inits(reductions, la, ppad))
        inner = ppad
        for d in range(kept, last):
            lines.append(f"{inner}for {idx[d]} in range(m{d}):")
            inner += "    "
        lo, hi = ("lo", "hi") if chunks else ("0", f"m{last}")
        no_store = frozenset(e.outvars[0] for e in again)
        if lanes > 1:
            # chunk bounds are uint64: keep the arithmetic unsigned (uint64 + int64 is float)
            step = f"np.uint64({lanes})" if chunks else str(lanes)
            stop = f"{lo} + ({hi} - {lo}) // {step} * {step}" if chunks else (
                f"m{last} // {lanes} * {lanes}")
            lines.append(f"{inner}stop = {stop}")
            lines.append(f"{inner}for {idx[last]} in range({lo}, stop, {step}):")
            for j, la in enumerate(lane_accs):
                off = f"np.uint64({j})" if chunks else str(j)
                lane_idx = [*idx[:last], f"({idx[last]} + {off})" if j else idx[last]]
                body(k, lane_idx, False, la, lines, inner + "    ", False, eqns=again + eqns,
                     seed=seed, no_store=no_store, row=True, stash=store_here)
            lo = "stop"
        blocked = [e for e in reductions if _blocks(e)] if lanes == 1 else []
        loop_accs = {**accs, **{e.outvars[0]: f"{accs[e.outvars[0]]}b" for e in blocked}}
        pass_body = (k, idx, lines, reload, loop_accs, again + eqns, seed, no_store, store_here)
        block = f"np.uint64({loops.BLOCK})"
        start, stop = f"np.uint64({lo})", f"np.uint64({hi})"
        if blocked and whole and not narrow:
            # Whole blocks loop a constant BLOCK times, then the tail once: with a trip count
            # LLVM interleaves the vector accumulators, where min(blk + BLOCK, hi) left it one
            # (a 1e5 float32 sum in L2: 1.86 -> 1.03 cycles per 8, 1e6 exp-sums 15.0 -> 12.3,
            # Zen 3); the body is written twice, so only for rows that fill a block (shorter
            # ones are one block). Unsigned bounds, as for chunks: a signed start blocks
            # vectorising.
            lines.append(f"{inner}bend = {start} + ({stop} - {start}) // {block} * {block}")
            lines.append(f"{inner}for blk in range({start}, bend, {block}):")
            _block_accs(lines, inner + "    ", blocked, loop_accs)
            _pass_loop(*pass_body, inner + "    ",
                       [f"for jb in range({block}):", f"    {idx[last]} = blk + jb"])
            _widen_blocks(lines, inner + "    ", blocked, accs, loop_accs)
            _block_accs(lines, inner, blocked, loop_accs)
            _pass_loop(*pass_body, inner, [f"for {idx[last]} in range(bend, {stop}):"])
            _widen_blocks(lines, inner, blocked, accs, loop_accs)
        elif blocked:
            # a row shorter than a block is one block: one loop (a loop over blocks bounded
            # by min(blk + BLOCK, hi) ran 15 against 11 cycles per 8 exp-sums, 1000-wide rows)
            _block_accs(lines, inner, blocked, loop_accs)
            _pass_loop(*pass_body, inner, [f"for {idx[last]} in range({start}, {stop}):"])
            _widen_blocks(lines, inner, blocked, accs, loop_accs)
        else:
            bounds_text = hi if lo == "0" else f"{lo}, {hi}"
            _pass_loop(*pass_body, inner, [f"for {idx[last]} in range({bounds_text}):"])
        for la in lane_accs[1:]:  # tree-free serial combine of the lanes into lane 0
            for e in reductions:
                out = e.outvars[0]
                lines.append(ppad + _combine(e, accs[out], la[out]))
        final = accs
        if chunks:
            for e in reductions:
                a = accs[e.outvars[0]]
                lines.append(f"{ppad}p{a}[ic] = {a}")
            if mode == "pool":
                lines[block_at:] = _pool_part(k, len(parts) // 2, bounds, lines[block_at:],
                                              seeds, reductions, accs, parts)
        if chunks and reductions:
            final = {v: f"{a}c" for v, a in accs.items()}
            lines.extend(acc_inits(reductions, final, pad))
            lines.append(f"{pad}for ic in range(nchunk):")
            for e in reductions:
                out = e.outvars[0]
                lines.append(pad + "    " + _combine(e, final[out], f"p{accs[out]}[ic]"))
        for e in reductions:
            out = e.outvars[0]
            r = f"r{len(seed)}"
            value = cast(out.aval.dtype, final[out])
            lines.append(f"{pad}{r} = {value}")
            seed[out] = r
            if out in k.out_names:
                lines.append(f"{pad}{k.out_names[out]}[{store_index(idx[:kept])}] = {r}")
        row_defs.extend(e for e in eqns if not is_reduction(e))
    return "\n".join(lines) + "\n"


def _short_rows_body(k: LoopKernel, mode: str | None, kept: int, bounds: list[str]) -> str:
    """The body of a row-group kernel whose rows are at most SHORT_ROWS_MAX elements (softmax
    over 10 classes, unit vectors of (n, 3) points): the last kept axis runs in blocks of
    SHORT_BLOCK rows (under prange for mode "rows" when it is the only one). A block's full
    rows are copied into buffers laid out column by column (`b<name>[j * SHORT_BLOCK + r]`,
    LoopKernel.blocks), every pass loops over the row's elements j around a loop over the
    block's rows r, and per-row accumulators and results are arrays indexed by r; full outputs
    are copied back from their buffers. The vector loop then runs across rows, where a row's
    own loop of 10 never filled LLVM's 16-element vector step and ran scalar (fastmath exp
    included: 2M float32 softmax elements, 6.4 against 1.8 ms on one VM core). Each row adds
    its elements in order j = 0, 1, ..., whatever the block, so blocks, tasks and threads give
    the same bits."""
    nest, B = k.nest, SHORT_BLOCK
    passes = nest.passes or [("row", list(nest.eqns))]
    idx = [f"i{d}" for d in range(len(bounds))]
    row, last = kept - 1, len(bounds) - 1  # the blocked axis, the row elements' axis
    pad = "    "
    lines = loops.scalar_loads(k, pad)
    lines.extend(f"{pad}m{d} = {b}" for d, b in enumerate(bounds))
    for d in range(row + 1):
        loop = "prange" if d == 0 and mode == "rows" else "range"
        lines.append(f"{pad}for {'blk' if d == row else idx[d]} in {loop}("
                     f"{f'-(-m{d} // {B})' if d == row else f'm{d}'}):")
        pad += "    "
    lines += [f"{pad}lo = blk * {B}", f"{pad}nb = min({B}, m{row} - lo)"]
    decls = len(lines)  # the block's buffers and per-row arrays go here
    arrays: list[tuple[str, np.dtype, str]] = []  # (name, dtype, elements)
    full = [v for v in nest.inputs if v.aval.shape == nest.shape and any(
        v in e.invars and fusion.kind_of(e) is not Fusion.INDEX_MAP for e in nest.eqns)]
    outs = [v for v in nest.outputs if v.aval.shape == nest.shape]
    names = [k.names[v] for v in full] + [k.out_names[v] for v in outs]
    k.blocks, k.block_at = {n: f"b{n}" for n in names}, "ib + r"
    arrays += [(f"b{k.names[v]}", v.aval.dtype, f"m{last} * {B}") for v in full]
    arrays += [(f"b{k.out_names[v]}", v.aval.dtype, f"m{last} * {B}") for v in outs]
    at_row = index([*idx[:row], "lo + r", idx[last]])

    def columns(body_lines: list[str]) -> None:  # for each element j, for each row r
        if not body_lines:
            return
        lines.extend([f"{pad}for {idx[last]} in range(m{last}):",
                      f"{pad}    ib = {idx[last]} * {B}", f"{pad}    for r in range(nb):"])
        lines.extend(f"{pad}        {line}" for line in body_lines)

    columns([f"b{k.names[v]}[ib + r] = {k.names[v]}[{at_row}]" for v in full])
    seed: dict[Var, str] = {}
    row_defs: list[JaxprEqn] = []
    n_acc = 0
    stash, stash_pass = _stash_plan(k, passes)
    inner = pad + "        "
    for p, (kind, eqns) in enumerate(passes):
        if kind == "outer":
            lines.extend([f"{pad}for r in range(nb):", f"{pad}    {idx[row]} = lo + r"])
            values = body(k, idx[:kept], False, {}, lines, pad + "    ", False, eqns=eqns,
                          seed=seed)
            for e in eqns:
                out = e.outvars[0]
                arrays.append((f"ov{len(seed)}", out.aval.dtype, str(B)))
                lines.append(f"{pad}    ov{len(seed)}[r] = {values[out]}")
                seed[out] = f"ov{len(seed)}[r]"
            continue
        reductions = [e for e in eqns if is_reduction(e)]
        acc_names = {e.outvars[0]: f"acc{n_acc + j}" for j, e in enumerate(reductions)}
        n_acc += len(reductions)
        blocked = [e for e in reductions if _blocks(e)]
        accs = {v: f"{a}[r]" for v, a in acc_names.items()}
        loop_accs = {**accs, **{e.outvars[0]: f"{acc_names[e.outvars[0]]}b[r]"
                                for e in blocked}}
        arrays += [(acc_names[e.outvars[0]], acc_dtype(e), str(B)) for e in reductions]
        arrays += [(f"{acc_names[e.outvars[0]]}b", e.invars[0].aval.dtype, str(B))
                   for e in blocked]
        if reductions:
            lines.append(f"{pad}for r in range(nb):")
            lines.extend(acc_inits(reductions, accs, pad + "    "))
            _block_accs(lines, pad + "    ", blocked, loop_accs)
        if p == len(passes) - 1 and stash:
            seed = {**seed, **{v: f"sv{j}" for j, v in enumerate(stash)}}
        again = recompute(eqns, row_defs, seed)
        columns([f"{idx[row]} = lo + r", *(f"sv{j} = b{o}[ib + r]"
                                           for j, o in enumerate(stash.values())
                                           if p == len(passes) - 1)])
        body(k, idx, False, loop_accs, lines, inner, False, eqns=again + eqns, seed=seed,
             no_store=frozenset(e.outvars[0] for e in again), row=True,
             stash={v: o for v, o in stash.items() if stash_pass[v] == p})
        if reductions:
            lines.extend([f"{pad}for r in range(nb):", f"{pad}    {idx[row]} = lo + r"])
        _widen_blocks(lines, pad + "    ", blocked, accs, loop_accs)
        for e in reductions:
            out = e.outvars[0]
            arrays.append((f"rv{len(seed)}", out.aval.dtype, str(B)))
            lines.append(f"{pad}    rv{len(seed)}[r] = {cast(out.aval.dtype, accs[out])}")
            if out in k.out_names:
                lines.append(f"{pad}    {k.out_names[out]}[{store_index(idx[:kept])}] = "
                             f"rv{len(seed)}[r]")
            seed[out] = f"rv{len(seed)}[r]"
        row_defs.extend(e for e in eqns if not is_reduction(e))
    columns([f"{k.out_names[v]}[{at_row}] = b{k.out_names[v]}[ib + r]" for v in outs])
    lines[decls:decls] = [f"{pad}{name} = np.empty({n}, {dtype_ctor(dtype)})"
                          for name, dtype, n in arrays]
    k.blocks, k.block_at = {}, ""
    return "\n".join(lines) + "\n"


def _pass_loop(k: LoopKernel, idx: list[str], lines: list[str], reload: list[str],
               accs: dict[Var, str], eqns: list[JaxprEqn], seed: dict[Var, str],
               no_store: frozenset, stash: dict[Var, str], pad: str, header: list[str]) -> None:
    """One loop of a row pass over (part of) the row: `header`'s lines, then the body."""
    lines.extend(pad + h for h in header)
    lines.extend(f"{pad}    {line}" for line in reload)
    body(k, idx, False, accs, lines, pad + "    ", False, eqns=eqns, seed=seed,
         no_store=no_store, row=True, stash=stash)


def _block_accs(lines: list[str], pad: str, blocked: list[JaxprEqn],
                block_accs: dict[Var, str]) -> None:
    """A block's float32 accumulators, set to their identities."""
    for e in blocked:
        dtype = e.invars[0].aval.dtype
        lines.append(f"{pad}{block_accs[e.outvars[0]]} = "
                     f"{render_scalar(monoid(e).identity(dtype), dtype)}")


def _widen_blocks(lines: list[str], pad: str, blocked: list[JaxprEqn], accs: dict[Var, str],
                  block_accs: dict[Var, str]) -> None:
    """A block's partials, widened, into the row's accumulators."""
    for e in blocked:
        out = e.outvars[0]
        lines.append(pad + monoid(e).row_update(accs[out], cast(acc_dtype(e), block_accs[out])))


def _pool_part(k: LoopKernel, part: int, bounds: list[str], block: list[str],
               seeds: list[tuple[str, np.dtype]], reductions: list[JaxprEqn],
               accs: dict[Var, str], parts: list[str]) -> list[str]:
    """A pass's chunk body as `kernel_part<part>` (pool_tasks.part_function); returns the lines
    of `kernel_pool` that run it."""
    head = loops.scalar_loads(k, "    ")
    head += [f"    m{d} = {b}" for d, b in enumerate(bounds)]
    head.append(f"    chunk = -(-m{len(bounds) - 1} // nchunk)")
    partials = [(f"p{accs[e.outvars[0]]}", 1, acc_dtype(e)) for e in reductions]
    return pool_tasks.part_function(k, part, head, block, "nchunk", "ic", seeds, partials,
                                    decorator(False), parts)


def _stash_plan(k: LoopKernel, passes: list) -> tuple[dict[Var, str], dict[Var, int]]:
    """Full-size values the last row pass would recompute through exp/log/... (softmax's
    `exp(x - max)`, recomputed to divide by the sum) that an output of that pass can carry
    instead: the last earlier pass computing one also stores it in the output's row (same
    shape and dtype; in cache), and the last pass reads it back rather than recomputing it.
    Only for a last pass without reductions. Returns ({value: output name}, {value: pass})."""
    kind_f, eqns_f = passes[-1]
    if len(passes) < 2 or kind_f != "row" or any(is_reduction(e) for e in eqns_f):
        return {}, {}
    seed: set[Var] = set()
    row_defs: list[JaxprEqn] = []
    computed_in: dict[Var, int] = {}
    for p, (kind, eqns) in enumerate(passes[:-1]):
        if kind == "outer":
            seed.update(e.outvars[0] for e in eqns)
            continue
        for e in recompute(eqns, row_defs, seed) + eqns:
            if not is_reduction(e):
                computed_in[e.outvars[0]] = p
        seed.update(e.outvars[0] for e in eqns if is_reduction(e))
        row_defs.extend(e for e in eqns if not is_reduction(e))
    defs = {e.outvars[0]: e for e in row_defs}
    read_f = {x for e in eqns_f for x in e.invars if isinstance(x, Var)}
    outs_f = [e.outvars[0] for e in eqns_f if e.outvars[0] in k.out_names]
    plan: dict[Var, str] = {}
    for e in recompute(eqns_f, row_defs, seed):
        v = e.outvars[0]
        if v not in read_f or v in k.out_names or not _heavy(v, defs, seed):
            continue
        free = [o for o in outs_f if k.out_names[o] not in plan.values()
                and o.aval.shape == v.aval.shape and o.aval.dtype == v.aval.dtype]
        if free:
            plan[v] = k.out_names[free[0]]
    return plan, {v: computed_in[v] for v in plan}


def _heavy(v: Var, defs: dict[Var, JaxprEqn], seed: set) -> bool:
    """Whether recomputing `v` from the row's inputs calls an exp/log/... function."""
    stack, seen = [v], set()
    while stack:
        x = stack.pop()
        if not isinstance(x, Var) or x in seen or x in seed or x not in defs:
            continue
        seen.add(x)
        if lowering(defs[x]).heavy:
            return True
        stack.extend(defs[x].invars)
    return False


def _rows_flattenable(nest: ir.LoopNest, kept: int) -> bool:
    """Whether the trailing (reduced) axes can run as one flat loop: more than one of them,
    and no broadcast reads an array along them (every other access uses the full index)."""
    if len(nest.shape) - kept < 2:
        return False
    for e in nest.eqns:
        if fusion.kind_of(e) is Fusion.INDEX_MAP:
            x = e.invars[0]
            if isinstance(x, Literal) or x.aval.ndim == 0:
                continue
            if any(r.dim is not None and r.dim >= kept for r in registry.axis_reads(e)):
                return False
    return True


def _reduce_threads() -> int:
    fixed = loops.PAR_REDUCE_THREADS
    return fixed if fixed is not None else numba.get_num_threads()


def _parallel_reduction(nest: ir.LoopNest) -> bool:
    """Whether the driver may call a full reduction's chunked prange variant (the thread
    runtime decides at each call): with 2 or more Numba threads and at least PAR_REDUCE_MIN
    elements (PAR_REDUCE_MIN_HEAVY with exp/log/...); the driver cuts the loop into up to 2
    chunks per thread of at least PAR_REDUCE_CHUNK_MIN elements."""
    heavy = any(lowering(e).heavy for e in nest.eqns)
    size = int(np.prod(nest.shape, dtype=np.int64))
    return _reduce_threads() >= 2 and size >= (
        loops.PAR_REDUCE_MIN_HEAVY if heavy else loops.PAR_REDUCE_MIN)


def _plain(reductions: list[JaxprEqn]) -> bool:
    """Whether a pass's accumulators vectorise as they are: sums and products of floats
    (rd.add, rd.mul), max and min of real floats (rd.max_, rd.min_: llvm.maximum/minimum)."""
    return all(loops.vector_update(e) for e in reductions)


def _blocks(e: JaxprEqn) -> bool:
    """Whether a reduction adds blocks of operands at their own width before widening
    (loops.BLOCK): float sums whose accumulator is wider than the operands."""
    dtype = e.invars[0].aval.dtype
    return monoid(e).blocks and dtype.kind == "f" and acc_dtype(e) != dtype


def _lanes(reductions: list[JaxprEqn], n_eqns: int) -> int:
    """Independent accumulators for a pass: plain ones need 1 lane; integer and bool
    accumulators (and complex max/min) do not vectorise, so they get LANES (8 for a longer
    body, fewer still past 8 equations: each lane is one more copy of the body in the
    source)."""
    if _plain(reductions):
        return 1
    lanes = loops.LANES if n_eqns <= 3 else max(loops.LANES // 2, 1)
    return max(1, min(lanes, loops.LANES_BODY_MAX // n_eqns))


def _combine(e: JaxprEqn, acc: str, other: str) -> str:
    """`acc` folded with another partial accumulator of the same reduction."""
    m, dtype = monoid(e), e.invars[0].aval.dtype
    if loops.vector_update(e):
        return m.row_update(acc, other)
    return f"{acc} = {m.combine(acc, other, dtype)}"
