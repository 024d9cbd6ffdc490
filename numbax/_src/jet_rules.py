"""The Taylor-mode rules of jet (jet.py): one entry of `jet_rules` per primitive, in Taylor
coefficients (u[k] the coefficient of t**k of an operand, u[0] its value).

Linear and structural primitives apply themselves to each term; products convolve; the
elementary functions use the recurrences of their differential equations (exp' = exp,
log' = 1/x, ...), O(K**2) for K terms; primitives without one compose others (jet2).
Primitives marked non-differentiable (comparisons, floor, sign...) carry zero series
without a rule here (jet.py)."""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from numbax._src import core, dtypes
from numbax._src.checkpoint import checkpoint_p
from numbax._src.checkpoint_policies import name_p
from numbax._src.core import Primitive, get_aval
from numbax._src.custom_derivatives import custom_jvp_call_p, custom_vjp_call_p
from numbax._src.interpreters import ad
from numbax._src.interpreters.ad_extend import add_jaxvals_p
from numbax._src.jet import call_rule, jet2, jet_call_rules, jet_rules
from numbax._src.lax import (
    along_axis,
    convolution,
    dot,
    fft,
    index_map,
    indexing,
    pieces,
    scatter,
    shape_ops,
    sharding_ops,
    windowed_reductions,
)
from numbax._src.lax import elementwise as ew
from numbax._src.lax import reductions as red

Rule = tuple[list, list]  # (primals_out, series_out), a series None where zero

# ----------------------------------------------------------------------------- arithmetic


def _c(x: Any, value: float) -> Any:
    return ew._const(x, value)


def _add(x, y):
    return ew.add_p.bind(x, y)


def _sub(x, y):
    return ew.sub_p.bind(x, y)


def _mul(x, y):
    return ew.mul_p.bind(x, y)


def _div(x, y):
    return ew.div_p.bind(x, y)


def _scaled(x: Any, factor: float) -> Any:
    return x if factor == 1 else _mul(x, _c(x, factor))


def _total(terms: list) -> Any:
    out = terms[0]
    for t in terms[1:]:
        out = _add(out, t)
    return out


def _first_order_ode(v0: Any, c: list, u: list) -> list:
    """v with v' = c u' (c's series known): v[k] = (1/k) sum_{j=1..k} j c[k-j] u[j]."""
    v = [v0]
    for k in range(1, len(u)):
        v.append(_scaled(_total([_scaled(_mul(c[k - j], u[j]), j) for j in range(1, k + 1)]),
                         1 / k))
    return v


# ----------------------------------------------------------------------------- rule makers


def deflinear(prim: Primitive, fixed: Callable[[int], bool] = lambda i: False) -> None:
    """prim is linear in its operands (those at `fixed` positions, indices or a predicate,
    held at their values): each term is prim of the operands' terms."""

    def rule(primals: list, series: list, **params) -> Rule:
        outs = core.bind(prim, *primals, **params)
        terms = [core.bind(prim, *[x if fixed(i) else s[k] for i, (x, s) in
                                   enumerate(zip(primals, series, strict=True))], **params)
                 for k in range(len(series[0]))]
        return outs, [list(ts) for ts in zip(*terms, strict=True)]

    jet_rules[prim] = rule


def _unary(prim: Primitive, series_fn: Callable) -> None:
    """A one-operand primitive whose coefficients `series_fn(out, u)` computes from its value
    and the operand's (u[0] its value); returns the K higher coefficients."""

    def rule(primals: list, series: list, **params) -> Rule:
        (x,), (s,) = primals, series
        out = prim.bind(x, **params)
        return [out], [series_fn(out, [x, *s], **params)]

    jet_rules[prim] = rule


def defderiv(prim: Primitive, deriv: Callable) -> None:
    """prim' = deriv(x), itself jet-able: v' = deriv(u) u'."""

    def series_fn(out, u):
        c0, cs = jet2(deriv, [u[0]], [u[1:-1]])  # K - 1 terms of deriv's are read
        return _first_order_ode(out, [c0, *cs], u)[1:]

    _unary(prim, series_fn)


