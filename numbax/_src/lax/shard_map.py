"""shard_map_p: a per-device jaxpr mapped over the blocks of a mesh, and its math rules (abstract
eval, jvp, partial eval, transpose, batching). parallel/shard_map.py holds the API and the
implementation (the SPMD engine's workers run the body).

Autodiff gives JAX's numbers with numbax's value-level collectives (psum transposes to psum):
the transpose divides the cotangent of an output by the number of devices it is replicated
over, and sums the cotangent of an input over the devices it is replicated over, as JAX's
shard_map does with check_vma=False (with check_vma=True JAX gets the same numbers through its
varying/invariant types)."""
from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from numbax._src import core
from numbax._src.core import ClosedJaxpr, Primitive, ShapedArray
from numbax._src.dtypes import kind_of
from numbax._src.interpreters import ad, batching
from numbax._src.interpreters import partial_eval as pe
from numbax._src.lax import elementwise as ew
from numbax._src.lax import parallel, shape_ops
from numbax._src.sharding.shardings import NamedSharding, PartitionSpec, explicit_part

shard_map_p = Primitive("shard_map", multiple_results=True)


@contextlib.contextmanager
def bound_axes(mesh: Any, manual_axes: frozenset) -> Iterator[None]:
    """Binds the manual mesh axes as SPMD axes, so collectives over them trace into jaxprs."""
    with contextlib.ExitStack() as stack:
        for name, size in zip(mesh.axis_names, mesh.axis_sizes, strict=True):
            if name in manual_axes:
                stack.enter_context(core.new_main(parallel.SpmdAxisTrace,
                                                  batching.AxisData(size, name)))
        yield


def _factor(mesh: Any, entry: tuple) -> int:
    sizes = dict(zip(mesh.axis_names, mesh.axis_sizes, strict=True))
    return math.prod(sizes[n] for n in entry)


def block_aval(aval: ShapedArray, spec: PartitionSpec, mesh: Any) -> ShapedArray:
    """A device's block of `aval` laid out by `spec` (no explicit sharding inside shard_map)."""
    shape = tuple(s // _factor(mesh, e) for s, e in
                  zip(aval.shape, spec._normalized(aval.ndim), strict=True))
    return ShapedArray(shape, aval.dtype, aval.weak_type)


def global_aval(aval: ShapedArray, spec: PartitionSpec, mesh: Any) -> ShapedArray:
    """The global aval whose blocks are `aval`."""
    shape = tuple(s * _factor(mesh, e) for s, e in
                  zip(aval.shape, spec._normalized(aval.ndim), strict=True))
    sharding = explicit_part(NamedSharding(mesh, spec), aval.ndim)
    return ShapedArray(shape, aval.dtype, aval.weak_type, sharding)


def unmentioned(mesh: Any, spec: PartitionSpec, manual_axes: frozenset, ndim: int) -> tuple:
    """The manual axes a value laid out by `spec` is replicated over."""
    used = {n for e in spec._normalized(ndim) for n in e}
    return tuple(n for n in mesh.axis_names if n in manual_axes and n not in used)


def _abstract_eval(*avals, jaxpr, mesh, in_specs, out_specs, check_vma, manual_axes, api):
    for i, (a, spec, b) in enumerate(zip(avals, in_specs, jaxpr.in_avals, strict=True)):
        if block_aval(a, spec, mesh).shape != b.shape:
            raise ValueError(f"shard_map: argument {i} has shape {a.shape}, whose blocks under "
                             f"{spec} are not the body's {b.shape}.")
    return [global_aval(a, s, mesh) for a, s in zip(jaxpr.out_avals, out_specs, strict=True)]


def _impl(*args, **params):
    raise RuntimeError("shard_map: the implementation is installed by numbax._src.parallel."
                       "shard_map (import numbax).")



