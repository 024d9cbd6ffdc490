"""vmap: BatchTrace carries a batch dimension per value; rules move it to the front."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from numbax._src import core
from numbax._src.core import Primitive, ShapedArray, Trace, Tracer, get_aval

not_mapped = None

# batch(axis_size, vals, dims, **params) -> (outs, out_dims)
batch_rules: dict[Primitive, Callable] = {}
# Collectives over a named axis: (axis_data, vals, dims, **params) -> (outs, out_dims); used
# by the BatchTrace whose axis_name the collective names, batched operands or not.
collective_rules: dict[Primitive, Callable] = {}
# Rules that need the axis's name too: (axis_data, vals, dims, **params) -> (outs, out_dims).
# Primitives holding jaxprs (loops, branches, remat) register here: their bodies are batched
# under the vmapped axis's name, so a collective in a body meets the axis it names.
axis_batch_rules: dict[Primitive, Callable] = {}
# Primitives without operands that read a named axis (axis_index), besides the collectives.
axis_readers: set[Primitive] = set()


class AxisData(NamedTuple):
    size: int
    name: Any


class BatchTracer(Tracer):
    __slots__ = ("val", "batch_dim")

    def __init__(self, trace: Trace, val: Any, batch_dim: int | None) -> None:
        super().__init__(trace)
        self.val = val
        self.batch_dim = batch_dim

    @property
    def aval(self) -> ShapedArray:
        aval = get_aval(self.val)
        if self.batch_dim is not_mapped:
            return aval
        shape = list(aval.shape)
        del shape[self.batch_dim]
        return aval.update(shape=tuple(shape))

    def _short_repr(self) -> str:
        return f"VmapTracer(aval={self.aval}, batched={get_aval(self.val)})"

    def full_lower(self) -> Any:
        if self.batch_dim is not_mapped:
            return core.full_lower(self.val)
        return self


class BatchTrace(Trace):
    @property
    def axis_data(self) -> AxisData:
        return self.main.global_data

    def pure(self, val: Any) -> BatchTracer:
        return BatchTracer(self, val, not_mapped)

    lift = pure

    def process_primitive(self, primitive, tracers, params):
        vals_in = [t.val for t in tracers]
        dims_in = [t.batch_dim for t in tracers]
        collective = collective_rules.get(primitive)
        if collective is not None and _names_axis(params, self.axis_data.name):
            outs, dims_out = collective(self.axis_data, vals_in, dims_in, **params)
        elif all(d is not_mapped for d in dims_in) and not (
                primitive in axis_batch_rules and names_axis_inside(params, self.axis_data.name)):
            return core.bind(primitive, *vals_in, **params)
        elif primitive in axis_batch_rules:
            outs, dims_out = axis_batch_rules[primitive](self.axis_data, vals_in, dims_in,
                                                         **params)
        else:
            rule = batch_rules.get(primitive)
            if rule is None:
                raise NotImplementedError(f"Batching rule for '{primitive.name}' not implemented")
            outs, dims_out = rule(self.axis_data.size, vals_in, dims_in, **params)
        return [BatchTracer(self, x, d) for x, d in zip(outs, dims_out, strict=True)]


def _names_axis(params: dict, name: Any) -> bool:
    axis_name = params.get("axis_name")
    if isinstance(axis_name, tuple):
        return name in axis_name
    return axis_name == name


def def_body_rule(prim: Primitive, rule: Callable) -> None:
    """`rule(axis_data, vals, dims, **params)` batches a primitive holding jaxprs (a loop, a
    branch, remat) under the vmapped axis's name; the primitive goes to the vmap that names
    an axis its bodies' collectives use even when no operand is batched."""
    axis_batch_rules[prim] = rule
    core.operand_raisers[prim] = lambda args, params: _raise_to_named_vmap(
        args, params, names_axis_inside)


def def_collective(prim: Primitive, rule: Callable) -> None:
    """`rule(axis_data, vals, dims, **params)` is the collective's meaning under the vmap whose
    axis it names; it applies to operands that do not depend on the vmapped value too
    (psum(1, "i") is the axis size, in a loop body as anywhere)."""
    collective_rules[prim] = rule
    core.operand_raisers[prim] = lambda args, params: _raise_to_named_vmap(
        args, params, _names_axis)


