"""The one door to numba.cuda: lazy import, the NumPy 2.5 shim, availability, device buffers."""
from __future__ import annotations

import contextlib
import functools
import gc
import sys
import threading
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np

BFLOAT16 = np.dtype(ml_dtypes.bfloat16)  # held on the device as its uint16 bits
_INSTALL = "Install it with `pip install numbax[cuda]` (or `pip install numba-cuda`)."


@functools.cache
def _import_cuda() -> tuple[Any, str | None]:
    """(numba.cuda or None, why not). Applies the np.row_stack shim once, before any compile."""
    if not hasattr(np, "row_stack"):  # NumPy 2.5 removed it; numba-cuda 0.30.x references it
        np.row_stack = np.vstack
    try:
        from numba import cuda
    except ImportError as e:
        return None, f"numba-cuda is not installed ({e}). {_INSTALL}"
    return cuda, None


def simulator_enabled() -> bool:
    """Whether numba.cuda runs kernels in its CPU simulator (NUMBA_ENABLE_CUDASIM=1, tests only)."""
    import numba

    return bool(numba.config.ENABLE_CUDASIM)


@functools.cache
def _usable() -> str | None:
    """None when a GPU can run kernels, else what is missing and how to fix it."""
    cuda, why = _import_cuda()
    if cuda is None:
        return why
    try:
        ok = cuda.is_available()
    except Exception as e:  # noqa: BLE001 - a broken driver reads as "no GPU"
        return f"numba.cuda could not initialise the CUDA driver ({e})."
    if not ok:
        return ("no usable NVIDIA GPU was found (numba.cuda.is_available() is False: no GPU, "
                "no driver, or CUDA_VISIBLE_DEVICES hides it). The CPU backend still works; "
                "run with NUMBAX_PLATFORMS=cpu to silence GPU probing.")
    return None


def gpu_usable() -> bool:
    return _usable() is None


def get_cuda():
    """numba.cuda, or RuntimeError saying what is missing and how to install it."""
    why = _usable()
    if why is not None:
        raise RuntimeError(f"numbax GPU backend: {why}")
    return _import_cuda()[0]


@functools.cache
def gpu_count() -> int:
    cuda = get_cuda()
    if simulator_enabled():
        return 1
    return len(cuda.gpus)


@functools.cache
def gpu_name(device_id: int) -> str:
    cuda = get_cuda()
    if simulator_enabled():
        return "CUDA simulator"
    with cuda.gpus[device_id]:
        name = cuda.get_current_device().name
    return name.decode() if isinstance(name, bytes) else str(name)


# ----------------------------------------------------------------------------- devices

# The GPU this thread allocates on, copies to and launches on (set by `on_device`); drivers'
# `empty` reads it to pick the device's pool. Thread-local, so threads may drive different GPUs.
_TLS = threading.local()


def current_device_id() -> int:
    return getattr(_TLS, "device", 0)


class _DeviceScope:
    """numba's `with cuda.gpus[i]:` plus the thread's current device id, restored on exit."""

    __slots__ = ("_id", "_prev", "_ctx")

    def __init__(self, device_id: int) -> None:
        self._id = device_id

    def __enter__(self) -> None:
        self._ctx = _gpu_context(self._id)
        self._ctx.__enter__()
        self._prev = getattr(_TLS, "device", 0)
        _TLS.device = self._id

    def __exit__(self, *exc) -> None:
        _TLS.device = self._prev
        self._ctx.__exit__(*exc)


def _gpu_context(device_id: int) -> Any:
    return get_cuda().gpus[device_id]


_ONE_GPU = contextlib.nullcontext()


def on_device(device_id: int):
    """The context to allocate, copy and launch on GPU `device_id` in (numba's CUDA context
    of that device); free with one GPU, where numba's default context is the only one."""
    if gpu_count() == 1:
        return _ONE_GPU
    return _DeviceScope(device_id)


