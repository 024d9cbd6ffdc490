"""Lowerings of the reductions (lax/reductions.py): the monoid reductions join loop nests as
accumulators; arg-reductions and cumulative ones are library calls."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from numbax._src.compiler.cuda import driver as cuda_driver
from numbax._src.compiler.cuda.kernels import index as cuda_index
from numbax._src.compiler.lowerings.forms import Unsupported, float_max, float_min, no_complex
from numbax._src.compiler.registry import EAGER, Fusion, Monoid, register
from numbax._src.compiler.source import cast, dtype_ctor, render_value
from numbax._src.core import JaxprEqn
from numbax._src.lax import reduce as lreduce
from numbax._src.lax import reductions as lr
from numbax._src.lax import sort as lsort


def _extreme(dtype: np.dtype, for_max: bool):
    """The identity of max (the lowest value) or min (the highest)."""
    if dtype == np.bool_:
        return not for_max
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return info.min if for_max else info.max
    return -np.inf if for_max else np.inf


def _all_bits(dtype: np.dtype):
    """The identity of bitwise and: every bit set."""
    if dtype == np.bool_:
        return True
    return np.iinfo(dtype).max if dtype.kind == "u" else -1


def _rd(helper: str):
    """A row pass's accumulator update through a reduce_ops helper (cpu/runtime/reductions)."""
    return lambda acc, v: f"{acc} = rd.{helper}({acc}, {v})"


def _ordered(float_form: str, int_form: str):
    return lambda a, b, dt: (float_form if dt.kind in "fc" else int_form).format(a=a, b=b)


# The CPU's forms (NaN-propagating sc.fmax/fmin, reduce_ops helpers in vectorised row passes);
# CUDA's combine the same values with inline expressions (_CUDA below).
MONOIDS = {
    lr.reduce_sum_p: Monoid(lambda dt: 0, lambda a, b, dt: f"{a} + {b}", widens=True,
                            reassociates=True, blocks=True, row_update=_rd("add"),
                            inplace="+="),
    lr.reduce_prod_p: Monoid(lambda dt: 1, lambda a, b, dt: f"{a} * {b}", widens=True,
                             reassociates=True, row_update=_rd("mul"),
                             inplace="*="),
    lr.reduce_max_p: Monoid(lambda dt: _extreme(dt, True),
                            _ordered("sc.fmax({a}, {b})", "max({a}, {b})"), selects=True,
                            row_update=_rd("max_")),
    lr.reduce_min_p: Monoid(lambda dt: _extreme(dt, False),
                            _ordered("sc.fmin({a}, {b})", "min({a}, {b})"), selects=True,
                            row_update=_rd("min_")),
    lr.reduce_and_p: Monoid(_all_bits, lambda a, b, dt: f"{a} & {b}"),
    lr.reduce_or_p: Monoid(lambda dt: False if dt == np.bool_ else 0,
                           lambda a, b, dt: f"{a} | {b}"),
}


_CUDA_COMBINE = {
    lr.reduce_max_p: lambda a, b, dt: float_max(a, b) if dt.kind == "f" else f"max({a}, {b})",
    lr.reduce_min_p: lambda a, b, dt: float_min(a, b) if dt.kind == "f" else f"min({a}, {b})",
}


def _array_reduce(fn: str, partial: bool):
    """`fn` over all axes (any reduction) or axis by axis (`partial`: sums)."""
    def rule(args, eqn):
        x = eqn.invars[0].aval
        axes = sorted(eqn.params["axes"], reverse=True)
        out = eqn.outvars[0].aval
        if len(axes) == x.ndim:
            whole = _FLOAT_EXTREMA.get(fn, fn) if x.dtype.kind == "f" else fn
            return cast(out.dtype, f"{whole}({args[0]})")
        if not partial:
            raise Unsupported(eqn.primitive.name)
        expr = args[0]
        for d in axes:
            expr = f"{fn}({expr}, axis={d})"
        return f"{expr}.astype({dtype_ctor(out.dtype)})"

    return rule


