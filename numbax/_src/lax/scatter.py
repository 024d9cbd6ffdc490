"""The element scatter family: scatter, scatter-add, scatter-sub, scatter-mul, scatter-min and
scatter-max, the inverses of indexing.py's element gather (same index form: `indices` picks
one element along each of `axes`, the other operand axes are taken whole)."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from numbax._src import core
from numbax._src.core import Primitive, ShapedArray, get_aval
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import ad, batching
from numbax._src.interpreters.ad import Zero
from numbax._src.lax import elementwise as ew
from numbax._src.lax import shape_ops
from numbax._src.lax.indexing import (
    _SCATTER_MODES,
    _columns,
    _front,
    _gather_shape,
    _with_batch_index,
    _zeros,
    gather_p,
)


def _scatter_abstract_eval(name: str):
    def rule(x: ShapedArray, idx: ShapedArray, upd: ShapedArray, *, axes, mode,
             unique_indices) -> list:
        api = f"lax.{name.replace('-', '_')}"
        if mode not in _SCATTER_MODES:
            raise NumbaxValueError(f"{api}: mode is {mode!r}, expected one of {_SCATTER_MODES}.")
        shape = _gather_shape(api, x, idx, axes)
        if upd.shape != shape:
            raise NumbaxValueError(
                f"{api}: updates has shape {upd.shape}, expected {shape} (indices.shape[:-1] + "
                f"the operand's un-indexed axes) for an operand of shape {x.shape} and indices "
                f"of shape {idx.shape}."
            )
        if upd.dtype != x.dtype:
            raise NumbaxTypeError(
                f"{api}: updates has dtype {upd.dtype}, expected the operand's dtype {x.dtype}."
            )
        return [x]

    return rule


_NP_UFUNC = {"scatter-add": np.add, "scatter-sub": np.subtract, "scatter-mul": np.multiply,
             "scatter-min": np.minimum, "scatter-max": np.maximum}


def _scatter_impl(name: str):
    def impl(x, idx, upd, *, axes, mode, unique_indices):
        out = np.array(x, copy=True)
        if out.size == 0 or idx.size == 0:
            return [out]
        view = _front(out, axes)  # a view: writes land in `out`
        cols, valid = _columns(x.shape, idx, axes, mode == "clip")
        if mode == "drop":
            cols = tuple(c[valid] for c in cols)
            upd = upd[valid]
        if name == "scatter":
            view[cols] = upd
        else:
            _NP_UFUNC[name].at(view, cols, upd)
        return [out]

    return impl


def _scatter_batch(prim: Primitive) -> Callable:
    def rule(axis_size, vals, dims, *, axes, mode, unique_indices):
        (x, idx, upd), (xd, id_, ud) = vals, dims
        x = batching.move_batch_axis(axis_size, xd, 0, x)
        upd = batching.move_batch_axis(axis_size, ud, 0, upd)
        idx = batching.move_batch_axis(axis_size, id_, 0, idx)
        idx = _with_batch_index(axis_size, idx)
        out = prim.bind(x, idx, upd, axes=(0, *[a + 1 for a in axes]), mode=mode,
                        unique_indices=unique_indices)
        return [out], [0]

    return rule


def _scatter_prim(name: str) -> Primitive:
    prim = Primitive(name)
    core.abstract_eval_rules[prim] = _scatter_abstract_eval(name)
    core.impl_rules[prim] = _scatter_impl(name)
    batching.batch_rules[prim] = _scatter_batch(prim)
    return prim


scatter_p = _scatter_prim("scatter")
scatter_add_p = _scatter_prim("scatter-add")
scatter_sub_p = _scatter_prim("scatter-sub")
scatter_mul_p = _scatter_prim("scatter-mul")
scatter_min_p = _scatter_prim("scatter-min")
scatter_max_p = _scatter_prim("scatter-max")


def _gather_for(mode: str) -> tuple[str, Any]:
    """The gather mode reading back what a scatter of `mode` wrote (dropped rows give 0)."""
    return ("clip", None) if mode == "clip" else ("fill", 0)


def _scatter_same_op_jvp(prim: Primitive) -> Callable:
    """jvp of a scatter linear in (operand, updates) jointly: the same scatter of tangents."""

    def rule(primals, tangents, *, axes, mode, unique_indices):
        x, idx, upd = primals
        tx, _, tu = tangents
        params = dict(axes=axes, mode=mode, unique_indices=unique_indices)
        ans = prim.bind(x, idx, upd, **params)
        if type(tx) is Zero and type(tu) is Zero:
            return [ans], [Zero(ad.tangent_aval(get_aval(ans)))]
        tx, tu = ad.instantiate_zeros(tx), ad.instantiate_zeros(tu)
        return [ans], [prim.bind(tx, idx, tu, **params)]

    return rule


def _scatter_add_transpose(cts, x, idx, upd, *, axes, mode, unique_indices):
    (ct,) = cts
    gmode, fill = _gather_for(mode)
    ct_u = None
    if ad.is_undefined_primal(upd):
        ct_u = gather_p.bind(ct, idx, axes=axes, mode=gmode, fill_value=fill)
    return [ct if ad.is_undefined_primal(x) else None, None, ct_u]


ad.jvp_rules[scatter_add_p] = _scatter_same_op_jvp(scatter_add_p)
ad.transpose_rules[scatter_add_p] = _scatter_add_transpose


def _scatter_sub_transpose(cts, x, idx, upd, *, axes, mode, unique_indices):
    ct_x, _, ct_u = _scatter_add_transpose(cts, x, idx, upd, axes=axes, mode=mode,
                                           unique_indices=unique_indices)
    return [ct_x, None, None if ct_u is None else ew.neg(ct_u)]


ad.jvp_rules[scatter_sub_p] = _scatter_same_op_jvp(scatter_sub_p)
ad.transpose_rules[scatter_sub_p] = _scatter_sub_transpose




def _winners(x_aval: ShapedArray, idx: Any, upd_aval: ShapedArray, axes, mode) -> Any:
    """True for each update that survives a scatter (with duplicates, the one written last)."""
    n = max(upd_aval.size, 1)
    ids = shape_ops.reshape(shape_ops.iota(np.int64, upd_aval.size), upd_aval.shape) if (
        upd_aval.size) else shape_ops.full(upd_aval.shape, 0, np.int64)
    base = shape_ops.full(x_aval.shape, -1, np.int64)
    written = scatter_p.bind(base, idx, ids, axes=axes, mode=mode, unique_indices=False)
    gmode, _ = _gather_for(mode)
    back = gather_p.bind(written, idx, axes=axes, mode=gmode, fill_value=None if
                         gmode == "clip" else -n)
    return ew.eq(back, ids)


def _scatter_transpose(cts, x, idx, upd, *, axes, mode, unique_indices):
    (ct,) = cts
    u_aval = upd.aval if ad.is_undefined_primal(upd) else get_aval(upd)
    params = dict(axes=axes, mode=mode, unique_indices=unique_indices)
    ct_x = ct_u = None
    if ad.is_undefined_primal(x):
        ct_x = scatter_p.bind(ct, idx, _zeros(get_aval(ct).update(shape=u_aval.shape)), **params)
    if ad.is_undefined_primal(upd):
        gmode, fill = _gather_for(mode)
        picked = gather_p.bind(ct, idx, axes=axes, mode=gmode, fill_value=fill)
        if not unique_indices:
            zeros = _zeros(get_aval(picked))
            picked = ew.select(_winners(get_aval(ct), idx, u_aval, axes, mode), picked, zeros)
        ct_u = picked
    return [ct_x, None, ct_u]


ad.jvp_rules[scatter_p] = _scatter_same_op_jvp(scatter_p)
ad.transpose_rules[scatter_p] = _scatter_transpose


def _scatter_mul_jvp(primals, tangents, *, axes, mode, unique_indices):
    x, idx, upd = primals
    tx, _, tu = tangents
    params = dict(axes=axes, mode=mode, unique_indices=unique_indices)
    ans = scatter_mul_p.bind(x, idx, upd, **params)
    t_out: Any = Zero(ad.tangent_aval(get_aval(ans)))
    if type(tx) is not Zero:
        t_out = scatter_mul_p.bind(tx, idx, upd, **params)
    if type(tu) is not Zero:
        if not unique_indices:
            raise NotImplementedError(
                "scatter_mul: the derivative with respect to updates is only implemented for "
                "unique_indices=True (as in JAX). Pass unique_indices=True when the indices "
                "do not repeat, or differentiate with respect to the operand only."
            )
        spread = scatter_add_p.bind(_zeros(get_aval(x)), idx, tu, **params)
        t_out = ad.add_tangents(t_out, ew.mul(x, spread))
    return [ans], [t_out]


def _scatter_mul_transpose(cts, x, idx, upd, *, axes, mode, unique_indices):
    (ct,) = cts
    assert not ad.is_undefined_primal(upd)
    ct_x = scatter_mul_p.bind(ct, idx, upd, axes=axes, mode=mode, unique_indices=unique_indices)
    return [ct_x, None, None]


ad.jvp_rules[scatter_mul_p] = _scatter_mul_jvp
ad.transpose_rules[scatter_mul_p] = _scatter_mul_transpose


def _scatter_extremal_jvp(prim: Primitive) -> Callable:
    # Tangents are averaged over the values (operand and updates) attaining the extremum,
    # the convention of reduce_max's jvp and of JAX's scatter_max jvp.
    def rule(primals, tangents, *, axes, mode, unique_indices):
        x, idx, upd = primals
        tx, _, tu = tangents
        params = dict(axes=axes, mode=mode, unique_indices=unique_indices)
        ans = prim.bind(x, idx, upd, **params)
        if type(tx) is Zero and type(tu) is Zero:
            return [ans], [Zero(ad.tangent_aval(get_aval(ans)))]
        tx, tu = ad.instantiate_zeros(tx), ad.instantiate_zeros(tu)
        dtype = get_aval(ans).dtype
        gmode, _ = _gather_for(mode)
        back = gather_p.bind(ans, idx, axes=axes, mode=gmode, fill_value=None)
        hit_u = ew.convert_element_type(ew.eq(upd, back), dtype)
        hit_x = ew.convert_element_type(ew.eq(x, ans), dtype)
        zeros = _zeros(get_aval(ans))
        count = ew.add(hit_x, scatter_add_p.bind(zeros, idx, hit_u, **params))
        total = ew.add(ew.mul(tx, hit_x), scatter_add_p.bind(zeros, idx, ew.mul(tu, hit_u),
                                                             **params))
        return [ans], [ew.div(total, count)]

    return rule


ad.jvp_rules[scatter_min_p] = _scatter_extremal_jvp(scatter_min_p)
ad.jvp_rules[scatter_max_p] = _scatter_extremal_jvp(scatter_max_p)


def _scatter_mode(mode: Any) -> str:
    if mode is None or mode in ("drop", "fill", "promise_in_bounds"):
        return "drop"
    if mode == "clip":
        return "clip"
    raise NumbaxValueError(
        f"lax.scatter: mode is {mode!r}, expected 'drop' (default), 'clip' or "
        "'promise_in_bounds'."
    )


def _scatter_wrapper(prim: Primitive) -> Callable:
    def fn(operand: Any, indices: Any, updates: Any, axes: Sequence[int], *, mode: Any = None,
           unique_indices: bool = False) -> Any:
        return prim.bind(operand, indices, updates, axes=tuple(int(a) for a in axes),
                         mode=_scatter_mode(mode), unique_indices=bool(unique_indices))

    fn.__name__ = prim.name.replace("-", "_")
    fn.__doc__ = (
        f"lax.{fn.__name__}: combines `updates` (shape indices.shape[:-1] + the operand's other "
        "axes) into operand at the element indices along `axes`. Repeated indices accumulate; "
        "out-of-bounds updates are dropped (mode='drop', default) or clamped (mode='clip').\n\n"
        "Unlike JAX: no ScatterDimensionNumbers; indices pick single elements along `axes`."
    )
    return fn


scatter = _scatter_wrapper(scatter_p)
scatter_add = _scatter_wrapper(scatter_add_p)
scatter_sub = _scatter_wrapper(scatter_sub_p)
scatter_mul = _scatter_wrapper(scatter_mul_p)
scatter_min = _scatter_wrapper(scatter_min_p)
scatter_max = _scatter_wrapper(scatter_max_p)
