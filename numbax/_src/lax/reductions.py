"""Reductions over a tuple of axes (reduce_sum/max/min/prod/and/or/xor, argmax/argmin) and
the cumulative ops along one axis (cumsum, cumprod, cummax, cummin, cumlogsumexp)."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from numbax._src import core, dtypes
from numbax._src.core import Primitive, ShapedArray, get_aval
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import ad, batching
from numbax._src.lax import along_axis, extrema, shape_ops
from numbax._src.lax import elementwise as ew


def _reduce_abstract_eval(name: str, kinds: str | None = None):
    def rule(x: ShapedArray, *, axes) -> list[ShapedArray]:
        if kinds is not None:
            ew._check_kind(name, x, kinds)
        for a in axes:
            if not 0 <= a < x.ndim:
                raise NumbaxValueError(
                    f"lax.{name}: axis {a} is out of bounds for an array of shape {x.shape}."
                )
        shape = tuple(s for i, s in enumerate(x.shape) if i not in axes)
        return [ShapedArray(shape, x.dtype, x.weak_type)]

    return rule


def _reduce_batch(prim: Primitive) -> Callable:
    def rule(axis_size, vals, dims, *, axes):
        (x,), (bd,) = vals, dims
        x = batching.moveaxis(x, bd, 0)
        return [prim.bind(x, axes=tuple(a + 1 for a in axes))], [0]

    return rule


def reduction(name: str, impl: Callable, kinds: str | None = None) -> Primitive:
    prim = Primitive(name)
    core.abstract_eval_rules[prim] = _reduce_abstract_eval(name, kinds)
    core.avals_only.add(prim)
    core.impl_rules[prim] = lambda x, *, axes: [np.asarray(impl(x, axis=axes))]
    batching.batch_rules[prim] = _reduce_batch(prim)
    return prim


# (the ufuncs' reduce is np.sum's and np.prod's own, without their ~1.5 us of argument handling)
reduce_sum_p = reduction("reduce_sum", np.add.reduce, "iufc")  # JAX: bools sum through an int
reduce_max_p = reduction("reduce_max", extrema.reduce_max)
reduce_min_p = reduction("reduce_min", extrema.reduce_min)


def _reduce_sum_transpose(cts, x, *, axes):
    (ct,) = cts
    shape = x.aval.shape
    kept = tuple(i for i in range(len(shape)) if i not in axes)
    return [shape_ops.broadcast_in_dim(ct, shape, kept)]


ad.deflinear(reduce_sum_p, _reduce_sum_transpose)


def _reduce_chooser_jvp(prim: Primitive) -> Callable:
    # The tangent is averaged over the positions that attain the extremum (JAX's convention).
    def rule(primals, tangents, *, axes):
        (x,), (t,) = primals, tangents
        ans = prim.bind(x, axes=axes)
        shape = get_aval(x).shape
        kept = tuple(i for i in range(len(shape)) if i not in axes)
        location = ew.eq(x, shape_ops.broadcast_in_dim(ans, shape, kept))
        location = ew.convert_element_type(location, get_aval(t).dtype)
        counts = reduce_sum_p.bind(location, axes=axes)
        picked = reduce_sum_p.bind(ew.mul(t, location), axes=axes)
        return [ans], [ew.div(picked, counts)]

    return rule


ad.jvp_rules[reduce_max_p] = _reduce_chooser_jvp(reduce_max_p)
ad.jvp_rules[reduce_min_p] = _reduce_chooser_jvp(reduce_min_p)


# ----------------------------------------------------------------------------- reduce_prod

reduce_prod_p = reduction("reduce_prod", np.multiply.reduce, "iufc")


def _reduce_prod_jvp(primals, tangents, *, axes):
    # d prod = sum_i t_i * prod_{j != i} x_j, the products-but-one taken as exclusive forward
    # times exclusive reverse cumprods: exact with zeros, and differentiable at any order.
    (x,), (t,) = primals, tangents
    ans = reduce_prod_p.bind(x, axes=axes)
    shape = get_aval(x).shape
    kept = [i for i in range(len(shape)) if i not in axes]
    n = int(np.prod([shape[a] for a in axes], dtype=np.int64))
    flat_shape = (*[shape[i] for i in kept], n)

    def flatten(v):
        return shape_ops.reshape(shape_ops.transpose(v, (*kept, *axes)), flat_shape)

    xf, tf = flatten(x), flatten(t)
    last = len(kept)
    before = along_axis.shift(cumprod_p.bind(xf, axis=last, reverse=False), 1, last, 1)
    after = along_axis.shift(cumprod_p.bind(xf, axis=last, reverse=True), 1, last, 1,
                             reverse=True)
    return [ans], [reduce_sum_p.bind(ew.mul(tf, ew.mul(before, after)), axes=(last,))]


ad.jvp_rules[reduce_prod_p] = _reduce_prod_jvp

# ----------------------------------------------------------------------------- reduce_and/or


def _reduce_bitwise(ufunc: np.ufunc) -> Callable:
    def impl(x, axis):
        if x.dtype == np.bool_:
            return (np.all if ufunc is np.bitwise_and else np.any)(x, axis=axis)
        return ufunc.reduce(x, axis=axis)

    return impl


def _reduce_xor(x, axis):
    if x.dtype == np.bool_:
        return np.logical_xor.reduce(x, axis=axis)
    return np.bitwise_xor.reduce(x, axis=axis)


reduce_and_p = reduction("reduce_and", _reduce_bitwise(np.bitwise_and), "biu")
reduce_or_p = reduction("reduce_or", _reduce_bitwise(np.bitwise_or), "biu")
reduce_xor_p = reduction("reduce_xor", _reduce_xor, "biu")
ad.non_differentiable.update({reduce_and_p, reduce_or_p, reduce_xor_p})

# ----------------------------------------------------------------------------- argmax/argmin


def _argminmax(name: str, impl: Callable) -> Primitive:
    prim = Primitive(name)

    def abstract_eval(x: ShapedArray, *, axes, index_dtype) -> list[ShapedArray]:
        ew._check_kind(name, x, "biuf")
        (out,) = _reduce_abstract_eval(name)(x, axes=axes)
        if len(axes) != 1:
            raise NumbaxValueError(f"lax.{name}: axes has {axes}, expected exactly one axis.")
        if kind_of(np.dtype(index_dtype)) not in "iu":
            raise NumbaxTypeError(
                f"lax.{name}: index_dtype has {np.dtype(index_dtype)}, expected an integer "
                "dtype such as numbax.numpy.int32."
            )
        return [ShapedArray(out.shape, index_dtype)]

    def batch(axis_size, vals, dims, *, axes, index_dtype):
        x = batching.moveaxis(vals[0], dims[0], 0)
        return [prim.bind(x, axes=(axes[0] + 1,), index_dtype=index_dtype)], [0]

    core.abstract_eval_rules[prim] = abstract_eval
    core.avals_only.add(prim)
    # numpy's argmax/argmin pick the first occurrence, and the first NaN wins (as in JAX).
    core.impl_rules[prim] = lambda x, *, axes, index_dtype: [
        np.asarray(impl(x, axis=axes[0])).astype(index_dtype)]
    batching.batch_rules[prim] = batch
    ad.non_differentiable.add(prim)
    return prim


argmax_p = _argminmax("argmax", np.argmax)
argmin_p = _argminmax("argmin", np.argmin)

# ----------------------------------------------------------------------------- cumulative ops


def _cumulative_abstract_eval(name: str, kinds: str):
    def rule(x: ShapedArray, *, axis, reverse) -> list[ShapedArray]:
        ew._check_kind(name, x, kinds)
        if not 0 <= axis < x.ndim:
            raise NumbaxValueError(
                f"lax.{name}: axis {axis} is out of bounds for an array of shape {x.shape}. "
                f"Pass an axis in [-{x.ndim}, {x.ndim})."
            )
        return [x]

    return rule


def _cumulative_impl(accumulate: Callable) -> Callable:
    def impl(x, *, axis, reverse):
        if reverse:
            return [np.flip(accumulate(np.flip(x, axis), axis=axis), axis)]
        return [accumulate(x, axis=axis)]

    return impl


def cumulative(name: str, accumulate: Callable, kinds: str) -> Primitive:
    prim = Primitive(name)

    def batch(axis_size, vals, dims, *, axis, reverse):
        x = batching.moveaxis(vals[0], dims[0], 0)
        return [prim.bind(x, axis=axis + 1, reverse=reverse)], [0]

    core.abstract_eval_rules[prim] = _cumulative_abstract_eval(name, kinds)
    core.avals_only.add(prim)
    core.impl_rules[prim] = _cumulative_impl(accumulate)
    batching.batch_rules[prim] = batch
    return prim


cumsum_p = cumulative("cumsum", np.cumsum, "iufc")
cumprod_p = cumulative("cumprod", np.cumprod, "iufc")
# (complex values in JAX's order: by real part, then imaginary part, as numpy's maximum)
cummax_p = cumulative("cummax", extrema.cummax, "iufc")
cummin_p = cumulative("cummin", extrema.cummin, "iufc")

ad.deflinear(cumsum_p, lambda cts, x, *, axis, reverse: [
    cumsum_p.bind(cts[0], axis=axis, reverse=not reverse)])


def _cumulative_jvp(prim: Primitive, combine: Callable, identity: Callable) -> Callable:
    # The tangent is the jvp of the same scan written as log2(n) rounds of shifted combines
    # (JAX differentiates its associative_scan the same way): exact with zeros and ties.
    def rule(primals, tangents, *, axis, reverse):
        (x,), (t,) = primals, tangents
        ans = prim.bind(x, axis=axis, reverse=reverse)
        ident = identity(get_aval(x).dtype)

        def scan(v):
            return along_axis.associative_scan(
                lambda a, b: [combine(a[0], b[0])], [v], axis, reverse, [ident])

        _, (t_out,) = ad.jvp_flat(scan, [x], [t])
        return [ans], [t_out]

    return rule


def _lowest(dtype: np.dtype) -> Any:
    kind = kind_of(dtype)
    return complex(-np.inf, -np.inf) if kind == "c" else -np.inf if kind == "f" else \
        np.iinfo(dtype).min


def _highest(dtype: np.dtype) -> Any:
    kind = kind_of(dtype)
    return complex(np.inf, np.inf) if kind == "c" else np.inf if kind == "f" else \
        np.iinfo(dtype).max


cumlogsumexp_p = cumulative("cumlogsumexp", np.logaddexp.accumulate, "f")


def _logaddexp(a: Any, b: Any) -> Any:
    """log(exp(a) + exp(b)) without overflow; -inf when both are -inf."""
    big = ew.max(a, b)
    finite_big = ew.select_n(ew.is_finite(big), ew._zeros_like(big), big)
    return ew.add(finite_big, ew.log(ew.add(ew.exp(ew.sub(a, finite_big)),
                                            ew.exp(ew.sub(b, finite_big)))))


def _cumlogsumexp_jvp(primals, tangents, *, axis, reverse):
    # A prefix segment is (L, tau) = (log sum e^x_j, sum e^(x_j - L) t_j); combining two is
    # associative and exact: L = logaddexp(L1, L2), tau = e^(L1-L) tau1 + e^(L2-L) tau2.
    (x,), (t,) = primals, tangents
    ans = cumlogsumexp_p.bind(x, axis=axis, reverse=reverse)
    dtype = get_aval(x).dtype

    def weight(part, whole):
        return ew.select_n(ew.eq(part, np.array(-np.inf, dtype)),
                           ew.exp(ew.sub(part, whole)), ew._zeros_like(part))

    def combine(earlier, later):
        (l1, t1), (l2, t2) = earlier, later
        total = _logaddexp(l1, l2)
        return [total, ew.add(ew.mul(weight(l1, total), t1), ew.mul(weight(l2, total), t2))]

    _, t_out = along_axis.associative_scan(combine, [x, ad.instantiate_zeros(t)], axis,
                                           reverse, [-np.inf, 0])
    return [ans], [t_out]


ad.jvp_rules[cumlogsumexp_p] = _cumlogsumexp_jvp
ad.jvp_rules[cumprod_p] = _cumulative_jvp(cumprod_p, ew.mul, lambda dt: 1)
ad.jvp_rules[cummax_p] = _cumulative_jvp(cummax_p, ew.max, _lowest)
ad.jvp_rules[cummin_p] = _cumulative_jvp(cummin_p, ew.min, _highest)


def _canonical_axes(x: Any, axes: Sequence[int], name: str = "reduce") -> tuple[int, ...]:
    ndim = get_aval(x).ndim
    for a in axes:
        if not -ndim <= int(a) < ndim:
            raise NumbaxValueError(
                f"lax.{name}: axis {a} is out of bounds for an array of shape "
                f"{get_aval(x).shape}. Pass axes in [-{ndim}, {ndim})."
            )
    return tuple(sorted({int(a) % ndim for a in axes}))


def reduce_sum(operand: Any, axes: Sequence[int]) -> Any:
    return reduce_sum_p.bind(operand, axes=_canonical_axes(operand, axes, "reduce_sum"))


def reduce_max(operand: Any, axes: Sequence[int]) -> Any:
    return reduce_max_p.bind(operand, axes=_canonical_axes(operand, axes, "reduce_max"))


def reduce_min(operand: Any, axes: Sequence[int]) -> Any:
    return reduce_min_p.bind(operand, axes=_canonical_axes(operand, axes, "reduce_min"))


def reduce_prod(operand: Any, axes: Sequence[int]) -> Any:
    return reduce_prod_p.bind(operand, axes=_canonical_axes(operand, axes, "reduce_prod"))


def reduce_and(operand: Any, axes: Sequence[int]) -> Any:
    return reduce_and_p.bind(operand, axes=_canonical_axes(operand, axes, "reduce_and"))


def reduce_or(operand: Any, axes: Sequence[int]) -> Any:
    return reduce_or_p.bind(operand, axes=_canonical_axes(operand, axes, "reduce_or"))


def reduce_xor(operand: Any, axes: Sequence[int]) -> Any:
    """Bitwise XOR (logical for booleans) of operand's elements over `axes`.

    >>> reduce_xor(np.array([[1, 3], [5, 6]]), (0,))
    Array([4, 5], dtype=int64)
    """
    return reduce_xor_p.bind(operand, axes=_canonical_axes(operand, axes, "reduce_xor"))


def _canonical_axis(api: str, x: Any, axis: int) -> int:
    ndim = get_aval(x).ndim
    axis = int(axis)
    if not -ndim <= axis < max(ndim, 1) or ndim == 0:
        raise NumbaxValueError(
            f"lax.{api}: axis {axis} is out of bounds for an array of shape "
            f"{get_aval(x).shape}. Pass an axis in [-{ndim}, {ndim})."
        )
    return axis % ndim


def argmax(operand: Any, axis: int, index_dtype: Any) -> Any:
    """Index of the largest element along `axis` (first one on ties; the first NaN wins)."""
    index_dtype = dtypes.canonicalize_dtype(index_dtype, context="lax.argmax")
    return argmax_p.bind(operand, axes=(_canonical_axis("argmax", operand, axis),),
                         index_dtype=index_dtype)


def argmin(operand: Any, axis: int, index_dtype: Any) -> Any:
    """Index of the smallest element along `axis` (first one on ties; the first NaN wins)."""
    index_dtype = dtypes.canonicalize_dtype(index_dtype, context="lax.argmin")
    return argmin_p.bind(operand, axes=(_canonical_axis("argmin", operand, axis),),
                         index_dtype=index_dtype)


def _cumulative_wrapper(prim: Primitive) -> Callable:
    def fn(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
        return prim.bind(operand, axis=_canonical_axis(prim.name, operand, axis),
                         reverse=bool(reverse))

    fn.__name__ = prim.name
    fn.__doc__ = (f"lax.{prim.name}: inclusive {prim.name[3:]} scan along `axis` "
                  "(from the end if reverse).")
    return fn


cumsum = _cumulative_wrapper(cumsum_p)
cumprod = _cumulative_wrapper(cumprod_p)
cummax = _cumulative_wrapper(cummax_p)
cummin = _cumulative_wrapper(cummin_p)
cumlogsumexp = _cumulative_wrapper(cumlogsumexp_p)
