"""Fused loop kernels as jobs of the native pool (native_pool.py): a busy machine's parallel arm
of a kernel whose outer loop runs over independent rows (elementwise maps, row reductions,
softmax-like row groups), where Numba's OpenMP region would wait at its end for descheduled
workers.

A kernel module that allows it holds `kernel_task(p, chunk)` beside its serial variant (source
from cpu/pool_tasks.py): it reads the call's words at address `p` (the outer length, the chunk
count, each array's address and shape, the sizes, the scalars' addresses), views rows
[lo, hi) of every array the outer loop indexes, and runs the serial variant on them. The serial
code is the same as a one-thread run's, so a pooled call gives the same bits.
`task(kernel_task)` compiles it into a C function of (address, chunk) on the first pooled call
(or loads it from Numba's cache when the kernel module is a file); `run` packs a call's words
and runs its chunks on the pool.
"""
from __future__ import annotations

import time

import numpy as np
from llvmlite import ir
from numba import cfunc, njit, types
from numba.extending import intrinsic
from numba.np.arrayobj import populate_array

from numbax._src.compiler.cpu.runtime import busy_sites, native_pool
from numbax._src.config import config

PARTS_PER_THREAD = 4  # chunks a pool thread: threads that run take those of threads that do not
_TASK_SIG = types.void(types.int64, types.int64)


@intrinsic
def words(typingctx, addr, count):
    """The int64 words at `addr` (`count` of them) as an array (no owner)."""
    arrty = types.Array(types.int64, 1, "C")

    def codegen(context, builder, sig, args):
        return array_value(context, builder, arrty, args[0], [args[1]])
    return arrty(types.int64, types.int64), codegen


@intrinsic
def array_at(typingctx, addr, shape, dtype):
    """A C-contiguous array of `dtype` (a NumPy scalar type) and `shape` (a tuple of int64) at
    `addr`, with no owner: the caller keeps the memory alive."""
    arrty = types.Array(dtype.dtype, len(shape), "C")

    def codegen(context, builder, sig, args):
        dims = [builder.extract_value(args[1], d) for d in range(len(shape))]
        return array_value(context, builder, arrty, args[0], dims)
    return arrty(addr, shape, dtype), codegen


@intrinsic
def load(typingctx, addr, dtype):
    """The scalar of `dtype` stored at `addr`."""
    scalar = dtype.dtype

    def codegen(context, builder, sig, args):
        data_type = context.get_data_type(scalar)
        return context.unpack_value(builder, scalar,
                                    builder.inttoptr(args[0], data_type.as_pointer()))
    return scalar(addr, dtype), codegen


def array_value(context, builder, arrty, addr, dims):
    """Codegen: a C-contiguous array of type `arrty` over `dims` (LLVM int64 values) at the
    address `addr`, with no owner."""
    ary = context.make_array(arrty)(context, builder)
    data_type = context.get_data_type(arrty.dtype)
    i64 = ir.IntType(64)
    itemsize = ir.Constant(i64, context.get_abi_sizeof(data_type))
    strides, step = [], itemsize
    for dim in reversed(dims):
        strides.insert(0, step)
        step = builder.mul(step, dim)
    populate_array(ary, data=builder.inttoptr(addr, data_type.as_pointer()), shape=dims,
                   strides=strides, itemsize=itemsize, meminfo=None)
    return ary._getvalue()


@njit(cache=True)
def span(n: int, chunks: int, chunk: int, align: int) -> tuple[int, int]:
    """Rows [lo, hi) of chunk `chunk` of `chunks` over `n` rows, bounds on multiples of
    `align` (the last chunk ends at n)."""
    lo = n * chunk // chunks // align * align
    hi = n if chunk == chunks - 1 else n * (chunk + 1) // chunks // align * align
    return lo, hi


def site() -> busy_sites.Site:
    """A driver's call site of a kernel with a task: its parallel arm is the native pool when the
    pool is on and here, so it tries that arm from busy_sites.POOL_WORTH_S of serial time, once
    its busy serial runs have taken busy_sites.TASK_TIER_S (the task's compile to earn)."""
    if config.hot("cpu_native_pool") and native_pool.available():
        return busy_sites.Site(busy_sites.POOL_WORTH_S, busy_sites.TASK_TIER_S)
    return busy_sites.Site()


_tasks: dict = {}  # kernel_task function -> its compiled C task (kept alive with the address)


def task(fn) -> int:
    """The address of the C task compiled from a kernel module's `kernel_task`."""
    compiled = _tasks.get(fn)
    if compiled is None:
        cache = bool(fn.__globals__.get("CACHE"))
        compiled = _tasks[fn] = cfunc(_TASK_SIG, nopython=True, error_model="numpy",
                                      cache=cache)(fn)
    return compiled.address


def run(site: busy_sites.Site, fn, arrays: tuple, rows: int, align: int,
        args: tuple) -> bool:
    """Runs a kernel's `kernel_task` (`fn`) on the native pool for a busy call at `site` over
    `rows` outer rows; False (nothing run: the caller takes its OpenMP arm) when the machine is
    not busy, the pool is off or not here, another thread holds it, or an array is not
    C-contiguous. `arrays` are the kernel's arrays (inputs, then outputs), `args` its sizes
    and scalars."""
    if not site.started or not config.hot("cpu_native_pool") or not native_pool.available():
        return False
    if any(not a.flags.c_contiguous for a in arrays):
        return False
    if fn not in _tasks:  # compiling is not the pool's time: restart the call's clock
        task(fn)
        site.started = time.perf_counter()
    from numbax._src.compiler.cpu.runtime import threads

    native_pool.start(threads.pool_size())
    chunks = max(1, min(-(-rows // align), PARTS_PER_THREAD * (native_pool.workers() + 1)))
    packed: list[int] = [rows, chunks]
    for a in arrays:
        packed.append(a.ctypes.data)
        packed.extend(a.shape)
    keep = []  # the scalars' storage, alive until the job ends
    for x in args:
        if isinstance(x, int):
            packed.append(x)
        else:
            keep.append(np.asarray(x))
            packed.append(keep[-1].ctypes.data)
    return native_pool.run(task(fn), np.array(packed, np.int64), chunks)
