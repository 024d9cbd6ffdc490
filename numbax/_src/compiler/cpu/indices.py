"""How a loop kernel indexes its arrays: the index text of a loop nest's reads and stores,
flat (C-order) indices with the sizes written in, and the arrays with short rows that kernels
read and write through 1-d views (`literal_rows`). Shared by fused loop kernels (loops.py,
rows.py) and compiled control flow's nests (control_flow.py)."""
from __future__ import annotations

import numpy as np

from numbax._src.compiler import fusion, ir, registry
from numbax._src.compiler.registry import Fusion
from numbax._src.core import JaxprEqn, Var

# Arrays of two or more axes whose rows (the elements after the first axis) number at most
# this many are read and written through 1-d views with the rows' sizes in the source
# (literal_rows): each such row shape is a kernel of its own.
ROW_LITERAL_MAX = 16


def index(idx: list[str]) -> str:
    return ", ".join(idx) if idx else "()"


def store_index(idx: list[str]) -> str:
    """Like index, for assignments: Numba types `o[...] = v` on 0-d arrays, not `o[()] = v`."""
    return ", ".join(idx) if idx else "..."


def operand_index(eqn: JaxprEqn, idx: list[str]) -> str:
    """Where an index map (broadcast, slice) reads its operand at loop index `idx`. An offset
    or strided index is unsigned arithmetic: loop indices may be uint64 (chunk bounds), and
    uint64 with int64 is float64 in Numba; unsigned, the load needs no wraparound test."""
    parts: list[str] = []
    for r in registry.axis_reads(eqn):
        if r.stride == 0:
            parts.append(str(r.start))
        elif r.plain:
            parts.append(idx[r.dim])
        else:
            at = f"np.uint64({idx[r.dim]})"
            if r.stride != 1:
                at = f"{at} * np.uint64({r.stride})"
            parts.append(f"{at} + np.uint64({r.start})" if r.start else at)
    return index(parts)


def flat_index(idx: list[str], shape: tuple[int, ...], unsigned: bool = False) -> str:
    """The flat (C-order) index of loop index `idx` into an array of `shape` (`unsigned`: in
    uint64, for a prange loop: Numba outlines its body into a function whose loop starts at a
    parameter, so LLVM cannot see that a signed index is never negative and tests it for
    wraparound at each load, which kept `y[:, 0] * y[:, 1]` from vectorising there; the
    serial loop ran as fast either way).

    Why flat: Numba indexes a C-contiguous array by its shape, known only when the function
    runs, so the element stride of a row is a variable to LLVM, which then vectorises a loop
    only for the case of stride 1: an RK4 step over a (4096, 3) state ran its scalar form,
    7.0 ms for 200 steps, against 0.70 through flat views with the sizes written in. The views
    are `x.ravel()` (Numba: a view of a C array, a copy of any other layout, which is only
    read): `np.ascontiguousarray(x).reshape(-1)` went through runtime calls whose results
    LLVM cannot see through, and a 256-body n-body loop ran 3x slower than without views.)"""
    word = _unsigned if unsigned else str
    terms, step = [], 1
    for i, n in reversed(list(zip(idx, shape, strict=True))):
        terms.append(word(i) if step == 1 else f"{word(i)} * {word(step)}")
        step *= n
    return " + ".join(reversed(terms))


def map_index(eqn: JaxprEqn, idx: list[str], unsigned: bool = False) -> str:
    """The flat index at which an index map reads its (C-ordered) operand at loop index
    `idx`: each operand axis's `start + stride * i` times the axis's element stride
    (`unsigned`: as flat_index; only for `forward_reads`)."""
    shape = eqn.invars[0].aval.shape
    word = _unsigned if unsigned else str
    terms, offset, step = [], 0, 1
    for r, n in reversed(list(zip(registry.axis_reads(eqn), shape, strict=True))):
        offset += r.start * step
        if r.stride:
            at = word(idx[r.dim])
            terms.append(at if r.stride * step == 1 else f"{at} * {word(r.stride * step)}")
        step *= n
    return " + ".join([*reversed(terms), *([word(offset)] if offset or not terms else [])])


def _unsigned(term) -> str:
    return f"np.uint64({term})"


def forward_reads(eqn: JaxprEqn) -> bool:
    """Whether an index map reads its operand at non-negative steps (no reversal): LLVM then
    sees its flat index is never negative and drops the wraparound test at each load."""
    return all(r.stride >= 0 for r in registry.axis_reads(eqn))


