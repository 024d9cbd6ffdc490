"""The SPMD engine under pmap, shard_map and sharded jit: one per-device program runs on every
device of a mesh, each on its block of the global inputs, all blocks living in shared memory.

Inputs and outputs are global arrays in the shared-memory heap; a device reads its block of an
input as a slice (numpy input is copied into the heap once per call) and writes its block of an
output in place, so results come back as arrays over heap blocks without a copy. Each output
block is written by one device (replica 0 of that block)."""
from __future__ import annotations

import collections
import io
import itertools
import pickle
import threading
import types
from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax._src import core
from numbax._src.config import config
from numbax._src.parallel import collectives, crossproc, distributed, pool, shm, topology

_program_keys = itertools.count()

Index = tuple[tuple[int, int], ...]  # (start, stop) per dimension


class Program:
    """A per-device program ready to ship: its pickled jaxpr, output avals, the scratch
    bytes its largest collective needs and its large reductions (their result arena), and
    the plans of its calls so far (by the caller's key: mesh, shapes and layouts)."""

    __slots__ = ("key", "payload", "out_avals", "slot_bytes", "axis_sets", "reductions",
                 "collective", "_plans", "_lock")
    MAX_PLANS = 32

    def __init__(self, key: int, payload: bytes, out_avals: list, slot_bytes: int,
                 axis_sets: set, reductions: list, collective: bool = True) -> None:
        self.key = key
        self.payload = payload
        self.out_avals = out_avals
        self.slot_bytes = slot_bytes
        self.axis_sets = axis_sets  # the mesh axes its collectives exchange over
        self.reductions = reductions  # collectives.large_reductions
        self.collective = collective  # whether it holds collectives (else no scratch, no Comm)
        self._plans: collections.OrderedDict = collections.OrderedDict()
        self._lock = threading.Lock()

    def plan(self, key: Any, make: Any) -> Plan:
        """The plan kept for `key` (mesh, shapes and layouts of the call), else `make()`'s,
        kept (the last MAX_PLANS used)."""
        with self._lock:
            found = self._plans.get(key)
            if found is not None:
                self._plans.move_to_end(key)
                return found
        found = make()  # outside the lock: it may raise (a shape the mesh does not divide)
        with self._lock:
            self._plans[key] = found
            if len(self._plans) > self.MAX_PLANS:
                self._plans.popitem(last=False)
        return found


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
    slot_bytes = collectives.slot_bytes(collectives.collective_bytes(closed.jaxpr))
    return Program(next(_program_keys), out.getvalue(), list(closed.out_avals), slot_bytes,
                   collectives.collective_axes(closed.jaxpr),
                   collectives.large_reductions(closed.jaxpr),
                   collectives.has_collectives(closed.jaxpr))


class Global:
    """A global array of the call: its parent-side view and the block holding it (None for
    numpy data not yet in shared memory). In a multi-process call `value` may be this
    process's box of the global array, starting at `offset` (None: the whole array)."""

    __slots__ = ("value", "block", "offset")

    def __init__(self, value: np.ndarray, block: shm.Block | None = None,
                 offset: tuple | None = None) -> None:
        self.value = value
        self.block = block
        self.offset = offset


_WIRE_DTYPES: dict = {}


def wire_dtype(dtype: Any) -> Any:
    """A dtype as the workers' messages carry it: its string where that names it again (a
    string pickles and loads several times faster than a dtype), else the dtype itself
    (bfloat16's string is '<V2')."""
    found = _WIRE_DTYPES.get(dtype)
    if found is None:
        dtype = np.dtype(dtype)
        found = _WIRE_DTYPES[dtype] = dtype.str if np.dtype(dtype.str) == dtype else dtype
    return found


def _bytes(shape: Sequence[int], dtype: Any) -> int:
    return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize


