"""numbax.example_libraries: JAX's example libraries (stax layers, optimizers)."""
from numbax.example_libraries import optimizers, stax  # noqa: F401
