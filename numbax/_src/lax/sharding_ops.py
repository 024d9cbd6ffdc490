"""sharding_constraint: the identity that pins a value's sharding (reshard and
with_sharding_constraint under tracing, and eagerly through the sharding layer, which installs
its implementation). Its math rules live here, below the compiler, which runs it as a no-op."""
from __future__ import annotations

from numbax._src import core
from numbax._src.core import Primitive, ShapedArray
from numbax._src.interpreters import ad, batching
from numbax._src.sharding.shardings import NamedSharding, explicit_part

sharding_constraint_p = Primitive("sharding_constraint")


def _sharding_constraint_abstract_eval(x: ShapedArray, *, sharding) -> list:
    explicit = explicit_part(sharding, x.ndim) if isinstance(sharding, NamedSharding) else None
    return [ShapedArray(x.shape, x.dtype, x.weak_type, explicit)]


def _sharding_constraint_batch(axis_size, vals, dims, *, sharding):
    # A per-example constraint says nothing of the batch axis: vmap drops it.
    return list(vals), list(dims)


core.abstract_eval_rules[sharding_constraint_p] = _sharding_constraint_abstract_eval
core.impl_rules[sharding_constraint_p] = lambda x, *, sharding: [x]
ad.deflinear(sharding_constraint_p, lambda cts, x, *, sharding: [
    sharding_constraint_p.bind(ad.instantiate_zeros(cts[0]), sharding=sharding)])
batching.batch_rules[sharding_constraint_p] = _sharding_constraint_batch
