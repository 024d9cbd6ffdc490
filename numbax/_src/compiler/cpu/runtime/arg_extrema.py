"""argmax and argmin along the last axis for compiled code: numpy's answer (the first
occurrence of the extremum, the first NaN where there is one), rows on Numba's threads.

Why: numpy's argmax runs on one thread, and on 16 Xeon cores a jitted argmax over the rows of a
1000^2 float32 took 1.4-1.8x jax.jit's time (docs/performance.md). A loop carrying the best
value and its index does not vectorise, and two passes that do (the extremum, then the least
index holding it) ran at a fifth of numpy's SIMD argmax in cache (one VM core: 64 rows of 1000
float32, 29 against 6.9 us). So a float row's whole vectors go through `_vector_search`,
written in LLVM vectors as gemm.py's tile is: each lane keeps its best value and that value's
index, updated where a new value is strictly better (so a lane keeps its first occurrence),
in ACCUMULATORS independent sets so the compare-select chains overlap; the lanes are then
merged, the best value winning and the least index among equals. A NaN anywhere sends the row
to a scalar search for its first NaN. The last partial vector is compared in scalar code.
Equal values compare equal whatever their sign, so of -0.0 and +0.0 the first wins, as in
numpy's scan with `>`. Integer rows (rarer) take the two plain passes, which LLVM vectorises.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from numbax._src.compiler.cpu.runtime import threads as rt_threads
from numbax._src.compiler.cpu.runtime.gemm import VEC_BYTES, splat

FLOATS = frozenset(np.dtype(t) for t in ("float32", "float64"))
INTEGERS = frozenset(np.dtype(t) for t in ("int8", "int16", "int32", "int64", "uint8",
                                           "uint16", "uint32", "uint64"))
MIN_SIZE = 1 << 12  # smaller inputs stay numpy's (one call, nothing to compile for them)
ELEMENT_NS = 0.1  # estimated serial ns per element
ACCUMULATORS = 4  # independent (value, index) vector pairs: compare-select chains in flight


def _vector_search(larger: bool):
    """An intrinsic `search(row, vectors)`: the index of the first extremum (max if `larger`)
    of row[:vectors * lanes] (a contiguous float row, vectors >= 1), or -1 if a NaN is there."""

    @intrinsic
    def search(typingctx, row, vectors):
        if not (isinstance(row, types.Array) and isinstance(row.dtype, types.Float)):
            return None

        def codegen(context, builder, sig, args):
            row_value, vectors = args
            fty = context.get_value_type(sig.args[0].dtype)
            width = sig.args[0].dtype.bitwidth
            lanes = VEC_BYTES * 8 // width
            ity = ir.IntType(width)  # index lanes as wide as the values: one mask for both
            vty, ivty = ir.VectorType(fty, lanes), ir.VectorType(ity, lanes)
            i64 = ir.IntType(64)
            data = cgutils.create_struct_proxy(sig.args[0])(
                context, builder, value=row_value).data

            def load(vector_index):
                ptr = builder.gep(data, [builder.mul(vector_index, ir.Constant(i64, lanes))])
                return builder.load(builder.bitcast(ptr, vty.as_pointer()), align=width // 8)

            better = ">" if larger else "<"
            first = load(ir.Constant(i64, 0))
            lane_index = ir.Constant(ivty, list(range(lanes)))
            best = [cgutils.alloca_once_value(builder, first) for _ in range(ACCUMULATORS)]
            where = [cgutils.alloca_once_value(builder, lane_index)
                     for _ in range(ACCUMULATORS)]
            nan = cgutils.alloca_once_value(builder, builder.fcmp_unordered("uno", first, first))

            def update(acc, vector_index):
                v = load(vector_index)
                index = _lane_indices(builder, ivty, ity, width, vector_index, lanes,
                                      lane_index)
                hit = builder.fcmp_ordered(better, v, builder.load(best[acc]))
                builder.store(builder.select(hit, v, builder.load(best[acc])), best[acc])
                builder.store(builder.select(hit, index, builder.load(where[acc])), where[acc])
                builder.store(builder.or_(builder.load(nan), builder.fcmp_unordered("uno", v, v)),
                              nan)

            # vectors 1 .. vectors-1: groups of ACCUMULATORS, then the rest into the first set
            rest = builder.sub(vectors, ir.Constant(i64, 1))
            groups = builder.udiv(rest, ir.Constant(i64, ACCUMULATORS))
            with cgutils.for_range(builder, groups) as loop:
                base = builder.add(ir.Constant(i64, 1),
                                   builder.mul(loop.index, ir.Constant(i64, ACCUMULATORS)))
                for acc in range(ACCUMULATORS):
                    update(acc, builder.add(base, ir.Constant(i64, acc)))
            done = builder.add(ir.Constant(i64, 1),
                               builder.mul(groups, ir.Constant(i64, ACCUMULATORS)))
            with cgutils.for_range(builder, builder.sub(vectors, done)) as loop:
                update(0, builder.add(done, loop.index))
            # the extremum over every lane of every set, then the least index holding it
            module = builder.module
            suffix = f"v{lanes}f{width}"
            pick = cgutils.get_or_insert_function(
                module, ir.FunctionType(vty, [vty, vty]),
                f"llvm.{'maxnum' if larger else 'minnum'}.{suffix}")
            extreme = builder.load(best[0])
            for acc in range(1, ACCUMULATORS):
                extreme = builder.call(pick, [extreme, builder.load(best[acc])])
            across = cgutils.get_or_insert_function(
                module, ir.FunctionType(fty, [vty]),
                f"llvm.vector.reduce.{'fmax' if larger else 'fmin'}.{suffix}")
            top = splat(builder, vty, builder.call(across, [extreme]))
            none = ir.Constant(ivty, [2 ** (width - 1) - 1] * lanes)
            least = none
            for acc in range(ACCUMULATORS):
                held = builder.select(builder.fcmp_ordered("==", builder.load(best[acc]), top),
                                      builder.load(where[acc]), none)
                least = builder.select(builder.icmp_signed("<", held, least), held, least)
            smallest = cgutils.get_or_insert_function(
                module, ir.FunctionType(ity, [ivty]), f"llvm.vector.reduce.smin.v{lanes}i{width}")
            at = builder.call(smallest, [least])
            at = builder.sext(at, i64) if width < 64 else at
            any_nan = builder.icmp_unsigned(
                "!=", builder.bitcast(builder.load(nan), ir.IntType(lanes)),
                ir.Constant(ir.IntType(lanes), 0))
            return builder.select(any_nan, ir.Constant(i64, -1), at)

        return types.int64(row, vectors), codegen

    return search


def _lane_indices(builder, ivty, ity, width, vector_index, lanes, lane_index):
    """<vector_index * lanes + l for each lane l> in index lanes of the values' width."""
    start = builder.mul(vector_index, ir.Constant(vector_index.type, lanes))
    start = builder.trunc(start, ity) if width < 64 else start
    return builder.add(splat(builder, ivty, start), lane_index)


