"""The native pool's form of a fused kernel: `kernel_task`, the source of a C task that runs the
kernel's serial variant on rows [lo, hi) of its outer loop (runtime/kernel_tasks.py runs it on
a busy machine, where an OpenMP region waits at its end for descheduled workers).

Only kernels whose outer loop runs over independent rows get one: elementwise maps, reductions
over trailing axes, row groups (softmax, logsumexp, layer norm). The task views rows [lo, hi)
of every array the outer loop indexes on its first axis and passes hi - lo as the outer size,
so the serial code, unchanged, computes those rows. An iota reads the absolute index, as does
a slice reading rows off the outer one (x[1:], x[::2], passed whole): their kernels take the
first row's index as `r0` (loops.LoopKernel.row0), which the task sets to lo
(a kernel on flattened 1-d views loops over its output view's length, since its sizes are the
nest's). An outer-axis reduction, or an input read along its first axis both by the outer
index and by another one, rules the task out. The same chunks (`chunk_layout`) make a flat
map's OpenMP arm (`chunk_calls`): a prange over chunks calling the serial variant on each.

Chunked reductions get `kernel_pool` instead (`pool_functions`): a full reduction's passes
(rows.py, mode "chunks") and a reduction over the leading axes (columns.column_body), each
loop over chunks run as one pool job. `part_function` turns a chunk loop's body into
`kernel_part<p>` (the same lines the prange variant runs for one chunk); `part_job` writes,
from one word layout, the lines of `kernel_pool` that pack its words and run the job, and the
C task `kernel_task_part<p>` that unpacks them and runs chunk `chunk` of the part.
"""
from __future__ import annotations

import re
from typing import NamedTuple

import numpy as np

from numbax._src.compiler import fusion, ir, registry
from numbax._src.compiler.cpu import indices
from numbax._src.compiler.registry import Fusion
from numbax._src.compiler.source import dtype_ctor
from numbax._src.core import Var

IMPORT = "from numbax._src.compiler.cpu.runtime import kernel_tasks as pk  # noqa: E402"
ALIGN_FLAT = 64  # a flat loop's chunks start on multiples of this many elements (vectors,
# cache lines)


class ChunkLayout(NamedTuple):
    """How a kernel's rows split into chunks: each array (inputs, then outputs) with its shape,
    whether a chunk takes its rows [lo, hi) (else the whole array) and, for a 1-d view of an
    array's rows (indices.tail_row), the elements of a row (else None), and the multiple the
    chunk bounds fall on."""
    arrays: list[tuple[Var, tuple, bool, int | None]]
    align: int


def chunk_layout(nest: ir.LoopNest, names: dict[Var, str], out_names: dict[Var, str],
                 views: tuple, absolute_rows: bool,
                 tails: frozenset = frozenset()) -> ChunkLayout | None:
    """The chunks of a kernel over the arrays named in `names` then `out_names` (shaped by
    `views` where not None; those in `tails` are views merging short trailing axes,
    indices.tail_view); None when the
    outer loop's rows are not independent. With `absolute_rows` the kernel reads rows off the
    outer index (x[1:]) at the absolute index (r0 added), so a task passes such inputs whole;
    without, they rule the task out."""
    arrays = [*names, *out_names]
    if not arrays:  # (a nest writing only to its driver's scalars: nothing to cut)
        return None
    shapes = [v.aval.shape if view is None else view
              for v, view in zip(arrays, views or (None,) * len(arrays), strict=True)]
    per_row = [indices.tail_row(v.aval.shape) if v in tails else None for v in arrays]
    outer_rank = max(len(v.aval.shape) if v in tails else len(s)
                     for v, s in zip(arrays, shapes, strict=True))
    sliced = []
    for v, shape in zip(arrays, shapes, strict=True):
        if not shape:
            sliced.append(False)
        elif v in out_names:
            sliced.append(True)  # stored at the outer index first, in full or per row
        else:
            rows = _reads_by_rows(nest, v, absolute_rows)
            if rows is None:
                return None
            sliced.append(rows)
    flat = outer_rank == 1 and all(len(s) in (0, 1) for s in shapes)
    # (a kernel reading rows through flat views vectorises across rows: chunks of rows on
    # multiples of ALIGN_FLAT meet its vector loop and remainder where a one-thread run does,
    # so the chunks give its bits; tanh's vector and scalar forms differ in the last place)
    align = ALIGN_FLAT if flat and not nest.reduce_axes or tails else 1
    return ChunkLayout(list(zip(arrays, shapes, sliced, per_row, strict=True)), align)


