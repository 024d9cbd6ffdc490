"""Matrix rows of lax/rng.py (rng_uniform over an empty range, so results are deterministic)."""
from __future__ import annotations

import numpy as np

from numbax import lax
from tests.lax.matrix_cases import Case

KEY = np.array([[1, 2, 3, 4], [5, 6, 7, 8]], np.uint32)


def cases() -> dict[str, list[Case]]:
    return {
        "rng_bit_generator": [Case(lambda k: lax.rng_bit_generator(k[0], (3, 2)), (KEY,)),
                              Case(lambda k: lax.rng_bit_generator(
                                  k[1], (5,), np.uint8, lax.RandomAlgorithm.RNG_THREE_FRY),
                                  (KEY,))],
        "rng_uniform": [Case(lambda x: x + lax.rng_uniform(1.5, 1.5, (3, 4)),
                             (np.ones((3, 4)),), (0,))],
    }