_search_max, _search_min = _vector_search(True), _vector_search(False)


@njit(error_model="numpy", cache=True, inline="always")
def _first_float(row, larger):
    """Index of the first extremum of a float row (at least one element), the first NaN if any."""
    n = row.shape[0]
    lanes = VEC_BYTES // row.itemsize
    vectors = n // lanes
    if vectors == 0:
        k, start = 0, 1
    else:
        k = _search_max(row, vectors) if larger else _search_min(row, vectors)
        start = vectors * lanes
        if k < 0:  # a NaN among the whole vectors: the first one
            for j in range(start):
                if row[j] != row[j]:
                    return j
    m = row[k]
    if m != m:
        return k
    for j in range(start, n):
        v = row[j]
        if v != v:
            return j
        if (v > m) if larger else (v < m):
            m, k = v, j
    return k


@njit(error_model="numpy", cache=True, inline="always")
def _first_integer(row, larger):
    """Index of the first extremum of an integer row (at least one element): the extremum,
    then the least index holding it, two loops LLVM vectorises."""
    n = row.shape[0]
    m = row[0]
    for j in range(1, n):
        v = row[j]
        m = (v if v > m else m) if larger else (v if v < m else m)
    best = n
    for j in range(n):
        c = j if row[j] == m else n
        best = c if c < best else best
    return best


def _rows(first, parallel: bool):
    """A kernel out[i] = first(x[i], larger) over the rows of a 2-d C-contiguous x, on Numba's
    threads or (a call worth one thread: no parallel region to start) serial."""
    @njit(parallel=parallel, error_model="numpy", cache=True)
    def rows(x, out, larger):  # pragma: no cover - compiled
        for i in prange(x.shape[0]):
            out[i] = first(x[i], larger)
    return rows


_KERNELS = {(floats, parallel): _rows(_first_float if floats else _first_integer, parallel)
            for floats in (True, False) for parallel in (True, False)}


def along_last(x: np.ndarray, larger: bool, index_dtype) -> np.ndarray | None:
    """np.argmax (`larger`) or np.argmin of x along its last axis as `index_dtype`, or None
    where numpy's should run (small inputs, other dtypes, an empty or huge last axis)."""
    if x.ndim == 0 or x.size < MIN_SIZE or not 0 < x.shape[-1] < 2**31 or \
            x.dtype not in FLOATS and x.dtype not in INTEGERS:
        return None
    rows = x.reshape(-1, x.shape[-1]) if x.flags.c_contiguous else \
        np.ascontiguousarray(x).reshape(-1, x.shape[-1])
    if rows.flags.writeable:  # one compiled kernel for numbax's read-only arrays and others
        rows = rows.view()
        rows.flags.writeable = False
    out = np.empty(rows.shape[0], np.int64)
    threads = min(rt_threads.threads_for(x.size * ELEMENT_NS), rows.shape[0])
    kernel = _KERNELS[x.dtype in FLOATS, threads > 1]
    if threads > 1:
        with rt_threads.running(threads):
            kernel(rows, out, larger)
    else:
        kernel(rows, out, larger)
    return out.reshape(x.shape[:-1]).astype(index_dtype, copy=False)
