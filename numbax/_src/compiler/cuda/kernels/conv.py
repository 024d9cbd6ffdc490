"""conv_general_dilated on CUDA as an implicit GEMM (im2col): the plan that turns one convolution
(any layout, strides, padding, dilations, feature or batch groups) into a patch gather and one
strided-batched product, and the gather kernel.

The patches P[g, r, col] hold, for group g, row r (a batch entry and output position, in the
output's memory order) and column col (an input channel and window tap, in the kernel's memory
order), the input element under that tap, or zero where it falls on padding or on an
lhs-dilation hole. Ordered so, the kernel is read in place as the product's other operand (a
transpose kernel makes it (O, I, window...) first when its channel and window dims are not one
stride apart), and the product lands in the output's own layout: as (rows, out channels) when
the output is channels-last, or as out channels x positions per batch entry (kernel @ patchesᵀ)
when spatial dims follow its feature dim (NCHW); a grouped convolution whose output fits
neither is written to a buffer and transposed into it. A 1x1 window with unit strides and no
padding or dilation needs no patches: the product reads the input in place. The product itself
is CudaDriver.product's (cuBLAS, else numbax's matmul kernel)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from numbax._src.compiler import ir
from numbax._src.compiler.cuda.config import Config, cdiv, group_strides, prod, strides
from numbax._src.compiler.cuda.kernels.matmul import MatmulShape
from numbax._src.compiler.cuda.modules import module
from numbax._src.compiler.cuda.runtime import cublas, cudnn
from numbax._src.compiler.source import render_scalar
from numbax._src.core import JaxprEqn
from numbax._src.lax.params import Precision

BATCH = -1  # the role of the batch dim among a row's dims (spatial dims are 0, 1, ...)
CHANNEL = -1  # the role of the in-channel dim among a column's dims (window dims are 0, 1, ...)


@dataclass(frozen=True)
class ConvPlan:
    """How the driver runs one convolution: the gather into `patches` elements (None: the
    product reads the input in place), the kernel transposed by `rhs_perm` first (None: read in
    place), the product (`kernel_first`: kernel @ patchesᵀ, else patches @ kernel) and the
    (shape, perm) transpose of the product's buffer into the output (None: it is the output)."""

    gather: ir.Kernel | None
    patches: int
    rhs_perm: tuple[int, ...] | None
    kernel_first: bool
    product: MatmulShape
    out_transpose: tuple[tuple[int, ...], tuple[int, ...]] | None
    precision: Any  # None or the (lhs, rhs) Precision pair cuBLAS's compute type follows


@dataclass(frozen=True)
class _Rows:
    """The patch rows: the output's batch and spatial dims (as (role, size)) in its memory
    order, `outer` of them before its feature dim and the rest after."""

    dims: tuple[tuple[int, int], ...]
    outer: int  # how many of dims come before the feature dim
    n_outer: int  # elements over those dims
    n_inner: int  # elements over the rest


