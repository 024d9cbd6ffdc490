"""A worker's side of the virtual devices: the per-device programs it holds, and how it runs
its block of one SPMD call (inputs and outputs are slices of global arrays in shared memory)."""
from __future__ import annotations

import pickle
import select
import threading
import time
import traceback
from typing import Any

import numpy as np

from numbax._src import core
from numbax._src.compiler import api as compiler
from numbax._src.compiler.cpu.runtime import threads
from numbax._src.config import config
from numbax._src.parallel import barriers, collectives, send_plain, shm

# How long a worker polls for what comes next (the parent's next message after a reply; a
# member's post at a barrier) before it sleeps. Waking a sleeping process costs its waker
# 25-35 us on a VM's idle core, and its wake-up about as much again; a training loop's next
# call and a collective's last member are most often closer than this.
SPIN_S = 300e-6


class Program:
    """A per-device jaxpr, compiled (collectives run their implementations from the driver:
    this worker's shared-memory exchanges), or evaluated primitive by primitive when the
    parent runs with jit disabled."""

    def __init__(self, payload: bytes) -> None:
        spec = pickle.loads(payload)
        self.closed: core.ClosedJaxpr = spec["jaxpr"]
        self.x64: bool = spec["x64"]
        self.executable = None
        if spec["use_jit"]:
            with config.override("jax_enable_x64", self.x64):
                self.executable = compiler.compile(self.closed, "cpu", name=spec["name"])

    def run(self, args: list[np.ndarray]) -> list[Any]:
        if bool(config.jax_enable_x64) == self.x64:  # (an override costs ~5 us a call)
            return self._run(args)
        with config.override("jax_enable_x64", self.x64):
            return self._run(args)

    def _run(self, args: list[np.ndarray]) -> list[Any]:
        if self.executable is not None:
            return list(self.executable(*[np.asarray(a, order="C") for a in args]))
        # the parent's jit is disabled: its loops stay eager here too (eager_loops.py would
        # compile long ones, and a worker inside compiled code cannot see its parent die)
        with config.override("jax_disable_jit", True):
            return core.eval_jaxpr(self.closed.jaxpr, self.closed.consts, *args)


_BYTE = np.dtype(np.uint8)


def _block(view: np.ndarray, index: tuple | None) -> np.ndarray:
    if index is None:
        return view
    return view[(*(i if isinstance(i, int) else slice(*i) for i in index), ...)]


def _arena_offset(arena: np.ndarray | None, out: Any, block: np.ndarray,
                  shape: tuple) -> int | None:
    """Where `out` lies in the result arena (a large reduction's result), when it can stand
    for the whole output `block` as it is (the parent then adopts it: no copy); else None."""
    out = np.asarray(out)
    if arena is None or out.nbytes == 0 or not out.flags.c_contiguous:
        return None
    if not block.shape == out.shape == shape or out.dtype != block.dtype:
        return None
    start = out.__array_interface__["data"][0] - arena.__array_interface__["data"][0]
    return start if 0 <= start and start + out.nbytes <= arena.nbytes else None


