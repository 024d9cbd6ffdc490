"""numbax.experimental.multihost_utils: JAX's jax.experimental.multihost_utils for the
processes of a jax.distributed job (data between processes, barriers, local <-> global
arrays)."""
from numbax._src.parallel.multihost import (  # noqa: F401
    assert_equal,
    broadcast_one_to_all,
    global_array_to_host_local_array,
    host_local_array_to_global_array,
    process_allgather,
    sync_global_devices,
)

__all__ = ["assert_equal", "broadcast_one_to_all", "global_array_to_host_local_array",
           "host_local_array_to_global_array", "process_allgather", "sync_global_devices"]
