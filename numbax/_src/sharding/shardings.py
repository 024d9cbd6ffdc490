"""PartitionSpec (P) and the Sharding classes: which block of a global array each device
holds. NamedSharding maps array dimensions to mesh axes; SingleDeviceSharding puts the whole
array on one device. The block arithmetic (shard_shape, devices_indices_map, replica ids) lives
here, and every other part of numbax asks it."""
from __future__ import annotations

import functools
import math
from typing import Any

from numbax._src import avals
from numbax._src import devices as devices_mod
from numbax._src.errors import (
    DuplicateSpecError,
    IndivisibleError,
    NumbaxTypeError,
    NumbaxValueError,
)
from numbax._src.sharding.mesh import AbstractMesh, AxisType, Mesh


class _Unconstrained:
    def __repr__(self) -> str:
        return "UNCONSTRAINED"

    def __reduce__(self):
        return (_unconstrained, ())


UNCONSTRAINED = _Unconstrained()


def _unconstrained() -> _Unconstrained:
    return UNCONSTRAINED


def _canonical_entry(entry: Any) -> Any:
    if isinstance(entry, (tuple, list)):
        entry = tuple(entry)
        return entry[0] if len(entry) == 1 else (entry or None)
    return entry


class PartitionSpec:
    """How each dimension of an array is split over mesh axes: None (not split), an axis
    name, or a tuple of names (split over their product, the first name outermost).

    >>> PartitionSpec("x", None, ("y", "z"))
    P('x', None, ('y', 'z'))
    """

    __slots__ = ("_partitions", "unreduced", "reduced")
    UNCONSTRAINED = UNCONSTRAINED

    def __init__(self, *partitions: Any, unreduced: Any = frozenset(),
                 reduced: Any = frozenset()) -> None:
        self._partitions = tuple(_canonical_entry(p) for p in partitions)
        self.unreduced = frozenset(unreduced)
        self.reduced = frozenset(reduced)

    def __len__(self) -> int:
        return len(self._partitions)

    def __getitem__(self, i: Any) -> Any:
        return self._partitions[i]

    def __iter__(self):
        return iter(self._partitions)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PartitionSpec) and \
            (self._partitions, self.unreduced, self.reduced) == \
            (other._partitions, other.unreduced, other.reduced)

    def __hash__(self) -> int:
        return hash((self._partitions, self.unreduced, self.reduced))

    def __repr__(self) -> str:
        parts = [repr(p) for p in self._partitions]
        if len(parts) == 1:
            parts[0] += ","
        for name in ("unreduced", "reduced"):
            value = getattr(self, name)
            if value:
                parts.append(f"{name}={set(value)!r}")
        return f"P({', '.join(parts)})"

    __str__ = __repr__

    def __reduce__(self):
        return (_rebuild_spec, (self._partitions, self.unreduced, self.reduced))

    def _normalized(self, ndim: int) -> tuple:
        """The entries padded with None to `ndim` (as tuples of names; () for None)."""
        out = []
        for p in self._partitions[:ndim]:
            if p is None or p is UNCONSTRAINED:
                out.append(())
            else:
                out.append(p if isinstance(p, tuple) else (p,))
        return tuple(out) + ((),) * (ndim - len(out))


def _rebuild_spec(partitions: tuple, unreduced: frozenset, reduced: frozenset) -> PartitionSpec:
    return PartitionSpec(*partitions, unreduced=unreduced, reduced=reduced)


P = PartitionSpec


def spec_names(spec: PartitionSpec) -> list:
    """Every mesh axis name the spec mentions, in order."""
    names = []
    for p in spec:
        if p is None or p is UNCONSTRAINED:
            continue
        names.extend(p if isinstance(p, tuple) else (p,))
    return names


class Sharding:
    """How a global array is laid out over devices (the base class of JAX's shardings)."""

    memory_kind = "device"

    @property
    def device_set(self) -> set:
        raise NotImplementedError

    @property
    def num_devices(self) -> int:
        return len(self.device_set)

    @property
    def addressable_devices(self) -> set:
        """The devices of this process (all of them, but in a multi-process job)."""
        me = devices_mod.process_index()
        return {d for d in self.device_set if d.process_index == me}

    @property
    def is_fully_addressable(self) -> bool:
        return len(self.addressable_devices) == len(self.device_set)

    @property
    def has_addressable_devices(self) -> bool:
        return bool(self.addressable_devices)

    @property
    def _device_assignment(self) -> tuple:
        raise NotImplementedError

    def devices_indices_map(self, global_shape: tuple) -> dict:
        """Each device's block of an array of `global_shape`, as a tuple of slices."""
        return dict(zip(self._device_assignment, self._indices(tuple(global_shape)),
                        strict=True))

    def addressable_devices_indices_map(self, global_shape: tuple) -> dict:
        me = devices_mod.process_index()
        return {d: idx for d, idx in self.devices_indices_map(global_shape).items()
                if d.process_index == me}

    def with_memory_kind(self, kind: str) -> Sharding:
        if kind not in ("device", None):
            raise NumbaxValueError(f"with_memory_kind: kind is {kind!r}; numbax's virtual "
                                   "devices have one memory kind, 'device'.")
        return self

    def is_equivalent_to(self, other: Sharding, ndim: int) -> bool:
        """Whether both shardings put the same blocks on the same devices."""
        count = math.prod(len(s._device_assignment) for s in (self, other))
        shape = (count,) * ndim  # divisible by either sharding's shard counts
        try:
            return self.devices_indices_map(shape) == other.devices_indices_map(shape)
        except ValueError:
            return False


