"""scaled_dot: a dot_general of block-scaled operands, (lhs * lhs_scale) @ (rhs * rhs_scale),
each scale entry covering a block of consecutive elements along the contracting dimensions
(the microscaling formats' layout). As JAX's XLA fallback computes it, operands and scales
are cast to bfloat16 and multiplied there, and the product accumulates in
preferred_element_type (bfloat16 by default). It stands alone because it is one primitive
(JAX's `scaled_dot`) whose compiled form is that composition.

Unlike JAX: numbax has no float8 types, so the scales JAX defaults to (float8_e8m0fnu ones)
are bfloat16 ones here, the same value."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax._src import core, dtypes
from numbax._src.core import Primitive, ShapedArray, get_aval
from numbax._src.errors import NumbaxTypeError
from numbax._src.interpreters import ad, batching
from numbax._src.interpreters import partial_eval as pe
from numbax._src.lax import dot as ldot
from numbax._src.lax import elementwise as ew
from numbax._src.lax import shape_ops

scaled_dot_p = Primitive("scaled_dot")


def _check_scale(side: str, operand: ShapedArray, scale: ShapedArray,
                 contracting: Sequence[int]) -> None:
    for i, size in enumerate(operand.shape):
        if i in contracting:
            if size % scale.shape[i] != 0:
                raise NumbaxTypeError(
                    f"{side} contracting dim {i} of size {size} must be divisible by its "
                    f"scale's dim size {scale.shape[i]}.")
            if size // scale.shape[i] < 2:
                raise NumbaxTypeError(
                    f"The ratio of {side} contracting dim {i} to its scale's dim size "
                    f"({size // scale.shape[i]}) must be at least 2.")
        elif scale.shape[i] != size:
            raise NumbaxTypeError(
                f"{side} dim {i} of size {size} does not match scale dim size "
                f"{scale.shape[i]}.")


def _scaled_dot_abstract_eval(lhs, rhs, lhs_scale, rhs_scale, *, dimension_numbers,
                              preferred_element_type) -> list:
    """JAX's checks (TypeError, in its words), then dot_general's output shape."""
    (lc, rc), (lb, rb) = dimension_numbers
    ranks = (lhs.ndim, rhs.ndim, lhs_scale.ndim, rhs_scale.ndim)
    if len(set(ranks)) != 1:
        raise NumbaxTypeError(
            f"All input tensors must have the same rank. Got lhs rank: {lhs.ndim} rhs rank: "
            f"{rhs.ndim} lhs_scale rank: {lhs_scale.ndim} rhs_scale rank: {rhs_scale.ndim}.")
    if len(lb) != len(rb):
        raise NumbaxTypeError("LHS and RHS must have the same number of batch dimensions, "
                              f"got {len(lb)} and {len(rb)}.")
    if len(lc) != len(rc):
        raise NumbaxTypeError("LHS and RHS must have the same number of contracting "
                              f"dimensions, got {len(lc)} and {len(rc)}.")
    for i, j in zip(lb, rb, strict=True):
        if len({lhs.shape[i], rhs.shape[j], lhs_scale.shape[i], rhs_scale.shape[j]}) != 1:
            raise NumbaxTypeError("All input tensors must have the same batch dimension size "
                                  f"for batch dims ({i}, {j}).")
    for i, j in zip(lc, rc, strict=True):
        if lhs.shape[i] != rhs.shape[j]:
            raise NumbaxTypeError(
                f"LHS contracting dim {i} of size {lhs.shape[i]} does not match RHS "
                f"contracting dim {j} of size {rhs.shape[j]}.")
    _check_scale("LHS", lhs, lhs_scale, lc)
    _check_scale("RHS", rhs, rhs_scale, rc)
    lhs_kept = [d for i, d in enumerate(lhs.shape) if i not in lc and i not in lb]
    rhs_kept = [d for i, d in enumerate(rhs.shape) if i not in rc and i not in rb]
    shape = tuple([lhs.shape[i] for i in lb] + lhs_kept + rhs_kept)
    return [ShapedArray(shape, preferred_element_type)]


def _scaled(operand: Any, scale: Any, contracting: Sequence[int]) -> Any:
    """operand * scale in bfloat16, each scale entry repeated over its block."""
    shape = get_aval(operand).shape
    for i in contracting:
        n = get_aval(scale).shape[i]
        if n != shape[i]:
            blocked = list(get_aval(scale).shape)
            blocked.insert(i + 1, shape[i] // n)
            scale = shape_ops.broadcast_in_dim(
                scale, tuple(blocked), tuple(d for d in range(len(blocked)) if d != i + 1))
            blocked[i:i + 2] = [shape[i]]
            scale = shape_ops.reshape(scale, tuple(blocked))
    return ew.mul(ew.convert_element_type(operand, dtypes.bfloat16),
                  ew.convert_element_type(scale, dtypes.bfloat16))


def _scaled_dot_composed(lhs, rhs, lhs_scale, rhs_scale, *, dimension_numbers,
                         preferred_element_type) -> list:
    """scaled_dot as JAX's XLA fallback computes it (implementation and compiled form)."""
    (lc, rc), _ = dimension_numbers
    return [ldot.dot_general(_scaled(lhs, lhs_scale, lc), _scaled(rhs, rhs_scale, rc),
                             dimension_numbers,
                             preferred_element_type=preferred_element_type)]