class Plan:
    """What every call of one program on one mesh with the same argument shapes and layouts
    shares, worked out once and kept by the caller (`Program.plan`): the ranks this process
    runs and their workers, the result boxes, the bytes each call reserves, and each rank's
    blocks of the results. A small call spent about a third of its time recomputing these."""

    __slots__ = ("program", "axis_names", "axis_sizes", "devices", "places", "me", "ranks",
                 "workers", "across", "in_index", "out_boxes", "out_index", "out_writer",
                 "out_specs", "fixed_bytes", "scratch_bytes", "arena", "top_worker", "given")

    def __init__(self, program: Program, axis_names: tuple, axis_sizes: tuple,
                 devices: Sequence[int], in_index: Sequence[Sequence],
                 out_shapes: Sequence[tuple], out_index: Sequence[Sequence],
                 out_writer: Sequence[Sequence[bool]]) -> None:
        self.given = (in_index, out_shapes, out_index, out_writer)  # to plan again
        self.program = program
        self.axis_names = tuple(axis_names)
        self.axis_sizes = tuple(axis_sizes)
        self.devices = tuple(devices)
        self.places = [topology.split_device_id(d) for d in devices]
        self.me = topology.process_index()
        self.ranks = [r for r, (p, _) in enumerate(self.places) if p == self.me]
        self.workers = [self.places[r][1] for r in self.ranks]
        self.top_worker = max(self.workers, default=-1)
        self.across = len(self.ranks) < len(devices)
        self.in_index = [tuple(idx) for idx in in_index]
        self.out_index = [tuple(idx) for idx in out_index]
        if self.across:
            self.out_boxes = [box(shape, [idx[r] for r in self.ranks]) for shape, idx in
                              zip(out_shapes, out_index, strict=True)]
            self.out_writer = [_first_local_writers(idx, self.ranks) for idx in out_index]
        else:
            self.out_boxes = [(tuple(s), None) for s in out_shapes]
            self.out_writer = [list(w) for w in out_writer]
        # each rank's (shape, dtype, block, writes) of every result, as its message says
        self.out_specs = {r: [(s, wire_dtype(a.dtype), _local(idx[r], offset), wr[r])
                              for (s, offset), a, idx, wr in
                              zip(self.out_boxes, program.out_avals, self.out_index,
                                  self.out_writer, strict=True)]
                          for r in self.ranks}
        self.arena = collectives.arena_bytes(program.reductions, self.axis_names,
                                             self.axis_sizes)
        self.scratch_bytes = len(devices) * (program.slot_bytes + collectives.NOTE_BYTES) \
            if program.collective else 0
        need = [_bytes(s, a.dtype) for (s, _), a in
                zip(self.out_boxes, program.out_avals, strict=True)]
        need += [self.scratch_bytes, self.arena]
        self.fixed_bytes = sum(shm.aligned(max(n, 1), shm.PAGE) for n in need)


def plan(program: Program, axis_names: tuple, axis_sizes: tuple, devices: Sequence[int],
         in_index: Sequence[Sequence], out_shapes: Sequence[tuple],
         out_index: Sequence[Sequence], out_writer: Sequence[Sequence[bool]]) -> Plan:
    """The plan of calls of `program` on the mesh (axis_names, axis_sizes) whose rank r is the
    device of global id devices[r]; this process runs its own devices' ranks.

    in_index[k][r] / out_index[k][r]: the block of input/output k that rank r reads/writes
    (an Index into the global array, or None for all of it); out_writer[k][r]: whether rank r
    writes its block (a single-process call)."""
    return Plan(program, axis_names, axis_sizes, devices, in_index, out_shapes, out_index,
                out_writer)


def run(api: str, plan: Plan, inputs: Sequence[Global],
        into: dict[int, Global] | None = None) -> list[Global]:
    """Runs `plan`'s program on its mesh over `inputs`. Returns the outputs as Globals over
    new heap blocks (this process's boxes of them in a multi-process call), or output k over
    into[k] (a donated input's, split alike: each device writes its block where it read it)."""
    if plan.me != topology.process_index():  # the plan predates distributed.initialize
        plan = Plan(plan.program, plan.axis_names, plan.axis_sizes, plan.devices, *plan.given)
    if plan.across:
        distributed.check(api)
    try:
        return _run(api, plan, inputs, into or {})
    except BaseException as err:
        if plan.across:  # the other processes wait for this one's part: tell them
            distributed.fail(f"failed in {api} with {type(err).__name__}: {err}")
        raise


