"""numbax.scipy.sparse.linalg: Krylov solvers for A x = b with A a matrix or a function
(jax.scipy.sparse.linalg's cg, bicgstab and gmres)."""
from numbax._src.scipy.sparse_linalg import bicgstab, cg, gmres  # noqa: F401
