"""How a loop kernel indexes its arrays: the index text of a loop nest's reads and stores,
flat (C-order) indices with the sizes written in, and the arrays with short trailing axes
that kernels read and write through views merging those axes (`literal_tails`). Shared by
fused loop kernels (loops.py, rows.py) and compiled control flow's nests (control_flow.py)."""
from __future__ import annotations

import numpy as np

from numbax._src.compiler import fusion, ir, registry
from numbax._src.compiler.registry import Fusion
from numbax._src.core import JaxprEqn, Var
from numbax._src.lax import index_map as im

# Arrays whose trailing axes hold at most this many elements (points, colour channels, small
# matrices) are read and written with those axes' sizes in the source (literal_tails): each
# such tail shape is a kernel of its own.
ROW_LITERAL_MAX = 16
# A nest's innermost loop this short or shorter has its trip count in the source (the kernel
# serves that size only): LLVM unrolls it and can vectorise the loop around it, as in an
# interleave, a select of two broadcasts along a new axis of 2.
UNROLL_MAX = 4


def index(idx: list[str]) -> str:
    return ", ".join(idx) if idx else "()"


def store_index(idx: list[str]) -> str:
    """Like index, for assignments: Numba types `o[...] = v` on 0-d arrays, not `o[()] = v`."""
    return ", ".join(idx) if idx else "..."


def operand_index(eqn: JaxprEqn, idx: list[str], operand: str = "") -> str:
    """Where an index map (broadcast, slice, roll) reads its operand (named `operand`) at loop
    index `idx`. An offset or strided index is unsigned arithmetic: loop indices may be uint64
    (chunk bounds), and uint64 with int64 is float64 in Numba; unsigned, the load needs no
    wraparound test."""
    parts: list[str] = []
    rolled = _rolled_axis(eqn)
    for d, r in enumerate(registry.axis_reads(eqn)):
        if d == rolled:
            parts.append(roll_index(idx[r.dim], eqn.params["shift"], f"{operand}.shape[{d}]"))
        elif r.stride == 0:
            parts.append(str(r.start))
        elif r.plain:
            parts.append(idx[r.dim])
        else:
            at = f"np.uint64({idx[r.dim]})"
            if r.stride != 1:
                at = f"{at} * np.uint64({r.stride})"
            parts.append(f"{at} + np.uint64({r.start})" if r.start else at)
    return index(parts)


def flat_index(idx: list[str], shape: tuple[int, ...]) -> str:
    """The flat (C-order) index of loop index `idx` into an array of `shape`.

    Why flat: Numba indexes a C-contiguous array by its shape, known only when the function
    runs, so the element stride of a row is a variable to LLVM, which then vectorises a loop
    only for the case of stride 1: an RK4 step over a (4096, 3) state ran its scalar form,
    7.0 ms for 200 steps, against 0.70 through flat views with the sizes written in. The views
    are `x.ravel()` (Numba: a view of a C array, a copy of any other layout, which is only
    read): `np.ascontiguousarray(x).reshape(-1)` went through runtime calls whose results
    LLVM cannot see through, and a 256-body n-body loop ran 3x slower than without views.)"""
    terms, step = [], 1
    for i, n in reversed(list(zip(idx, shape, strict=True))):
        terms.append(i if step == 1 else f"{i} * {step}")
        step *= n
    return " + ".join(reversed(terms))


def map_index(eqn: JaxprEqn, idx: list[str]) -> str:
    """The flat index at which an index map reads its (C-ordered) operand at loop index
    `idx`: each operand axis's `start + stride * i` times the axis's element stride."""
    shape = eqn.invars[0].aval.shape
    terms, offset, step = [], 0, 1
    rolled = _rolled_axis(eqn)
    for d, r, n in reversed(list(zip(range(len(shape)), registry.axis_reads(eqn), shape,
                                     strict=True))):
        if d == rolled:
            at = f"np.int64({roll_index(idx[r.dim], eqn.params['shift'], str(n))})"
            terms.append(at if step == 1 else f"{at} * {step}")
            step *= n
            continue
        offset += r.start * step
        if r.stride:
            at = idx[r.dim]
            terms.append(at if r.stride * step == 1 else f"{at} * {r.stride * step}")
        step *= n
    return " + ".join([*reversed(terms), *([str(offset)] if offset or not terms else [])])


def forward_reads(eqn: JaxprEqn) -> bool:
    """Whether an index map reads its operand at non-negative steps from its starts (no
    reversal, no roll): LLVM then sees its flat index is never negative and drops the
    wraparound test at each load."""
    return eqn.primitive is not im.roll_p and all(r.stride >= 0
                                                  for r in registry.axis_reads(eqn))


