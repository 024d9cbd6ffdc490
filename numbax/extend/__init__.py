"""numbax.extend: JAX's extension modules (jax.extend) for numbax's internals."""
from numbax.extend import core  # noqa: F401
