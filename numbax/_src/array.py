"""numbax.Array: an immutable numpy buffer plus its device; operators come from array_methods."""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from numbax._src import core, devices
from numbax._src.dtypes import kind_of
from numbax._src.errors import IntegerOverflowError, NumbaxTypeError, NumbaxValueError
from numbax._src.sharding.shardings import Shard, SingleDeviceSharding


class Array:
    """An immutable array. `np.asarray(a)` is a zero-copy, read-only view of its buffer."""

    __slots__ = ("_value", "_weak_type", "_device", "_aval", "__weakref__")
    __array_priority__ = 100

    @classmethod
    def _from_numpy(cls, value: np.ndarray, weak_type: bool = False, device=None) -> Array:
        """Wraps `value` without copying; a writeable buffer is wrapped through a read-only view."""
        if value.flags.writeable:
            value = value.view()
            value.flags.writeable = False
        self = object.__new__(cls)
        self._value = value
        self._weak_type = weak_type
        self._device = device
        return self

    def __init__(self, *args, **kwargs) -> None:
        raise TypeError("numbax.Array cannot be constructed directly; use numbax.numpy.asarray.")

    @property
    def aval(self) -> core.ShapedArray:
        # made once per Array (it never changes): an eager op asks for it several times
        try:
            return self._aval
        except AttributeError:
            aval = self._aval = core.ShapedArray(self._value.shape, self._value.dtype,
                                                 self._weak_type)
            return aval

    shape = property(lambda self: self._value.shape)
    dtype = property(lambda self: self._value.dtype)
    ndim = property(lambda self: self._value.ndim)
    size = property(lambda self: self._value.size)
    itemsize = property(lambda self: self._value.itemsize)
    nbytes = property(lambda self: self._value.nbytes)
    weak_type = property(lambda self: self._weak_type)

    @property
    def device(self):
        return self._device if self._device is not None else devices.default_device()

    def devices(self) -> set:
        return {self.device}

    @property
    def sharding(self) -> SingleDeviceSharding:
        return SingleDeviceSharding(self.device)

    @property
    def addressable_shards(self) -> list[Shard]:
        return [Shard(self.device, (slice(None),) * self.ndim, 0, self)]

    global_shards = addressable_shards
    is_fully_addressable = True
    is_fully_replicated = True

    def _shard_value(self, index: tuple) -> np.ndarray:
        """The block of the value at `index` (slices of the global array)."""
        return self._value[index]

    @classmethod
    def _single(cls, value, weak_type: bool, device) -> Array:
        """A block of an array, as one device's Array (Shard.data)."""
        return Array._from_numpy(value, weak_type, device)

    def block_until_ready(self) -> Array:
        return self

    def is_deleted(self) -> bool:
        return False

    # JAX's runtime methods. numbax computes eagerly, so an Array is always ready.
    def is_ready(self) -> bool:
        return True

    def copy_to_host_async(self) -> None:
        """Nothing to start: the value is on the host, or copied there when read."""

    @property
    def committed(self) -> bool:
        """Whether device_put placed this Array on a device (jit then runs there)."""
        return self._device is not None

    def platform(self) -> str:
        return self.device.platform

    def on_device_size_in_bytes(self) -> int:
        return self.nbytes

    def unsafe_buffer_pointer(self) -> int:
        """The buffer's address (valid while this Array lives)."""
        return self._value.ctypes.data

    def addressable_data(self, index: int) -> Array:
        return self.addressable_shards[index].data

    def to_device(self, device, *, stream=None) -> Array:
        from numbax._src.transfer import device_put

        return device_put(self, device)

    def clone(self) -> Array:
        return self.copy()

    def delete(self) -> None:
        """Frees the buffer; every later use of this Array raises RuntimeError."""
        if not self.is_deleted():
            Array._value.__set__(self, None)
            self.__class__ = _UserDeletedArray

    def tobytes(self, order: str = "C") -> bytes:
        return self._value.tobytes(order)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        if copy:
            return np.array(self._value, dtype=dtype)
        if dtype is not None and np.dtype(dtype) != self._value.dtype:
            return self._value.astype(dtype)
        return self._value

    def item(self, *args) -> Any:
        return self._value.item(*args)

    def tolist(self) -> Any:
        return self._value.tolist()

    def copy(self) -> Array:
        return Array._from_numpy(self._value.copy(), self._weak_type, self._device)

    def __bool__(self) -> bool:
        return bool(self._value)

    def __int__(self) -> int:
        return int(self._value)

    def __float__(self) -> float:
        return float(self._value)

    def __complex__(self) -> complex:
        return complex(self._value)

    def __index__(self) -> int:
        if kind_of(self._value.dtype) not in "iub":
            raise TypeError(f"only integer arrays can be used as an index, got {self.dtype}")
        return operator.index(self._value[()])

    def __len__(self) -> int:
        if self._value.ndim == 0:
            raise TypeError("len() of unsized object (a 0-d array)")
        return len(self._value)

    def __iter__(self):
        if self._value.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self._value.shape[0]))

    def __hash__(self) -> int:
        raise TypeError("unhashable type: numbax.Array (use a tuple or a static argument)")

    def __setitem__(self, idx, value) -> None:
        raise TypeError(
            "numbax.Array does not support item assignment: arrays are immutable. "
            "Use x = x.at[idx].set(value) instead of x[idx] = value."
        )

    def __format__(self, spec: str) -> str:
        if self._value.ndim == 0:
            return format(self._value[()], spec)
        return format(str(self), spec)

    def __str__(self) -> str:
        return str(self._value)

    def __repr__(self) -> str:
        # laid out as JAX's Array.__repr__: the body wrapped at numpy's linewidth with a
        # trailing "," as its suffix, the dtype on the last line when it fits there, else on
        # a line of its own indented under the body; empty arrays show their shape
        prefix = "Array("
        weak = ", weak_type=True" if self._weak_type else ""
        dtype_str = f"dtype={self.dtype.name}{weak}"
        line_width = np.get_printoptions()["linewidth"]
        if self._value.size == 0:
            body = f"[], shape={self.shape}"
        else:
            body = np.array2string(self._value, prefix=prefix, suffix=",", separator=", ",
                                   max_line_width=line_width)
        last_line_len = len(body) - body.rfind("\n") + 1
        sep = " " * len(prefix) if last_line_len + len(dtype_str) + 2 > line_width else " "
        return f"{prefix}{body},{sep}{dtype_str})"

    def __reduce__(self):
        return (_rebuild, (np.array(self._value), self._weak_type))

    def __dlpack__(self, *args, **kwargs):
        return self._value.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._value.__dlpack_device__()


