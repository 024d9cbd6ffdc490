"""Device meshes: jax.sharding.Mesh (an n-d array of devices with named axes), AbstractMesh
(its axis names, sizes and types only), AxisType, make_mesh, and the current mesh that
set_mesh installs (what shardings given as bare PartitionSpecs and explicit-mode types use)."""
from __future__ import annotations

import collections
import contextlib
import enum
import math
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from numbax._src import devices as devices_mod
from numbax._src.errors import NumbaxTypeError, NumbaxValueError


class AxisType(enum.Enum):
    """How a mesh axis is used: Auto (the compiler decides), Explicit (shardings are part of
    the types), Manual (inside shard_map: per-device code with collectives)."""

    Auto = enum.auto()
    Explicit = enum.auto()
    Manual = enum.auto()

    def __repr__(self) -> str:
        return self.name


class ManualAxisType:
    """How a value varies over manual (shard_map) axes: the axes it varies over, and those it
    is a reduced or unreduced partial result over. numbax does not type values this way (see
    docs/sharp_bits.md); the class exists so code that constructs it runs."""

    def __init__(self, *, varying=frozenset(), unreduced=frozenset(),
                 reduced=frozenset()) -> None:
        self.varying = frozenset(varying)
        self.unreduced = frozenset(unreduced)
        self.reduced = frozenset(reduced)

    def __repr__(self) -> str:
        return (f"ManualAxisType(varying={set(self.varying) or '{}'}, "
                f"unreduced={set(self.unreduced) or '{}'}, reduced={set(self.reduced) or '{}'})")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ManualAxisType) and \
            (self.varying, self.unreduced, self.reduced) == \
            (other.varying, other.unreduced, other.reduced)

    def __hash__(self) -> int:
        return hash((self.varying, self.unreduced, self.reduced))


class AbstractDevice:
    """A device seen only by its kind and platform (what an AbstractMesh knows)."""

    def __init__(self, device_kind: str = "cpu", num_cores: int | None = None) -> None:
        self.device_kind = device_kind
        self.num_cores = num_cores

    def __repr__(self) -> str:
        return f"AbstractDevice({self.device_kind!r}, num_cores={self.num_cores})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AbstractDevice) and \
            (self.device_kind, self.num_cores) == (other.device_kind, other.num_cores)

    def __hash__(self) -> int:
        return hash((self.device_kind, self.num_cores))


def _axis_types(api: str, axis_types: Any, n: int, default: AxisType) -> tuple[AxisType, ...]:
    if axis_types is None:
        return (default,) * n
    if isinstance(axis_types, AxisType):
        axis_types = (axis_types,) * n
    axis_types = tuple(axis_types)
    if len(axis_types) != n or not all(isinstance(t, AxisType) for t in axis_types):
        raise NumbaxValueError(
            f"{api}: axis_types is {axis_types!r}, expected a tuple of {n} jax.sharding.AxisType "
            "values (one per axis name).")
    return axis_types


def _axis_names(api: str, axis_names: Any) -> tuple:
    if isinstance(axis_names, str):
        return (axis_names,)
    try:
        return tuple(axis_names)
    except TypeError:
        raise NumbaxTypeError(f"{api}: axis_names is a {type(axis_names).__name__}, expected a "
                              "string or a sequence of strings.") from None


class _MeshBase:
    """What Mesh and AbstractMesh share: names, sizes and types of the axes."""

    axis_names: tuple
    axis_sizes: tuple
    axis_types: tuple

    @property
    def shape(self) -> collections.OrderedDict:
        return collections.OrderedDict(zip(self.axis_names, self.axis_sizes, strict=True))

    @property
    def shape_tuple(self) -> tuple:
        return tuple(zip(self.axis_names, self.axis_sizes, strict=True))

    @property
    def size(self) -> int:
        return math.prod(self.axis_sizes)

    @property
    def empty(self) -> bool:
        return not self.axis_names

    def _types(self, kind: AxisType) -> tuple:
        return tuple(n for n, t in zip(self.axis_names, self.axis_types, strict=True)
                     if t == kind)

    explicit_axes = property(lambda self: self._types(AxisType.Explicit))
    auto_axes = property(lambda self: self._types(AxisType.Auto))
    manual_axes = property(lambda self: self._types(AxisType.Manual))

    def _axes_text(self) -> str:
        axes = ", ".join(f"{n!r}: {s}" for n, s in zip(self.axis_names, self.axis_sizes,
                                                          strict=True))
        types = ", ".join(repr(t) for t in self.axis_types)
        types = f"({types},)" if len(self.axis_types) == 1 else f"({types})"
        return f"{axes}, axis_types={types}"


