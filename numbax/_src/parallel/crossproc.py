"""The cross-process step of a collective, run by a parent process over MPI while its workers
wait at a barrier (pool.py's exchange loop polls it).

A collective's group of devices may span processes. Its members in this process first meet in
shared memory as usual; when all are at the barrier, the parent runs one MPI collective over
the group's processes on their slots, then lets them go:
- "allreduce": the members have reduced their operands into the call's result arena (or,
  once that is used up, into the first local member's slot); the parent makes it the whole
  group's reduction in every process, in place: through a shared-memory window when the
  group's processes share one node (node_reduce.py), else MPI_Iallreduce (a reduction MPI
  cannot do for that dtype, or a NaN-sensitive max/min of floats, all-gathers every
  process's partial and reduces them in process order instead). A lone member's operand that
  lies in shared memory is named instead of copied into the arena: the parent reads it there;
- "allgather": every process's members' slots are gathered into every process's scratch, so
  each member then reads the whole group's slots as if they were local.
The requests are non-blocking: the parent keeps watching its workers and its peers (a failed
or dead process raises here, distributed.check). Each group has its own communicator (created
once, in the same order in every process), so concurrent groups never mix their messages."""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from numbax._src.config import config
from numbax._src.dtypes import kind_of
from numbax._src.parallel import distributed, node_reduce, shm, topology

REDUCERS = {"sum": np.add, "max": np.maximum, "min": np.minimum}
CHUNK_BYTES = 4 << 20  # the piece of a large allreduce MPI runs at once (_ChunkedAllreduce)
SPIN_S = 0.002  # how long one poll keeps MPI progressing before the parent looks elsewhere
CREATE_TAG = 7003


def processes_of(key: Sequence[int]) -> tuple[int, ...]:
    """The processes holding a group's devices (global ids), in increasing order."""
    return tuple(sorted({topology.split_device_id(d)[0] for d in key}))


def spans_processes(key: Sequence[int]) -> bool:
    return len(processes_of(key)) > 1


def prepare(api: str, keys: Sequence[tuple]) -> None:
    """Creates the communicators of the groups `keys` (tuples of device ids) that span
    processes and hold a device of this one. Every process creates them in the same (sorted)
    order; before each creation the group's processes say they are ready, so a dead or absent
    one is an error here rather than a hang inside MPI."""
    state = distributed.state
    me = topology.process_index()
    for key in sorted(set(keys)):
        procs = processes_of(key)
        if key in state.comms or len(procs) < 2 or me not in procs:
            continue
        distributed.check(api)
        others = [q for q in procs if q != me]
        for q in others:
            state.world.isend(key, dest=q, tag=distributed.SETUP_TAG)
        deadline = _deadline()
        while any((q, key) not in state.ready for q in others):
            distributed.check(api, others)
            distributed._receive_notices()
            if deadline is not None and time.monotonic() > deadline:
                _timeout(api, [q for q in others if (q, key) not in state.ready])
            time.sleep(0.0005)
        state.ready.difference_update((q, key) for q in others)
        group = state.world.Get_group().Incl(list(procs))
        state.comms[key] = state.world.Create_group(group, CREATE_TAG)
        group.Free()
        state.nodes[key] = node_reduce.setup(state.comms[key], procs)


def _deadline() -> float | None:
    timeout = float(config.worker_timeout)
    return time.monotonic() + timeout if timeout > 0 else None


def _timeout(api: str, processes: Sequence[int]) -> None:
    names = ", ".join(f"process {q}" for q in processes)
    distributed.fail(f"{names} did not answer within {float(config.worker_timeout):g} s")
    raise TimeoutError(
        f"{api}: {names} did not answer within {float(config.worker_timeout):g} s (stopped, "
        "stuck in a long computation, or running a different program). The job cannot "
        "recover; restart it, raising numbax.config.worker_timeout (NUMBAX_WORKER_TIMEOUT) "
        "for longer steps.")


def _native(dtype: np.dtype, op: str) -> bool:
    """Whether MPI reduces this dtype with this op as numpy does (floats' max/min differ on
    NaN, so they are gathered)."""
    if kind_of(dtype) in "iu":
        return True
    if op == "sum":
        return kind_of(dtype) == "f" and dtype.itemsize in (4, 8) or \
            kind_of(dtype) == "c" and dtype.itemsize in (8, 16)
    return False


