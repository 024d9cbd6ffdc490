"""Array forms, inside compiled control flow on the CPU, of the primitives whose top-level
rule is a library call: gathers and scatters, take_along_axis, argmax/argmin, cumulative
sums, products and extrema (cpu/runtime/flow_index.py, `fi`), and LU, triangular solves and
Cholesky of real matrices (cpu/runtime/flow_linalg.py, `fl`). Without them a loop body that
holds one runs as the driver's host loop, a Python step per iteration. Reversals, sorts of
one key (with at most one operand carried along: argsort), top_k, searchsorted and
cumlogsumexp are here too.

Each rule reshapes its operands to the few axes the runtime loops over (the indexed or
reduced axis in the middle, the others flattened around it) and the result back; a form the
runtime does not cover (complex operands, empty axes, broadcast batches) raises Unsupported,
and the loop stays on the host as before."""
from __future__ import annotations

import math

from numbax._src.compiler.registry import Unsupported, register
from numbax._src.compiler.source import dtype_ctor, render_scalar, runtime_shape, runtime_value
from numbax._src.core import JaxprEqn
from numbax._src.lax import along_axis as la
from numbax._src.lax import indexing as ix
from numbax._src.lax import linalg as ll
from numbax._src.lax import linalg_lu as llu
from numbax._src.lax import reductions as lr
from numbax._src.lax import scatter as lsc
from numbax._src.lax import shape_ops as ls
from numbax._src.lax import sort as lsort
from numbax._src.lax.indexing import default_fill


def _real(eqn: JaxprEqn, floats: bool = False) -> None:
    """Raises Unsupported for complex values (or, with `floats`, operands other than
    float32/64)."""
    for v in eqn.invars if floats else [*eqn.invars, *eqn.outvars]:
        kind = v.aval.dtype.kind
        if kind == "c" or floats and (kind != "f" or v.aval.dtype.itemsize < 4):
            raise Unsupported(f"{eqn.primitive.name} of {v.aval.dtype}")


def _around(x: str, shape: tuple, axis: int) -> str:
    """x as (before, along, after) around `axis`, C-contiguous."""
    pre, post = math.prod(shape[:axis]), math.prod(shape[axis + 1:])
    return f"np.ascontiguousarray({x}).reshape(({pre}, {shape[axis]}, {post}))"


def _stack(x: str, shape: tuple) -> str:
    """x as a (count, rows, columns) stack of its matrices."""
    return f"np.ascontiguousarray({x}).reshape(({math.prod(shape[:-2])}, {shape[-2]}, " \
           f"{shape[-1]}))"


def _rows_of(x: str, shape: tuple, axes: tuple) -> tuple[str, tuple, str]:
    """x with `axes` first as (indexed rows, row length), the permutation's inverse (None:
    none was needed), and the indexed axes' sizes as a tuple of values (not an array literal:
    Numba's parallel pass rewrites constant arrays in a prange kernel and failed on two
    gathers' `np.array([5], np.int64)` beside two `.ravel()`s, "key already in dictionary")."""
    perm = (*axes, *(d for d in range(len(shape)) if d not in axes))
    moved = x if perm == tuple(range(len(shape))) else f"np.transpose({x}, {perm})"
    rows = math.prod(shape[a] for a in axes)
    x2 = f"np.ascontiguousarray({moved}).reshape(({rows}, {math.prod(shape) // rows}))"
    back = None if moved == x else tuple(perm.index(d) for d in range(len(shape)))
    return x2, back, runtime_shape(tuple(shape[a] for a in axes))


def _index_rows(idx: str, shape: tuple) -> str:
    return f"np.ascontiguousarray({idx}).reshape(({math.prod(shape[:-1])}, {shape[-1]}))"


def _gather(args: list[str], eqn: JaxprEqn) -> str:
    x, idx = eqn.invars[0].aval, eqn.invars[1].aval
    p = eqn.params
    if x.size == 0:
        raise Unsupported("gather from an empty array")
    x2, _, dims = _rows_of(args[0], x.shape, p["axes"])
    fill = p["fill_value"] if p["fill_value"] is not None else default_fill(x.dtype)
    fill = render_scalar(fill if p["mode"] == "fill" else 0, x.dtype)
    return f"fi.gather({x2}, {dims}, {_index_rows(args[1], idx.shape)}, " \
           f"{runtime_value(p['mode'] == 'fill')}, {fill}).reshape({eqn.outvars[0].aval.shape})"


