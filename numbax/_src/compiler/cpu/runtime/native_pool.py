"""A thread pool whose caller never waits for a worker that has not started: for long kernels
on a busy machine, where a fork-join region waits at its end for every thread.

Why: beside other busy processes, Numba's OpenMP regions end at a barrier that waits for each
worker, and a worker the scheduler has not run waits a whole time slice (on a 2-core Xeon share
beside two busy loops, every parallel region of a driver took a multiple of 4 ms). jax.jit's
runtime lets its caller take the work a descheduled thread has not begun. This pool does the
same for a job cut into chunks: workers (native threads started with pthread_create, each
running `_worker`, a Numba cfunc, so no GIL is involved) and the caller take chunks from one
atomic counter; the caller then waits only for chunks in progress. A worker that wakes late
finds nothing left. The caller alone can finish every chunk, so a job completes even if no
worker ever runs (after a fork, say, where the child has no workers).

A job is a C function `void task(int64 arg, int64 chunk)` (a cfunc's address) and an int64
argument (the address of its parameters). Idle workers spin briefly, then sleep on a futex.
One job runs at a time (`run` returns False, and `held` gives None, when another thread's job
holds the pool: the caller then takes its other path); compiled code holding the pool through
`held` runs jobs itself with `job` (a chunked reduction's passes, one job each). Linux on x86-64
only (`available`); used by the busy machine's parallel arm of numbax's GEMM (gemm_tasks.py)
and of fused kernels (kernel_tasks.py).
"""
from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import platform
import threading

import numpy as np
from llvmlite import ir
from numba import cfunc, njit, types
from numba.extending import intrinsic

_I64 = ir.IntType(64)
_I32 = ir.IntType(32)
SYS_FUTEX = 202  # x86-64's number
FUTEX_WAIT_PRIVATE, FUTEX_WAKE_PRIVATE = 128, 129
SPIN = 2000  # pause loops (~0.1 ms) an idle worker spins before it sleeps
_STOLEN = 1 << 60  # the chunk counter while a job is being set up: takes nothing
# Chunks a job is cut into per pool thread (workers and caller): threads that run take the
# chunks of threads the scheduler has not run.
CHUNKS_PER_THREAD = 4


def available() -> bool:
    """Whether this host runs the pool (Linux on x86-64, with pthread_create)."""
    return platform.system() == "Linux" and platform.machine() == "x86_64" \
        and hasattr(_libc, "pthread_create")


try:
    _libc = ctypes.CDLL(None)
except OSError:
    _libc = None


def _pointer(builder, addr, bits=64):
    return builder.inttoptr(addr, ir.IntType(bits).as_pointer())


@intrinsic
def _fetch_add(typingctx, addr, value):
    """*addr += value atomically; the value before."""
    def codegen(context, builder, sig, args):
        return builder.atomic_rmw("add", _pointer(builder, args[0]), args[1], "seq_cst")
    return types.int64(types.int64, types.int64), codegen


@intrinsic
def _load(typingctx, addr):
    def codegen(context, builder, sig, args):
        return builder.load_atomic(_pointer(builder, args[0]), "acquire", 8)
    return types.int64(types.int64), codegen


@intrinsic
def _store(typingctx, addr, value):
    def codegen(context, builder, sig, args):
        builder.store_atomic(args[1], _pointer(builder, args[0]), "release", 8)
        return context.get_dummy_value()
    return types.void(types.int64, types.int64), codegen


@intrinsic
def _load32(typingctx, addr):
    """The futex word (a 32-bit int)."""
    def codegen(context, builder, sig, args):
        return builder.sext(builder.load_atomic(_pointer(builder, args[0], 32), "acquire", 4),
                            _I64)
    return types.int64(types.int64), codegen


@intrinsic
def _store32(typingctx, addr, value):
    def codegen(context, builder, sig, args):
        builder.store_atomic(builder.trunc(args[1], _I32), _pointer(builder, args[0], 32),
                             "release", 4)
        return context.get_dummy_value()
    return types.void(types.int64, types.int64), codegen


@intrinsic
def _address(typingctx, pointer):
    """A void pointer as an integer."""
    def codegen(context, builder, sig, args):
        return builder.ptrtoint(args[0], _I64)
    return types.int64(types.voidptr), codegen


@intrinsic
def call_task(typingctx, task, arg, chunk):
    """task(arg, chunk) through the function pointer `task`."""
    def codegen(context, builder, sig, args):
        fnty = ir.FunctionType(ir.VoidType(), [_I64, _I64])
        builder.call(builder.inttoptr(args[0], fnty.as_pointer()), [args[1], args[2]])
        return context.get_dummy_value()
    return types.void(types.int64, types.int64, types.int64), codegen


# libc's syscall and sched_yield by symbol name: resolved when the code is
# loaded, so no process's address is compiled in and Numba can cache the callers.
# futex(addr, op, value, timeout): the timeout is passed as 0 (none) on every call. Left out,
# FUTEX_WAIT read whatever the register held as a timeout pointer and returned at once, so
# a worker that had run a job never slept: two idle workers took 100 % of a core each.
_futex = types.ExternalFunction(
    "syscall", types.int64(types.int64, types.int64, types.int64, types.int64, types.int64))
