"""How jax.distributed.initialize finds its arguments when they are left out: the environment
variables MPI launchers and Slurm set for each process (Open MPI's mpirun, MPICH/Intel MPI's
Hydra mpiexec, Slurm's srun), and, on request (cluster_detection_method="mpi4py"), MPI itself.
Only config.py reads the environment elsewhere; these variables belong to the launcher, not to
numbax's options, so they are read here, where JAX reads them."""
from __future__ import annotations

import os
import socket


class ClusterEnv:
    """A launcher: whether it started this process, and the job's size and this rank."""

    name = ""
    opt_in_only = False  # tried only when cluster_detection_method names it
    size_var = rank_var = local_rank_var = ""
    required: tuple[str, ...] = ()

    @classmethod
    def is_present(cls) -> bool:
        return all(v in os.environ for v in (cls.size_var, cls.rank_var, *cls.required))

    @classmethod
    def process_count(cls) -> int:
        return int(os.environ[cls.size_var])

    @classmethod
    def process_id(cls) -> int:
        return int(os.environ[cls.rank_var])

    @classmethod
    def local_process_id(cls) -> int | None:
        value = os.environ.get(cls.local_rank_var)
        return int(value) if value is not None else None

    @classmethod
    def coordinator_address(cls) -> str:
        """Informational only: numbax's processes meet through MPI, not a coordinator."""
        return f"{socket.gethostname()}:{os.environ.get('JAX_COORDINATOR_PORT', '0')}"


class OpenMPI(ClusterEnv):
    name = "ompi"
    size_var, rank_var, local_rank_var = ("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
                                          "OMPI_COMM_WORLD_LOCAL_RANK")


class Hydra(ClusterEnv):
    """MPICH's and Intel MPI's launcher (mpiexec.hydra)."""

    name = "mpich"
    size_var, rank_var, local_rank_var = "PMI_SIZE", "PMI_RANK", "MPI_LOCALRANKID"


class Slurm(ClusterEnv):
    name = "slurm"
    size_var, rank_var, local_rank_var = "SLURM_NTASKS", "SLURM_PROCID", "SLURM_LOCALID"
    required = ("SLURM_JOB_ID", "SLURM_STEP_NODELIST", "SLURM_LOCALID")  # inside an srun step


class Mpi4py(ClusterEnv):
    """MPI's own view (any launcher mpi4py's MPI understands); opt-in, as in JAX."""

    name = "mpi4py"
    opt_in_only = True

    @classmethod
    def is_present(cls) -> bool:
        import importlib.util

        return importlib.util.find_spec("mpi4py") is not None

    @classmethod
    def process_count(cls) -> int:
        from mpi4py import MPI

        return MPI.COMM_WORLD.Get_size()

    @classmethod
    def process_id(cls) -> int:
        from mpi4py import MPI

        return MPI.COMM_WORLD.Get_rank()

    @classmethod
    def local_process_id(cls) -> int | None:
        from mpi4py import MPI

        return MPI.COMM_WORLD.Split_type(MPI.COMM_TYPE_SHARED).Get_rank()


CLUSTERS = (OpenMPI, Hydra, Slurm, Mpi4py)


def detect(method: str | None) -> type[ClusterEnv] | None:
    """The launcher that started this process: the one `method` names, else the first
    (not opt-in) one whose variables are set; None when there is none."""
    if method is not None:
        env = next((c for c in CLUSTERS if c.name == method), None)
        return env if env is not None and env.is_present() else None
    return next((c for c in CLUSTERS if not c.opt_in_only and c.is_present()), None)


def launched_by_mpi() -> bool:
    """Whether an MPI launcher (or srun) started this process, so MPI can join the job."""
    return any(c.is_present() for c in CLUSTERS if not c.opt_in_only)


def launcher_variables() -> tuple[str, ...]:
    """Prefixes of the variables a launcher gives its ranks, which worker processes must not
    inherit (an MPI library loaded there would take itself for a rank)."""
    return ("OMPI_", "PMIX_", "PMI_", "MPI_LOCALRANKID", "HYDRA_", "OPAL_", "PRTE_")
