"""A pmap worker's side: the per-device programs it holds and how it runs one shard."""
from __future__ import annotations

import pickle
from typing import Any

import numpy as np

from numbax._src import core
from numbax._src.compiler import api as compiler
from numbax._src.config import config
from numbax._src.parallel import collectives, shm


class Program:
    """A per-device jaxpr, compiled (collectives run their eager implementations from the
    driver: this worker's shared-memory exchanges), or evaluated eagerly primitive by
    primitive when the parent asks for that."""

    def __init__(self, payload: bytes) -> None:
        spec = pickle.loads(payload)
        self.closed: core.ClosedJaxpr = spec["jaxpr"]
        self.x64: bool = spec["x64"]
        self.executable = None
        if spec["use_jit"]:
            self.executable = self._compile()

    def _compile(self):
        with config.override("jax_enable_x64", self.x64):
            return compiler.compile(self.closed, "cpu", name="pmap")

    def run(self, args: list[np.ndarray]) -> list[Any]:
        with config.override("jax_enable_x64", self.x64):
            if self.executable is not None:
                return list(self.executable(*[np.asarray(a, order="C") for a in args]))
            return core.eval_jaxpr(self.closed.jaxpr, self.closed.consts, *args)


class WorkerState:
    def __init__(self, index: int, barriers) -> None:
        collectives.install()
        self.index = index
        self.barriers = barriers
        self.programs: dict[int, Program] = {}
        self.attachments = shm.Attachments()
        self.comm: collectives.Comm | None = None

    def handle(self, msg: tuple) -> Any:
        if msg[0] == "prepare":
            _, key, payload = msg
            self.programs[key] = Program(payload)
            return None
        if msg[0] == "run":
            return self._run(*msg[1:])
        raise ValueError(f"pmap worker: unknown message {msg[0]!r}")

    def _run(self, key, arena_name, in_specs, out_specs, rank, size, scratch, axis_name):
        segment = self.attachments.get(arena_name)
        args = []
        for offset, shape, dtype, mapped in in_specs:
            v = shm.view(segment, offset, shape, dtype)
            args.append(v[rank, ...] if mapped else v)
        scratch_offset, slot_bytes = scratch
        slots = shm.view(segment, scratch_offset, (size, slot_bytes), np.uint8)
        self.comm = collectives.Comm(rank, size, self.barriers[size - 1], slots, axis_name)
        collectives.set_current(self.comm)
        try:
            outs = self.programs[key].run(args)
            for (offset, shape, dtype), out in zip(out_specs, outs, strict=True):
                dst = shm.view(segment, offset, shape, dtype)[rank, ...]
                np.copyto(dst, np.asarray(out), casting="unsafe")
        except BaseException:
            self.comm.barrier.abort()  # the other workers stop waiting for this one at once
            raise
        finally:
            collectives.set_current(None)
            self.comm = None
        return None

    def abort(self) -> None:
        """Breaks the barrier of a failed call so the other workers stop waiting at once."""
        if self.comm is not None:
            self.comm.barrier.abort()

    def close(self) -> None:
        self.attachments.close()
