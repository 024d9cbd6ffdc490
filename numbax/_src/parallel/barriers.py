"""Barriers between the workers of one pool that do not pass through the parent: a board of
process-shared POSIX semaphores in a shared-memory segment of the pool's own (Linux, glibc).

A barrier through the parent cost two process wake-ups in a row (the parent, then each
member) and the parent's Python; here the last member to arrive wakes the others directly.
The board holds one semaphore per (waiter, poster) pair of workers, so every semaphore has a
single poster and its count is that poster's arrivals not yet consumed; a barrier over a
group is a dissemination barrier (ceil(log2 m) rounds: in round k a member posts to the member
2**k places after it and waits for the one 2**k places before it). Every waiter checks the
board's abort flag after each wait, and the parent, on an error, sets the flag and posts
every semaphore (`abort`); after such a call it initialises the board again (`reset`).

Beside the semaphores, integers that keep the parent's guarantees without messages: whom
each worker waits for (`waiting`: the parent names the others when a call times out), how
many barriers each passed (`progress`: a call in a long run of barriers is not silent for
worker_timeout), the last call each finished (`done`), and how many waits each started and
posts it got from each poster. A blocked waiter wakes every SLICE_S: it stops if its parent is
gone (a worker never outlives it), and tells the parent when the member it waits for finished
the call without the post it waits for (the devices ran different collectives). The
semaphores order the slots' data (a post releases, a wait acquires); the integers only
inform the checks, each written by one process."""
from __future__ import annotations

import ctypes
import errno
import os
import sys
import threading
import time

import numpy as np