class SingleDeviceSharding(Sharding):
    """The whole array on one device.

    >>> import numbax
    >>> SingleDeviceSharding(numbax.devices()[0])
    SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)
    """

    def __init__(self, device: devices_mod.Device, *, memory_kind: str | None = None) -> None:
        if not isinstance(device, devices_mod.Device):
            raise NumbaxTypeError(f"SingleDeviceSharding: device is a {type(device).__name__},"
                                  " expected a Device from numbax.devices().")
        self._device = device

    @property
    def device_set(self) -> set:
        return {self._device}

    @property
    def _device_assignment(self) -> tuple:
        return (self._device,)

    def _indices(self, global_shape: tuple) -> list:
        return [(slice(None),) * len(global_shape)]

    is_fully_replicated = True

    def shard_shape(self, global_shape: tuple) -> tuple:
        return tuple(global_shape)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SingleDeviceSharding) and other._device == self._device

    def __hash__(self) -> int:
        return hash(("single", self._device))

    def __repr__(self) -> str:
        return f"SingleDeviceSharding(device={self._device!r}, memory_kind=device)"


def make_single_device_sharding(device: devices_mod.Device) -> SingleDeviceSharding:
    return SingleDeviceSharding(device)


class NamedSharding(Sharding):
    """Dimensions of an array split over the named axes of a mesh, as a PartitionSpec says;
    each block is replicated over the axes the spec does not mention.

    >>> import numbax
    >>> NamedSharding(Mesh(numbax.devices()[:1], ("x",)), P("x"))
    NamedSharding(mesh=Mesh('x': 1, axis_types=(Auto,)), spec=P('x',), memory_kind=device)
    """

    def __init__(self, mesh: Mesh | AbstractMesh, spec: PartitionSpec | None = None, *,
                 memory_kind: str | None = None) -> None:
        if not isinstance(mesh, (Mesh, AbstractMesh)):
            raise NumbaxTypeError(f"NamedSharding: mesh is a {type(mesh).__name__}, expected a "
                                  "jax.sharding.Mesh (or AbstractMesh).")
        spec = PartitionSpec() if spec is None else spec
        if not isinstance(spec, PartitionSpec):
            raise NumbaxTypeError(f"NamedSharding: spec is a {type(spec).__name__}, expected a "
                                  "PartitionSpec, e.g. P('x', None).")
        if memory_kind not in (None, "device"):
            raise NumbaxValueError(f"NamedSharding: memory_kind is {memory_kind!r}; numbax's "
                                   "virtual devices have one memory kind, 'device'.")
        names = spec_names(spec)
        for name in names:
            if name not in mesh.axis_names:
                raise NumbaxValueError(f"Resource axis: {name} of {spec} is not found in mesh: "
                                       f"{mesh.axis_names}.")
        for name in names:
            if names.count(name) > 1:
                raise DuplicateSpecError(
                    "A single NamedSharding spec specification can map every mesh axis to at "
                    f"most one positional dimension, but {spec} has duplicate entries for "
                    f"`{name}`")
        self.mesh = mesh
        self.spec = spec

    @property
    def device_set(self) -> set:
        return set(self._device_assignment)

    @property
    def _device_assignment(self) -> tuple:
        if not isinstance(self.mesh, Mesh):
            raise NumbaxValueError(f"{self!r} is abstract: its mesh has no devices. Use a "
                                   "jax.sharding.Mesh.")
        return tuple(self.mesh.devices.flat)

    @property
    def is_fully_replicated(self) -> bool:
        sizes = self.mesh.shape
        return all(sizes[n] == 1 for n in spec_names(self.spec))

    def _factors(self, global_shape: tuple) -> list[int]:
        sizes = self.mesh.shape
        ndim = len(global_shape)
        if len(self.spec) > ndim:
            raise NumbaxValueError(
                f"Sharding {self!r} is only valid for values of rank at least {len(self.spec)}, "
                f"but was applied to a value of rank {ndim}.")
        factors = [math.prod(sizes[n] for n in entry)
                   for entry in self.spec._normalized(ndim)]
        for d, (size, k) in enumerate(zip(global_shape, factors, strict=True)):
            if size % k:
                raise IndivisibleError(
                    f"Sharding {self!r} implies that array axis {d} is partitioned {k} times, "
                    f"but the dimension size is {size} (full shape: {tuple(global_shape)}, "
                    f"per-dimension tiling factors: {factors} should evenly divide the shape)")
        return factors

    def shard_shape(self, global_shape: tuple) -> tuple:
        factors = self._factors(tuple(global_shape))
        return tuple(s // k for s, k in zip(global_shape, factors, strict=True))

    def _coords(self) -> list[dict]:
        names, sizes = self.mesh.axis_names, self.mesh.axis_sizes
        out = []
        for r in range(math.prod(sizes)):
            coord, rest = {}, r
            for name, size in reversed(list(zip(names, sizes, strict=True))):
                coord[name] = rest % size
                rest //= size
            out.append(coord)
        return out

    def block_indices(self, global_shape: tuple) -> list[tuple]:
        """Each device's (mesh order) block as (start, stop) per dimension."""
        return list(_block_indices(self, tuple(int(d) for d in global_shape)))

    def _compute_block_indices(self, global_shape: tuple) -> tuple:
        factors = self._factors(global_shape)
        sizes = self.mesh.shape
        entries = self.spec._normalized(len(global_shape))
        out = []
        for coord in self._coords():
            block = []
            for size, k, entry in zip(global_shape, factors, entries, strict=True):
                pos = 0
                for name in entry:  # the first name is the outermost
                    pos = pos * sizes[name] + coord[name]
                step = size // k
                block.append((pos * step, (pos + 1) * step))
            out.append(tuple(block))
        return tuple(out)

    def _indices(self, global_shape: tuple) -> list:
        entries = self.spec._normalized(len(global_shape))
        return [tuple(slice(lo, hi) if entry else slice(None)
                      for (lo, hi), entry in zip(block, entries, strict=True))
                for block in self.block_indices(global_shape)]

    def replica_ids(self) -> list[int]:
        """Each device's replica number among the devices holding the same block."""
        used = set(spec_names(self.spec))
        rest = [(n, s) for n, s in zip(self.mesh.axis_names, self.mesh.axis_sizes, strict=True)
                if n not in used]
        ids = []
        for coord in self._coords():
            rid = 0
            for name, size in rest:
                rid = rid * size + coord[name]
            ids.append(rid)
        return ids

    def _key(self) -> tuple:
        return self.mesh, self.spec

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NamedSharding) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        mesh = str(self.mesh) if isinstance(self.mesh, Mesh) else repr(self.mesh)
        return f"NamedSharding(mesh={mesh}, spec={self.spec!r}, memory_kind=device)"

    def __reduce__(self):
        return (NamedSharding, (self.mesh, self.spec))