def _run(api: str, plan: Plan, inputs: Sequence[Global], into: dict) -> list[Global]:
    heap = shm.heap()
    program = plan.program
    total = plan.fixed_bytes + sum(shm.aligned(max(x.value.nbytes, 1), shm.PAGE)
                                   for x in inputs if x.block is None)
    if total > heap.free_bytes():
        shm.check_room(api, total, f"the arguments, results and collective buffers of "
                       f"{len(plan.ranks)} devices", heap.free_bytes())
    p = pool.get_pool(int(config.num_cpu_devices))
    if plan.top_worker >= p.n:
        raise ValueError(f"{api}: the mesh uses CpuDevice(id="
                         f"{max(plan.devices[r] for r in plan.ranks)}), but there are {p.n} "
                         "CPU devices (numbax.config.num_cpu_devices).")
    links = None
    if plan.across:
        crossproc.prepare(api, _group_keys(program, plan.axis_names, plan.axis_sizes,
                                           plan.devices, plan.ranks))
    staged = [x if x.block is not None else _stage(api, heap, x) for x in inputs]
    outs = []
    for k, ((s, offset), a) in enumerate(zip(plan.out_boxes, program.out_avals, strict=True)):
        if k in into:
            outs.append(into[k])
            continue
        block, value = shm.alloc_array(api, s, a.dtype, "the results")
        outs.append(Global(value, block, offset))
    # the slots (n_ranks x slot_bytes) and the ranks' notes (collectives.Comm._publish); the
    # arena is a block of its own, so a result adopted from it keeps only it alive
    scratch = heap.alloc(api, plan.scratch_bytes, "collective buffers") \
        if plan.scratch_bytes else None
    arena = plan.arena
    arena_block = heap.alloc(api, arena, "collective results") if arena else None
    if plan.across and scratch is not None:  # the parent reads and writes slots and arena too
        links = crossproc.Links(heap.mapped(scratch, (len(plan.devices), program.slot_bytes),
                                            np.uint8), plan.devices,
                                arena_block and heap.mapped(arena_block, (arena,), np.uint8))
    try:
        with p.lock:
            p.ensure_prepared(plan.workers, program.key, program.payload, api)
            messages = _messages(plan, p, staged, outs, scratch, arena_block, bool(into))
            replies = p.request(messages, api, links)
        adopted = {k: at for reply in replies.values() if reply for k, at in reply.items()}
        if adopted:
            _adopt(heap, outs, adopted, heap.array(arena_block, (arena,), np.uint8),
                   arena_block)
            arena_block = None  # it returns to the heap when the last result over it goes
    except pool.WorkerError as err:
        raise remote_error(api, err) from None
    finally:
        links = None  # its view of the slots goes before the block returns to the heap
        if scratch is not None:
            heap.release(scratch)
        if arena_block is not None:
            heap.release(arena_block)
        for x, given in zip(staged, inputs, strict=True):
            if x is not given:  # staged for this call only
                heap.release(x.block)
        staged = None
    return outs


