"""Matrix rows for random_gamma_p (numbax/_src/random_gamma.py): jit vs eager and vmap vs a
loop. Its jvp is the implicit reparameterisation gradient, not the derivative of the sampling
path, so finite differences of draws are no truth for it: tests/test_random_samplers.py checks
it against scipy's inverse incomplete gamma instead (grad=() here)."""
from __future__ import annotations

import numpy as np

from numbax import random
from tests.lax.matrix_cases import Case


def _draw(log_space: bool):
    return lambda key, a: random.random_gamma_p.bind(key, a, log_space=log_space)


def cases() -> dict[str, list[Case]]:
    key = np.array([0, 42], np.uint32)
    keys = np.array([[0, 1], [2, 3], [4, 5]], np.uint32)
    a = np.array([0.4, 1.0, 3.5])
    return {"random_gamma": [
        Case(_draw(False), (key, a)),
        Case(_draw(True), (key, a.astype(np.float32))),
        Case(_draw(False), (keys, np.array([[0.5, 2.0], [1.0, 1.5], [7.0, 0.1]]))),
    ]}