class Shard:
    """One device's block of an array (JAX's jax.Shard): `device`, `index` (a tuple of
    slices into the global array), `replica_id` and `data` (that block as an Array)."""

    __slots__ = ("device", "index", "replica_id", "_source")

    def __init__(self, device, index: tuple, replica_id: int, source: Any) -> None:
        self.device = device
        self.index = index
        self.replica_id = replica_id
        self._source = source

    @property
    def data(self):
        """The block as an Array (None for a device of another process, as in JAX)."""
        if self.device.process_index != devices_mod.process_index():
            return None
        block = self._source._shard_value(self.index)
        return type(self._source)._single(block, self._source.weak_type, self.device)

    def __repr__(self) -> str:
        return (f"Shard(device={self.device!r}, index={self.index}, "
                f"replica_id={self.replica_id}, data={self.data})")


def explicit_part(sharding: NamedSharding, ndim: int) -> NamedSharding | None:
    """The sharding an aval carries in explicit mode: the spec's explicit axes only, over the
    abstract mesh; None when no dimension is sharded over an explicit axis."""
    mesh = sharding.mesh
    explicit = set(mesh.explicit_axes)
    if not explicit:
        return None
    entries = []
    for entry in sharding.spec._normalized(ndim):
        kept = tuple(n for n in entry if n in explicit)
        entries.append(None if not kept else kept[0] if len(kept) == 1 else kept)
    if all(e is None for e in entries):
        return None
    return NamedSharding(mesh.abstract_mesh, PartitionSpec(*entries))


def _trivial(ndim: int) -> NamedSharding:
    return NamedSharding(AbstractMesh((), ()), PartitionSpec(*([None] * ndim)))


avals.trivial_sharding = _trivial


def is_explicit(mesh: Mesh | AbstractMesh) -> bool:
    return any(t == AxisType.Explicit for t in mesh.axis_types)


@functools.lru_cache(maxsize=1024)
def _block_indices(sharding: NamedSharding, global_shape: tuple) -> tuple:
    """NamedSharding.block_indices, kept per (sharding, shape): every SPMD call asks it for each
    argument and result (~15 us each on the 2-core VM, a tenth of a small call's time)."""
    return sharding._compute_block_indices(global_shape)