class AbstractMesh(_MeshBase):
    """A mesh's axis names, sizes and types without its devices (JAX's AbstractMesh)."""

    def __init__(self, axis_sizes: Sequence[int], axis_names: Sequence[str],
                 axis_types: Any = None, *, abstract_device: AbstractDevice | None = None) -> None:
        self.axis_sizes = tuple(int(s) for s in axis_sizes)
        self.axis_names = _axis_names("AbstractMesh", axis_names)
        if len(self.axis_sizes) != len(self.axis_names):
            raise NumbaxValueError(
                f"AbstractMesh: axis_sizes has {len(self.axis_sizes)} entries and axis_names "
                f"{len(self.axis_names)}, expected one size per name.")
        self.axis_types = _axis_types("AbstractMesh", axis_types, len(self.axis_names),
                                      AxisType.Auto)
        self.abstract_device = abstract_device

    @property
    def abstract_mesh(self) -> AbstractMesh:
        return self

    def update_axis_types(self, new: dict) -> AbstractMesh:
        types = tuple(new.get(n, t) for n, t in zip(self.axis_names, self.axis_types,
                                                     strict=True))
        return AbstractMesh(self.axis_sizes, self.axis_names, types,
                            abstract_device=self.abstract_device)

    def _key(self) -> tuple:
        return self.axis_sizes, self.axis_names, self.axis_types, self.abstract_device

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AbstractMesh) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        if self.empty:
            return "AbstractMesh((), axis_types=())"
        device = ""
        if self.abstract_device is not None:
            kind = self.abstract_device.device_kind
            device = (f", device_kind={kind}, num_cores={self.abstract_device.num_cores}, "
                      "platform=cpu")
        return f"AbstractMesh({self._axes_text()}{device})"


class Mesh(_MeshBase):
    """An n-d array of devices whose axes have names (JAX's jax.sharding.Mesh).

    >>> import numbax
    >>> print(Mesh(numbax.devices()[:1], ("x",)))
    Mesh('x': 1, axis_types=(Auto,))
    """

    def __init__(self, devices: Any, axis_names: Any, axis_types: Any = None) -> None:
        if isinstance(devices, np.ndarray):
            arr = devices.astype(object)
        else:
            arr = np.empty(len(devices), dtype=object)
            arr[:] = list(devices)
        self.axis_names = _axis_names("Mesh", axis_names)
        if arr.ndim != len(self.axis_names):
            raise NumbaxValueError(
                "Mesh requires the ndim of its first argument (`devices`) to equal the length "
                f"of its second argument (`axis_names`), but got devices.ndim == {arr.ndim} and "
                f"len(axis_names) == {len(self.axis_names)}.")
        for d in arr.flat if arr.ndim else ():
            if not isinstance(d, devices_mod.Device):
                raise NumbaxTypeError(f"Mesh: devices holds a {type(d).__name__}, expected "
                                      "Device objects from numbax.devices().")
        ids = [d.id for d in arr.flat] if arr.ndim else []
        if len(set(ids)) != len(ids):
            raise NumbaxValueError(f"Mesh: devices lists device ids {ids}, expected each device "
                                   "at most once.")
        arr.flags.writeable = False
        self.devices = arr
        self.axis_sizes = tuple(arr.shape)
        self.axis_types = _axis_types("Mesh", axis_types, len(self.axis_names), AxisType.Auto)
        self._stack: list = []

    @property
    def device_ids(self) -> np.ndarray:
        return np.vectorize(lambda d: d.id, otypes=[int])(self.devices) if self.devices.size \
            else np.zeros(self.devices.shape, int)

    @property
    def local_devices(self) -> list:
        """The mesh's devices of this process."""
        me = devices_mod.process_index()
        return [d for d in self.devices.flat if d.process_index == me] if self.axis_names \
            else []

    @property
    def local_mesh(self) -> Mesh:
        """The sub-mesh of this process's devices (they must form a block of the mesh)."""
        if not self.is_multi_process:
            return self
        me = devices_mod.process_index()
        mine = np.vectorize(lambda d: d.process_index == me, otypes=[bool])(self.devices)
        where = np.nonzero(mine)
        box = tuple(slice(int(i.min()), int(i.max()) + 1) for i in where) if mine.any() \
            else tuple(slice(0, 0) for _ in self.axis_sizes)
        if not mine[box].all():
            raise NumbaxValueError("Devices connected to a single host must form a contiguous "
                                   "subcube of the global device mesh")
        return Mesh(self.devices[box], self.axis_names, self.axis_types)

    @property
    def is_multi_process(self) -> bool:
        """Whether the mesh holds devices of other processes (JAX's definition)."""
        me = devices_mod.process_index()
        return bool(self.axis_names) and any(d.process_index != me for d in self.devices.flat)

    @property
    def abstract_mesh(self) -> AbstractMesh:
        return AbstractMesh(self.axis_sizes, self.axis_names, self.axis_types,
                            abstract_device=AbstractDevice("cpu") if not self.empty else None)

    def update_axis_types(self, new: dict) -> Mesh:
        types = tuple(new.get(n, t) for n, t in zip(self.axis_names, self.axis_types,
                                                     strict=True))
        return Mesh(self.devices, self.axis_names, types)

    def _key(self) -> tuple:
        # kept: a jitted call over sharded arguments hashes its arguments' meshes every call
        key = self.__dict__.get("_key_kept")
        if key is None:
            ids = tuple(d.id for d in self.devices.flat) if self.axis_names else ()
            key = self._key_kept = (ids, self.axis_sizes, self.axis_names, self.axis_types)
        return key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mesh) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        types = ", ".join(repr(t) for t in self.axis_types)
        types = f"({types},)" if len(self.axis_types) == 1 else f"({types})"
        if self.empty:
            return "Mesh(axis_sizes=(), axis_names=())"
        return (f"Mesh(axis_sizes={self.axis_sizes}, axis_names={self.axis_names}, "
                f"axis_types={types})")

    def __str__(self) -> str:
        return "Mesh()" if self.empty else f"Mesh({self._axes_text()})"

    def __enter__(self) -> Mesh:  # `with mesh:`, JAX's legacy form of set_mesh
        self._stack.append(set_mesh(self))
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stack.pop().__exit__(*exc)


