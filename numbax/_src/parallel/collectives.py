"""Collectives across pmap workers: each writes its operand to its slot of a shared scratch
region, waits at a barrier, reads every slot (in rank order, so all agree bit for bit), and
waits again before the slots may be reused. Elementwise reductions (psum, pmax, pmin) of
CHUNKED_REDUCE_BYTES and more instead reduce-scatter and all-gather: each rank reduces one
n-th of the elements over every slot, writes it into slot 0, and every rank copies slot 0 back,
so n ranks move about 2n operands' worth of memory instead of n² (a 64 MB psum over 16 workers
read 16 GB). Installed as the impls of the lax primitives in worker processes only."""
from __future__ import annotations

import threading
from typing import Any

import numpy as np

from numbax._src import core, dtypes
from numbax._src.lax import parallel

BARRIER_TIMEOUT_S = 300.0
# Below this, two barriers (one exchange) cost less than the extra two of the chunked path.
CHUNKED_REDUCE_BYTES = 1 << 20


class Comm:
    """One call's view of the collective group: rank, size, barrier and scratch slots."""

    def __init__(self, rank: int, size: int, barrier: threading.Barrier, scratch: np.ndarray,
                 axis_name: Any) -> None:
        self.rank = rank
        self.size = size
        self.barrier = barrier
        self.scratch = scratch  # uint8[size, slot_bytes]
        self.axis_name = axis_name

    def wait(self) -> None:
        self.barrier.wait(BARRIER_TIMEOUT_S)

    def exchange(self, x: np.ndarray, reduce_fn) -> np.ndarray:
        """reduce_fn(list of every rank's x) -> result, computed between the two barriers."""
        x = np.asarray(x, order="C")  # (ascontiguousarray would make 0-d arrays 1-d)
        slot_bytes = self.scratch.shape[1]
        if x.nbytes > slot_bytes:
            raise RuntimeError(
                f"pmap: a collective operand has {x.nbytes} bytes, more than the {slot_bytes} "
                "bytes reserved for it; this is a numbax bug, please report it.")
        raw = x.reshape(-1).view(np.uint8)
        self.scratch[self.rank, :raw.size] = raw
        self.wait()
        try:
            parts = [self.scratch[r, :raw.size].view(x.dtype).reshape(x.shape)
                     for r in range(self.size)]
            out = np.array(reduce_fn(parts), dtype=x.dtype)
        finally:
            self.wait()
        return out

    def reduce_elementwise(self, x: np.ndarray, reduce_fn) -> np.ndarray:
        """reduce_fn(list of every rank's x) for an elementwise reduce_fn, bit for bit what
        `exchange` gives (each element is reduced over the slots in rank order, by one rank)."""
        x = np.asarray(x, order="C")
        if x.nbytes < CHUNKED_REDUCE_BYTES or self.size == 1:
            return self.exchange(x, reduce_fn)
        raw = x.reshape(-1).view(np.uint8)
        if raw.size > self.scratch.shape[1]:
            return self.exchange(x, reduce_fn)  # raises the oversized-operand error
        self.scratch[self.rank, :raw.size] = raw
        lo, hi = x.size * self.rank // self.size, x.size * (self.rank + 1) // self.size
        self.wait()
        # Every rank passes all four barriers, even when its reduction fails: a rank that
        # stopped early would leave the others waiting until BARRIER_TIMEOUT_S.
        error = out = None
        try:
            mine = np.asarray(reduce_fn([self.scratch[r, :raw.size].view(x.dtype)[lo:hi]
                                         for r in range(self.size)]), dtype=x.dtype)
        except Exception as e:  # noqa: BLE001 - raised below, after the barriers
            error = e
        self.wait()  # every slot read: slot 0 may take the reduced chunks
        if error is None:
            self.scratch[0, :raw.size].view(x.dtype)[lo:hi] = mine
        self.wait()
        if error is None:
            out = self.scratch[0, :raw.size].view(x.dtype).reshape(x.shape).copy()
        self.wait()  # slot 0 read by all: the slots may be reused
        if error is not None:
            raise error
        return out


_local = threading.local()


