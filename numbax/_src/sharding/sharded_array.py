"""Arrays laid out over several virtual devices, and how they are made: ShardedArray,
device_put with a sharding, reshard, make_array_from_callback and its siblings.

The virtual devices are processes of one machine, so a sharded array keeps its global value in
one buffer (process memory, moved into the shared-memory heap the first time a worker needs
it) and each device's shard is a block of that buffer: replication costs no memory, resharding
costs no copy, and np.asarray of a sharded array is zero-copy. The sharding says which device
computes on which block."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from numbax._src import core, devices
from numbax._src.array import Array, asarray_value
from numbax._src.errors import NumbaxTypeError, NumbaxValueError
from numbax._src.lax.sharding_ops import sharding_constraint_p
from numbax._src.parallel import shm, spmd
from numbax._src.sharding import mesh as mesh_mod
from numbax._src.sharding.shardings import (
    NamedSharding,
    PartitionSpec,
    Shard,
    Sharding,
    SingleDeviceSharding,
    explicit_part,
)


class ShardedArray(Array):
    """An Array over several virtual devices: the global value and its NamedSharding."""

    __slots__ = ("_sharding", "_block")

    @classmethod
    def _make(cls, value: np.ndarray, weak_type: bool, sharding: NamedSharding,
              block: Any = None) -> ShardedArray:
        if value.flags.writeable:
            value = value.view()
            value.flags.writeable = False
        self = object.__new__(cls)
        self._value = value
        self._weak_type = weak_type
        self._device = None
        self._sharding = sharding
        self._block = block
        return self

    @property
    def sharding(self) -> NamedSharding:
        return self._sharding

    @property
    def aval(self) -> core.ShapedArray:
        return core.ShapedArray(self._value.shape, self._value.dtype, self._weak_type,
                                explicit_part(self._sharding, self._value.ndim))

    @property
    def device(self):
        """The sharding, as JAX's Array.device is for an array on several devices."""
        devs = self._sharding._device_assignment
        return devs[0] if len(devs) == 1 else self._sharding

    def devices(self) -> set:
        return self._sharding.device_set

    @property
    def addressable_shards(self) -> list[Shard]:
        sharding = self._sharding
        indices = sharding.devices_indices_map(self.shape)
        return [Shard(d, idx, r, self) for (d, idx), r in
                zip(indices.items(), sharding.replica_ids(), strict=True)]

    global_shards = addressable_shards

    @property
    def is_fully_replicated(self) -> bool:
        return self._sharding.is_fully_replicated

    def copy(self) -> ShardedArray:
        return ShardedArray._make(self._value.copy(), self._weak_type, self._sharding)

    def __reduce__(self):
        return (_rebuild, (np.array(self._value), self._weak_type, self._sharding))

    def shm(self) -> spmd.Global:
        """The array as a Global of the SPMD engine: moved into the shared-memory heap once."""
        if self._block is None:
            self._block = shm.heap().home(self._value)
        if self._block is None:
            block, out = shm.alloc_array("sharded array", self._value.shape, self._value.dtype,
                                         "the array's data")
            np.copyto(out, self._value)
            out.flags.writeable = False
            self._value, self._block = out, block
        return spmd.Global(self._value, self._block)


def _rebuild(value: np.ndarray, weak_type: bool, sharding: NamedSharding) -> ShardedArray:
    return ShardedArray._make(value, weak_type, sharding)


def wrap(value: np.ndarray, weak_type: bool, sharding: Sharding, block: Any = None) -> Array:
    """`value` as an Array laid out by `sharding` (a plain committed Array for one device)."""
    if isinstance(sharding, SingleDeviceSharding):
        return Array._from_numpy(value, weak_type, sharding._device)
    return ShardedArray._make(value, weak_type, sharding, block)


def sharding_of(x: Any) -> Sharding | None:
    """The sharding of a concrete value: a ShardedArray's, else None (one device)."""
    return x._sharding if isinstance(x, ShardedArray) else None


# ----------------------------------------------------------------------------- placing data


def resolve(api: str, sharding: Any, ndim: int | None = None) -> Sharding:
    """A Sharding from what JAX accepts in its place: a Sharding, a Device, or a bare
    PartitionSpec (over the mesh set_mesh installed)."""
    if isinstance(sharding, Sharding):
        return sharding
    if isinstance(sharding, devices.Device):
        return SingleDeviceSharding(sharding)
    if isinstance(sharding, PartitionSpec):
        mesh = mesh_mod.get_mesh()
        if mesh.empty:
            raise NumbaxValueError(
                f"{api}: got the PartitionSpec {sharding}, but no mesh is set. Pass a "
                "NamedSharding(mesh, spec), or set a mesh with numbax.set_mesh(mesh).")
        return NamedSharding(mesh, sharding)
    raise NumbaxTypeError(
        f"{api}: sharding is a {type(sharding).__name__}, expected a jax.sharding.Sharding "
        "(NamedSharding, SingleDeviceSharding), a PartitionSpec or a Device.")