def _raise_to_named_vmap(args: tuple, params: dict, names: Callable) -> tuple:
    """args as tracers of the innermost vmap whose axis `names(params, name)` says the
    primitive uses, where no operand already belongs to it or a trace above it and no trace
    is being built above it (a body traced inside that vmap records the primitive; the loop's
    rule comes back here when it batches the body)."""
    for main in reversed(core._state.trace_stack):
        data = main.global_data
        if not issubclass(main.trace_type, BatchTrace) or data.name is None or \
                not names(params, data.name):  # pmap's axes are the workers'
            continue
        dynamic = core._state.dynamic_trace
        if (dynamic is not None and dynamic.level > main.level) or any(
                isinstance(x, Tracer) and x._trace.main.level >= main.level for x in args):
            return args
        trace = BatchTrace(main)
        return tuple(trace.pure(x) for x in args)
    return args


def names_axis_inside(params: dict, name: Any) -> bool:
    """Whether a jaxpr among `params` (a loop's body, a branch) has a collective or an
    axis_index over `name`, at any depth: then the primitive is batched even with no batched
    operand (psum(1, name) in a loop body is the axis size)."""
    return name is not None and any(_jaxpr_names_axis(j, name) for j in _jaxprs(params.values()))


def _jaxprs(values: Any) -> Any:
    for v in values:
        if isinstance(v, core.ClosedJaxpr):
            yield v.jaxpr
        elif isinstance(v, core.Jaxpr):
            yield v
        elif isinstance(v, (tuple, list)):
            yield from _jaxprs(v)


def _jaxpr_names_axis(jaxpr: core.Jaxpr, name: Any) -> bool:
    for eqn in jaxpr.eqns:
        if (eqn.primitive in collective_rules or eqn.primitive in axis_readers) and \
                _names_axis(eqn.params, name):
            return True
        if any(_jaxpr_names_axis(j, name) for j in _jaxprs(eqn.params.values())):
            return True
    return False


# Data types vmap maps through user handlers (JAX's register_vmappable): type ->
# (spec_type, axis_size_type, to_elt, from_elt).
vmappables: dict[type, tuple[type, type, Callable, Callable]] = {}


def is_vmappable(x: Any) -> bool:
    return type(x) in vmappables


def is_vmappable_spec(spec: Any) -> bool:
    return any(isinstance(spec, entry[0]) for entry in vmappables.values())


def _to_elt(trace: BatchTrace, x: Any, spec: Any) -> Any:
    entry = vmappables.get(type(x))
    if entry is not None:
        def get_idx():
            from numbax._src.lax import shape_ops

            iota = shape_ops.iota(np.int32, trace.axis_data.size)
            return BatchTracer(trace, iota, 0)

        return entry[2](lambda y, s: _to_elt(trace, y, s), get_idx, x, spec)
    if spec is None:
        return x
    return BatchTracer(trace, x, spec % max(get_aval(x).ndim, 1))


def _from_elt(trace: BatchTrace, size: int, x: Any, spec: Any) -> Any:
    entry = vmappables.get(type(x))
    if entry is not None:
        return entry[3](lambda n, elt, s: _from_elt(trace, n, elt, s), size, x, spec)
    t = core.full_raise(trace, x)
    return move_batch_axis(size, t.batch_dim, spec, t.val)


def vmap_flat(f: Callable, axis_data: AxisData, in_dims: Sequence[int | None],
              out_dims: Sequence[int | None] | Callable, args: Sequence[Any]) -> list[Any]:
    """Runs f on batched args; outputs get their batch dimension at `out_dims`. Registered
    vmappable values go through their to_elt/from_elt handlers."""
    with core.new_main(BatchTrace, axis_data) as main:
        trace = BatchTrace(main)
        tracers_in = [_to_elt(trace, x, d) if is_vmappable(x) else
                      BatchTracer(trace, x, d) if d is not None else x
                      for x, d in zip(args, in_dims, strict=True)]
        outs = f(*tracers_in)
        if callable(out_dims):
            out_dims = out_dims()
        return [_from_elt(trace, axis_data.size, out, od)
                for out, od in zip(outs, out_dims, strict=True)]


# ----------------------------------------------------------------------------- helpers


def moveaxis(x: Any, src: int, dst: int) -> Any:
    from numbax._src.lax import shape_ops

    if src == dst:
        return x
    ndim = len(get_aval(x).shape)
    perm = [i for i in range(ndim) if i != src]
    perm.insert(dst, src)
    return shape_ops.transpose(x, tuple(perm))