def _jvp(primals, tangents, *, jaxpr, mesh, in_specs, out_specs, check_vma, manual_axes,
         api):
    nonzero = [type(t) is not ad.Zero for t in tangents]
    with bound_axes(mesh, manual_axes):
        jvp_closed, out_nz = ad.jvp_jaxpr(jaxpr, nonzero, instantiate=False)
    tangents_in = [t for t, nz in zip(tangents, nonzero, strict=True) if nz]
    outs = shard_map_p.bind(
        *primals, *tangents_in, jaxpr=jvp_closed, mesh=mesh,
        in_specs=in_specs + tuple(s for s, nz in zip(in_specs, nonzero, strict=True) if nz),
        out_specs=out_specs + tuple(s for s, nz in zip(out_specs, out_nz, strict=True) if nz),
        check_vma=check_vma, manual_axes=manual_axes, api=api)
    n = len(out_specs)
    primals_out, rest = outs[:n], iter(outs[n:])
    tangents_out = [next(rest) if nz else ad.Zero(ad.tangent_aval(core.get_aval(p)))
                    for p, nz in zip(primals_out, out_nz, strict=True)]
    return primals_out, tangents_out


def _residual_spec(mesh: Any, manual_axes: frozenset) -> PartitionSpec:
    """Residuals are per-device values: stacked along a new leading axis over the manual
    axes."""
    names = tuple(n for n in mesh.axis_names if n in manual_axes)
    return PartitionSpec(names if len(names) != 1 else names[0])


def _stack_residuals(known: ClosedJaxpr, num_res: int) -> ClosedJaxpr:
    n_out = len(known.out_avals) - num_res

    def f(*args):
        outs = core.eval_jaxpr(known.jaxpr, known.consts, *args)
        return [*outs[:n_out], *[shape_ops.broadcast_in_dim(r, (1, *core.get_aval(r).shape),
                                                            tuple(range(1, core.get_aval(
                                                                r).ndim + 1)))
                                 for r in outs[n_out:]]]

    jaxpr, consts = pe.trace_to_jaxpr_dynamic(f, known.in_avals)
    return pe.hoist_consts(ClosedJaxpr(jaxpr, consts))


def _unstack_residuals(unknown: ClosedJaxpr, num_res: int) -> ClosedJaxpr:
    res_avals = unknown.in_avals[:num_res]

    def f(*args):
        res = [shape_ops.reshape(r, a.shape) for r, a in zip(args[:num_res], res_avals,
                                                             strict=True)]
        return core.eval_jaxpr(unknown.jaxpr, unknown.consts, *res, *args[num_res:])

    avals = [a.update(shape=(1, *a.shape)) for a in res_avals] + unknown.in_avals[num_res:]
    jaxpr, consts = pe.trace_to_jaxpr_dynamic(f, avals)
    return pe.hoist_consts(ClosedJaxpr(jaxpr, consts))


def _partial_eval(trace, tracers, *, jaxpr, mesh, in_specs, out_specs, check_vma, manual_axes,
                  api):
    params = dict(jaxpr=jaxpr, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                     check_vma=check_vma, manual_axes=manual_axes, api=api)
    uk = [not t.pval.is_known for t in tracers]
    with bound_axes(mesh, manual_axes):
        known, unknown, out_uk, num_res = pe.partial_eval_jaxpr(jaxpr, uk)
        if all(out_uk) and not any(not u for u in uk):
            return pe.default_process_primitive(trace, shard_map_p, tracers, params)
        known = _stack_residuals(known, num_res)
        unknown = _unstack_residuals(unknown, num_res)
    res_spec = _residual_spec(mesh, manual_axes)
    known_specs = tuple(s for s, u in zip(in_specs, uk, strict=True) if not u)
    known_out_specs = tuple(s for s, u in zip(out_specs, out_uk, strict=True) if not u)
    known_outs = shard_map_p.bind(
        *[t.pval.const for t, u in zip(tracers, uk, strict=True) if not u], jaxpr=known,
        mesh=mesh, in_specs=known_specs, out_specs=known_out_specs + (res_spec,) * num_res,
        check_vma=check_vma, manual_axes=manual_axes, api=api)
    known_vals, residuals = known_outs[:len(known_out_specs)], known_outs[len(known_out_specs):]
    res_tracers = [trace.instantiate_const(trace.lift(r)) for r in residuals]
    uk_tracers = [trace.instantiate_const(t) for t, u in zip(tracers, uk, strict=True) if u]
    unknown_outs = pe.default_process_primitive(
        trace, shard_map_p, [*res_tracers, *uk_tracers],
        dict(jaxpr=unknown, mesh=mesh,
                in_specs=(res_spec,) * num_res + tuple(s for s, u in zip(in_specs, uk,
                                                                        strict=True) if u),
                out_specs=tuple(s for s, u in zip(out_specs, out_uk, strict=True) if u),
                check_vma=check_vma, manual_axes=manual_axes, api=api))
    known_it, unknown_it = iter(known_vals), iter(unknown_outs)
    return [next(unknown_it) if u else trace.lift(next(known_it)) for u in out_uk]


