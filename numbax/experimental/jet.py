"""numbax.experimental.jet: Taylor-mode higher-order differentiation (jax.experimental.jet).

`jet(fun, primals, series)` pushes truncated Taylor series through `fun` in one pass and
returns `(primals_out, series_out)`; `jet2` takes and gives Taylor coefficients instead of
derivatives (`factorial_scaled=False`).
"""
import functools

from numbax._src import jet_rules as _jet_rules  # noqa: F401  (fills the rule table)
from numbax._src.jet import jet, jet_rules  # noqa: F401

jet2 = functools.partial(jet, factorial_scaled=False)

__all__ = ["jet", "jet2", "jet_rules"]