def broadcast_batched(x: Any, size: int, axis: int) -> Any:
    """Materialises an unbatched value with a new batch axis of `size` at `axis`."""
    from numbax._src.lax import shape_ops

    aval = get_aval(x)
    shape = list(aval.shape)
    shape.insert(axis, size)
    dims = tuple(i for i in range(len(shape)) if i != axis)
    return shape_ops.broadcast_in_dim(x, tuple(shape), dims)


def move_batch_axis(size: int, src: int | None, dst: int | None, x: Any) -> Any:
    """Puts the batch axis of x (at src, or absent) at dst (None: must be unbatched)."""
    if dst is not None and dst < 0:
        dst += len(get_aval(x).shape) + (1 if src is None else 0)
    if dst is None:
        if src is not None:
            raise ValueError(
                "vmap: out_axes is None for an output that is batched; only outputs that do "
                "not depend on the mapped inputs can use out_axes=None."
            )
        return x
    if src is None:
        return broadcast_batched(x, size, dst)
    return moveaxis(x, src, dst)


def bdim_at_front(x: Any, bdim: int | None, size: int) -> Any:
    return move_batch_axis(size, bdim, 0, x)


def broadcast_batcher(prim: Primitive) -> Callable:
    """Batch rule for an elementwise primitive whose operands share a shape (or are rank 0)."""
    from numbax._src.lax import shape_ops

    def rule(axis_size, vals, dims, **params):
        per_example = [
            get_aval(x).shape if d is None else _drop(get_aval(x).shape, d)
            for x, d in zip(vals, dims, strict=True)
        ]
        out_shape = max(per_example, key=len)
        full = (axis_size, *out_shape)
        args = []
        for x, d, shape in zip(vals, dims, per_example, strict=True):
            if d is None:
                args.append(x if shape == () else broadcast_batched(x, axis_size, 0))
            else:
                x = moveaxis(x, d, 0)
                if shape != out_shape:
                    x = shape_ops.broadcast_in_dim(x, full, (0,))
                args.append(x)
        outs = core.bind(prim, *args, **params)
        return outs, [0] * len(outs)

    return rule


def _drop(shape: tuple[int, ...], axis: int) -> tuple[int, ...]:
    return shape[:axis] + shape[axis + 1:]


def defvectorized(prim: Primitive) -> None:
    """Unary elementwise: the batch dimension passes through untouched."""

    def rule(axis_size, vals, dims, **params):
        outs = core.bind(prim, *vals, **params)
        return outs, [dims[0]] * len(outs)

    batch_rules[prim] = rule


def defbroadcasting(prim: Primitive) -> None:
    batch_rules[prim] = broadcast_batcher(prim)


def batch_jaxpr(closed: core.ClosedJaxpr, axis_data: AxisData, in_batched: Sequence[bool],
                force_out: Sequence[bool] | bool) -> tuple[core.ClosedJaxpr, list[bool]]:
    """vmap of a jaxpr whose batched inputs carry the batch axis at 0: outputs are batched at
    0 when they depend on a batched input or are forced. Returns it and which outputs are."""
    from numbax._src.interpreters import partial_eval as pe

    n_out = len(closed.out_avals)
    if isinstance(force_out, bool):
        force_out = [force_out] * n_out
    avals = [a.update(shape=(axis_data.size, *a.shape)) if b else a
             for a, b in zip(closed.in_avals, in_batched, strict=True)]
    store: dict[str, list[bool]] = {}

    def f(*args):
        with core.new_main(BatchTrace, axis_data) as main:
            trace = BatchTrace(main)
            tracers = [BatchTracer(trace, x, 0) if b else x
                       for x, b in zip(args, in_batched, strict=True)]
            outs = core.eval_jaxpr(closed.jaxpr, closed.consts, *tracers)
            outs = [core.full_raise(trace, o) for o in outs]
            vals = [o.val for o in outs]
            dims = [o.batch_dim for o in outs]
        out_batched = [d is not None or force for d, force in zip(dims, force_out, strict=True)]
        store["out_batched"] = out_batched
        return [move_batch_axis(axis_data.size, d, 0 if b else None, v)
                for v, d, b in zip(vals, dims, out_batched, strict=True)]

    jaxpr, consts = pe.trace_to_jaxpr_dynamic(f, avals)
    return pe.hoist_consts(core.ClosedJaxpr(jaxpr, consts)), store["out_batched"]
