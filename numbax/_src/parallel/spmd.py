"""The SPMD engine under pmap, shard_map and sharded jit: one per-device program runs on every
device of a mesh, each on its block of the global inputs, all blocks living in shared memory.

Inputs and outputs are global arrays in the shared-memory heap; a device reads its block of an
input as a slice (numpy input is copied into the heap once per call) and writes its block of an
output in place, so results come back as arrays over heap blocks without a copy. Each output
block is written by one device (replica 0 of that block)."""
from __future__ import annotations

import io
import itertools
import pickle
import types
from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax._src import core
from numbax._src.config import config
from numbax._src.parallel import collectives, pool, shm

_program_keys = itertools.count()

Index = tuple[tuple[int, int], ...]  # (start, stop) per dimension


class Program:
    """A per-device program ready to ship: its pickled jaxpr, output avals and the scratch
    bytes its largest collective needs."""

    __slots__ = ("key", "payload", "out_avals", "slot_bytes")

    def __init__(self, key: int, payload: bytes, out_avals: list, slot_bytes: int) -> None:
        self.key = key
        self.payload = payload
        self.out_avals = out_avals
        self.slot_bytes = slot_bytes


class _NoMainPickler(pickle.Pickler):
    """Refuses functions and classes of the user's __main__: workers never import it, so such a
    program cannot run there (it runs in this process instead)."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, (types.FunctionType, type)) and \
                getattr(obj, "__module__", None) == "__main__":
            raise pickle.PicklingError(f"{obj!r} is defined in __main__")
        return NotImplemented


def prepare(closed: core.ClosedJaxpr, name: str) -> Program | None:
    """The program for `closed` (per-device avals), or None when it cannot be shipped to the
    workers (it holds something that does not pickle, or refers to __main__)."""
    closed = core.ClosedJaxpr(collectives.fuse_psums(closed.jaxpr), closed.consts)
    spec = {"jaxpr": closed, "x64": bool(config.jax_enable_x64),
            "use_jit": not config.jax_disable_jit, "name": name}
    out = io.BytesIO()
    try:
        _NoMainPickler(out, protocol=pickle.HIGHEST_PROTOCOL).dump(spec)
    except (pickle.PicklingError, TypeError, AttributeError):
        return None
    slot_bytes = shm.aligned(collectives.collective_bytes(closed.jaxpr))
    return Program(next(_program_keys), out.getvalue(), list(closed.out_avals), slot_bytes)


class Global:
    """A global array of the call: its parent-side view and the block holding it (None for
    numpy data not yet in shared memory)."""

    __slots__ = ("value", "block")

    def __init__(self, value: np.ndarray, block: shm.Block | None = None) -> None:
        self.value = value
        self.block = block


def _bytes(shape: Sequence[int], dtype: Any) -> int:
    return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize


def run(api: str, program: Program, axis_names: tuple, axis_sizes: tuple,
        workers: Sequence[int], inputs: Sequence[Global], in_index: Sequence[Sequence],
        out_shapes: Sequence[tuple], out_index: Sequence[Sequence],
        out_writer: Sequence[Sequence[bool]]) -> list[Global]:
    """Runs `program` on the mesh (axis_names, axis_sizes) whose rank r is worker workers[r].

    in_index[k][r] / out_index[k][r]: the block of input/output k that rank r reads/writes
    (an Index, or None for all of it); out_writer[k][r]: whether rank r writes its block.
    Returns the outputs as Globals over new heap blocks."""
    heap = shm.heap()
    need = [x.value.nbytes for x in inputs if x.block is None]
    need += [_bytes(s, a.dtype) for s, a in zip(out_shapes, program.out_avals, strict=True)]
    need.append(len(workers) * program.slot_bytes)
    total = sum(shm.aligned(max(n, 1), shm.PAGE) for n in need)
    shm.check_room(api, total, f"the arguments, results and collective buffers of "
                   f"{len(workers)} devices", heap.free_bytes())
    staged = [x if x.block is not None else _stage(api, x.value) for x in inputs]
    outs = []
    for s, a in zip(out_shapes, program.out_avals, strict=True):
        block, value = shm.alloc_array(api, s, a.dtype, "the results")
        outs.append(Global(value, block))
    scratch = heap.alloc(api, max(1, len(workers) * program.slot_bytes), "collective buffers")
    p = pool.get_pool(int(config.num_cpu_devices))
    if max(workers) >= p.n:
        raise ValueError(f"{api}: the mesh uses CpuDevice(id={max(workers)}), but there are "
                         f"{p.n} CPU devices (numbax.config.num_cpu_devices).")
    try:
        with p.lock:
            p.ensure_prepared(list(workers), program.key, program.payload, api)
            messages = {}
            for r, w in enumerate(workers):
                call = {
                    "inputs": [_spec(x, x.value.shape, x.value.dtype, idx[r])
                               for x, idx in zip(staged, in_index, strict=True)],
                    "outputs": [(*_spec(o, o.value.shape, o.value.dtype, idx[r]), wr[r])
                                for o, idx, wr in zip(outs, out_index, out_writer, strict=True)],
                    "comm": (axis_names, axis_sizes, r, tuple(workers),
                             (scratch.segment, scratch.offset, program.slot_bytes)),
                    "forget": p.forget_message(w, heap.unlinked),
                }
                messages[w] = ("run", program.key, call)
            p.request(messages, api)
    except pool.WorkerError as err:
        raise remote_error(api, err) from None
    finally:
        heap.release(scratch)
    return outs


def _stage(api: str, value: np.ndarray) -> Global:
    block, out = shm.alloc_array(api, value.shape, value.dtype, "the arguments")
    np.copyto(out, value)
    return Global(out, block)


def _spec(x: Global, shape: tuple, dtype: Any, index: Index | None) -> tuple:
    return (x.block.segment, x.block.offset, tuple(shape), np.dtype(dtype).str, index)


def remote_error(api: str, err: pool.WorkerError) -> BaseException:
    """The worker's exception, re-raised here with its device and remote traceback."""
    worker, exc_bytes, text = err.args
    exc = None
    if exc_bytes is not None:
        try:
            exc = pickle.loads(exc_bytes)
        except Exception:  # noqa: BLE001
            exc = None
    prefix = f"{api}: CpuDevice(id={worker}) raised"
    if isinstance(exc, Exception):
        try:
            new = type(exc)(f"{prefix} {type(exc).__name__}: {exc}\n\nWorker traceback:\n{text}")
            new.device_id = worker
            return new
        except Exception:  # noqa: BLE001
            pass
    return RuntimeError(f"{prefix}:\n{text}")
