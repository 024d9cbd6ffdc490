"""conv_general_dilated: the one convolution primitive (any layout, padding, dilation, feature
and batch groups), its gradient convolutions and batching, and the dimension-number helpers."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from numbax._src import core
from numbax._src.core import Primitive, ShapedArray, get_aval
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import ad, batching
from numbax._src.lax import conv_numpy, shape_ops
from numbax._src.lax import elementwise as ew
from numbax._src.lax.conv_numpy import dilate_shape, stride_dim
from numbax._src.lax.creation import padtype_to_pads


class ConvDimensionNumbers(NamedTuple):
    """Where the batch, feature and spatial dimensions of a convolution live.

    Args:
      lhs_spec: (batch dimension, feature dimension, spatial dimensions...) of the input.
      rhs_spec: (out feature dimension, in feature dimension, spatial dimensions...) of the
        kernel.
      out_spec: (batch dimension, feature dimension, spatial dimensions...) of the output.
    """

    lhs_spec: Sequence[int]
    rhs_spec: Sequence[int]
    out_spec: Sequence[int]


ConvGeneralDilatedDimensionNumbers = tuple[str, str, str] | ConvDimensionNumbers | None

# ----------------------------------------------------------------------------- shape helpers


def conv_general_permutations(dimension_numbers: tuple[str, str, str]
                              ) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """The (lhs, rhs, out) permutations to canonical (N, C, spatial...) / (O, I, spatial...)
    order for string dimension numbers; spatial dims follow their order in the rhs string."""
    try:
        lhs_spec, rhs_spec, out_spec = dimension_numbers
    except (TypeError, ValueError):
        raise NumbaxTypeError(
            f"lax.conv_general_permutations: dimension_numbers has {dimension_numbers!r}, "
            "expected three strings such as ('NHWC', 'HWIO', 'NHWC').") from None
    pairs = (("N", "C"), ("O", "I"), ("N", "C"))
    for i, (spec, (a, b)) in enumerate(zip(dimension_numbers, pairs)):
        if not isinstance(spec, str) or spec.count(a) != 1 or spec.count(b) != 1:
            raise NumbaxTypeError(
                f"lax.conv: dimension_numbers[{i}] has {spec!r}, expected a string holding "
                f"'{a}' and '{b}' exactly once (e.g. 'NCHW', 'OIHW').")
        if len(set(spec)) != len(spec):
            raise NumbaxTypeError(
                f"lax.conv: dimension_numbers[{i}] has {spec!r}, which repeats a character; "
                "each dimension needs its own letter.")
    spatial = [set(s) - set(p) for s, p in zip(dimension_numbers, pairs)]
    if not spatial[0] == spatial[1] == spatial[2]:
        raise NumbaxTypeError(
            f"lax.conv: dimension_numbers has {tuple(dimension_numbers)!r}, expected the same "
            "spatial letters in lhs, rhs and out.")

    def perm(spec: str, pair: tuple[str, str]) -> tuple[int, ...]:
        rest = [i for i, c in enumerate(spec) if c not in pair]
        rest.sort(key=lambda i: rhs_spec.index(spec[i]))
        return (spec.index(pair[0]), spec.index(pair[1]), *rest)

    return perm(lhs_spec, pairs[0]), perm(rhs_spec, pairs[1]), perm(out_spec, pairs[2])


def conv_dimension_numbers(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                           dimension_numbers: Any) -> ConvDimensionNumbers:
    """dimension_numbers (None, three strings, or ConvDimensionNumbers) in canonical form.

    Args:
      lhs_shape: the input's shape.
      rhs_shape: the kernel's shape.
      dimension_numbers: None (NCHW / OIHW / NCHW order), a tuple of three strings, or a
        ConvDimensionNumbers.

    Returns:
      A ConvDimensionNumbers of integer tuples.

    >>> conv_dimension_numbers((1, 5, 5, 3), (3, 3, 3, 8), ("NHWC", "HWIO", "NHWC"))
    ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2))
    """
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return ConvDimensionNumbers(*(tuple(int(d) for d in s) for s in dimension_numbers))
    if len(lhs_shape) != len(rhs_shape):
        raise NumbaxTypeError(
            f"lax.conv: lhs has rank {len(lhs_shape)} and rhs has rank {len(rhs_shape)}, "
            "expected equal ranks (n + 2 for n spatial dimensions).")
    if dimension_numbers is None:
        iota = tuple(range(len(lhs_shape)))
        return ConvDimensionNumbers(iota, iota, iota)
    if not isinstance(dimension_numbers, (tuple, list)) or len(dimension_numbers) != 3:
        raise NumbaxTypeError(
            f"lax.conv: dimension_numbers has {dimension_numbers!r}, expected None, a "
            "ConvDimensionNumbers, or three strings such as ('NHWC', 'HWIO', 'NHWC').")
    for i, spec in enumerate(dimension_numbers):
        if not isinstance(spec, str):
            raise NumbaxTypeError(
                f"lax.conv: dimension_numbers[{i}] has {spec!r}, expected a string such as "
                "'NHWC'.")
        if len(spec) != len(lhs_shape):
            raise NumbaxTypeError(
                f"lax.conv: dimension_numbers[{i}] has {spec!r} of length {len(spec)}, "
                f"expected length {len(lhs_shape)} (the rank of lhs {tuple(lhs_shape)} and "
                f"rhs {tuple(rhs_shape)}).")
    return ConvDimensionNumbers(*conv_general_permutations(tuple(dimension_numbers)))


def conv_shape_tuple(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                     strides: Sequence[int], pads: Any,
                     batch_group_count: int = 1) -> tuple[int, ...]:
    """The output shape of a convolution whose operands are in canonical (N, C, ...) and
    (O, I, ...) order; pads is a padding string or (low, high) pairs."""
    if isinstance(pads, str):
        pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
    if len(pads) != len(lhs_shape) - 2:
        raise NumbaxTypeError(
            f"lax.conv: padding has {len(pads)} (low, high) pairs, expected "
            f"{len(lhs_shape) - 2} (one per spatial dimension of lhs {tuple(lhs_shape)}).")
    padded = [int(d) + int(lo) + int(hi) for d, (lo, hi) in zip(lhs_shape[2:], pads)]
    if any(p < 0 for p in padded):
        raise NumbaxValueError(
            f"lax.conv: padding {tuple(pads)} removes more than the whole spatial dimensions "
            f"{tuple(lhs_shape[2:])}; negative padding may crop at most each dimension's size.")
    space = tuple(stride_dim(p, int(k), int(s))
                  for p, k, s in zip(padded, rhs_shape[2:], strides, strict=True))
    return (int(lhs_shape[0]) // int(batch_group_count), int(rhs_shape[0]), *space)


def conv_general_shape_tuple(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                             window_strides: Sequence[int], padding: Any,
                             dimension_numbers: Any) -> tuple[int, ...]:
    """The output shape of conv_general_dilated (no dilation) for string dimension numbers."""
    lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
    out = conv_shape_tuple(np.take(lhs_shape, lhs_perm), np.take(rhs_shape, rhs_perm),
                           window_strides, padding)
    return tuple(int(d) for d in np.take(out, np.argsort(out_perm)))


def _conv_transpose_padding(k: int, s: int, padding: Any) -> tuple[int, int]:
    """(before, after) padding of the fractionally strided conv behind conv_transpose, for a
    kernel of (dilated) size k, stride s and the forward conv's padding."""
    if padding == "SAME":
        total = k + s - 2
        before = k - 1 if s > k - 1 else -(-total // 2)
    elif padding == "VALID":
        total = k + s - 2 + max(k - s, 0)
        before = k - 1
    elif isinstance(padding, tuple):
        pads = tuple(k - p - 1 for p in padding)
        before, total = pads[0], sum(pads)
    else:
        raise NumbaxValueError(
            f"lax.conv_transpose: padding has {padding!r}, expected 'SAME', 'VALID' or "
            "(low, high) pairs.")
    return before, total - before


def conv_transpose_shape_tuple(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                               window_strides: Sequence[int], padding: Any,
                               dimension_numbers: Any) -> tuple[int, ...]:
    """The output shape of conv_transpose for string dimension numbers."""
    lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
    lhs_t = [int(d) for d in np.take(lhs_shape, lhs_perm)]
    rhs_t = [int(d) for d in np.take(rhs_shape, rhs_perm)]
    if isinstance(padding, str):
        padding = [_conv_transpose_padding(k, s, padding)
                   for k, s in zip(rhs_t[2:], window_strides)]
    space = [(i - 1) * s - k + 2 + int(sum(p))
             for i, k, s, p in zip(lhs_t[2:], rhs_t[2:], window_strides, padding)]
    out = (lhs_t[0], rhs_t[0], *space)
    return tuple(int(d) for d in np.take(out, np.argsort(out_perm)))


# ----------------------------------------------------------------------------- conv_general_dilated

conv_general_dilated_p = Primitive("conv_general_dilated")


def _check_preferred(api: str, dtype: np.dtype, preferred: np.dtype) -> None:
    """JAX's rule: same kind (integers may widen to floats), same signedness, not narrower."""
    kind, preferred_kind = kind_of(dtype), kind_of(preferred)
    ok_kind = (kind in "iu" and preferred_kind == "f") or (
        kind == preferred_kind or (kind == "u" and preferred_kind == "u"))
    if not ok_kind or (kind == "i" and preferred_kind == "u") or (
            preferred.itemsize < dtype.itemsize):
        raise NumbaxTypeError(
            f"lax.{api}: preferred_element_type has {preferred}, incompatible with operands of "
            f"dtype {dtype}; expected a dtype of the same kind (integers may become floats), "
            "the same signedness, and at least as wide.")


def _conv_check(lhs: ShapedArray, rhs: ShapedArray, window_strides, padding, lhs_dilation,
                rhs_dilation, dnums, feature_group_count, batch_group_count) -> None:
    """Every shape condition of conv_general_dilated, each error naming the argument."""
    api = "lax.conv_general_dilated"
    if lhs.ndim != rhs.ndim or lhs.ndim < 2:
        raise NumbaxValueError(
            f"{api}: lhs has shape {lhs.shape} and rhs has shape {rhs.shape}, expected equal "
            "ranks of at least 2 (batch, feature, spatial dims...).")
    nsp = lhs.ndim - 2
    for name, spec in zip(("lhs_spec", "rhs_spec", "out_spec"), dnums):
        if sorted(spec) != list(range(lhs.ndim)):
            raise NumbaxValueError(
                f"{api}: dimension_numbers.{name} has {tuple(spec)}, expected a permutation "
                f"of range({lhs.ndim}).")
    for name, value in (("window_strides", window_strides), ("lhs_dilation", lhs_dilation),
                        ("rhs_dilation", rhs_dilation), ("padding", padding)):
        if len(value) != nsp:
            raise NumbaxValueError(
                f"{api}: {name} has {len(value)} entries ({tuple(value)}), expected {nsp} "
                "(one per spatial dimension).")
    for name, value in (("window_strides", window_strides), ("lhs_dilation", lhs_dilation),
                        ("rhs_dilation", rhs_dilation)):
        if any(v < 1 for v in value):
            raise NumbaxValueError(f"{api}: {name} has {tuple(value)}, expected positive ints.")
    lhs_spec, rhs_spec, _ = dnums
    channels, in_features = lhs.shape[lhs_spec[1]], rhs.shape[rhs_spec[1]]
    out_features, batch = rhs.shape[rhs_spec[0]], lhs.shape[lhs_spec[0]]
    for name, count in (("feature_group_count", feature_group_count),
                        ("batch_group_count", batch_group_count)):
        if count < 1:
            raise NumbaxValueError(f"{api}: {name} has {count}, expected a positive int.")
        if out_features % count:
            raise NumbaxValueError(
                f"{api}: rhs has {out_features} output features, expected a multiple of "
                f"{name}={count}.")
    if feature_group_count > 1 and batch_group_count > 1:
        raise NumbaxValueError(
            f"{api}: feature_group_count={feature_group_count} and batch_group_count="
            f"{batch_group_count}, expected at most one of them above 1.")
    if channels % feature_group_count or channels // feature_group_count != in_features:
        raise NumbaxValueError(
            f"{api}: lhs has {channels} features and rhs {in_features} input features with "
            f"feature_group_count={feature_group_count}, expected lhs features == rhs input "
            "features * feature_group_count.")
    if batch % batch_group_count:
        raise NumbaxValueError(
            f"{api}: lhs has batch size {batch}, expected a multiple of batch_group_count="
            f"{batch_group_count}.")


def _conv_general_dilated_abstract_eval(lhs: ShapedArray, rhs: ShapedArray, *, window_strides,
                                        padding, lhs_dilation, rhs_dilation,
                                        dimension_numbers, feature_group_count,
                                        batch_group_count, precision,
                                        preferred_element_type) -> list[ShapedArray]:
    for i, a in enumerate((lhs, rhs)):
        ew._check_kind("conv_general_dilated", a, "biufc", i)
    if lhs.dtype != rhs.dtype:
        raise NumbaxTypeError(
            f"lax.conv_general_dilated: lhs has dtype {lhs.dtype} and rhs has dtype "
            f"{rhs.dtype}, expected equal dtypes. Convert one with lax.convert_element_type.")
    _conv_check(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                dimension_numbers, feature_group_count, batch_group_count)
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    lhs_t = dilate_shape(np.take(lhs.shape, lhs_spec), (1, 1, *lhs_dilation))
    rhs_t = dilate_shape(np.take(rhs.shape, rhs_spec), (1, 1, *rhs_dilation))
    out_t = conv_shape_tuple(lhs_t, rhs_t, window_strides, padding, batch_group_count)
    shape = tuple(int(d) for d in np.take(out_t, np.argsort(out_spec)))
    if preferred_element_type is not None:
        _check_preferred("conv_general_dilated", lhs.dtype, np.dtype(preferred_element_type))
        return [ShapedArray(shape, preferred_element_type)]
    return [ShapedArray(shape, lhs.dtype, lhs.weak_type and rhs.weak_type)]


def _conv_general_dilated_impl(lhs, rhs, *, window_strides, padding, lhs_dilation,
                               rhs_dilation, dimension_numbers, feature_group_count,
                               batch_group_count, precision, preferred_element_type):
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    if preferred_element_type is not None:
        lhs = lhs.astype(preferred_element_type, copy=False)
        rhs = rhs.astype(preferred_element_type, copy=False)
    x = conv_numpy.dilate_and_pad(np.transpose(lhs, lhs_spec), lhs_dilation, padding)
    w = np.transpose(rhs, rhs_spec)
    out = conv_numpy.canonical_conv(x, w, window_strides, rhs_dilation, feature_group_count,
                                    batch_group_count)
    return [np.transpose(out, np.argsort(out_spec))]


def _swap_spec(spec: Sequence[int]) -> tuple[int, ...]:
    return (spec[1], spec[0], *spec[2:])


def conv_general_vjp_lhs_padding(in_shape, window_dimensions, window_strides, out_shape,
                                 padding, lhs_dilation, rhs_dilation) -> tuple:
    """Padding of the convolution that maps an output cotangent back onto the input."""
    lhs_d = dilate_shape(in_shape, lhs_dilation)
    rhs_d = dilate_shape(window_dimensions, rhs_dilation)
    out_d = dilate_shape(out_shape, window_strides)
    before = [k - lo - 1 for k, (lo, _) in zip(rhs_d, padding)]
    after = [i + k - 1 - o - b for i, k, o, b in zip(lhs_d, rhs_d, out_d, before)]
    return tuple((int(b), int(a)) for b, a in zip(before, after))


def _conv_general_vjp_rhs_padding(in_shape, window_dimensions, window_strides, out_shape,
                                  padding, lhs_dilation, rhs_dilation) -> tuple:
    lhs_d = dilate_shape(in_shape, lhs_dilation)
    rhs_d = dilate_shape(window_dimensions, rhs_dilation)
    out_d = dilate_shape(out_shape, window_strides)
    return tuple((int(lo), int(o - i + k - lo - 1))
                 for i, k, o, (lo, _) in zip(lhs_d, rhs_d, out_d, padding))


def _split_axis(x: Any, axis: int, outer: int) -> Any:
    """Splits `axis` of x into (outer, size // outer), outer first."""
    shape = list(get_aval(x).shape)
    shape[axis:axis + 1] = [outer, shape[axis] // outer]
    return shape_ops.reshape(x, tuple(shape))


def _merge_axis_into(x: Any, src: int, dst: int) -> Any:
    """Moves axis `src` next to (before) axis `dst` (numbered without src) and merges them,
    src as the major part."""
    shape = get_aval(x).shape
    perm = [i for i in range(len(shape)) if i != src]
    perm.insert(dst, src)
    x = shape_ops.transpose(x, tuple(perm))
    new = [shape[i] for i in perm]
    new[dst:dst + 2] = [new[dst] * new[dst + 1]]
    return shape_ops.reshape(x, tuple(new))


def _conv_transpose_lhs(ct, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                        dimension_numbers, feature_group_count, batch_group_count, precision,
                        preferred_element_type):
    """Cotangent of lhs: the output cotangent convolved with the spatially reversed kernel
    (in and out features swapped), strides becoming lhs dilation."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    lhs_shape, rhs_shape = lhs.aval.shape, get_aval(rhs).shape
    ct_shape = get_aval(ct).shape
    groups = max(feature_group_count, batch_group_count)
    if groups > 1:  # move the group factor from the kernel's out features to its in features
        rhs = _split_axis(rhs, rhs_spec[0], groups)
        rhs = _merge_axis_into(rhs, rhs_spec[0], rhs_spec[1])
    pads = conv_general_vjp_lhs_padding(
        np.take(lhs_shape, lhs_spec[2:]), np.take(rhs_shape, rhs_spec[2:]), window_strides,
        np.take(ct_shape, out_spec[2:]), padding, lhs_dilation, rhs_dilation)
    rev_kernel = shape_ops.rev(rhs, tuple(rhs_spec[2:]))
    if get_aval(rev_kernel).dtype != get_aval(ct).dtype:
        rev_kernel = ew.convert_element_type(rev_kernel, get_aval(ct).dtype)
    dnums = ConvDimensionNumbers(out_spec, _swap_spec(rhs_spec), lhs_spec)
    out = conv_general_dilated_p.bind(
        ct, rev_kernel, window_strides=tuple(lhs_dilation), padding=pads,
        lhs_dilation=tuple(window_strides), rhs_dilation=tuple(rhs_dilation),
        dimension_numbers=dnums, feature_group_count=groups, batch_group_count=1,
        precision=precision, preferred_element_type=preferred_element_type)
    if batch_group_count > 1:  # the groups came out in the feature dim; they belong to batch
        out = _split_axis(out, lhs_spec[1], batch_group_count)
        out = _merge_axis_into(out, lhs_spec[1], lhs_spec[0])
    if get_aval(out).dtype != lhs.aval.dtype:
        out = ew.convert_element_type(out, lhs.aval.dtype)
    return out


def _conv_transpose_rhs(ct, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                        dimension_numbers, feature_group_count, batch_group_count, precision,
                        preferred_element_type):
    """Cotangent of rhs: lhs correlated with the output cotangent, batch and feature roles
    swapped, so feature groups become batch groups and vice versa."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    lhs_shape, rhs_shape = get_aval(lhs).shape, rhs.aval.shape
    ct_aval = get_aval(ct)
    if ct_aval.size == 0:
        return ad.zeros_like_aval(rhs.aval)
    pads = _conv_general_vjp_rhs_padding(
        np.take(lhs_shape, lhs_spec[2:]), np.take(rhs_shape, rhs_spec[2:]), window_strides,
        np.take(ct_aval.shape, out_spec[2:]), padding, lhs_dilation, rhs_dilation)
    if get_aval(lhs).dtype != ct_aval.dtype:
        lhs = ew.convert_element_type(lhs, ct_aval.dtype)
    dnums = ConvDimensionNumbers(_swap_spec(lhs_spec), _swap_spec(out_spec),
                                 _swap_spec(rhs_spec))
    out = conv_general_dilated_p.bind(
        lhs, ct, window_strides=tuple(rhs_dilation), padding=pads,
        lhs_dilation=tuple(lhs_dilation), rhs_dilation=tuple(window_strides),
        dimension_numbers=dnums, feature_group_count=batch_group_count,
        batch_group_count=feature_group_count, precision=precision,
        preferred_element_type=preferred_element_type)
    if get_aval(out).dtype != rhs.aval.dtype:
        out = ew.convert_element_type(out, rhs.aval.dtype)
    return out


def _merge_batch_into(x: Any, dim: int, groups: int) -> Any:
    """x with the vmapped axis at 0: folds it into dimension `dim` (numbered without the
    vmapped axis) split as (groups, rest), giving index g * (V * rest) + v * rest + r."""
    shape = get_aval(x).shape
    x = _split_axis(x, dim + 1, groups)  # (V, ..., groups, rest, ...)
    x = _merge_axis_into(x, 0, dim + 1)  # V moves between groups and rest, merged with rest
    return shape_ops.reshape(x, shape[1:dim + 1] + (shape[0] * shape[dim + 1],)
                             + shape[dim + 2:])


def _split_batch_out(x: Any, dim: int, size: int, groups: int) -> Any:
    """Undoes _merge_batch_into on an output: dimension `dim` ordered (groups, V, rest)
    becomes a leading vmapped axis V and dimension `dim` of (groups, rest)."""
    x = _split_axis(x, dim, groups)  # (..., groups, V * rest, ...)
    x = _split_axis(x, dim + 1, size)  # (..., groups, V, rest, ...)
    perm = list(range(len(get_aval(x).shape)))
    perm.remove(dim + 1)
    x = shape_ops.transpose(x, (dim + 1, *perm))
    return _merge_axis_into(x, dim + 1, dim + 1)


def _conv_general_dilated_batch(axis_size, vals, dims, **params):
    """The vmapped axis folds into a batch or feature dimension (growing the group count when
    both operands carry it), so the result is still one convolution."""
    (lhs, rhs), (lbd, rbd) = vals, dims
    lhs_spec, rhs_spec, out_spec = params["dimension_numbers"]
    fgc, bgc = params["feature_group_count"], params["batch_group_count"]
    if lbd is not None:
        lhs = batching.moveaxis(lhs, lbd, 0)
    if rbd is not None:
        rhs = batching.moveaxis(rhs, rbd, 0)
    if lbd is not None and rbd is not None:
        rhs = _merge_batch_into(rhs, rhs_spec[0], 1)
        if bgc > 1:
            lhs = _merge_batch_into(lhs, lhs_spec[0], 1)
            params = dict(params, batch_group_count=bgc * axis_size)
        else:
            lhs = _merge_batch_into(lhs, lhs_spec[1], 1)
            params = dict(params, feature_group_count=fgc * axis_size)
        out = conv_general_dilated_p.bind(lhs, rhs, **params)
        return [_split_batch_out(out, out_spec[1], axis_size, 1)], [0]
    if lbd is not None:
        lhs = _merge_batch_into(lhs, lhs_spec[0], bgc)
        out = conv_general_dilated_p.bind(lhs, rhs, **params)
        return [_split_batch_out(out, out_spec[0], axis_size, 1)], [0]
    groups = fgc * bgc
    rhs = _merge_batch_into(rhs, rhs_spec[0], groups)
    out = conv_general_dilated_p.bind(lhs, rhs, **params)
    return [_split_batch_out(out, out_spec[1], axis_size, groups)], [0]


core.abstract_eval_rules[conv_general_dilated_p] = _conv_general_dilated_abstract_eval
core.impl_rules[conv_general_dilated_p] = _conv_general_dilated_impl
ad.defbilinear(conv_general_dilated_p,
               lambda ct, x, y, **p: _conv_transpose_lhs(ct, x, y, **p),
               lambda ct, x, y, **p: _conv_transpose_rhs(ct, x, y, **p))
batching.batch_rules[conv_general_dilated_p] = _conv_general_dilated_batch