# how flow_index.scatter (kernels._combine) combines an update into the operand
_SCATTER_OPS = {lsc.scatter_p: 0, lsc.scatter_add_p: 1, lsc.scatter_mul_p: 2,
                lsc.scatter_min_p: 3, lsc.scatter_max_p: 4, lsc.scatter_sub_p: 5}


def _scatter(args: list[str], eqn: JaxprEqn) -> str:
    _real(eqn)
    x, idx, upd = (v.aval for v in eqn.invars)
    p = eqn.params
    if x.size == 0 or idx.size == 0:
        raise Unsupported("scatter into or from an empty array")
    x2, back, dims = _rows_of(args[0], x.shape, p["axes"])
    rows = _index_rows(args[1], idx.shape)
    upd2 = f"np.ascontiguousarray({args[2]}).reshape(({math.prod(idx.shape[:-1])}, " \
           f"{upd.size // max(math.prod(idx.shape[:-1]), 1)}))"
    op, drop = runtime_value(_SCATTER_OPS[eqn.primitive]), runtime_value(p["mode"] == "drop")
    out = f"fi.scatter({x2}, {dims}, {rows}, {upd2}, {op}, {drop})"
    if back is None:
        return f"{out}.reshape({x.shape})"
    front = tuple(x.shape[d] for d in (*p["axes"], *(d for d in range(x.ndim)
                                                      if d not in p["axes"])))
    return f"np.ascontiguousarray(np.transpose({out}.reshape({front}), {back}))"


def _take_along_axis(args: list[str], eqn: JaxprEqn) -> str:
    x, out = eqn.invars[0].aval, eqn.outvars[0].aval
    axis = eqn.params["axis"]
    if x.shape[axis] == 0 or out.size == 0:
        raise Unsupported("take_along_axis of an empty axis")
    idx = args[1]
    if eqn.invars[1].aval.shape != out.shape:  # (Numba's broadcast_to is ~2 s of compile a
        idx = f"np.broadcast_to({idx}, {out.shape})"  # process: none where shapes agree)
    return f"fi.take_along({_around(args[0], x.shape, axis)}, " \
           f"{_around(idx, out.shape, axis)}).reshape({out.shape})"


def _arg_extremum(larger: bool):
    def rule(args: list[str], eqn: JaxprEqn) -> str:
        _real(eqn)
        x, out = eqn.invars[0].aval, eqn.outvars[0].aval
        (axis,) = eqn.params["axes"]
        if x.shape[axis] == 0:
            raise Unsupported("argmax of an empty axis")
        found = f"fi.arg_extremum({_around(args[0], x.shape, axis)}, {runtime_value(larger)})" \
                f".reshape({out.shape})"  # int64 positions: cast (a copy a step) only to others
        return found if out.dtype.name == "int64" else f"{found}.astype({dtype_ctor(out.dtype)})"
    return rule


def _cumulative(kind: int):
    def rule(args: list[str], eqn: JaxprEqn) -> str:
        if kind >= 2:
            _real(eqn)
        x = eqn.invars[0].aval
        p = eqn.params
        return f"fi.cumulative({_around(args[0], x.shape, p['axis'])}, {runtime_value(kind)}, " \
               f"{runtime_value(p['reverse'])}).reshape({x.shape})"
    return rule


def _rev(args: list[str], eqn: JaxprEqn) -> str:
    x = eqn.invars[0].aval
    flips = ", ".join("::-1" if d in eqn.params["dimensions"] else ":" for d in range(x.ndim))
    return f"np.ascontiguousarray({args[0]}[{flips}])"


def _logcumsumexp(args: list[str], eqn: JaxprEqn) -> str:
    _real(eqn, floats=True)
    x = eqn.invars[0].aval
    p = eqn.params
    reverse = runtime_value(p["reverse"])
    return f"fi.logcumsumexp({_around(args[0], x.shape, p['axis'])}, {reverse})" \
           f".reshape({x.shape})"


