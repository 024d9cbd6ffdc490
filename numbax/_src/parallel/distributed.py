"""jax.distributed on MPI: initialize/is_initialized/shutdown, and how the processes of a job
learn that one of them failed.

numbax's processes are MPI's ranks (mpi4py): `initialize` joins MPI_COMM_WORLD, checks it
against the arguments (or the launcher's variables), and shares each process's CPU device count,
host and pid, from which devices.py lists the job's devices. Collectives across processes run in
the parents (crossproc.py), each process's own devices still meeting in shared memory.

Failures: a process that fails (a collective's error, an uncaught exception, SIGTERM) sends a
notice to the others before it stops; a process killed outright is seen dead through its pid by
the processes on its host; a process on another host that stops answering is a timeout. A
process waiting on another (crossproc.py) checks these and raises instead of hanging. After a
failure the job cannot run cross-process work any more, and its processes leave without
MPI_Finalize (which would wait for the dead), so the launcher stops the job."""
from __future__ import annotations

import atexit
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

from numbax._src.errors import JaxRuntimeError
from numbax._src.parallel import cluster, topology

NOTICE_TAG = 7001  # a process failed or is leaving
SETUP_TAG = 7002  # a process is ready to create a group's communicator (crossproc.py)
CHECK_EVERY_S = 0.2
EXIT_GRACE_S = 2.0  # how long a peer that is leaving may still complete a pending collective

_BACKEND_STARTED = (
    "jax.distributed.initialize() must be called before any JAX calls that might initialise "
    "the XLA backend. This includes any computation, but also calls to jax.devices, "
    "jax.device_put, and others.")


class _State:
    """The job as this process knows it (JAX's distributed.global_state)."""

    def __init__(self) -> None:
        self.process_id = 0
        self.num_processes = 1
        self.coordinator_address: str | None = None
        self.initialized = False
        self.MPI: Any = None  # the mpi4py.MPI module, once a job spans processes
        self.world: Any = None  # numbax's duplicate of MPI_COMM_WORLD
        self.failure: str | None = None  # why cross-process work can no longer run
        self.broken = False  # a process failed: leave without MPI_Finalize
        self.notices: dict[int, tuple[str, str, float]] = {}  # process -> (kind, text, time)
        self.peers: list[tuple | None] = []  # (pid, start time) of live-checkable peers
        self.comms: dict[tuple, Any] = {}  # a group's devices -> its communicator
        self.nodes: dict[tuple, Any] = {}  # a group's devices -> node_reduce.Node or None
        self.ready: set[tuple] = set()  # (process, group) setup messages received
        self.shutdown_timeout = 300.0
        self.next_check = 0.0
        self.hooks_installed = False


