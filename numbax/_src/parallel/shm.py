"""Shared memory for the virtual devices: the parent's heap of POSIX segments (sharded arrays,
pmap's arguments and results, collective scratch) and the workers' mappings of them.

Segments are checked against the room /dev/shm has and reserved page by page when created, so
a full /dev/shm is a MemoryError naming the sizes, never a SIGBUS on first touch. Each block the
parent hands out as an array has an owner object of its own (a ctypes array over the segment's
one lasting mapping), so numpy views of it (however deep) keep the block alive, and the block
returns to the heap only when the last view is gone. Workers map segments by name without
registering them with a resource tracker; the parent alone unlinks (and its resource tracker
does, should the parent be killed)."""
from __future__ import annotations

import atexit
import bisect
import collections
import ctypes
import errno
import math
import mmap
import os
import secrets
import threading
import weakref
from collections.abc import Sequence

import numpy as np

PAGE = mmap.ALLOCATIONGRANULARITY
SHM_DIR = "/dev/shm"


def aligned(nbytes: int, to: int = 64) -> int:
    return (int(nbytes) + to - 1) // to * to


def layout(sizes: Sequence[int]) -> tuple[list[int], int]:
    """Offsets of consecutive 64-byte aligned buffers of the given byte sizes, and the total."""
    offsets, total = [], 0
    for size in sizes:
        offsets.append(total)
        total += aligned(max(int(size), 1))
    return offsets, total


def view(buf, offset: int, shape: tuple, dtype) -> np.ndarray:
    """A numpy view of `buf` (a Mapping or any buffer) at `offset`."""
    dtype = np.dtype(dtype)
    count = math.prod(shape)
    raw = buf.buf if isinstance(buf, Mapping) else buf
    return np.frombuffer(raw, dtype=dtype, count=count, offset=offset).reshape(shape)


# ----------------------------------------------------------------------------- room checks


def _mib(nbytes: int) -> str:
    """A size in the largest binary unit that keeps it >= 1 (MiB at least)."""
    for unit, power in (("TiB", 40), ("GiB", 30)):
        if nbytes >= 2**power:
            return f"{nbytes / 2**power:.1f} {unit}"
    return f"{nbytes / 2**20:.1f} MiB"


def shm_room() -> tuple[int, int] | None:
    """(free, total) bytes of /dev/shm, or None where it cannot be measured."""
    try:
        st = os.statvfs(SHM_DIR)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize, st.f_blocks * st.f_frsize


def too_large(api: str, nbytes: int, what: str, held: int = 0) -> MemoryError:
    room = shm_room()
    where = (f"{SHM_DIR} has {_mib(room[0])} free (of {_mib(room[1])})" if room else
             "the system refused to reserve it")
    if held:
        where += f" and numbax holds {_mib(held)} of it unused"
    return MemoryError(
        f"{api}: {what} need {_mib(nbytes)} ({nbytes} bytes) of shared memory, but {where}. "
        "Pass less data per call (split the batch, or shard fewer arrays at once), or give "
        f"{SHM_DIR} more room (docker run --shm-size=4g, or mount -o remount,size=4G "
        f"{SHM_DIR}).")


def check_room(api: str, nbytes: int, what: str, held: int = 0) -> None:
    """Raises MemoryError before anything is allocated when `nbytes` cannot fit in what
    /dev/shm has free plus the `held` bytes numbax already reserved and can reuse."""
    room = shm_room()
    if room is not None and nbytes > room[0] + held:
        raise too_large(api, nbytes, what, held)


# ----------------------------------------------------------------------------- segments


def _shm_open(name: str, flags: int) -> int:
    import _posixshmem  # POSIX only, as multiprocessing.shared_memory

    return _posixshmem.shm_open("/" + name, flags, mode=0o600)