def defoutput_ode(prim: Primitive, g: Callable) -> None:
    """prim' = g(prim(x)), g jet-able: v' = g(v) u', g's series grown one order at a time."""

    def series_fn(out, u):
        v, c = [out], [g(out)]
        for k in range(1, len(u)):
            v.append(_first_order_ode(out, c, u[:k + 1])[k])
            if k < len(u) - 1:
                c.append(jet2(g, [out], [v[1:]])[1][k - 1])
        return v[1:]

    _unary(prim, series_fn)


def defpower(prim: Primitive, a: float) -> None:
    """prim(x) = x**a: from u v' = a v u', v[k] = sum_{j=1..k} (a j - k + j) u[j] v[k-j]
    / (k u[0])."""

    def series_fn(out, u):
        v = [out]
        for k in range(1, len(u)):
            acc = _total([_scaled(_mul(u[j], v[k - j]), a * j - k + j)
                          for j in range(1, k + 1)])
            v.append(_div(_scaled(acc, 1 / k), u[0]))
        return v[1:]

    _unary(prim, series_fn)


def defcomposite(prim: Primitive, fn: Callable) -> None:
    """prim(*xs) = fn(*xs) mathematically: the series of fn, the value of prim."""

    def rule(primals: list, series: list, **params) -> Rule:
        out = prim.bind(*primals, **params)
        return [out], [jet2(lambda *xs: fn(*xs, **params), primals, series)[1]]

    jet_rules[prim] = rule


# ----------------------------------------------------------------------------- linear


for _prim in (ew.neg_p, ew.real_p, ew.imag_p, ew.conj_p, ew.complex_p, ew.add_p, ew.sub_p,
              ad.add_any_p, add_jaxvals_p, shape_ops.broadcast_in_dim_p, shape_ops.reshape_p,
              shape_ops.squeeze_p, shape_ops.transpose_p, shape_ops.rev_p, shape_ops.slice_p,
              shape_ops.concatenate_p, shape_ops.pad_p, shape_ops.copy_p, pieces.split_p,
              pieces.stack_p, pieces.unstack_p, pieces.tile_p, red.reduce_sum_p, red.cumsum_p,
              windowed_reductions.reduce_window_sum_p, fft.fft_p, index_map.index_map_p,
              index_map.roll_p, sharding_ops.sharding_constraint_p, name_p):
    deflinear(_prim)
deflinear(ew.select_n_p, lambda i: i == 0)  # the predicate held
for _prim in (indexing.dynamic_slice_p, indexing.gather_p, along_axis.take_along_axis_p):
    deflinear(_prim, lambda i: i >= 1)  # the indices held
deflinear(indexing.dynamic_update_slice_p, lambda i: i >= 2)
for _prim in (scatter.scatter_p, scatter.scatter_add_p, scatter.scatter_sub_p):
    deflinear(_prim, lambda i: i == 1)
deflinear(along_axis.scatter_add_along_axis_p, lambda i: i == 1)


def _convert_rule(primals: list, series: list, *, new_dtype, **params) -> Rule:
    """Linear into an inexact dtype; a conversion to an integer or bool drops the series."""
    (x,), (s,) = primals, series
    out = ew.convert_element_type_p.bind(x, new_dtype=new_dtype, **params)
    if not dtypes.is_inexact(new_dtype):
        return [out], [None]
    return [out], [[ew.convert_element_type_p.bind(t, new_dtype=new_dtype, **params)
                    for t in s]]


jet_rules[ew.convert_element_type_p] = _convert_rule

# ----------------------------------------------------------------------------- products


def defbilinear(prim: Primitive) -> None:
    """prim is linear in each operand: the terms are the convolution of the operands'."""

    def rule(primals: list, series: list, **params) -> Rule:
        u, w = [primals[0], *series[0]], [primals[1], *series[1]]
        v = [_total([prim.bind(u[j], w[k - j], **params) for j in range(k + 1)])
             for k in range(len(u))]
        return [v[0]], [v[1:]]

    jet_rules[prim] = rule


for _prim in (ew.mul_p, dot.dot_general_p, convolution.conv_general_dilated_p):
    defbilinear(_prim)