# Whole-array max/min of floats: lax.max/min's order of zeros and NaNs, not numpy's.
_FLOAT_EXTREMA = {"np.max": "sc.array_max", "np.min": "sc.array_min"}
_ARRAY = {lr.reduce_sum_p: ("np.sum", True), lr.reduce_prod_p: ("np.prod", False),
          lr.reduce_max_p: ("np.max", False), lr.reduce_min_p: ("np.min", False),
          lr.reduce_and_p: ("np.all", False), lr.reduce_or_p: ("np.any", False)}

for _prim, _monoid in MONOIDS.items():
    register(_prim, Fusion.REDUCTION, monoid=_monoid, scalar_ok=no_complex)
    register(_prim, backend="cpu", array=_array_reduce(*_ARRAY[_prim]))
    if _prim in _CUDA_COMBINE:
        register(_prim, backend="cuda", monoid=replace(_monoid, combine=_CUDA_COMBINE[_prim]))
# CUDA sums and multiplies complex values in loop nests (numba's complex arithmetic)
for _prim in (lr.reduce_sum_p, lr.reduce_prod_p):
    register(_prim, backend="cuda", scalar_ok=None)

# ----------------------------------------------------------------------------- library calls


def _argminmax(fn: str):
    def rule(eqn: JaxprEqn, ins: list[str]) -> str:
        p = eqn.params
        return f"[kc.argminmax({ins[0]}, {fn}, {p['axes'][0]}, " \
               f"{render_value(np.dtype(p['index_dtype']))})]"

    return rule


def _cumulative(ufunc: str):
    def rule(eqn: JaxprEqn, ins: list[str]) -> str:
        p = eqn.params
        return f"[kc.cumulative({ins[0]}, {ufunc}, {p['axis']}, {render_value(p['reverse'])})]"

    return rule


register(lr.argmax_p, backend="cpu", library=_argminmax("np.argmax"))
register(lr.argmin_p, backend="cpu", library=_argminmax("np.argmin"))
for _prim, _ufunc in ((lr.cumsum_p, "np.add"), (lr.cumprod_p, "np.multiply")):
    register(_prim, backend="cpu", library=_cumulative(_ufunc))


def _cumulative_extremum(larger: bool):
    def rule(eqn: JaxprEqn, ins: list[str]) -> str:
        p = eqn.params
        return f"[kc.cumulative_extremum({ins[0]}, {larger}, {p['axis']}, " \
               f"{render_value(p['reverse'])})]"

    return rule


register(lr.cummax_p, backend="cpu", library=_cumulative_extremum(True))
register(lr.cummin_p, backend="cpu", library=_cumulative_extremum(False))
for _prim in (lr.argmax_p, lr.argmin_p, lr.cummax_p, lr.cummin_p):
    register(_prim, backend="cuda", library=cuda_driver.planned(cuda_index.scan_rows),
             library_ok=no_complex)
for _prim in (lr.cumsum_p, lr.cumprod_p):  # complex: whole elements, numba's arithmetic
    register(_prim, backend="cuda", library=cuda_driver.planned(cuda_index.scan_rows))
register(lsort.searchsorted_p, backend="cpu", library=lambda eqn, ins: (
    f"[kc.searchsorted({ins[0]}, {ins[1]}, {eqn.params['right']}, "
    f"np.{eqn.params['index_dtype'].name})]"))
register(lsort.top_k_p, backend="cpu",
         library=lambda eqn, ins: f"kc.top_k({ins[0]}, {eqn.params['k']}, {eqn.params['axis']})")
# approx_max_k is exact on the CPU, as in XLA: top_k's kernel (approx_min_k: the eager sort)
register(lsort.approx_top_k_p, backend="cpu", library=lambda eqn, ins: (
    f"kc.top_k({ins[0]}, {eqn.params['k']}, "
    f"{eqn.params['reduction_dimension'] % eqn.invars[0].aval.ndim})"),
    library_ok=lambda eqn: eqn.params["is_max_k"])
# xor reductions and log-cumsum-exp: numpy in the driver
for _prim in (lr.reduce_xor_p, lr.cumlogsumexp_p):
    register(_prim, backend="cpu", library=EAGER)

# lax.reduce with a user computation: written as the pairwise tree of the computation before
# fusion (its equations then fuse as any others); the eager implementation where the
# expansion cannot be spliced in
register(lreduce.reduce_p, expand=lreduce.expand_reduce)
register(lreduce.reduce_p, backend="cpu", library=EAGER)
