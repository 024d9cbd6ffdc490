"""Lowerings of the linear-algebra primitives (lax/linalg.py) and sort (lax/sort.py).

On the CPU the driver runs their eager implementations, which call LAPACK through numpy and
scipy: the same NaN-on-failure, batching and sign conventions as eager, and nothing to compile
(Numba's LAPACK wrappers raise on failure and cost seconds of compile time each; the work is
in LAPACK either way). CUDA runs one block per matrix (cuda/kernels/linalg.py) and bitonic
tiles with merge passes for sort (cuda/kernels/sort.py)."""
from __future__ import annotations

import numpy as np

from numbax._src.compiler.cuda import driver as cuda_driver
from numbax._src.compiler.cuda.kernels import jacobi as cuda_jacobi
from numbax._src.compiler.cuda.kernels import linalg as cuda_linalg
from numbax._src.compiler.cuda.kernels import sort as cuda_sort
from numbax._src.compiler.lowerings.forms import no_complex
from numbax._src.compiler.registry import EAGER, register
from numbax._src.core import JaxprEqn
from numbax._src.lax import linalg as ll
from numbax._src.lax import linalg_eig as le
from numbax._src.lax import linalg_lu as llu
from numbax._src.lax import linalg_qr as lqr
from numbax._src.lax import linalg_svd as lsvd
from numbax._src.lax import sort as lsort


def _real_floats(eqn: JaxprEqn) -> bool:
    """The CUDA kernels' dtypes: float32/float64 (complex matrices stay on the CPU)."""
    return all(v.aval.dtype in (np.float32, np.float64) for v in eqn.invars)


def _square(eqn: JaxprEqn) -> bool:
    """The CUDA LU kernel factors square matrices only."""
    shape = eqn.invars[0].aval.shape
    return _real_floats(eqn) and shape[-1] == shape[-2]


def _plain_qr(eqn: JaxprEqn) -> bool:
    """The CUDA QR kernel: no column pivoting, no empty matrix dims."""
    return not eqn.params.get("pivoting", False) and _nonempty_matrices(eqn)


def _nonempty_matrices(eqn: JaxprEqn) -> bool:
    return _real_floats(eqn) and 0 not in eqn.invars[0].aval.shape[-2:]


_WITH_GPU_KERNELS = ((ll.cholesky_p, cuda_linalg.cholesky, _real_floats),
                     (ll.triangular_solve_p, cuda_linalg.triangular_solve, _real_floats),
                     (llu.lu_p, cuda_linalg.lu, _square),
                     (lqr.qr_p, cuda_linalg.qr, _plain_qr),
                     (le.eigh_p, cuda_jacobi.eigh, _real_floats),
                     (lsvd.svd_p, cuda_jacobi.svd, _nonempty_matrices))
# LAPACK routines without a GPU kernel: eager on the CPU (CUDA runs them on the host)
_HOST_ONLY = (ll.cholesky_update_p, ll.symmetric_product_p, le.eig_p, le.schur_p,
              llu.lu_pivots_to_permutation_p, llu.tridiagonal_solve_p, lqr.geqrf_p,
              lqr.householder_product_p, lqr.ormqr_p, lqr.hessenberg_p, lqr.tridiagonal_p,
              lqr.qr_r_p)
# The primitives whose CPU implementation is LAPACK: a long one waits for Numba's spinning
# workers to stop, then takes BLAS's threads (compiler/cpu/backend.py `LapackCall`)
LAPACK = frozenset((*(prim for prim, _, _ in _WITH_GPU_KERNELS), *_HOST_ONLY))

for _prim, _render, _ok in _WITH_GPU_KERNELS:
    register(_prim, backend="cpu", library=EAGER)
    register(_prim, backend="cuda", library=cuda_driver.planned(_render), library_ok=_ok)
for _prim in _HOST_ONLY:
    register(_prim, backend="cpu", library=EAGER)
register(lsort.sort_p, backend="cpu", library=EAGER)
register(lsort.sort_p, backend="cuda", library=cuda_driver.planned(cuda_sort.render),
         library_ok=no_complex)
