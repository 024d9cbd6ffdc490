"""Updates of a constant fill as pads, inside loop bodies: `jnp.zeros_like(u).at[1:-1].set(v)`
(a stencil's boundary, dynamic_update_slice into a broadcast scalar at constant starts) is
`pad(v, 0)`, which a compiled loop's nest reads element by element (its operand inside the
box, the fill outside: cpu/flow_runs.edge_pad), where the update copied the hoisted zeros and
then the slice each step (a 1-D heat equation's 500 steps of 4096: 0.75 -> 0.22 ms on the VM,
jax.jit 0.27). It runs before loop-invariant code motion, which would move the broadcast out
of the body and leave the update an opaque copy of a constant."""
from __future__ import annotations

from numbax._src.compiler import passes
from numbax._src.core import Jaxpr, JaxprEqn, Literal, Var
from numbax._src.lax import indexing as ix
from numbax._src.lax import shape_ops as ls


def pads_in_bodies(jaxpr: Jaxpr) -> Jaxpr:
    """`jaxpr` with, in the bodies of its loops and branches (nested ones too), each
    dynamic_update_slice of a broadcast scalar at literal starts written as a pad."""
    return passes.map_bodies(jaxpr, _as_pads)


def _as_pads(jaxpr: Jaxpr) -> Jaxpr:
    jaxpr = passes.map_bodies(jaxpr, _as_pads)
    fills = {e.outvars[0]: e.invars[0] for e in jaxpr.eqns
             if e.primitive is ls.broadcast_in_dim_p and e.invars[0].aval.ndim == 0}
    eqns = [_pad(e, fills) or e for e in jaxpr.eqns]
    return Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, jaxpr.outvars)


def _pad(eqn: JaxprEqn, fills: dict) -> JaxprEqn | None:
    """The pad `eqn` is, if it is an update of a broadcast scalar at literal starts."""
    if eqn.primitive is not ix.dynamic_update_slice_p:
        return None
    operand, update, *starts = eqn.invars
    if not isinstance(operand, Var) or operand not in fills or \
            not all(isinstance(s, Literal) for s in starts):
        return None
    config = []
    for s, n, k in zip(starts, operand.aval.shape, update.aval.shape, strict=True):
        lo = min(max(int(s.val), 0), n - k)  # the update's clamped start, as the primitive's
        config.append((lo, n - k - lo, 0))
    return eqn._replace(primitive=ls.pad_p, invars=[update, fills[operand]],
                        params={"padding_config": tuple(config)})