def _div_rule(primals: list, series: list) -> Rule:
    u, w = [primals[0], *series[0]], [primals[1], *series[1]]
    v = [ew.div_p.bind(*primals)]
    for k in range(1, len(u)):
        conv = _total([_mul(v[j], w[k - j]) for j in range(k)])
        v.append(_div(_sub(u[k], conv), w[0]))
    return [v[0]], [v[1:]]


jet_rules[ew.div_p] = _div_rule


def _rem_rule(primals: list, series: list) -> Rule:
    """x - y * trunc(x / y): the quotient is piecewise constant."""
    (x, y), (xs, ys) = primals, series
    out = ew.rem_p.bind(x, y)
    quotient = _div(_sub(x, out), y)
    return [out], [[_sub(a, _mul(b, quotient)) for a, b in zip(xs, ys, strict=True)]]


jet_rules[ew.rem_p] = _rem_rule


def _pow_by_squaring(x: Any, n: int) -> Any:
    if n < 0:
        return _div(_c(x, 1), _pow_by_squaring(x, -n))
    out = None
    while n:
        if n & 1:
            out = x if out is None else _mul(out, x)
        n >>= 1
        if n:
            x = _mul(x, x)
    return out


def _integer_pow_rule(primals: list, series: list, *, y) -> Rule:
    (x,) = primals
    out = ew.integer_pow_p.bind(x, y=y)
    if y == 0:
        return [out], [None]
    return [out], [jet2(lambda z: _pow_by_squaring(z, y), primals, series)[1]]


jet_rules[ew.integer_pow_p] = _integer_pow_rule
defcomposite(ew.square_p, lambda x: _mul(x, x))

# ----------------------------------------------------------------------------- exp and log


def _exp_grow(out: Any, u: list) -> list:
    """v = exp(u): v' = v u', v's own series feeding the recurrence."""
    v = [out]
    for k in range(1, len(u)):
        v.append(_first_order_ode(out, v, u[:k + 1])[k])
    return v


_unary(ew.exp_p, lambda out, u: _exp_grow(out, u)[1:])
_unary(ew.exp2_p, lambda out, u: _exp_grow(out, [u[0], *[_scaled(t, math.log(2)) for t in
                                                           u[1:]]])[1:])
_unary(ew.expm1_p, lambda out, u: _exp_grow(_add(out, _c(out, 1)), u)[1:])


def _log_series(out: Any, u: list) -> list:
    """v = log(u): u v' = u', v[k] = (u[k] - (1/k) sum_{j=1..k-1} j v[j] u[k-j]) / u[0]."""
    v = [out]
    for k in range(1, len(u)):
        conv = [_scaled(_mul(v[j], u[k - j]), j / k) for j in range(1, k)]
        v.append(_div(_sub(u[k], _total(conv)) if conv else u[k], u[0]))
    return v[1:]


_unary(ew.log_p, _log_series)
_unary(ew.log1p_p, lambda out, u: _log_series(out, [_add(u[0], _c(u[0], 1)), *u[1:]]))


def _pow_rule(primals: list, series: list) -> Rule:
    """x**y = exp(y log x): the exponent's series from jet2, then exp's recurrence."""
    z0, zs = jet2(lambda x, y: _mul(y, ew.log_p.bind(x)), primals, series)
    out = ew.pow_p.bind(*primals)
    return [out], [_exp_grow(out, [z0, *zs])[1:]]


jet_rules[ew.pow_p] = _pow_rule
defpower(ew.sqrt_p, 0.5)
defpower(ew.rsqrt_p, -0.5)
defpower(ew.cbrt_p, 1 / 3)

# ----------------------------------------------------------------------------- trigonometric


def _sin_cos(u: list, s0: Any, c0: Any, sign: int) -> tuple[list, list]:
    """s' = c u', c' = sign s u' (sin/cos: sign -1; sinh/cosh: +1)."""
    s, c = [s0], [c0]
    for k in range(1, len(u)):
        s.append(_scaled(_total([_scaled(_mul(u[j], c[k - j]), j) for j in range(1, k + 1)]),
                         1 / k))
        c.append(_scaled(_total([_scaled(_mul(u[j], s[k - j]), j) for j in range(1, k + 1)]),
                         sign / k))
    return s, c


