"""Device objects: N virtual CPU devices (pmap's workers), CUDA GPUs, and the default device."""
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


class CudaDevice(Device):
    """An NVIDIA GPU driven through numba-cuda (numbax's GPU backend)."""

    platform = "gpu"

    @property
    def device_kind(self) -> str:  # the card's name, e.g. "NVIDIA H100 80GB HBM3"
        from numbax._src.compiler.cuda.runtime import memory as cuda_runtime

        return cuda_runtime.gpu_name(self.id)

    def __repr__(self) -> str:
        return f"CudaDevice(id={self.id})"


def gpu_devices() -> list[CudaDevice]:
    """The GPUs, or RuntimeError saying what is missing (numba-cuda, a GPU) and how to fix it."""
    from numbax._src.compiler.cuda.runtime import memory as cuda_runtime

    cuda_runtime.get_cuda()
    return [CudaDevice(i) for i in range(cuda_runtime.gpu_count())]


def devices(backend: str | None = None) -> list[Device]:
    """The devices of `backend` ("cpu", "gpu" or "cuda"); CPU devices when None.

    Unlike JAX: with no argument the CPU devices are listed even when a GPU is usable, since
    uncommitted arguments run on the CPU (pmap's virtual devices are CPU devices)."""
    if backend in ("gpu", "cuda"):
        return list(gpu_devices())
    if backend not in (None, "cpu"):
        raise NumbaxValueError(
            f"numbax.devices: backend {backend!r} is not a numbax backend, expected one of "
            "'cpu', 'gpu', 'cuda'."
        )
    return list(cpu_devices())


def default_device() -> Device:
    """The device of uncommitted arrays: config jax_default_device when it names a CPU device
    (a Device or "cpu"), else CPU device 0. Uncommitted computations run on the CPU."""
    chosen = config.jax_default_device
    cpus = cpu_devices()
    if isinstance(chosen, CpuDevice):
        if chosen.id >= len(cpus):
            raise NumbaxValueError(
                f"numbax: jax_default_device is {chosen!r}, but there are {len(cpus)} CPU "
                "devices. Pick one of numbax.devices() or raise num_cpu_devices.")
        return chosen
    return cpus[0]


def default_backend() -> str:
    """"gpu" when numba-cuda and a GPU are usable and NUMBAX_PLATFORMS/JAX_PLATFORMS does not
    say "cpu"; otherwise "cpu"."""
    platforms = [p.strip() for p in str(config.platforms).split(",") if p.strip()]
    if platforms and platforms[0] == "cpu":
        return "cpu"
    from numbax._src.compiler.cuda.runtime import memory as cuda_runtime

    return "gpu" if cuda_runtime.gpu_usable() else "cpu"


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


def process_indices(backend: str | None = None) -> list[int]:
    """The indices of all processes (numbax runs one process: [0])."""
    return list(range(process_count()))


def host_count(backend: str | None = None) -> int:
    """Deprecated JAX alias of process_count()."""
    return process_count()


def host_id(backend: str | None = None) -> int:
    """Deprecated JAX alias of process_index()."""
    return process_index()


def host_ids(backend: str | None = None) -> list[int]:
    """Deprecated JAX alias of process_indices()."""
    return process_indices()


def print_environment_info(return_string: bool = False) -> str | None:
    """Prints (or returns) the versions numbax runs on, its devices and the platform."""
    import importlib.metadata
    import platform
    import sys

    import numba
    import numpy as np

    try:
        version = importlib.metadata.version("numbax")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown (not installed)"
    cpus = cpu_devices()
    text = "\n".join([
        f"numbax: {version}",
        f"numba:  {numba.__version__}",
        f"numpy:  {np.__version__}",
        f"python: {sys.version}",
        f"device info: cpu-{len(cpus)}, {len(cpus)} local devices",
        f"process_count: {process_count()}",
        f"platform: {platform.uname()}",
    ]) + "\n"
    if return_string:
        return text
    print(text, end="")
    return None
