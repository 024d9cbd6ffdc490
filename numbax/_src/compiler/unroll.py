"""Scans the program asks to unroll (`unroll=True`, or an unroll of at least their length),
unrolled into straight-line equations before fusion, as XLA unrolls them.

A scan is a compiled loop whose every step is a pass over its arrays: `jnp.polyval` (a scan of
its coefficients with `unroll=16`) made eight passes over a million values, 1.3 ms on the VM
against jax.jit's 0.35, where the unrolled steps are one fused loop. Each step reads its
slice of the scanned inputs through a slice and a squeeze (index maps, which fuse into their
readers) and its outputs are stacked by a concatenation. Scans whose unrolled equations would
pass UNROLLED_EQNS_MAX stay loops, as do bodies holding array constants."""
from __future__ import annotations

from numbax._src import core
from numbax._src.compiler import inline, passes
from numbax._src.core import Jaxpr, JaxprEqn, Var
from numbax._src.lax import shape_ops as ls
from numbax._src.lax.control_flow.loops import scan_p

UNROLLED_EQNS_MAX = 2048  # equations an unrolled scan may add


def unroll_scans(jaxpr: Jaxpr) -> Jaxpr:
    """`jaxpr` with each scan that asks for a full unroll (in loop bodies too) unrolled."""
    jaxpr = passes.map_bodies(jaxpr, unroll_scans)
    if not any(_unrolls(e) for e in jaxpr.eqns):
        return jaxpr
    env: dict[Var, core.Atom] = {}
    eqns: list[JaxprEqn] = []
    read = lambda x: env.get(x, x) if isinstance(x, Var) else x  # noqa: E731
    for eqn in jaxpr.eqns:
        eqn = eqn._replace(invars=[read(x) for x in eqn.invars])
        if not _unrolls(eqn):
            eqns.append(eqn)
            continue
        for v, value in zip(eqn.outvars, _steps(eqn, eqns), strict=True):
            env[v] = value
    return Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, [read(x) for x in jaxpr.outvars])


def _unrolls(eqn: JaxprEqn) -> bool:
    if eqn.primitive is not scan_p:
        return False
    p = eqn.params
    body = p["jaxpr"]
    length, n_consts, n_carry = p["length"], p["num_consts"], p["num_carry"]
    if not 1 <= length <= p["unroll"] or body.consts or \
            length * len(body.jaxpr.eqns) > UNROLLED_EQNS_MAX:
        return False
    carries = zip(eqn.invars[n_consts:n_consts + n_carry],
                  body.jaxpr.invars[n_consts:n_consts + n_carry],
                  body.jaxpr.outvars[:n_carry], eqn.outvars[:n_carry], strict=True)
    # (weak types may differ: `0.0` carried into a float64 sum; a jaxpr's dtypes are explicit)
    return all(len({(v.aval.shape, v.aval.dtype) for v in vs}) == 1 for vs in carries)


def _steps(eqn: JaxprEqn, out: list[JaxprEqn]) -> list[core.Atom]:
    """The scan's results: its steps' equations appended to `out`, each step's slices of the
    scanned inputs read by index maps, its outputs stacked in order of index."""
    p = eqn.params
    body = p["jaxpr"].jaxpr
    n_consts, n_carry, length = p["num_consts"], p["num_carry"], p["length"]
    consts, carry = eqn.invars[:n_consts], list(eqn.invars[n_consts:n_consts + n_carry])
    xs = eqn.invars[n_consts + n_carry:]
    ys_at: dict[int, list] = {}
    for i in (reversed(range(length)) if p["reverse"] else range(length)):
        slices = [_row(x, i, v.aval, out) for x, v in
                  zip(xs, body.invars[n_consts + n_carry:], strict=True)]
        env: dict = dict(zip(body.invars, [*consts, *carry, *slices], strict=True))
        inline.splice(body.eqns, env, out)
        results = [env.get(x, x) if isinstance(x, Var) else x for x in body.outvars]
        carry, ys_at[i] = results[:n_carry], results[n_carry:]
    stacked = [_stack([ys_at[i][k] for i in range(length)], v, out)
               for k, v in enumerate(eqn.outvars[n_carry:])]
    return [*carry, *stacked]


def _row(x, i: int, aval: core.ShapedArray, out: list[JaxprEqn]) -> Var:
    """x[i] as a slice and a squeeze (index maps: they compose and fuse into their readers)."""
    rest = tuple(x.aval.shape[1:])
    one = Var(core.ShapedArray((1, *rest), x.aval.dtype, x.aval.weak_type))
    out.append(JaxprEqn(ls.slice_p, [x], [one], {
        "start_indices": (i, *[0] * len(rest)), "limit_indices": (i + 1, *rest),
        "strides": (1,) * (1 + len(rest))}))
    row = Var(aval)
    out.append(JaxprEqn(ls.squeeze_p, [one], [row], {"dimensions": (0,)}))
    return row


def _stack(ys: list, v: Var, out: list[JaxprEqn]) -> Var:
    """The steps' outputs `ys` stacked along a new leading axis into `v`'s shape."""
    parts = []
    for y in ys:
        part = Var(core.ShapedArray((1, *v.aval.shape[1:]), v.aval.dtype, v.aval.weak_type))
        out.append(JaxprEqn(ls.broadcast_in_dim_p, [y], [part], {
            "shape": part.aval.shape,
            "broadcast_dimensions": tuple(range(1, len(v.aval.shape)))}))
        parts.append(part)
    stacked = Var(v.aval)
    out.append(JaxprEqn(ls.concatenate_p, parts, [stacked], {"dimension": 0}))
    return stacked