def plan(eqn: JaxprEqn, cfg: Config) -> ConvPlan:
    """The plan of one conv_general_dilated (see the module docstring)."""
    p = eqn.params
    lhs, rhs, out = eqn.invars[0].aval, eqn.invars[1].aval, eqn.outvars[0].aval
    groups = p["feature_group_count"] * p["batch_group_count"]
    o = rhs.shape[p["dimension_numbers"][1][0]] // groups
    rows = _rows(out.shape, p["dimension_numbers"][2])
    r = rows.n_outer * rows.n_inner
    rhs_perm, cols, o_st, col_st = _kernel_operand(rhs.shape, p["dimension_numbers"][1])
    k = prod([size for _, size in cols])
    dtypes = (lhs.dtype, rhs.dtype, out.dtype)
    lhs_st = _in_place(eqn, rows) if groups == 1 else None
    kernel_first = rows.n_inner > 1 and (groups == 1 or rows.n_outer == 1)
    if kernel_first:  # per batch entry (o, positions) = kernel (o, k) @ patchesᵀ (k, positions)
        in_place = lhs_st is not None and _unit_stride(k, rows.n_inner, lhs_st[1], lhs_st[2])
        patch_st = lhs_st if in_place else (rows.n_inner * k, 1, k)
        product = MatmulShape(groups * rows.n_outer, o, rows.n_inner, k, dtypes,
                              (o * o_st if groups > 1 else 0, o_st, col_st), patch_st)
    else:  # per group (rows, o) = patches (rows, k) @ kernel (k, o)
        in_place = lhs_st is not None and _unit_stride(r, k, lhs_st[0], lhs_st[1])
        patch_st = (0, lhs_st[0], lhs_st[1]) if in_place else (r * k, k, 1)
        product = MatmulShape(groups, r, o, k, dtypes, patch_st, (o * o_st, col_st, o_st))
    out_transpose = None
    if groups > 1 and rows.n_outer > 1:  # (G, rows, o) is not the output's (outer, G, o, inner)
        out_transpose = ((groups, rows.n_outer, rows.n_inner, o), (1, 0, 3, 2))
    precision = _precision(p["precision"])
    return ConvPlan(None if in_place else _render_gather(eqn, rows, cols, cfg),
                    0 if in_place else groups * r * k, rhs_perm, kernel_first, product,
                    out_transpose, precision)


def _precision(precision):
    """A convolution's precision as the (lhs, rhs) Precision pair cuBLAS's compute type follows
    (conv_general_dilated keeps it as names: 'HIGHEST', ...), or None."""
    if precision is None:
        return None
    return tuple(Precision(q.lower()) if isinstance(q, str) else q for q in precision)


def _kernel_operand(shape: tuple[int, ...], spec) -> tuple:
    """The kernel as the product's operand: (transpose first or None, the columns as (role,
    size) in memory order, the element strides of an out channel and of a column). Read in
    place when its in-channel and window dims are one stride apart (OIHW, HWIO), else
    transposed to (O, I, window...)."""
    col_dims = [dim for dim in range(len(shape)) if dim != spec[0]]
    col_st = group_strides(shape, (col_dims,))
    role = {spec[1]: CHANNEL, **{dim: i for i, dim in enumerate(spec[2:])}}
    if col_st is None:
        cols = tuple((role[dim], shape[dim]) for dim in spec[1:])
        return tuple(spec), cols, prod([size for _, size in cols]), 1
    cols = tuple((role[dim], shape[dim]) for dim in col_dims)
    return None, cols, strides(shape)[spec[0]], col_st[0]


def _rows(out_shape: tuple[int, ...], out_spec) -> _Rows:
    role = {out_spec[0]: BATCH, **{dim: i for i, dim in enumerate(out_spec[2:])}}
    dims = [dim for dim in range(len(out_shape)) if dim != out_spec[1]]
    outer = [dim for dim in dims if dim < out_spec[1]]
    inner = [dim for dim in dims if dim > out_spec[1]]
    return _Rows(tuple((role[dim], out_shape[dim]) for dim in dims), len(outer),
                 prod([out_shape[dim] for dim in outer]), prod([out_shape[dim] for dim in inner]))


def _unit_stride(rows: int, cols: int, row_st: int, col_st: int) -> bool:
    """Whether a rows x cols operand has the unit stride cuBLAS needs (cublas.operand_layout)."""
    return rows == 1 or cols == 1 or row_st == 1 or col_st == 1


def _in_place(eqn: JaxprEqn, rows: _Rows) -> tuple[int, int, int] | None:
    """The element strides (outer rows, channel, inner rows) of the patches read in the input
    itself, for a 1x1 window with unit strides and no padding or lhs dilation, or None (a
    gather runs) for other convolutions and when those dims are not evenly strided."""
    p = eqn.params
    lhs_spec, rhs_spec, _ = p["dimension_numbers"]
    lhs, rhs = eqn.invars[0].aval, eqn.invars[1].aval
    if (any(rhs.shape[dim] != 1 for dim in rhs_spec[2:]) or any(s != 1 for s in
                                                                 p["window_strides"])
            or any(s != 1 for s in p["lhs_dilation"])
            or any(tuple(pad) != (0, 0) for pad in p["padding"])):
        return None
    lhs_dims = [lhs_spec[0] if role == BATCH else lhs_spec[2 + role] for role, _ in rows.dims]
    return group_strides(lhs.shape, (lhs_dims[:rows.outer], [lhs_spec[1]],
                                     lhs_dims[rows.outer:]))


