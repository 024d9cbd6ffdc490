"""numbax.distributed: JAX's jax.distributed on MPI (initialize, is_initialized, shutdown).
Start the processes with an MPI launcher (`mpirun -n 2 python script.py`, or srun) and call
initialize() first; docs/architecture.md says how the processes share work."""
from numbax._src.parallel.distributed import initialize, is_initialized, shutdown  # noqa: F401

__all__ = ["initialize", "is_initialized", "shutdown"]
