"""Matrix rows for the windowed reductions: reduce_window_{sum,max,min} with strides, padding
and dilations, the named-monoid reduce_window, and the select-and-{gather,scatter}-add pair
that carries max pooling's derivatives."""
from __future__ import annotations

import numpy as np

from numbax import lax
from tests.lax.matrix_cases import Case

RNG = np.random.default_rng(1818)
X = RNG.normal(size=(3, 6, 5))
WINDOW = dict(window_dimensions=(1, 2, 2), window_strides=(1, 2, 1),
              padding=((0, 0), (1, 0), (0, 1)), base_dilation=(1, 1, 1),
              window_dilation=(1, 1, 1))


def cases() -> dict[str, list[Case]]:
    def pool(init, op, **kw):
        return lambda x: lax.reduce_window(x, init, op, **kw)

    dilated = dict(window_dimensions=(2, 2, 1), window_strides=(1, 1, 2),
                   padding=((1, 0), (0, 1), (1, 1)), base_dilation=(2, 1, 1),
                   window_dilation=(1, 2, 1))
    gather = lax.select_and_gather_add_p.bind
    scatter = lax.select_and_scatter_add_p.bind
    scatter_window = {k: v for k, v in WINDOW.items() if "dilation" not in k}
    source = RNG.normal(size=lax.reduce_window_shape_tuple(X.shape, (1, 2, 2), (1, 2, 1),
                                                           WINDOW["padding"]))
    return {
        "reduce_window_sum": [Case(pool(0.0, lax.add, **WINDOW), (X,), (0,)),
                              Case(pool(0.0, lax.add, **dilated), (X,), (0,))],
        "reduce_window_max": [Case(pool(-np.inf, lax.max, **WINDOW), (X,), (0,)),
                              Case(pool(-np.inf, lax.max, window_dimensions=(1, 3, 3),
                                        window_strides=(1, 2, 2), padding="SAME"),
                                   (X.astype(np.float32),))],
        "reduce_window_min": [Case(pool(np.inf, lax.min, window_dimensions=(2, 2, 1),
                                        window_strides=(1, 1, 2), padding=((1, 0), (0, 1),
                                                                           (1, 1)),
                                        base_dilation=(2, 1, 1)), (X,), (0,)),
                              Case(pool(np.inf, lax.min, **dilated), (X,), (0,),
                                   modes=("fwd",))],
        "reduce_window": [Case(pool(1.0, lax.mul, **WINDOW), (X,), (0,)),
                          Case(pool(0.5, lax.add, **dilated), (X,), (0,))],
        "select_and_gather_add": [Case(lambda t, x: gather(t, x, select_prim="ge", **WINDOW),
                                       (RNG.normal(size=X.shape), X), (0,)),
                                  Case(lambda t, x: gather(t, x, select_prim="le", **dilated),
                                       (RNG.normal(size=X.shape), X), (0,), modes=("fwd",))],
        "select_and_scatter_add": [Case(lambda s, x: scatter(s, x, select_prim="ge",
                                                             **scatter_window),
                                        (source, X), (0,))],
        "select_and_scatter": [
            Case(lambda x, s: lax.select_and_scatter_p.bind(
                x, s, np.float64(0.5), select_prim="gt", scatter_prim="add", **scatter_window),
                (X, source), (1,)),
            Case(lambda x, s: lax.select_and_scatter_p.bind(
                x, s, np.float64(1.0), select_prim="le", scatter_prim="max", **scatter_window),
                (X, source))],
    }