def _split(index: str, dims: list[tuple[str, int]], pad: str) -> list[str]:
    """Lines naming each digit of `index` over dims (name, size), the first the most
    significant (its digit is what is left, unbounded); size-1 dims are 0."""
    lines = [f"{pad}q = {index}"]
    for pos, (name, size) in enumerate(reversed(dims)):
        if pos == len(dims) - 1:
            lines.append(f"{pad}{name} = q")
        elif size == 1:
            lines.append(f"{pad}{name} = 0")
        else:
            lines += [f"{pad}{name} = q % {size}", f"{pad}q //= {size}"]
    return lines


def _render_gather(eqn: JaxprEqn, rows: _Rows, cols: tuple[tuple[int, int], ...],
                   cfg: Config) -> ir.Kernel:
    """o0[g, r, col] = the input element under row r's window at tap col (zero on padding and
    dilation holes): `lanes` threads walk a row's columns (coalesced stores), each block
    `threads // lanes` rows at a time, rows grid-strided."""
    p = eqn.params
    lhs_spec, rhs_spec, _ = p["dimension_numbers"]
    lhs, rhs = eqn.invars[0].aval, eqn.invars[1].aval
    gf, gb = p["feature_group_count"], p["batch_group_count"]
    groups, n_b, in_f = gf * gb, lhs.shape[lhs_spec[0]] // gb, rhs.shape[rhs_spec[1]]
    st = strides(lhs.shape)
    n_rows, k = groups * rows.n_outer * rows.n_inner, prod([size for _, size in cols])
    lanes = min(cfg.threads, 1 << max(k - 1, 0).bit_length())
    per_block = cfg.threads // lanes
    row_dims = [("g", groups)] + [("jb" if role == BATCH else f"j{role}", size)
                                  for role, size in rows.dims]
    col_dims = [("c" if role == CHANNEL else f"k{role}", size) for role, size in cols]
    w, x = "        ", "            "
    body = [f"    lane = cuda.threadIdx.x % {lanes}",
            f"    row = cuda.blockIdx.x * {per_block} + cuda.threadIdx.x // {lanes}",
            f"    while row < {n_rows}:", *_split("row", row_dims, w)]
    base = [f"jb * {st[lhs_spec[0]]}"]
    if gb > 1:  # batch group g reads batch entries g * n_b + jb
        base.append(f"g * {n_b * st[lhs_spec[0]]}")
    if gf > 1:  # feature group g reads channels g * in_f + c
        base.append(f"g * {in_f * st[lhs_spec[1]]}")
    body.append(f"{w}base = {' + '.join(base)}")
    # each spatial dim: the window's start in padded (lhs-dilated) coordinates
    body += [f"{w}s{i} = j{i} * {s} - {lo}"
             for i, (s, (lo, _)) in enumerate(zip(p["window_strides"], p["padding"]))]
    body += [f"{w}col = lane", f"{w}while col < {k}:", *_split("col", col_dims, x)]
    ok, terms = [], [f"base + c * {st[lhs_spec[1]]}"]
    for i, (r_dil, l_dil) in enumerate(zip(p["rhs_dilation"], p["lhs_dilation"])):
        if l_dil > 1:  # a tap between two dilated input elements reads a hole (zero)
            body += [f"{x}h{i} = s{i} + k{i} * {r_dil}", f"{x}i{i} = h{i} // {l_dil}"]
            ok.append(f"h{i} % {l_dil} == 0")
        else:
            body.append(f"{x}i{i} = s{i} + k{i} * {r_dil}")
        ok.append(f"i{i} >= 0 and i{i} < {lhs.shape[lhs_spec[2 + i]]}")
        terms.append(f"i{i} * {st[lhs_spec[2 + i]]}")
    out = f"o0[np.uint64(row * {k} + col)]"  # unsigned: no negative-index wraparound code
    body += [f"{x}if {' and '.join(ok) or 'True'}:",
             f"{x}    {out} = a0[np.uint64({' + '.join(terms)})]",
             f"{x}else:", f"{x}    {out} = {render_scalar(0, lhs.dtype)}",
             f"{x}col += {lanes}", f"{w}row += cuda.gridDim.x * {per_block}"]
    out_shape = eqn.outvars[0].aval.shape
    tag = (f"conv patches {lhs.shape} -> ({groups}, {n_rows // groups}, {k}) {lhs.dtype.name} "
           f"for output {out_shape}")
    blocks = min(cdiv(n_rows, per_block), cfg.max_blocks)
    launches = (ir.Launch("kernel", blocks, cfg.threads),) if n_rows * k else ()
    return ir.Kernel(module(tag, {"kernel": ("a0, o0", body)}), launches=launches)