class _DeletedArray(Array):
    """What a donated or deleted Array becomes (jit's donate_argnums, Array.delete): its
    buffer now holds a result or is freed, and every use raises. Swapping the class keeps
    live Arrays free of any per-use check."""

    __slots__ = ()

    @property
    def _value(self):
        raise RuntimeError(
            "Array has been deleted (it was donated to a jitted or pmapped function). Use the "
            "function's result instead, or drop donate_argnums to keep the argument alive."
        )

    def is_deleted(self) -> bool:
        return True

    def __repr__(self) -> str:
        return "Array(<deleted>)"


def _deleted(self):
    raise RuntimeError("Array has been deleted (its delete() method was called); use an "
                       "array that is still alive.")


class _UserDeletedArray(_DeletedArray):
    """An Array after its delete() method: every use raises."""

    __slots__ = ()
    _value = property(_deleted)


def _rebuild(value: np.ndarray, weak_type: bool) -> Array:
    return Array._from_numpy(value, weak_type)


def unaliased(value: np.ndarray, sources: Any) -> np.ndarray:
    """`value`, copied when it may share memory with one of `sources` that is a caller's numpy
    array: a result (a reshape, slice or identity of an input) must not change when the caller
    later writes to their array. Arrays' own buffers are immutable and never force a copy."""
    for s in sources:
        if isinstance(s, np.ndarray) and np.may_share_memory(value, s):
            return value.copy()
    return value


