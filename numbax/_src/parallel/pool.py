"""The worker processes behind the virtual CPU devices: started lazily with `spawn`, reused,
one per device, each with its share of the cores (NUMBA_NUM_THREADS set before numba loads).
The parent never blocks without watching the workers' sentinels, so a dead worker is an error
within moments, never a hang."""
from __future__ import annotations

import atexit
import contextlib
import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import threading
import traceback
from collections.abc import Iterator
from typing import Any

from numbax._src.parallel import shm

POLL_S = 0.5


class WorkerError(Exception):
    """A worker raised: carries the device id, the exception and its remote traceback."""


@contextlib.contextmanager
def _environ(**values: str) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class Pool:
    """N worker processes, their pipes, one barrier per group size, and the shared arena."""

    def __init__(self, n: int) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.n = n
        self.barriers = [ctx.Barrier(k) for k in range(1, n + 1)]
        self.arena = shm.Arena()
        self.prepared: list[set] = [set() for _ in range(n)]
        self.lock = threading.RLock()
        self.closed = False
        threads = str(max(1, (os.cpu_count() or 1) // n))
        self.conns, self.procs = [], []
        with _environ(NUMBA_NUM_THREADS=threads):
            for i in range(n):
                parent_end, child_end = ctx.Pipe()
                proc = ctx.Process(target=_worker_main, args=(i, child_end, self.barriers),
                                   name=f"numbax-cpu-device-{i}", daemon=True)
                proc.start()
                child_end.close()
                self.conns.append(parent_end)
                self.procs.append(proc)

    # ------------------------------------------------------------------ messaging

    def request(self, messages: dict[int, tuple]) -> dict[int, Any]:
        """Sends one message to each named worker and waits for all replies, watching for
        deaths. Raises WorkerError for the first worker that raised (after all replied).
        Ctrl-C while waiting stops the workers (their half-done replies would be stale)."""
        try:
            return self._request(messages)
        except KeyboardInterrupt:
            self.shutdown(graceful=False)
            raise

    def _request(self, messages: dict[int, tuple]) -> dict[int, Any]:
        for i, msg in messages.items():
            with contextlib.suppress(OSError):  # a dead worker: reported just below
                self.conns[i].send(msg)
        pending = set(messages)
        replies: dict[int, Any] = {}
        while pending:
            waitables = [self.conns[i] for i in pending] + [self.procs[i].sentinel
                                                            for i in range(self.n)]
            ready = multiprocessing.connection.wait(waitables, timeout=POLL_S)
            for i in list(pending):
                if self.conns[i] in ready:
                    try:
                        replies[i] = self.conns[i].recv()
                    except EOFError:
                        continue  # the sentinel check below reports it
                    pending.discard(i)
            for i, proc in enumerate(self.procs):
                if not proc.is_alive():
                    code = proc.exitcode
                    self.shutdown(graceful=False)
                    raise RuntimeError(
                        f"pmap: the worker process of CpuDevice(id={i}) died (exit code {code})."
                        " The pool was shut down; the next pmap call starts a fresh one.")
        errors = [(i, r) for i, r in sorted(replies.items()) if r[0] == "error"]
        if errors:
            for barrier in self.barriers:
                barrier.reset()
            primary = [e for e in errors if not e[1][3]] or errors
            i, (_, exc_bytes, text, _) = primary[0]
            raise WorkerError(i, exc_bytes, text)
        return {i: r[1] for i, r in replies.items()}

    def ensure_prepared(self, workers: list[int], key: int, payload: bytes) -> None:
        """Sends a program to the workers that lack it: the first one alone first, so it fills
        the compile cache that the others then load from."""
        missing = [i for i in workers if key not in self.prepared[i]]
        for group in (missing[:1], missing[1:]):
            if group:
                self.request({i: ("prepare", key, payload) for i in group})
                for i in group:
                    self.prepared[i].add(key)

    # ------------------------------------------------------------------ shutdown

    def shutdown(self, graceful: bool = True) -> None:
        if self.closed:
            return
        self.closed = True
        if graceful:
            for conn, proc in zip(self.conns, self.procs, strict=True):
                if proc.is_alive():
                    with contextlib.suppress(OSError, ValueError):
                        conn.send(("stop",))
            for proc in self.procs:
                proc.join(timeout=2.0)
        for proc in self.procs:
            if proc.is_alive():
                proc.terminate()
        for proc in self.procs:
            proc.join(timeout=2.0)
            if proc.is_alive():
                proc.kill()
                proc.join(timeout=2.0)
        for conn in self.conns:
            conn.close()
        self.arena.close()


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


# ----------------------------------------------------------------------------- the worker


def _worker_main(index: int, conn, barriers) -> None:
    """A worker's loop: prepare programs, run shards, stop; errors go back to the parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and stops us
    from numbax._src.parallel import worker

    state = worker.WorkerState(index, barriers)
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            break
        if msg[0] == "stop":
            break
        try:
            conn.send(("ok", state.handle(msg)))
        except BaseException as err:  # noqa: BLE001 - every failure goes back to the caller
            state.abort()
            try:
                exc_bytes = pickle.dumps(err)
            except Exception:  # noqa: BLE001
                exc_bytes = None
            broken = isinstance(err, threading.BrokenBarrierError)
            conn.send(("error", exc_bytes, traceback.format_exc(), broken))
    state.close()
