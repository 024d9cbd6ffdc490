"""numbax.lax.linalg: the linear algebra primitives and their wrappers under JAX's names."""
from numbax._src.lax.linalg import (  # noqa: F401
    cholesky,
    cholesky_p,
    cholesky_update,
    cholesky_update_p,
    symmetric_product,
    symmetric_product_p,
    triangular_solve,
    triangular_solve_p,
)
from numbax._src.lax.linalg_eig import (  # noqa: F401
    EighImplementation,
    EigImplementation,
    eig,
    eig_p,
    eigh,
    eigh_p,
    schur,
    schur_p,
)
from numbax._src.lax.linalg_lu import (  # noqa: F401
    lu,
    lu_p,
    lu_pivots_to_permutation,
    lu_pivots_to_permutation_p,
    tridiagonal_solve,
    tridiagonal_solve_p,
)
from numbax._src.lax.linalg_qr import (  # noqa: F401
    hessenberg,
    hessenberg_p,
    householder_product,
    householder_product_p,
    ormqr,
    ormqr_p,
    qr,
    qr_p,
    tridiagonal,
    tridiagonal_p,
)
from numbax._src.lax.linalg_svd import SvdAlgorithm, qdwh, svd, svd_p  # noqa: F401
