"""Ordering and token primitives (lax/ordering.py) and the stateful generators (lax/rng.py):
identities, tokens and numpy's generators run from the driver; passes.py keeps the stateful
ones from being merged or folded."""
from __future__ import annotations

from numbax._src.compiler.registry import EAGER, register
from numbax._src.lax import ordering, rng

for _prim in (ordering.optimization_barrier_p, ordering.stage_p, ordering.dce_sink_p,
              ordering.create_token_p, ordering.after_all_p, rng.rng_bit_generator_p,
              rng.rng_uniform_p):
    register(_prim, backend="cpu", library=EAGER)
