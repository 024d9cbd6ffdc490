"""The "allreduce" step of crossproc.py for a group whose processes all share one node: through
an MPI-3 shared-memory window instead of MPI_Iallreduce.

Each process of the group owns one part of the group's window (MPI_Win_allocate_shared: MPI
frees it when its processes end, however they end; no named file to leak) and reads the
others'. The buffer is cut in P slices, slice q reduced by process q of P:
- copy in: each process copies the slices of its partial that the others reduce into its part;
- barrier; reduce: each reduces its own slice over every process's partial in process order
  (((x0 op x1) op x2) ...: any dtype and op numpy reduces, NaN propagating as numpy's
  maximum/minimum), its own partial read where it lies, into its buffer and into its part;
- barrier; copy out: each copies the other processes' reduced slices into its buffer.
Every process thus holds the same bits. The partial is the arena's block, or a lone member's
operand read where it lies in shared memory (crossproc.Links.start), the result the arena.
Large buffers go piece by piece through a few slots of the window, pipelined (Allreduce), so
the window stays small and in the cache. The barrier that frees the window after the last
copies out is put off to its next use: the members go on at once. The barriers are
MPI_Ibarrier, polled as MPI's requests are (crossproc.Links.poll): a dead peer (on this node,
so seen through its pid) raises (distributed.check) instead of hanging.

A window is created once per group and size class, replaced by a larger one when a larger
reduction comes (every process of a group runs the same reductions: all grow together), and
freed when the job ends. Where this process may use several cores (its workers wait at the
barrier meanwhile) the copies and the reduction run on several threads (thread_count,
host_threads.run)."""
from __future__ import annotations

import os

import numpy as np

from numbax._src import host_threads
from numbax._src.config import config
from numbax._src.parallel import distributed, topology

REDUCERS = {"sum": np.add, "max": np.maximum, "min": np.minimum}
MIN_WINDOW_BYTES = 2 << 20  # the first size class of a window (per process)
CHUNK_BYTES = 2 << 20  # a piece of the pipeline (Allreduce), per thread
SLOTS = 3  # pieces in flight: one copied in, one reduced, one copied out
MIN_THREAD_BYTES = 256 << 10  # a thread's least share of a copy or reduction


