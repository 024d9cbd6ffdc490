"""numpy's printing, file and buffer I/O as jnp has them: printing and saving are numpy's own
functions (they read arrays through __array__), loading and buffer constructors return
Arrays, and fromfile/fromiter are refused as in JAX (reading a file or an iterator is a side
effect no trace can repeat)."""
from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from numbax._src import dtypes
from numbax._src.array import Array, asarray_value
from numbax._src.errors import NumbaxTypeError, NumbaxValueError

__all__ = [
    "array_repr", "array_str", "printoptions", "get_printoptions", "set_printoptions", "save",
    "savez", "load", "frombuffer", "fromstring", "fromfile", "fromiter", "from_dlpack",
]

# numpy's own functions, as JAX re-exports them: they format and store any array-like.
array_repr = np.array_repr
array_str = np.array_str
printoptions = np.printoptions
get_printoptions = np.get_printoptions
set_printoptions = np.set_printoptions
save = np.save
savez = np.savez


def load(file: Any, *args: Any, **kwargs: Any) -> Any:
    """numpy.load: a .npy file comes back as an Array; .npz archives stay numpy's NpzFile
    (as in JAX). Not traceable (it reads a file).
    """
    out = np.load(file, *args, **kwargs)
    return asarray_value(out) if isinstance(out, np.ndarray) else out


def _dtype(dtype: Any, api: str) -> np.dtype:
    return dtypes.canonicalize_dtype(dtype, context=f"numbax.numpy.{api}")


def frombuffer(buffer: Any, dtype: Any = float, count: int = -1, offset: int = 0) -> Any:
    """numpy.frombuffer: an Array copied from a bytes-like buffer.

    >>> frombuffer(b"\\x01\\x02\\x03", dtype=np.uint8)
    Array([1, 2, 3], dtype=uint8)
    """
    target = _dtype(dtype, "frombuffer")
    # The bytes are read as `dtype` says (float: float64), then converted, as in JAX: with x64
    # off, float64 bytes become float32 values, not float32 bit patterns.
    read = np.dtype(dtype)  # its byte order too
    return asarray_value(np.frombuffer(buffer, dtype=read, count=count, offset=offset), target)


def fromstring(string: str, dtype: Any = float, count: int = -1, *, sep: str) -> Any:
    """numpy.fromstring (text mode: `sep` is required, as in numpy 2).

    >>> fromstring("1 2 3", dtype=int, sep=" ")
    Array([1, 2, 3], dtype=int64)
    """
    if not isinstance(string, str):
        raise NumbaxTypeError(f"numbax.numpy.fromstring: string has type "
                              f"{type(string).__name__}, expected str. Use frombuffer for bytes.")
    return asarray_value(np.fromstring(string, dtype=_dtype(dtype, "fromstring"), count=count,
                                       sep=sep))


def fromfile(*args: Any, **kwargs: Any) -> Any:
    """Not provided, as in JAX: reading a file is a side effect a trace cannot repeat."""
    raise NotImplementedError(
        "numbax.numpy.fromfile is not implemented because reading a file is a side effect that "
        "jit and the other transformations cannot repeat (as in JAX). Use "
        "numbax.numpy.asarray(np.fromfile(...)) outside the transformed function."
    )


def fromiter(*args: Any, **kwargs: Any) -> Any:
    """Not provided, as in JAX: consuming an iterator is a side effect."""
    raise NotImplementedError(
        "numbax.numpy.fromiter is not implemented because consuming an iterator is a side "
        "effect that jit and the other transformations cannot repeat (as in JAX). Use "
        "numbax.numpy.asarray(np.fromiter(...)) outside the transformed function."
    )


def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> Any:
    """numpy.from_dlpack: an Array from any object with __dlpack__ (a CPU buffer); see
    `dlpack_array`."""
    return dlpack_array("numbax.numpy.from_dlpack", x, device, copy)


# jax.dlpack's dtypes: every numeric dtype numbax holds, bfloat16 included
DLPACK_DTYPES = frozenset(np.dtype(t) for t in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
    np.float16, np.float32, np.float64, np.complex64, np.complex128, ml_dtypes.bfloat16))


def is_dlpack_dtype(dtype: Any) -> bool:
    """jax.dlpack.is_supported_dtype: whether arrays of `dtype` cross DLPack."""
    try:
        return np.dtype(dtype) in DLPACK_DTYPES
    except TypeError:
        return False


def dlpack_array(api: str, x: Any, device: Any, copy: bool | None) -> Any:
    """An Array from a DLPack producer's CPU buffer: a copy unless copy=False (as JAX does for
    a numpy producer; Arrays are immutable), else a read-only view of the producer's buffer,
    which the producer must then not write to. device must be None or a CPU device."""
    if not (hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__")):
        raise NumbaxTypeError(f"{api}: the array has type {type(x).__name__}, expected an object "
                              "with __dlpack__ and __dlpack_device__ (a DLPack producer).")
    if device is not None and getattr(device, "platform", "cpu") != "cpu":
        raise NumbaxTypeError(f"{api}: device is {device!r}; only CPU buffers can be imported.")
    buffer = np.from_dlpack(x)
    if not is_dlpack_dtype(buffer.dtype):
        raise NumbaxTypeError(f"{api}: the buffer has dtype {buffer.dtype}, which numbax arrays "
                              "do not hold (jax.dlpack.is_supported_dtype).")
    if copy is False:
        if dtypes.canonicalize_dtype(buffer.dtype) != buffer.dtype:
            raise NumbaxValueError(
                f"{api}: copy=False, but the buffer's {buffer.dtype} becomes "
                f"{dtypes.canonicalize_dtype(buffer.dtype)} with jax_enable_x64 off, which "
                "copies; pass copy=None or enable x64.")
        return Array._from_numpy(buffer)
    return asarray_value(np.array(buffer, copy=True))