def current() -> Comm:
    comm = getattr(_local, "comm", None)
    if comm is None:
        raise NameError("pmap collective used outside a pmap worker call")
    return comm


def set_current(comm: Comm | None) -> None:
    _local.comm = comm


def _check_axis(api: str, axis_name: Any) -> Comm:
    comm = current()
    names = axis_name if isinstance(axis_name, tuple) else (axis_name,)
    if names != (comm.axis_name,):
        raise NameError(f"lax.{api}: axis {axis_name!r} is not the pmap axis "
                        f"{comm.axis_name!r} of this call.")
    return comm


def _sum(parts):
    total = parts[0].copy()
    for p in parts[1:]:
        total += p
    return total


def _psum(x, *, axis_name):
    return [_check_axis("psum", axis_name).reduce_elementwise(x, _sum)]


def _pmax(x, *, axis_name):
    return [_check_axis("pmax", axis_name).reduce_elementwise(
        x, lambda ps: np.maximum.reduce(ps))]


def _pmin(x, *, axis_name):
    return [_check_axis("pmin", axis_name).reduce_elementwise(
        x, lambda ps: np.minimum.reduce(ps))]


def _all_gather(x, *, axis_name, axis, tiled, axis_size):
    comm = _check_axis("all_gather", axis_name)
    join = np.concatenate if tiled else np.stack
    gathered = []
    comm.exchange(x, lambda ps: gathered.append(join(ps, axis)) or ps[0])
    return [gathered[0]]


def _ppermute(x, *, axis_name, perm):
    comm = _check_axis("ppermute", axis_name)
    sources = {dst: src for src, dst in perm}
    src = sources.get(comm.rank)
    return [comm.exchange(x, lambda ps: ps[src] if src is not None else np.zeros_like(ps[0]))]


def _psum_scatter(x, *, axis_name, scatter_dimension, tiled, axis_size):
    comm = _check_axis("psum_scatter", axis_name)
    total = comm.reduce_elementwise(x, _sum)
    if tiled:
        chunk = total.shape[scatter_dimension] // comm.size
        return [np.take(total, np.arange(comm.rank * chunk, (comm.rank + 1) * chunk),
                        axis=scatter_dimension)]
    return [np.take(total, comm.rank, axis=scatter_dimension)]


def _axis_index(*, axis_name):
    comm = _check_axis("axis_index", axis_name)
    return [np.asarray(comm.rank, dtype=dtypes.default_int_dtype())]


WORKER_IMPLS = {
    parallel.psum_p: _psum,
    parallel.pmax_p: _pmax,
    parallel.pmin_p: _pmin,
    parallel.all_gather_p: _all_gather,
    parallel.ppermute_p: _ppermute,
    parallel.psum_scatter_p: _psum_scatter,
    parallel.axis_index_p: _axis_index,
}


def install() -> None:
    """Makes the collective primitives run across workers (called once in each worker)."""
    core.impl_rules.update(WORKER_IMPLS)


def collective_bytes(jaxpr: core.Jaxpr) -> int:
    """The largest collective operand in `jaxpr` (nested jaxprs included), in bytes."""
    best = 0
    for eqn in jaxpr.eqns:
        if eqn.primitive in WORKER_IMPLS and eqn.invars:
            aval = eqn.invars[0].aval
            best = max(best, aval.size * aval.dtype.itemsize)
        for value in eqn.params.values():
            for sub in value if isinstance(value, tuple) else (value,):
                if isinstance(sub, core.ClosedJaxpr):
                    sub = sub.jaxpr
                if isinstance(sub, core.Jaxpr):
                    best = max(best, collective_bytes(sub))
    return best


def has_collectives(jaxpr: core.Jaxpr) -> bool:
    for eqn in jaxpr.eqns:
        if eqn.primitive in WORKER_IMPLS:
            return True
        for value in eqn.params.values():
            for sub in value if isinstance(value, tuple) else (value,):
                if isinstance(sub, core.ClosedJaxpr):
                    sub = sub.jaxpr
                if isinstance(sub, core.Jaxpr) and has_collectives(sub):
                    return True
    return False
