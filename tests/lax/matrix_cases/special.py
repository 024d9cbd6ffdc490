"""Matrix rows for numbax/_src/lax/special.py: incomplete gamma and beta, zeta, Bessel i0e/i1e."""
from __future__ import annotations

import numpy as np

from numbax import lax
from tests.lax.matrix_cases import Case

_RNG = np.random.default_rng(17)
_A = _RNG.uniform(0.5, 4.0, size=(3, 4))
_X = _RNG.uniform(0.2, 6.0, size=(3, 4))
_U = _RNG.uniform(0.1, 0.9, size=(3, 4))
_S = _RNG.uniform(1.5, 4.0, size=(3, 4))
_N = _RNG.normal(size=(3, 4)) * 3


def cases() -> dict[str, list[Case]]:
    return {
        "igamma": [Case(lax.igamma, (_A, _X), (1,)),  # d/da: first order, tests/scipy
                   Case(lax.igamma, (_A.astype(np.float32), _X.astype(np.float32)))],
        "igammac": [Case(lax.igammac, (_A, _X), (1,))],
        "igamma_grad_a": [Case(lax.igamma_grad_a, (_A, _X))],
        "regularized_incomplete_beta": [
            Case(lambda x: lax.betainc(_A, _A[::-1], x), (_U,), (0,)),
            Case(lax.betainc, (_A, _A[::-1], _U))],
        "zeta": [Case(lax.zeta, (_S, _A), (0, 1)),
                 Case(lax.zeta, (_S.astype(np.float32), _A.astype(np.float32)))],
        "bessel_i0e": [Case(lax.bessel_i0e, (_N,), (0,)),
                       Case(lax.bessel_i0e, (_N.astype(np.float32),))],
        "bessel_i1e": [Case(lax.bessel_i1e, (_N,), (0,)),
                       Case(lax.bessel_i1e, (_N.astype(np.float32),))],
    }