def check_device_id(device_id: int, api: str) -> None:
    n = gpu_count()
    if not 0 <= device_id < n:
        raise ValueError(
            f"{api}: device is CudaDevice(id={device_id}), expected one of the {n} visible "
            "GPUs. Pick one from numbax.devices('gpu')."
        )


# ----------------------------------------------------------------------------- buffers


# A caching allocator: cuMemAlloc of a large buffer costs ~0.4 ms (measured on an H200), more
# than a bandwidth-bound kernel over it. Buffers are kept per (device, size, dtype), so a
# buffer of one GPU is never handed to another; one is free again when nothing but the pool
# references it (drivers drop their temporaries on return; a GpuArray, or a CuPy/PyTorch view
# of one, keeps its buffer referenced).
_POOL: dict[tuple[int, int, str], list] = {}
_POOL_PER_KEY = 32  # a training step at batch 4096 holds ~10 temporaries of one size


def _from_pool(key: tuple[int, int, str]) -> Any:
    bufs = _POOL.get(key)
    if bufs is None:
        bufs = _POOL[key] = []
    for buf in bufs:
        if sys.getrefcount(buf) <= 3:  # the list, the loop variable, getrefcount's argument
            return buf
    return None


def empty(size: int, dtype) -> Any:
    """A flat buffer on the current device (reused from its pool when one is free); out of
    memory raises MemoryError naming the allocation size and the device. While this thread
    captures a CUDA graph, the graph's holder hands the buffers out (`holding`)."""
    cuda = get_cuda()
    dtype = np.dtype(dtype)
    key = (current_device_id(), max(int(size), 0), dtype.str)
    hold = getattr(_TLS, "hold", None)
    if hold is not None:
        return hold(key)
    buf = _from_pool(key)
    if buf is not None:
        return buf
    buf = _alloc(cuda, key[1], dtype)
    bufs = _POOL.setdefault(key, [])  # an out-of-memory retry may have cleared the pool
    if len(bufs) < _POOL_PER_KEY:
        bufs.append(buf)
    return buf


def kept_buffer(key: tuple[int, int, str]) -> Any:
    """A buffer of `key` (device, size, dtype) taken out of the pool for good, or a new one:
    what a captured graph allocates stays its own (its replays write there)."""
    buf = _from_pool(key)
    if buf is None:
        return _alloc(get_cuda(), key[1], np.dtype(key[2]))
    bufs = _POOL[key]
    del bufs[next(q for q, b in enumerate(bufs) if b is buf)]
    return buf


@contextlib.contextmanager
def holding(hold: Callable[[tuple[int, int, str]], Any]):
    """This thread's `empty` answered by `hold(key)` inside the block (graph capture)."""
    _TLS.hold = hold
    try:
        yield
    finally:
        _TLS.hold = None


def clear_pool(device_id: int | None = None) -> None:
    """Forgets the pooled buffers of one GPU (all when None); their memory is freed once no
    array uses them."""
    if device_id is None:
        _POOL.clear()
        return
    for key in [k for k in _POOL if k[0] == device_id]:
        del _POOL[key]


def _is_oom(e: BaseException) -> bool:
    """numba's CudaAPIError(CUDA_ERROR_OUT_OF_MEMORY), or the simulator's host MemoryError."""
    text = str(e)
    return isinstance(e, MemoryError) or "OUT_OF_MEMORY" in text.upper() or \
        "out of memory" in text.lower()


def _release_memory(cuda) -> None:
    """Frees what the current device holds only for reuse: its pool, unreachable arrays, and
    numba's deferred deallocations."""
    clear_pool(current_device_id())
    gc.collect()
    deallocations = getattr(cuda.current_context(), "deallocations", None)
    if deallocations is not None:  # the simulator has none
        deallocations.clear()