_unary(ew.sin_p, lambda out, u: _sin_cos(u, out, ew.cos_p.bind(u[0]), -1)[0][1:])
_unary(ew.cos_p, lambda out, u: _sin_cos(u, ew.sin_p.bind(u[0]), out, -1)[1][1:])
_unary(ew.sinh_p, lambda out, u: _sin_cos(u, out, ew.cosh_p.bind(u[0]), 1)[0][1:])
_unary(ew.cosh_p, lambda out, u: _sin_cos(u, ew.sinh_p.bind(u[0]), out, 1)[1][1:])
defoutput_ode(ew.tan_p, lambda v: _add(_c(v, 1), _mul(v, v)))


def _one_minus_square(x):
    return _sub(_c(x, 1), _mul(x, x))


defderiv(ew.asin_p, lambda x: ew.rsqrt_p.bind(_one_minus_square(x)))
defderiv(ew.acos_p, lambda x: ew.neg_p.bind(ew.rsqrt_p.bind(_one_minus_square(x))))
defderiv(ew.atan_p, lambda x: _div(_c(x, 1), _add(_c(x, 1), _mul(x, x))))
defderiv(ew.asinh_p, lambda x: ew.rsqrt_p.bind(_add(_mul(x, x), _c(x, 1))))
defderiv(ew.acosh_p, lambda x: ew.rsqrt_p.bind(_sub(_mul(x, x), _c(x, 1))))
defderiv(ew.atanh_p, lambda x: _div(_c(x, 1), _one_minus_square(x)))


def _atan2_rule(primals: list, series: list) -> Rule:
    """atan2(x, y) moves as atan(x / y)."""
    z0, zs = jet2(_div, primals, series)
    c0, cs = jet2(lambda z: _div(_c(z, 1), _add(_c(z, 1), _mul(z, z))), [z0], [zs])
    out = ew.atan2_p.bind(*primals)
    return [out], [_first_order_ode(out, [c0, *cs], [z0, *zs])[1:]]


jet_rules[ew.atan2_p] = _atan2_rule

# ----------------------------------------------------------------------------- sigmoids


def _logistic_series(out: Any, u: list) -> list:
    """v = logistic(u): v' = e u' with e = v (1 - v), e[k] = (1 - v[0]) v[k] - sum v[j] v[k-j]."""
    v, e = [out], [_mul(out, _sub(_c(out, 1), out))]
    for k in range(1, len(u)):
        v.append(_first_order_ode(out, e, u[:k + 1])[k])
        square = _total([_mul(v[j], v[k - j]) for j in range(1, k + 1)])
        e.append(_sub(_mul(_sub(_c(out, 1), out), v[k]), square))
    return v[1:]


def _tanh_series(out: Any, u: list) -> list:
    """tanh(x) = 2 logistic(2x) - 1."""
    half = _scaled(_add(out, _c(out, 1)), 0.5)
    return [_scaled(t, 2) for t in _logistic_series(half, [_scaled(t, 2) for t in u])]


_unary(ew.logistic_p, _logistic_series)
_unary(ew.tanh_p, _tanh_series)

# ----------------------------------------------------------------------------- special


defderiv(ew.erf_p, lambda x: _scaled(ew.exp_p.bind(ew.neg_p.bind(_mul(x, x))),
                                     2 / math.sqrt(math.pi)))
defderiv(ew.erfc_p, lambda x: _scaled(ew.exp_p.bind(ew.neg_p.bind(_mul(x, x))),
                                      -2 / math.sqrt(math.pi)))
defoutput_ode(ew.erf_inv_p, lambda v: _scaled(ew.exp_p.bind(_mul(v, v)), math.sqrt(math.pi) / 2))
defderiv(ew.lgamma_p, ew.digamma_p.bind)
defderiv(ew.digamma_p, lambda x: ew.polygamma_p.bind(_c(x, 1), x))


def _polygamma_rule(primals: list, series: list) -> Rule:
    """polygamma(m, x) in x (the order m held): its derivative is polygamma(m + 1, x)."""
    (m, x), (_, s) = primals, series
    out = ew.polygamma_p.bind(m, x)
    c0, cs = jet2(lambda z: ew.polygamma_p.bind(_add(m, _c(m, 1)), z), [x], [s[:-1]])
    return [out], [_first_order_ode(out, [c0, *cs], [x, *s])[1:]]


