"""Matrix rows of the scatter family's scatter-sub and of JAX's dimension-number gather and
scatter (lax/slicing.py), which compose the element gather and scatter."""
from __future__ import annotations

import numpy as np

from numbax import lax
from numbax._src.lax import scatter as element
from tests.lax.matrix_cases import Case

RNG = np.random.default_rng(5)
X = RNG.normal(size=(3, 4))
UNIQUE = np.array([[2], [0]])
WINDOWS = lax.GatherDimensionNumbers(offset_dims=(1, 2), collapsed_slice_dims=(),
                                     start_index_map=(0, 1))
STARTS = np.array([[0, 0], [1, 2], [2, 3]])
SCATTER = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                      scatter_dims_to_operand_dims=(0,))


def cases() -> dict[str, list[Case]]:
    return {
        "scatter-sub": [Case(lambda x, u: element.scatter_sub(x, UNIQUE, u, (0,)),
                             (X, RNG.normal(size=(2, 4))), (0, 1))],
        "gather": [Case(lambda x: lax.gather(x, STARTS, WINDOWS, (2, 2), mode="fill",
                                             fill_value=0.0), (X,), (0,))],
        "scatter-add": [Case(lambda x, u: lax.scatter_add(x, np.array([[1], [5], [1]]), u,
                                                          SCATTER), (X, RNG.normal(size=(3, 4))),
                             (0, 1))],
    }