@dataclass(frozen=True)
class CudnnCall:
    """How the driver runs a convolution through cuDNN (runtime/cudnn.py): the call, the
    transpose of the kernel operand into KRSC/KCRS first (None: read in place), and for a
    filter gradient the (buffer shape, perm) transpose of cuDNN's KRSC/KCRS result into the
    output (None: written in place). A data gradient reads `unflipped`: the input of the
    `rev` that reversed its kernel (cuDNN reverses it itself)."""

    conv: Any  # cudnn.CudnnConv
    kernel_perm: tuple[int, ...] | None
    out_transpose: tuple[tuple[int, ...], tuple[int, ...]] | None
    unflipped: Any = None  # the Var of the kernel before its rev (data gradients)


def cudnn_plan(eqn: JaxprEqn, producers: dict | None = None) -> CudnnCall | None:
    """The cuDNN form of a convolution, or None to keep im2col. Float32/float16 throughout, no
    batch groups, 1 to 3 spatial dims, operands packed channels-last or channels-first alike;
    then, in JAX's terms: a forward convolution (no lhs dilation, padding >= 0, feature groups
    allowed); the gradient with respect to the kernel of one without groups (JAX writes it as
    a convolution of the input with the output's cotangent, batch and feature dims swapped,
    the forward strides as dilations); the gradient with respect to the input of a strided
    one without groups (a convolution of the cotangent, dilated by the forward strides, with
    the reversed kernel, whose `rev` equation `producers` finds)."""
    p = eqn.params
    lhs, rhs, out = eqn.invars[0].aval, eqn.invars[1].aval, eqn.outvars[0].aval
    if not (lhs.dtype == rhs.dtype == out.dtype) or out.dtype not in (np.float32, np.float16):
        return None
    if p["batch_group_count"] != 1 or not 1 <= len(lhs.shape) - 2 <= 3 or \
            0 in (*lhs.shape, *rhs.shape, *out.shape):
        return None
    if all(d == 1 for d in p["lhs_dilation"]) and all(lo >= 0 and hi >= 0
                                                      for lo, hi in p["padding"]):
        call = _fprop(eqn)
        if call is not None:
            return call
    if p["feature_group_count"] != 1:
        return None
    call = _wgrad(eqn)
    if call is None and producers is not None and all(d == 1 for d in p["window_strides"]):
        call = _dgrad(eqn, producers)
    return call


