"""Matrix rows of lookup, the CPU compiler's gather of single elements
(compiler/point_gathers.py), bound by hand: its eager rule, jit, vmap and both derivative
modes (through the table) against the gather it stands for."""
from __future__ import annotations

import numpy as np

from numbax._src.compiler.point_gathers import lookup_p
from tests.lax.matrix_cases import Case

RNG = np.random.default_rng(29)
TABLE = RNG.normal(size=(4, 5))
ROWS = np.array([[0, 3, -1], [5, 2, 1]], np.int32)  # out of bounds both ways
COLS = np.array([[4, 0, 2], [1, 9, 3]], np.int64)


def _lookup(mode, fill=None):
    def f(table, rows, cols):
        return lookup_p.bind(table, rows, cols, mode=mode, fill_value=fill)
    return f


def cases() -> dict[str, list[Case]]:
    return {"lookup": [
        Case(_lookup("clip"), (TABLE, ROWS, COLS), (0,)),
        Case(_lookup("fill", -2.5), (TABLE, ROWS, COLS), (0,)),
        Case(_lookup("fill", np.nan), (TABLE.astype(np.float32), ROWS, COLS)),
    ]}