def _unlink(name: str) -> None:
    import _posixshmem
    from multiprocessing import resource_tracker

    try:
        _posixshmem.shm_unlink("/" + name)
    except FileNotFoundError:
        pass
    resource_tracker.unregister("/" + name, "shared_memory")


class Segment:
    """One POSIX shared-memory object the parent created; `fd` stays open for block mmaps."""

    def __init__(self, api: str, size: int, what: str) -> None:
        from multiprocessing import resource_tracker

        check_room(api, size, what)
        self.mapping: mmap.mmap | None = None  # the parent's own view (Heap.mapped), kept
        self.name = f"psm_numbax_{os.getpid()}_{secrets.token_hex(6)}"
        self.size = size
        self.fd = _shm_open(self.name, os.O_CREAT | os.O_EXCL | os.O_RDWR)
        resource_tracker.register("/" + self.name, "shared_memory")  # unlinked if we die
        try:
            os.ftruncate(self.fd, size)
            if hasattr(os, "posix_fallocate"):
                os.posix_fallocate(self.fd, 0, size)
        except OSError as err:
            self.close()
            if err.errno in (errno.ENOSPC, errno.EFBIG, errno.ENOMEM):
                raise too_large(api, size, what) from None
            raise
        self.free = [(0, size)]  # (offset, size), sorted by offset
        self.live = 0

    def mapped(self) -> mmap.mmap:
        if self.mapping is None:
            self.mapping = mmap.mmap(self.fd, self.size)
        return self.mapping

    def take(self, nbytes: int) -> int | None:
        for k, (off, size) in enumerate(self.free):
            if size >= nbytes:
                if size == nbytes:
                    del self.free[k]
                else:
                    self.free[k] = (off + nbytes, size - nbytes)
                self.live += 1
                return off
        return None

    def give(self, offset: int, nbytes: int) -> None:
        self.live -= 1
        merged: list[tuple[int, int]] = []
        for off, size in sorted([*self.free, (offset, nbytes)]):
            if merged and merged[-1][0] + merged[-1][1] == off:
                merged[-1] = (merged[-1][0], merged[-1][1] + size)
            else:
                merged.append((off, size))
        self.free = merged

    def close(self) -> None:
        if self.mapping is not None:
            try:
                self.mapping.close()
            except BufferError:  # a view is still alive: the mapping goes with it
                pass
            self.mapping = None
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
            _unlink(self.name)


class Block:
    """`nbytes` at `offset` of a heap segment (offsets are 64-byte aligned: a cache line)."""

    __slots__ = ("segment", "offset", "nbytes")

    def __init__(self, segment: str, offset: int, nbytes: int) -> None:
        self.segment = segment
        self.offset = offset
        self.nbytes = nbytes