def _transpose(cts, *args, jaxpr, mesh, in_specs, out_specs, check_vma, manual_axes, api):
    linear = [ad.is_undefined_primal(x) for x in args]
    res = [x for x, lin in zip(args, linear, strict=True) if not lin]
    res_avals = [b for b, lin in zip(jaxpr.in_avals, linear, strict=True) if not lin]
    lin_avals = [b for b, lin in zip(jaxpr.in_avals, linear, strict=True) if lin]
    lin_specs = tuple(s for s, lin in zip(in_specs, linear, strict=True) if lin)
    out_avals = jaxpr.out_avals
    cts = [ad.zeros_like_aval(global_aval(a, s, mesh)) if type(ct) is ad.Zero else ct
           for ct, a, s in zip(cts, out_avals, out_specs, strict=True)]

    def body(*xs):
        res_b, ct_b = xs[:len(res_avals)], xs[len(res_avals):]
        scaled = []
        for ct, a, spec in zip(ct_b, out_avals, out_specs, strict=True):
            k = _factor(mesh, unmentioned(mesh, spec, manual_axes, a.ndim))
            scaled.append(ew.div(ct, np.array(k, a.dtype)) if k > 1 and
                          kind_of(a.dtype) in "fc" else ct)
        res_it = iter(res_b)
        primals = [ad.UndefinedPrimal(b) if lin else next(res_it)
                   for b, lin in zip(jaxpr.in_avals, linear, strict=True)]
        cts_in = ad.backward_pass(jaxpr.jaxpr, jaxpr.consts, primals, scaled)
        out = []
        for ct, a, spec in zip([c for c, lin in zip(cts_in, linear, strict=True) if lin],
                               lin_avals, lin_specs, strict=True):
            ct = ad.zeros_like_aval(a) if type(ct) is ad.Zero else ct
            rest = unmentioned(mesh, spec, manual_axes, a.ndim)
            out.append(parallel.psum_p.bind(ct, axis_name=rest) if rest else ct)
        return out

    with bound_axes(mesh, manual_axes):
        jaxpr_t, consts = pe.trace_to_jaxpr_dynamic(body, [*res_avals, *out_avals])
    outs = iter(shard_map_p.bind(
        *res, *cts, jaxpr=pe.hoist_consts(ClosedJaxpr(jaxpr_t, consts)), mesh=mesh,
        in_specs=tuple(s for s, lin in zip(in_specs, linear, strict=True) if not lin) +
        out_specs, out_specs=lin_specs, check_vma=check_vma, manual_axes=manual_axes,
        api=api))
    return [next(outs) if lin else None for lin in linear]


def _with_batch_dim(spec: PartitionSpec) -> PartitionSpec:
    return PartitionSpec(None, *spec)


def _batch(axis_data, vals, dims, *, jaxpr, mesh, in_specs, out_specs, check_vma, manual_axes,
           api):
    batched = [d is not None for d in dims]
    vals = [batching.moveaxis(v, d, 0) if d is not None else v
            for v, d in zip(vals, dims, strict=True)]
    with bound_axes(mesh, manual_axes):
        new, out_batched = batching.batch_jaxpr(jaxpr, axis_data, batched, False)
    outs = shard_map_p.bind(
        *vals, jaxpr=new, mesh=mesh,
        in_specs=tuple(_with_batch_dim(s) if b else s for s, b in zip(in_specs, batched,
                                                                       strict=True)),
        out_specs=tuple(_with_batch_dim(s) if b else s for s, b in zip(out_specs, out_batched,
                                                                        strict=True)),
        check_vma=check_vma, manual_axes=manual_axes, api=api)
    return outs, [0 if b else None for b in out_batched]


core.abstract_eval_rules[shard_map_p] = _abstract_eval
core.impl_rules[shard_map_p] = _impl
ad.jvp_rules[shard_map_p] = _jvp
ad.transpose_rules[shard_map_p] = _transpose
pe.partial_eval_rules[shard_map_p] = _partial_eval
batching.def_body_rule(shard_map_p, _batch)
