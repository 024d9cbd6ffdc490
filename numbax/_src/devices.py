"""Device objects: N virtual CPU devices (pmap's workers), CUDA GPUs, and the default device.

In a multi-process job (jax.distributed.initialize) `devices()` lists every process's CPU
devices, with JAX's global ids (process_index * 2048 + local index), and `local_devices()` this
process's."""
from __future__ import annotations

import functools

from numbax._src.config import config
from numbax._src.errors import NumbaxValueError
from numbax._src.parallel import topology


class Device:
    """A place arrays live and programs run; compared by platform and id."""

    platform = "cpu"

    def __init__(self, id: int, process_index: int = 0) -> None:  # noqa: A002 - JAX's name
        self.id = id
        self.process_index = process_index

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
def _cpu_devices(counts: tuple[int, ...]) -> tuple[CpuDevice, ...]:
    return tuple(CpuDevice(topology.device_id(p, i), p)
                 for p, count in enumerate(counts) for i in range(count))


def local_cpu_count() -> int:
    """This process's number of virtual CPU devices (its workers)."""
    count = int(config.num_cpu_devices)
    if count < 1:
        raise NumbaxValueError(
            f"numbax.devices: NUMBAX_NUM_CPU_DEVICES is {count}, expected a positive integer."
        )
    return count


def cpu_devices() -> tuple[CpuDevice, ...]:
    """Every process's CPU devices (this process's alone outside a multi-process job)."""
    count = local_cpu_count()
    topology.mark_devices_listed()
    topo = topology.current()
    if topo is None:
        return _cpu_devices((count,))
    if count != topo.device_counts[topo.process_index]:
        raise NumbaxValueError(
            f"numbax.devices: num_cpu_devices is {count}, but it was "
            f"{topo.device_counts[topo.process_index]} when jax.distributed.initialize ran; the "
            "job's device list is fixed then. Set it before initialize.")
    return _cpu_devices(topo.device_counts)


def local_cpu_devices(process_index: int | None = None) -> tuple[CpuDevice, ...]:
    """The CPU devices of one process (default: this one)."""
    me = topology.process_index() if process_index is None else int(process_index)
    if not 0 <= me < topology.process_count():
        raise NumbaxValueError(
            f"numbax.local_devices: process_index is {process_index}, expected one of "
            f"0..{topology.process_count() - 1} (numbax.process_count() processes).")
    return tuple(d for d in cpu_devices() if d.process_index == me)


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
    cpus = local_cpu_devices()
    if isinstance(chosen, CpuDevice):
        if chosen not in cpus:
            raise NumbaxValueError(
                f"numbax: jax_default_device is {chosen!r}, but this process's CPU devices are "
                f"{list(cpus)}. Pick one of numbax.local_devices() or raise num_cpu_devices.")
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


def local_devices(process_index: int | None = None, backend: str | None = None,
                  host_id: int | None = None) -> list[Device]:
    """The devices of process `process_index` (default: this process)."""
    if backend in ("gpu", "cuda"):
        return devices(backend)
    devices(backend)  # rejects an unknown backend
    return list(local_cpu_devices(host_id if process_index is None else process_index))


def local_device_count(backend: str | None = None) -> int:
    return len(local_devices(backend=backend))


def process_index(backend: str | None = None) -> int:
    """This process's index in a multi-process job (0 outside one)."""
    return topology.process_index()


def process_count(backend: str | None = None) -> int:
    """The number of processes of the job (1 unless jax.distributed.initialize joined more)."""
    return topology.process_count()


def process_indices(backend: str | None = None) -> list[int]:
    """The indices of all processes of the job."""
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
        f"device info: cpu-{len(cpus)}, {len(local_cpu_devices())} local devices",
        f"process_count: {process_count()}",
        f"platform: {platform.uname()}",
    ]) + "\n"
    if return_string:
        return text
    print(text, end="")
    return None