def _rolled_axis(eqn: JaxprEqn) -> int | None:
    """The operand axis a roll wraps (its reads' `start` there is no offset), or None."""
    return eqn.params["axis"] if eqn.primitive is im.roll_p else None


def roll_index(i: str, shift: int, n: str) -> str:
    """Where a roll by `shift` reads along its axis at loop index `i`, the axis `n` long, as
    two segments (no division) in unsigned arithmetic: out[i] = x[(i - shift) mod n]."""
    i = f"np.uint64({i})"
    if shift > 0:
        s = f"np.uint64({shift})"
        return f"({i} - {s} if {i} >= {s} else {i} + np.uint64({n}) - {s})"
    s = f"np.uint64({-shift})"
    return f"({i} + {s} if {i} + {s} < np.uint64({n}) else {i} + {s} - np.uint64({n}))"


def iota_index(eqn: JaxprEqn, idx: list[str], flat: bool) -> str:
    """The loop's index along iota's dimension (iota's shape is the nest's, fusion.fits); a
    flattened loop divides its one index back into that dimension's, by the sizes n<d>."""
    rank, dim = len(eqn.params["shape"]), eqn.params["dimension"]
    if not flat:
        return idx[dim]
    inner = " * ".join(f"n{d}" for d in range(dim + 1, rank))
    at = f"({idx[0]} // ({inner}))" if inner else idx[0]
    return at if dim == 0 else f"({at} % n{dim})"


# ------------------------------------------------------------------ short trailing axes

def literal_split(shape: tuple[int, ...]) -> int:
    """The first axis of an array's literal tail: the least s >= 1 whose axes shape[s:] hold
    at most ROW_LITERAL_MAX elements, where s < rank; 0 when none. The array's view merges
    axes s-1 onwards into one (`tail_view`), indexed with the tail's sizes written in, so the
    loop over axis s-1, the innermost that moves through memory at the tail's stride, sees a
    constant stride: (n, 3) points become one flat vector, (h, w, 3) images (h, w * 3)."""
    for s in range(1, len(shape)):
        if 0 < int(np.prod(shape[s:])) <= ROW_LITERAL_MAX:
            return s
    return 0


