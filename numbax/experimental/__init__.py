"""numbax.experimental: jax.experimental's top-level names (io_callback, ...) and its
submodules checkify and ode (imported explicitly, as in JAX)."""
from numbax._src.callback_api import io_callback  # noqa: F401

__all__ = ["io_callback"]
