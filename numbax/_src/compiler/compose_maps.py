"""Chains of index maps composed into one (the CPU backend's rewrite): a broadcast, slice,
squeeze or unit-axis reshape that reads the result of another becomes one `index_map` of the
first one's operand (lax/index_map.py); and stacks as selects of broadcasts
(`_stacks_as_selects`), which then compose and fuse the same way.

Fusion places an index map in the nest of its reader, but an index map cannot read a value of
its own nest, and a nest has one shape: `y[:, 0]` (a slice to (n, 1), then a squeeze) was a
strided copy and a view, so `a[..., i, j]` for each entry of a batch of 3 x 3 matrices (a
closed-form determinant) and the columns of an ODE's state (`x, y, z = s[:, 0], s[:, 1], ...`)
cost a pass over memory each, where XLA's fusion composes the maps into the loop that reads
them. A composed map is one load in its reader's loop, or, read by nothing that fuses, one
view or copy (`kc.index_map`). Chains to 0-d values (a scalar picked from an array) and of
complex values are left alone: no loop reads them."""
from __future__ import annotations

import numpy as np

from numbax._src import core
from numbax._src.compiler import passes
from numbax._src.core import Jaxpr, JaxprEqn, Var
from numbax._src.lax import elementwise as lx
from numbax._src.lax import index_map as im
from numbax._src.lax import shape_ops as ls

STACK_MAX = 8  # operands of a stack rewritten as a select (a chain of conditionals an element)


def compose_index_maps(jaxpr: Jaxpr) -> Jaxpr:
    """`jaxpr` with each index map that reads another's result reading the first one's
    operand through the composed map (inside loop bodies and branches too); a composition
    that is the identity is its operand. Maps left unread are dropped."""
    maps: dict[Var, tuple[Var, tuple[im.AxisRead, ...]]] = {}  # value -> (operand, reads)
    env: dict[Var, Var] = {}
    composed = False
    eqns: list[JaxprEqn] = []
    for eqn in _stacks_as_selects(passes.map_bodies(jaxpr, compose_index_maps).eqns):
        eqn = eqn._replace(invars=[env.get(x, x) if isinstance(x, Var) else x
                                   for x in eqn.invars])
        reads = im.reads_of(eqn)  # (None, or one operand and one result)
        if reads is None or not isinstance(eqn.invars[0], Var):
            eqns.append(eqn)
            continue
        x, out = eqn.invars[0], eqn.outvars[0]
        if x in maps and out.aval.ndim and out.aval.dtype.kind != "c":
            source, first = maps[x]
            reads = im.compose(reads, first)
            composed = True
            if source.aval.shape == out.aval.shape and all(
                    r.plain and r.dim == d for d, r in enumerate(reads)):
                env[out] = source  # (a squeeze of an expand_dims, ...)
                continue
            eqn = JaxprEqn(im.index_map_p, [source], [out],
                           {"reads": tuple(tuple(r) for r in reads),
                            "shape": tuple(out.aval.shape)})
            x = source
        maps[out] = (x, reads)
        eqns.append(eqn)
    outvars = [env.get(v, v) if isinstance(v, Var) else v for v in jaxpr.outvars]
    out = Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, outvars)
    return passes.dce(out) if composed else out  # (the maps composed away)


def _stacks_as_selects(eqns: list[JaxprEqn]) -> list[JaxprEqn]:
    """Each concatenation of operands one element thick along its axis (`jnp.stack`) as a
    select among the operands broadcast along that axis, by an iota of it: elementwise work
    and index maps, which fuse into the loop that reads the stack (an RK4 step's right-hand
    side stacks its three derivatives, then the update reads them), where the concatenation
    was a copy of its own. (The broadcasts then compose with the reshapes that made the
    operands one element thick.)"""
    out = []
    for eqn in eqns:
        if eqn.primitive is not ls.concatenate_p or not _stack(eqn):
            out.append(eqn)
            continue
        v = eqn.outvars[0]
        axis, shape = eqn.params["dimension"], v.aval.shape
        which = Var(core.ShapedArray(shape, np.dtype(np.int32)))
        out.append(JaxprEqn(ls.iota_p, [], [which], {"dtype": np.dtype(np.int32),
                                                      "shape": shape, "dimension": axis}))
        cases = []
        for x in eqn.invars:
            c = Var(core.ShapedArray(shape, v.aval.dtype, x.aval.weak_type))
            out.append(JaxprEqn(ls.broadcast_in_dim_p, [x], [c], {
                "shape": shape, "broadcast_dimensions": tuple(range(len(shape)))}))
            cases.append(c)
        out.append(JaxprEqn(lx.select_n_p, [which, *cases], [v], {}))
    return out


def _stack(eqn: JaxprEqn) -> bool:
    axis = eqn.params["dimension"]
    return 2 <= len(eqn.invars) <= STACK_MAX and all(
        isinstance(x, Var) and x.aval.shape[axis] == 1 for x in eqn.invars) and \
        eqn.outvars[0].aval.dtype.kind != "c"
