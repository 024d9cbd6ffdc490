"""dot_general: contraction with batch dimensions, the one primitive that becomes a BLAS call."""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax._src import core, dtypes
from numbax._src.core import Primitive, ShapedArray, get_aval
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError, ShapeDtypeError
from numbax._src.interpreters import ad, batching
from numbax._src.lax import elementwise as ew
from numbax._src.lax import params, shape_ops

dot_general_p = Primitive("dot_general")


def _free_dims(ndim: int, contract: Sequence[int], batch: Sequence[int]) -> list[int]:
    removed = set(contract) | set(batch)
    return [i for i in range(ndim) if i not in removed]


def _check_dims(lhs: ShapedArray, rhs: ShapedArray, dimension_numbers) -> None:
    (lc, rc), (lb, rb) = dimension_numbers
    where = (f"lhs has shape {lhs.shape} and rhs has shape {rhs.shape} with contracting "
             f"dims {lc} and {rc}, batch dims {lb} and {rb}")
    for side, dims, aval in (("lhs", (*lc, *lb), lhs), ("rhs", (*rc, *rb), rhs)):
        if any(not 0 <= d < aval.ndim for d in dims) or len(set(dims)) != len(dims):
            raise NumbaxValueError(
                f"lax.dot_general: {where}; the {side} dims must be distinct and in "
                f"[0, {aval.ndim}). Fix dimension_numbers."
            )
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise NumbaxValueError(
            f"lax.dot_general: {where}; lhs and rhs need as many contracting (and batch) "
            "dims as each other."
        )
    for kind, ld, rd in (("contracting", lc, rc), ("batch", lb, rb)):
        if tuple(lhs.shape[d] for d in ld) != tuple(rhs.shape[d] for d in rd):
            raise ShapeDtypeError(
                f"lax.dot_general: {where}; the {kind} dimensions have sizes "
                f"{tuple(lhs.shape[d] for d in ld)} and {tuple(rhs.shape[d] for d in rd)}, "
                "expected equal sizes. Transpose or reshape an operand so they match."
            )


def _dot_general_abstract_eval(lhs: ShapedArray, rhs: ShapedArray, *, dimension_numbers,
                               precision, preferred_element_type) -> list[ShapedArray]:
    for i, a in enumerate((lhs, rhs)):
        ew._check_kind("dot_general", a, "biufc", i)
    if lhs.dtype != rhs.dtype:
        raise ShapeDtypeError(
            f"lax.dot_general: lhs has dtype {lhs.dtype} and rhs has dtype {rhs.dtype}, "
            "expected equal dtypes. Convert one with lax.convert_element_type, or use "
            "numbax.numpy.dot/matmul, which promote."
        )
    _check_dims(lhs, rhs, dimension_numbers)
    (lc, rc), (lb, rb) = dimension_numbers
    shape = (*[lhs.shape[d] for d in lb],
             *[lhs.shape[d] for d in _free_dims(lhs.ndim, lc, lb)],
             *[rhs.shape[d] for d in _free_dims(rhs.ndim, rc, rb)])
    dtype = lhs.dtype if preferred_element_type is None else preferred_element_type
    weak = lhs.weak_type and rhs.weak_type and preferred_element_type is None
    return [ShapedArray(shape, dtype, weak)]


def _dot_general_impl(lhs, rhs, *, dimension_numbers, precision, preferred_element_type):
    (lc, rc), (lb, _) = dimension_numbers
    if preferred_element_type is not None:
        lhs = lhs.astype(preferred_element_type, copy=False)
        rhs = rhs.astype(preferred_element_type, copy=False)
    if not lb and lhs.ndim <= 2 and rhs.ndim <= 2 and tuple(lc) == (lhs.ndim - 1,) \
            and tuple(rc) == (0,):
        return [np.matmul(lhs, rhs)]  # (x @ y as numpy writes it: the same bits, ~5 us less)
    return [_as_batched_matmul(lhs, rhs, dimension_numbers)]


