"""Matrix rows of lax/ordering.py: optimization_barrier, stage, dce_sink and the tokens."""
from __future__ import annotations

import numpy as np

from numbax import lax
from tests.lax.matrix_cases import Case

RNG = np.random.default_rng(2)
X = RNG.normal(size=(3, 4))


def _sink(x):
    lax.dce_sink(x)
    return x * 2.0


def _tokens(x):
    token = lax.after_all(lax.create_token(), lax.create_token(x))
    return x + 1.0, token


def cases() -> dict[str, list[Case]]:
    return {
        "optimization_barrier": [
            Case(lambda x: lax.optimization_barrier((x * x, x))[0], (X,), (0,)),
            Case(lambda x, y: lax.optimization_barrier([x, y]), (X, X.astype(np.int32)))],
        "stage": [Case(lambda x: lax.stage(x) * 3.0, (X,), (0,)),
                  Case(lambda x: x + lax.stage(2.0), (X,), (0,))],
        "dce_sink": [Case(_sink, (X,), (0,))],
        "create_token": [Case(_tokens, (X,), vmap=False)],
        "after_all": [Case(lambda x: _tokens(x)[0], (X,), (0,))],
    }
