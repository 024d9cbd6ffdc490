"""Shared-memory buffers: one growable arena per pool, laid out per call, mapped by workers."""
from __future__ import annotations

from collections.abc import Sequence
from multiprocessing import shared_memory

import numpy as np

ALIGN = 64


def aligned(nbytes: int) -> int:
    return (int(nbytes) + ALIGN - 1) // ALIGN * ALIGN


def layout(sizes: Sequence[int]) -> tuple[list[int], int]:
    """Offsets of consecutive aligned buffers of the given byte sizes, and the total."""
    offsets, total = [], 0
    for size in sizes:
        offsets.append(total)
        total += aligned(max(int(size), 1))
    return offsets, total


def view(shm: shared_memory.SharedMemory, offset: int, shape: tuple, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    return np.frombuffer(shm.buf, dtype=dtype, count=count, offset=offset).reshape(shape)


class Arena:
    """The parent's segment: grown (recreated) when a call needs more; unlinked on close."""

    def __init__(self) -> None:
        self.shm: shared_memory.SharedMemory | None = None

    def ensure(self, nbytes: int) -> shared_memory.SharedMemory:
        if self.shm is None or self.shm.size < nbytes:
            self.close()
            self.shm = shared_memory.SharedMemory(create=True, size=max(aligned(nbytes), 1 << 16))
        return self.shm

    def close(self) -> None:
        shm, self.shm = self.shm, None
        if shm is not None:
            shm.close()
            shm.unlink()


class Attachments:
    """A worker's mapping of the parent's arena, by name; the parent alone unlinks segments."""

    def __init__(self) -> None:
        self.shm: shared_memory.SharedMemory | None = None
        self._stale: list[shared_memory.SharedMemory] = []

    def get(self, name: str) -> shared_memory.SharedMemory:
        if self.shm is None or self.shm.name != name.lstrip("/"):
            if self.shm is not None:
                self._stale.append(self.shm)
            # Spawned workers share the parent's resource tracker, so attaching registers the
            # name a second time (a set: no change); the parent's unlink unregisters it.
            self.shm = shared_memory.SharedMemory(name=name)
        self._close_stale()
        return self.shm

    def _close_stale(self) -> None:
        keep = []
        for shm in self._stale:
            try:
                shm.close()
            except BufferError:  # a view is still alive; try again next time
                keep.append(shm)
        self._stale = keep

    def close(self) -> None:
        if self.shm is not None:
            self._stale.append(self.shm)
            self.shm = None
        self._close_stale()
