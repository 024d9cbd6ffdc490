"""numbax.pmap: trace the per-device program once in the parent, run one shard per virtual CPU
device in the worker pool, arguments and results moving through shared memory."""
from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from numbax._src import api, core
from numbax._src import devices as devices_mod
from numbax._src import tree_util as tu
from numbax._src.array import Array
from numbax._src.config import config
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import batching
from numbax._src.interpreters import partial_eval as pe
from numbax._src.lax import parallel
from numbax._src.parallel import spmd


class _Entry:
    """What one signature needs: the per-device program and the tree of its outputs."""

    __slots__ = ("program", "out_tree")

    def __init__(self, program: spmd.Program, out_tree) -> None:
        self.program = program
        self.out_tree = out_tree


def pmap(fun: Callable, axis_name: Hashable | None = None, *, in_axes: Any = 0,
         out_axes: Any = 0, static_broadcasted_argnums: int | Sequence[int] = (),
         devices: Sequence[devices_mod.Device] | None = None, backend: str | None = None,
         axis_size: int | None = None, donate_argnums: int | Sequence[int] = ()) -> Callable:
    """Parallel map over virtual CPU devices: shard i of each mapped argument runs on device i.

    Args:
      fun: the function to map; collectives (`lax.psum(x, axis_name)`, ...) may name the axis.
      axis_name: the name collectives use for the mapped axis.
      in_axes, out_axes: as in vmap (ints or None, prefix trees of the arguments/outputs).
      static_broadcasted_argnums: arguments passed to every device as Python constants.
      devices: the devices to use (default: the first `size` of numbax.devices()).
      backend: only "cpu" (or None).
      donate_argnums: accepted for JAX compatibility; buffers are never donated.

    Returns:
      A function whose outputs are Arrays with the mapped axis at out_axes.

    Unlike JAX: each device is a worker process started on the first call; inside another
    transform (jit, grad, vmap tracing) pmap has vmap's semantics (same results, one process).

    >>> import numbax, numbax.numpy as jnp
    >>> numbax.pmap(lambda x: x * 2)(jnp.arange(1.0)).tolist()
    [0.0]
    """
    api._check_callable("pmap", fun)
    if backend not in (None, "cpu"):
        raise NumbaxValueError(f"pmap: backend is {backend!r}, expected None or 'cpu'. "
                               "numbax's virtual devices are CPU devices.")
    static_argnums = api._as_tuple(static_broadcasted_argnums)
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    cache: dict[tuple, _Entry | None] = {}

    @functools.wraps(fun)
    def pmap_f(*args, **kwargs):
        if kwargs:
            raise NumbaxTypeError("pmap: keyword arguments are not supported; pass arrays "
                                  "positionally so in_axes can describe them.")
        dynamic, static = api._split_static("pmap", args, static_argnums)
        f = api._bind_static(fun, static, len(args))
        axes = _dynamic_axes(in_axes, len(args), {i for i, _ in static})
        args_flat, in_tree = tu.tree_flatten(dynamic)
        in_dims = api._flatten_axes("pmap", "in_axes", in_tree, axes)
        for i, x in enumerate(args_flat):
            api._check_leaf("pmap", x, f"argument leaf {i}")
        in_dims = [api._canonical_axis("pmap", d, x, i)
                   for i, (x, d) in enumerate(zip(args_flat, in_dims, strict=True))]
        size = _mapped_size(args_flat, in_dims, axis_size)
        devs = _pick_devices(devices, size)
        if _under_transform(args_flat):
            return api.vmap(f, in_axes=axes, out_axes=out_axes, axis_name=axis_name,
                            axis_size=size)(*dynamic)
        in_avals = [core.get_aval(x) for x in args_flat]
        key = (in_tree, tuple(in_avals), tuple(in_dims), static, size,
               tuple(d.id for d in devs), config.trace_context(), config.jax_disable_jit)
        if key not in cache:
            cache[key] = _trace(f, in_tree, in_avals, in_dims, size, axis_name)
        entry = cache[key]
        if entry is None:  # the program does not pickle: run it here, as vmap would
            return api.vmap(f, in_axes=axes, out_axes=out_axes, axis_name=axis_name,
                            axis_size=size)(*dynamic)
        outs = _execute(entry, args_flat, in_dims, size, devs, axis_name)
        out_dims = api._flatten_axes("pmap", "out_axes", entry.out_tree, out_axes)
        results = []
        for x, aval, d in zip(outs, entry.program.out_avals, out_dims, strict=True):
            value = x[0] if d is None else np.moveaxis(x, 0, d % x.ndim)
            results.append(Array._from_numpy(value, aval.weak_type, devs[0]))
        return tu.tree_unflatten(entry.out_tree, results)

    return pmap_f


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


def _pick_devices(devices: Sequence | None, size: int) -> list:
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


def _under_transform(args_flat: list) -> bool:
    return (any(isinstance(x, core.Tracer) for x in args_flat)
            or core._state.dynamic_trace is not None or core.trace_stack_depth() > 1)


# ----------------------------------------------------------------------------- tracing


def _trace(f: Callable, in_tree, in_avals: list, in_dims: list, size: int,
           axis_name: Hashable) -> _Entry | None:
    """Traces f at the per-shard avals with the axis bound; None when it cannot be pickled."""
    shard_avals = [a if d is None else a.update(shape=a.shape[:d] + a.shape[d + 1:])
                   for a, d in zip(in_avals, in_dims, strict=True)]
    store = {}

    def flat_fun(*xs):
        out_flat, store["tree"] = tu.tree_flatten(f(*tu.tree_unflatten(in_tree, xs)))
        return out_flat

    with core.new_main(parallel.SpmdAxisTrace, batching.AxisData(size, axis_name)):
        jaxpr, consts = pe.trace_to_jaxpr_dynamic(flat_fun, shard_avals)
    core.check_jaxpr(jaxpr)
    closed = core.ClosedJaxpr(jaxpr, [np.asarray(core.to_numpy(c)) for c in consts])
    program = spmd.prepare(closed, "pmap")
    return None if program is None else _Entry(program, store["tree"])


# ----------------------------------------------------------------------------- execution


def _execute(entry: _Entry, args_flat: list, in_dims: list, size: int, devs: list,
             axis_name: Hashable) -> list[np.ndarray]:
    """Runs the shards: shard i of each mapped input (moved to axis 0) on device i, each
    writing row i of every output."""
    inputs = []
    for x, d in zip(args_flat, in_dims, strict=True):
        value = np.asarray(core.to_numpy(x))
        inputs.append(spmd.Global(value if d is None else np.moveaxis(value, d, 0)))
    ranks = range(size)
    in_index = [[None if d is None else (r,) for r in ranks] for d in in_dims]
    n_out = len(entry.program.out_avals)
    outs = spmd.run("pmap", entry.program, (axis_name,), (size,), [d.id for d in devs],
                    inputs, in_index, [(size, *a.shape) for a in entry.program.out_avals],
                    [[(r,) for r in ranks]] * n_out, [[True] * size] * n_out)
    return [o.value for o in outs]
