"""Windowed reductions: reduce_window (a general monoid and the sum/max/min primitives) and the
select-and-scatter/gather pair that carries max/min pooling's derivatives."""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from numbax._src import core
from numbax._src.core import Primitive, ShapedArray, get_aval
from numbax._src.dtypes import kind_of
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import ad, batching
from numbax._src.lax import elementwise as ew
from numbax._src.lax import extrema, shape_ops
from numbax._src.lax.convolution import (
    conv_general_vjp_lhs_padding,
    dilate_shape,
    stride_dim,
)

# ----------------------------------------------------------------------------- shapes


def reduce_window_shape_tuple(operand_shape: Sequence[int], window_dimensions: Sequence[int],
                              window_strides: Sequence[int], padding: Sequence[Sequence[int]],
                              base_dilation: Sequence[int] | None = None,
                              window_dilation: Sequence[int] | None = None) -> tuple[int, ...]:
    """The output shape of a windowed reduction.

    >>> reduce_window_shape_tuple((5, 4), (2, 2), (2, 1), ((0, 1), (0, 0)))
    (3, 3)
    """
    if base_dilation is not None:
        operand_shape = dilate_shape(operand_shape, base_dilation)
    if window_dilation is not None:
        window_dimensions = dilate_shape(window_dimensions, window_dilation)
    padded = [int(d) + int(lo) + int(hi) for d, (lo, hi) in zip(operand_shape, padding)]
    return tuple(stride_dim(p, int(w), int(s))
                 for p, w, s in zip(padded, window_dimensions, window_strides, strict=True))


def _check_window(api: str, aval: ShapedArray, window_dimensions, window_strides, padding,
                  base_dilation, window_dilation) -> tuple[int, ...]:
    """The output shape, after checking every window parameter against the operand."""
    for name, value in (("window_dimensions", window_dimensions),
                        ("window_strides", window_strides), ("padding", padding),
                        ("base_dilation", base_dilation), ("window_dilation", window_dilation)):
        if len(value) != aval.ndim:
            raise NumbaxTypeError(
                f"lax.{api}: {name} has {len(value)} entries ({tuple(value)}) for an operand of "
                f"shape {aval.shape}, expected {aval.ndim} (one per dimension).")
    for name, value in (("window_dimensions", window_dimensions),
                        ("window_strides", window_strides), ("base_dilation", base_dilation),
                        ("window_dilation", window_dilation)):
        if any(v < 1 for v in value):
            raise NumbaxValueError(f"lax.{api}: {name} has {tuple(value)}, expected positive "
                                   "ints.")
    dilated = dilate_shape(aval.shape, base_dilation)
    if any(d + lo + hi < 0 for d, (lo, hi) in zip(dilated, padding)):
        raise NumbaxValueError(
            f"lax.{api}: padding {tuple(padding)} crops more than the operand's (dilated) "
            f"shape {dilated}.")
    return reduce_window_shape_tuple(aval.shape, window_dimensions, window_strides, padding,
                                     base_dilation, window_dilation)