def _as_batched_matmul(lhs, rhs, dimension_numbers):
    """Any contraction as one (batch, free, contract) @ (batch, contract, free) np.matmul, so
    BLAS does the work."""
    (lc, rc), (lb, rb) = dimension_numbers
    lf, rf = _free_dims(lhs.ndim, lc, lb), _free_dims(rhs.ndim, rc, rb)
    batch_shape = [lhs.shape[d] for d in lb]
    lf_shape, rf_shape = [lhs.shape[d] for d in lf], [rhs.shape[d] for d in rf]
    # (math.prod: np.prod's reduction machinery took ~16 us of a small eager product's ~100)
    b, m, n = math.prod(batch_shape), math.prod(lf_shape), math.prod(rf_shape)
    k = math.prod(lhs.shape[d] for d in lc)
    a = np.transpose(lhs, (*lb, *lf, *lc)).reshape(b, m, k)
    c = np.transpose(rhs, (*rb, *rc, *rf)).reshape(b, k, n)
    return np.matmul(a, c).reshape((*batch_shape, *lf_shape, *rf_shape))


def _ranges_like(*xs: Sequence[int]) -> list[list[int]]:
    start, out = 0, []
    for x in xs:
        out.append(list(range(start, start + len(x))))
        start += len(x)
    return out


def _transpose_lhs(ct, x_aval: ShapedArray, y, *, dimension_numbers, precision,
                   preferred_element_type, swap_ans: bool = False):
    """Cotangent of the lhs: contract ct with y over y's free dims, then permute (JAX's rule)."""
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    y_ndim = get_aval(y).ndim
    x_kept = _free_dims(x_aval.ndim, x_contract, x_batch)
    y_kept = _free_dims(y_ndim, y_contract, y_batch)
    if swap_ans:
        ans_batch, ans_y, _ = _ranges_like(x_batch, y_kept, x_kept)
    else:
        ans_batch, _, ans_y = _ranges_like(x_batch, x_kept, y_kept)
    dims = ((tuple(ans_y), tuple(y_kept)), (tuple(ans_batch), tuple(y_batch)))
    x_contract_sorted_by_y = [x_contract[i] for i in np.argsort(y_contract)]
    out_axes = np.argsort([*x_batch, *x_kept, *x_contract_sorted_by_y])
    y_dtype = get_aval(y).dtype
    if get_aval(ct).dtype != y_dtype:
        ct = ew.convert_element_type(ct, y_dtype)
    x_bar = dot_general(ct, y, dims, precision=precision)
    x_bar = shape_ops.transpose(x_bar, tuple(int(a) for a in out_axes))
    if get_aval(x_bar).dtype != x_aval.dtype:
        x_bar = ew.convert_element_type(x_bar, x_aval.dtype)
    return x_bar


def _transpose_rhs(ct, x, y_aval: ShapedArray, *, dimension_numbers, precision,
                   preferred_element_type):
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    swapped = ((y_contract, x_contract), (y_batch, x_batch))
    return _transpose_lhs(ct, y_aval, x, dimension_numbers=swapped, precision=precision,
                          preferred_element_type=preferred_element_type, swap_ans=True)


def _dot_general_transpose(cts, x, y, **params):
    (ct,) = cts
    if ad.is_undefined_primal(x):
        return [_transpose_lhs(ct, x.aval, y, **params), None]
    return [None, _transpose_rhs(ct, x, y.aval, **params)]


def _dot_general_jvp(primals, tangents, **params):
    x, y = primals
    tx, ty = tangents
    ans = dot_general_p.bind(x, y, **params)
    t_out: Any = ad.Zero(ad.tangent_aval(get_aval(ans)))
    if type(tx) is not ad.Zero:
        t_out = ad.add_tangents(t_out, dot_general_p.bind(tx, y, **params))
    if type(ty) is not ad.Zero:
        t_out = ad.add_tangents(t_out, dot_general_p.bind(x, ty, **params))
    return [ans], [t_out]


