"""Matrix rows of the sharding primitives: sharding_constraint (lax/sharding_ops.py) and
shard_map (lax/shard_map.py), on a one-device mesh, where shard_map runs in the calling process
(the many-device engine is tests/test_shard_map.py's). Meshes are of virtual CPU devices, so
the GPU matrix leaves these rows out (gpu=False)."""
from __future__ import annotations

import numpy as np

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax.sharding import Mesh, NamedSharding
from numbax.sharding import PartitionSpec as P
from tests.lax.matrix_cases import Case

RNG = np.random.default_rng(7)
X = RNG.normal(size=(4, 3))


def _mesh() -> Mesh:
    return Mesh(numbax.devices()[:1], ("x",))


def _constrained(x):
    return lax.with_sharding_constraint(jnp.sin(x) * 2.0, NamedSharding(_mesh(), P("x")))


def _mapped(x, w):
    body = numbax.shard_map(lambda b, v: lax.psum(jnp.tanh(b) * v, "x"), mesh=_mesh(),
                            in_specs=(P("x"), P()), out_specs=P("x"))
    return body(x, w)


def cases() -> dict[str, list[Case]]:
    return {
        "sharding_constraint": [Case(_constrained, (X,), (0,), gpu=False)],
        "shard_map": [Case(_mapped, (X, X[0]), (0, 1), gpu=False)],
    }
