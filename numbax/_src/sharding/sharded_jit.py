"""jit on sharded data: in_shardings/out_shardings, sharded arguments, and the layouts of
results of programs holding shard_map or sharding constraints.

One signature traces once (explicit-mode arguments with their types). When some argument is
split over devices, the partitioner (partition.py) rewrites the program for one device's
blocks and the SPMD engine runs it in the workers, each writing its blocks of the results;
when that would need a gather, the global program runs in this process (numbax's devices share
one memory, so this moves no data). Results are laid out by out_shardings, or by the layouts
the sharding rules give."""
from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax._src import core
from numbax._src import tree_util as tu
from numbax._src.array import Array
from numbax._src.compiler import api as compiler
from numbax._src.config import config
from numbax._src.errors import NumbaxValueError
from numbax._src.interpreters import partial_eval as pe
from numbax._src.lax import shard_map as lsm
from numbax._src.lax.sharding_ops import sharding_constraint_p
from numbax._src.parallel import spmd
from numbax._src.sharding import partition, rules
from numbax._src.sharding.mesh import Mesh
from numbax._src.sharding.sharded_array import (
    ShardedArray,
    from_global,
    put,
    resolve,
    sharding_of,
    wrap,
)
from numbax._src.sharding.shardings import NamedSharding, Sharding

LAYOUT_PRIMITIVES = (sharding_constraint_p, lsm.shard_map_p)


class Entry:
    """One signature: how it runs (`program` on the engine, else `exe` here), the mesh, the
    layouts of inputs and outputs, and the output tree."""

    __slots__ = ("program", "exe", "mesh", "in_layouts", "out_layouts", "out_avals", "out_tree",
                 "out_shardings", "out_named")


def _specified(api: str, shardings: Any, tree, n: int) -> list:
    """A leaf-per-leaf list of Shardings (or None) from a jit in/out_shardings argument."""
    if shardings is None:
        return [None] * n
    if isinstance(shardings, list):
        shardings = tuple(shardings)
    flat = tu.broadcast_prefix_leaves(shardings, tree, is_leaf=lambda s: s is None)
    if flat is None:
        raise NumbaxValueError(f"jit: {api} must be a Sharding, a PartitionSpec or a tree "
                               f"prefix of the values; got {shardings} for {tree}.")
    return [None if s is None else resolve(f"jit {api}", s) for s in flat]


def _mesh_of(shardings: Sequence[Any]) -> Mesh | None:
    meshes = []
    for s in shardings:
        if isinstance(s, NamedSharding) and isinstance(s.mesh, Mesh) and s.mesh not in meshes:
            meshes.append(s.mesh)
    if len(meshes) > 1 and len({tuple(d.id for d in m.devices.flat) for m in meshes}) > 1:
        raise NumbaxValueError(
            f"jit: the arguments and shardings use different device meshes ({meshes[0]} and "
            f"{meshes[1]}); reshard them onto one mesh first.")
    return meshes[0] if meshes else None


def _eqn_meshes(jaxpr: core.Jaxpr) -> list:
    found = []
    for eqn in jaxpr.eqns:
        if eqn.primitive is lsm.shard_map_p:
            found.append(NamedSharding(eqn.params["mesh"]))
        elif eqn.primitive is sharding_constraint_p:
            found.append(eqn.params["sharding"])
    return found


def needs_layouts(jaxpr: core.Jaxpr) -> bool:
    """Whether plain jit of `jaxpr` must lay its results out (it holds a shard_map or a
    sharding constraint)."""
    return any(eqn.primitive in LAYOUT_PRIMITIVES for eqn in jaxpr.eqns)


def is_sharded_call(leaves: Sequence[Any]) -> bool:
    return any(type(x) is ShardedArray for x in leaves)