def iota_index(eqn: JaxprEqn, idx: list[str], flat: bool) -> str:
    """The loop's index along iota's dimension (iota's shape is the nest's, fusion.fits); a
    flattened loop divides its one index back into that dimension's, by the sizes n<d>."""
    rank, dim = len(eqn.params["shape"]), eqn.params["dimension"]
    if not flat:
        return idx[dim]
    inner = " * ".join(f"n{d}" for d in range(dim + 1, rank))
    at = f"({idx[0]} // ({inner}))" if inner else idx[0]
    return at if dim == 0 else f"({at} % n{dim})"


def row_base(name: str, nest: ir.LoopNest, x: Var, absolute_rows: bool) -> str:
    """The name a kernel reads short-rows input `x` (named `name`) through: `x` itself, or,
    where `absolute_rows` and a slice reads it at the absolute row (fusion.rows_off_index), its
    view from row r0 on (`row_views`), indexed by the loop's own rows. One base for every read
    of an array: LLVM then sees the loads as one interleaved group (`x[:, :2] / x[:, 2:]`, the
    slice read at rows i0 + r0 beside the broadcast column read at i0, ran its scalar loop:
    1.4 ms for 1e6 rows on the VM; through one view 0.34). (An input read both at the
    absolute row and at the loop's own rows has no native-pool task
    (pool_tasks._reads_by_rows), so r0 is 0 wherever such a kernel runs.)"""
    absolute = absolute_rows and any(x in e.invars and fusion.rows_off_index(e)
                                     for e in nest.eqns)
    return f"{name}r" if absolute else name


def row_views(bases: dict[Var, str], names: dict[Var, str], pad: str) -> list[str]:
    """The lines making the views from row r0 on that `row_base` named."""
    return [f"{pad}{base} = {names[x]}[r0 * {int(np.prod(x.aval.shape[1:]))}:]"
            for x, base in bases.items() if base != names[x]]


def literal_rows(nest: ir.LoopNest) -> frozenset[Var]:
    """The arrays a nest that is not flat reads or writes through 1-d views at flat indices
    with their rows' sizes written in: inputs and (in maps) outputs of two or more axes with
    rows of at most ROW_LITERAL_MAX elements, read only element for element or through index
    maps that step forward (forward_reads).

    Numba indexes a C array by its shape, a value LLVM cannot see, so a load at a row stride of
    3 did not vectorise: `y[:, 0] * y[:, 1] + y[:, 2]` over 1e6 (n, 3) float32 points took
    0.54 ms on the VM against jax.jit's 0.195, 0.18 through a flat view with the stride 3
    written in. Only inputs whose every row element the nest reads: LLVM loads a row with
    gaps (3 elements of a quaternion's 4) as a gather, and a cross product of (n, 4) and
    (n, 3) columns ran 2.3x slower so (3.6 ms for 1e6 rows, against 1.6 by shape)."""
    rank = len(nest.shape)

    def small_rows(v: Var) -> bool:
        return v.aval.ndim >= 2 and 0 < int(np.prod(v.aval.shape[1:])) <= ROW_LITERAL_MAX

    def read_so(v: Var) -> bool:
        row_size = int(np.prod(v.aval.shape[1:]))
        offsets: set[int] = set()  # the elements of a row some equation reads
        for e in nest.eqns:
            if v not in e.invars:
                continue
            if fusion.kind_of(e) is Fusion.INDEX_MAP:
                if e.invars[0] is not v or not forward_reads(e):
                    return False
                offsets |= _row_offsets(e, nest.shape)
            elif v.aval.ndim != rank:
                return False
            else:
                offsets |= set(range(row_size))
        return len(offsets) == row_size

    chosen = {v for v in nest.inputs if small_rows(v) and read_so(v)}
    if nest.reduce_axes is None:
        chosen |= {v for v in nest.outputs if v.aval.ndim == rank and small_rows(v)}
    return frozenset(chosen)


def _row_offsets(eqn: JaxprEqn, shape: tuple[int, ...]) -> set[int]:
    """The elements of its operand's rows (flat offsets after the first axis) that an index
    map reads over a nest of `shape` (forward reads: starts and steps at least 0)."""
    operand = eqn.invars[0].aval.shape
    offsets, step = {0}, 1
    for r, n in reversed(list(zip(registry.axis_reads(eqn)[1:], operand[1:], strict=True))):
        along = {r.start} if r.stride == 0 else {
            r.start + r.stride * i for i in range(min(shape[r.dim], n))}
        offsets = {o + a * step for o in offsets for a in along if a < n}
        step *= n
    return offsets

