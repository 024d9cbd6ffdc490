"""Arrays laid out over several virtual devices, and how they are made: ShardedArray,
device_put with a sharding, reshard, make_array_from_callback and its siblings.

The virtual devices are processes of one machine, so a sharded array keeps its global value in
one buffer (process memory, moved into the shared-memory heap the first time a worker needs
it) and each device's shard is a block of that buffer: replication costs no memory, resharding
costs no copy, and np.asarray of a sharded array is zero-copy. The sharding says which device
computes on which block.

In a multi-process job (jax.distributed) a process holds only its box of an array laid out
over devices of several processes: the smallest block covering its devices' blocks. Such an
array is not fully addressable: its value cannot be read here (RuntimeError, as in JAX; use
multihost_utils.process_allgather), its local shards can, and jit, shard_map and pmap compute
on it. An array whose blocks all live here (replicated ones) is read as usual."""
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

NOT_ADDRESSABLE = (
    "Fetching value for `jax.Array` that spans non-addressable (non process local) devices is "
    "not possible. You can use `jax.experimental.multihost_utils.process_allgather` to print "
    "the global array or use `.addressable_shards` method of jax.Array to inspect the "
    "addressable (process local) shards.")


class ShardedArray(Array):
    """An Array over several virtual devices: the global value (or, across processes, this
    process's box of it, at `_offset`) and its NamedSharding."""

    __slots__ = ("_sharding", "_block", "_offset", "_global_shape")
    _data = Array._value  # the slot itself: `_value` below refuses a box

    @classmethod
    def _make(cls, value: np.ndarray, weak_type: bool, sharding: NamedSharding,
              block: Any = None, offset: tuple | None = None,
              global_shape: tuple | None = None) -> ShardedArray:
        if value.flags.writeable:
            value = value.view()
            value.flags.writeable = False
        self = object.__new__(cls)
        self._data = value
        self._weak_type = weak_type
        self._device = None
        self._sharding = sharding
        self._block = block
        self._offset = offset
        self._global_shape = tuple(global_shape) if offset is not None else None
        return self

    @property
    def _value(self) -> np.ndarray:
        if self._offset is not None:
            raise RuntimeError(NOT_ADDRESSABLE)
        return self._data

    shape = property(lambda self: self._data.shape if self._offset is None
                     else self._global_shape)
    dtype = property(lambda self: self._data.dtype)
    itemsize = property(lambda self: self._data.itemsize)
    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))
    nbytes = property(lambda self: self.size * self._data.itemsize)

    @property
    def sharding(self) -> NamedSharding:
        return self._sharding

    @property
    def aval(self) -> core.ShapedArray:
        return core.ShapedArray(self.shape, self._data.dtype, self._weak_type,
                                explicit_part(self._sharding, self.ndim))

    @property
    def is_fully_addressable(self) -> bool:
        return self._sharding.is_fully_addressable

    @property
    def is_local_box(self) -> bool:
        """Whether only this process's box of the value is here (the value spans processes)."""
        return self._offset is not None

    def _shard_value(self, index: tuple) -> np.ndarray:
        if self._offset is None:
            return self._data[index]
        return self._data[tuple(slice(s.start - o if s.start is not None else None,
                                      s.stop - o if s.stop is not None else None)
                                for s, o in zip(index, self._offset, strict=False))]

    def __repr__(self) -> str:
        if self._offset is None:
            return super().__repr__()
        weak = ", weak_type=True" if self._weak_type else ""
        return f"Array(shape={self.shape}, dtype={self.dtype.name}{weak})"

    __str__ = __repr__

    @property
    def device(self):
        """The sharding, as JAX's Array.device is for an array on several devices."""
        devs = self._sharding._device_assignment
        return devs[0] if len(devs) == 1 else self._sharding

    def devices(self) -> set:
        return self._sharding.device_set

    @property
    def global_shards(self) -> list[Shard]:
        """Every device's shard (those of other processes have data None)."""
        sharding = self._sharding
        indices = sharding.devices_indices_map(self.shape)
        return [Shard(d, idx, r, self) for (d, idx), r in
                zip(indices.items(), sharding.replica_ids(), strict=True)]

    @property
    def addressable_shards(self) -> list[Shard]:
        me = devices.process_index()
        return [s for s in self.global_shards if s.device.process_index == me]

    @property
    def is_fully_replicated(self) -> bool:
        return self._sharding.is_fully_replicated

    def copy(self) -> ShardedArray:
        return ShardedArray._make(self._data.copy(), self._weak_type, self._sharding, None,
                                  self._offset, self._global_shape)

    def __reduce__(self):
        return (_rebuild, (np.array(self._data), self._weak_type, self._sharding, self._offset,
                           self._global_shape))

    def shm(self) -> spmd.Global:
        """The array as a Global of the SPMD engine: moved into the shared-memory heap once."""
        if self._block is None:
            self._block = shm.heap().home(self._data)
        if self._block is None:
            block, out = shm.alloc_array("sharded array", self._data.shape, self._data.dtype,
                                         "the array's data")
            np.copyto(out, self._data)
            out.flags.writeable = False
            self._data, self._block = out, block
        return spmd.Global(self._data, self._block, self._offset)