def _compile(wrapped, in_tree, avals, statics, layouts, in_shardings, out_spec_arg) -> Entry:
    bound = wrapped._bound(statics)
    store: dict = {}

    def flat_fun(*leaves):
        a, kw = tu.tree_unflatten(in_tree, leaves)
        out_flat, store["tree"] = tu.tree_flatten(bound(*a, **kw))
        return out_flat

    jaxpr, consts = pe.trace_to_jaxpr_dynamic(flat_fun, avals)
    closed = core.ClosedJaxpr(jaxpr, [np.asarray(core.to_numpy(c)) for c in consts])
    entry = Entry()
    entry.out_tree = store["tree"]
    entry.out_avals = closed.out_avals
    out_tree_for_specs = tu.tree_structure(tu.tree_unflatten(entry.out_tree,
                                                             [0] * len(closed.out_avals)))
    entry.out_shardings = _specified("out_shardings", out_spec_arg, out_tree_for_specs,
                                     len(closed.out_avals))
    mesh = _mesh_of([*in_shardings, *entry.out_shardings, *_eqn_meshes(jaxpr)])
    entry.mesh = mesh
    entry.in_layouts = layouts
    sizes = dict(mesh.shape) if mesh is not None else {}
    entry.out_layouts = partition.propagate(jaxpr, layouts, sizes)
    entry.program = entry.exe = None
    across = mesh is not None and mesh.is_multi_process
    if mesh is not None and mesh.size > 1 and (across or any(any(lay) for lay in layouts)) and \
            not config.jax_disable_jit:
        try:
            local, entry.out_layouts = partition.localize(closed, layouts, mesh)
            entry.program = spmd.prepare(local, wrapped._name)
        except partition.NeedsGather as why:
            if across:
                raise NumbaxValueError(
                    f"jit({wrapped._name}): its arguments are laid out over devices of several "
                    f"processes, and the program needs a block of another device's data ({why})"
                    ", which numbax's partitioner moves only within one process. Compute that "
                    "part inside shard_map (collectives move data between processes), or "
                    "gather the inputs first.") from None
            entry.program = None
        if entry.program is None and across:
            raise NumbaxValueError(
                f"jit({wrapped._name}): the program cannot be sent to the worker processes (it "
                "refers to the script's __main__, or does not pickle), and its arguments span "
                "several processes. Define its functions in an importable module.")
    if entry.program is None:
        entry.out_layouts = partition.propagate(jaxpr, layouts, sizes)
        entry.exe = compiler.compile(closed, "cpu", frozenset(), wrapped._name, None)
    # the results' shardings by their layouts (made once: each is validated when made)
    entry.out_named = [None if mesh is None else NamedSharding(mesh, rules.to_spec(lay))
                       for lay in entry.out_layouts]
    return entry


def call(wrapped, args: tuple, kwargs: dict, run_executable) -> Any:
    """A jitted call with shardings or sharded arguments (`run_executable`: jit's runner of
    compiled programs, for the programs that run here)."""
    dyn_args, dyn_kwargs, statics = wrapped._split(args, kwargs)
    leaves, in_tree = tu.tree_flatten((dyn_args, dyn_kwargs))
    cache = wrapped._sharded_cache
    quick = None
    if wrapped._in_shardings is None:  # the arguments are placed as they are
        quick = ("leaves", in_tree, statics, config.trace_context(), config.jax_disable_jit,
                 *[_leaf_key(x) for x in leaves])
        entry = cache.get(quick)
        if entry is not None:
            _note_quick(wrapped, args, kwargs, entry)
            return _finish(wrapped, entry, leaves, run_executable)
    arg_tree = tu.tree_structure(tu.tree_unflatten(in_tree, [0] * len(leaves))[0])
    n_pos = len(tu.tree_leaves(dyn_args))
    in_shardings = _specified("in_shardings", wrapped._in_shardings, arg_tree, n_pos)
    in_shardings += [None] * (len(leaves) - n_pos)
    placed = []
    for i, (x, s) in enumerate(zip(leaves, in_shardings, strict=True)):
        if s is not None and type(x) is ShardedArray and \
                not x.sharding.is_equivalent_to(s, x.ndim):
            # an argument already laid out over devices is not moved behind the user's back
            raise NumbaxValueError(
                f"jit({wrapped._name}): sharding passed to jit does not match the sharding "
                f"on the respective arg. Got jit sharding {s}, arg sharding {x.sharding} for "
                f"argument leaf {i} ({core.get_aval(x).str_short()}). Pass the array laid "
                "out as in_shardings says (jax.device_put / jax.reshard), or drop its "
                "in_shardings entry.")
        placed.append(put(x, s, "jit") if s is not None else x)
    shardings = [sharding_of(x) for x in placed]
    avals = [core.get_aval(x) for x in placed]
    layouts = tuple(rules.layout_of(s, a.ndim) for s, a in zip(shardings, avals, strict=True))
    key = (in_tree, tuple(avals), statics, config.trace_context(), layouts,
           tuple(s.mesh if isinstance(s, NamedSharding) else None for s in shardings),
           config.jax_disable_jit)
    entry = cache.get(key)
    if entry is None:
        if config.jax_disable_jit:
            return wrapped.fun(*args, **kwargs)
        entry = _compile(wrapped, in_tree, avals, statics, layouts,
                         [*shardings, *in_shardings], wrapped._out_shardings)
        _keep(cache, key, entry)
    if quick is not None:
        _keep(cache, quick, entry)
    return _finish(wrapped, entry, placed, run_executable)


MISS = object()  # quick_call found no entry


def quick_call(wrapped, ctx: tuple, args: tuple, run_executable) -> Any:
    """A call of `wrapped` (jit without static arguments or shardings, no keywords, outside
    any trace: jit.__call__ checks) whose arguments are all ShardedArrays, by the entry an
    earlier call of the same shapes, dtypes and shardings found (`_note_quick`): no pytree
    passes, no split of statics. MISS when there is none."""
    key = ("args", ctx, *[_leaf_key(x) for x in args if type(x) is ShardedArray])
    entry = wrapped._sharded_cache.get(key) if len(key) == len(args) + 2 else None
    if entry is None:
        return MISS
    return _finish(wrapped, entry, list(args), run_executable)