EMPTY_MESH = Mesh(np.empty((), dtype=object), ())


def make_mesh(axis_shapes: Sequence[int], axis_names: Sequence[str], axis_types: Any = None, *,
              devices: Sequence[devices_mod.Device] | None = None) -> Mesh:
    """A mesh of the first prod(axis_shapes) devices (or `devices`), its axes Explicit unless
    axis_types says otherwise (JAX 0.10's default).

    >>> print(make_mesh((1,), ("x",)))
    Mesh('x': 1, axis_types=(Explicit,))
    """
    shape = tuple(int(s) for s in axis_shapes)
    names = _axis_names("make_mesh", axis_names)
    if len(shape) != len(names):
        raise NumbaxValueError(
            f"make_mesh: axis_shapes {shape} and axis_names {names} have different lengths, "
            "expected one size per name.")
    available = list(devices) if devices is not None else devices_mod.devices()
    need = math.prod(shape)
    if need > len(available):
        raise NumbaxValueError(
            f"make_mesh: axis_shapes {shape} need {need} devices, but there are "
            f"{len(available)}. Set NUMBAX_NUM_CPU_DEVICES (or jax_num_cpu_devices) to at "
            f"least {need} before the first call that uses devices.")
    if devices is not None and need != len(available):
        raise NumbaxValueError(
            f"make_mesh: axis_shapes {shape} need {need} devices, but devices has "
            f"{len(available)}. Pass exactly {need} devices.")
    grid = np.empty(shape, dtype=object)
    grid.reshape(-1)[:] = available[:need]
    types = _axis_types("make_mesh", axis_types, len(names), AxisType.Explicit)
    return Mesh(grid, names, types)


# ----------------------------------------------------------------------------- the current mesh


class _AbstractMeshes(threading.local):
    def __init__(self) -> None:
        self.stack: list[AbstractMesh] = []  # use_abstract_mesh blocks, innermost last


_current: list = [None]  # the mesh set_mesh installed
_abstract = _AbstractMeshes()


def get_mesh() -> Mesh:
    """The concrete mesh set by set_mesh (an empty Mesh when none is)."""
    return _current[0] if _current[0] is not None else EMPTY_MESH


def get_abstract_mesh() -> AbstractMesh:
    """The abstract mesh in effect (use_abstract_mesh's, else set_mesh's; empty when none)."""
    if _abstract.stack:
        return _abstract.stack[-1]
    mesh = _current[0]
    return mesh.abstract_mesh if mesh is not None else AbstractMesh((), ())


class set_mesh:  # noqa: N801 - JAX's name; a function that also works as a context manager
    """Sets the current mesh: `set_mesh(mesh)` for the rest of the program, or
    `with set_mesh(mesh):` for a block (the previous mesh comes back on exit). Shardings given
    as bare PartitionSpecs (device_put, reshard, jit's in_shardings) and explicit-mode types
    use it.

    >>> import numbax
    >>> with set_mesh(make_mesh((1,), ("x",))):
    ...     print(get_mesh())
    Mesh('x': 1, axis_types=(Explicit,))
    """

    def __init__(self, mesh: Mesh | None) -> None:
        if mesh is not None and not isinstance(mesh, Mesh):
            raise NumbaxTypeError(f"set_mesh: mesh is a {type(mesh).__name__}, expected a "
                                  "jax.sharding.Mesh (or None).")
        self._mesh = mesh
        self._previous = _current[0]
        _current[0] = mesh

    def __enter__(self) -> Mesh | None:
        return self._mesh

    def __exit__(self, *exc: Any) -> None:
        _current[0] = self._previous


@contextlib.contextmanager
def use_abstract_mesh(mesh: AbstractMesh) -> Iterator[AbstractMesh]:
    """Makes `mesh` the abstract mesh of the block (the concrete mesh is unchanged)."""
    if not isinstance(mesh, AbstractMesh):
        raise NumbaxTypeError(f"use_abstract_mesh: mesh is a {type(mesh).__name__}, expected "
                              "an AbstractMesh (mesh.abstract_mesh).")
    _abstract.stack.append(mesh)
    try:
        yield mesh
    finally:
        _abstract.stack.pop()