def _wgrad(eqn: JaxprEqn) -> CudnnCall | None:
    """The filter-gradient form: any ungrouped convolution without lhs dilation is the filter
    gradient of the forward convolution read off its swapped dimension specs."""
    p = eqn.params
    lhs, rhs, out = eqn.invars[0].aval, eqn.invars[1].aval, eqn.outvars[0].aval
    if any(d != 1 for d in p["lhs_dilation"]) or any(lo < 0 for lo, _ in p["padding"]):
        return None
    lhs_spec, rhs_spec, out_spec = map(_swapped, p["dimension_numbers"])  # the forward's
    last = _channels_last(lhs.shape, lhs_spec)
    if last is None or _channels_last(rhs.shape, rhs_spec) != last:
        return None
    sizes = _spatial(lhs.shape, lhs_spec), _spatial(out.shape, out_spec), \
        _spatial(rhs.shape, rhs_spec)  # x, kernel, y
    stride, dilation = tuple(p["rhs_dilation"]), tuple(p["window_strides"])
    pre = tuple(lo for lo, _ in p["padding"])
    post = _post_padding(*sizes, pre, stride, dilation)
    if post is None:
        return None
    order = (out_spec[0], *out_spec[2:], out_spec[1]) if last else tuple(out_spec)
    w_shape = tuple(out.shape[d] for d in order)  # cuDNN's result, KRSC or KCRS
    in_place = list(order) == sorted(order)
    out_transpose = None if in_place else (w_shape, tuple(int(i) for i in np.argsort(order)))
    unit = len(lhs_spec) == 3
    conv = _conv(eqn, _described(lhs.shape, lhs_spec, unit, last),
                 _described(w_shape, _kernel_spec(len(order), last), unit, last),
                 _described(rhs.shape, rhs_spec, unit, last), pre, post, stride, dilation,
                 "wgrad")
    if conv.dtype != "float32" or not conv.tf32:
        # Only TF32 filter gradients are cuDNN's: on an H200 a stride-2 one of the ResNet
        # benchmark came back wrong (relative error 1.5) from the engines left once the
        # tensor-core ones are deselected for "highest"; float16 ones were not measured.
        return None
    return CudnnCall(conv, None, out_transpose)


def _fprop(eqn: JaxprEqn) -> CudnnCall | None:
    p = eqn.params
    lhs, rhs, out = eqn.invars[0].aval, eqn.invars[1].aval, eqn.outvars[0].aval
    lhs_spec, rhs_spec, out_spec = p["dimension_numbers"]
    last = _channels_last(lhs.shape, lhs_spec)
    if last is None or _channels_last(out.shape, out_spec) != last:
        return None
    want, w_shape = _kernel_layout(rhs.shape, rhs_spec, last)
    unit = len(lhs_spec) == 3
    conv = _conv(eqn, _described(lhs.shape, lhs_spec, unit, last),
                 _described(w_shape, _kernel_spec(len(want), last), unit, last),
                 _described(out.shape, out_spec, unit, last),
                 tuple(lo for lo, _ in p["padding"]), tuple(hi for _, hi in p["padding"]),
                 tuple(p["window_strides"]), tuple(p["rhs_dilation"]), "fprop")
    return CudnnCall(conv, _perm_or_none(want), None)


def _dgrad(eqn: JaxprEqn, producers: dict) -> CudnnCall | None:
    from numbax._src.lax import shape_ops as ls

    p = eqn.params
    lhs, rhs, out = eqn.invars[0].aval, eqn.invars[1].aval, eqn.outvars[0].aval
    y_spec, x_spec = p["dimension_numbers"][0], p["dimension_numbers"][2]
    w_spec = _swapped(p["dimension_numbers"][1])  # the forward kernel's (O, I, window...)
    rev = producers.get(eqn.invars[1])
    if rev is None or rev.primitive is not ls.rev_p or \
            tuple(sorted(rev.params["dimensions"])) != tuple(sorted(w_spec[2:])):
        return None
    last = _channels_last(lhs.shape, y_spec)
    if last is None or _channels_last(out.shape, x_spec) != last:
        return None
    k = _spatial(rhs.shape, w_spec)
    stride, dilation = tuple(p["lhs_dilation"]), tuple(p["rhs_dilation"])
    pre = tuple((kk - 1) * d - lo for kk, d, (lo, _) in zip(k, dilation, p["padding"]))
    if any(q < 0 for q in pre):
        return None
    post = _post_padding(_spatial(out.shape, x_spec), k, _spatial(lhs.shape, y_spec), pre,
                         stride, dilation)
    if post is None:
        return None
    want, w_shape = _kernel_layout(rhs.shape, w_spec, last)
    unit = len(y_spec) == 3
    conv = _conv(eqn, _described(out.shape, x_spec, unit, last),
                 _described(w_shape, _kernel_spec(len(want), last), unit, last),
                 _described(lhs.shape, y_spec, unit, last), pre, post, stride, dilation, "dgrad")
    return CudnnCall(conv, _perm_or_none(want), None, rev.invars[0])


