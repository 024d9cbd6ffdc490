"""numbax.pmap, expressed on shard_map as in JAX >= 0.8: f maps over a one-axis mesh of the
first `size` devices, each device running f on its slice of the mapped axis (the body squeezes
it away and puts it back at out_axes), so pmap runs in the workers eagerly and inside jit, and
composes with grad and vmap through shard_map's rules."""
from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from numbax._src import api, core, jit_options, typecheck
from numbax._src import devices as devices_mod
from numbax._src import tree_util as tu
from numbax._src.array import Array
from numbax._src.config import config
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import partial_eval as pe
from numbax._src.lax import parallel as lparallel
from numbax._src.lax import shape_ops
from numbax._src.lax import shard_map as lsm
from numbax._src.lax.shard_map import shard_map_p
from numbax._src.parallel import donation
from numbax._src.parallel import shard_map as shard_map_mod
from numbax._src.parallel.shard_map import _impl as shard_map_impl
from numbax._src.sharding import rules
from numbax._src.sharding.mesh import Mesh
from numbax._src.sharding.sharded_array import ShardedArray, wrap
from numbax._src.sharding.shardings import NamedSharding, PartitionSpec

INTERNAL_AXIS = "_internal_pmap_axis_name"  # JAX's mesh axis name when pmap has none


class _Entry:
    """What one signature needs: the per-device body over blocks (each mapped argument's block
    keeps its mapped axis, of size 1), the specs of its inputs and outputs, and the output
    tree."""

    __slots__ = ("jaxpr", "in_specs", "out_specs", "out_tree")

    def __init__(self, jaxpr, in_specs, out_specs, out_tree) -> None:
        self.jaxpr = jaxpr
        self.in_specs = in_specs
        self.out_specs = out_specs
        self.out_tree = out_tree