state = _State()


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None,
               local_device_ids: int | Sequence[int] | None = None,
               cluster_detection_method: str | None = None, initialization_timeout: int = 300,
               heartbeat_timeout_seconds: int = 100, shutdown_timeout_seconds: int = 300,
               coordinator_bind_address: str | None = None, slice_index: int | None = None,
               partition_index: int | None = None) -> None:
    """Joins this process to a multi-process job (JAX's jax.distributed.initialize).

    Under `mpirun`/`mpiexec` (Open MPI, MPICH, Intel MPI) or Slurm's `srun` every argument may
    be left out: they come from the launcher. Call it before anything lists devices or
    computes.

    Args:
      coordinator_address: accepted for JAX compatibility; numbax's processes meet through
        MPI, so it is only recorded.
      num_processes: the number of processes (must equal MPI's).
      process_id: this process's index, 0 .. num_processes - 1 (must equal its MPI rank).
      local_device_ids: as in JAX, it selects GPUs and leaves the CPU devices alone.
      cluster_detection_method: "ompi", "mpich", "slurm", "mpi4py" (MPI itself), or
        "deactivate" to use only the arguments.
      initialization_timeout: seconds to wait for every process to arrive.
      shutdown_timeout_seconds: seconds a process leaving waits for the others.
      heartbeat_timeout_seconds, coordinator_bind_address, slice_index, partition_index:
        accepted for JAX compatibility (MPI and the pid checks replace heartbeats).

    Unlike JAX: the processes must be started by an MPI launcher (or be a single process),
    and need mpi4py (`pip install 'numbax[mpi]'`).
    """
    if topology.devices_listed():
        raise RuntimeError(_BACKEND_STARTED)
    coordinator_address = coordinator_address or os.environ.get("JAX_COORDINATOR_ADDRESS")
    if isinstance(local_device_ids, int):
        local_device_ids = [local_device_ids]
    if local_device_ids is None and os.environ.get("JAX_LOCAL_DEVICE_IDS"):
        local_device_ids = [int(i) for i in os.environ["JAX_LOCAL_DEVICE_IDS"].split(",")]
    known = [c.name for c in cluster.CLUSTERS] + ["deactivate"]
    if cluster_detection_method is not None and cluster_detection_method not in known:
        raise ValueError(
            f"jax.distributed.initialize: cluster_detection_method is "
            f"{cluster_detection_method!r}, expected one of {known} or None.")
    if cluster_detection_method != "deactivate" and \
            None in (coordinator_address, num_processes, process_id):
        env = cluster.detect(cluster_detection_method)
        if env is not None:
            coordinator_address = coordinator_address or env.coordinator_address()
            num_processes = env.process_count() if num_processes is None else num_processes
            process_id = env.process_id() if process_id is None else process_id
    _check_arguments(coordinator_address, num_processes, process_id, local_device_ids)
    if state.initialized:
        raise RuntimeError("distributed.initialize should only be called once.")
    from numbax._src import devices

    count = devices.local_cpu_count()
    if num_processes == 1:
        topo = topology.Topology(0, [count], [socket.gethostname()], [os.getpid()])
    else:
        if cluster_detection_method != "mpi4py" and not cluster.launched_by_mpi():
            # before MPI starts: Open MPI's singleton start spawns a daemon through ssh or
            # rsh, and where neither exists (containers) it aborted the whole process
            raise RuntimeError(_not_launched(num_processes))
        topo = _join_mpi(num_processes, process_id, count, float(initialization_timeout))
    state.process_id, state.num_processes = process_id, num_processes
    state.coordinator_address = coordinator_address
    state.shutdown_timeout = float(shutdown_timeout_seconds)
    state.failure, state.broken = None, False
    state.initialized = True
    topology.set_current(topo)
    _install_hooks()


def _check_arguments(coordinator_address, num_processes, process_id, local_device_ids) -> None:
    """JAX's checks, with JAX's messages."""
    if coordinator_address is None:
        raise ValueError("coordinator_address should be defined.")
    if num_processes is None:
        raise ValueError("Number of processes must be defined.")
    if process_id is None:
        raise ValueError("The process id of the current process must be defined.")
    if not isinstance(process_id, int) or isinstance(process_id, bool):
        raise TypeError("process_id must be a nonnegative int. "
                        f"Got process_id={process_id} of type {type(process_id)}.")
    if not isinstance(num_processes, int) or isinstance(num_processes, bool):
        raise TypeError("num_processes must be a positive int. "
                        f"Got num_processes={num_processes} of type {type(num_processes)}.")
    if not 0 <= process_id < num_processes:
        raise ValueError("process_id and num_processes must be nonnegative, with process_id < "
                         f"num_processes. Got process_id={process_id}, "
                         f"num_processes={num_processes}.")
    for i in local_device_ids or ():
        if not isinstance(i, int) or i < 0:
            raise TypeError(f"jax.distributed.initialize: local_device_ids holds {i!r}, "
                            "expected nonnegative ints (device ids).")


# Open MPI's non-blocking allreduce (libnbc: the cross-process psum runs on MPI_Iallreduce)
# picks its algorithm by message size and chose a slow one for the psum's 1 MB pieces: 64 MB
# over 2 processes took 15 ms, 5.0 ms with Rabenseifner's reduce-scatter + allgather and 6.5
# with a ring (4 processes on 2 cores: 21.5 -> 17.6 ms). Read when MPI initialises (the
# import below); a user's own setting wins, and other MPI libraries ignore it.
_OPEN_MPI_DEFAULTS = {"OMPI_MCA_coll_libnbc_iallreduce_algorithm": "3"}


def _not_launched(num_processes: int) -> str:
    return (f"jax.distributed.initialize: num_processes={num_processes}, but this process was "
            "not started by an MPI launcher, so MPI cannot join it to the others. numbax's "
            f"processes meet through MPI: start them with `mpirun -n {num_processes} python "
            "script.py` (or srun); the other arguments then come from the launcher. (A "
            "launcher other than Open MPI's, MPICH's, Intel MPI's or Slurm's: pass "
            "cluster_detection_method='mpi4py'.)")


