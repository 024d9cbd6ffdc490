"""The worker processes behind the virtual CPU devices: one per device, started lazily and
reused, each with its share of the cores (NUMBA_NUM_THREADS set before numba loads).

Workers are launched as `python -m numbax._src.parallel.worker_main` with a socket to the
parent, so they never import the user's __main__ (a script runs its top level once, with or
without an `if __name__ == "__main__"` guard). The parent is the only place that waits for the
workers' replies. Their barriers run on the pool's board (barriers.py: process-shared
semaphores, no message to the parent); where there is none, and for a collective's step across
processes, a worker entering a barrier says so and the parent answers "go" once every member of
its group is there. So one loop sees every worker: a worker that dies is an error at once, one
that raises breaks the barriers of the others (the board's abort), members of a group that
disagree on their collectives are an error (a member at a barrier of the board tells when the
one it waits for finished without coming), and a worker that stops responding (SIGSTOP, a
deadlock in user code) is an error after `worker_timeout` seconds without a reply or a barrier
passed. After any of these the pool is stopped and reaped (its board unlinked) before the
error is raised, so the next call starts on fresh workers."""
from __future__ import annotations

import atexit
import contextlib
import ctypes
import multiprocessing.connection as mpc
import os
import select
import socket
import subprocess
import sys
import threading
import time
from typing import Any

from numbax._src.config import config
from numbax._src.parallel import (
    WORKER_DIES_WITH_PARENT,
    barriers,
    cluster,
    distributed,
    send_plain,
    shm,
    topology,
)

POLL_S = 0.5
# How long a "stranded" report waits for the finished worker's own reply: a worker that raised
# marks itself finished before its error reaches the parent, and on a busy machine a waiting
# worker reported it first (CI blamed "different collectives" for a device's ValueError).
STRANDED_GRACE_S = 2.0


class WorkerError(Exception):
    """A worker raised: carries the device id, the exception and its remote traceback."""


WORKER_MALLOC_KEEP = 256 << 20  # bytes (glibc: allocations below it come from the heap)


class _Worker:
    """One worker process and the parent's end of its socket."""

    def __init__(self, index: int, threads: int, siblings: int, board: tuple | None) -> None:
        parent_end, child_end = socket.socketpair()
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__)))))
        launcher = cluster.launcher_variables()
        env = {k: v for k, v in os.environ.items() if not k.startswith(launcher)}
        env["NUMBA_NUM_THREADS"] = str(threads)
        # the threads the other workers of this job run, which its thread rule must not
        # take for other processes' load (compiler/cpu/runtime/threads.py)
        env["NUMBAX_SIBLING_THREADS"] = str(siblings * threads)
        # glibc keeps a worker's freed arrays for reuse instead of unmapping them: a program
        # run per call allocates the same buffers each time, and fresh pages cost a fault
        # each (a 2.7 MB psum result took ~1 ms to copy into newly mapped memory)
        env.setdefault("MALLOC_MMAP_THRESHOLD_", str(WORKER_MALLOC_KEEP))
        env.setdefault("MALLOC_TRIM_THRESHOLD_", str(WORKER_MALLOC_KEEP))
        env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
        # Linux kills the worker when the thread starting it ends: only the main one lasts
        # as long as this process (worker_main._die_with_parent)
        env[WORKER_DIES_WITH_PARENT] = \
            "1" if threading.current_thread() is threading.main_thread() else "0"
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "numbax._src.parallel.worker_main",
                 str(child_end.fileno())],
                pass_fds=(child_end.fileno(),), env=env, stdin=subprocess.DEVNULL,
                start_new_session=True)  # Ctrl-C in a terminal reaches the parent only
        finally:
            child_end.close()
        self.index = index
        self.conn = mpc.Connection(parent_end.detach())
        self.conn.send({"index": index, "sys_path": list(sys.path), "board": board,
                        "host_workers": siblings + 1})
        self.forgotten = 0  # how much of the heap's `unlinked` list this worker was told

    def send(self, msg: Any) -> None:
        with contextlib.suppress(OSError):  # a dead worker: the reply loop reports it
            send_plain(self.conn, msg)

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.kill()


