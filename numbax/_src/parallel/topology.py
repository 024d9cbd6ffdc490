"""The processes of a multi-process job as devices.py sees them: which process this is, how many
CPU devices each has, and the global ids of those devices (set by jax.distributed.initialize,
read by devices.py). A leaf module, so the device listing needs nothing of MPI."""
from __future__ import annotations

from collections.abc import Sequence

# JAX packs a CPU device's global id as process_index * 2048 + its local index.
MAX_CPU_DEVICES_PER_PROCESS = 2048


class Topology:
    """The job's processes: this one's index, each one's CPU device count, host and pid."""

    __slots__ = ("process_index", "device_counts", "hosts", "pids")

    def __init__(self, process_index: int, device_counts: Sequence[int], hosts: Sequence[str],
                 pids: Sequence[int]) -> None:
        self.process_index = process_index
        self.device_counts = tuple(device_counts)
        self.hosts = tuple(hosts)
        self.pids = tuple(pids)

    @property
    def process_count(self) -> int:
        return len(self.device_counts)

    @property
    def processes_on_host(self) -> int:
        """How many processes of the job share this process's machine (and its cores)."""
        return self.hosts.count(self.hosts[self.process_index])


_current: Topology | None = None
_devices_listed = False  # whether a device list was handed out (initialize must come first)


def current() -> Topology | None:
    """The job's topology, or None for a single process (no initialize, or after shutdown)."""
    return _current


def set_current(topology: Topology | None) -> None:
    global _current
    _current = topology


def mark_devices_listed() -> None:
    global _devices_listed
    _devices_listed = True


def devices_listed() -> bool:
    return _devices_listed


def device_id(process: int, local: int) -> int:
    return process * MAX_CPU_DEVICES_PER_PROCESS + local


def split_device_id(device_id: int) -> tuple[int, int]:
    """(process index, local index) of a CPU device's global id."""
    return divmod(device_id, MAX_CPU_DEVICES_PER_PROCESS)


def process_index() -> int:
    return 0 if _current is None else _current.process_index


def process_count() -> int:
    return 1 if _current is None else _current.process_count