def _conv(eqn: JaxprEqn, x, w, y, pre, post, stride, dilation, kind: str) -> Any:
    """The CudnnConv of an equation's convolution, its precision read as cuBLAS's is."""
    precision = _precision(eqn.params["precision"])
    dtype = eqn.outvars[0].aval.dtype
    unit = len(x[0]) - len(pre) - 2  # 1-D: the trailing spatial dim of size 1
    return cudnn.CudnnConv(
        x, w, y, tuple(pre) + (0,) * unit, tuple(post) + (0,) * unit,
        tuple(stride) + (1,) * unit, tuple(dilation) + (1,) * unit, np.dtype(dtype).name,
        cublas.compute_type(dtype, precision) == cublas.COMPUTE_32F_FAST_TF32, kind)


def _swapped(spec) -> tuple[int, ...]:
    """A dimension spec with its first two entries swapped (JAX's transposed convolutions)."""
    return (spec[1], spec[0], *spec[2:])


def _spatial(shape: tuple[int, ...], spec) -> tuple[int, ...]:
    return tuple(shape[d] for d in spec[2:])


def _post_padding(x: tuple, k: tuple, y: tuple, pre: tuple, stride: tuple,
                  dilation: tuple) -> tuple[int, ...] | None:
    """The least padding after each spatial dim for which a forward convolution of x by a
    window k gives y positions (padding past the last window reached only adds zeros), or
    None where no padding gives y."""
    post = []
    for xs, ks, ys, lo, st, dl in zip(x, k, y, pre, stride, dilation):
        reach = (ks - 1) * dl + 1
        hi = max(0, (ys - 1) * st + reach - xs - lo)
        if (xs + lo + hi - reach) // st + 1 != ys:
            return None
        post.append(hi)
    return tuple(post)


def _kernel_layout(shape: tuple[int, ...], spec, last: bool):
    """The kernel's dims in cuDNN's memory order (KRSC for channels-last data, else KCRS), as
    a transpose of its array, and the shape they give."""
    want = (spec[0], *spec[2:], spec[1]) if last else tuple(spec)
    return tuple(want), tuple(shape[d] for d in want)


def _kernel_spec(ndim: int, last: bool) -> tuple[int, ...]:
    """The (K, C, window...) spec of a kernel stored in cuDNN's memory order."""
    return (0, ndim - 1, *range(1, ndim - 1)) if last else tuple(range(ndim))


def _perm_or_none(want: tuple[int, ...]) -> tuple[int, ...] | None:
    return None if list(want) == sorted(want) else tuple(want)


def _channels_last(shape: tuple[int, ...], spec) -> bool | None:
    """True for a packed (batch, spatial..., feature) array, False for a packed (batch,
    feature, spatial...) one, None for any other layout (dims of size 1 aside)."""
    for order, answer in (((spec[0], *spec[2:], spec[1]), True), (tuple(spec), False)):
        dims = [d for d in order if shape[d] != 1]
        if dims == sorted(dims):
            return answer
    return None


def _described(shape: tuple[int, ...], spec, unit: bool,
               last: bool) -> tuple[tuple[int, ...], ...]:
    """cuDNN's (dims, element strides) of a C-contiguous array: its dims in `spec`'s logical
    order, and for a 1-D convolution a trailing spatial dim of size 1 (strided as a packed
    channels-last or channels-first array's would be)."""
    st = strides(shape)
    dims = tuple(shape[d] for d in spec)
    steps = tuple(st[d] for d in spec)
    if unit:
        dims, steps = dims + (1,), steps + ((dims[1] * steps[1]) if last else 1,)
    return dims, steps
