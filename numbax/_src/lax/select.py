"""Selection: select_n (pick among cases by an index or boolean) and clamp. Their rules use
elementwise ops, imported when they run (elementwise re-exports these names)."""
from __future__ import annotations

from typing import Any

import numpy as np

from numbax._src import core, dtypes
from numbax._src.core import Primitive, ShapedArray, get_aval
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import ad, batching
from numbax._src.interpreters.ad import Zero, is_undefined_primal, unbroadcast
from numbax._src.lax import extrema
from numbax._src.lax.key_arrays import key_array_op


def _ew():
    from numbax._src.lax import elementwise  # elementwise imports this module

    return elementwise


select_n_p = Primitive("select_n")


def _select_n_abstract_eval(which: ShapedArray, *cases: ShapedArray) -> list[ShapedArray]:
    if not cases:
        raise NumbaxValueError("lax.select_n: needs at least one case, got only `which`.")
    if which.dtype != dtypes.bool_ and kind_of(which.dtype) not in "iu":
        raise NumbaxTypeError(
            f"lax.select_n: which has dtype {which.dtype}, expected bool or an integer dtype."
        )
    if which.dtype == dtypes.bool_ and len(cases) > 2:
        raise NumbaxTypeError("lax.select_n: a boolean `which` selects between two cases only")
    if any(c.dtype != cases[0].dtype for c in cases):
        listed = ", ".join(str(c.dtype) for c in cases)
        raise NumbaxTypeError(f"lax.select_n: cases have different dtypes {listed}.")
    shape = _ew()._broadcast_shapes("select_n", [which.shape, *[c.shape for c in cases]])
    return [ShapedArray(shape, cases[0].dtype, _ew()._weak(*cases))]


def _select_n_impl(which, *cases):
    if which.dtype == np.bool_:
        return [np.where(which, cases[1], cases[0])] if len(cases) == 2 else [
            np.broadcast_to(cases[0], np.broadcast_shapes(which.shape, cases[0].shape)).copy()]
    idx = np.clip(which, 0, len(cases) - 1)
    shape = np.broadcast_shapes(which.shape, *[c.shape for c in cases])
    return [np.choose(np.broadcast_to(idx, shape), [np.broadcast_to(c, shape) for c in cases])]


def _select_n_jvp(primals, tangents):
    which, *cases = primals
    ans = select_n(which, *cases)
    case_tangents = tangents[1:]
    if all(type(t) is Zero for t in case_tangents):
        return [ans], [Zero(ad.tangent_aval(get_aval(ans)))]
    out_aval = get_aval(ans)
    ts = [_ew()._broadcast_tangent(ad.instantiate_zeros(t), out_aval) for t in case_tangents]
    return [ans], [select_n(which, *ts)]


def _select_n_transpose(cts, which, *cases):
    (ct,) = cts
    assert not is_undefined_primal(which)
    zeros = _ew()._zeros_like(ct)
    out = [None]
    for i, c in enumerate(cases):
        if is_undefined_primal(c):
            picks = [zeros] * len(cases)
            picks[i] = ct
            out.append(unbroadcast(select_n(which, *picks), c.aval))
        else:
            out.append(None)
    return out


core.abstract_eval_rules[select_n_p] = _select_n_abstract_eval
core.avals_only.add(select_n_p)
core.impl_rules[select_n_p] = _select_n_impl
ad.jvp_rules[select_n_p] = _select_n_jvp
ad.transpose_rules[select_n_p] = _select_n_transpose
batching.defbroadcasting(select_n_p)

clamp_p = Primitive("clamp")


def _clamp_abstract_eval(lo: ShapedArray, x: ShapedArray, hi: ShapedArray) -> list:
    for name, a in (("min", lo), ("max", hi)):
        if a.dtype != x.dtype:
            raise NumbaxTypeError(
                f"lax.clamp: {name} has dtype {a.dtype} but operand has {x.dtype}; "
                "they must match."
            )
        if a.shape not in ((), x.shape):
            raise NumbaxTypeError(
                f"lax.clamp: {name} has shape {a.shape}, expected () or the operand's "
                f"shape {x.shape}."
            )
    return [x]


core.abstract_eval_rules[clamp_p] = _clamp_abstract_eval
core.avals_only.add(clamp_p)
core.impl_rules[clamp_p] = lambda lo, x, hi: [extrema.minimum(extrema.maximum(x, lo), hi)]
def _clamp_jvp_lo(t, ans, lo, x, hi):
    ew = _ew()
    return select_n(ew.lt(lo, x), ew._broadcast_tangent(t, get_aval(ans)), ew._zeros_like(ans))


def _clamp_jvp_x(t, ans, lo, x, hi):
    ew = _ew()
    return select_n(ew.and_(ew.gt(x, lo), ew.lt(x, hi)), ew._zeros_like(ans), t)


def _clamp_jvp_hi(t, ans, lo, x, hi):
    ew = _ew()
    return select_n(ew.lt(x, hi), ew._broadcast_tangent(t, get_aval(ans)), ew._zeros_like(ans))


ad.defjvp(clamp_p, _clamp_jvp_lo, _clamp_jvp_x, _clamp_jvp_hi)
batching.defbroadcasting(clamp_p)


@key_array_op("cases")
def select_n(which: Any, *cases: Any) -> Any:
    """cases[which] elementwise: a boolean `which` picks between two cases (False: the
    first), an integer one among all (clamped into range).

    >>> select_n(np.array([True, False]), np.array([1, 2]), np.array([3, 4]))
    Array([3, 2], dtype=int64)
    """
    return select_n_p.bind(which, *cases)


@key_array_op("on_true", "on_false")
def select(pred: Any, on_true: Any, on_false: Any) -> Any:
    """lax.select: on_true where pred, else on_false."""
    return select_n_p.bind(pred, on_false, on_true)


def clamp(min: Any, x: Any, max: Any) -> Any:  # noqa: A002
    """x limited to [min, max] elementwise (min and max: scalars or x's shape).

    >>> clamp(0.0, np.array([-1.0, 0.5, 2.0]), 1.0)
    Array([0. , 0.5, 1. ], dtype=float64)
    """
    to_operand = _ew()._to_operand
    return clamp_p.bind(to_operand(min, x), x, to_operand(max, x))