def _import_mpi(num_processes: int):
    for name, value in _OPEN_MPI_DEFAULTS.items():
        os.environ.setdefault(name, value)
    try:
        from mpi4py import MPI
    except ImportError as err:
        raise ImportError(
            f"jax.distributed.initialize: num_processes={num_processes} needs mpi4py, which "
            "is not installed. Install it with `pip install 'numbax[mpi]'` (it needs an MPI "
            "library, e.g. `apt-get install openmpi-bin libopenmpi-dev`).") from err
    return MPI


def _join_mpi(num_processes: int, process_id: int, count: int,
              timeout: float) -> topology.Topology:
    """Joins MPI_COMM_WORLD, checks it matches the arguments, waits for every process (up to
    `timeout`) and shares each one's device count, host and pid."""
    MPI = _import_mpi(num_processes)  # noqa: N806 - the module's own name
    world = MPI.COMM_WORLD
    size, rank = world.Get_size(), world.Get_rank()
    if size == 1:
        raise RuntimeError(_not_launched(num_processes))
    if (size, rank) != (num_processes, process_id):
        raise ValueError(
            f"jax.distributed.initialize: num_processes={num_processes} and "
            f"process_id={process_id}, but MPI started {size} processes and this is rank "
            f"{rank}. Leave them out (they come from the launcher) or pass MPI's values.")
    comm = world.Dup()
    comm.Set_errhandler(MPI.ERRORS_RETURN)
    request = comm.Ibarrier()
    deadline = time.monotonic() + timeout
    while not request.Test():
        if time.monotonic() > deadline:
            raise JaxRuntimeError(
                f"DEADLINE_EXCEEDED: jax.distributed.initialize: not all {size} processes "
                f"called initialize within initialization_timeout={timeout:g} s.")
        time.sleep(0.001)
    me = (count, socket.gethostname(), os.getpid(), _start_time(os.getpid()))
    info = comm.allgather(me)
    state.MPI, state.world = MPI, comm
    state.notices, state.comms, state.nodes, state.ready = {}, {}, {}, set()
    state.peers = [(pid, start) if host == me[1] and q != rank and
                   _start_time(pid) == start is not None else None
                   for q, (_, host, pid, start) in enumerate(info)]
    return topology.Topology(rank, [c for c, *_ in info], [h for _, h, *_ in info],
                             [p for *_, p, _ in info])


