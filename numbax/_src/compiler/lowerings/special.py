"""Special functions (lax/special.py: incomplete gamma and beta, zeta, scaled Bessel I0/I1):
scipy's implementations run from the driver (elementwise, but with series and continued
fractions that have no vectorisable scalar form here yet)."""
from __future__ import annotations

from numbax._src.compiler.registry import EAGER, register
from numbax._src.lax import special

for _prim in (special.igamma_p, special.igammac_p, special.igamma_grad_a_p,
              special.regularized_incomplete_beta_p, special.zeta_p, special.bessel_i0e_p,
              special.bessel_i1e_p):
    register(_prim, backend="cpu", library=EAGER)
