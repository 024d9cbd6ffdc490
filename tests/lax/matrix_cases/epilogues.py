"""Matrix rows of gemm_epilogue, the backends' dense layer (`x @ w + b`, then ReLU, GELU, tanh,
sigmoid or nothing) and update (`base + scale * (x @ w)`, compiler/epilogues.py), bound by
hand: its eager rule, jit, vmap and both derivative modes against the composition it stands
for."""
from __future__ import annotations

import numpy as np

from numbax._src.compiler.epilogues import gemm_epilogue_p
from tests.lax.matrix_cases import Case

RNG = np.random.default_rng(23)
X, W, B = RNG.normal(size=(3, 4)), RNG.normal(size=(4, 5)), RNG.normal(size=5)
XT = RNG.normal(size=(4, 3))  # contracted along its rows
BASE = RNG.normal(size=(3, 5))  # an update's


def _layer(activation, dims=(((1,), (0,)), ((), ())), **params):
    def f(x, w, b):
        return gemm_epilogue_p.bind(x, w, b, dimension_numbers=dims, precision=None,
                                    preferred_element_type=None, activation=activation,
                                    **params)
    return f


def cases() -> dict[str, list[Case]]:
    return {"gemm_epilogue": [
        Case(_layer("none"), (X, W, B), (0, 1, 2)),
        Case(_layer("relu"), (X, W, B), (0, 1, 2)),
        Case(_layer("gelu"), (X, W, B), (0, 1, 2)),
        Case(_layer("tanh"), (X, W, B), (0, 1, 2)),
        Case(_layer("sigmoid"), (X, W, B), (0, 1, 2)),
        Case(_layer("relu", (((0,), (0,)), ((), ()))), (XT, W, B), (0, 1)),
        Case(_layer("update", scale=-0.25), (X, W, BASE), (0, 1, 2)),
        Case(_layer("update", (((0,), (0,)), ((), ())), scale=1.0), (XT, W, BASE), (0, 1, 2)),
    ]}