jet_rules[ew.polygamma_p] = _polygamma_rule

# ----------------------------------------------------------------------------- choices


def _like(x: Any, shape: tuple) -> Any:
    """x broadcast to `shape` (a rank-0 operand of an elementwise binary primitive)."""
    if get_aval(x).shape == shape:
        return x
    return shape_ops.broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=())


def _chooser(prim: Primitive, wins: Primitive) -> Callable:
    """max/min: the terms of the operand that wins (`wins(x, y)`), their mean on ties."""

    def rule(primals: list, series: list) -> Rule:
        out = prim.bind(*primals)
        shape = get_aval(out).shape
        x, y = (_like(p, shape) for p in primals)
        x_wins, tie = wins.bind(x, y), ew.eq_p.bind(x, y)
        terms = []
        for a, b in zip(*series, strict=True):
            a, b = _like(a, shape), _like(b, shape)
            mean = _scaled(_add(a, b), 0.5)
            terms.append(ew.select_n_p.bind(tie, ew.select_n_p.bind(x_wins, b, a), mean))
        return [out], [terms]

    return rule


jet_rules[ew.max_p] = _chooser(ew.max_p, ew.gt_p)
jet_rules[ew.min_p] = _chooser(ew.min_p, ew.lt_p)
defcomposite(ew.clamp_p, lambda lo, x, hi: ew.min_p.bind(ew.max_p.bind(lo, x), hi))


def _reduce_chooser(prim: Primitive) -> Callable:
    """reduce_max/min: the mean of the terms at the positions that reach the extremum."""

    def rule(primals: list, series: list, *, axes, **params) -> Rule:
        (x,), (s,) = primals, series
        out = prim.bind(x, axes=axes, **params)
        shape = get_aval(x).shape
        kept = tuple(i for i in range(len(shape)) if i not in axes)
        spread = shape_ops.broadcast_in_dim_p.bind(out, shape=shape, broadcast_dimensions=kept)
        at = ew.convert_element_type_p.bind(ew.eq_p.bind(x, spread),
                                            new_dtype=get_aval(s[0]).dtype, weak_type=False)
        count = red.reduce_sum_p.bind(at, axes=axes)
        return [out], [[_div(red.reduce_sum_p.bind(_mul(t, at), axes=axes), count) for t in s]]

    return rule


jet_rules[red.reduce_max_p] = _reduce_chooser(red.reduce_max_p)
jet_rules[red.reduce_min_p] = _reduce_chooser(red.reduce_min_p)


def _abs_series(out: Any, u: list) -> list:
    if dtypes.kind_of(get_aval(u[0]).dtype) == "c":
        raise NotImplementedError("jet: Taylor-mode rule for 'abs' of complex values is not "
                                  "implemented. Use sqrt(real**2 + imag**2).")
    negative = ew.lt_p.bind(u[0], _c(u[0], 0))
    aval = get_aval(u[0])
    sign = ew.select_n_p.bind(negative, shape_ops.full(aval.shape, 1, aval.dtype),
                              shape_ops.full(aval.shape, -1, aval.dtype))
    return [_mul(sign, t) for t in u[1:]]


_unary(ew.abs_p, _abs_series)


def _cumulative(combine: Callable) -> Callable:
    """cumprod/cummax/cummin as a parallel prefix scan (as JAX differentiates them)."""

    def fn(x, *, axis, reverse):
        return along_axis.public_associative_scan(combine, x, reverse=reverse, axis=axis)

    return fn


defcomposite(red.cumprod_p, _cumulative(_mul))
defcomposite(red.cummax_p, _cumulative(ew.max_p.bind))
defcomposite(red.cummin_p, _cumulative(ew.min_p.bind))

# ----------------------------------------------------------------------------- calls

jet_call_rules[custom_jvp_call_p] = call_rule("call_jaxpr")
jet_call_rules[custom_vjp_call_p] = call_rule("call_jaxpr")
jet_call_rules[checkpoint_p] = call_rule("jaxpr")
