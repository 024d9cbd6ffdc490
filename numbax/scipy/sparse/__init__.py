"""numbax.scipy.sparse: the iterative solvers of jax.scipy.sparse (`linalg`)."""
from numbax.scipy.sparse import linalg  # noqa: F401