def pmap(fun: Callable, axis_name: Hashable | None = None, *, in_axes: Any = 0,
         out_axes: Any = 0, static_broadcasted_argnums: int | Sequence[int] = (),
         devices: Sequence[devices_mod.Device] | None = None, backend: str | None = None,
         axis_size: int | None = None, donate_argnums: int | Sequence[int] = ()) -> Callable:
    """Parallel map over virtual CPU devices: shard i of each mapped argument runs on device i.

    Args:
      fun: the function to map; collectives (`lax.psum(x, axis_name)`, ...) may name the axis.
      axis_name: the name collectives use for the mapped axis.
      in_axes, out_axes: as in vmap (ints or None, prefix trees of the positional arguments
        and the outputs); keyword arguments are mapped along their axis 0, as in JAX.
      static_broadcasted_argnums: arguments passed to every device as Python constants.
      devices: the devices to use (default: the first `size` of numbax.devices()).
      backend: only "cpu" (or None).
      donate_argnums: positional arguments whose buffers the call may reuse, as in JAX. A
        donated Array already laid out as pmap lays that argument (a pmap's result, say) is
        deleted after the call (using it raises RuntimeError, as after jit's donation); the
        first output of its global shape, dtype and layout is written into its buffer when
        nothing else references that buffer. Other arguments (numpy arrays, Python values,
        Arrays laid out otherwise, which pmap copies onto the devices first) are left alone.
        Entries past the positional arguments, negative ones and keyword arguments donate
        nothing, as in JAX. A donated argument no output can take (by its per-device block's
        shape and dtype) warns "Some donated buffers were not usable", as in JAX.

    Returns:
      A function whose outputs are Arrays with the mapped axis at out_axes, laid out over the
      devices (NamedSharding over a one-axis mesh, as JAX >= 0.8 gives them).

    Unlike JAX: each device is a worker process started the first time a call uses it. A
    donated buffer is reused only when the body runs in the workers (not for a body defined in
    `__main__` or on one device) and not across processes; the argument is deleted anyway.

    >>> import numbax, numbax.numpy as jnp
    >>> numbax.pmap(lambda x: x * 2)(jnp.arange(1.0)).tolist()
    [0.0]
    """
    api._check_callable("pmap", fun)
    if backend not in (None, "cpu"):
        raise NumbaxValueError(f"pmap: backend is {backend!r}, expected None or 'cpu'. "
                               "numbax's virtual devices are CPU devices.")
    static_argnums = api._as_tuple(static_broadcasted_argnums)
    donate = donation.argnums(donate_argnums, static_argnums)
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    cache: dict[tuple, tuple[_Entry, Mesh]] = {}
    fast: dict[tuple, _Fast] = {}  # by _fast_key: calls of Arrays outside any trace

    @functools.wraps(fun)
    def pmap_f(*args, **kwargs):
        quick, leaves = _fast_key(args) if not kwargs and not static_argnums else (None, None)
        hit = fast.get(quick) if quick is not None else None
        if hit is not None:
            return hit(leaves)
        if kwargs:  # mapped along their axis 0, as JAX maps them: passed on positionally
            return _with_keywords(len(args), tuple(sorted(kwargs)))(
                *args, *[kwargs[k] for k in sorted(kwargs)])
        _check_not_nested()
        dynamic, static = api._split_static("pmap", args, static_argnums)
        f = api._bind_static(fun, static, len(args))
        axes = _dynamic_axes(in_axes, len(args), {i for i, _ in static})
        args_flat, in_tree = tu.tree_flatten(dynamic)
        in_dims = api._flatten_axes("pmap", "in_axes", in_tree, axes)
        for i, x in enumerate(args_flat):
            api._check_leaf("pmap", x, f"argument leaf {i}")
        in_dims = [api._canonical_axis("pmap", d, x, i)
                   for i, (x, d) in enumerate(zip(args_flat, in_dims, strict=True))]
        across = devices_mod.process_count() > 1 and not _tracing(args_flat)
        size = _mapped_size(args_flat, in_dims, None if across else axis_size)
        devs = _pick_devices(devices, size, across, axis_size)
        name = INTERNAL_AXIS if axis_name is None else axis_name
        in_avals = [core.get_aval(x) for x in args_flat]
        key = (in_tree, tuple(in_avals), tuple(in_dims), static, size,
               tuple(d.id for d in devs), config.trace_context())
        # JAX donates nothing under a trace (jit's), nor with jax_debug_nans on
        donated = donation.leaves(donate, args, {i for i, _ in static}) \
            if donate and not across and not config.jax_debug_nans and \
            not _tracing(args_flat) else ()
        found = cache.get(key)
        if found is None:  # the mesh is kept with the trace: one per devices, made once
            mesh = Mesh(np.array(devs, dtype=object), (name,))
            found = cache[key] = (_trace(f, in_tree, in_avals, in_dims, mesh, out_axes), mesh)
            if donated:
                jit_options.warn_unusable_donations(
                    [found[0].jaxpr.in_avals[i] for i in donated],
                    found[0].jaxpr.out_avals, stacklevel=3)
        entry, mesh = found
        params = dict(jaxpr=entry.jaxpr, mesh=mesh, in_specs=entry.in_specs,
                      out_specs=entry.out_specs, check_vma=False,
                      manual_axes=frozenset({name}), api="pmap")
        hit = None
        if quick is not None and not across and not _tracing(args_flat) and len(fast) < 64:
            hit = fast[quick] = _Fast(entry, params, in_avals, donated)
        if across:
            outs = _across_processes(args_flat, params)
        elif donated:
            return (hit or _Fast(entry, params, in_avals, donated))(args_flat)
        else:
            outs = shard_map_p.bind(*args_flat, **params)
        return tu.tree_unflatten(entry.out_tree, outs)

    keyword_forms: dict[tuple, Callable] = {}

    def _with_keywords(n: int, keys: tuple) -> Callable:
        """The pmap of `fun` taking its keyword arguments `keys` after its n positional ones
        (in_axes 0 for each, as JAX maps keyword arguments), made once per (n, keys)."""
        found = keyword_forms.get((n, keys))
        if found is None:
            if isinstance(in_axes, tuple) and len(in_axes) != n:
                raise NumbaxValueError(
                    f"pmap: in_axes is {in_axes} for {n} positional arguments; it describes "
                    "the positional arguments alone (keyword arguments are mapped along axis "
                    "0). Give one entry per positional argument, or an int.")
            axes = (*(in_axes if isinstance(in_axes, tuple) else (in_axes,) * n),
                    *(0,) * len(keys))

            def positional(*a):
                return fun(*a[:n], **dict(zip(keys, a[n:], strict=True)))

            found = keyword_forms[(n, keys)] = pmap(
                functools.wraps(fun)(positional), axis_name, in_axes=axes, out_axes=out_axes,
                static_broadcasted_argnums=static_argnums, devices=devices, backend=backend,
                axis_size=axis_size, donate_argnums=tuple(k for k in donate if k < n))
        return found

    return pmap_f