def _start_time(pid: int) -> int | None:
    """A process's start time (field 22 of /proc/PID/stat): with the pid, it names the process
    (a pid alone may be reused, or belong to another pid namespace)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    if fields[0] in ("Z", "X"):  # a zombie: dead, not yet reaped
        return None
    return int(fields[19])


def is_initialized() -> bool:
    """Whether jax.distributed.initialize ran (and shutdown did not)."""
    return state.initialized


def shutdown() -> None:
    """Leaves the job: waits (up to shutdown_timeout_seconds) for every process to call it too.
    Does nothing when not initialized. The device list stays as it was; work across processes
    raises afterwards."""
    if not state.initialized:
        return
    from numbax._src.parallel import pool

    pool.shutdown_pool()
    if state.world is not None and state.failure is None and \
            _barrier_on_leaving("jax.distributed.shutdown"):
        _free_windows()
    state.initialized = False
    if state.failure is None:
        state.failure = "jax.distributed.shutdown() was called"


def _barrier_on_leaving(api: str) -> bool:
    """Waits for every process to reach this barrier, or for a failure notice, or the timeout.
    Returns whether every process arrived."""
    request = state.world.Ibarrier()
    deadline = time.monotonic() + state.shutdown_timeout
    while not request.Test():
        _receive_notices()
        if any(kind == "failed" for kind, _, _ in state.notices.values()) or \
                _dead_peer() is not None or time.monotonic() > deadline:
            return False
        time.sleep(0.001)
    return True


def _free_windows() -> None:
    """Frees the groups' shared-memory windows (node_reduce.py) once every process is leaving;
    a process that fails leaves them to MPI, which frees them with its processes."""
    from numbax._src.parallel import node_reduce

    node_reduce.close()
    state.nodes = {}


# ----------------------------------------------------------------------------- failures


def _receive_notices() -> None:
    world, MPI = state.world, state.MPI  # noqa: N806
    status = MPI.Status()
    while world.iprobe(source=MPI.ANY_SOURCE, tag=NOTICE_TAG, status=status):
        kind, text = world.recv(source=status.Get_source(), tag=NOTICE_TAG)
        state.notices.setdefault(status.Get_source(), (kind, text, time.monotonic()))
    while world.iprobe(source=MPI.ANY_SOURCE, tag=SETUP_TAG, status=status):
        key = world.recv(source=status.Get_source(), tag=SETUP_TAG)
        state.ready.add((status.Get_source(), key))


def _dead_peer() -> int | None:
    """A process on this host that died (its pid gone or a zombie), if any."""
    for q, peer in enumerate(state.peers):
        if peer is not None and _start_time(peer[0]) != peer[1]:
            return q
    return None


def check(api: str, waiting_for: Sequence[int] = ()) -> None:
    """Raises JaxRuntimeError when the job can no longer run cross-process work: an earlier
    failure, a failure notice, a dead peer on this host, or a process of `waiting_for` that
    left (its script ended) more than EXIT_GRACE_S ago. Rate-limited (a polling loop calls it)."""
    if state.failure is not None:
        raise JaxRuntimeError(
            f"{api}: this multi-process job can no longer run work across processes: "
            f"{state.failure}. Restart the job.")
    now = time.monotonic()
    if now < state.next_check or state.world is None:
        return
    state.next_check = now + CHECK_EVERY_S
    _receive_notices()
    for q, (kind, text, when) in sorted(state.notices.items()):
        if kind == "failed" or (q in waiting_for and now - when > EXIT_GRACE_S):
            _fail_and_raise(api, f"process {q} {text}")
    q = _dead_peer()
    if q is not None:
        _fail_and_raise(api, f"process {q} (pid {state.peers[q][0]}) died")


def _fail_and_raise(api: str, reason: str) -> None:
    fail(reason)
    raise JaxRuntimeError(f"{api}: {reason}, so this process cannot go on with the work it "
                          "shares with it. The job cannot recover; restart it.")


def fail(reason: str) -> None:
    """Marks the job broken and tells the other processes (once)."""
    if state.broken:
        return
    state.failure, state.broken = reason, True
    _notify("failed", f"failed ({reason})" if not reason.startswith("process ") else
            f"stopped after {reason}")


def _notify(kind: str, text: str) -> None:
    """Sends a notice to every other process, waiting at most a second for it to leave."""
    if state.world is None:
        return
    me = state.world.Get_rank()
    payload = (kind, text[:2000])
    requests = []
    for q in range(state.world.Get_size()):
        if q != me:
            try:
                requests.append(state.world.isend(payload, dest=q, tag=NOTICE_TAG))
            except Exception:  # noqa: BLE001 - a broken link: that process learns otherwise
                pass
    deadline = time.monotonic() + 1.0
    while requests and time.monotonic() < deadline:
        requests = [r for r in requests if not r.Test()]
        time.sleep(0.001)


def _install_hooks() -> None:
    """An uncaught exception or SIGTERM (the launcher stopping the job) tells the other
    processes; leaving after a failure skips MPI_Finalize (it would wait for the dead)."""
    if state.hooks_installed or state.world is None:
        return
    state.hooks_installed = True
    previous_hook = sys.excepthook

    def excepthook(kind, value, tb):
        previous_hook(kind, value, tb)
        if state.initialized and not state.broken:
            fail(f"stopped with an uncaught {kind.__name__}: {value}")

    sys.excepthook = excepthook
    if threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _on_sigterm)
    atexit.register(_at_exit)


def _on_sigterm(signum, frame) -> None:
    fail("received SIGTERM (an MPI launcher stops the job when one of its processes fails)")
    raise JaxRuntimeError(
        "numbax.distributed: this process received SIGTERM; an MPI launcher sends it when "
        "another process of the job failed or was killed. The job stops.")


def _at_exit() -> None:
    """Leaving: with every process (a barrier, then MPI_Finalize as usual), or after a
    failure without MPI_Finalize (os._exit), once this process's workers are stopped."""
    if state.world is None:
        return
    if not state.broken:
        if not state.initialized:  # shutdown() already met the others
            return
        _notify("left", "left the job (its script ended)")
        if _barrier_on_leaving("exit"):
            _free_windows()
            return
    from numbax._src.parallel import pool, shm

    pool.shutdown_pool()
    shm.close_heap()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(1)
