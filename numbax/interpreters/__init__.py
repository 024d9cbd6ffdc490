"""numbax.interpreters: the transformation rule tables (JAX's jax.interpreters)."""
from numbax.interpreters import ad, batching  # noqa: F401