def thread_count(processes: int) -> int:
    """Threads for this process's copies and reductions: the cores it may run on (an MPI
    launcher binding it to one core leaves one), shared with the node's other `processes`.
    (The 2-core VM gives 1; 2 threads there, unbound, took a 64 MB step from 12.6 to 14.5 ms.)"""
    return max(1, min(host_threads.cores(), (os.cpu_count() or 1) // max(1, processes)))


class Node:
    """A group's communicator when all its processes share this node, and its window."""

    def __init__(self, comm, MPI) -> None:  # noqa: N803
        self.comm, self.MPI = comm, MPI
        self.size, self.rank = comm.Get_size(), comm.Get_rank()
        self.win = None
        self.capacity = 0  # bytes of each process's part
        self.parts: list[np.ndarray] = []  # uint8[capacity] of each process, by group rank
        self.release = None  # the barrier after the last reduction's copies out, pending
        here = max(self.size, topology.current().processes_on_host)
        self.threads = thread_count(here)
        # more processes than cores: each barrier waits for the scheduler, so whole-buffer
        # phases (3 barriers) beat the pipeline's one per piece (4 processes on the 2-core
        # VM, a 64 MB psum: 2 MB pieces 61 ms, whole buffer 23). A core shared with another
        # busy process does the same at random, which this cannot foresee (2 processes beside
        # a busy loop: pieces 18-68 ms, whole buffer 18-22; alone 11 and 17).
        self.piece_bytes = CHUNK_BYTES * self.threads if here <= (os.cpu_count() or 1) else None

    def resize(self, nbytes: int) -> None:
        """Replaces the window by one whose parts hold `nbytes` (collective: every process is
        past a barrier of this group, so none waits here for a dead one)."""
        self.free()
        capacity = max(MIN_WINDOW_BYTES, 1 << (int(nbytes) - 1).bit_length())
        self.win = self.MPI.Win.Allocate_shared(capacity, 1, comm=self.comm)
        self.win.Set_errhandler(self.MPI.ERRORS_RETURN)  # an exception, not an abort
        # one passive epoch for the window's life; Sync orders loads and stores around the
        # barriers (MPI's unified memory model of shared windows)
        self.win.Lock_all(self.MPI.MODE_NOCHECK)
        self.parts = []
        for q in range(self.size):
            memory, _ = self.win.Shared_query(q)
            self.parts.append(np.frombuffer(memory, np.uint8, count=capacity))
        self.capacity = capacity

    def free(self) -> None:
        """Frees the window (collective, as MPI_Win_free)."""
        if self.release is not None:
            self.release.Wait()
            self.release = None
        if self.win is not None:
            self.parts = []
            self.win.Unlock_all()
            self.win.Free()
            self.win, self.capacity = None, 0


def setup(comm, procs: tuple[int, ...]) -> Node | None:
    """The Node of a new group communicator, or None when its processes do not all share this
    node or one of them turned the shared-memory path off (config.crossproc_shm): all then take
    MPI's allreduce. Collective over `comm`, right after its creation."""
    state = distributed.state
    hosts = {topology.current().hosts[q] for q in procs}
    if len(hosts) > 1:  # every process knows every host: all skip the split alike
        return None
    MPI = state.MPI  # noqa: N806
    kind = MPI.COMM_TYPE_SHARED if bool(config.crossproc_shm) else MPI.UNDEFINED
    node = comm.Split_type(kind, key=comm.Get_rank())
    whole = node != MPI.COMM_NULL and node.Get_size() == comm.Get_size()
    if node != MPI.COMM_NULL:
        node.Free()
    return Node(comm, MPI) if whole else None


def close() -> None:
    """Frees every group's window (leaving the job: every process is past the leaving barrier,
    and frees them in the same order)."""
    for key in sorted(distributed.state.nodes):
        node = distributed.state.nodes[key]
        if node is not None:
            node.free()


class Allreduce:
    """One reduction across the group's processes through its window, of `source` (default:
    `buf`) into `buf`; Test() as an MPI request's: each call runs the rounds whose barrier
    has completed.

    The buffer goes in pieces, pipelined through SLOTS slots of each process's part: round r
    copies piece r in, reduces piece r - 1 and copies piece r - 2 out, then passes one barrier
    (the slot piece r + 1 takes was last read before it). The slots stay in the cache, so
    memory sees about one copy of the buffer per process (2 processes of the 2-core VM, the
    64 MB step: whole-buffer phases 13.4 ms, 2 MB pieces through a window of the buffer's size
    10.6, through 3 slots 8.6)."""

    def __init__(self, node: Node, buf: np.ndarray, op: str,
                 source: np.ndarray | None = None) -> None:
        self.node, self.ufunc = node, REDUCERS[op]
        self.buf = buf.reshape(-1)
        # this process's partial: `buf` itself, or an operand read where it lies
        self.source = self.buf if source is None else source.reshape(-1)
        step = self.buf.size if node.piece_bytes is None else \
            max(1, node.piece_bytes // self.buf.itemsize)
        self.pieces = [(lo, min(self.buf.size, lo + step))
                       for lo in range(0, max(1, self.buf.size), step)]
        self.stride = _aligned(max(1, min(step, self.buf.size) * self.buf.itemsize))
        self.need = min(SLOTS, len(self.pieces)) * self.stride  # bytes of each part
        self.round = -1  # -1: the window may change first
        self.request = node.release  # the window is free once the last step's copies are out
        node.release = None

    def Test(self) -> bool:  # noqa: N802 - an MPI request's name
        try:
            return self._advance()
        except Exception as err:
            # the others wait at this step's barriers: tell them, so they raise too
            distributed.fail(f"its shared-memory allreduce failed ({type(err).__name__}: "
                             f"{err})")
            raise

    def _advance(self) -> bool:
        node = self.node
        while self.request is None or self.request.Test():
            if self.request is not None and node.win is not None:
                node.win.Sync()
            self.request = None
            if self.round == -1:
                self.round = 0
                if node.capacity < self.need:
                    self.request = node.comm.Ibarrier()  # all here before the window changes
                    continue
            if node.capacity < self.need:
                node.resize(self.need)
            last = self.round == len(self.pieces) + 1
            self._step(self.round)
            self.round += 1
            node.win.Sync()
            barrier = node.comm.Ibarrier()
            if last:  # the members may go on; the window's next use waits for this one
                node.release = barrier
                return True
            self.request = barrier
        return False

    def _slot(self, q: int, piece: int) -> np.ndarray:
        """Process q's slot of piece `piece`, as elements from the piece's first."""
        lo, hi = self.pieces[piece]
        at = piece % SLOTS * self.stride
        return self.node.parts[q][at:at + (hi - lo) * self.buf.itemsize].view(self.buf.dtype)

    def _slices(self, piece: int) -> list[tuple[int, int]]:
        """Each process's slice of piece `piece` (process q reduces the q-th), from the
        piece's first element."""
        lo, hi = self.pieces[piece]
        p = self.node.size
        return [((hi - lo) * q // p, (hi - lo) * (q + 1) // p) for q in range(p)]

    def _step(self, r: int) -> None:
        """Round r: piece r - 2 out, piece r - 1 reduced, piece r in (on several threads)."""
        me, jobs = self.node.rank, []
        if r - 2 >= 0:
            dst = self.buf[self.pieces[r - 2][0]:]
            for q, (lo, hi) in enumerate(self._slices(r - 2)):
                if q != me:
                    slot = self._slot(q, r - 2)
                    jobs.append((lambda a, b, s=slot: np.copyto(dst[a:b], s[a:b]), lo, hi))
        if 0 <= r - 1 < len(self.pieces):
            lo, hi = self._slices(r - 1)[me]
            first = self.pieces[r - 1][0]
            sources = [self.source[first:] if q == me else self._slot(q, r - 1)
                       for q in range(self.node.size)]
            block = self._slot(me, r - 1)  # free at this process's slice: never copied in
            out = self.buf[first:]
            jobs.append((lambda a, b: self._reduce(sources, block, out, a, b), lo, hi))
        if r < len(self.pieces):
            into, src = self._slot(me, r), self.source[self.pieces[r][0]:]
            for q, (lo, hi) in enumerate(self._slices(r)):
                if q != me:  # the others reduce these; this process reads its own in place
                    jobs.append((lambda a, b: np.copyto(into[a:b], src[a:b]), lo, hi))
        nbytes = sum(hi - lo for _, lo, hi in jobs) * self.buf.itemsize
        host_threads.run(host_threads.share_count(self.node.threads, nbytes, MIN_THREAD_BYTES),
                         jobs)

    def _reduce(self, sources: list[np.ndarray], block: np.ndarray, out: np.ndarray, a: int,
                b: int) -> None:
        """Elements a:b over every process's partial in process order, into `block` (this
        process's slot, read by the others next round) and `out` (its buffer)."""
        ufunc, part = self.ufunc, block[a:b]
        ufunc(sources[0][a:b], sources[1][a:b], out=part)
        for src in sources[2:]:
            ufunc(part, src[a:b], out=part)
        out[a:b] = part


def _aligned(nbytes: int) -> int:
    return (int(nbytes) + 63) // 64 * 64