def _fast_key(args: tuple) -> tuple[tuple | None, list | None]:
    """The key of a call whose argument leaves are all Arrays (a mesh-wide ShardedArray too)
    of this process, outside any trace, with jit on and no override (config._fast_ctx): what
    decides its entry, mesh and results' layout; and the leaves. None for any other call."""
    ctx = config._fast_ctx
    if ctx is None or core._state.dynamic_trace is not None or core.trace_stack_depth() > 1:
        return None, None
    leaves, tree = tu.tree_flatten(args)
    try:
        sigs = [(a._value.shape, a._value.dtype, a._weak_type,
                 a._sharding if type(a) is ShardedArray else None)
                for a in leaves if type(a) is Array or type(a) is ShardedArray]
    except (AttributeError, RuntimeError):  # a box of a value spanning processes
        return None, None
    if len(sigs) != len(leaves):
        return None, None
    return (ctx, int(config.num_cpu_devices), devices_mod.process_count(), tree, *sigs), leaves


class _Fast:
    """A pmap call of known Arrays: shard_map_p's implementation called directly, its results
    laid out as eager dispatch lays them (dispatch.apply_primitive, sharding_api.relayout), with
    the abstract evaluation, argument checks and device choice done once (~40 us a call).
    With donated leaves (flat positions), any call's leaves: see _donating."""

    __slots__ = ("entry", "params", "out_avals", "out_shardings", "in_avals", "donated")

    def __init__(self, entry: _Entry, params: dict, in_avals: list,
                 donated: tuple[int, ...] = ()) -> None:
        self.entry = entry
        self.params = params
        self.in_avals = in_avals
        self.donated = donated
        self.out_avals = core.abstract_eval(shard_map_p, in_avals, params)
        mesh = params["mesh"]
        self.out_shardings = [
            NamedSharding(mesh, rules.to_spec(rules.layout_of(NamedSharding(mesh, spec),
                                                              aval.ndim)))
            for aval, spec in zip(self.out_avals, params["out_specs"], strict=True)]

    def __call__(self, leaves: list) -> Any:
        if self.donated:
            return self._donating(leaves)
        return self._wrap(shard_map_impl(*[a._value for a in leaves], **self.params))

    def _donating(self, leaves: list) -> Any:
        """The call with donated leaves: outputs written into the buffers of donated Arrays
        that qualify (donation.pair), then the donated Arrays laid out as pmap lays them
        deleted."""
        p = self.params
        donors = donation.deletable(leaves, self.donated, p["mesh"], p["in_specs"])
        into = donation.pair(leaves, donors, p["in_specs"], p["out_specs"],
                             self.out_avals) if donors else {}
        values = [x._value if isinstance(x, Array) else
                  np.asarray(core.to_numpy(x), aval.dtype)
                  for x, aval in zip(leaves, self.in_avals, strict=True)]
        outs = shard_map_mod.run_into(values, into, **p) if into else None
        if outs is None:
            outs = shard_map_impl(*values, **p)
        del values
        results = self._wrap(outs)
        donation.delete([leaves[i] for i in donors])
        return results

    def _wrap(self, outs: list) -> Any:
        results = []
        for out, aval, sharding in zip(outs, self.out_avals, self.out_shardings, strict=True):
            out = np.asarray(out)
            if out.dtype != aval.dtype:
                out = out.astype(aval.dtype)
            value = Array._from_numpy(out, aval.weak_type)._value
            results.append(wrap(value, aval.weak_type, sharding))
        return tu.tree_unflatten(self.entry.out_tree, results)