def check_fits(api: str, sharding: Sharding, shape: tuple) -> None:
    """Raises the error JAX raises when `sharding` cannot lay out an array of `shape`."""
    if isinstance(sharding, NamedSharding):
        try:
            sharding.shard_shape(shape)
        except NumbaxValueError as err:
            if "only valid for values of rank" in str(err):
                raise NumbaxValueError(f"One of {api} args is incompatible with its sharding "
                                       f"annotation {sharding!r}: {err}") from None
            raise


def put(leaf: Any, sharding: Sharding, api: str = "device_put") -> Any:
    """One leaf laid out by `sharding` (its data copied once, like JAX's device_put)."""
    if isinstance(leaf, core.Tracer):
        return reshard_traced(leaf, sharding)
    if isinstance(sharding, SingleDeviceSharding):
        arr = leaf if isinstance(leaf, Array) else asarray_value(leaf)
        return Array._from_numpy(arr._value, arr.weak_type, sharding._device)
    arr = leaf if isinstance(leaf, Array) else asarray_value(leaf)
    check_fits(api, sharding, arr.shape)
    if isinstance(arr, ShardedArray):  # a new layout of the same global value: no copy
        return ShardedArray._make(arr._value, arr.weak_type, sharding, arr._block)
    return ShardedArray._make(arr._value, arr.weak_type, sharding)


def reshard_traced(x: Any, sharding: Sharding) -> Any:
    """A traced value pinned to `sharding` (device_put under jit)."""
    return sharding_constraint_p.bind(x, sharding=sharding)


def make_array_from_callback(shape: Sequence[int], sharding: Sharding,
                             data_callback: Callable[[tuple], Any], dtype: Any = None) -> Array:
    """An array of `shape` laid out by `sharding`, each device's block given by
    data_callback(index) (index: a tuple of slices), as JAX calls it for each device."""
    shape = tuple(int(d) for d in shape)
    sharding = resolve("make_array_from_callback", sharding)
    check_fits("make_array_from_callback", sharding, shape)
    out = None
    for index in sharding.devices_indices_map(shape).values():
        block = np.asarray(data_callback(index))
        if out is None:
            out = np.empty(shape, dtype=dtype if dtype is not None else block.dtype)
        want = out[index].shape
        if block.shape != want:
            raise NumbaxValueError(
                f"make_array_from_callback: data_callback returned shape {block.shape} for "
                f"index {index}, expected {want}.")
        out[index] = block
    if out is None:
        out = np.empty(shape, dtype=dtype)
    return put(asarray_value(out), sharding, "make_array_from_callback")


def make_array_from_single_device_arrays(shape: Sequence[int], sharding: Sharding,
                                         arrays: Sequence[Any], *, dtype: Any = None) -> Array:
    """An array of `shape` assembled from one array per device of `sharding` (in the order of
    sharding.addressable_devices_indices_map), each the device's block."""
    shape = tuple(int(d) for d in shape)
    sharding = resolve("make_array_from_single_device_arrays", sharding)
    check_fits("make_array_from_single_device_arrays", sharding, shape)
    indices = list(sharding.devices_indices_map(shape).values())
    arrays = list(arrays)
    if len(arrays) != len(indices):
        raise NumbaxValueError(
            f"make_array_from_single_device_arrays: got {len(arrays)} arrays, expected one per "
            f"device of the sharding ({len(indices)}).")
    first = np.asarray(arrays[0]) if arrays else np.empty(0)
    out = np.empty(shape, dtype=dtype if dtype is not None else first.dtype)
    for i, (index, a) in enumerate(zip(indices, arrays, strict=True)):
        a = np.asarray(a)
        if a.shape != out[index].shape:
            raise NumbaxValueError(
                f"make_array_from_single_device_arrays: arrays[{i}] has shape {a.shape}, "
                f"expected {out[index].shape} (the block of device {i} of {sharding!r}).")
        out[index] = a
    return put(asarray_value(out), sharding, "make_array_from_single_device_arrays")


def make_array_from_process_local_data(sharding: Sharding, local_data: Any,
                                       global_shape: Sequence[int] | None = None) -> Array:
    """An array laid out by `sharding` from this process's data; numbax runs one process, so
    its local data is the whole array."""
    data = np.asarray(local_data)
    if global_shape is not None and tuple(global_shape) != data.shape:
        raise NumbaxValueError(
            f"make_array_from_process_local_data: global_shape is {tuple(global_shape)} but the "
            f"local data has shape {data.shape}; numbax runs one process, whose data is the "
            "whole array.")
    return put(asarray_value(data), resolve("make_array_from_process_local_data", sharding))
