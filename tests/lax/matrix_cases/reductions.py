"""Matrix rows of the reductions added for JAX's names: reduce_xor and cumlogsumexp."""
from __future__ import annotations

import numpy as np

from numbax import lax
from tests.lax.matrix_cases import Case

RNG = np.random.default_rng(3)
X = RNG.normal(size=(3, 4))
INTS = RNG.integers(-50, 50, size=(3, 4))


def cases() -> dict[str, list[Case]]:
    return {
        "reduce_xor": [Case(lambda x: lax.reduce_xor(x, (1,)), (INTS,)),
                       Case(lambda x: lax.reduce_xor(x > 0, (0, 1)), (X,))],
        "cumlogsumexp": [Case(lambda x: lax.cumlogsumexp(x, axis=1), (X,), (0,)),
                         Case(lambda x: lax.cumlogsumexp(x, axis=0, reverse=True), (X,), (0,)),
                         Case(lambda x: lax.cumlogsumexp(x, axis=1), (X.astype(np.float32),))],
    }