def _rebuild(value: np.ndarray, weak_type: bool, sharding: NamedSharding,
             offset: tuple | None = None, global_shape: tuple | None = None) -> ShardedArray:
    return ShardedArray._make(value, weak_type, sharding, None, offset, global_shape)


def wrap(value: np.ndarray, weak_type: bool, sharding: Sharding, block: Any = None) -> Array:
    """`value` as an Array laid out by `sharding` (a plain committed Array for one device)."""
    if isinstance(sharding, SingleDeviceSharding):
        return Array._from_numpy(value, weak_type, sharding._device)
    return ShardedArray._make(value, weak_type, sharding, block)


def from_global(g: spmd.Global, weak_type: bool, sharding: NamedSharding,
                shape: tuple) -> Array:
    """An engine result (the whole value, or this process's box of it) as an Array."""
    if g.offset is None:
        return wrap(g.value, weak_type, sharding, g.block)
    return ShardedArray._make(g.value, weak_type, sharding, g.block, g.offset, shape)


def local_box(sharding: Sharding, shape: tuple) -> tuple[tuple, tuple | None]:
    """(shape, offset) of this process's box of an array of `shape` laid out by `sharding`;
    offset None when the whole value lives here."""
    if not isinstance(sharding, NamedSharding) or sharding.is_fully_addressable:
        return tuple(shape), None
    me = devices.process_index()
    blocks = [idx for d, idx in zip(sharding._device_assignment, sharding.block_indices(shape),
                                    strict=True) if d.process_index == me]
    return spmd.box(shape, blocks)


def _box_slices(shape: tuple, offset: tuple) -> tuple:
    return tuple(slice(o, o + s) for o, s in zip(offset, shape, strict=True))


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
    """One leaf laid out by `sharding` (its data copied once, like JAX's device_put). Across
    processes each process keeps its box of the value (the value, or its box, must hold every
    block this process's devices get)."""
    if isinstance(leaf, core.Tracer):
        return reshard_traced(leaf, sharding)
    if isinstance(sharding, SingleDeviceSharding):
        arr = leaf if isinstance(leaf, Array) else asarray_value(leaf)
        return Array._from_numpy(arr._value, arr.weak_type, sharding._device)
    arr = leaf if isinstance(leaf, Array) else asarray_value(leaf)
    check_fits(api, sharding, arr.shape)
    shape, offset = local_box(sharding, arr.shape)
    if isinstance(arr, ShardedArray):
        if offset is None and not arr.is_local_box:  # a new layout of the same value: no copy
            return ShardedArray._make(arr._data, arr.weak_type, sharding, arr._block)
        return _rebox(api, arr, sharding, shape, offset)
    if offset is None:
        return ShardedArray._make(arr._value, arr.weak_type, sharding)
    return ShardedArray._make(arr._value[_box_slices(shape, offset)], arr.weak_type, sharding,
                              None, offset, arr.shape)


def _local_blocks(sharding: NamedSharding, shape: tuple) -> list:
    me = devices.process_index()
    return [idx for d, idx in zip(sharding._device_assignment, sharding.block_indices(shape),
                                  strict=True) if d.process_index == me]


def _rebox(api: str, arr: ShardedArray, sharding: NamedSharding, shape: tuple,
           offset: tuple | None) -> ShardedArray:
    """`arr` (this process's box of it) laid out by `sharding`: a view of the blocks its
    devices get, which must be among the blocks this process holds."""
    have = set(_local_blocks(arr._sharding, arr.shape)) if arr.is_local_box else None
    want = _local_blocks(sharding, arr.shape)
    for block in want if have is not None else ():
        inside = sum(int(np.prod([max(0, min(h1, h2) - max(l1, l2)) for (l1, h1), (l2, h2)
                                  in zip(block, old, strict=True)], dtype=np.int64))
                     for old in have)
        if inside != int(np.prod([h - lo for lo, h in block], dtype=np.int64)):
            raise NumbaxValueError(
                f"{api}: laying out an array of shape {arr.shape} by {sharding!r} gives this "
                f"process's devices the block {block}, which another process holds; numbax "
                "moves data between processes only in collectives. Gather it first "
                "(jax.experimental.multihost_utils.process_allgather), or compute the new "
                "layout inside shard_map.")
    base = arr._offset or (0,) * arr.ndim
    start = offset or (0,) * arr.ndim
    view = arr._data[tuple(slice(w - b, w - b + n)
                           for w, b, n in zip(start, base, shape, strict=True))]
    if offset is None:
        return ShardedArray._make(view, arr.weak_type, sharding)
    return ShardedArray._make(view, arr.weak_type, sharding, None, offset, arr.shape)


def _shift(index: tuple, offset: tuple | None) -> tuple:
    """A device's index (slices of the global array) as slices of a box at `offset`."""
    if offset is None:
        return index
    return tuple(s if s.start is None else slice(s.start - o, s.stop - o)
                 for s, o in zip(index, offset, strict=True))


