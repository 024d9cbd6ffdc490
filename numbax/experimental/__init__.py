"""numbax.experimental: JAX's jax.experimental modules numbax provides (import them by name,
e.g. `from numbax.experimental.shard_map import shard_map`)."""