def task_source(layout: ChunkLayout, sizes: list[str], scalar_dtypes: list[np.dtype],
                tails: tuple[str, ...] = ("",)) -> str:
    """The source of `kernel_task<tail>` for each tail: the C task that runs the serial variant
    `kernel_serial<tail>` (which takes `layout`'s arrays, the sizes `sizes` (the first one the
    outer loop's length) and float scalars of `scalar_dtypes`) on one chunk's rows."""
    lines = [IMPORT]
    word = 2  # words 0 and 1: the outer length and the chunk count
    args = []
    for v, shape, rows, per_row in layout.arrays:
        addr = f"w[{word}]"
        dims = [f"w[{word + 1 + d}]" for d in range(len(shape))]
        word += 1 + len(shape)
        if rows:
            row = dims[1:] if per_row is None else [str(per_row)]
            addr = f"{addr} + lo * {' * '.join([*row, str(v.aval.dtype.itemsize)])}"
            dims[0] = "hi - lo" if per_row is None else f"(hi - lo) * {per_row}"
        tuple_text = f"({', '.join(dims)},)" if dims else "()"
        args.append(f"pk.array_at({addr}, {tuple_text}, {dtype_ctor(v.aval.dtype)})")
    for j, name in enumerate(sizes):
        args.append("hi - lo" if j == 0 else "lo" if name == "r0" else f"w[{word}]")
        word += 1
    for dtype in scalar_dtypes:
        args.append(f"pk.load(w[{word}], {dtype_ctor(dtype)})")
        word += 1
    call = ",\n        ".join(args)
    for tail in tails:
        lines += ["", "", f"def kernel_task{tail}(p, chunk):  # kernel_tasks.task: a C task",
                  f"    w = pk.words(p, {word})",
                  f"    lo, hi = pk.span(w[0], w[1], chunk, {layout.align})",
                  f"    kernel_serial{tail}(\n        {call})"]
    return "\n".join(lines) + "\n"


def chunk_calls(layout: ChunkLayout, array_names: list[str], sizes: list[str],
                scalars: list[str]) -> str:
    """The body of a prange variant that runs `nchunk` chunks (its last parameter), each a
    call of `kernel_serial` (same parameters: `array_names` in `layout`'s order, `sizes`,
    `scalars`) on its rows: the chunks' loops are then the serial variant's machine code. On
    AVX2 hosts a flat prange's own loop ran 1.25-1.4x slower than the same loop in the serial
    function (exp, sigmoid, add; docs/performance.md); on the AVX-512 Xeon the two timed alike."""
    # (the parfor pass turns a 0-d array its body reads into the scalar, so 0-d arrays enter
    # the loop as 1-element vectors and leave it as 0-d views of them)
    lines = [f"    {name}_1 = {name}.reshape(1)"
             for name, (_, shape, _, _) in zip(array_names, layout.arrays, strict=True)
             if not shape]
    args = [(f"{name}[lo:hi]" if per_row is None else
             f"{name}[lo * {per_row}:hi * {per_row}]") if rows else
            name if shape else f"{name}_1.reshape(())"
            for name, (_, shape, rows, per_row) in zip(array_names, layout.arrays, strict=True)]
    args += ["hi - lo" if j == 0 else "r0 + lo" if name == "r0" else name
             for j, name in enumerate(sizes)]
    args += scalars
    # the outer length: an output's rows (a flat kernel's sizes may be its nest's: its views'
    # length). Outputs come last and are stored at every row; an input read row by row may
    # have more rows than the nest (x[:3] of a longer x), and chunks over those wrote past
    # the output's end.
    length = next(f"{name}.shape[0]" if per_row is None else f"{name}.shape[0] // {per_row}"
                  for name, (_, _, sliced, per_row) in reversed(list(zip(
                      array_names, layout.arrays, strict=True))) if sliced)
    lines += ["    for c in prange(nchunk):",
              f"        lo, hi = pk.span({length}, nchunk, c, {layout.align})",
              f"        kernel_serial({', '.join(args)})"]
    return "\n".join(lines) + "\n"


def _reads_by_rows(nest: ir.LoopNest, x: Var, absolute_rows: bool) -> bool | None:
    """Whether every read of input `x` indexes its first axis by the outer loop (True), none
    does (False: the whole array; with `absolute_rows`, slices read it so at the absolute
    row), or some do and some do not (None)."""
    reads = set()
    for e in nest.eqns:
        if x not in e.invars:
            continue
        if registry.reads_whole(e, x):
            if x in e.invars[1:]:
                return None  # (also read at the index)
            reads.add(False)  # a lookup's table: whole
        elif absolute_rows and fusion.rows_off_index(e):
            reads.add(False)  # whole, read at the absolute row
        elif fusion.kind_of(e) is Fusion.INDEX_MAP:
            first, *later = registry.axis_reads(e)
            if first.dim == 0 and first.stride != 0 and not first.plain or any(
                    r.dim == 0 and r.stride != 0 for r in later):
                # rows off the index (x[1:]), or the outer index on another axis (x[5] of an
                # (n, m, 1) x), and no absolute row to read them at
                return None
            reads.add(first.dim == 0 and first.plain)
        else:
            reads.add(True)  # read at the loops' index (or a row's prefix of it): outer first
    if len(reads) > 1:
        return None
    return reads.pop() if reads else False