def asarray_value(x: Any, dtype: Any = None) -> Array:
    """Makes a concrete Array from array-like data (copying numpy input, like JAX)."""
    if isinstance(x, Array) and dtype is None:
        return x
    if isinstance(x, core.Tracer):
        raise NumbaxTypeError("asarray_value needs a concrete value, got a tracer")
    weak = (isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic)
            and dtype is None)
    value = np.array(x, copy=True)
    if isinstance(x, (int, list, tuple)) and not isinstance(x, bool) and (
            value.dtype == object or kind_of(value.dtype) in "iuf"):
        value = _python_ints_in_range(x, value, dtype)
    if kind_of(value.dtype) not in "biufc":
        raise NumbaxTypeError(
            f"numbax.numpy.asarray: data of dtype {value.dtype} is not numeric. numbax arrays "
            "hold booleans, integers, floats or complex numbers."
        )
    from numbax._src import dtypes

    target = dtypes.canonicalize_dtype(dtype if dtype is not None else value.dtype,
                                       context="numbax.numpy.asarray")
    if value.dtype != target:
        value = value.astype(target)
    return Array._from_numpy(value, weak)


def _leaves(x: Any):
    """The leaves of a Python scalar or (nested) list/tuple."""
    if isinstance(x, (list, tuple)):
        for item in x:
            yield from _leaves(item)
    else:
        yield x


def _python_ints_in_range(x: Any, value: np.ndarray, dtype: Any) -> np.ndarray:
    """`value` (np.array of `x`, a Python int or a list of scalars) after JAX's checks of its
    Python ints: each must fit the integer dtype it becomes (the default integer dtype when
    `dtype` is None and no float is among them), else IntegerOverflowError (JAX's
    OverflowError); big ints beside floats, or with a float `dtype`, become floats."""
    from numbax._src import dtypes

    explicit = dtype is not None
    if explicit:
        target = dtypes.canonicalize_dtype(dtype, context="numbax.numpy.asarray")
        if kind_of(target) not in "iu":
            return np.array(x, dtype=target) if value.dtype == object else value
        if kind_of(value.dtype) in "iu":
            if not value.size:
                return value
            lo, hi = int(value.min()), int(value.max())
            info = np.iinfo(target)
            if info.min <= lo and hi <= info.max:
                return value
    else:
        target = dtypes.default_int_dtype()
        info = np.iinfo(target)
        if kind_of(value.dtype) == "i" and value.dtype.itemsize <= target.itemsize:
            return value
        if kind_of(value.dtype) == "f" and (not value.size or np.abs(value).max() < 2.0**31):
            return value
    leaves = list(_leaves(x))
    inexact = [v for v in leaves if isinstance(v, (float, complex, np.inexact))]
    if inexact and not explicit:  # JAX: floats beside big ints make a float array
        if value.dtype != object:
            return value
        is_complex = any(isinstance(v, (complex, np.complexfloating)) for v in inexact)
        return np.array(x, dtype=np.complex128 if is_complex else np.float64)
    info = np.iinfo(target)
    for v in leaves:
        if isinstance(v, int) and not isinstance(v, bool) and not info.min <= v <= info.max:
            what = f"dtype {target}" if explicit else f"{target} (the default integer dtype)"
            raise IntegerOverflowError(
                f"numbax.numpy.asarray: Python int {v} is out of bounds for {what}, whose "
                f"range is [{info.min}, {info.max}]. Pass a value in that range, a float "
                f"(e.g. float({v})), or a dtype that holds it (a wider integer dtype, e.g. "
                "dtype=numbax.numpy.uint64 for ints up to 2**64 - 1, or a float dtype)."
            )
    return value


def as_result(x: Any) -> Any:
    """x as a function's result when the function leaves it unchanged (floor of an integer,
    stop_gradient of one): an Array or tracer in its canonical dtype, never the caller's own
    numpy array or scalar, which the caller may write to later."""
    if isinstance(x, (Array, core.Tracer)):
        return x
    return asarray_value(x)


def committed_device(values, api: str, what: str = "argument"):
    """The device the committed Arrays among `values` share (None when none is committed).

    JAX's rule: an Array placed by device_put(x, device), and every GpuArray, is committed;
    numpy arrays, scalars and Arrays never placed are not, and move to the committed device.
    Two different committed devices raise ValueError naming both."""
    first = None
    for i, x in enumerate(values):
        dev = x._device if isinstance(x, Array) else None
        if dev is None:
            continue
        if first is None:
            first = i, dev
        elif dev != first[1]:
            j, other = first
            raise NumbaxValueError(
                f"{api}: {what} {j} ({values[j].dtype.name}{list(values[j].shape)}) is "
                f"committed to {other} and {what} {i} ({x.dtype.name}{list(x.shape)}) to "
                f"{dev}, expected one device. Move them to one device with "
                "numbax.device_put(x, device) first (numpy arrays and uncommitted Arrays move "
                "by themselves)."
            )
    return None if first is None else first[1]