class Heap:
    """The parent's shared memory: blocks of whole pages (under a page: of whole cache lines,
    so a loop that keeps its scalar results takes 64 bytes of /dev/shm for each, not 4 KiB)
    carved first-fit out of segments of at
    least SEGMENT_BYTES, each new one at least half the bytes in use (so a call that needs
    many blocks gets few segments). Empty segments are kept while all segments total at most
    KEEP_BYTES or the most segment bytes that held live blocks at once over the last RECENT
    blocks handed out, so a loop of calls reuses them (creating, reserving and first touching
    a segment costs milliseconds per 10 MB: a loop of 64 MB psums got a new 128 MB scratch
    segment every call and ran at 0.1 GB/s; a 16-device shard_map step, ~20 blocks a call,
    re-created its 30 MB result arena every call while the rule counted the sizes of the last
    8 blocks); beyond that an empty segment is unlinked and its name queued in `unlinked` for
    the workers to unmap."""

    SEGMENT_BYTES = 8 << 20
    KEEP_BYTES = 64 << 20
    RECENT = 64

    def __init__(self) -> None:
        self.segments: dict[str, Segment] = {}
        self.unlinked: list[str] = []
        self._lock = threading.Lock()
        self._pending: list[Block] = []  # freed by finalizers, returned under the lock
        self._homes: dict[int, Block] = {}  # address of each block handed out as an array
        # those addresses sorted, for `home`'s search; entries of blocks freed since may stay
        # (the finalizers that free them must not take the lock) until the list is compacted
        self._addresses: list[int] = []
        # per block handed out: the bytes of the segments holding live blocks just after
        self._recent: collections.deque = collections.deque(maxlen=self.RECENT)

    def alloc(self, api: str, nbytes: int, what: str) -> Block:
        nbytes = max(int(nbytes), 1)
        nbytes = aligned(nbytes, PAGE if nbytes >= PAGE else 64)
        with self._lock:
            self._drain()
            block = None
            for name, seg in self.segments.items():
                off = seg.take(nbytes)
                if off is not None:
                    block = Block(name, off, nbytes)
                    break
            if block is None:
                used = sum(seg.size - sum(size for _, size in seg.free)
                           for seg in self.segments.values())
                seg = Segment(api, max(nbytes, self.SEGMENT_BYTES, aligned(used // 2, PAGE)),
                              what)
                self.segments[seg.name] = seg
                block = Block(seg.name, seg.take(nbytes), nbytes)
            self._recent.append(sum(seg.size for seg in self.segments.values() if seg.live))
            return block

    def release(self, block: Block) -> None:
        """Returns a block that was never handed out as an array."""
        with self._lock:
            self._pending.append(block)
            self._drain()

    def free_bytes(self) -> int:
        with self._lock:
            self._drain()
            return sum(size for seg in self.segments.values() for _, size in seg.free)

    def array(self, block: Block, shape: tuple, dtype) -> np.ndarray:
        """A writeable numpy array over `block`, through its segment's lasting mapping. Its
        base is an owner object of the block's bytes alone (a ctypes array over the mapping),
        the base of every view taken of the array, so the block returns to the heap when the
        last such view is gone. (A fresh mmap per block cost ~20 us a result and a page fault
        per page touched.)"""
        seg = self.segments[block.segment]
        owner = (ctypes.c_char * block.nbytes).from_buffer(seg.mapped(), block.offset)
        out = view(owner, 0, shape, dtype)
        address = ctypes.addressof(owner)  # (the view's first byte)
        with self._lock:
            self._homes[address] = block
            bisect.insort(self._addresses, address)
        weakref.finalize(owner, self._freed, address, block)
        return out

    def mapped(self, block: Block, shape: tuple, dtype) -> np.ndarray:
        """A writeable numpy array over `block` through its segment's one lasting mapping
        (no mmap per call: the parent's first touch of a fresh 64 MB mapping cost ~30 ms of
        page faults in every cross-process psum). The caller releases the block, after its
        last use of the array."""
        seg = self.segments[block.segment]
        return view(seg.mapped(), block.offset, shape, dtype)

    def _freed(self, address: int, block: Block) -> None:
        self._homes.pop(address, None)
        self._pending.append(block)

    def home(self, value: np.ndarray) -> Block | None:
        """Where `value` lives in the heap (a C-contiguous array inside a block handed out by
        `array`), as a Block of its own bytes; None when it lives elsewhere."""
        if not value.flags.c_contiguous or value.nbytes == 0:
            return None
        start = value.__array_interface__["data"][0]
        with self._lock:
            addresses = self._addresses
            if len(addresses) > 2 * len(self._homes) + 64:  # mostly freed blocks' entries
                addresses[:] = sorted(self._homes)
            # the live block starting last at or before `start` (live blocks are disjoint)
            k = bisect.bisect_right(addresses, start) - 1
            while k >= 0:
                block = self._homes.get(addresses[k])
                if block is not None:
                    address = addresses[k]
                    if start + value.nbytes <= address + block.nbytes:
                        return Block(block.segment, block.offset + start - address,
                                     value.nbytes)
                    return None
                k -= 1
        return None

    def _drain(self) -> None:
        while self._pending:
            block = self._pending.pop()
            seg = self.segments.get(block.segment)
            if seg is None:
                continue
            seg.give(block.offset, block.nbytes)
            if seg.live == 0 and len(self.segments) > 1 and self._surplus():
                del self.segments[block.segment]
                seg.close()
                self.unlinked.append(seg.name)

    def _surplus(self) -> bool:
        """Whether the segments exceed what is worth keeping for reuse."""
        total = sum(seg.size for seg in self.segments.values())
        return total > max(self.KEEP_BYTES, max(self._recent, default=0))

    def trim(self) -> None:
        """Unlinks every empty segment now, whatever the keeping rule says."""
        with self._lock:
            self._drain()
            for name, seg in list(self.segments.items()):
                if seg.live == 0:
                    del self.segments[name]
                    seg.close()
                    self.unlinked.append(name)
            self._recent.clear()

    def close(self) -> None:
        with self._lock:
            for seg in self.segments.values():
                seg.close()
            self.segments.clear()


_HEAP: Heap | None = None
_HEAP_LOCK = threading.Lock()


def heap() -> Heap:
    """The process's shared-memory heap (created on first use, unlinked at exit)."""
    global _HEAP
    with _HEAP_LOCK:
        if _HEAP is None:
            _HEAP = Heap()
            atexit.register(_HEAP.close)
        return _HEAP


def close_heap() -> None:
    """Unlinks the heap's segments now (a process leaving without running atexit)."""
    if _HEAP is not None:
        _HEAP.close()


def alloc_array(api: str, shape: tuple, dtype, what: str) -> tuple[Block, np.ndarray]:
    """A block of the heap holding an array of `shape` and `dtype`, and the parent's view."""
    dtype = np.dtype(dtype)
    shape = tuple(shape)
    the_heap = heap()
    block = the_heap.alloc(api, math.prod(shape) * dtype.itemsize, what)  # (np.prod: ~8 us)
    return block, the_heap.array(block, shape, dtype)


# ----------------------------------------------------------------------------- workers


class Mapping:
    """A worker's read-write mapping of one of the parent's segments, opened by name."""

    def __init__(self, name: str) -> None:
        fd = _shm_open(name, os.O_RDWR)
        try:
            self._mmap = mmap.mmap(fd, os.fstat(fd).st_size)
        finally:
            os.close(fd)
        self.buf = memoryview(self._mmap)
        self.size = len(self._mmap)
        self.address = np.frombuffer(self.buf, np.uint8, count=1).ctypes.data  # (view dropped)

    def close(self) -> None:
        self.buf.release()  # raises BufferError while a numpy view is alive
        self._mmap.close()


class Attachments:
    """A worker's mappings of the parent's segments, by name."""

    def __init__(self) -> None:
        self.maps: dict[str, Mapping] = {}
        self._stale: list[Mapping] = []

    def get(self, name: str) -> Mapping:
        found = self.maps.get(name)
        if found is None:
            found = self.maps[name] = Mapping(name)
        return found

    def locate(self, value: np.ndarray) -> tuple[str, int] | None:
        """Where the C-contiguous `value` lies in these mappings: (segment, byte offset), or
        None when it lies elsewhere."""
        if not value.flags.c_contiguous or value.nbytes == 0:
            return None
        start = value.__array_interface__["data"][0]
        for name, found in self.maps.items():
            if found.address <= start and start + value.nbytes <= found.address + found.size:
                return name, start - found.address
        return None

    def forget(self, names: Sequence[str]) -> None:
        """Unmaps segments the parent unlinked (each once no view of it is alive)."""
        for name in names:
            found = self.maps.pop(name, None)
            if found is not None:
                self._stale.append(found)
        keep = []
        for m in self._stale:
            try:
                m.close()
            except BufferError:
                keep.append(m)
        self._stale = keep

    def close(self) -> None:
        self.forget(list(self.maps))
