"""numbax.pmap: trace the per-device program once in the parent, run one shard per virtual CPU
device in the worker pool, arguments and results moving through shared memory."""
from __future__ import annotations

import functools
import itertools
import pickle
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from numbax._src import api, core, typecheck
from numbax._src import devices as devices_mod
from numbax._src import tree_util as tu
from numbax._src.array import Array
from numbax._src.config import config
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.interpreters import batching
from numbax._src.interpreters import partial_eval as pe
from numbax._src.lax import parallel
from numbax._src.parallel import collectives, pool, shm

_program_keys = itertools.count()


class _Entry:
    """What one signature needs: the pickled program, its output avals and tree."""

    __slots__ = ("key", "payload", "out_avals", "out_tree", "slot_bytes")

    def __init__(self, key, payload, out_avals, out_tree, slot_bytes) -> None:
        self.key = key
        self.payload = payload
        self.out_avals = out_avals
        self.out_tree = out_tree
        self.slot_bytes = slot_bytes


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
        for x, aval, d in zip(outs, entry.out_avals, out_dims, strict=True):
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
    typecheck.check_jaxpr(jaxpr)
    closed = core.ClosedJaxpr(jaxpr, [np.asarray(core.to_numpy(c)) for c in consts])
    spec = {"jaxpr": closed, "x64": bool(config.jax_enable_x64),
            "use_jit": not config.jax_disable_jit}
    try:
        payload = pickle.dumps(spec)
    except (pickle.PicklingError, TypeError, AttributeError):
        return None
    slot_bytes = shm.aligned(collectives.collective_bytes(jaxpr))
    return _Entry(next(_program_keys), payload, closed.out_avals, store["tree"], slot_bytes)


# ----------------------------------------------------------------------------- execution


def _execute(entry: _Entry, args_flat: list, in_dims: list, size: int, devs: list,
             axis_name: Hashable) -> list[np.ndarray]:
    """Runs the shards: inputs into the arena, one run message per worker, outputs out."""
    p = pool.get_pool(int(config.num_cpu_devices))
    workers = [d.id for d in devs]
    if max(workers) >= p.n:
        raise NumbaxValueError(f"pmap: devices include CpuDevice(id={max(workers)}), expected "
                               f"ids below {p.n} (numbax.config.num_cpu_devices).")
    inputs = [np.asarray(core.to_numpy(x)) for x in args_flat]
    inputs = [x if d is None else np.moveaxis(x, d, 0) for x, d in zip(inputs, in_dims,
                                                                         strict=True)]
    out_shapes = [((size, *a.shape), a.dtype) for a in entry.out_avals]
    sizes = ([x.nbytes for x in inputs] + [int(np.prod(s)) * np.dtype(t).itemsize
                                           for s, t in out_shapes] + [size * entry.slot_bytes])
    offsets, total = shm.layout(sizes)
    with p.lock:
        try:
            p.ensure_prepared(workers, entry.key, entry.payload)
            segment = p.arena.ensure(total)
            in_specs = []
            for x, d, off in zip(inputs, in_dims, offsets, strict=False):
                np.copyto(shm.view(segment, off, x.shape, x.dtype), x)
                in_specs.append((off, x.shape, x.dtype.str, d is not None))
            n_in = len(inputs)
            out_specs = [(off, s, np.dtype(t).str)
                         for off, (s, t) in zip(offsets[n_in:], out_shapes, strict=False)]
            scratch = (offsets[-1], entry.slot_bytes)
            p.request({w: ("run", entry.key, segment.name, in_specs, out_specs, rank, size,
                           scratch, axis_name) for rank, w in enumerate(workers)})
            return [np.array(shm.view(segment, off, s, t)) for off, s, t in out_specs]
        except pool.WorkerError as err:
            raise _remote_error(err, devs) from None
        except KeyboardInterrupt:
            p.shutdown(graceful=False)
            raise


def _remote_error(err: pool.WorkerError, devs: list) -> BaseException:
    worker, exc_bytes, text = err.args
    exc = None
    if exc_bytes is not None:
        try:
            exc = pickle.loads(exc_bytes)
        except Exception:  # noqa: BLE001
            exc = None
    prefix = f"pmap: CpuDevice(id={worker}) raised"
    if isinstance(exc, Exception):
        try:
            new = type(exc)(f"{prefix} {type(exc).__name__}: {exc}\n\nWorker traceback:\n{text}")
            new.device_id = worker
            return new
        except Exception:  # noqa: BLE001
            pass
    return RuntimeError(f"{prefix}:\n{text}")