_sched_yield = types.ExternalFunction("sched_yield", types.int32())


@intrinsic
def _pause(typingctx):
    def codegen(context, builder, sig, args):
        fn = builder.module.declare_intrinsic("llvm.x86.sse2.pause",
                                              fnty=ir.FunctionType(ir.VoidType(), []))
        builder.call(fn, [])
        return context.get_dummy_value()
    return types.void(), codegen


# The pool's shared words, each on its own cache line (offsets from their base address, which
# every function takes as an argument: a compiled-in address would outlive the process in
# Numba's cache): the futex generation (32 bits), the next chunk, the chunks done, the task,
# its argument and the job's chunk count.
GEN, NEXT, DONE, TASK, ARG, COUNT = (64 * k for k in range(6))


@njit(nogil=True, cache=True)
def _take_chunks(base):
    """Runs chunks of the current job until none is left."""
    while True:
        chunk = _fetch_add(base + NEXT, 1)
        if chunk >= _load(base + COUNT):  # (the count is read after the chunk: see `job`)
            return
        call_task(_load(base + TASK), _load(base + ARG), chunk)
        _fetch_add(base + DONE, 1)


def _worker(words):
    """A worker thread's body (its argument: the words' base address): wait for a new
    generation, take chunks, again; never returns. (`_worker_address` compiles it as a C
    function, at the first `start`: not at import.)"""
    base = _address(words)
    seen = _load32(base + GEN)
    while True:
        spins = 0
        generation = _load32(base + GEN)
        while generation == seen:
            if spins < SPIN:
                _pause()
                spins += 1
            else:
                _futex(SYS_FUTEX, base + GEN, FUTEX_WAIT_PRIVATE, seen, 0)
            generation = _load32(base + GEN)
        seen = generation
        _take_chunks(base)
    return words


@functools.cache
def _worker_address() -> int:
    return cfunc(types.voidptr(types.voidptr), nopython=True, cache=True)(_worker).address


@njit(nogil=True, cache=True)
def job(base, task, arg, count, workers):
    """One job: publish it, wake the workers, take chunks, wait for the ones in progress.

    A worker still in the previous job's `_take_chunks` may take a chunk at any moment: the
    counter first holds _STOLEN (it takes nothing), then the job's words are set, then the
    counter opens at 0, so a chunk it takes belongs to this job and it reads this job's
    words after taking it."""
    _store(base + NEXT, _STOLEN)
    _store(base + TASK, task)
    _store(base + ARG, arg)
    _store(base + COUNT, count)
    _store(base + DONE, 0)
    _store(base + NEXT, 0)
    _store32(base + GEN, (_load32(base + GEN) + 1) & 0x7FFFFFFF)
    if workers:
        _futex(SYS_FUTEX, base + GEN, FUTEX_WAKE_PRIVATE, workers, 0)
    _take_chunks(base)
    spins = 0
    while _load(base + DONE) < count:  # chunks other threads are running
        spins += 1
        if spins < 256:
            _pause()
        else:
            _sched_yield()


class _Pool:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.workers = 0
        self.pid = os.getpid()
        self.words = np.zeros(6 * 8, np.int64)  # GEN ... COUNT, kept alive with the pool


_pool = _Pool()


def workers() -> int:
    """Worker threads started in this process."""
    return _pool.workers if _pool.pid == os.getpid() else 0


def start(count: int) -> None:
    """Starts worker threads until there are `count` (they live as long as the process)."""
    with _pool.lock:
        if _pool.pid != os.getpid():  # a forked child: its parent's workers did not come along
            _pool.workers, _pool.pid = 0, os.getpid()
        create = _libc.pthread_create
        create.argtypes = [ctypes.POINTER(ctypes.c_ulong), ctypes.c_void_p, ctypes.c_void_p,
                           ctypes.c_void_p]
        create.restype = ctypes.c_int
        while _pool.workers < count:
            tid = ctypes.c_ulong()
            if create(ctypes.byref(tid), None, _worker_address(), _pool.words.ctypes.data):
                break  # out of threads: the pool runs with fewer
            _pool.workers += 1


def run(task: int, args: np.ndarray, chunks: int) -> bool:
    """Runs task(args' address, chunk) for every chunk < `chunks` on the workers and the
    caller; False (nothing run) when another thread's job holds the pool."""
    with held() as base:
        if base is None:
            return False
        job(base, task, args.ctypes.data, chunks, workers())
    return True


@contextlib.contextmanager
def held():
    """The pool's words' address while this thread holds the pool, for jobs run from compiled
    code (`job`); None when another thread's job holds it."""
    if not _pool.lock.acquire(blocking=False):
        yield None
        return
    try:
        yield _pool.words.ctypes.data
    finally:
        _pool.lock.release()
