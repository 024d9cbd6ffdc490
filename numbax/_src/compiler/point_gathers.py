"""Gathers of single elements as loads in the loops around them (the CPU backend's rewrite).

A gather whose every output element is one element of its operand (numpy's `x[i, j]` with
index arrays, `map_coordinates`' corners, `jnp.interp`'s neighbours, vmapped lookups) ran as
a library call: the index vectors written as an (..., k) array by the loop computing them, the
call reading them back and writing the gathered values, and the loop reading those. Warping 8
images of 512 x 512 with `map_coordinates` spent 12 such calls of ~7 ms each on the VM, 5.7x
jax.jit's time: XLA computes each coordinate, loads the element and weights it in one loop.

Here such a gather becomes `lookup(x, c0, ..., c{n-1})`: one coordinate per axis of x, each of
the output's shape (an index map of the index array's column, which composes with the
concatenation and reshapes that built it; an iota along an axis of x taken whole), which fuses
into the loop nest of its coordinates and readers as a load from x, a whole array the nest
reads (`Fusion.LOOKUP`). Out-of-bounds coordinates clamp or select the fill value as the
gather's do."""
from __future__ import annotations

import numpy as np

from numbax._src import core
from numbax._src.compiler import narrow_floats, passes
from numbax._src.core import Jaxpr, JaxprEqn, Primitive, ShapedArray, Var
from numbax._src.errors import NumbaxTypeError
from numbax._src.interpreters import ad, batching
from numbax._src.lax import elementwise as ew
from numbax._src.lax import index_map as im
from numbax._src.lax import indexing as ix
from numbax._src.lax import shape_ops as ls

# Elements of x taken whole (its axes no index selects) per index vector up to which a gather
# still becomes loads: each is then its own clamped load, where the library copies a row.
REST_MAX = 16

lookup_p = Primitive("lookup")


def _abstract_eval(table: ShapedArray, *coords: ShapedArray, mode: str, fill_value) -> list:
    if len(coords) != table.ndim or any(c.shape != coords[0].shape or c.dtype.kind not in "iu"
                                        for c in coords):
        raise NumbaxTypeError(
            f"lookup: expected one integer coordinate array per axis of the table "
            f"{table.shape}, all of one shape; got {[(c.shape, str(c.dtype)) for c in coords]}.")
    return [ShapedArray(coords[0].shape, table.dtype, table.weak_type)]


def _impl(table, *coords, mode: str, fill_value) -> list:
    """The gather it replaces, on the host (the driver's fallback where no loop takes it)."""
    table = np.asarray(table)
    clamped, valid = [], np.ones(np.shape(coords[0]), bool)
    for c, n in zip(coords, table.shape, strict=True):
        c = np.asarray(c).astype(np.int64)
        valid &= (c >= 0) & (c < n)
        clamped.append(np.clip(c, 0, n - 1))
    out = table[tuple(clamped)]
    if mode == "fill":
        out = np.where(valid, out, np.asarray(fill_value, table.dtype))
    return [np.asarray(out, table.dtype)]


def _composite(table, *coords, mode: str, fill_value):
    """The gather the rewrite replaced, for the primitive's jvp and batching rules (the
    rewrite runs after every transformation, but the primitive keeps the matrix's contract)."""
    shape = core.get_aval(coords[0]).shape
    wide = np.result_type(*(core.get_aval(c).dtype for c in coords), np.int32)
    columns = [ls.reshape(ew.convert_element_type(c, wide), (*shape, 1)) for c in coords]
    return ix.gather_p.bind(table, ls.concatenate(columns, len(shape)),
                            axes=tuple(range(len(coords))), mode=mode, fill_value=fill_value)


def _jvp(primals, tangents, **params):
    return ad.jvp_flat(lambda *a: [_composite(*a, **params)], primals, tangents)


