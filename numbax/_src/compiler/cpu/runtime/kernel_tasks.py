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

A chunked reduction's chunks are not independent rows: they write partials that are combined
afterwards, and a full reduction's next pass needs the combined value (logsumexp's max, then
its sum of exp). Its module holds `kernel_pool`, compiled code that runs the passes in order,
each pass's chunks as one job (`job`, the tasks `PART_TASKS`), combining partials in chunk
order as the prange variant does (a reduction over the leading axis: one job of its fixed
chunks of rows); `run_parts` holds the pool for it.
"""
from __future__ import annotations

import time
import warnings

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core.errors import NumbaError
from numba.extending import intrinsic
from numba.np.arrayobj import populate_array

from numbax._src.compiler import cache
from numbax._src.compiler.cpu.runtime import busy_sites, native_pool
from numbax._src.config import config

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


@intrinsic
def store(typingctx, addr, value):
    """Stores scalar `value` at `addr`, as `load` reads it back (a pool job's words)."""
    def codegen(context, builder, sig, args):
        data_type = context.get_data_type(value)
        context.pack_value(builder, value, args[1],
                           builder.inttoptr(args[0], data_type.as_pointer()))
        return context.get_dummy_value()
    return types.void(addr, value), codegen


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


def site(*pool_forms) -> busy_sites.Site:
    """A driver's call site of a kernel with a task: its parallel arm is the native pool when the
    pool is on and here, so it tries that arm from busy_sites.POOL_WORTH_S of serial time, once
    its busy serial runs have taken busy_sites.TASK_TIER_S (the task's compile to earn), or
    at once where the disk cache holds every one of `pool_forms` (the kernel's task, or its
    pool kernel and part tasks): those load in milliseconds."""
    if config.hot("cpu_native_pool") and native_pool.available():
        cached = bool(pool_forms) and all(
            cache.has_saved_code(f) if hasattr(f, "py_func") else cache.has_saved_task(f)
            for f in pool_forms)
        return busy_sites.Site(busy_sites.POOL_WORTH_S,
                               0.0 if cached else busy_sites.TASK_TIER_S)
    return busy_sites.Site()


_tasks: dict = {}  # kernel_task function -> its compiled C task (kept alive with the address)


def task(fn) -> int:
    """The address of the C task compiled from a kernel module's `kernel_task`."""
    compiled = _tasks.get(fn)
    if compiled is None:
        compiled = _tasks[fn] = cache.signed_cfunc(fn, _TASK_SIG, nopython=True,
                                                   error_model="numpy")
    return compiled.address


def run(site: busy_sites.Site, fn, arrays: tuple, rows: int, align: int,
        args: tuple) -> bool:
    """Runs a kernel's `kernel_task` (`fn`) on the native pool for a busy call at `site` over
    `rows` outer rows; False (nothing run: the caller takes its OpenMP arm) when the machine is
    not busy, the pool is off or not here, another thread holds it, an array is not
    C-contiguous, or the task did not compile. `arrays` are the kernel's arrays (inputs, then
    outputs), `args` its sizes and scalars."""
    if not _ready(site, fn, arrays):
        return False
    if fn not in _tasks and not _first_use(site, fn, lambda: task(fn)):
        return False
    chunks = max(1, min(-(-rows // align),
                        native_pool.CHUNKS_PER_THREAD * (native_pool.workers() + 1)))
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


_failed: set = set()  # pool forms that did not compile: their kernels keep the OpenMP arm


def _ready(site: busy_sites.Site, fn, arrays: tuple) -> bool:
    """Whether a busy call may run `fn`'s pool form (and the pool's workers are started)."""
    if not site.started or fn in _failed or not config.hot("cpu_native_pool") \
            or not native_pool.available() or any(not a.flags.c_contiguous for a in arrays):
        return False
    from numbax._src.compiler.cpu.runtime import threads

    native_pool.start(threads.pool_size())
    return True


def _first_use(site: busy_sites.Site, fn, compile_) -> bool:
    """Compiles a pool form (`compile_()`) on its first use, then restarts the call's clock
    (compiling is not the pool's time). A form that does not compile is a numbax bug: warned
    of once, and its kernel keeps the OpenMP arm rather than fail the user's call."""
    try:
        compile_()
    except NumbaError as e:
        _failed.add(fn)
        warnings.warn(f"numbax: a fused kernel's native-pool form did not compile ({e}); it "
                      "runs on OpenMP threads. Please report this.", RuntimeWarning,
                      stacklevel=3)
        return False
    site.started = time.perf_counter()
    return True


@njit(nogil=True, cache=True)
def job(base: int, task: int, words: np.ndarray, chunks: int, workers: int) -> None:
    """From compiled code (`kernel_pool`): task(words' address, chunk) for every chunk, on the
    pool whose words are at `base` (the caller holds it: `run_parts`)."""
    native_pool.job(base, task, words.ctypes.data, chunks, workers)


def run_parts(site: busy_sites.Site, fn, tasks: tuple, arrays: tuple, args: tuple,
              size: int, minimum: int) -> bool:
    """Runs a chunked reduction's `kernel_pool` (`fn`, its C tasks `tasks`) for a busy call at
    `site`, a full reduction's `size` elements cut into chunks of at least `minimum` (a
    leading-axis reduction's chunks are fixed: the driver passes 0, 1); False (nothing run) as
    for `run`. The first call compiles the tasks and `fn` by one run of the kernel (which
    only writes its outputs)."""
    if not _ready(site, fn, arrays):
        return False
    workers = native_pool.workers()
    chunks = max(1, min(size // minimum, native_pool.CHUNKS_PER_THREAD * (workers + 1)))
    with native_pool.held() as base:
        if base is None:
            return False
        call = (*arrays, *args, chunks, base, workers)
        if not fn.signatures and not _first_use(
                site, fn, lambda: fn(*call, *(task(t) for t in tasks))):
            return False
        fn(*call, *(task(t) for t in tasks))
    return True
