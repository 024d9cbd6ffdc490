"""Reduction primitives over a tuple of axes: reduce_sum, reduce_max, reduce_min."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from numbax._src import core
from numbax._src.core import Primitive, ShapedArray, get_aval
from numbax._src.errors import NumbaxValueError
from numbax._src.interpreters import ad, batching
from numbax._src.lax import elementwise as ew
from numbax._src.lax import shape_ops


def _reduce_abstract_eval(name: str):
    def rule(x: ShapedArray, *, axes) -> list[ShapedArray]:
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


def reduction(name: str, impl: Callable) -> Primitive:
    prim = Primitive(name)
    core.abstract_eval_rules[prim] = _reduce_abstract_eval(name)
    core.impl_rules[prim] = lambda x, *, axes: [np.asarray(impl(x, axis=axes))]
    batching.batch_rules[prim] = _reduce_batch(prim)
    return prim


reduce_sum_p = reduction("reduce_sum", np.sum)
reduce_max_p = reduction("reduce_max", np.max)
reduce_min_p = reduction("reduce_min", np.min)


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


def _canonical_axes(x: Any, axes: Sequence[int]) -> tuple[int, ...]:
    ndim = get_aval(x).ndim
    return tuple(sorted({int(a) % ndim if ndim else int(a) for a in axes}))


def reduce_sum(operand: Any, axes: Sequence[int]) -> Any:
    return reduce_sum_p.bind(operand, axes=_canonical_axes(operand, axes))


def reduce_max(operand: Any, axes: Sequence[int]) -> Any:
    return reduce_max_p.bind(operand, axes=_canonical_axes(operand, axes))


def reduce_min(operand: Any, axes: Sequence[int]) -> Any:
    return reduce_min_p.bind(operand, axes=_canonical_axes(operand, axes))