class GpuArray(Array):
    """An Array whose buffer lives on a GPU: a flat numba device array plus its logical shape
    and dtype (a bfloat16 array's buffer is uint16: numba-cuda types no bfloat16).
    It is always committed to its device (`_device`, a CudaDevice): jit and eager ops run there.

    `_value` (what eager ops and numpy read) copies to the host once and keeps the copy, so
    every CPU code path works unchanged; jit on the GPU reads `_dbuf` without copying."""

    __slots__ = ("_dbuf", "_shape", "_dtype", "_host")
    created = False  # whether any GpuArray was made in this process

    @classmethod
    def _from_buffer(cls, buf, shape: tuple[int, ...], weak_type: bool, device,
                     dtype=None) -> GpuArray:
        GpuArray.created = True  # from now on eager ops on GpuArrays stay on the GPU (dispatch)
        self = object.__new__(cls)
        self._dbuf = buf
        self._shape = tuple(shape)
        self._dtype = np.dtype(buf.dtype if dtype is None else dtype)
        self._weak_type = weak_type
        self._device = device
        self._host = None
        return self

    @property
    def _value(self) -> np.ndarray:
        if self._host is None:
            from numbax._src.compiler.cuda.runtime import memory as cuda_runtime

            with cuda_runtime.on_device(self._device.id):
                host = cuda_runtime.to_host(self._dbuf, self._shape).view(self._dtype)
            host.flags.writeable = False
            self._host = host
        return self._host

    @property
    def aval(self) -> core.ShapedArray:
        return core.ShapedArray(self._shape, self._dtype, self._weak_type)

    shape = property(lambda self: self._shape)
    dtype = property(lambda self: self._dtype)
    ndim = property(lambda self: len(self._shape))
    size = property(lambda self: int(np.prod(self._shape, dtype=np.int64)))
    nbytes = property(lambda self: self.size * self._dbuf.dtype.itemsize)

    @property
    def device(self):
        return self._device

    def block_until_ready(self) -> GpuArray:
        from numbax._src.compiler.cuda.runtime import memory as cuda_runtime

        with cuda_runtime.on_device(self._device.id):
            cuda_runtime.synchronize()
        return self

    def copy(self) -> GpuArray:
        from numbax._src.compiler.cuda.runtime import memory as cuda_runtime

        with cuda_runtime.on_device(self._device.id):
            buf = cuda_runtime.copy(self._dbuf)
        return GpuArray._from_buffer(buf, self._shape, self._weak_type, self._device,
                                     self._dtype)

    @property
    def __cuda_array_interface__(self) -> dict:
        iface = dict(self._dbuf.__cuda_array_interface__)
        iface["shape"] = self._shape
        iface["strides"] = None
        return iface

    def __reduce__(self):
        return (_rebuild, (np.array(self._value), self._weak_type))

    def __dlpack__(self, *args, **kwargs):
        raise BufferError("numbax GpuArray: use __cuda_array_interface__ (DLPack not supported)")

    def __dlpack_device__(self):
        return (2, self._device.id)  # kDLCUDA

    def unsafe_buffer_pointer(self) -> int:
        """The device buffer's address (valid while this GpuArray lives)."""
        return self._dbuf.__cuda_array_interface__["data"][0]

    def delete(self) -> None:
        """Frees the device buffer (and any host copy); every later use raises RuntimeError."""
        if not self.is_deleted():
            GpuArray._dbuf.__set__(self, None)
            GpuArray._host.__set__(self, None)
            self.__class__ = _DeletedGpuArray


class _DeletedGpuArray(GpuArray):
    """A GpuArray after its delete() method: its buffers are gone and every use raises."""

    __slots__ = ()
    _value = property(_deleted)
    _dbuf = property(_deleted)

    def is_deleted(self) -> bool:
        return True

    def __repr__(self) -> str:
        return "Array(<deleted>)"