def _messages(plan: Plan, p: pool.Pool, staged: list[Global], outs: list[Global],
              scratch: shm.Block | None, arena_block: shm.Block | None,
              aliased: bool = False) -> dict[int, tuple]:
    """Each worker's message for this call: the plan's blocks at this call's places
    (`aliased`: some outputs are written over inputs)."""
    program = plan.program
    places = [(x.block.segment, x.block.offset, x.value.shape, wire_dtype(x.value.dtype),
               x.offset) for x in staged]
    out_places = [(o.block.segment, o.block.offset) for o in outs]
    scratch_at = scratch and (scratch.segment, scratch.offset, program.slot_bytes)
    arena_at = arena_block and (arena_block.segment, arena_block.offset, plan.arena)
    messages = {}
    for r, w in zip(plan.ranks, plan.workers, strict=True):
        call = {
            "inputs": [(seg, off, shape, dtype, _local(idx[r], offset))
                       for (seg, off, shape, dtype, offset), idx in
                       zip(places, plan.in_index, strict=True)],
            "outputs": [(seg, off, *spec) for (seg, off), spec in
                        zip(out_places, plan.out_specs[r], strict=True)],
            "comm": scratch_at and (plan.axis_names, plan.axis_sizes, r, plan.devices,
                                    scratch_at, arena_at),
            "forget": p.forget_message(w, shm.heap().unlinked),
        }
        if aliased:
            call["aliased"] = True
        messages[w] = ("run", program.key, call)
    return messages


def _adopt(heap: shm.Heap, outs: list[Global], adopted: dict, arena: np.ndarray,
           block: shm.Block) -> None:
    """Makes the outputs a worker left in the result arena (output k at byte adopted[k], all
    of it, written by no one: see worker.WorkerState._run) views of the arena instead."""
    for k, at in adopted.items():
        old = outs[k].value
        value = arena[at:at + old.nbytes].view(old.dtype).reshape(old.shape)
        outs[k] = Global(value, shm.Block(block.segment, block.offset + at, old.nbytes),
                         outs[k].offset)


def _group_keys(program: Program, axis_names: tuple, axis_sizes: tuple,
                devices: Sequence[int], ranks: list[int]) -> set[tuple]:
    """The device groups this process's ranks exchange in (by the program's collectives)."""
    keys = set()
    for names in program.axis_sets:
        for r in ranks:
            members = collectives.mesh_group(tuple(axis_sizes), tuple(axis_names), names, r)
            keys.add(tuple(devices[m] for m in members))
    return keys


def box(shape: tuple, blocks: list) -> tuple[tuple, tuple | None]:
    """The smallest block of an array of `shape` holding `blocks` (Indexes, None for the whole
    array; blocks are disjoint or equal): (its shape, its offset). The offset is None when the
    blocks cover the whole array (its value is all here)."""
    shape = tuple(shape)
    if any(b is None for b in blocks):
        return shape, None
    if not blocks:
        return (0,) * len(shape), (0,) * len(shape)
    covered = sum(int(np.prod([hi - lo for lo, hi in b], dtype=np.int64)) for b in set(blocks))
    if covered == int(np.prod(shape, dtype=np.int64)):
        return shape, None
    lo = tuple(min(b[d][0] for b in blocks) for d in range(len(shape)))
    hi = tuple(max(b[d][1] for b in blocks) for d in range(len(shape)))
    return tuple(h - low for low, h in zip(lo, hi, strict=True)), lo


def _first_local_writers(index: Sequence, ranks: list[int]) -> list[bool]:
    """Each rank's whether-it-writes: the first local rank of each distinct block."""
    writers = [False] * len(index)
    seen = set()
    for r in ranks:
        if index[r] not in seen:
            seen.add(index[r])
            writers[r] = True
    return writers


def _local(index: Index | None, offset: tuple | None) -> Index | None:
    """A global block as a block of a box starting at `offset`."""
    if index is None or offset is None:
        return index
    return tuple((lo - o, hi - o) for (lo, hi), o in zip(index, offset, strict=True))


def _stage(api: str, heap: shm.Heap, x: Global) -> Global:
    """Numpy data copied into a heap block for this call (released after it), written
    through the segment's lasting mapping: a fresh mmap per call made every page of the copy
    a fault (~2 ms a call for the 2.7 MB parameters of an MLP step)."""
    block = heap.alloc(api, x.value.nbytes, "the arguments")
    out = heap.mapped(block, x.value.shape, x.value.dtype)
    np.copyto(out, x.value)
    return Global(out, block, x.offset)


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
