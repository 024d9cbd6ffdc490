"""numbax.experimental: jax.experimental's top-level names (io_callback) and the modules numbax
provides (checkify, ode, shard_map, mesh_utils, multihost_utils, sparse: import them by name,
as in JAX, e.g. `from numbax.experimental.shard_map import shard_map`,
`from numbax.experimental import sparse`)."""
from numbax._src.callback_api import io_callback  # noqa: F401

__all__ = ["io_callback"]