SEM_STRIDE = 64  # bytes per semaphore (glibc's sem_t has 32 on 64-bit targets)
SLICE_S = 0.25  # a blocked waiter looks at its parent this often
FIRST_SLICE_S = 0.004  # ... and sooner at first (slices double up to SLICE_S)


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def _libc():
    """libc's semaphore functions, or None where process-shared unnamed semaphores are not
    available (then barriers go through the parent, as before)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        lib = ctypes.CDLL(None, use_errno=True)
        functions = (lib.sem_init, lib.sem_post, lib.sem_trywait, lib.sem_timedwait)
    except (OSError, AttributeError):
        return None
    for fn in functions:
        fn.restype = ctypes.c_int
    lib.sem_init.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint]
    lib.sem_post.argtypes = [ctypes.c_void_p]
    lib.sem_trywait.argtypes = [ctypes.c_void_p]
    lib.sem_timedwait.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Timespec)]
    return lib


LIBC = _libc()


def board_bytes(n: int) -> int:
    """The bytes of the board of a pool of n workers."""
    return _sems_at(n) + n * n * SEM_STRIDE


def _ints(n: int) -> int:
    return 2 + 3 * n + 2 * n * n


def _sems_at(n: int) -> int:
    return _ints(n) * 8 // 64 * 64 + 64


class Board:
    """A view of the board of a pool of n workers in `buf` (a writeable buffer at `address`),
    from the parent or from one worker."""

    def __init__(self, buf, address: int, n: int) -> None:
        self.n = n
        ints = np.frombuffer(buf, np.int64, count=_ints(n))
        self.flags = ints[:2]  # [0]: the call was aborted; [1]: the call's number
        self.waiting = ints[2:2 + n]  # worker i blocks until a post of worker waiting[i] - 1
        self.progress = ints[2 + n:2 + 2 * n]  # barriers worker i passed
        self.done = ints[2 + 2 * n:2 + 3 * n]  # the number of the last call worker i finished
        # waits[i * n + j]: waits worker i started on worker j's posts; posts[...]: j's posts
        self.waits = ints[2 + 3 * n:2 + 3 * n + n * n]
        self.posts = ints[2 + 3 * n + n * n:]
        self._sem0 = address + _sems_at(n)
        self._seen = -1  # the parent's last sum of `progress` and `done`
        self._parent = os.getppid()
        self._deadline = _Timespec()
        self.spin_s = 0.0  # how long a waiter polls before it sleeps (a worker sets it)

    def sem(self, waiter: int, poster: int) -> int:
        return self._sem0 + (waiter * self.n + poster) * SEM_STRIDE

    # ------------------------------------------------------------------ the parent

    def reset(self) -> None:
        """Initialises every semaphore to 0 and clears the integers (no worker may be in a
        barrier: before the first call, or after all workers replied to an aborted one)."""
        for k in range(self.n * self.n):
            if LIBC.sem_init(self._sem0 + k * SEM_STRIDE, 1, 0) != 0:
                raise OSError(ctypes.get_errno(), "sem_init failed")
        self.flags[0] = 0  # (the call number goes on)
        self.waiting[:] = 0
        self.progress[:] = 0
        self.done[:] = 0
        self.waits[:] = 0
        self.posts[:] = 0
        self._seen = -1

    def abort(self) -> None:
        """Releases every worker waiting at a barrier, and every one that arrives later, with
        a BrokenBarrierError."""
        self.flags[0] = 1
        for k in range(self.n * self.n):
            LIBC.sem_post(self._sem0 + k * SEM_STRIDE)

    def start(self) -> None:
        """Numbers a new call (before its messages go out)."""
        self.flags[1] += 1

    def blocked(self, workers) -> set[int]:
        """The workers among `workers` blocked at a barrier now."""
        return {i for i in workers if self.waiting[i]}

    def progressed(self) -> bool:
        """Whether a worker passed a barrier or finished since the last time this was
        asked."""
        seen = int(self.progress.sum()) + int(self.done.sum())
        moved, self._seen = seen != self._seen, seen
        return moved

    # ------------------------------------------------------------------ a worker

    def finish(self, me: int) -> None:
        """Notes that worker `me` finished its part of the call."""
        self.done[me] = self.flags[1]

    def _stranded(self, me: int, poster: int) -> bool:
        """Whether `poster` finished this call without the post `me` waits for (the two ran
        different collectives)."""
        return self.done[poster] == self.flags[1] and \
            self.posts[me * self.n + poster] < self.waits[me * self.n + poster]

    def barrier(self, me: int, members: tuple, conn) -> None:
        """Returns once every worker of `members` (sorted worker indices, `me` among them)
        reached this barrier; raises BrokenBarrierError when the call was aborted. A member
        that finds the one it waits for finished without coming tells the parent (over
        `conn`, its socket), which stops the call."""
        m = len(members)
        if m == 1:
            return
        at = members.index(me)
        step = 1
        while step < m:
            if self.flags[0]:
                raise threading.BrokenBarrierError("another device of this call failed")
            to = members[(at + step) % m]
            self.posts[to * self.n + me] += 1
            LIBC.sem_post(self.sem(to, me))
            self._wait(me, members[(at - step) % m], conn)
            step *= 2
        self.progress[me] += 1
        if self.flags[0]:
            raise threading.BrokenBarrierError("another device of this call failed")

    def _wait(self, me: int, poster: int, conn) -> None:
        """Consumes one post of `poster` to `me`, blocking until it comes. Every slice
        (doubling up to SLICE_S) it looks whether the parent is still there and whether
        `poster` finished the call without that post (then it tells the parent, once)."""
        sem = self.sem(me, poster)
        self.waits[me * self.n + poster] += 1
        if LIBC.sem_trywait(sem) == 0:
            return
        if self.spin_s:  # the poster is most often microseconds away: no sleep, no wake-up
            end = time.perf_counter() + self.spin_s
            while time.perf_counter() < end:
                if LIBC.sem_trywait(sem) == 0:
                    return
        self.waiting[me] = poster + 1
        told, slice_s = False, FIRST_SLICE_S
        try:
            while True:
                wake = time.time() + slice_s
                slice_s = min(2 * slice_s, SLICE_S)
                self._deadline.tv_sec = int(wake)
                self._deadline.tv_nsec = int((wake % 1.0) * 1e9)
                if LIBC.sem_timedwait(sem, ctypes.byref(self._deadline)) == 0:
                    return
                err = ctypes.get_errno()
                if err not in (errno.ETIMEDOUT, errno.EINTR, errno.EAGAIN):
                    raise OSError(err, f"sem_timedwait: {os.strerror(err)}")
                if os.getppid() != self._parent:
                    raise threading.BrokenBarrierError("the parent process is gone")
                if not told and self._stranded(me, poster):
                    conn.send(("stranded", poster))  # the parent stops the workers
                    told = True
        finally:
            self.waiting[me] = 0
