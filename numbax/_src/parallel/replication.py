"""shard_map's check_vma: which manual mesh axes each value of a per-device program varies
over, read off the traced jaxpr, so an output whose out_specs leave out an axis it varies over
is an error (JAX's replication check). A value varies over the axes its argument's in_specs
split; psum, pmean, pmax and pmin make it invariant over theirs; axis_index, all_gather,
psum_scatter, all_to_all and ppermute make it vary over theirs."""
from __future__ import annotations

from collections.abc import Sequence

from numbax._src import core
from numbax._src.lax import parallel, parallel_redistribute
from numbax._src.sharding.shardings import PartitionSpec

_REDUCING = (parallel.psum_p, parallel.psum_many_p, parallel.pmax_p, parallel.pmin_p)
_VARYING = (parallel.all_gather_p, parallel.psum_scatter_p, parallel.ppermute_p,
            parallel.axis_index_p, parallel_redistribute.all_to_all_p)


def _names(axis_name) -> frozenset:
    return frozenset(axis_name if isinstance(axis_name, (tuple, list)) else (axis_name,))


def _inner_axes(jaxpr: core.Jaxpr) -> frozenset:
    """Axes a sub-jaxpr's values may come to vary over by themselves (axis_index and other
    varying collectives inside control flow)."""
    axes: frozenset = frozenset()
    for eqn in jaxpr.eqns:
        if eqn.primitive in _VARYING:
            axes |= _names(eqn.params["axis_name"])
        for sub in core.jaxprs_in_params(eqn.params):
            axes |= _inner_axes(sub)
    return axes


def spec_axes(spec: PartitionSpec, ndim: int, manual: frozenset) -> frozenset:
    """The manual axes a value laid out by `spec` varies over."""
    return frozenset(n for e in spec._normalized(ndim) for n in e) & manual


def propagate(eqns: Sequence[core.JaxprEqn], vary: dict, manual: frozenset) -> dict:
    """Extends `vary` (var -> axes it varies over) through `eqns`; unknown vars are
    invariant."""
    for eqn in eqns:
        ins = frozenset().union(*[vary.get(v, frozenset()) for v in eqn.invars
                                  if isinstance(v, core.Var)])
        if eqn.primitive in _REDUCING:
            out = ins - _names(eqn.params["axis_name"])
        elif eqn.primitive in _VARYING:
            out = ins | _names(eqn.params["axis_name"])
        else:
            out = ins.union(*[_inner_axes(sub) for sub in core.jaxprs_in_params(eqn.params)])
        for o in eqn.outvars:
            vary[o] = out & manual
    return vary


def check(fname: str, jaxpr: core.Jaxpr, mesh, manual: frozenset,
          in_specs: Sequence[PartitionSpec], out_specs: Sequence[PartitionSpec]) -> None:
    vary = propagate(jaxpr.eqns, {v: spec_axes(spec, v.aval.ndim, manual) for v, spec in
                                  zip(jaxpr.invars, in_specs, strict=True)}, manual)
    for v, spec in zip(jaxpr.outvars, out_specs, strict=True):
        if not isinstance(v, core.Var):
            continue
        used = {n for e in spec._normalized(v.aval.ndim) for n in e}
        bad = sorted((vary.get(v, frozenset()) - used) & manual, key=mesh.axis_names.index)
        if bad:
            raise ValueError(
                f"shard_map applied to the function {fname!r} was given out_specs which "
                "require replication which can't be statically inferred given the mesh:\n\n"
                f"The mesh given has shape {mesh.axis_sizes} with corresponding axis names "
                f"{mesh.axis_names}.\n\nout_specs is {spec} which implies that the "
                f"corresponding output value is replicated across mesh axis {bad[0]!r}, but "
                "could not infer replication over any axes\n\nCheck if these output values "
                "are meant to be replicated over those mesh axes. If not, consider revising "
                "the corresponding out_specs entries. If so, consider disabling the check by "
                "passing the check_vma=False argument to `jax.shard_map`.")
