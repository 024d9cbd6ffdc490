"""Collectives across the workers of one SPMD call (pmap, shard_map, sharded jit), installed
as the impls of the lax collective primitives in worker processes only.

The devices of a call form a mesh (pmap: one axis). A collective over some mesh axes runs in
groups: the devices that agree on every other axis. Each device writes its operand to its own
slot of a shared scratch block, waits at its group's barrier (barriers.py: semaphores
between the workers; the parent's, pool.py, for a step across processes),
reads its group's slots in group order (so all members agree bit for bit); the barrier that
frees the slots again is put off to the next collective, which skips it when it exchanges over
the same group through the other half of the slots (Comm.exchange). Elementwise reductions
(psum, pmax, pmin) of CHUNKED_REDUCE_BYTES and more instead reduce-scatter: each member reduces
one n-th of the elements over the group's operands, so n members move about 2n operands' worth
of memory instead of n². A lone operand that already lies in shared memory (an input block, an
earlier result) is read where it lies, others are staged in the slot. The reduction lands in
the call's result arena (a block the parent sizes for every large reduction of the program, so
a result stays valid for the rest of the call), and every member returns a view of it: no copy,
and no third barrier; a replicated output that is such a view becomes the call's result as it
is (worker.py, spmd.py). A group that spans processes reduces the same way, and the parent
then runs the cross-process allreduce in place on the arena's block before the members go on
(crossproc.py). When the arena is used up (a reduction in a loop), the reduction lands in the
first member's slot instead, which every member copies before the slots are reused."""
from __future__ import annotations

import functools
import threading
from typing import Any

import numpy as np

from numbax._src import core, dtypes
from numbax._src.lax import parallel, parallel_redistribute
from numbax._src.lax.shard_map import shard_map_p
from numbax._src.parallel import send_plain, shm, topology

# Below this, two barriers (one exchange) cost less than the extra two of the chunked path.
CHUNKED_REDUCE_BYTES = 1 << 20
NOTE_BYTES = 128  # per rank: where its operand of the current reduction lies (Comm._publish)


def _names(axis_name: Any) -> tuple:
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


class Group:
    """A collective's group as one device sees it: the members' ranks in axis order, the local
    members' worker indices (the parent's barrier), the members' device ids (the group's
    identity across processes) and whether it spans processes."""

    __slots__ = ("members", "barrier", "key", "local", "spans", "index", "count")

    def __init__(self, members: list[int], devices: tuple, me: int, index: int = 0,
                 count: int = 1) -> None:
        self.members = members
        self.index = index  # this group's place among the `count` groups over its axes
        self.count = count
        self.key = tuple(devices[r] for r in members)
        places = [topology.split_device_id(d) for d in self.key]
        self.local = [r for r, (p, _) in zip(members, places, strict=True) if p == me]
        self.barrier = tuple(sorted(i for p, i in places if p == me))
        self.spans = len(self.local) < len(members)


