"""Device objects: N virtual CPU devices (pmap's workers) and the default device."""
from __future__ import annotations

import functools

from numbax._src.config import config
from numbax._src.errors import NumbaxValueError


class Device:
    """A place arrays live and programs run; compared by platform and id."""

    platform = "cpu"

    def __init__(self, id: int) -> None:  # noqa: A002 - JAX's attribute name
        self.id = id

    process_index = 0
    device_kind = "cpu"

    def __repr__(self) -> str:
        return f"CpuDevice(id={self.id})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.id == self.id

    def __hash__(self) -> int:
        return hash((self.platform, self.id))


class CpuDevice(Device):
    pass


@functools.cache
def _cpu_devices(count: int) -> tuple[CpuDevice, ...]:
    return tuple(CpuDevice(i) for i in range(count))


def cpu_devices() -> tuple[CpuDevice, ...]:
    count = int(config.num_cpu_devices)
    if count < 1:
        raise NumbaxValueError(
            f"numbax.devices: NUMBAX_NUM_CPU_DEVICES is {count}, expected a positive integer."
        )
    return _cpu_devices(count)


def devices(backend: str | None = None) -> list[Device]:
    """The devices of `backend` (default: the default backend), as numbax.devices()."""
    if backend not in (None, "cpu"):
        raise NumbaxValueError(
            f"numbax.devices: backend {backend!r} is not available on this machine; "
            "available: 'cpu'."
        )
    return list(cpu_devices())


def default_device() -> Device:
    return cpu_devices()[0]


def default_backend() -> str:
    return "cpu"


def device_count(backend: str | None = None) -> int:
    return len(devices(backend))


def local_devices(process_index: int | None = None, backend: str | None = None) -> list[Device]:
    return devices(backend)


def local_device_count(backend: str | None = None) -> int:
    return device_count(backend)


def process_index() -> int:
    return 0


def process_count() -> int:
    return 1