class Pool:
    """Up to N worker processes (each started the first time a call uses its device), their
    sockets, and what each has prepared."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.prepared: list[set] = [set() for _ in range(n)]
        self.lock = threading.RLock()
        self.closed = False
        sharing = topology.current().processes_on_host if topology.current() else 1
        self._threads = max(1, (os.cpu_count() or 1) // (n * sharing))
        self._siblings = n * sharing - 1  # the job's other workers on this host
        self._workers: list[_Worker | None] = [None] * n
        self._board_segment, self.board = _make_board(n)

    @property
    def workers(self) -> list[_Worker]:
        """The workers started so far."""
        return [w for w in self._workers if w is not None]

    def worker(self, i: int) -> _Worker:
        """Worker i, started now if it was not yet."""
        if self._workers[i] is None:
            board = self._board_segment and (self._board_segment.name, self.n)
            self._workers[i] = _Worker(i, self._threads, self._siblings, board)
        return self._workers[i]

    # ------------------------------------------------------------------ messaging

    def request(self, messages: dict[int, tuple], api: str = "pmap",
                links: Any = None) -> dict[int, Any]:
        """Sends one message to each named worker and waits for all replies, running their
        barriers (and, through `links` (crossproc.Links), the cross-process steps of
        collectives whose groups span processes). Raises WorkerError for the first worker that
        raised (once all replied), RuntimeError when a worker dies or the group's collectives
        disagree, TimeoutError when no worker makes progress for config.worker_timeout
        seconds, JaxRuntimeError when another process failed. Ctrl-C while waiting stops the
        workers (their half-done replies would be stale)."""
        try:
            for i in messages:
                self.worker(i)
            return _Exchange(self, messages, api, links).run()
        except KeyboardInterrupt:
            self.shutdown(graceful=False)
            raise

    def ensure_prepared(self, workers: list[int], key: Any, payload: bytes,
                        api: str = "pmap") -> None:
        """Sends a program to the workers that lack it: the first one alone first, so it fills
        the compile cache that the others then load from. All of them start now, so the
        others import numbax (1-2 s a process) while the first compiles."""
        missing = [i for i in workers if key not in self.prepared[i]]
        for i in missing:
            self.worker(i)
        for group in (missing[:1], missing[1:]):
            if group:
                self.request({i: ("prepare", key, payload) for i in group}, api)
                for i in group:
                    self.prepared[i].add(key)

    def forget_message(self, i: int, unlinked: list[str]) -> list[str]:
        """The segment names worker i has not yet been told were unlinked."""
        worker = self.worker(i)
        names = unlinked[worker.forgotten:]
        worker.forgotten = len(unlinked)
        return names

    # ------------------------------------------------------------------ shutdown

    def shutdown(self, graceful: bool = True) -> None:
        """Stops every worker and reaps it before returning (no process of this pool outlives
        the call, so a new pool never races an old worker's exit)."""
        if self.closed:
            return
        self.closed = True
        if graceful:
            for w in self.workers:
                w.send(("stop",))
            deadline = time.monotonic() + 2.0
            for w in self.workers:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    w.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        for w in self.workers:
            if w.proc.poll() is None:
                w.kill()
        for w in self.workers:
            w.proc.wait()
            w.conn.close()
        if self._board_segment is not None:
            self.board = None
            self._board_segment.close()

    def board_names(self) -> set[str]:
        """The shared-memory segment of this pool's barrier board, if it has one."""
        return {self._board_segment.name} if self._board_segment is not None else set()


def _make_board(n: int) -> tuple[shm.Segment | None, barriers.Board | None]:
    """A pool's barrier board (barriers.py) in a segment of its own, or (None, None) where
    the platform lacks process-shared semaphores (barriers then go through the parent)."""
    if barriers.LIBC is None:
        return None, None
    segment = shm.Segment("pmap", shm.aligned(barriers.board_bytes(n), shm.PAGE),
                          "the workers' barriers")
    mapping = segment.mapped()
    address = ctypes.addressof(ctypes.c_char.from_buffer(mapping))
    board = barriers.Board(mapping, address, n)
    try:
        board.reset()
    except OSError:
        segment.close()
        return None, None
    return segment, board


class _Exchange:
    """One request: its pending replies, the barriers its workers wait at, and its clock."""

    def __init__(self, pool: Pool, messages: dict[int, tuple], api: str, links: Any) -> None:
        self.pool = pool
        self.messages = messages
        self.api = api
        self.links = links
        self.pending = set(messages)
        self.replies: dict[int, Any] = {}
        self.waiting: dict[tuple, set[int]] = {}  # barrier group -> members waiting there
        self.aborted = False
        timeout = float(config.worker_timeout)
        self.timeout = timeout if timeout > 0 else None

    def run(self) -> dict[int, Any]:
        workers = self.pool._workers
        # one poll set for the whole request (mpc.wait built a selector on every wake-up)
        poller = select.poll()
        by_fd = {}
        for i in self.messages:
            by_fd[workers[i].conn.fileno()] = i
        for fd in by_fd:
            poller.register(fd, select.POLLIN)
        board = self.pool.board
        if board is not None and any(m[0] == "run" for m in self.messages.values()):
            board.start()
        for i, msg in self.messages.items():
            workers[i].send(msg)
        last_progress = time.monotonic()
        while self.pending:
            wait_s = POLL_S if not (self.links and self.links.pending) else 0.0
            if self.timeout is not None:
                wait_s = max(0.0, min(wait_s, last_progress + self.timeout - time.monotonic()))
            ready = poller.poll(wait_s * 1000)
            for fd, _ in ready:
                i = by_fd[fd]
                try:
                    msg = workers[i].conn.recv()
                except (EOFError, OSError):
                    self._died(i)
                self._handle(i, msg)
                if i not in self.pending:
                    poller.unregister(fd)
                last_progress = time.monotonic()
            if self.links is not None and self._step_links():
                last_progress = time.monotonic()
            if not ready:  # a death shows as end of file at once; this catches the rest
                self._check_alive()
                if board is not None and board.progressed():  # barriers passed: not silent
                    last_progress = time.monotonic()
            if self.timeout is not None and not ready and \
                    time.monotonic() - last_progress >= self.timeout:
                self._hung()
        if self.aborted and board is not None:  # every worker replied: none is at a barrier
            board.reset()
        errors = [(i, r) for i, r in sorted(self.replies.items()) if r[0] == "error"]
        if errors:
            primary = [e for e in errors if not e[1][3]] or errors
            i, (_, exc_bytes, text, _) = primary[0]
            raise WorkerError(i, exc_bytes, text)
        return {i: r[1] for i, r in self.replies.items()}

    def _handle(self, i: int, msg: tuple) -> None:
        if msg[0] == "stranded":  # waits for a post of a worker that finished the call
            self._stranded(i, msg[1])
            return
        if msg[0] == "barrier":
            group, action = msg[1], msg[2]
            if self.aborted:
                self.pool._workers[i].send(("abort",))
                return
            here = self.waiting.setdefault(group, set())
            here.add(i)
            if len(here) == len(group):
                if action is None:
                    self._go(group)
                else:  # the group's members elsewhere: MPI first (they stay `waiting`)
                    self._guarded(lambda: self.links.start(group, action))
            else:
                self._check_group(group)
            return
        self.pending.discard(i)
        self.replies[i] = msg
        if msg[0] == "error" and not self.aborted:
            self._abort()
        for group in list(self.waiting):
            self._check_group(group)

    def _stranded(self, i: int, poster: int) -> None:
        """Worker i waits for a post of `poster`, which finished the call. If poster raised,
        its error reply may still be in its socket (read after i's message, under load): that
        error is the call's, and aborting releases i. Only a poster that finished normally
        ran different collectives."""
        conn = self.pool._workers[poster].conn
        while poster in self.pending and conn.poll(STRANDED_GRACE_S):
            try:
                msg = conn.recv()
            except (EOFError, OSError):
                self._died(poster)
            self._handle(poster, msg)
        if not self.aborted:
            self._fail(_different_collectives(self.api, i, poster))

    def _go(self, group: tuple) -> None:
        del self.waiting[group]
        for j in group:
            self.pool._workers[j].send(("go",))

    def _step_links(self) -> bool:
        """Polls the cross-process steps in flight; releases the groups whose step completed.
        While some wait on other processes, checks those are alive. Returns whether one
        completed."""
        done = self._guarded(self.links.poll)
        for group in done:
            if not self.aborted:
                self._go(group)
        if self.links.pending:
            self._guarded(lambda: distributed.check(self.api, self.links.waiting_for()))
            time.sleep(0.00005)  # a short yield: MPI progresses only inside its calls
        return bool(done)

    def _guarded(self, step):
        """Runs a cross-process step; its failure (an MPI error, another process's failure)
        stops this pool's workers before it is raised, as a local failure does."""
        try:
            return step()
        except BaseException:
            self.pool.shutdown(graceful=False)
            raise

    def _abort(self) -> None:
        """Releases every worker waiting at a barrier with a BrokenBarrierError."""
        self.aborted = True
        if self.pool.board is not None:
            self.pool.board.abort()
        for group in list(self.waiting):
            for j in self.waiting.pop(group):
                self.pool._workers[j].send(("abort",))

    def _check_group(self, group: tuple) -> None:
        """A member that finished while others wait for it in a collective never enters it:
        the program's collectives differ between devices (a collective under a
        device-dependent branch). That is a deadlock; say so now."""
        finished = [j for j in group if j in self.replies]
        if finished and not self.aborted:
            waiting = sorted(self.waiting.get(group, ()))
            self._fail(_different_collectives(self.api, waiting[0], finished[0]))

    def _check_alive(self) -> None:
        for w in self.pool.workers:
            if w.proc.poll() is not None:
                self._died(w.index)

    def _died(self, i: int) -> None:
        proc = self.pool._workers[i].proc
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=1.0)
        self._fail(RuntimeError(
            f"{self.api}: the worker process of CpuDevice(id={i}) died (exit code "
            f"{proc.returncode}). The pool was shut down; the next call starts a fresh one."))

    def _hung(self) -> None:
        at_barrier = set().union(*self.waiting.values()) if self.waiting else set()
        if self.pool.board is not None:
            at_barrier |= self.pool.board.blocked(self.pending)
        silent = sorted(self.pending - at_barrier) or sorted(self.pending)
        names = ", ".join(f"CpuDevice(id={i})" for i in silent)
        self._fail(TimeoutError(
            f"{self.api}: {names} did not respond within {self.timeout:g} s (stopped, or stuck "
            "in a long computation or a deadlock); the worker processes were stopped and the "
            "next call starts fresh ones. Raise numbax.config.worker_timeout "
            "(NUMBAX_WORKER_TIMEOUT; 0 waits forever) for longer computations."))

    def _fail(self, error: BaseException) -> None:
        self.pool.shutdown(graceful=False)
        raise error


def _different_collectives(api: str, waiting: int, finished: int) -> RuntimeError:
    return RuntimeError(
        f"{api}: CpuDevice(id={waiting}) waits in a collective that CpuDevice(id={finished}) "
        "finished without entering: the devices ran different collectives. Every device must "
        "run the same collectives in the same order (no collective under a branch that "
        "depends on axis_index). The workers were stopped; the next call starts fresh ones.")


_POOL: Pool | None = None
_POOL_LOCK = threading.Lock()


def get_pool(n: int) -> Pool:
    """The live pool of n workers, started on first use (or after a failure)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is not None and (_POOL.closed or _POOL.n != n):
            _POOL.shutdown()
            _POOL = None
        if _POOL is None:
            _POOL = Pool(n)
        return _POOL


def shutdown_pool() -> None:
    global _POOL
    with _POOL_LOCK:
        if _POOL is not None:
            _POOL.shutdown()
            _POOL = None


atexit.register(shutdown_pool)