def _padded(x: np.ndarray, fill: Any, padding, base_dilation) -> np.ndarray:
    """x dilated (holes = fill) and padded with fill (negative amounts crop)."""
    if all(d == 1 for d in base_dilation) and all(lo == 0 and hi == 0 for lo, hi in padding):
        return x
    sizes = dilate_shape(x.shape, base_dilation)
    shape = [n + lo + hi for n, (lo, hi) in zip(sizes, padding)]
    out = np.full(shape, fill, x.dtype)
    src, dst = [], []
    for n, d, (lo, _), size in zip(x.shape, base_dilation, padding, shape):
        first = max(0, -(lo // d))
        last = min(n - 1, (size - 1 - lo) // d) if size > 0 else -1
        if last < first:
            return out
        src.append(slice(first, last + 1))
        dst.append(slice(lo + first * d, lo + last * d + 1, d))
    out[tuple(dst)] = x[tuple(src)]
    return out


def _slabs(x: np.ndarray, out_shape, window_dimensions, window_strides,
           window_dilation) -> Iterator[tuple[int, tuple[slice, ...]]]:
    """(flat window position, the strided slice of x holding that position of every window)."""
    for k, offset in enumerate(np.ndindex(*window_dimensions)):
        yield k, tuple(slice(o * d, o * d + (m - 1) * s + 1, s) if m else slice(0, 0)
                       for o, d, s, m in zip(offset, window_dilation, window_strides,
                                             out_shape))


def _fold(xs: Sequence[np.ndarray], fills: Sequence[Any], combine: Callable, params) -> list:
    """Reduces every window of the arrays `xs` (one variadic reduction) with `combine(acc,
    slab) -> acc`, starting from the fills; a loop over window positions, not elements."""
    out_shape = reduce_window_shape_tuple(xs[0].shape, params["window_dimensions"],
                                          params["window_strides"], params["padding"],
                                          params["base_dilation"], params["window_dilation"])
    padded = [_padded(x, f, params["padding"], params["base_dilation"])
              for x, f in zip(xs, fills)]
    acc = [np.full(out_shape, f, x.dtype) for x, f in zip(xs, fills)]
    if 0 in out_shape:
        return acc
    for _, where in _slabs(padded[0], out_shape, params["window_dimensions"],
                           params["window_strides"], params["window_dilation"]):
        acc = combine(acc, [p[where] for p in padded])
    return acc


_WINDOW_PARAMS = ("window_dimensions", "window_strides", "padding", "base_dilation",
                  "window_dilation")


def _with_unit_window(params: dict, bdim: int) -> dict:
    """The window params for an operand that gained a (batch) dimension at bdim."""
    new = dict(params)
    for name, unit in (("window_dimensions", 1), ("window_strides", 1), ("padding", (0, 0)),
                       ("base_dilation", 1), ("window_dilation", 1)):
        if name in params:
            value = params[name]
            new[name] = (*value[:bdim], unit, *value[bdim:])
    return new


# ----------------------------------------------------------------------------- sum / max / min


def _monoid_window(name: str, kinds: str, fill: Callable, combine: Callable) -> Primitive:
    prim = Primitive(name)

    def abstract_eval(x: ShapedArray, **params) -> list[ShapedArray]:
        ew._check_kind(name, x, kinds)
        shape = _check_window(name, x, *(params[k] for k in _WINDOW_PARAMS))
        return [ShapedArray(shape, x.dtype, x.weak_type)]

    def impl(x, **params):
        ident = fill(x.dtype)
        return _fold([x], [ident], lambda acc, s: [combine(acc[0], s[0], out=acc[0])], params)

    def batch(axis_size, vals, dims, **params):
        (x,), (bd,) = vals, dims
        return [prim.bind(x, **_with_unit_window(params, bd))], [bd]

    core.abstract_eval_rules[prim] = abstract_eval
    core.impl_rules[prim] = impl
    batching.batch_rules[prim] = batch
    return prim


def max_identity(dtype: np.dtype) -> Any:
    """The identity of max over `dtype` (its lowest value): what padding holds."""
    if kind_of(dtype) == "f":
        return -np.inf
    if kind_of(dtype) == "b":
        return False
    return np.iinfo(dtype).min


def min_identity(dtype: np.dtype) -> Any:
    """The identity of min over `dtype` (its highest value)."""
    if kind_of(dtype) == "f":
        return np.inf
    if kind_of(dtype) == "b":
        return True
    return np.iinfo(dtype).max


reduce_window_sum_p = _monoid_window("reduce_window_sum", "iufc", lambda dt: 0, np.add)
reduce_window_max_p = _monoid_window("reduce_window_max", "biuf", max_identity, extrema.maximum)
reduce_window_min_p = _monoid_window("reduce_window_min", "biuf", min_identity, extrema.minimum)


def _reduce_window_sum_transpose(cts, x, **params):
    """The cotangent spread back over every window: a strided pad of it, summed over windows
    of the same size with the strides and dilations exchanged; where the windows tile the
    operand (strides equal to the windows, no padding or dilation: average pooling), each
    cotangent element repeated over its window (`_tiled_windows_transpose`)."""
    (ct,) = cts
    in_shape = x.aval.shape
    ct_shape = get_aval(ct).shape
    ones = (1,) * len(in_shape)
    if tuple(params["window_strides"]) == tuple(params["window_dimensions"]) and all(
            p == (0, 0) for p in params["padding"]) and \
            tuple(params["base_dilation"]) == ones == tuple(params["window_dilation"]):
        return [_tiled_windows_transpose(ct, in_shape, params["window_dimensions"])]
    pads = conv_general_vjp_lhs_padding(in_shape, params["window_dimensions"],
                                        params["window_strides"], ct_shape, params["padding"],
                                        params["base_dilation"], params["window_dilation"])
    config = tuple((lo, hi, s - 1) for (lo, hi), s in zip(pads, params["window_strides"]))
    padded = shape_ops.pad(ct, np.array(0, get_aval(ct).dtype), config)
    return [reduce_window_sum_p.bind(
        padded, window_dimensions=params["window_dimensions"],
        window_strides=params["base_dilation"], padding=((0, 0),) * len(in_shape),
        base_dilation=ones, window_dilation=params["window_dilation"])]


def _tiled_windows_transpose(ct: Any, in_shape: tuple, window: tuple) -> Any:
    """The transpose of a window sum whose windows tile the operand: each cotangent element
    repeated over its window (a broadcast and a reshape), zeros past the last whole window.
    The same values as the strided pad summed over windows (each sum adds one cotangent to
    zeros), as index maps that fuse into one pass: NHWC 2x2 average pooling's gradient had
    run a pad and a windowed sum, ~3x jax.jit's."""
    ct_shape = get_aval(ct).shape
    spread = tuple(n for pair in zip(ct_shape, window) for n in pair)
    dims = tuple(range(0, 2 * len(ct_shape), 2))
    tiled = shape_ops.reshape(shape_ops.broadcast_in_dim(ct, spread, dims),
                              tuple(n * w for n, w in zip(ct_shape, window)))
    rest = tuple((0, size - n * w, 0) for size, n, w in zip(in_shape, ct_shape, window))
    if any(hi for _, hi, _ in rest):
        tiled = shape_ops.pad(tiled, np.array(0, get_aval(ct).dtype), rest)
    return tiled


ad.deflinear(reduce_window_sum_p, _reduce_window_sum_transpose)


def _chooser_jvp(select_prim: str) -> Callable:
    def jvp(t, ans, x, **params):
        return select_and_gather_add_p.bind(t, x, select_prim=select_prim, **params)

    return jvp


# ----------------------------------------------------------------------------- select and gather


# When a window's candidate replaces the element selected so far: 'ge' keeps the first maximum,
# 'gt' the last, 'le' and 'lt' likewise for minima (XLA's select(current, candidate) rule).
_SWITCH = {"ge": np.greater, "gt": np.greater_equal, "le": np.less, "lt": np.less_equal}



def select_rule(select_prim: str) -> tuple[bool, bool]:
    """(whether `select_prim` selects a maximum, whether a later candidate must be strictly
    better to replace the element selected so far): the rule compiled loops follow."""
    switch = _SWITCH[select_prim]
    return select_prim in ("ge", "gt"), switch in (np.greater, np.less)


# Masked updates are written as arithmetic (x * mask): numpy's where/copyto with a mask run
# ~10x slower than ufuncs on strided views. Arithmetic is exact when the values are finite;
# `_blend` falls back to np.where otherwise.


def _index_dtype(count: int) -> np.dtype:
    return np.dtype(np.uint8 if count < 256 else np.int32)


def _selection(operand: np.ndarray, select_prim: str, params) -> tuple[np.ndarray, tuple]:
    """The flat window position each window selects, and the padded operand's shape. Padding
    (and base-dilation holes) hold the comparison's identity (-inf for 'ge'/'gt'), so they are
    chosen only in a tie with it, as XLA's CPU lowering does."""
    switch = _SWITCH[select_prim]
    is_max = select_prim in ("ge", "gt")
    fill = max_identity(operand.dtype) if is_max else min_identity(operand.dtype)
    padded = _padded(operand, fill, params["padding"], params["base_dilation"])
    out_shape = reduce_window_shape_tuple(operand.shape, params["window_dimensions"],
                                          params["window_strides"], params["padding"],
                                          params["base_dilation"], params["window_dilation"])
    count = int(np.prod(params["window_dimensions"]))
    which = np.zeros(out_shape, _index_dtype(count))
    if 0 in out_shape:
        return which, padded.shape
    best = None
    take = np.empty(out_shape, bool)
    extreme = np.maximum if is_max else np.minimum
    for k, where in _slabs(padded, out_shape, params["window_dimensions"],
                           params["window_strides"], params["window_dilation"]):
        slab = padded[where]
        if best is None:
            best = slab.copy()
            continue
        switch(slab, best, out=take)
        extreme(best, slab, out=best)  # on ties the value is the same either way
        which *= ~take
        which += take * which.dtype.type(k)
    return which, padded.shape


def _finite(x: np.ndarray) -> bool:
    return kind_of(x.dtype) not in "fc" or bool(np.isfinite(x).all())


def _blend(mask: np.ndarray, values: np.ndarray, finite: bool, out: np.ndarray) -> np.ndarray:
    """values where mask, else 0, into out (arithmetic when the values are finite)."""
    if finite:
        return np.multiply(mask, values, out=out)
    out[...] = np.where(mask, values, np.zeros((), out.dtype))
    return out


def _check_select_prim(api: str, select_prim: Any) -> None:
    if select_prim not in _SWITCH:
        raise NumbaxValueError(
            f"lax.{api}: select_prim has {select_prim!r}, expected one of 'ge', 'gt', 'le', "
            "'lt' (the comparison that keeps the current element).")


select_and_gather_add_p = Primitive("select_and_gather_add")


def _select_and_gather_add_abstract_eval(tangents: ShapedArray, operand: ShapedArray, *,
                                         select_prim, **params) -> list[ShapedArray]:
    _check_select_prim("select_and_gather_add", select_prim)
    ew._check_kind("select_and_gather_add", operand, "biuf", 1)
    if tangents.shape != operand.shape:
        raise NumbaxTypeError(
            f"lax.select_and_gather_add: tangents has shape {tangents.shape} and operand has "
            f"shape {operand.shape}, expected equal shapes.")
    shape = _check_window("select_and_gather_add", operand,
                          *(params[k] for k in _WINDOW_PARAMS))
    return [ShapedArray(shape, tangents.dtype, tangents.weak_type)]


def _select_and_gather_add_impl(tangents, operand, *, select_prim, **params):
    which, _ = _selection(operand, select_prim, params)
    padded_t = _padded(tangents, 0, params["padding"], params["base_dilation"])
    out = np.zeros(which.shape, tangents.dtype)
    if out.size == 0:
        return [out]
    finite, part = _finite(padded_t), np.empty_like(out)
    for k, where in _slabs(padded_t, which.shape, params["window_dimensions"],
                           params["window_strides"], params["window_dilation"]):
        out += _blend(which == k, padded_t[where], finite, part)
    return [out]


def _select_and_gather_add_jvp(primals, tangents, *, select_prim, **params):
    (t, x), (t_dot, _) = primals, tangents
    ans = select_and_gather_add_p.bind(t, x, select_prim=select_prim, **params)
    if type(t_dot) is ad.Zero:
        return [ans], [ad.Zero(ad.tangent_aval(get_aval(ans)))]
    return [ans], [select_and_gather_add_p.bind(t_dot, x, select_prim=select_prim, **params)]


def _select_and_gather_add_transpose(cts, t, x, *, select_prim, window_dimensions,
                                     window_strides, padding, base_dilation, window_dilation):
    """Each window's cotangent goes back to the element the window selected."""
    (ct,) = cts
    if any(d != 1 for d in window_dilation):
        raise NotImplementedError(
            "lax.reduce_window max/min: reverse-mode differentiation with window_dilation "
            f"{window_dilation} is not supported (nor in JAX). Use window_dilation of ones, or "
            "forward mode (jvp/jacfwd).")
    dilated = any(d != 1 for d in base_dilation)
    if dilated:  # select among the dilated operand, holes holding the identity
        ident = max_identity(get_aval(x).dtype) if select_prim in ("ge", "gt") else (
            min_identity(get_aval(x).dtype))
        x = shape_ops.pad(x, np.array(ident, get_aval(x).dtype),
                          tuple((0, 0, d - 1) for d in base_dilation))
    out = select_and_scatter_add_p.bind(ct, x, select_prim=select_prim,
                                        window_dimensions=window_dimensions,
                                        window_strides=window_strides, padding=padding)
    if dilated:
        shape = get_aval(out).shape
        out = shape_ops.slice(out, (0,) * len(shape), shape, tuple(base_dilation))
    return [out, None]


def _select_and_gather_add_batch(axis_size, vals, dims, **params):
    t, x = (batching.bdim_at_front(v, d, axis_size) for v, d in zip(vals, dims))
    return [select_and_gather_add_p.bind(t, x, **_with_unit_window(params, 0))], [0]


core.abstract_eval_rules[select_and_gather_add_p] = _select_and_gather_add_abstract_eval
core.impl_rules[select_and_gather_add_p] = _select_and_gather_add_impl
ad.jvp_rules[select_and_gather_add_p] = _select_and_gather_add_jvp
ad.transpose_rules[select_and_gather_add_p] = _select_and_gather_add_transpose
batching.batch_rules[select_and_gather_add_p] = _select_and_gather_add_batch

ad.defjvp(reduce_window_max_p, _chooser_jvp("ge"))
ad.defjvp(reduce_window_min_p, _chooser_jvp("le"))

# ----------------------------------------------------------------------------- select and scatter

select_and_scatter_add_p = Primitive("select_and_scatter_add")


def _scatter_params(operand_ndim: int, params: dict) -> dict:
    ones = (1,) * operand_ndim
    return dict(params, base_dilation=ones, window_dilation=ones)


def _select_and_scatter_add_abstract_eval(source: ShapedArray, operand: ShapedArray, *,
                                          select_prim, **params) -> list[ShapedArray]:
    _check_select_prim("select_and_scatter_add", select_prim)
    ew._check_kind("select_and_scatter_add", operand, "biuf", 1)
    out = _check_window("select_and_scatter_add", operand,
                        *(_scatter_params(operand.ndim, params)[k] for k in _WINDOW_PARAMS))
    if source.shape != out:
        raise NumbaxTypeError(
            f"lax.select_and_scatter_add: source has shape {source.shape}, expected {out} (the "
            f"window-reduced shape of operand {operand.shape}).")
    return [ShapedArray(operand.shape, source.dtype, source.weak_type)]


def _select_and_scatter_add_impl(source, operand, *, select_prim, **params):
    params = _scatter_params(operand.ndim, params)
    which, padded_shape = _selection(operand, select_prim, params)
    out = np.zeros(padded_shape, source.dtype)
    if which.size:
        finite, part = _finite(source), np.empty(which.shape, source.dtype)
        for k, where in _slabs(out, which.shape, params["window_dimensions"],
                               params["window_strides"], params["window_dilation"]):
            view = out[where]
            np.add(view, _blend(which == k, source, finite, part), out=view)
    return [_unpad(out, operand.shape, params["padding"], 0)]


def _unpad(out: np.ndarray, shape: tuple, padding, fill: Any) -> np.ndarray:
    """The operand-shaped part of a padded result; cells that negative padding cropped away
    (never scattered to) hold `fill`."""
    dst = tuple(slice(max(0, -lo), max(max(0, -lo), min(n, size - lo)))
                for n, (lo, _), size in zip(shape, padding, out.shape))
    src = tuple(slice(d.start + lo, d.stop + lo) for d, (lo, _) in zip(dst, padding))
    if all(lo >= 0 and hi >= 0 for lo, hi in padding):
        return out[src]
    full = np.full(shape, fill, out.dtype)
    full[dst] = out[src]
    return full


def _select_and_scatter_add_jvp(primals, tangents, *, select_prim, **params):
    (s, x), (s_dot, _) = primals, tangents
    ans = select_and_scatter_add_p.bind(s, x, select_prim=select_prim, **params)
    if type(s_dot) is ad.Zero:
        return [ans], [ad.Zero(ad.tangent_aval(get_aval(ans)))]
    return [ans], [select_and_scatter_add_p.bind(s_dot, x, select_prim=select_prim, **params)]


def _select_and_scatter_add_transpose(cts, s, x, *, select_prim, **params):
    (ct,) = cts
    ones = (1,) * get_aval(x).ndim
    return [select_and_gather_add_p.bind(ct, x, select_prim=select_prim, base_dilation=ones,
                                         window_dilation=ones, **params), None]


def _select_and_scatter_add_batch(axis_size, vals, dims, **params):
    s, x = (batching.bdim_at_front(v, d, axis_size) for v, d in zip(vals, dims))
    return [select_and_scatter_add_p.bind(s, x, **_with_unit_window(params, 0))], [0]


core.abstract_eval_rules[select_and_scatter_add_p] = _select_and_scatter_add_abstract_eval
core.impl_rules[select_and_scatter_add_p] = _select_and_scatter_add_impl
ad.jvp_rules[select_and_scatter_add_p] = _select_and_scatter_add_jvp
ad.transpose_rules[select_and_scatter_add_p] = _select_and_scatter_add_transpose
batching.batch_rules[select_and_scatter_add_p] = _select_and_scatter_add_batch

# ----------------------------------------------------------------------------- select and scatter
# XLA's SelectAndScatter. JAX's select_and_scatter_p holds select and scatter jaxprs; numbax's
# names them instead (select_prim in ge/gt/le/lt, scatter_prim in add/mul/max/min), so its
# params stay plain data.

select_and_scatter_p = Primitive("select_and_scatter")
_SCATTER = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def _select_and_scatter_abstract_eval(operand: ShapedArray, source: ShapedArray,
                                      init: ShapedArray, *, select_prim, scatter_prim,
                                      **params) -> list[ShapedArray]:
    _check_select_prim("select_and_scatter", select_prim)
    if scatter_prim not in _SCATTER:
        raise NumbaxValueError(
            f"lax.select_and_scatter: scatter_prim has {scatter_prim!r}, expected one of "
            f"{sorted(_SCATTER)}.")
    ew._check_kind("select_and_scatter", operand, "biuf", 0)
    if not source.dtype == init.dtype == operand.dtype or init.shape != ():
        raise NumbaxTypeError(
            f"lax.select_and_scatter: operand has {operand.str_short()}, source "
            f"{source.str_short()} and init_value {init.str_short()}, expected one dtype and "
            "a scalar init_value.")
    out = _check_window("select_and_scatter", operand,
                        *(_scatter_params(operand.ndim, params)[k] for k in _WINDOW_PARAMS))
    if source.shape != out:
        raise NumbaxTypeError(
            f"lax.select_and_scatter: source has shape {source.shape}, expected {out} (the "
            f"window-reduced shape of operand {operand.shape}).")
    return [ShapedArray(operand.shape, source.dtype, source.weak_type)]


def _select_and_scatter_impl(operand, source, init, *, select_prim, scatter_prim, **params):
    params = _scatter_params(operand.ndim, params)
    which, padded_shape = _selection(operand, select_prim, params)
    combine = _SCATTER[scatter_prim]
    out = np.full(padded_shape, init, source.dtype)
    if which.size:
        for k, where in _slabs(out, which.shape, params["window_dimensions"],
                               params["window_strides"], params["window_dilation"]):
            hit = which == k  # distinct windows hit distinct cells at a fixed offset
            out[where] = np.where(hit, combine(out[where], source), out[where])
    return [_unpad(out, operand.shape, params["padding"], init)]


def _select_and_scatter_jvp(primals, tangents, *, scatter_prim, **params):
    """With scatter_prim 'add' the output, init_value + the sources each cell selected, is
    linear in (source, init_value) for a fixed operand; JAX differentiates no form of it."""
    x, s, init = primals
    _, s_dot, init_dot = tangents
    ans = select_and_scatter_p.bind(x, s, init, scatter_prim=scatter_prim, **params)
    if type(s_dot) is ad.Zero and type(init_dot) is ad.Zero:
        return [ans], [ad.Zero(ad.tangent_aval(get_aval(ans)))]
    if scatter_prim != "add":
        raise NotImplementedError(
            f"lax.select_and_scatter: differentiation with scatter_prim {scatter_prim!r} is not "
            "supported (JAX differentiates no select_and_scatter); use 'add'.")
    s_dot, init_dot = ad.instantiate_zeros(s_dot), ad.instantiate_zeros(init_dot)
    t_out = select_and_scatter_p.bind(x, s_dot, init_dot, scatter_prim="add", **params)
    return [ans], [t_out]


def _select_and_scatter_transpose(cts, x, s, init, *, select_prim, scatter_prim, **params):
    (ct,) = cts
    ones = (1,) * get_aval(x).ndim
    ct_s = select_and_gather_add_p.bind(ct, x, select_prim=select_prim, base_dilation=ones,
                                        window_dilation=ones, **params)
    ct_init = None
    if ad.is_undefined_primal(init):
        from numbax._src.lax import reductions

        ct_init = reductions.reduce_sum(ct, tuple(range(get_aval(ct).ndim)))
    return [None, ct_s if ad.is_undefined_primal(s) else None, ct_init]


def _select_and_scatter_batch(axis_size, vals, dims, **params):
    (x, s, init), (_, _, init_dim) = vals, dims
    if init_dim is not None:
        raise NotImplementedError(
            "lax.select_and_scatter: vmap over init_value is not supported (nor in JAX); pass "
            "an unbatched init_value.")
    x, s = (batching.bdim_at_front(v, d, axis_size) for v, d in zip((x, s), dims[:2]))
    return [select_and_scatter_p.bind(x, s, init, **_with_unit_window(params, 0))], [0]


core.abstract_eval_rules[select_and_scatter_p] = _select_and_scatter_abstract_eval
core.impl_rules[select_and_scatter_p] = _select_and_scatter_impl
ad.jvp_rules[select_and_scatter_p] = _select_and_scatter_jvp
ad.transpose_rules[select_and_scatter_p] = _select_and_scatter_transpose
batching.batch_rules[select_and_scatter_p] = _select_and_scatter_batch
