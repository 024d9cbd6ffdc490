"""numbax.scipy.optimize: minimize with BFGS, as jax.scipy.optimize."""
from numbax._src.scipy.optimize import OptimizeResults, minimize  # noqa: F401