def _batch(axis_size, vals, dims, **params):
    axis = batching.AxisData(axis_size, None)
    return batching.vmap_flat(lambda *a: [_composite(*a, **params)], axis, dims, [0], vals), [0]


core.abstract_eval_rules[lookup_p] = _abstract_eval
core.impl_rules[lookup_p] = _impl
ad.jvp_rules[lookup_p] = _jvp
batching.batch_rules[lookup_p] = _batch


def gathers_as_lookups(jaxpr: Jaxpr) -> Jaxpr:
    """`jaxpr` (top level only: compiled control flow renders its own loops) with each gather of
    single elements written as a lookup (module docstring)."""
    made = {v: e for e in jaxpr.eqns for v in e.outvars}
    eqns: list[JaxprEqn] = []
    changed = False
    for eqn in jaxpr.eqns:
        if eqn.primitive is ix.gather_p and _takes(eqn):
            eqns.extend(_as_lookup(eqn, made))
            changed = True
        else:
            eqns.append(eqn)
    if not changed:
        return jaxpr
    return passes.dce(Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, jaxpr.outvars))


def _takes(eqn: JaxprEqn) -> bool:
    x, idx = eqn.invars
    out = eqn.outvars[0].aval
    if not (isinstance(x, Var) and isinstance(idx, Var)) or x.aval.ndim == 0:
        return False
    rest = out.shape[idx.aval.ndim - 1:]
    # (unsigned 64-bit coordinates have no common type with the bounds in Numba; complex and
    # narrow floats keep the library's copies)
    return (x.aval.size > 0 and out.size > 0 and out.ndim > 0
            and int(np.prod(rest, dtype=np.int64)) <= REST_MAX
            and idx.aval.dtype != np.uint64 and x.aval.dtype.kind != "c"
            and x.aval.dtype not in narrow_floats.NARROW)


def _as_lookup(eqn: JaxprEqn, made: dict[Var, JaxprEqn]) -> list[JaxprEqn]:
    x, idx = eqn.invars
    out = eqn.outvars[0]
    axes, mode = eqn.params["axes"], eqn.params["mode"]
    fill = eqn.params["fill_value"]
    if mode == "fill" and fill is None:
        fill = ix.default_fill(x.aval.dtype)
    batch = idx.aval.ndim - 1
    shape = out.aval.shape
    new: list[JaxprEqn] = []
    coords: list[Var] = []
    rest = batch  # the output axis of x's next axis taken whole
    for a in range(x.aval.ndim):
        if a in axes:
            coords.append(_column(idx, axes.index(a), shape, made, new))
            continue
        c = Var(ShapedArray(shape, np.dtype(np.int32)))
        new.append(JaxprEqn(ls.iota_p, [], [c], {"dtype": np.dtype(np.int32), "shape": shape,
                                                  "dimension": rest}))
        coords.append(c)
        rest += 1
    new.append(JaxprEqn(lookup_p, [x, *coords], [out], {"mode": mode, "fill_value": fill}))
    return new


def _column(idx: Var, j: int, shape: tuple, made: dict[Var, JaxprEqn],
            new: list[JaxprEqn]) -> Var:
    """Index vector entry j of every output element: an index map of the column of idx, or of
    the piece of a concatenation along the vectors' axis that holds it."""
    batch = idx.aval.ndim - 1
    src, at = idx, j
    maker = made.get(idx)
    if maker is not None and maker.primitive is ls.concatenate_p and \
            maker.params["dimension"] == batch:
        for piece in maker.invars:
            width = piece.aval.shape[batch]
            if at < width:
                if isinstance(piece, Var):
                    src = piece
                else:
                    at = j
                break
            at -= width
    reads = tuple((d, 0, 0) if src.aval.shape[d] == 1 else (d, 0, 1) for d in range(batch))
    c = Var(ShapedArray(shape, src.aval.dtype))
    new.append(JaxprEqn(im.index_map_p, [src], [c], {
        "reads": (*reads, (None, at, 0)), "shape": shape}))
    return c
