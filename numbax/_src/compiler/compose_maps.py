"""Chains of index maps composed into one (the CPU backend's rewrite): a broadcast, slice,
squeeze or unit-axis reshape that reads the result of another becomes one `index_map` of the
first one's operand (lax/index_map.py).

Fusion places an index map in the nest of its reader, but an index map cannot read a value of
its own nest, and a nest has one shape: `y[:, 0]` (a slice to (n, 1), then a squeeze) was a
strided copy and a view, so `a[..., i, j]` for each entry of a batch of 3 x 3 matrices (a
closed-form determinant) and the columns of an ODE's state (`x, y, z = s[:, 0], s[:, 1], ...`)
cost a pass over memory each, where XLA's fusion composes the maps into the loop that reads
them. A composed map is one load in its reader's loop, or, read by nothing that fuses, one
view or copy (`kc.index_map`). Chains to 0-d values (a scalar picked from an array) and of
complex values are left alone: no loop reads them."""
from __future__ import annotations

from numbax._src.compiler import passes
from numbax._src.core import Jaxpr, JaxprEqn, Var
from numbax._src.lax import index_map as im


def compose_index_maps(jaxpr: Jaxpr) -> Jaxpr:
    """`jaxpr` with each index map that reads another's result reading the first one's
    operand through the composed map (inside loop bodies and branches too); a composition
    that is the identity is its operand. Maps left unread are dropped."""
    maps: dict[Var, tuple[Var, tuple[im.AxisRead, ...]]] = {}  # value -> (operand, reads)
    env: dict[Var, Var] = {}
    composed = False
    eqns: list[JaxprEqn] = []
    for eqn in passes.map_bodies(jaxpr, compose_index_maps).eqns:
        eqn = eqn._replace(invars=[env.get(x, x) if isinstance(x, Var) else x
                                   for x in eqn.invars])
        reads = im.reads_of(eqn) if len(eqn.outvars) == 1 else None
        x = eqn.invars[0] if eqn.invars else None
        if reads is None or not isinstance(x, Var):
            eqns.append(eqn)
            continue
        out = eqn.outvars[0]
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
