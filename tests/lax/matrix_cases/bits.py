"""Matrix rows of lax/bits.py: clz, mulhi, reduce_precision and the total-order comparisons."""
from __future__ import annotations

import numpy as np

from numbax import lax
from numbax._src.lax import bits
from tests.lax.matrix_cases import Case

RNG = np.random.default_rng(7)
I32 = RNG.integers(-2**31, 2**31, size=(3, 4), dtype=np.int64).astype(np.int32)
I64 = RNG.integers(-2**62, 2**62, size=(3, 4), dtype=np.int64)
F32 = (RNG.normal(size=(3, 4)) * 1e3).astype(np.float32)
SPECIAL = np.array([[0.0, -0.0, np.inf, -np.inf], [np.nan, 1.0, -1.0, 1e-30],
                    [3.5, -3.5, 1e30, -np.nan]], np.float32)


def cases() -> dict[str, list[Case]]:
    return {
        "clz": [Case(lax.clz, (I32,)), Case(lax.clz, (I64,)),
                Case(lax.clz, (np.abs(I32).astype(np.uint16),))],
        "mulhi": [Case(lax.mulhi, (I32, I32[::-1].copy())), Case(lax.mulhi, (I64, I64.T.copy()
                                                                             .reshape(3, 4))),
                  Case(lax.mulhi, (I64.astype(np.uint64), I64.astype(np.uint64)))],
        "reduce_precision": [Case(lambda x: lax.reduce_precision(x, 5, 10), (F32,)),
                             Case(lambda x: lax.reduce_precision(x, 8, 7), (SPECIAL,)),
                             Case(lambda x: lax.reduce_precision(x, 4, 3),
                                  (F32.astype(np.float64) * 1e-3,))],
        "eq_to": [Case(lambda x, y: bits.eq_to_p.bind(x, y), (SPECIAL, SPECIAL[:, ::-1].copy()))],
        "le_to": [Case(lambda x, y: bits.le_to_p.bind(x, y), (SPECIAL, SPECIAL[::-1].copy())),
                  Case(lambda x, y: bits.le_to_p.bind(x, y), (I32, I32[:, ::-1].copy()))],
        "lt_to": [Case(lambda x, y: bits.lt_to_p.bind(x, y), (SPECIAL, SPECIAL[:, ::-1].copy()))],
    }
