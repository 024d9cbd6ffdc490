"""Linear algebra on the GPU (cholesky, triangular_solve, lu, qr, eigh, svd): not lowered yet."""
from __future__ import annotations

from numbax._src.compiler.codegen_cuda import Config, KernelPlan
from numbax._src.core import JaxprEqn

KERNELS: frozenset[str] = frozenset()


def supported(eqn: JaxprEqn) -> bool:
    return False


def render(eqn: JaxprEqn, cfg: Config) -> KernelPlan:
    raise NotImplementedError(eqn.primitive.name)
