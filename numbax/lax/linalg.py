"""numbax.lax.linalg: the matrix decomposition primitives under JAX's names."""
from numbax._src.lax.linalg import (  # noqa: F401
    cholesky,
    cholesky_p,
    eigh,
    eigh_p,
    lu,
    lu_p,
    qr,
    qr_p,
    svd,
    svd_p,
    triangular_solve,
    triangular_solve_p,
)