def _sort(args: list[str], eqn: JaxprEqn) -> str:
    """One key, and at most one operand sorted along with it (fi.sort1, fi.sort2)."""
    _real(eqn)
    p = eqn.params
    if p["num_keys"] != 1 or len(args) > 2:
        raise Unsupported("sort of several keys or of more than two operands")
    x = eqn.invars[0].aval
    parts = ", ".join(_around(a, x.shape, p["dimension"]) for a in args)
    return f"fi.sort{len(args)}({parts}, {runtime_shape(x.shape)})"


def _top_k(args: list[str], eqn: JaxprEqn) -> str:
    _real(eqn)
    x, out = eqn.invars[0].aval, eqn.outvars[0].aval
    axis = eqn.params["axis"]
    if x.shape[axis] == 0:
        raise Unsupported("top_k of an empty axis")
    return f"fi.top_k({_around(args[0], x.shape, axis)}, {runtime_value(eqn.params['k'])}, " \
           f"{runtime_shape(out.shape)})"


def _searchsorted(args: list[str], eqn: JaxprEqn) -> str:
    _real(eqn)
    a, v, out = eqn.invars[0].aval, eqn.invars[1].aval, eqn.outvars[0].aval
    rows = math.prod(a.shape[:-1])
    right = runtime_value(eqn.params["right"])
    return f"fi.searchsorted({_index_rows(args[0], a.shape)}, np.ascontiguousarray(" \
           f"{args[1]}).reshape(({rows}, {v.size // rows})), {right})" \
           f".reshape({out.shape}).astype({dtype_ctor(out.dtype)})"


def _lu(args: list[str], eqn: JaxprEqn) -> str:
    _real(eqn, floats=True)
    x = eqn.invars[0].aval
    shapes = ", ".join(runtime_shape(v.aval.shape) for v in eqn.outvars)
    return f"fl.lu({_stack(args[0], x.shape)}, {shapes})"


def _triangular_solve(args: list[str], eqn: JaxprEqn) -> str:
    _real(eqn, floats=True)
    a, b = eqn.invars[0].aval, eqn.invars[1].aval
    p = eqn.params
    if a.shape[:-2] != b.shape[:-2] or a.dtype != b.dtype:
        raise Unsupported("triangular_solve of broadcast batches or mixed dtypes")
    flags = ", ".join(runtime_value(p[k]) for k in ("left_side", "lower", "transpose_a",
                                              "unit_diagonal"))
    return f"fl.triangular_solve({_stack(args[0], a.shape)}, {_stack(args[1], b.shape)}, " \
           f"{flags})" \
           f".reshape({b.shape})"


def _cholesky(args: list[str], eqn: JaxprEqn) -> str:
    _real(eqn, floats=True)
    x = eqn.invars[0].aval
    return f"fl.cholesky({_stack(args[0], x.shape)}).reshape({x.shape})"


register(ix.gather_p, backend="cpu", array=_gather)
for _prim in _SCATTER_OPS:
    register(_prim, backend="cpu", array=_scatter)
register(la.take_along_axis_p, backend="cpu", array=_take_along_axis)
register(lr.argmax_p, backend="cpu", array=_arg_extremum(True))
register(lr.argmin_p, backend="cpu", array=_arg_extremum(False))
for _kind, _prim in enumerate((lr.cumsum_p, lr.cumprod_p, lr.cummax_p, lr.cummin_p)):
    register(_prim, backend="cpu", array=_cumulative(_kind))
register(ls.rev_p, backend="cpu", array=_rev)
register(lr.cumlogsumexp_p, backend="cpu", array=_logcumsumexp)
register(lsort.sort_p, backend="cpu", array=_sort)
register(lsort.top_k_p, backend="cpu", array=_top_k)
register(lsort.searchsorted_p, backend="cpu", array=_searchsorted)
register(llu.lu_p, backend="cpu", array=_lu)
register(ll.triangular_solve_p, backend="cpu", array=_triangular_solve)
register(ll.cholesky_p, backend="cpu", array=_cholesky)