def _scaled_dot_jvp(primals, tangents, **params):
    raise NotImplementedError("Differentiation rule for 'scaled_dot' not implemented")


def _scaled_dot_batch(axis_size, vals, dims, *, dimension_numbers, preferred_element_type):
    """A new leading batch dimension on all four operands."""
    vals = [batching.bdim_at_front(x, d, axis_size) for x, d in zip(vals, dims, strict=True)]
    (lc, rc), (lb, rb) = dimension_numbers
    up = lambda ds: tuple(d + 1 for d in ds)  # noqa: E731
    dims_new = ((up(lc), up(rc)), ((0, *up(lb)), (0, *up(rb))))
    return [scaled_dot_p.bind(*vals, dimension_numbers=dims_new,
                              preferred_element_type=preferred_element_type)], [0]


def expand_scaled_dot(eqn: core.JaxprEqn) -> core.ClosedJaxpr:
    """The equation as its composition (the compiler's expansion)."""
    return pe.trace_to_closed_jaxpr(lambda *xs: _scaled_dot_composed(*xs, **eqn.params),
                                    [x.aval for x in eqn.invars])


core.abstract_eval_rules[scaled_dot_p] = _scaled_dot_abstract_eval
# numpy out, so that eager dispatch rounds it to the output dtype (a bfloat16 param reaches
# the impl as float32, dispatch.py)
core.impl_rules[scaled_dot_p] = lambda *xs, **params: [
    core.to_numpy(_scaled_dot_composed(*xs, **params)[0])]
ad.jvp_rules[scaled_dot_p] = _scaled_dot_jvp
batching.batch_rules[scaled_dot_p] = _scaled_dot_batch


def _unit_scale(operand: Any, contracting: Sequence[int]) -> Any:
    shape = tuple(1 if i in contracting else d for i, d in enumerate(get_aval(operand).shape))
    return np.ones(shape, dtypes.bfloat16)


def scaled_dot(lhs: Any, rhs: Any, *, lhs_scale: Any = None, rhs_scale: Any = None,
               dimension_numbers: Any = None, preferred_element_type: Any = None) -> Any:
    """(lhs * lhs_scale) @ (rhs * rhs_scale), a dot_general of block-scaled operands: along a
    contracting dimension each scale entry covers size // scale_size consecutive elements
    (at least 2); other dimensions of a scale match its operand's.

    Args:
      lhs, rhs: the operands, of equal rank (at least 2).
      lhs_scale, rhs_scale: their scales, of the same rank (default: ones).
      dimension_numbers: ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch)); by
        default the last dimension of lhs with the second-to-last of rhs, the leading ones
        batch dimensions.
      preferred_element_type: the output and accumulation dtype (default bfloat16).

    Returns:
      The product, as dot_general lays it out (batch, lhs free, rhs free dimensions).

    Unlike JAX: numbax has no float8 types; the default scales are bfloat16 ones (the value
    of JAX's float8_e8m0fnu ones). As in JAX it is not differentiable.

    >>> import numpy as np
    >>> scaled_dot(np.ones((2, 4), np.float32), np.ones((4, 1), np.float32),
    ...            lhs_scale=np.array([[1.0, 2.0], [0.5, 1.0]], np.float32),
    ...            preferred_element_type=np.float32)
    Array([[6.],
           [3.]], dtype=float32)
    """
    ndim = get_aval(lhs).ndim
    if dimension_numbers is None:
        if ndim < 2:
            raise NumbaxTypeError("scaled_dot does not support 0-rank and 1-rank operands.")
        batch = tuple(range(ndim - 2))
        dimension_numbers = (((ndim - 1,), (ndim - 2,)), (batch, batch))
    (lc, rc), (lb, rb) = dimension_numbers
    dimension_numbers = ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb)))
    if lhs_scale is None:
        lhs_scale = _unit_scale(lhs, dimension_numbers[0][0])
    if rhs_scale is None:
        rhs_scale = _unit_scale(rhs, dimension_numbers[0][1])
    element_type = dtypes.canonicalize_dtype(
        dtypes.bfloat16 if preferred_element_type is None else preferred_element_type,
        context="scaled_dot")
    return scaled_dot_p.bind(lhs, rhs, lhs_scale, rhs_scale, dimension_numbers=dimension_numbers,
                             preferred_element_type=element_type)
