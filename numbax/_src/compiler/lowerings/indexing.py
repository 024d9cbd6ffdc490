"""Lowerings of the indexing primitives (lax/indexing.py, lax/along_axis.py): library calls —
Numba loops over index rows in the CPU driver (cpu/runtime/kernels.py), index kernels with
atomics on CUDA (cuda/kernels/index.py)."""
from __future__ import annotations

from numbax._src.compiler.cuda import driver as cuda_driver
from numbax._src.compiler.cuda.kernels import index as cuda_index
from numbax._src.compiler.lowerings.forms import involves_complex, no_complex, operand_dtype
from numbax._src.compiler.point_gathers import lookup_p
from numbax._src.compiler.registry import Fusion, Unsupported, register
from numbax._src.compiler.source import clamped_slice, render_scalar, render_value
from numbax._src.core import JaxprEqn
from numbax._src.lax import along_axis as la
from numbax._src.lax import indexing as ix
from numbax._src.lax import scatter as lsc


def _kc(fn: str, *parts: str) -> str:
    return f"[kc.{fn}({', '.join(parts)})]"


def _dynamic_slice(eqn: JaxprEqn, ins: list[str]) -> str:
    starts = "".join(f"{a}, " for a in ins[1:])
    return _kc("dynamic_slice", ins[0], f"({starts})", render_value(eqn.params["slice_sizes"]))


def _dynamic_slice_array(args: list[str], eqn: JaxprEqn) -> str:
    """dynamic_slice inside compiled control flow: a view of the clamped window (control_flow
    copies it where the operand may be written in place). Axes the window spans are left out
    at the end, so that `x[i]` of a C-contiguous x (a window of one row) is one to Numba too."""
    x = eqn.invars[0].aval
    if x.ndim == 0:
        raise Unsupported("0-d dynamic_slice")
    box = [":" if k == n else clamped_slice(s, n, k) for s, n, k in
           zip(args[1:], x.shape, eqn.params["slice_sizes"], strict=True)]
    while len(box) > 1 and box[-1] == ":":
        box.pop()
    return f"{args[0]}[{', '.join(box)}]"


def _dynamic_update_slice(eqn: JaxprEqn, ins: list[str], into: str = "None") -> str:
    starts = "".join(f"{a}, " for a in ins[2:])
    return _kc("dynamic_update_slice", ins[0], ins[1], f"({starts})", into)


def _gather(eqn: JaxprEqn, ins: list[str]) -> str:
    p = eqn.params
    x = eqn.invars[0].aval
    fill = p["fill_value"]
    if p["mode"] == "fill" and fill is None:
        fill = ix.default_fill(x.dtype)
    return _kc("gather", ins[0], ins[1], render_value(p["axes"]), render_value(p["mode"]),
               render_value(fill), render_value(eqn.outvars[0].aval.shape))


# How kc.scatter combines an update into the operand (its `op` argument).
_SCATTER_OPS = {lsc.scatter_p: 0, lsc.scatter_add_p: 1, lsc.scatter_mul_p: 2,
                lsc.scatter_min_p: 3, lsc.scatter_max_p: 4, lsc.scatter_sub_p: 5}


def _scatter(eqn: JaxprEqn, ins: list[str], into: str = "None") -> str:
    p = eqn.params
    return _kc("scatter", ins[0], ins[1], ins[2], str(_SCATTER_OPS[eqn.primitive]),
               render_value(p["axes"]), render_value(p["mode"]), into)


register(ix.dynamic_slice_p, backend="cpu", library=_dynamic_slice, array=_dynamic_slice_array)
register(ix.dynamic_update_slice_p, backend="cpu", library=_dynamic_update_slice,
         in_place=_dynamic_update_slice)
register(ix.gather_p, backend="cpu", library=_gather)


def _lookup(args: list[str], eqn: JaxprEqn) -> str:
    """The table's element at the coordinates, each clamped into its axis (the gather's clip),
    or the fill value where one is outside (its fill mode)."""
    table, coords = args[0], args[1:]
    at = ", ".join(f"min(max({c}, 0), {table}.shape[{d}] - 1)" for d, c in enumerate(coords))
    load = f"{table}[{at}]"
    if eqn.params["mode"] != "fill":
        return load
    inside = " and ".join(f"0 <= {c} < {table}.shape[{d}]" for d, c in enumerate(coords))
    fill = render_scalar(eqn.params["fill_value"], eqn.invars[0].aval.dtype)
    return f"({load} if {inside} else {fill})"


# (a random load costs about what a libm call does: heavy, stored rather than recomputed)
register(lookup_p, Fusion.LOOKUP, heavy=True)
register(lookup_p, backend="cpu", scalar=_lookup)
for _prim in _SCATTER_OPS:  # complex min/max have no scalar order: the eager impl
    register(_prim, backend="cpu", library=_scatter, library_ok=no_complex, in_place=_scatter)
register(la.take_along_axis_p, backend="cpu",
         library=lambda e, ins: _kc("take_along_axis", ins[0], ins[1], str(e.params["axis"])))
register(la.scatter_add_along_axis_p, backend="cpu",  # np.add.at on bools is a logical or
         library=lambda e, ins: _kc("scatter_add_along_axis", ins[0], ins[1],
                                    str(e.params["axis"]), str(e.params["size"])),
         library_ok=lambda e: operand_dtype(e).kind != "b")

# ----------------------------------------------------------------------------- CUDA


def _complex_ok(eqn: JaxprEqn) -> bool:
    """Complex buffers: index kernels move whole elements; scatter-add adds the parts with
    float atomics. numba has no complex atomics for scatter-mul/min/max."""
    return not involves_complex(eqn) or eqn.primitive in (
        ix.dynamic_slice_p, ix.dynamic_update_slice_p, ix.gather_p, lsc.scatter_p,
        lsc.scatter_add_p)


def _atomic_ok(eqn: JaxprEqn) -> bool:
    """numba's atomics (scatter-add/min/max): 32/64-bit ints and floats."""
    return _complex_ok(eqn) and (
        operand_dtype(eqn).kind == "c" or operand_dtype(eqn) in cuda_index.ATOMIC_DTYPES)


def _cas_ok(eqn: JaxprEqn) -> bool:
    """scatter-mul: a compare-and-swap loop, on 32/64-bit integers or a float's bits."""
    return operand_dtype(eqn) in cuda_index.CAS_DTYPES


for _prim, _render, _ok in (
        (ix.dynamic_slice_p, cuda_index.dynamic_slice, _complex_ok),
        (ix.dynamic_update_slice_p, cuda_index.dynamic_update_slice, _complex_ok),
        (ix.gather_p, cuda_index.gather, _complex_ok),
        (lsc.scatter_p, cuda_index.scatter, _complex_ok),
        (lsc.scatter_add_p, cuda_index.scatter, _atomic_ok),
        (lsc.scatter_sub_p, cuda_index.scatter, _atomic_ok),
        (lsc.scatter_min_p, cuda_index.scatter, _atomic_ok),
        (lsc.scatter_max_p, cuda_index.scatter, _atomic_ok),
        (lsc.scatter_mul_p, cuda_index.scatter, _cas_ok),
        (la.take_along_axis_p, cuda_index.take_along_axis, no_complex),
        (la.scatter_add_along_axis_p, cuda_index.scatter_add_along_axis,
         lambda e: no_complex(e) and operand_dtype(e) in cuda_index.ATOMIC_DTYPES)):
    register(_prim, backend="cuda", library=cuda_driver.planned(_render), library_ok=_ok)
