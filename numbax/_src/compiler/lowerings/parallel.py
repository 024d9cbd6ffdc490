"""Collectives (lax/parallel.py) under jit: compiled only inside pmap workers, where their eager
implementations are the workers' shared-memory exchanges (parallel/collectives.py installs
them), so the driver calls those between kernels."""
from __future__ import annotations

from numbax._src import core
from numbax._src.compiler.registry import EAGER, register
from numbax._src.lax import parallel as lp
from numbax._src.lax import parallel_ragged, parallel_sendrecv, shard_map, sharding_ops
from numbax._src.lax import parallel_redistribute as lpr

# sharding_constraint is the identity once a program is compiled (layouts are bookkeeping);
# shard_map's implementation runs its body on the SPMD engine's workers.
for _prim in (lp.psum_p, lp.psum_many_p, lp.pmax_p, lp.pmin_p, lp.all_gather_p,
              lp.ppermute_p, lp.psum_scatter_p, lp.axis_index_p, lpr.all_to_all_p,
              parallel_ragged.ragged_all_to_all_p, parallel_sendrecv.psend_p,
              parallel_sendrecv.precv_p, sharding_ops.sharding_constraint_p,
              shard_map.shard_map_p):
    register(_prim, backend="cpu", library=EAGER)



def _identity(eqn: core.JaxprEqn) -> core.ClosedJaxpr:
    """device_put under jit: the values themselves (one host memory)."""
    args = [core.Var(x.aval) for x in eqn.invars]
    return core.ClosedJaxpr(core.Jaxpr([], args, [], list(args)), [])


register(sharding_ops.device_put_p, expand=_identity)