class Comm:
    """One call's view of the device mesh from one worker: its coordinates, the scratch slots
    (one per device of the call, by rank; the parent fills other processes' slots) and the
    barriers (the pool's board, or a round trip to the parent, which runs the cross-process
    step, crossproc.py)."""

    def __init__(self, conn, axis_names: tuple, axis_sizes: tuple, rank: int, devices: tuple,
                 scratch: np.ndarray, arena: np.ndarray | None = None,
                 notes: np.ndarray | None = None, attachments: Any = None,
                 board: tuple = (None, -1)) -> None:
        self.conn = conn
        self.board, self.worker = board  # the pool's barriers.Board and this worker's index
        self.axis_names = tuple(axis_names)
        self.axis_sizes = tuple(axis_sizes)
        self.rank = rank
        self.devices = devices  # the global device id of each rank
        self.process = topology.split_device_id(devices[rank])[0]
        self.scratch = scratch  # uint8[n_ranks, slot_bytes]
        self.arena = np.empty(0, np.uint8) if arena is None else arena  # uint8[arena_bytes]
        self._arena_at = 0  # the bytes of the arena that earlier reductions took
        self.notes = notes  # uint8[n_ranks, NOTE_BYTES], or None: operands always staged
        self.attachments = attachments  # the worker's shm.Attachments (segments by name)
        self._groups: dict[tuple, Group] = {}
        # an exchange's closing barrier (its slots read by all) is put off to the next
        # collective, which skips it when it exchanges over the same group through the other
        # half of the slots (`_half`); the call's end needs none, the parent waits for all
        self._deferred: Group | None = None
        self._half = 0
        self.mailbox: dict[tuple, list] = {}  # psend's values by (axis_name, perm), for precv

    def group(self, api: str, axis_name: Any) -> Group:
        """This device's group over `axis_name` (several names: row-major over them, as JAX
        orders them)."""
        names = _names(axis_name)
        found = self._groups.get(names)
        if found is None:
            unknown = [n for n in names if n not in self.axis_names]
            if unknown:
                raise NameError(f"lax.{api}: axis {unknown[0]!r} is not an axis of this call's "
                                f"mesh {self.axis_names}.")
            found = self._groups[names] = _group(self.axis_sizes, self.axis_names, names,
                                                 self.rank, self.devices, self.process)
        return found

    def position(self, api: str, axis_name: Any) -> int:
        return self.group(api, axis_name).members.index(self.rank)

    def wait(self, group: Group, action: tuple | None = None) -> None:
        """The barrier of this process's members of `group`: on the pool's board (no message
        to the parent), or through the parent when there is none or `action` is a
        cross-process step for the parent to run."""
        if action is None and self.board is not None:
            self.board.barrier(self.worker, group.barrier, self.conn)
            return
        send_plain(self.conn, ("barrier", group.barrier, action))
        reply = self.conn.recv()
        if reply[0] != "go":
            raise threading.BrokenBarrierError("another device of this call failed")

    def _slot(self, rank: int, nbytes: int) -> np.ndarray:
        return self.scratch[rank, :nbytes]

    def _check_fits(self, nbytes: int) -> None:
        if nbytes > self.scratch.shape[1]:
            raise RuntimeError(
                f"a collective operand has {nbytes} bytes, more than the "
                f"{self.scratch.shape[1]} bytes reserved for it; this is a numbax bug, please "
                "report it.")

    def exchange(self, api: str, axis_name: Any, x: np.ndarray, combine) -> np.ndarray:
        """combine(list of every group member's x, in group order) -> the result, computed
        after one barrier (which gathers other processes' slots into this one's first).

        Within one process, an operand that fits half a slot goes to the half the last
        exchange did not use, and the barrier that frees the slots waits for the next
        collective (`_settle`): exchanges in a row over one group cost one barrier each
        (a member writes a half again only after the barrier of the exchange between, which
        every reader of that half reached after reading it). Otherwise the slots are freed
        by a second barrier here."""
        group = self.group(api, axis_name)
        x = np.asarray(x, order="C")  # (ascontiguousarray would make 0-d arrays 1-d)
        raw = x.reshape(-1).view(np.uint8)
        half = self.scratch.shape[1] // 2 // 64 * 64
        halves = not group.spans and raw.size <= half
        self._settle(group if halves else None)
        at = self._half * half if halves else 0
        self._check_fits(at + raw.size)
        self.scratch[self.rank, at:at + raw.size] = raw
        self.wait(group, ("allgather", group.key, raw.size) if group.spans else None)
        try:
            parts = [self.scratch[r, at:at + raw.size].view(x.dtype).reshape(x.shape)
                     for r in group.members]
            out = np.array(combine(parts))
        finally:
            if halves:
                self._deferred, self._half = group, 1 - self._half
            else:
                self.wait(group)
        return out

    def _settle(self, group: Group | None = None) -> None:
        """Runs the barrier the last exchange put off (the slots it wrote are then free),
        unless `group` is that exchange's group (the caller uses the other half)."""
        deferred, self._deferred = self._deferred, None
        if deferred is not None and deferred is not group:
            self.wait(deferred)

    def reduce_elementwise(self, api: str, axis_name: Any, xs: list[np.ndarray],
                           op: str) -> list[np.ndarray]:
        """The elementwise reduction `op` ("sum", "max", "min") over every member of each of
        `xs` (operands of one dtype, laid end to end in the slot: several psums in one
        exchange). Small operands are exchanged (each member reduces all slots in group
        order); large ones are published (_publish: read in place or staged), then
        reduce-scattered over this process's members (_reduce_scatter) into the result arena
        or, once it is used up, into the first member's slot, and combined across processes
        by the parent (crossproc.py) in place; a result in a slot is copied by every
        member."""
        group = self.group(api, axis_name)
        xs = [np.asarray(x, order="C") for x in xs]
        dtype = xs[0].dtype
        size = sum(x.size for x in xs)
        if size * dtype.itemsize < CHUNKED_REDUCE_BYTES or len(group.members) == 1:
            flat = xs[0].reshape(-1) if len(xs) == 1 else np.concatenate(
                [x.reshape(-1) for x in xs])
            total = self.exchange(api, axis_name, flat, lambda ps: _reduce(op, ps))
            return _split(total, xs)
        self._settle()  # the slots and notes are written next
        area = self._result_area(group, sum(x.nbytes for x in xs))
        if area is not None and len(group.local) == 1:  # spans: nothing to reduce here
            # an operand in shared memory goes to the parent where it lies (it reads it
            # while it fills the arena: a copy less), others through the arena
            where = self.attachments.locate(xs[0]) \
                if len(xs) == 1 and self.attachments is not None else None
            if where is None:
                _put(area, xs)
            self.wait(group, ("allreduce", group.key, ("arena", self._arena_place(area)),
                              area.nbytes, dtype, op, where))
            return _split(area.view(dtype), xs)
        nbytes = self._publish(group, xs)
        return _split(self._reduce_scatter(group, op, dtype, size, nbytes, area), xs)

    def _publish(self, group: Group, xs: list[np.ndarray]) -> int:
        """Makes this member's operands readable by its group: a lone operand that already
        lies in shared memory (an input block, an earlier reduction's result) is noted where
        it lies, to be read in place; others are staged in this member's slot. Their bytes."""
        where = None
        # (a lone member's slot is the operand the parent's allreduce takes: staged)
        if len(xs) == 1 and self.notes is not None and len(group.local) > 1:
            where = self.attachments.locate(xs[0])
        if where is None or len(where[0]) > NOTE_BYTES - 9:
            if self.notes is not None:
                self.notes[self.rank, :8].view(np.int64)[0] = -1
            return self._put_many(xs)
        name, offset = where
        note = self.notes[self.rank]
        note[:8].view(np.int64)[0] = offset
        note[8:8 + len(name)] = np.frombuffer(name.encode(), np.uint8)
        note[8 + len(name)] = 0
        return xs[0].nbytes

    def _operand(self, rank: int, nbytes: int, dtype: np.dtype) -> np.ndarray:
        """Member `rank`'s published operand (after the barrier that follows _publish)."""
        note = self.notes[rank] if self.notes is not None else None
        offset = -1 if note is None else int(note[:8].view(np.int64)[0])
        if offset < 0:
            return self._slot(rank, nbytes).view(dtype)
        name = bytes(note[8:]).split(b"\0", 1)[0].decode()
        return shm.view(self.attachments.get(name), offset, (nbytes // dtype.itemsize,), dtype)

    def _result_area(self, group: Group, nbytes: int) -> np.ndarray | None:
        """This group's `nbytes` of the result arena for the next reduction, or None when the
        arena is used up. Every group over the same axes takes its own place in one stretch
        of the arena, so all devices (running the same collectives) advance alike."""
        stride = shm.aligned(nbytes)
        if self._arena_at + group.count * stride > self.arena.size:
            return None
        at = self._arena_at + group.index * stride
        self._arena_at += group.count * stride
        return self.arena[at:at + nbytes]

    def _arena_place(self, area: np.ndarray) -> int:
        """The byte of the arena where `area` (a view of it) starts."""
        return area.__array_interface__["data"][0] - self.arena.__array_interface__["data"][0]

    def _reduce_scatter(self, group: Group, op: str, dtype: np.dtype, size: int, nbytes: int,
                        area: np.ndarray | None) -> np.ndarray:
        """Each local member reduces its range of the operands in group order into `area` (a
        view of it is the result, after one more barrier, at which the parent combines a
        group that spans processes), or with `area` None into the first member's slot in
        place (the parent's MPI allreduce follows, every member copies the result, and a
        third barrier frees the slots). Every member passes all barriers, even when its
        reduction fails: a member that stopped early would leave the others waiting."""
        local = group.local
        me, n = local.index(self.rank), len(local)
        lo, hi = size * me // n, size * (me + 1) // n
        error = None
        first = self._slot(local[0], nbytes).view(dtype)
        out = first if area is None else area.view(dtype)
        if n > 1:
            self.wait(group)  # every slot written
            try:
                # only this member touches this range of `out` before the next barrier
                mine, ufunc = out[lo:hi], _REDUCE_UFUNCS[op]
                parts = [self._operand(r, nbytes, dtype)[lo:hi] for r in local]
                ufunc(parts[0], parts[1], out=mine)
                for part in parts[2:]:
                    ufunc(mine, part, out=mine)
            except Exception as e:  # noqa: BLE001 - raised below, after the barriers
                error = e
        if area is not None:
            # every range reduced: the slots may be reused (and the other processes' part
            # joins the arena's block first)
            self.wait(group, ("allreduce", group.key, ("arena", self._arena_place(area)),
                              nbytes, dtype, op) if group.spans else None)
            if error is not None:
                raise error
            return out
        self.wait(group, ("allreduce", group.key, ("slot", local[0]), nbytes, dtype, op)
                  if group.spans else None)
        result = first.copy() if error is None else None
        self.wait(group)  # read by all: the slots may be reused
        if error is not None:
            raise error
        return result

    def _put_many(self, xs: list[np.ndarray]) -> int:
        """Writes the operands end to end into this device's slot; their bytes."""
        nbytes = sum(x.nbytes for x in xs)
        self._check_fits(nbytes)
        _put(self._slot(self.rank, nbytes), xs)
        return nbytes


def _put(into: np.ndarray, xs: list[np.ndarray]) -> None:
    """Writes the operands end to end into the bytes `into`."""
    at = 0
    for x in xs:
        into[at:at + x.nbytes] = x.reshape(-1).view(np.uint8)
        at += x.nbytes


def _split(total: np.ndarray, xs: list[np.ndarray]) -> list[np.ndarray]:
    """The pieces of a flat result shaped as the operands laid end to end in it."""
    if len(xs) == 1:
        return [total.reshape(xs[0].shape)]
    out, at = [], 0
    for x in xs:
        out.append(total[at:at + x.size].reshape(x.shape))
        at += x.size
    return out


@functools.lru_cache(maxsize=4096)
def _group(axis_sizes: tuple, axis_names: tuple, names: tuple, rank: int, devices: tuple,
           process: int) -> Group:
    """A rank's Group over `names`, kept across calls: worked out afresh, the groups of a
    small psum's call were a quarter of its time in the worker (more on larger meshes)."""
    members = mesh_group(axis_sizes, axis_names, names, rank)
    return Group(members, devices, process, group_index(axis_sizes, axis_names, names, rank),
                 len(devices) // len(members))


def group_index(axis_sizes: tuple, axis_names: tuple, names: tuple, rank: int) -> int:
    """The place of `rank`'s group over the mesh axes `names` among all groups over them:
    its coordinates on the other axes, row-major."""
    coords = np.unravel_index(rank, axis_sizes)
    rest = [k for k, name in enumerate(axis_names) if name not in names]
    if not rest:
        return 0
    return int(np.ravel_multi_index([coords[k] for k in rest], [axis_sizes[k] for k in rest]))


def mesh_group(axis_sizes: tuple, axis_names: tuple, names: tuple, rank: int) -> list[int]:
    """The ranks of `rank`'s group over the mesh axes `names`: the ranks agreeing with it on
    every other axis, ordered row-major over `names`."""
    coords = [tuple(int(c) for c in np.unravel_index(r, axis_sizes))
              for r in range(int(np.prod(axis_sizes, dtype=np.int64)))]
    pos = [axis_names.index(n) for n in names]
    mine = coords[rank]
    members = [r for r, c in enumerate(coords)
               if all(c[k] == mine[k] for k in range(len(mine)) if k not in pos)]
    sizes = [axis_sizes[k] for k in pos]
    members.sort(key=lambda r: np.ravel_multi_index([coords[r][k] for k in pos], sizes)
                 if pos else 0)
    return members


_local = threading.local()


def current() -> Comm:
    comm = getattr(_local, "comm", None)
    if comm is None:
        raise NameError("a collective was used outside an SPMD worker call")
    return comm


def active() -> Comm | None:
    """This thread's Comm while a worker runs a call's program (None elsewhere)."""
    return getattr(_local, "comm", None)


def set_current(comm: Comm | None) -> None:
    _local.comm = comm


def _reduce(op: str, parts: list[np.ndarray]) -> np.ndarray:
    """`op` over the members' operands in group order (((p0 op p1) op p2) ...), the order the
    in-place reduce-scatter also follows, so both paths agree bit for bit."""
    total = parts[0].copy()
    for p in parts[1:]:
        _REDUCE_UFUNCS[op](total, p, out=total)
    return total


_REDUCE_UFUNCS = {"sum": np.add, "max": np.maximum, "min": np.minimum}


def _psum(x, *, axis_name):
    return current().reduce_elementwise("psum", axis_name, [x], "sum")


def _psum_many(*xs, axis_name):
    """psums of several operands in one exchange per dtype (laid end to end in the slot)."""
    comm = current()
    outs: list = [None] * len(xs)
    by_dtype: dict = {}
    for i, x in enumerate(xs):
        by_dtype.setdefault(np.asarray(x).dtype, []).append(i)
    for dtype, idx in by_dtype.items():
        totals = comm.reduce_elementwise("psum", axis_name,
                                         [np.asarray(xs[i], dtype) for i in idx], "sum")
        for i, total in zip(idx, totals, strict=True):
            outs[i] = total
    return outs


def _pmax(x, *, axis_name):
    return current().reduce_elementwise("pmax", axis_name, [x], "max")


def _pmin(x, *, axis_name):
    return current().reduce_elementwise("pmin", axis_name, [x], "min")


def _all_gather(x, *, axis_name, axis, tiled, axis_size):
    join = np.concatenate if tiled else np.stack
    return [current().exchange("all_gather", axis_name, x, lambda ps: join(ps, axis))]


def _ppermute(x, *, axis_name, perm):
    comm = current()
    sources = {dst: src for src, dst in perm}
    src = sources.get(comm.position("ppermute", axis_name))
    return [comm.exchange("ppermute", axis_name, x,
                          lambda ps: ps[src] if src is not None else np.zeros_like(ps[0]))]


def _psum_scatter(x, *, axis_name, scatter_dimension, tiled, axis_size):
    comm = current()
    (total,) = comm.reduce_elementwise("psum_scatter", axis_name, [x], "sum")
    me = comm.position("psum_scatter", axis_name)
    if tiled:
        chunk = total.shape[scatter_dimension] // axis_size
        return [np.take(total, np.arange(me * chunk, (me + 1) * chunk), axis=scatter_dimension)]
    return [np.take(total, me, axis=scatter_dimension)]


def _all_to_all(x, *, axis_index_groups, axis_name, axis_size, concat_axis, split_axis, tiled):
    comm = current()
    me = comm.position("all_to_all", axis_name)

    def trade(parts):  # member j's piece `me`, for every j, in order
        pieces = [np.split(p, axis_size, axis=split_axis)[me] for p in parts]
        if tiled:
            return np.concatenate(pieces, axis=concat_axis)
        return np.stack([np.squeeze(p, split_axis) for p in pieces], axis=concat_axis)

    return [comm.exchange("all_to_all", axis_name, x, trade)]


def _axis_index(*, axis_name):
    comm = current()
    return [np.asarray(comm.position("axis_index", axis_name),
                       dtype=dtypes.default_int_dtype())]


WORKER_IMPLS = {
    parallel.psum_p: _psum,
    parallel.psum_many_p: _psum_many,
    parallel.pmax_p: _pmax,
    parallel.pmin_p: _pmin,
    parallel.all_gather_p: _all_gather,
    parallel.ppermute_p: _ppermute,
    parallel.psum_scatter_p: _psum_scatter,
    parallel.axis_index_p: _axis_index,
    parallel_redistribute.all_to_all_p: _all_to_all,
}


def install() -> None:
    """Makes the collective primitives run across workers (called once in each worker)."""
    core.impl_rules.update(WORKER_IMPLS)


def _nested_gathers(eqn: core.JaxprEqn) -> list[tuple[tuple, int]]:
    """(axes, block bytes) of each all_gather a shard_map nested in a worker's program runs
    on its results (parallel/shard_map.py `_in_worker`): none for other equations."""
    if eqn.primitive is not shard_map_p:
        return []
    found = []
    for aval, spec in zip(eqn.params["jaxpr"].out_avals, eqn.params["out_specs"], strict=True):
        for names in spec._normalized(aval.ndim):
            if names:
                found.append((tuple(names), _operand_bytes(aval)))
    return found


def collective_axes(jaxpr: core.Jaxpr) -> set[tuple]:
    """The mesh axes (as tuples of names) the collectives of `jaxpr` exchange over."""
    found = set()
    for eqn in jaxpr.eqns:
        if eqn.primitive in WORKER_IMPLS and eqn.primitive is not parallel.axis_index_p:
            found.add(_names(eqn.params["axis_name"]))
        found.update(names for names, _ in _nested_gathers(eqn))
        for sub in core.jaxprs_in_params(eqn.params):
            found |= collective_axes(sub)
    return found


def _operand_bytes(aval) -> int:
    """The bytes of a collective's operand of type `aval` as the worker holds it: bfloat16
    operands reach the impls as float32 (dispatch.py computes bfloat16 in float32)."""
    itemsize = 4 if aval.dtype == dtypes.bfloat16 else aval.dtype.itemsize
    return aval.size * itemsize


def slot_bytes(nbytes: int) -> int:
    """Each device's slot for collectives whose largest operand has `nbytes`: room for it,
    twice over when it is small (exchanges in a row alternate halves, Comm.exchange)."""
    nbytes = shm.aligned(nbytes)
    return 2 * nbytes if nbytes < CHUNKED_REDUCE_BYTES else nbytes


def collective_bytes(jaxpr: core.Jaxpr) -> int:
    """The largest collective operand in `jaxpr` (nested jaxprs included), in bytes."""
    best = 0
    for eqn in jaxpr.eqns:
        if eqn.primitive in WORKER_IMPLS and eqn.invars:  # (precv exchanges its output)
            best = max(best, sum(_operand_bytes(v.aval) for v in eqn.invars),
                       sum(_operand_bytes(v.aval) for v in eqn.outvars))
        best = max([best, *(nbytes for _, nbytes in _nested_gathers(eqn))])
        for sub in core.jaxprs_in_params(eqn.params):
            best = max(best, collective_bytes(sub))
    return best


_REDUCTIONS = (parallel.psum_p, parallel.psum_many_p, parallel.pmax_p, parallel.pmin_p,
               parallel.psum_scatter_p)


def large_reductions(jaxpr: core.Jaxpr) -> list[tuple[tuple, int]]:
    """(axes, bytes) of every reduction of `jaxpr` that reduce-scatters (one per dtype of a
    psum_many; nested jaxprs once each): what the result arena holds."""
    found = []
    for eqn in jaxpr.eqns:
        if eqn.primitive in _REDUCTIONS:
            by_dtype: dict = {}
            for v in eqn.invars:
                nbytes = _operand_bytes(v.aval)
                by_dtype[v.aval.dtype] = by_dtype.get(v.aval.dtype, 0) + nbytes
            found += [(_names(eqn.params["axis_name"]), nbytes) for nbytes in by_dtype.values()
                      if nbytes >= CHUNKED_REDUCE_BYTES]
        for sub in core.jaxprs_in_params(eqn.params):
            found += large_reductions(sub)
    return found


def arena_bytes(reductions: list[tuple[tuple, int]], axis_names: tuple,
                axis_sizes: tuple) -> int:
    """The result arena that holds `reductions` (large_reductions) on a mesh: each takes
    room for every group over its axes."""
    n = int(np.prod(axis_sizes, dtype=np.int64))
    total = 0
    for names, nbytes in reductions:
        if any(a not in axis_names for a in names):
            continue  # an error when it runs (Comm.group)
        size = int(np.prod([axis_sizes[axis_names.index(a)] for a in names], dtype=np.int64))
        total += n // size * shm.aligned(nbytes)
    return total


def fuse_psums(jaxpr: core.Jaxpr) -> core.Jaxpr:
    """`jaxpr` with its independent psums over the same axes merged into psum_many equations
    (a pmean of a gradient pytree: one exchange instead of one per leaf).

    Each equation gets a level, the number of psums on its longest path from the inputs; the
    equations are emitted level by level (a topological order: a psum's consumers are a level
    above it), and a level's psums become one equation at the end of the level. Every device
    runs the same rewritten program, so their collectives still match."""
    level: dict = {}
    levels: dict[int, list] = {}
    for eqn in jaxpr.eqns:
        d = max([level.get(v, 0) for v in eqn.invars if isinstance(v, core.Var)], default=0)
        levels.setdefault(d, []).append(eqn)
        for v in eqn.outvars:
            level[v] = d + (eqn.primitive is parallel.psum_p)
    eqns: list = []
    for d in sorted(levels):
        groups: dict = {}
        for eqn in levels[d]:
            if eqn.primitive is parallel.psum_p:
                groups.setdefault(eqn.params["axis_name"], []).append(eqn)
            else:
                eqns.append(eqn)
        for axis_name, group in groups.items():
            if len(group) == 1:
                eqns.append(group[0])
            else:
                eqns.append(core.JaxprEqn(parallel.psum_many_p, [e.invars[0] for e in group],
                                          [e.outvars[0] for e in group],
                                          {"axis_name": axis_name}))
    return core.Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, jaxpr.outvars)


def has_collectives(jaxpr: core.Jaxpr) -> bool:
    return any(eqn.primitive in WORKER_IMPLS or _nested_gathers(eqn) or any(
        has_collectives(s) for s in core.jaxprs_in_params(eqn.params)) for eqn in jaxpr.eqns)


# ragged_all_to_all, psend and precv add their worker impls to WORKER_IMPLS
from numbax._src.parallel import collectives_p2p  # noqa: E402, F401