class Links:
    """One SPMD call's cross-process steps: the parent's view of the scratch slots (rank by
    rank), the device of each rank, and the steps in flight, by barrier group."""

    def __init__(self, scratch: np.ndarray, devices: Sequence[int],
                 arena: np.ndarray | None = None) -> None:
        self.scratch = scratch  # uint8[n_ranks, slot_bytes]
        self.arena = arena  # uint8[arena_bytes]: the call's result arena (collectives.py)
        self.rank_of = {d: r for r, d in enumerate(devices)}
        self.pending: dict[tuple, tuple[Any, Callable | None, tuple]] = {}

    def start(self, group: tuple, action: tuple) -> None:
        """Starts the MPI step of `action` for the local barrier group `group`."""
        kind, key = action[0], action[1]
        comm = distributed.state.comms[key]
        MPI = distributed.state.MPI  # noqa: N806
        if kind == "allreduce":
            _, _, (area, at), nbytes, dtype, op, *source = action
            # the local members' reduction: in the result arena, or in a rank's slot
            raw = self.arena[at:at + nbytes] if area == "arena" else self.scratch[at, :nbytes]
            buf = raw.view(np.dtype(dtype))
            # or a lone member's operand where it lies in shared memory, for `buf` to receive
            src = _located(source[0], buf) if source and source[0] is not None else None
            node = distributed.state.nodes.get(key)
            if node is not None:
                request, finish = node_reduce.Allreduce(node, buf, op, src), None
            else:
                if src is not None:
                    np.copyto(buf, src)
                if _native(buf.dtype, op):
                    mpi_op = {"sum": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN}[op]
                    request, finish = _ChunkedAllreduce(comm, MPI, buf, mpi_op), None
                else:
                    request, finish = self._gathered_reduce(comm, buf, op)
        else:
            request, finish = self._allgather(comm, key, action[2])
        self.pending[group] = (request, finish, processes_of(key))

    def _gathered_reduce(self, comm, buf: np.ndarray, op: str):
        parts = np.empty((comm.Get_size(), buf.nbytes), np.uint8)
        request = comm.Iallgather(buf.view(np.uint8), parts)

        def finish() -> None:
            values = parts.view(buf.dtype)
            total = values[0].copy()
            for row in values[1:]:
                REDUCERS[op](total, row, out=total)
            buf[...] = total

        return request, finish

    def _allgather(self, comm, key: tuple, nbytes: int):
        """Every process's members' slots into every process's scratch."""
        procs = processes_of(key)
        by_process = [[self.rank_of[d] for d in key if topology.split_device_id(d)[0] == q]
                      for q in procs]
        me = procs.index(topology.process_index())
        send = np.concatenate([self.scratch[r, :nbytes] for r in by_process[me]])
        counts = [len(ranks) * nbytes for ranks in by_process]
        displs = list(np.cumsum([0, *counts[:-1]]))
        recv = np.empty(sum(counts), np.uint8)
        request = comm.Iallgatherv(send, [recv, counts, displs, distributed.state.MPI.BYTE])

        def finish() -> None:
            for q, ranks in enumerate(by_process):
                if q == me:
                    continue
                for i, r in enumerate(ranks):
                    start = displs[q] + i * nbytes
                    self.scratch[r, :nbytes] = recv[start:start + nbytes]

        return request, finish

    def poll(self) -> list[tuple]:
        """The barrier groups whose MPI step completed (their members may go on). Tests the
        requests again and again for up to SPIN_S while none completes: MPI moves a large
        message one fragment per call, so a test every loop of the exchange (which also
        reads pipes, checks processes and yields) made a 64 MB psum take ~0.5 s."""
        done = []
        deadline = time.perf_counter() + SPIN_S
        while self.pending:
            for group, (request, finish, _) in list(self.pending.items()):
                if request.Test():
                    if finish is not None:
                        finish()
                    del self.pending[group]
                    done.append(group)
            if done or time.perf_counter() > deadline:
                break
        return done

    def waiting_for(self) -> list[int]:
        """The other processes the steps in flight wait for."""
        me = topology.process_index()
        return sorted({q for *_, procs in self.pending.values() for q in procs if q != me})