class WorkerState:
    MAX_VIEWS = 256

    def __init__(self, index: int, conn, board: tuple | None = None) -> None:
        collectives.install()
        self.index = index
        self.conn = conn
        self.programs: dict[Any, Program] = {}
        self.attachments = shm.Attachments()
        self.board = None  # the pool's barriers between workers, when it has them
        if board is not None:
            mapping = shm.Mapping(board[0])  # kept for the worker's life, with the views
            self.board = barriers.Board(mapping.buf, mapping.address, board[1])
        # views by (segment, offset, shape, dtype, block): a loop of calls gets the same
        # blocks back from the parent's heap, and making ~5 views a call cost ~15 us
        self._views: dict[tuple, np.ndarray] = {}

    def handle(self, msg: tuple) -> Any:
        if msg[0] == "prepare":
            _, key, payload = msg
            self.programs[key] = Program(payload)
            return None
        if msg[0] == "run":
            return self._run(msg[1], msg[2])
        raise ValueError(f"numbax worker: unknown message {msg[0]!r}")

    def _view(self, spec: tuple) -> np.ndarray:
        """Block spec[4] (None: all) of the array of shape spec[2] and dtype spec[3] at byte
        spec[1] of segment spec[0]."""
        key = spec[:5]
        found = self._views.get(key)
        if found is None:
            if len(self._views) >= self.MAX_VIEWS:
                self._views.clear()
            segment, offset, shape, dtype, index = key
            whole = shm.view(self.attachments.get(segment), offset, tuple(shape), dtype)
            found = self._views[key] = _block(whole, index)
        return found

    def _forget(self, names: list[str]) -> None:
        """Unmaps the segments the parent unlinked, dropping the views kept of them first."""
        if names:
            gone = set(names)
            self._views = {k: v for k, v in self._views.items() if k[0] not in gone}
        self.attachments.forget(names)

    def _run(self, key: Any, call: dict) -> dict[int, int] | None:
        """Runs this device's block of a call; returns the outputs it left in the result
        arena instead of writing them (output k at byte k's value), or None."""
        self._forget(call["forget"])
        args = [self._view(spec) for spec in call["inputs"]]
        # None: a program without collectives (no scratch, no Comm)
        arena = None if call["comm"] is None else self._communicate(call["comm"])
        adopted = {}
        try:
            outs = self.programs[key].run(args)
            if call.get("aliased"):  # outputs written over donated inputs: none may view one
                outs = [np.array(o) if any(np.may_share_memory(o, a) for a in args) else o
                        for o in outs]
            for k, (spec, out) in enumerate(zip(call["outputs"], outs, strict=True)):
                if not spec[5]:  # one replica of each block writes it
                    continue
                block = self._view(spec)
                at = _arena_offset(arena, out, block, tuple(spec[2]))
                if at is None:
                    np.copyto(block, np.asarray(out), casting="unsafe")
                else:
                    adopted[k] = at
        finally:
            collectives.set_current(None)
            del args, arena
        return adopted or None

    def _communicate(self, comm: tuple) -> np.ndarray | None:
        """Makes this call's Comm (its scratch slots, notes and result arena) current;
        returns the arena (None without one)."""
        names, sizes, rank, workers, (segment, offset, slot_bytes), arena = comm
        n = len(workers)  # the scratch block: the slots, then the ranks' notes
        slots = self._view((segment, offset, (n, slot_bytes), _BYTE, None))
        notes = self._view((segment, offset + n * slot_bytes, (n, collectives.NOTE_BYTES),
                            _BYTE, None))
        arena = None if arena is None else self._view((*arena[:2], (arena[2],), _BYTE, None))
        collectives.set_current(collectives.Comm(self.conn, names, sizes, rank, workers, slots,
                                                 arena, notes, self.attachments,
                                                 (self.board, self.index)))
        return arena

    def close(self) -> None:
        self._views.clear()
        self.attachments.close()


class Spin:
    """When a worker polls instead of sleeping (SPIN_S): for the next message, where the
    host has a core for each of the job's workers on it and one for the parent (on two cores,
    two workers polling took the parent's core: a small call went from 0.29 to 0.52 ms); at
    a barrier, where it has one for each worker (the parent sleeps during a call); neither
    while other processes keep half the cores busy (threads.busy)."""

    def __init__(self, conn, host_workers: int) -> None:
        self.for_messages = host_workers < threads.CORES
        self.at_barriers = host_workers <= threads.CORES
        self._poller = select.poll()
        self._poller.register(conn.fileno(), select.POLLIN)

    def barrier_s(self) -> float:
        return SPIN_S if self.at_barriers and not threads.busy() else 0.0

    def until_message(self) -> bool:
        """Polls the socket for up to SPIN_S (where allowed); whether a message is there."""
        if not self.for_messages or threads.busy():
            return False
        end = time.perf_counter() + SPIN_S
        while not self._poller.poll(0):
            if time.perf_counter() >= end:
                return False
        return True


def serve(index: int, conn, board: tuple | None = None, host_workers: int = 1) -> None:
    """A worker's loop: prepare programs, run blocks, stop; errors go back to the parent.
    `board`: (segment name, workers) of the pool's barrier board (barriers.py), or None;
    `host_workers`: the job's workers on this host (this one's siblings and itself)."""
    state = WorkerState(index, conn, board)
    spin = Spin(conn, host_workers)
    while True:
        if state.board is not None:
            state.board.spin_s = spin.barrier_s()
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            break
        if msg[0] == "stop":
            break
        try:
            reply = ("ok", state.handle(msg))
        except BaseException as err:  # noqa: BLE001 - every failure goes back to the caller
            try:
                exc_bytes = pickle.dumps(err)
            except Exception:  # noqa: BLE001
                exc_bytes = None
            broken = isinstance(err, threading.BrokenBarrierError)
            reply = ("error", exc_bytes, traceback.format_exc(), broken)
        if msg[0] == "run" and state.board is not None:
            state.board.finish(index)  # (a member waiting for it at a barrier tells)
        try:
            if reply == _OK:  # the common reply, pickled once
                conn.send_bytes(_OK_BYTES)
            else:
                send_plain(conn, reply)
        except (EOFError, OSError):
            break
        if msg[0] == "run":
            spin.until_message()
    state.close()


_OK = ("ok", None)
_OK_BYTES = pickle.dumps(_OK, protocol=pickle.HIGHEST_PROTOCOL)