def _note_quick(wrapped, args: tuple, kwargs: dict, entry: Entry) -> None:
    """Keeps `entry` for quick_call when this call is one it can take."""
    ctx = config._fast_ctx
    if ctx is None or kwargs or not wrapped._simple or wrapped.inline or not args or \
            any(type(x) is not ShardedArray for x in args):
        return
    _keep(wrapped._sharded_cache, ("args", ctx, *[_leaf_key(x) for x in args]), entry)


def _leaf_key(x: Any) -> Any:
    """What of an argument decides its entry, cheaper than its aval for a ShardedArray (whose
    aval, layout and mesh follow from its shape, dtype, weak type and sharding)."""
    if type(x) is ShardedArray:
        return x.shape, x.dtype, x._weak_type, x._sharding
    return core.get_aval(x)


def _keep(cache: dict, key: tuple, entry: Entry) -> None:
    cache[key] = entry
    if len(cache) > int(config.executable_cache_size):
        with contextlib.suppress(KeyError, RuntimeError, StopIteration):  # another thread's
            del cache[next(iter(cache))]  # the oldest


def _finish(wrapped, entry: Entry, placed: list, run_executable) -> Any:
    values = _run(wrapped, entry, placed, run_executable)
    outs = [_lay_out(v, a, s, r) for v, a, s, r in
            zip(values, entry.out_avals, entry.out_named, entry.out_shardings, strict=True)]
    return tu.tree_unflatten(entry.out_tree, outs)


def _run(wrapped, entry: Entry, placed: list, run_executable) -> list[spmd.Global]:
    if entry.program is not None:
        globals_ = [x.shm() if type(x) is ShardedArray else
                    spmd.Global(np.asarray(core.to_numpy(x))) for x in placed]
        shapes = tuple(g.value.shape if g.offset is None else core.get_aval(x).shape
                       for g, x in zip(globals_, placed, strict=True))
        plan = entry.program.plan(shapes, lambda: _plan(entry, shapes))
        return spmd.run(f"jit({wrapped._name})", plan, globals_)
    return [spmd.Global(np.asarray(o)) for o in run_executable(entry.exe, placed)]


def _plan(entry: Entry, shapes: tuple) -> spmd.Plan:
    """The engine's plan of the entry's calls (its mesh and layouts are the entry's; the
    shapes are the arguments' global shapes)."""
    mesh = entry.mesh
    in_index = [_blocks(mesh, lay, shape) for shape, lay in
                zip(shapes, entry.in_layouts, strict=True)]
    out_index, writers = [], []
    for aval, lay in zip(entry.out_avals, entry.out_layouts, strict=True):
        sharding = NamedSharding(mesh, rules.to_spec(lay))
        out_index.append(sharding.block_indices(aval.shape))
        writers.append([r == 0 for r in sharding.replica_ids()])
    return spmd.plan(entry.program, mesh.axis_names, mesh.axis_sizes,
                     [d.id for d in mesh.devices.flat], in_index,
                     [a.shape for a in entry.out_avals], out_index, writers)


def _blocks(mesh: Mesh, layout, shape: tuple) -> list:
    return NamedSharding(mesh, rules.to_spec(layout)).block_indices(shape)


def _lay_out(value: spmd.Global, aval: core.ShapedArray, laid_out: NamedSharding | None,
             requested: Sharding | None) -> Any:
    """A result laid out as requested, else as `laid_out` says (its layout over the entry's
    mesh; None without a mesh). No data moves either way; across processes, from this
    process's box of it."""
    if value.offset is not None:
        base = from_global(value, aval.weak_type, laid_out, aval.shape)
        return put(base, requested, "jit") if requested is not None else base
    base = Array._from_numpy(value.value, aval.weak_type)
    if requested is not None:
        return put(base, requested, "jit")
    if laid_out is None:
        return base
    return wrap(base._value, aval.weak_type, laid_out)


def relabel(outs: list, jaxpr_layouts: Sequence, mesh: Mesh | None) -> list:
    """Plain jit's results of a program holding shard_map or a constraint, laid out."""
    if mesh is None:
        return outs
    return [wrap(o._value, o.weak_type, NamedSharding(mesh, rules.to_spec(lay)))
            for o, lay in zip(outs, jaxpr_layouts, strict=True)]


def plain_layouts(jaxpr: core.Jaxpr) -> tuple[list, Mesh | None]:
    """The result layouts (and mesh) of a jaxpr with unsharded inputs."""
    mesh = _mesh_of(_eqn_meshes(jaxpr))
    sizes = dict(mesh.shape) if mesh is not None else {}
    return partition.propagate(jaxpr, [((),) * v.aval.ndim for v in jaxpr.invars],
                               sizes), mesh
