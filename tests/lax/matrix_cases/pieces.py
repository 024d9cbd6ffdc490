"""Matrix rows of lax/pieces.py (split, stack, unstack, tile), of lax/sort.py's top_k,
approx_top_k and searchsorted, and of the compiler's composed index maps and rolls
(lax/index_map.py: a strided row pick, a column broadcast along a new axis, wrapped rows)."""
from __future__ import annotations

import numpy as np

import numbax.numpy as jnp
from numbax import lax
from numbax._src.lax import index_map as im
from tests.lax.matrix_cases import Case

RNG = np.random.default_rng(11)
X = RNG.normal(size=(3, 4))
Y = RNG.normal(size=(3, 4))
TABLE = np.array([-1.0, -0.5, 0.0, 0.0, 0.25, 1.0, np.nan])
V = np.concatenate([RNG.normal(size=5), [0.0, -0.0, 0.25, np.nan, np.inf]]).reshape(2, 5)


def cases() -> dict[str, list[Case]]:
    return {
        "split": [Case(lambda x: lax.split(x, (1, 3), axis=1), (X,), (0,)),
                  Case(lambda x: lax.split(x, (2, 0, 1)), (X,), (0,))],
        "stack": [Case(lambda x, y: lax.stack([x, y, x], axis=1), (X, Y), (0, 1)),
                  Case(lambda x: lax.stack([x, 2.0 * x], axis=-1), (X,), (0,))],
        "unstack": [Case(lambda x: lax.unstack(x, axis=1), (X,), (0,)),
                    Case(lambda x: lax.unstack(x)[1] * 3.0, (X,), (0,))],
        "tile": [Case(lambda x: lax.tile(x, (2, 3)), (X,), (0,)),
                 Case(lambda x: lax.tile(x, (1, 0)), (X,))],
        **_top_k_rows(),
        # (CPU-only: the CPU backend makes them; the GPU's matrix leaves them out)
        "index_map": [
            Case(lambda x: im.index_map(x, (im.AxisRead(0, 2, 1), im.AxisRead(None, 1, 0)),
                                        (1,)), (X,), (0,), gpu=False),
            Case(lambda x: im.index_map(x, (im.AxisRead(0, 0, 2), im.AxisRead(1, 1, 1)),
                                        (2, 3)) * 2.0, (X,), (0,), gpu=False),
            Case(lambda x: im.index_map(x, (im.AxisRead(None, 1, 0), im.AxisRead(1, 0, 1)),
                                        (3, 4)), (X,), (0,), gpu=False)],
        # (CPU-only too: compose_maps makes it of jnp.roll's slices and concatenation)
        "roll": [Case(lambda x: im.roll(x, 1, 0), (X,), (0,), gpu=False),
                 Case(lambda x: im.roll(x, -3, 1) * 2.0, (X,), (0,), gpu=False)],
        # (the vmap row stacks each argument with its roll: a table stays sorted only if
        # constant, so the searched table is closed over or constant)
        "searchsorted": [
            Case(lambda v: jnp.searchsorted(TABLE, v), (V,)),
            Case(lambda v: jnp.searchsorted(TABLE, v, side="right"), (V.astype(np.float32),)),
            Case(lambda a, v: jnp.searchsorted(a, v, side="right"), (np.full(5, 0.25), V))],
    }


def _top_k_rows() -> dict[str, list[Case]]:
    return {
        "top_k": [Case(lambda x: lax.top_k(x, 2)[0], (X,), (0,)),
                  Case(lambda x: lax.top_k(x, 2), (X,)),
                  Case(lambda x: lax.top_k(x, 2, axis=0), (X.astype(np.float32),))],
        "approx_top_k": [Case(lambda x: lax.approx_max_k(x, 3)[0], (X,), (0,)),
                         Case(lambda x: lax.approx_min_k(x, 2, reduction_dimension=0)[0], (X,),
                              (0,)),
                         Case(lambda x: lax.approx_min_k(x, 2), (X,))],
    }