def _shift_dims(dims: Sequence[int], at: int) -> tuple[int, ...]:
    return tuple(d + 1 if d >= at else d for d in dims)


def _dot_general_batch(axis_size, vals, dims, *, dimension_numbers, precision,
                       preferred_element_type):
    """Both batched: the vmapped axis becomes a leading batch dim. One side batched: it stays
    where it is as a free dim. Either way the result is one dot_general (a matmul)."""
    (lhs, rhs), (lbd, rbd) = vals, dims
    (lc, rc), (lb, rb) = dimension_numbers
    kw = dict(precision=precision, preferred_element_type=preferred_element_type)
    if lbd is not None and rbd is not None:
        lhs, rhs = batching.moveaxis(lhs, lbd, 0), batching.moveaxis(rhs, rbd, 0)
        new = ((_shift_dims(lc, 0), _shift_dims(rc, 0)),
               ((0, *_shift_dims(lb, 0)), (0, *_shift_dims(rb, 0))))
        return [dot_general_p.bind(lhs, rhs, dimension_numbers=new, **kw)], [0]
    if lbd is not None:
        new = ((_shift_dims(lc, lbd), rc), (_shift_dims(lb, lbd), rb))
        ndim = get_aval(lhs).ndim
        free = _free_dims(ndim, new[0][0], new[1][0])
        out_dim = len(lb) + free.index(lbd)
    else:
        new = ((lc, _shift_dims(rc, rbd)), (lb, _shift_dims(rb, rbd)))
        lhs_free = _free_dims(get_aval(lhs).ndim, lc, lb)
        free = _free_dims(get_aval(rhs).ndim, new[0][1], new[1][1])
        out_dim = len(lb) + len(lhs_free) + free.index(rbd)
    return [dot_general_p.bind(lhs, rhs, dimension_numbers=new, **kw)], [out_dim]


core.abstract_eval_rules[dot_general_p] = _dot_general_abstract_eval
core.avals_only.add(dot_general_p)
core.impl_rules[dot_general_p] = _dot_general_impl
ad.jvp_rules[dot_general_p] = _dot_general_jvp
ad.transpose_rules[dot_general_p] = _dot_general_transpose
batching.batch_rules[dot_general_p] = _dot_general_batch


def _canonical_dimension_numbers(dimension_numbers: Any) -> tuple:
    try:
        (lc, rc), (lb, rb) = dimension_numbers
        return ((tuple(int(d) for d in lc), tuple(int(d) for d in rc)),
                (tuple(int(d) for d in lb), tuple(int(d) for d in rb)))
    except (TypeError, ValueError) as err:
        raise NumbaxTypeError(
            f"lax.dot_general: dimension_numbers has {dimension_numbers!r}, expected "
            "(((lhs_contracting...), (rhs_contracting...)), ((lhs_batch...), (rhs_batch...)))."
        ) from err


def dot_general(lhs: Any, rhs: Any, dimension_numbers: Any, precision: Any = None,
                preferred_element_type: Any = None, *, out_sharding: Any = None) -> Any:
    """General contraction: output dims are batch, then lhs free, then rhs free (as JAX).

    Args:
      lhs, rhs: arrays of equal dtype.
      dimension_numbers: ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch)).
      precision: None, a lax.Precision or its string (or a pair of them), or a dot algorithm
        (lax.DotAlgorithmPreset or its name). As on JAX's CPU backend, Precision values do
        not change float32 results; the presets CPU supports round the operands to their
        types (F16_F16_F16 computes in float16, F64_F64_F64 in float64) and the others raise
        ValueError.
      preferred_element_type: the output (and accumulation) dtype.
      out_sharding: accepted for JAX compatibility; numbax arrays live on one device.

    Returns:
      The contraction.

    >>> import numpy as np
    >>> dot_general(np.ones((2, 3)), np.ones((3,)), (((1,), (0,)), ((), ())))
    Array([3., 3.], dtype=float64)
    """
    precision = params.canonicalize_precision(precision)
    if preferred_element_type is not None:
        preferred_element_type = dtypes.canonicalize_dtype(
            preferred_element_type, context="lax.dot_general")
    dims = _canonical_dimension_numbers(dimension_numbers)
    if isinstance(precision, (params.DotAlgorithm, params.DotAlgorithmPreset)):
        return _dot_with_algorithm(lhs, rhs, dims, precision, preferred_element_type)
    return dot_general_p.bind(lhs, rhs, dimension_numbers=dims, precision=precision,
                              preferred_element_type=preferred_element_type)