# ----------------------------------------------------------------------------- argument plumbing


def _dynamic_axes(in_axes: Any, n_args: int, static_pos: set[int]) -> tuple:
    if not isinstance(in_axes, tuple):
        return (in_axes,) * (n_args - len(static_pos))
    if len(in_axes) == n_args and static_pos:
        return tuple(a for i, a in enumerate(in_axes) if i not in static_pos)
    if len(in_axes) != n_args - len(static_pos):
        raise NumbaxValueError(
            f"pmap: in_axes has {len(in_axes)} entries, expected one per positional argument "
            f"({n_args}). Pass an int, None, or a tuple with one entry per argument.")
    return in_axes


def _mapped_size(args_flat: list, in_dims: list, axis_size: int | None) -> int:
    sizes = {core.get_aval(x).shape[d] for x, d in zip(args_flat, in_dims, strict=True)
             if d is not None}
    if axis_size is not None:
        sizes.add(int(axis_size))
    if not sizes:
        raise NumbaxValueError("pmap: in_axes maps no argument, expected at least one mapped "
                               "argument. Map an argument or pass axis_size.")
    if len(sizes) > 1:
        shapes = [core.get_aval(x).shape for x in args_flat]
        raise NumbaxValueError(
            f"pmap: mapped arguments have shapes {shapes} with in_axes {in_dims}, expected "
            f"equal sizes along the mapped axes (got {sorted(sizes)}). Give every mapped "
            "argument the same leading size.")
    return sizes.pop()


def _tracing(args_flat: list) -> bool:
    return core._state.dynamic_trace is not None or core.trace_stack_depth() > 1 or \
        any(isinstance(x, core.Tracer) for x in args_flat)


def _across_processes(args_flat: list, params: dict) -> list:
    """pmap in a multi-process job, as JAX's: each process passes its devices' slices (the
    mapped axis has the local device count), the collectives span every process's devices,
    and each process gets its devices' slices of the results."""
    from numbax._src.parallel import multihost, shard_map

    mesh = params["mesh"]
    globals_ = [multihost.to_global(x, mesh, spec)
                for x, spec in zip(args_flat, params["in_specs"], strict=True)]
    outs = shard_map.run_boxes(globals_, **params)
    return [multihost.to_local(o, mesh, spec)
            for o, spec in zip(outs, params["out_specs"], strict=True)]


def _pick_devices(devices: Sequence | None, size: int, across: bool = False,
                  axis_size: int | None = None) -> list:
    if across:
        return _global_devices(devices, size, axis_size)
    available = list(devices) if devices is not None else devices_mod.devices()
    for d in available:
        if not isinstance(d, devices_mod.Device):
            raise NumbaxTypeError(f"pmap: devices contains a {type(d).__name__}, expected "
                                  "Device objects from numbax.devices().")
    if size > len(available):
        raise NumbaxValueError(
            f"pmap: the mapped axis has size {size}, expected at most {len(available)} (the "
            f"number of devices). Use a mapped size of at most {len(available)}, or set "
            f"NUMBAX_NUM_CPU_DEVICES={size} before importing numbax.")
    if size < 1:
        raise NumbaxValueError("pmap: the mapped axis has size 0, expected at least 1.")
    return available[:size]