def _assembled(api: str, shape: tuple, sharding: Sharding, blocks: Sequence[tuple],
               dtype: Any) -> Array:
    """An array laid out by `sharding` from (index, block) pairs for this process's devices."""
    box_shape, offset = local_box(sharding, shape)
    out = None
    for i, (index, block) in enumerate(blocks):
        if out is None:
            out = np.empty(box_shape, dtype=dtype if dtype is not None else block.dtype)
        target = out[_shift(index, offset)]
        if block.shape != target.shape:
            what = (f"data_callback returned shape {block.shape} for index {index}"
                    if api == "make_array_from_callback" else
                    f"arrays[{i}] has shape {block.shape}")
            raise NumbaxValueError(f"{api}: {what}, expected {target.shape} (the block of "
                                   f"device {i} of {sharding!r}).")
        target[...] = block
    if out is None:
        out = np.empty(box_shape, dtype=dtype)
    value = asarray_value(out)._value
    if offset is None:
        return put(asarray_value(value), sharding, api)
    return ShardedArray._make(value, False, sharding, None, offset, shape)


def reshard_traced(x: Any, sharding: Sharding) -> Any:
    """A traced value pinned to `sharding` (device_put under jit)."""
    return sharding_constraint_p.bind(x, sharding=sharding)


def make_array_from_callback(shape: Sequence[int], sharding: Sharding,
                             data_callback: Callable[[tuple], Any], dtype: Any = None) -> Array:
    """An array of `shape` laid out by `sharding`, each of this process's devices' blocks
    given by data_callback(index) (index: a tuple of slices), as JAX calls it for each
    addressable device."""
    shape = tuple(int(d) for d in shape)
    sharding = resolve("make_array_from_callback", sharding)
    check_fits("make_array_from_callback", sharding, shape)
    blocks = [(index, np.asarray(data_callback(index)))
              for index in sharding.addressable_devices_indices_map(shape).values()]
    return _assembled("make_array_from_callback", shape, sharding, blocks, dtype)


def make_array_from_single_device_arrays(shape: Sequence[int], sharding: Sharding,
                                         arrays: Sequence[Any], *, dtype: Any = None) -> Array:
    """An array of `shape` assembled from one array per device of this process in
    `sharding` (in the order of sharding.addressable_devices_indices_map), each the device's
    block."""
    shape = tuple(int(d) for d in shape)
    sharding = resolve("make_array_from_single_device_arrays", sharding)
    check_fits("make_array_from_single_device_arrays", sharding, shape)
    indices = list(sharding.addressable_devices_indices_map(shape).values())
    arrays = list(arrays)
    if len(arrays) != len(indices):
        raise NumbaxValueError(
            f"make_array_from_single_device_arrays: got {len(arrays)} arrays, expected one per "
            f"device of the sharding on this process ({len(indices)}).")
    return _assembled("make_array_from_single_device_arrays", shape, sharding,
                      [(index, np.asarray(a)) for index, a in zip(indices, arrays, strict=True)],
                      dtype)


def make_array_from_process_local_data(sharding: Sharding, local_data: Any,
                                       global_shape: Sequence[int] | None = None) -> Array:
    """An array laid out by `sharding` from this process's data: the block of the global
    array its devices hold (the whole array in a single process). global_shape defaults to
    the local shape scaled by how many processes share each dimension."""
    api = "make_array_from_process_local_data"
    sharding = resolve(api, sharding)
    arr = asarray_value(local_data)
    data = arr._value
    if global_shape is None:
        global_shape = _global_shape(sharding, data.shape)
    global_shape = tuple(int(d) for d in global_shape)
    check_fits(api, sharding, global_shape)
    box_shape, offset = local_box(sharding, global_shape)
    if data.shape != box_shape:
        raise NumbaxValueError(
            f"{api}: local_data has shape {data.shape}, expected {box_shape}: the block of the "
            f"global shape {global_shape} that this process's devices hold under {sharding!r}.")
    if offset is None:
        return put(arr, sharding, api)
    blocks = set(_local_blocks(sharding, global_shape))
    if sum(int(np.prod([h - lo for lo, h in b], dtype=np.int64)) for b in blocks) != data.size:
        raise NumbaxValueError(
            f"{api}: this process's devices hold blocks {sorted(blocks)} of the global array, "
            "which do not form one block, so its local data cannot be one array. Order the "
            "mesh's devices so each process's devices are adjacent along the split axes.")
    return ShardedArray._make(data, arr.weak_type, sharding, None, offset, global_shape)


def _global_shape(sharding: Sharding, local_shape: tuple) -> tuple:
    """The global shape whose block held here has `local_shape`: each dimension scaled by its
    number of blocks over the number of distinct blocks this process holds along it."""
    if not isinstance(sharding, NamedSharding) or sharding.is_fully_addressable:
        return tuple(local_shape)
    grid = tuple(sharding._factors((0,) * len(local_shape)))  # blocks per dimension
    held = _local_blocks(sharding, grid)
    return tuple(size * k // len({b[d] for b in held})
                 for d, (size, k) in enumerate(zip(local_shape, grid, strict=True)))