def _alloc(cuda, size: int, dtype: np.dtype, shape: tuple[int, ...] | None = None) -> Any:
    """cuda.device_array(size, dtype); on out-of-memory frees the pool and retries once, then
    raises MemoryError naming the bytes, the shape and dtype, and the device."""
    for attempt in (0, 1):
        try:
            return cuda.device_array(size, dtype=dtype)
        except Exception as e:  # noqa: BLE001 - numba's CudaAPIError / driver errors
            if not _is_oom(e):
                raise
            if attempt == 0:
                _release_memory(cuda)
                continue
            shape = (size,) if shape is None else tuple(shape)
            raise MemoryError(
                f"numbax GPU backend: out of device memory on CudaDevice(id="
                f"{current_device_id()}) allocating {size * dtype.itemsize} bytes (shape "
                f"{shape}, dtype {dtype.name}), even after freeing the buffer pool. Free device "
                "arrays (del them) or use smaller batches."
            ) from e
    raise AssertionError("unreachable")


def to_device(value: np.ndarray) -> Any:
    """A flat copy of a host array on the current device (bfloat16 as its uint16 bits)."""
    value = np.asarray(value)
    if value.dtype == BFLOAT16:
        value = value.view(np.uint16)
    out = _alloc(get_cuda(), value.size, value.dtype, value.shape)  # unpooled: callers keep it
    if value.size:  # allocated first: a huge broadcast view fails before any host copy
        out.copy_to_device(np.ascontiguousarray(value).reshape(-1))
    return out


def copy(buf: Any) -> Any:
    out = _alloc(get_cuda(), buf.size, buf.dtype)
    if buf.size:
        out.copy_to_device(buf)
    return out


def to_host(buf: Any, shape: tuple[int, ...]) -> np.ndarray:
    if buf.size == 0:
        return np.empty(shape, buf.dtype)
    return buf.copy_to_host().reshape(shape)


def from_cuda_array_interface(obj: Any) -> Any:
    """A zero-copy flat view of a C-contiguous object with __cuda_array_interface__."""
    cuda = get_cuda()
    dev = cuda.as_cuda_array(obj)
    if not dev.is_c_contiguous():
        raise ValueError("device_put: a __cuda_array_interface__ object must be C-contiguous")
    return dev.reshape(dev.size)


def synchronize() -> None:
    get_cuda().synchronize()


# ----------------------------------------------------------------------------- host-driven loops

_CONST_HOST: dict[str, np.ndarray] = {}
_CONSTS: dict[tuple[int, str], Any] = {}


def register_const(value: np.ndarray) -> str:
    """Registers a sub-jaxpr's constant; generated drivers fetch it by its content key (so
    cached driver modules stay valid across processes), put on each device once."""
    import hashlib

    value = np.ascontiguousarray(value)
    key = hashlib.sha1(f"{value.dtype.str}{value.shape}".encode() + value.tobytes()).hexdigest()
    _CONST_HOST.setdefault(key, value)
    return key


def const(key: str) -> Any:
    """The constant `key` on the current device (copied there on first use)."""
    dkey = (current_device_id(), key)
    buf = _CONSTS.get(dkey)
    if buf is None:
        buf = _CONSTS[dkey] = to_device(_CONST_HOST[key])
    return buf


def truthy(buf: Any) -> bool:
    """A device-side predicate copied back (one element, once per loop iteration)."""
    return bool(buf.copy_to_host()[0])


def branch_index(buf: Any, n: int) -> int:
    """lax.cond/switch's index, clamped into range as the eager impl does."""
    if isinstance(buf, np.ndarray):
        value = buf.reshape(-1)[0]
    else:
        value = buf.copy_to_host()[0]
    return int(np.clip(int(value), 0, n - 1))


def pointer(buf: Any) -> int:
    """A device buffer's data pointer."""
    p = buf.device_ctypes_pointer
    return int(getattr(p, "value", p) or 0)


def on_host(fn: Any, shapes: tuple, *bufs: Any) -> tuple:
    """A driver's step run on the host: the device buffers (flat, with their logical `shapes`)
    copied back, `fn` (a primitive's eager implementation) applied, its outputs copied to the
    device. What no CUDA lowering covers still runs, at the cost of the round trip."""
    args = [to_host(b, s) if hasattr(b, "copy_to_host") else b for b, s in zip(bufs, shapes)]
    return tuple(to_device(np.asarray(o)) for o in fn(*args))
