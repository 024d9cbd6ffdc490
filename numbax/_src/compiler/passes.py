"""Jaxpr-to-jaxpr simplification before fusion: algebraic identities, constant folding, CSE, DCE
(eliminate.py)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from numbax._src import core, typecheck
from numbax._src.compiler.eliminate import EFFECTFUL, cse, dce
from numbax._src.core import Jaxpr, JaxprEqn, Literal, Var
from numbax._src.custom_derivatives import stop_gradient_p
from numbax._src.interpreters import batching
from numbax._src.interpreters.ad import add_any_p
from numbax._src.lax import dot as ld
from numbax._src.lax import elementwise as lx
from numbax._src.lax import index_map as im
from numbax._src.lax import linalg_qr
from numbax._src.lax import reductions as lr
from numbax._src.lax import shape_ops as ls
from numbax._src.lax.control_flow.conditionals import cond_p
from numbax._src.lax.control_flow.loops import scan_p, while_p

Atom = Var | Literal

_RESHAPES = frozenset({ls.reshape_p, ls.squeeze_p})
_BODIES = {scan_p: ("jaxpr",), while_p: ("cond_jaxpr", "body_jaxpr"), cond_p: ("branches",)}
_FOLD_MAX_SIZE = 1  # only fold equations whose output is a scalar


def simplify(jaxpr: Jaxpr) -> Jaxpr:
    """Runs every pass in order; each result is typechecked when jax_enable_checks is on."""
    for pass_ in (simplify_bodies, inline_scalar_broadcasts, sink_reshapes, simplify_algebra,
                  fold_constants,
                  inline_scalar_broadcasts, broadcast_through_reshapes, fold_transposes,
                  expand_outer_dots, cse, dce):
        jaxpr = typecheck.check_jaxpr(pass_(jaxpr))
    return jaxpr


def simplify_bodies(jaxpr: Jaxpr) -> Jaxpr:
    """`simplify` inside the sub-jaxprs of scan, while and cond, which the CPU renders as
    compiled loops and branches: a loop body made by AD carries transposes around its
    products (each a strided copy in Numba) and zero cotangents that nobody reads."""
    return map_bodies(jaxpr, simplify)


def map_bodies(jaxpr: Jaxpr, rewrite: Callable[[Jaxpr], Jaxpr]) -> Jaxpr:
    """`jaxpr` with `rewrite` applied to the sub-jaxprs of its scans, whiles and conds."""
    eqns = []
    for eqn in jaxpr.eqns:
        names = _BODIES.get(eqn.primitive, ())
        if names:
            params = dict(eqn.params)
            for name in names:
                body = params[name]
                one = lambda c: core.ClosedJaxpr(rewrite(c.jaxpr), c.consts)  # noqa: E731
                params[name] = tuple(map(one, body)) if isinstance(body, tuple) else one(body)
            eqn = eqn._replace(params=params)
        eqns.append(eqn)
    return Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, jaxpr.outvars)


# ----------------------------------------------------------------------------- helpers


def _literal_value(x: Atom) -> Any:
    return x.val if isinstance(x, Literal) else None


def _is_const(x: Atom, value: float, zeros: dict[Var, Any]) -> bool:
    """Whether x is the constant `value` (a literal, or a broadcast of one)."""
    if isinstance(x, Literal):
        return x.aval.dtype.kind != "b" and bool(x.val == value)
    return value == 0 and x in zeros


def _signed_zero(x: Atom, negative: bool) -> bool:
    """Whether the zero constant x has the sign `negative` in every part (broadcast zeros from
    AD are +0)."""
    if not isinstance(x, Literal):
        return not negative
    val = np.asarray(x.val)
    parts = (val.real, val.imag) if val.dtype.kind == "c" else (val,)
    return all(bool(np.signbit(p)) == negative for p in parts)


def _same_type(a: Atom, b: Atom) -> bool:
    return (a.aval.shape, a.aval.dtype) == (b.aval.shape, b.aval.dtype)


def _rewrite(jaxpr: Jaxpr, rule: Callable[[JaxprEqn, dict], Atom | None]) -> Jaxpr:
    """Substitutes each equation that `rule` maps to an existing atom; keeps the rest."""
    env: dict[Var, Atom] = {}
    read = lambda x: env.get(x, x) if isinstance(x, Var) else x  # noqa: E731
    facts: dict[str, dict] = {"zeros": {}, "defs": {}}
    eqns = []
    for eqn in jaxpr.eqns:
        eqn = eqn._replace(invars=[read(x) for x in eqn.invars])
        new = rule(eqn, facts) if len(eqn.outvars) == 1 else None
        if new is not None and _same_type(new, eqn.outvars[0]):
            env[eqn.outvars[0]] = new
            continue
        for v in eqn.outvars:
            facts["defs"][v] = eqn
        eqns.append(eqn)
    outvars = [read(x) for x in jaxpr.outvars]
    return Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, outvars)


# ----------------------------------------------------------------------------- algebra


def _algebra_rule(eqn: JaxprEqn, facts: dict) -> Atom | None:
    """x*1, x+0, x-0, x/1, add_any of zeros, double transpose/neg, no-op convert/reshape/bcast."""
    prim = eqn.primitive
    zeros, defs = facts["zeros"], facts["defs"]
    ins = eqn.invars
    out = eqn.outvars[0]
    if prim is ls.broadcast_in_dim_p and isinstance(ins[0], Literal) and ins[0].val == 0:
        zeros[out] = True
    kind = out.aval.dtype.kind
    if prim is add_any_p:  # AD's symbolic zeros: eager skips these adds too
        if _is_const(ins[1], 0, zeros):
            return ins[0]
        if _is_const(ins[0], 0, zeros):
            return ins[1]
    if prim is lx.add_p:  # x + 0 is x only for -0.0 on floats (-0.0 + 0.0 is +0.0)
        for x, c in ((ins[0], ins[1]), (ins[1], ins[0])):
            if _is_const(c, 0, zeros) and (kind in "iu" or _signed_zero(c, True)):
                return x
    if prim is lx.sub_p and _is_const(ins[1], 0, zeros) and (
            kind in "iu" or _signed_zero(ins[1], False)):
        return ins[0]
    if prim is lx.mul_p and kind != "c":  # complex x*1 is not x when a part is inf or nan
        if _is_const(ins[1], 1, zeros):
            return ins[0]
        if _is_const(ins[0], 1, zeros):
            return ins[1]
        if kind in "iub" and (_is_const(ins[0], 0, zeros) or _is_const(ins[1], 0, zeros)):
            zeros[out] = True  # integer x*0 is 0; float x*0 is not (inf, nan)
    if prim is lx.div_p and kind != "c" and _is_const(ins[1], 1, zeros):
        return ins[0]
    if prim in (lx.convert_element_type_p, ls.reshape_p, ls.broadcast_in_dim_p, ls.squeeze_p):
        if isinstance(ins[0], Var) and _same_type(ins[0], out):
            return ins[0]
    if prim in _RESHAPES and isinstance(ins[0], Var):
        inner = defs.get(ins[0])
        if inner is not None and inner.primitive in _RESHAPES and isinstance(
                inner.invars[0], Var) and _same_type(inner.invars[0], out):
            return inner.invars[0]  # reshape (x) back to x's own shape
    if prim in (lx.neg_p, ls.transpose_p) and isinstance(ins[0], Var):
        inner = defs.get(ins[0])
        if inner is not None and inner.primitive is prim:
            if prim is lx.neg_p or _compose(inner.params["permutation"],
                                            eqn.params["permutation"]):
                return inner.invars[0]
    return None


def _compose(first: tuple, second: tuple) -> bool:
    """Whether transposing by `first` then by `second` is the identity."""
    return tuple(first[p] for p in second) == tuple(range(len(first)))


def simplify_algebra(jaxpr: Jaxpr) -> Jaxpr:
    return _rewrite(jaxpr, _algebra_rule)


# ----------------------------------------------------------------------------- constant folding


def _fold_rule(eqn: JaxprEqn, facts: dict) -> Atom | None:
    if not eqn.invars or not all(isinstance(x, Literal) for x in eqn.invars):
        return None
    out = eqn.outvars[0]
    if out.aval.size > _FOLD_MAX_SIZE or out.aval.shape != ():
        return None
    impl = core.impl_rules.get(eqn.primitive)
    # a collective's impl exchanges with the other devices (psum(1, "i") is the axis size)
    if impl is None or eqn.primitive in EFFECTFUL or eqn.primitive in batching.collective_rules:
        return None
    with np.errstate(all="ignore"):
        (value,) = impl(*[np.asarray(x.val) for x in eqn.invars], **eqn.params)
    return Literal(np.asarray(value, dtype=out.aval.dtype), out.aval)


def fold_constants(jaxpr: Jaxpr) -> Jaxpr:
    """Evaluates scalar equations whose inputs are all literals."""
    return _rewrite(jaxpr, _fold_rule)


# ----------------------------------------------------------------------------- transposes


def _free(ndim: int, contract: tuple, batch: tuple) -> list[int]:
    return [d for d in range(ndim) if d not in contract and d not in batch]


def _dot_of_transposed(eqn: JaxprEqn, defs: dict) -> JaxprEqn | None:
    """dot_general(transpose(x), y) -> dot_general(x, y) with renumbered dimensions, when
    the free dimensions keep their order (so the output layout is unchanged)."""
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    dims = [[lc, lb], [rc, rb]]
    invars = list(eqn.invars)
    changed = False
    for i, x in enumerate(eqn.invars):
        inner = defs.get(x) if isinstance(x, Var) else None
        if inner is None or inner.primitive is not ls.transpose_p:
            continue
        perm = inner.params["permutation"]
        c, b = dims[i]
        free = [perm[d] for d in _free(len(perm), c, b)]
        if free != sorted(free):
            continue
        dims[i] = [tuple(perm[d] for d in c), tuple(perm[d] for d in b)]
        invars[i] = inner.invars[0]
        changed = True
    if not changed:
        return None
    (lc, lb), (rc, rb) = dims
    params = dict(eqn.params, dimension_numbers=((lc, rc), (lb, rb)))
    return eqn._replace(invars=invars, params=params)


def _swapped_dot(eqn: JaxprEqn, defs: dict) -> JaxprEqn | None:
    """transpose(dot_general(x, y)) -> dot_general(y, x) when the permutation swaps the two
    free blocks and keeps the batch block: BLAS writes the transposed product directly."""
    x = eqn.invars[0]
    dot = defs.get(x) if isinstance(x, Var) else None
    if dot is None or dot.primitive is not ld.dot_general_p:
        return None
    (lc, rc), (lb, rb) = dot.params["dimension_numbers"]
    lhs, rhs = dot.invars
    nb = len(lb)
    nl = len(_free(lhs.aval.ndim, lc, lb))
    nr = len(_free(rhs.aval.ndim, rc, rb))
    want = (*range(nb), *range(nb + nl, nb + nl + nr), *range(nb, nb + nl))
    if eqn.params["permutation"] != want or not nl or not nr:
        return None
    params = dict(dot.params, dimension_numbers=((rc, lc), (rb, lb)))
    precision = params.get("precision")
    if isinstance(precision, tuple) and len(precision) == 2:
        params["precision"] = precision[::-1]
    return dot._replace(invars=[rhs, lhs], outvars=eqn.outvars, params=params)


_AXIS_REDUCTIONS = frozenset({lr.reduce_sum_p, lr.reduce_max_p, lr.reduce_min_p,
                              lr.reduce_prod_p, lr.reduce_and_p, lr.reduce_or_p,
                              lr.reduce_xor_p, lr.argmax_p, lr.argmin_p})


def _reduction_of_transposed(eqn: JaxprEqn, defs: dict) -> JaxprEqn | None:
    """reduce(transpose(x), axes) -> reduce(x, the axes x had) when the kept axes keep their
    order: `vmap` of a scan with a reduction of its outputs (a batch of simulations' maximum
    over time) moves the time axis behind the batch axis, a transposed copy (2.4 ms of a 3 ms
    call for 365 x 4096 float32), then reduces over it."""
    x = eqn.invars[0]
    inner = defs.get(x) if isinstance(x, Var) else None
    if inner is None or inner.primitive is not ls.transpose_p:
        return None
    perm, axes = inner.params["permutation"], eqn.params["axes"]
    kept = [perm[d] for d in range(len(perm)) if d not in axes]
    if kept != sorted(kept):
        return None
    params = dict(eqn.params, axes=tuple(sorted(perm[a] for a in axes)))
    return eqn._replace(invars=[inner.invars[0]], params=params)


def _reduction_of_unit_axes(eqn: JaxprEqn) -> list[JaxprEqn] | None:
    """A reduction over axes of size 1 only (what the transpose of a broadcast along a size-1
    axis makes: a scan's backward step summed (4, 1, 64) over its middle axis, a loop of
    zeros and an add a step) is a reshape of its one element, plus 0.0 for a float sum (as
    eager's sum: -0.0 + 0.0 is +0.0). Not argmax/argmin (their result is an index) nor a sum
    that changes the dtype."""
    x, out = eqn.invars[0], eqn.outvars[0]
    if eqn.primitive in (lr.argmax_p, lr.argmin_p) or not isinstance(x, Var) or \
            x.aval.dtype != out.aval.dtype or \
            any(x.aval.shape[a] != 1 for a in eqn.params["axes"]):
        return None
    reshape = {"new_sizes": out.aval.shape, "dimensions": None}
    if eqn.primitive is not lr.reduce_sum_p or out.aval.dtype.kind not in "fc":
        return [JaxprEqn(ls.reshape_p, [x], eqn.outvars, reshape)]
    one = Var(out.aval)
    zero = Literal(np.zeros((), out.aval.dtype)[()], core.ShapedArray((), out.aval.dtype))
    return [JaxprEqn(ls.reshape_p, [x], [one], reshape),
            JaxprEqn(lx.add_p, [one, zero], eqn.outvars, {})]


def fold_transposes(jaxpr: Jaxpr) -> Jaxpr:
    """Transposes next to dot_general become dimension numbers (BLAS reads and writes
    transposed layouts for free), and those a reduction reads become its axes; the
    transposes left unused are removed by DCE. Reductions over size-1 axes become reshapes."""
    defs: dict[Var, JaxprEqn] = {}
    eqns = []
    for eqn in jaxpr.eqns:
        new = None
        if eqn.primitive is ld.dot_general_p:
            new = _dot_of_transposed(eqn, defs)
        elif eqn.primitive is ls.transpose_p:
            new = _swapped_dot(eqn, defs)
        elif eqn.primitive in _AXIS_REDUCTIONS:
            new = _reduction_of_unit_axes(eqn) or _reduction_of_transposed(eqn, defs)
        for out in new if isinstance(new, list) else [new or eqn]:
            for v in out.outvars:
                defs[v] = out
            eqns.append(out)
    return Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, jaxpr.outvars)


def _outer_dot(eqn: JaxprEqn) -> list[JaxprEqn] | None:
    """dot_general whose contracting dims are absent or all of size 1 as broadcasts and one mul
    (the size-1 contracted axes reshaped away first: a sum of one product is that product,
    the bits a GEMM gives too), or None."""
    (xc, yc), (xb, yb) = eqn.params["dimension_numbers"]
    x, y = eqn.invars
    out = eqn.outvars[0]
    if not all(isinstance(v, Var) for v in (x, y)) or any(x.aval.shape[d] != 1 for d in xc):
        return None
    if not x.aval.dtype == y.aval.dtype == out.aval.dtype or out.aval.dtype.kind not in "fiu":
        return None
    eqns = []
    if xc:
        (x, xb), (y, yb) = _without_axes(x, xc, xb, eqns), _without_axes(y, yc, yb, eqns)
    nb = len(xb)
    xf = [d for d in range(x.aval.ndim) if d not in xb]
    yf = [d for d in range(y.aval.ndim) if d not in yb]
    xmap = {d: i for i, d in enumerate(xb)} | {d: nb + i for i, d in enumerate(xf)}
    ymap = {d: i for i, d in enumerate(yb)} | {d: nb + len(xf) + i for i, d in enumerate(yf)}
    shape = out.aval.shape
    operands = []
    for v, dmap in ((x, xmap), (y, ymap)):
        dims = tuple(dmap[d] for d in range(v.aval.ndim))
        if any(b <= a for a, b in zip(dims, dims[1:])):
            return None  # would need a transpose first
        if v.aval.shape == shape:
            operands.append(v)
            continue
        w = Var(core.ShapedArray(shape, v.aval.dtype))
        eqns.append(JaxprEqn(ls.broadcast_in_dim_p, [v], [w],
                             {"shape": shape, "broadcast_dimensions": dims}))
        operands.append(w)
    eqns.append(JaxprEqn(lx.mul_p, operands, [out], {}))
    return eqns


def _without_axes(v: Var, axes: tuple, batch: tuple, eqns: list) -> tuple[Var, tuple]:
    """(v reshaped without its size-1 `axes`, `batch` renumbered for it); the reshape is
    appended to `eqns`."""
    kept = [d for d in range(v.aval.ndim) if d not in axes]
    w = Var(core.ShapedArray(tuple(v.aval.shape[d] for d in kept), v.aval.dtype))
    eqns.append(JaxprEqn(ls.reshape_p, [v], [w], {"new_sizes": w.aval.shape,
                                                  "dimensions": None}))
    return w, tuple(kept.index(d) for d in batch)


# Binary ops whose lax rules accept a rank-0 operand next to an array (elementwise docs).
_SCALAR_OK = frozenset({lx.add_p, lx.sub_p, lx.mul_p, lx.div_p, lx.max_p, lx.min_p})
# Elementwise ops sink_reshapes moves past reshapes (the ones autodiff emits around keepdims).
_ELEMENTWISE_FOR_RESHAPES = frozenset({
    lx.neg_p, lx.exp_p, lx.log_p, lx.log1p_p, lx.expm1_p, lx.tanh_p, lx.logistic_p, lx.sqrt_p,
    lx.rsqrt_p, lx.abs_p, lx.square_p, lx.integer_pow_p, lx.add_p, add_any_p, lx.sub_p,
    lx.mul_p, lx.div_p, lx.max_p, lx.min_p, lx.select_n_p, lx.convert_element_type_p, lx.eq_p,
    lx.ne_p, lx.lt_p, lx.le_p, lx.gt_p, lx.ge_p, lx.sign_p, stop_gradient_p,
})


def inline_scalar_broadcasts(jaxpr: Jaxpr) -> Jaxpr:
    """A broadcast of a broadcast of a scalar literal broadcasts the literal, and binary ops
    take the literal itself instead of its broadcast (autodiff emits `mul x (bcast -1.0)`
    through a separate f[10] broadcast, which cost a kernel and a fusion break)."""
    lit_of: dict[Var, Literal] = {}
    eqns = []
    for eqn in jaxpr.eqns:
        prim = eqn.primitive
        ins = eqn.invars
        if prim is ls.broadcast_in_dim_p:
            x = ins[0]
            src = x if isinstance(x, Literal) and x.aval.ndim == 0 else lit_of.get(x)
            if src is not None:
                lit_of[eqn.outvars[0]] = src
                if src is not x:
                    eqn = eqn._replace(invars=[src], params={**eqn.params,
                                                             "broadcast_dimensions": ()})
        elif prim in _SCALAR_OK and len(ins) == 2:
            new = [lit_of.get(x, x) if isinstance(x, Var) else x for x in ins]
            if any(a is not b for a, b in zip(new, ins)) and any(
                    x.aval.shape == eqn.outvars[0].aval.shape for x in new) and all(
                    x.aval.dtype == eqn.outvars[0].aval.dtype for x in new):
                eqn = eqn._replace(invars=new)
        eqns.append(eqn)
    return Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, jaxpr.outvars)


def sink_reshapes(jaxpr: Jaxpr) -> Jaxpr:
    """An elementwise op whose array operands are all reshapes of one shape S runs in S and
    reshapes its result: `div (reshape a) (reshape b)` -> `reshape (div a b)`, so chains of
    f[32] <-> f[32,1] reshapes that autodiff emits around keepdims collapse (the algebra
    pass then drops reshape-of-reshape) and the ops fuse with their f[32] neighbours."""
    defs: dict[Var, JaxprEqn] = {}
    eqns = []
    for eqn in jaxpr.eqns:
        new = None
        if eqn.primitive in _ELEMENTWISE_FOR_RESHAPES and len(eqn.outvars) == 1:
            srcs = []
            for x in eqn.invars:
                if isinstance(x, Literal) or x.aval.ndim == 0:
                    srcs.append(x)
                    continue
                d = defs.get(x)
                if d is None or d.primitive is not ls.reshape_p or \
                        d.params.get("dimensions") is not None:
                    break
                srcs.append(d.invars[0])
            else:
                shapes = {x.aval.shape for x in srcs if x.aval.ndim}
                out = eqn.outvars[0]
                # only towards fewer dims (f[32,1] ops run on f[32]), never the other way
                if len(shapes) == 1 and len(next(iter(shapes))) < out.aval.ndim:
                    (shape,) = shapes
                    mid = Var(core.ShapedArray(shape, out.aval.dtype, out.aval.weak_type))
                    new = [eqn._replace(invars=srcs, outvars=[mid]),
                           JaxprEqn(ls.reshape_p, [mid], [out], {"new_sizes": out.aval.shape,
                                                                 "dimensions": None})]
        for e in new or [eqn]:
            for v in e.outvars:
                defs[v] = e
            eqns.append(e)
    return Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, jaxpr.outvars)


def _unit_free_axes(shape: tuple) -> list[int]:
    return [d for d, n in enumerate(shape) if n != 1]


def broadcast_through_reshapes(jaxpr: Jaxpr) -> Jaxpr:
    """`broadcast_in_dim (reshape y)` where the reshape only adds or drops size-1 axes of a y
    with none of its own broadcasts y directly: keepdims code (`max(x, 1, keepdims=True)`,
    logsumexp's f[n] -> f[n,1] -> f[n,128]) otherwise leaves a reshape, a library op, between
    a row reduction and its consumers, which splits one fused row kernel into two."""
    defs: dict[Var, JaxprEqn] = {}
    eqns = []
    for eqn in jaxpr.eqns:
        x = eqn.invars[0] if eqn.invars else None
        d = defs.get(x) if eqn.primitive is ls.broadcast_in_dim_p else None
        if d is not None and d.primitive in _RESHAPES and isinstance(d.invars[0], Var) \
                and d.params.get("dimensions") is None:
            y = d.invars[0]
            kept = _unit_free_axes(x.aval.shape)
            if 1 not in y.aval.shape and [x.aval.shape[i] for i in kept] == list(y.aval.shape):
                dims = eqn.params["broadcast_dimensions"]
                eqn = eqn._replace(invars=[y], params={
                    **eqn.params, "broadcast_dimensions": tuple(dims[i] for i in kept)})
        for v in eqn.outvars:
            defs[v] = eqn
        eqns.append(eqn)
    return Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, jaxpr.outvars)


def expand_outer_dots(jaxpr: Jaxpr) -> Jaxpr:
    """dot_general with no contracting dimensions (what per-example gradients emit: a batch
    dim times a free dim, e.g. f64[569] x f64[569,30] -> f64[569,30]) or only ones of size 1
    (a dense layer's weight gradient at batch 1, xᵀ @ d of f32[1,784] and f32[1,512], and per
    example under vmap) is an elementwise product of broadcasts: one fusible loop instead of
    np.matmul over 569 1x1 @ 1x30 GEMMs, and at batch 1 the gradient is not written out before
    the update that reads it (XLA's algebraic simplifier makes the same rewrite)."""
    eqns = []
    for eqn in jaxpr.eqns:
        new = _outer_dot(eqn) if eqn.primitive is ld.dot_general_p else None
        eqns.extend(new or [eqn])
    return Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, jaxpr.outvars)


# Contractions this short (product of the contracted sizes) with this few multiply-adds per
# batch element: expand_small_dots writes them as a product of broadcasts and a sum.
SMALL_DOT_K = 16
SMALL_DOT_MACS = 256


def _small_batched_dot(eqn: JaxprEqn, batched: bool = True) -> list[JaxprEqn] | None:
    """dot_general with batch dimensions (any, where not `batched`), contracting at most
    SMALL_DOT_K elements and making at most SMALL_DOT_MACS multiply-adds per batch index, as
    the sum over the contracted elements c of x's and y's elements at c (index maps of each
    onto the output's shape), added in order of c in the operands' dtype, as a GEMM adds; or
    None."""
    (xc, yc), (xb, yb) = eqn.params["dimension_numbers"]
    x, y = eqn.invars
    out = eqn.outvars[0]
    if batched and not xb or not out.aval.ndim or not all(isinstance(v, Var) for v in (x, y)):
        return None  # (a 0-d product is no loop: bodies keep its scalar form)
    if not x.aval.dtype == y.aval.dtype == out.aval.dtype or out.aval.dtype.kind not in "fiu":
        return None
    contracted = tuple(x.aval.shape[d] for d in xc)
    k = int(np.prod(contracted))
    if not 0 < k <= SMALL_DOT_K or k * int(np.prod(out.aval.shape[len(xb):])) > SMALL_DOT_MACS:
        return None
    nb = len(xb)
    xf = [d for d in range(x.aval.ndim) if d not in xb and d not in xc]
    yf = [d for d in range(y.aval.ndim) if d not in yb and d not in yc]
    # each operand axis's output axis: batch axes first, then x's free axes, then y's
    places = [{d: i for i, d in enumerate(batch)} | {d: first + i for i, d in enumerate(free)}
              for batch, free, first in ((xb, xf, nb), (yb, yf, nb + len(xf)))]
    if any([p[d] for d in sorted(p)] != sorted(p.values()) for p in places):
        return None  # (an index map reads its operand's axes in the output's order)
    eqns: list[JaxprEqn] = []
    total = None
    for at in np.ndindex(*contracted):
        factors = []
        for v, con, place in ((x, xc, places[0]), (y, yc, places[1])):
            fixed = dict(zip(con, at, strict=True))
            reads = tuple((None, int(fixed[d]), 0) if d in fixed else (place[d], 0, 1)
                          for d in range(v.aval.ndim))
            w = Var(core.ShapedArray(out.aval.shape, v.aval.dtype))
            eqns.append(JaxprEqn(im.index_map_p, [v], [w], {"reads": reads,
                                                           "shape": out.aval.shape}))
            factors.append(w)
        term = Var(core.ShapedArray(out.aval.shape, out.aval.dtype))
        eqns.append(JaxprEqn(lx.mul_p, factors, [term], {}))
        if total is not None:
            summed = Var(core.ShapedArray(out.aval.shape, out.aval.dtype))
            eqns.append(JaxprEqn(lx.add_p, [total, term], [summed], {}))
            term = summed
        total = term
    eqns[-1] = JaxprEqn(eqns[-1].primitive, eqns[-1].invars, [out], eqns[-1].params)
    return eqns


def expand_small_dots(jaxpr: Jaxpr, in_body: bool = False) -> Jaxpr:
    """Batched products of small matrices (what vmap makes of a 3x3 matrix times a vector or
    a matrix, or `einsum('nij,nj->ni')`) as sums of products of their elements
    (_small_batched_dot): one fused loop over the batch where np.matmul runs a tiny GEMM per
    batch index (250k 3x3 matrix-vector products took 5.2-9.3 ms on the VM against jax.jit's
    0.7). The same multiply-adds, added in the operands' dtype. Where an operand's axes come
    in another order than the output's (an index map cannot read them so) the product stays.
    Run by the CPU backend, before index maps are composed. In loop and branch bodies
    (`in_body`) unbatched products this small are expanded too: there each product was an
    allocation and a BLAS or GEMM-task call per step, and a Kalman filter's 2 x 2 step took
    3.4 us where its arithmetic is a few dozen multiply-adds."""
    jaxpr = map_bodies(jaxpr, lambda body: expand_small_dots(body, in_body=True))
    eqns = []
    for eqn in jaxpr.eqns:
        new = (_small_batched_dot(eqn, batched=not in_body)
               if eqn.primitive is ld.dot_general_p else None)
        eqns.extend(new or [eqn])
    return Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, jaxpr.outvars)


def qr_without_q(jaxpr: Jaxpr) -> Jaxpr:
    """A qr (without pivoting) whose Q no equation or output reads becomes `qr_r`: geqrf alone,
    without the orgqr that forms Q, half of a square QR's work (`qr(a)[1]` of 1024^2 on 16
    Xeon cores: 60 ms against jax.jit's 32, whose expansion drops it as dead code). Run by the
    CPU backend (qr_r has no GPU kernel); the top level of the program, after DCE."""
    read = {x for eqn in jaxpr.eqns for x in eqn.invars if isinstance(x, Var)}
    read.update(x for x in jaxpr.outvars if isinstance(x, Var))
    eqns = []
    for eqn in jaxpr.eqns:
        if eqn.primitive is linalg_qr.qr_p and not eqn.params["pivoting"] \
                and eqn.outvars[0] not in read:
            eqn = JaxprEqn(linalg_qr.qr_r_p, eqn.invars, [eqn.outvars[1]],
                           {"full_matrices": eqn.params["full_matrices"]})
        eqns.append(eqn)
    return Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, jaxpr.outvars)