def _dot_with_algorithm(lhs, rhs, dims, algorithm, preferred_element_type):
    """A dot algorithm as XLA's CPU backend runs it: operands rounded to the algorithm's
    type and the product taken there, then cast to the output dtype."""
    if not (isinstance(algorithm, params.DotAlgorithmPreset)
            and algorithm.name in params.CPU_PRESETS):
        raise NumbaxValueError(
            f"The precision '{algorithm}' is not supported by dot_general on CPU. CPU runs "
            f"the presets {sorted(params.CPU_PRESETS)}.")
    out_dtype = preferred_element_type or dtypes.result_type(
        (get_aval(lhs).dtype, False), (get_aval(rhs).dtype, False))[0]
    compute = {"F16_F16_F16": np.dtype(np.float16),
               "F64_F64_F64": np.dtype(np.float64)}.get(algorithm.name)
    if compute is None or kind_of(get_aval(lhs).dtype) not in "fc":
        return dot_general_p.bind(lhs, rhs, dimension_numbers=dims, precision=algorithm,
                                  preferred_element_type=preferred_element_type)
    out = dot_general_p.bind(ew.convert_element_type(lhs, compute),
                             ew.convert_element_type(rhs, compute), dimension_numbers=dims,
                             precision=algorithm, preferred_element_type=None)
    return ew.convert_element_type(out, out_dtype)


def dot(lhs: Any, rhs: Any, *, dimension_numbers: Any = None, precision: Any = None,
        preferred_element_type: Any = None, out_sharding: Any = None) -> Any:
    """Dot product: without dimension_numbers, the vector/matrix product of rank-1 or -2
    operands (last dim of lhs with first of rhs); with them, lax.dot_general.

    >>> dot(np.ones((2, 3)), np.ones(3))
    Array([3., 3.], dtype=float64)
    """
    la, ra = get_aval(lhs), get_aval(rhs)
    if dimension_numbers is None:
        if not (1 <= la.ndim <= 2 and 1 <= ra.ndim <= 2 and la.shape[-1] == ra.shape[0]):
            raise NumbaxValueError(
                "jax.lax.dot: dimension_numbers must be specified when not performing simple "
                "un-batched matrix-matrix, matrix-vector, or vector-vector products; got "
                f"lhs_shape={la.shape} rhs_shape={ra.shape}")
        dimension_numbers = (((la.ndim - 1,), (0,)), ((), ()))
    return dot_general(lhs, rhs, dimension_numbers, precision, preferred_element_type)


def batch_matmul(lhs: Any, rhs: Any, precision: Any = None) -> Any:
    """Batched matrix product over all leading dims: (..., m, k) @ (..., k, n).

    >>> batch_matmul(np.ones((4, 2, 3)), np.ones((4, 3, 5))).shape
    (4, 2, 5)
    """
    la, ra = get_aval(lhs), get_aval(rhs)
    if la.ndim < 2 or la.ndim != ra.ndim:
        raise NumbaxValueError(
            f"lax.batch_matmul: lhs has shape {la.shape} and rhs has shape {ra.shape}, "
            "expected equal ranks of at least 2."
        )
    batch = tuple(range(la.ndim - 2))
    dims = (((la.ndim - 1,), (ra.ndim - 2,)), (batch, batch))
    return dot_general(lhs, rhs, dims, precision)
