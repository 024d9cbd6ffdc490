"""Reductions over a nest's leading axes alone (loops.column_form: column sums, bias gradients,
a (batch, tokens, features) array's sum over batch and tokens), rendered in fixed chunks of
rows: each chunk (cut into column blocks where chunks are few) accumulates into its own row of
partials in the accumulator dtype, and each kept index combines its partials in chunk order, so
the prange variant, the serial twin and the pool's job give the same bits. loops.py plans the
nest and calls `column_body` for its variants' bodies."""
from __future__ import annotations

import numpy as np

from numbax._src.compiler.cpu import pool_tasks
from numbax._src.compiler.cpu.indices import ROW_LITERAL_MAX, index, store_index
from numbax._src.compiler.cpu.loops import (
    COLUMN_BLOCK_MIN,
    COLUMN_CHUNK,
    COLUMN_PAR_CHUNKS,
    NARROW_LINES_MAX,
    LoopKernel,
    acc_dtype,
    acc_inits,
    body,
    is_reduction,
    monoid,
    scalar_loads,
)
from numbax._src.compiler.cpu.modules import decorator
from numbax._src.compiler.source import cast, dtype_ctor
from numbax._src.core import JaxprEqn


def column_body(k: LoopKernel, parallel: bool, parts: list[str] | None = None) -> str:
    """A leading-axes reduction in tasks of COLUMN_CHUNK rows (indices of the reduced axes, in
    order) by a `column_blocks` block of the first kept axis: each accumulates into its part of
    its chunk's row of partials (in the accumulator dtype), then each kept index combines its
    partials in chunk order. With `parts` (the pool's `kernel_pool`), the tasks run as one job:
    their body becomes `kernel_part0`, appended to `parts` with its C task
    (pool_tasks.part_function)."""
    nest = k.nest
    rank, lead = len(nest.shape), len(nest.reduce_axes)
    pad = "    "
    head = scalar_loads(k, pad)
    lines = list(head)
    kept = [f"i{d}" for d in range(lead, rank)]
    kept_sizes = ", ".join(k.sizes[lead:])
    first = f"n{lead}"  # the first kept axis, cut into blocks
    reductions = [e for e in nest.eqns if is_reduction(e)]
    rows_count = " * ".join(f"n{d}" for d in range(lead))
    lines.append(f"{pad}nch = ({rows_count} + {COLUMN_CHUNK - 1}) // {COLUMN_CHUNK}")
    # rows of at most ROW_LITERAL_MAX elements (never cut into blocks) are written out element
    # by element, partials in scalars (`_narrow_columns`; a (1e6, 3) column sum took 3.3 ms on
    # the VM with partials in memory, 0.84 serially), unless that writes out a long body
    elements = int(np.prod(nest.shape[lead:]))
    narrow = 0 < elements <= ROW_LITERAL_MAX and elements * len(nest.eqns) <= NARROW_LINES_MAX
    blocked = not k.row0 and not narrow  # (no iota: `column_blocks`)
    lines.append(f"{pad}ntask = nch * max(1, min(({COLUMN_PAR_CHUNKS} + nch - 1) // max(nch, 1), "
                 f"{first} // {COLUMN_BLOCK_MIN}))" if blocked else f"{pad}ntask = nch")
    accs = {}
    for j, e in enumerate(reductions):
        accs[e.outvars[0]] = f"p{j}[c, {index(kept)}]"
        lines.append(f"{pad}p{j} = np.empty((nch, {kept_sizes}), {dtype_ctor(acc_dtype(e))})")
    block_at = len(lines)
    if parts is None:
        lines.append(f"{pad}for t in {'prange' if parallel else 'range'}(ntask):")
    inner = pad * 2
    lines += [f"{inner}nb = ntask // nch", f"{inner}c, b = t // nb, t % nb"]
    rows = _chunk_rows(lead, rows_count, inner)
    if narrow:
        _narrow_columns(k, reductions, lines, inner, rows)
    else:
        lines.append(f"{inner}j0, j1 = np.uint64({first} * b // nb), "
                     f"np.uint64({first} * (b + 1) // nb)" if blocked else
                     f"{inner}j0, j1 = 0, {first}")
        lines += acc_inits(reductions, {e.outvars[0]: f"p{j}[c, j0:j1]" for j, e in
                                        enumerate(reductions)}, inner)
        lines += rows
        body_pad = inner + pad
        for d in range(lead, rank):
            lines.append(f"{body_pad}for i{d} in range({'j0, j1' if d == lead else f'n{d}'}):")
            body_pad += pad
        body(k, [f"i{d}" for d in range(rank)], False, accs, lines, body_pad, False)
    if parts is not None:
        partials = [(f"p{j}", rank - lead + 1, acc_dtype(e)) for j, e in enumerate(reductions)]
        lines[block_at:] = pool_tasks.part_function(
            k, 0, head, lines[block_at:], "ntask", "t", [("nch", np.int64)],
            partials, decorator(False), parts)
    if not any(e.outvars[0] in k.out_names for e in reductions):
        return "\n".join(lines) + "\n"
    combine_pad = pad
    for d in range(lead, rank):
        lines.append(f"{combine_pad}for i{d} in range(n{d}):")
        combine_pad += pad
    for j, e in enumerate(reductions):
        out = e.outvars[0]
        if out not in k.out_names:
            continue
        update = monoid(e).combine(f"acc{j}", f"p{j}[c, {index(kept)}]", acc_dtype(e))
        lines += [*acc_inits([e], {out: f"acc{j}"}, combine_pad),
                  f"{combine_pad}for c in range(nch):",
                  f"{combine_pad}{pad}acc{j} = {update}",
                  f"{combine_pad}{k.out_names[out]}[{store_index(kept)}] = "
                  f"{cast(out.aval.dtype, f'acc{j}')}"]
    return "\n".join(lines) + "\n"


