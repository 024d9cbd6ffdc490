"""The one door to numba.cuda: lazy import, the NumPy 2.5 shim, availability, device buffers."""
from __future__ import annotations

import functools
import sys
from typing import Any

import numpy as np

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


# ----------------------------------------------------------------------------- buffers


# A caching allocator: cuMemAlloc of a large buffer costs ~0.4 ms (measured on an H200), more
# than a bandwidth-bound kernel over it. Buffers are kept per (size, dtype); one is free again
# when nothing but the pool references it (drivers drop their temporaries on return; a
# GpuArray, or a CuPy/PyTorch view of one, keeps its buffer referenced).
_POOL: dict[tuple[int, str], list] = {}
_POOL_PER_KEY = 8


def _from_pool(key: tuple[int, str]) -> Any:
    bufs = _POOL.get(key)
    if bufs is None:
        bufs = _POOL[key] = []
    for buf in bufs:
        if sys.getrefcount(buf) <= 3:  # the list, the loop variable, getrefcount's argument
            return buf
    return None


def empty(size: int, dtype) -> Any:
    """A flat device buffer (reused from the pool when one is free); out of memory raises
    MemoryError naming the allocation size."""
    cuda = get_cuda()
    dtype = np.dtype(dtype)
    key = (max(int(size), 0), dtype.str)
    buf = _from_pool(key)
    if buf is not None:
        return buf
    buf = _alloc(cuda, key[0], dtype)
    if len(_POOL[key]) < _POOL_PER_KEY:
        _POOL[key].append(buf)
    return buf


def clear_pool() -> None:
    """Forgets the pooled buffers (their memory is freed once no array uses them)."""
    _POOL.clear()


def _alloc(cuda, size: int, dtype: np.dtype) -> Any:
    try:
        return cuda.device_array(size, dtype=dtype)
    except Exception as e:  # numba's CudaAPIError / driver errors
        if "OUT_OF_MEMORY" in str(e).upper() or "out of memory" in str(e).lower():
            raise MemoryError(
                f"numbax GPU backend: out of device memory allocating {size * dtype.itemsize} "
                f"bytes ({size} x {dtype.name}). Free device arrays or use smaller batches."
            ) from e
        raise


def to_device(value: np.ndarray) -> Any:
    """A flat device copy of a host array."""
    value = np.ascontiguousarray(value).reshape(-1)
    out = _alloc(get_cuda(), value.size, value.dtype)  # unpooled: callers keep it
    if value.size:
        out.copy_to_device(value)
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

_CONSTS: dict[str, Any] = {}


def register_const(value: np.ndarray) -> str:
    """Puts a sub-jaxpr's constant on the device once; generated drivers fetch it by its
    content key (so cached driver modules stay valid across processes)."""
    import hashlib

    value = np.ascontiguousarray(value)
    key = hashlib.sha1(f"{value.dtype.str}{value.shape}".encode() + value.tobytes()).hexdigest()
    if key not in _CONSTS:
        _CONSTS[key] = to_device(value)
    return key


def const(key: str) -> Any:
    return _CONSTS[key]


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


def copy_into(dst: Any, src: Any) -> None:
    """Device-to-device copy of a flat buffer into a view (a scan's ys row)."""
    dst.copy_to_device(src)