def _located(where: tuple[str, int], like: np.ndarray) -> np.ndarray:
    """The operand a worker found at (segment, byte offset) of this process's heap, shaped
    as `like`: it lies in an input or an earlier result, which the call keeps alive."""
    mapping = shm.heap().segments[where[0]].mapped()
    return shm.view(mapping, where[1], like.shape, like.dtype)


def _fixed_width(MPI, dtype: np.dtype):  # noqa: N803
    """The fixed-width MPI type of an integer dtype (None: MPI's own from the buffer). Open
    MPI 4.1's MAX and MIN of MPI_UNSIGNED_LONG, which a uint64 buffer maps to, compare as
    signed (2**63 + 5 "<" 7); its MPI_UINT64_T compares as unsigned."""
    if kind_of(dtype) not in "iu":
        return None
    return getattr(MPI, f"{'U' if kind_of(dtype) == 'u' else ''}INT{dtype.itemsize * 8}_T")


class _ChunkedAllreduce:
    """An in-place MPI_Iallreduce of a large buffer as successive CHUNK_BYTES pieces, each
    started when the one before completes; Test() as a request's. Open MPI allocates the
    temporary buffers of each allreduce anew: for one 64 MB piece that is fresh memory whose
    page faults cost more than the transfer (2 processes of the 2-core VM, the MPI step of a
    64 MB psum: one piece 26 ms, 1 MB pieces 11.7, 4 MB 9.8, 8-16 MB 10.5; from a separate
    send buffer, the operand where it lies, 14 ms: MPI copies it in first). Every process
    cuts the same buffer size the same way."""

    def __init__(self, comm, MPI, buf: np.ndarray, op) -> None:  # noqa: N803
        kind = _fixed_width(MPI, buf.dtype)
        self._start = lambda piece: comm.Iallreduce(
            MPI.IN_PLACE, piece if kind is None else [piece, kind], op=op)
        self._buf = buf.reshape(-1)
        self._step = max(1, CHUNK_BYTES // max(1, buf.itemsize))
        self._lo = 0
        self._request = self._next()

    def _next(self):
        piece = self._buf[self._lo:self._lo + self._step]
        self._lo += self._step
        return self._start(piece)

    def Test(self) -> bool:  # noqa: N802 - an MPI request's name
        while self._request.Test():
            if self._lo >= self._buf.size:
                return True
            self._request = self._next()
        return False


def gather_bytes(api: str, payload: bytes) -> list[bytes]:
    """Every process's `payload`, in process order (the parents alone: multihost_utils and
    sync points), polled like the collectives' steps, so a failed process raises here."""
    state = distributed.state
    if state.world is None or topology.process_count() == 1:
        return [payload]
    distributed.check(api)
    MPI = state.MPI  # noqa: N806
    n = state.world.Get_size()
    sizes = np.zeros(n, np.int64)
    _wait(api, state.world.Iallgather(np.array([len(payload)], np.int64), sizes))
    counts = [int(c) for c in sizes]
    displs = [int(d) for d in np.cumsum([0, *counts[:-1]])]
    recv = np.empty(max(1, sum(counts)), np.uint8)
    send = np.frombuffer(payload, np.uint8) if payload else np.empty(0, np.uint8)
    _wait(api, state.world.Iallgatherv(send, [recv, counts, displs, MPI.BYTE]))
    return [recv[d:d + c].tobytes() for d, c in zip(displs, counts, strict=True)]


def _wait(api: str, request) -> None:
    others = [q for q in range(topology.process_count()) if q != topology.process_index()]
    deadline = _deadline()
    while not _spin(request):
        distributed.check(api, others)
        if deadline is not None and time.monotonic() > deadline:
            _timeout(api, others)


def _spin(request) -> bool:
    """Tests `request` for up to SPIN_S (MPI progresses only inside its calls); whether it
    completed."""
    deadline = time.perf_counter() + SPIN_S
    while not request.Test():
        if time.perf_counter() > deadline:
            return False
    return True