def tail_view(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The view of an array of `shape` with its literal tail merged (literal_split)."""
    s = literal_split(shape)
    return (*shape[:s - 1], int(np.prod(shape[s - 1:], dtype=np.int64)))


def tail_row(shape: tuple[int, ...]) -> int | None:
    """The elements of one row (first-axis index) of a 1-d tail view, or None where the view
    keeps the first axis (a chunk of rows slices it as any array)."""
    return int(np.prod(shape[1:])) if literal_split(shape) == 1 else None


def tail_index(axes: list[tuple[str | None, int, int]], shape: tuple[int, ...]) -> str:
    """The subscripts into the tail view (tail_view) of an array of `shape` of the element at
    `axes`: per array axis, the loop index text (None: a constant) with its start and stride.
    Axes before the merged ones keep a subscript each; the merged ones add up at literal
    steps in uint64 (Numba outlines a prange body into a loop from a parameter, where a signed
    index kept its wraparound test at each load and the loads stayed scalar)."""
    first = literal_split(shape) - 1
    parts = []
    for at, start, stride in axes[:first]:
        if at is None:
            parts.append(str(start))
        elif stride == 1 and start == 0:
            parts.append(at)
        else:
            parts.append(f"np.uint64({at}) * np.uint64({stride}) + np.uint64({start})")
    terms, offset, step = [], 0, 1
    for (at, start, stride), n in reversed(list(zip(axes[first:], shape[first:], strict=True))):
        offset += start * step
        if at is not None:
            word = f"np.uint64({at})"
            terms.append(word if stride * step == 1 else f"{word} * np.uint64({stride * step})")
        step *= n
    merged = [*reversed(terms), *([f"np.uint64({offset})"] if offset or not terms else [])]
    return ", ".join([*parts, " + ".join(merged)])


def direct_axes(idx: list[str]) -> list[tuple[str | None, int, int]]:
    """tail_index's axes of an element read or stored at the loop index itself."""
    return [(i, 0, 1) for i in idx]


def map_axes(eqn: JaxprEqn, idx: list[str]) -> list[tuple[str | None, int, int]]:
    """tail_index's axes of the element an index map reads at loop index `idx`."""
    return [(None if r.stride == 0 else idx[r.dim], r.start, r.stride)
            for r in registry.axis_reads(eqn)]


def picks_along_rows(nest: ir.LoopNest) -> bool:
    """Whether a nest's rows of at most ROW_LITERAL_MAX elements pick among values by an iota
    along them (a short concatenation or reversal, compose_maps): with the row's size written
    in, each element's pick is a constant (a row of 8 reversed ran 4.4 ms for 500k rows on
    the VM, its chain of 8 compares an element; jax.jit 0.35)."""
    last = len(nest.shape) - 1
    return nest.shape[-1] <= ROW_LITERAL_MAX and any(
        fusion.kind_of(e) is Fusion.SOURCE and e.params.get("dimension") == last
        for e in nest.eqns)


def literal_tails(nest: ir.LoopNest) -> frozenset[Var]:
    """The arrays a nest that is not flat reads or writes through their tail views
    (literal_split): inputs and (in maps) outputs with a literal tail, read only element for
    element or through index maps that step forward (forward_reads), every element of the
    tail read by some equation.

    Numba indexes a C array by its shape, a value LLVM cannot see, so a load at a row stride of
    3 did not vectorise: `y[:, 0] * y[:, 1] + y[:, 2]` over 1e6 (n, 3) float32 points took
    0.54 ms on the VM against jax.jit's 0.195, 0.18 through a flat view with the stride 3
    written in; a gamma curve over the grey of a (1024, 1024, 3) image left its power's
    vectorised form scalar (12 ms; jax.jit 3.5). Only tails read whole: LLVM loads a row with
    gaps (3 elements of a quaternion's 4) as a gather, and a cross product of (n, 4) and
    (n, 3) columns ran 2.3x slower so (3.6 ms for 1e6 rows, against 1.6 by shape)."""
    rank = len(nest.shape)

    def read_so(v: Var) -> bool:
        split = literal_split(v.aval.shape)
        tail = int(np.prod(v.aval.shape[split:]))
        offsets: set[int] = set()  # the elements of a tail some equation reads
        for e in nest.eqns:
            if v not in e.invars:
                continue
            if registry.reads_whole(e, v):
                return False
            if fusion.kind_of(e) is Fusion.INDEX_MAP:
                if e.invars[0] is not v or not forward_reads(e):
                    return False
                offsets |= _tail_offsets(e, nest.shape, split)
            elif v.aval.ndim != rank:
                return False
            else:
                offsets |= set(range(tail))
        return len(offsets) == tail

    chosen = {v for v in nest.inputs if literal_split(v.aval.shape) and read_so(v)}
    if nest.reduce_axes is None:
        chosen |= {v for v in nest.outputs if v.aval.ndim == rank and
                   literal_split(v.aval.shape)}
        if rank >= 2 and nest.shape[-1] > UNROLL_MAX:
            # a map's own innermost loop runs along these arrays' rows and vectorises as it
            # is: `(x - x[0]) / s` over (500k, 8) took 0.42-0.61 ms on the VM through the
            # views, 0.31-0.46 indexed by shape
            chosen = {v for v in chosen if v.aval.ndim != rank}
    return frozenset(chosen)


def absolute_tails(nest: ir.LoopNest, tails: frozenset[Var]) -> frozenset[Var]:
    """The literal-tail inputs a slice reads at the absolute row (fusion.rows_off_index)."""
    return frozenset(x for x in tails if any(x in e.invars and fusion.rows_off_index(e)
                                             for e in nest.eqns))


def _tail_offsets(eqn: JaxprEqn, shape: tuple[int, ...], split: int) -> set[int]:
    """The elements of its operand's literal tail (flat offsets in axes split onwards) that
    an index map reads over a nest of `shape` (forward reads: starts and steps at least 0)."""
    operand = eqn.invars[0].aval.shape
    offsets, step = {0}, 1
    reads = registry.axis_reads(eqn)[split:]
    for r, n in reversed(list(zip(reads, operand[split:], strict=True))):
        along = {r.start} if r.stride == 0 else {
            r.start + r.stride * i for i in range(min(shape[r.dim], n))}
        offsets = {o + a * step for o in offsets for a in along if a < n}
        step *= n
    return offsets



def pad_read(eqn: JaxprEqn, idx: list[str], x: str, flat: bool, read) -> str:
    """A pad's element at loop index `idx` (flow_runs.edge_pad: no interior padding, nothing
    cropped): its operand `x` (a flat view where `flat`) at the index less the low edges inside
    the box, the fill (`read` of the pad's scalar operand) outside it."""
    shape = eqn.invars[0].aval.shape
    config = eqn.params["padding_config"]
    at = [f"({i} - {lo})" if lo else i for i, (lo, _, _) in zip(idx, config, strict=True)]
    inside = [f"{lo} <= {i} < {lo + n}" if lo else f"{i} < {n}"
              for i, n, (lo, hi, _) in zip(idx, shape, config, strict=True) if lo or hi]
    where = flat_index(at, shape) if flat else ", ".join(at)
    value = f"{x}[{where}]"
    return f"({value} if {' and '.join(inside)} else {read(eqn.invars[1])})" if inside \
        else value