def pool_functions(params: str, body: str, parts: list[str], decorator: str) -> list[str]:
    """The module sources of a kernel's pool form: `kernel_pool(<params>, nchunk, base,
    workers, task0, ...)` with `body` (the chunk loops replaced by jobs: part_function), the
    `kernel_part<p>` functions, then their C tasks and the tuple `PART_TASKS` the driver passes
    back (a column reduction's chunks are fixed, COLUMN_CHUNK rows each: it ignores nchunk)."""
    count = len(parts) // 2
    tasks = "".join(f", task{p}" for p in range(count))
    names = "".join(f"kernel_task_part{p}, " for p in range(count))
    return [f"{decorator}\ndef kernel_pool({params}, nchunk, base, workers{tasks}):\n{body}",
            *parts[0::2], "\n\n".join([IMPORT, *parts[1::2], f"PART_TASKS = ({names})"])]


def part_function(k, part: int, head: list[str], block: list[str], count: str, index: str,
                  seeds: list[tuple[str, np.dtype]], partials: list[tuple[str, int, np.dtype]],
                  decorator: str, parts: list[str]) -> list[str]:
    """A chunk body (`block`: the lines under `for <index> in prange(<count>)`, indented 8) as
    `kernel_part<part>`, and its C task, appended to `parts`; returns the lines of
    `kernel_pool` that run it as one pool job. `k` is the kernel's loops.LoopKernel, `head`
    the lines the body needs first (scalar loads, bounds), `seeds` the scalars computed
    before the loop (those the body reads are passed), `partials` the arrays the chunks
    write (name, rank, dtype)."""
    views = k.views or (None,) * (len(k.names) + len(k.out_names))
    arrays = [(name, len(view) if view else v.aval.ndim, v.aval.dtype)
              for (v, name), view in zip([*k.names.items(), *k.out_names.items()], views,
                                         strict=True)]
    text = "\n".join(block)
    seeds = [(name, dtype) for name, dtype in seeds if re.search(rf"\b{name}\b", text)]
    scalars = [(f"f{j}", dtype) for j, dtype in enumerate(k.scalar_dtypes)]
    job, task = part_job(part, arrays + partials, len(arrays), k.size_params(), scalars, seeds,
                         count)
    params = ", ".join([k.params(), count, index, *(n for n, _ in seeds),
                        *(n for n, *_ in partials)])
    body = "\n".join([*head, *(line[4:] for line in block)])
    parts += [f"{decorator}\ndef kernel_part{part}({params}):\n{body}\n", task]
    return job


def part_job(part: int, arrays: list[tuple[str, int, np.dtype]], n_args: int, sizes: list[str],
             scalars: list[tuple[str, np.dtype]], seeds: list[tuple[str, np.dtype]],
             count: str) -> tuple[list[str], str]:
    """(lines of `kernel_pool` that run pass `part`'s chunks as one pool job; the source of
    `kernel_task_part<part>`) from one word layout. `kernel_part<part>` takes the first
    `n_args` `arrays` (name, rank, dtype), the `sizes`, the float `scalars`, the chunk count
    and index, the `seeds`, then the rest of `arrays` (the partials). Word 0 holds the chunk
    count (`count` in kernel_pool); scalars are stored bit for bit in their own words."""
    pad = "    "
    pack = [f"{pad}words[0] = {count}"]
    views = []
    word = 1
    for name, rank, dtype in arrays:
        pack.append(f"{pad}words[{word}] = {name}.ctypes.data")
        dims = [f"w[{word + 1 + d}]" for d in range(rank)]
        pack += [f"{pad}words[{word + 1 + d}] = {name}.shape[{d}]" for d in range(rank)]
        shape = f"({', '.join(dims)},)" if dims else "()"
        views.append(f"pk.array_at(w[{word}], {shape}, {dtype_ctor(dtype)})")
        word += 1 + rank
    call = views[:n_args]
    for name in sizes:
        pack.append(f"{pad}words[{word}] = {name}")
        call.append(f"w[{word}]")
        word += 1
    loads = []
    for name, dtype in [*scalars, *seeds]:
        pack.append(f"{pad}pk.store(words.ctypes.data + {8 * word}, {dtype_ctor(dtype)}({name}))")
        loads.append(f"pk.load(p + {8 * word}, {dtype_ctor(dtype)})")
        word += 1
    call += [*loads[:len(scalars)], "w[0]", "chunk", *loads[len(scalars):], *views[n_args:]]
    lines = [f"{pad}words = np.empty({word}, np.int64)", *pack,
             f"{pad}pk.job(base, task{part}, words, {count}, workers)"]
    args = ",\n        ".join(call)
    task = (f"def kernel_task_part{part}(p, chunk):  # kernel_tasks.task: a C task\n"
            f"    w = pk.words(p, {word})\n"
            f"    kernel_part{part}(\n        {args})\n")
    return lines, task