def _chunk_rows(lead: int, rows_count: str, pad: str) -> list[str]:
    """The loop over chunk c's rows: i0 itself where one axis is reduced, else a flat row
    index q split into the reduced axes' indices once a row."""
    bounds = f"c * {COLUMN_CHUNK}, min({rows_count}, (c + 1) * {COLUMN_CHUNK})"
    if lead == 1:
        return [f"{pad}for i0 in range({bounds}):"]
    split = []
    for d in range(lead):
        below = " * ".join(f"n{e}" for e in range(d + 1, lead))
        value = (f"q // ({below})" if "*" in below else f"q // {below}") if below else "q"
        split.append(f"i{d} = {value} % n{d}" if d else f"i{d} = {value}")
    return [f"{pad}for q in range({bounds}):", *(f"{pad}    {x}" for x in split)]


def _narrow_columns(k: LoopKernel, reductions: list[JaxprEqn], lines: list[str], pad: str,
                    rows: list[str]) -> None:
    """A chunk of a narrow column reduction: the body written once per kept element (its
    indices literal), each reduction's partial a scalar per element, stored into the chunk's
    row of partials after the rows. LLVM keeps scalars in registers where it kept the partials
    of max and min in memory: the bounding box of (1e6, 3) points (a max and a min) took 8.3
    ms serially on the VM, now 1.6."""
    lead = len(k.nest.reduce_axes)
    elements = [[str(i) for i in at] for at in np.ndindex(*k.nest.shape[lead:])]
    names = [{e.outvars[0]: f"q{j}_{m}" for j, e in enumerate(reductions)}
             for m in range(len(elements))]
    for accs in names:
        lines += acc_inits(reductions, accs, pad)
    lines += rows
    row_idx = [f"i{d}" for d in range(lead)]
    for at, accs in zip(elements, names, strict=True):
        body(k, [*row_idx, *at], False, accs, lines, pad + "    ", False)
    for at, accs in zip(elements, names, strict=True):
        lines += [f"{pad}p{j}[c, {index(at)}] = {accs[e.outvars[0]]}"
                  for j, e in enumerate(reductions)]