def _global_devices(devices: Sequence | None, size: int, axis_size: int | None) -> list:
    """The mesh of pmap across processes: the first `size` devices of every process (or the
    first size * process_count of `devices`), grouped by process as JAX groups them."""
    count = devices_mod.process_count()
    if axis_size is not None and axis_size != size * count:
        raise NumbaxValueError(
            f"pmap: axis_size is {axis_size}, but each of the {count} processes maps {size} "
            f"slices, {size * count} in all. Pass axis_size={size * count} (the global size) "
            "or leave it out.")
    if devices is not None:
        return _pick_devices(devices, size * count)
    local = devices_mod.local_device_count()
    if size > local:
        raise NumbaxValueError(
            f"pmap: the mapped axis has size {size} in this process, expected at most {local} "
            "(its number of devices: each process maps its own devices' slices). Set "
            f"NUMBAX_NUM_CPU_DEVICES={size} before starting, or map fewer slices.")
    return [d for p in range(count) for d in devices_mod.local_devices(p)[:size]]


def _spec(d: int | None, name: Hashable) -> PartitionSpec:
    return PartitionSpec() if d is None else PartitionSpec(*([None] * d), name)


def _check_not_nested() -> None:
    """A pmap inside the body of a pmap or shard_map would run a mesh of its own inside one
    device's worker (it failed there, naming devices the worker lacks); JAX refuses it too."""
    outer = [main.global_data.name for main in core._state.trace_stack
             if main.trace_type is lparallel.SpmdAxisTrace]
    if outer:
        raise NumbaxValueError(
            f"pmap: called inside the body of a pmap or shard_map over the axes {outer}, "
            "expected a pmap at the top level. Nested pmaps are not supported: map the inner "
            "function with vmap (its collectives work the same), or run one shard_map over a "
            "mesh with an axis for each level.")


def _out_axis(d: int, ndim: int, leaf: int) -> int:
    """out_axes entry `d` of output leaf `leaf` (of rank `ndim` with the mapped axis back),
    checked as JAX does."""
    if not -ndim <= d < ndim:
        raise NumbaxValueError(
            f"pmap: out_axes has {d} for output leaf {leaf}, which has rank {ndim} with the "
            f"mapped axis, expected an axis in [{-ndim}, {ndim}). Pass an out_axes in range.")
    return d % ndim


def _trace(f: Callable, in_tree, in_avals: list, in_dims: list, mesh: Mesh,
           out_axes: Any) -> _Entry:
    """The per-device body: the mapped axis of each block squeezed away, f applied, and the
    mapped axis put back at out_axes (unmapped outputs are device 0's)."""
    (name,) = mesh.axis_names
    block_avals = [a if d is None else a.update(shape=(*a.shape[:d], 1, *a.shape[d + 1:]))
                   for a, d in zip(in_avals, in_dims, strict=True)]
    store = {}

    def body(*blocks):
        xs = [b if d is None else shape_ops.squeeze(b, (d,))
              for b, d in zip(blocks, in_dims, strict=True)]
        out_flat, tree = tu.tree_flatten(f(*tu.tree_unflatten(in_tree, xs)))
        dims = api._flatten_axes("pmap", "out_axes", tree, out_axes)
        dims = [None if d is None else _out_axis(d, core.get_aval(o).ndim + 1, k)
                for k, (o, d) in enumerate(zip(out_flat, dims, strict=True))]
        store["tree"], store["dims"] = tree, dims
        return [o if d is None else shape_ops.expand_dims(o, (d,))
                for o, d in zip(out_flat, dims, strict=True)]

    with lsm.bound_axes(mesh, frozenset({name})):
        jaxpr, consts = pe.trace_to_jaxpr_dynamic(body, block_avals)
    typecheck.check_jaxpr(jaxpr)
    closed = core.ClosedJaxpr(jaxpr, [np.asarray(core.to_numpy(c)) for c in consts])
    return _Entry(closed, tuple(_spec(d, name) for d in in_dims),
                  tuple(_spec(d, name) for d in store["dims"]), store["tree"])
