"""Matrix rows of JAX 0.10.2's primitives numbax added last: reduce (lax.reduce with a
computation of its own), custom_linear_solve, device_put, scaled_dot, and the collectives
ragged_all_to_all, psend and precv (run under a vmap that names their axis, in this
process; the SPMD workers' runs are tests/lax/test_parallel_ragged.py's and
test_parallel_sendrecv.py's)."""
from __future__ import annotations

import numpy as np

import numbax
import numbax.numpy as jnp
from numbax import lax
from tests.lax.matrix_cases import Case

RNG = np.random.default_rng(11)
X = RNG.normal(size=(3, 4))
M = np.array([[3.0, 1.0, 0.5], [0.2, 2.5, 0.3], [0.1, 0.4, 4.0]])
B = RNG.normal(size=(3,))


def _logsumexp_rows(x):
    return lax.reduce(x, -np.inf, jnp.logaddexp, (1,))


def _max_and_index(x):
    idx = lax.broadcasted_iota(np.int64, np.shape(x), 1)

    def pick(a, b):
        (av, ai), (bv, bi) = a, b
        first = (av > bv) | ((av == bv) & (ai < bi))
        return jnp.where(first, av, bv), jnp.where(first, ai, bi)

    return lax.reduce((x, idx), (-np.inf, 0), pick, (1,))


def _solve(m, b):
    return lax.custom_linear_solve(lambda v: m @ v, b, lambda mv, r: jnp.linalg.solve(m, r),
                                   lambda vm, r: jnp.linalg.solve(m.T, r))


def _put(x):
    return numbax.device_put(jnp.sin(x), numbax.devices()[0]) * 2.0


def _scaled(lhs, rhs):
    scale = np.array([[1.0, 2.0], [0.5, 1.0], [4.0, 0.25]], np.float32)
    return lax.scaled_dot(lhs, rhs, lhs_scale=scale, preferred_element_type=np.float32)


def _ragged(operand, output):
    """JAX's documented example, two members: operand rows go out by the offsets below."""
    meta = [np.array(m, np.int32) for m in ([[0, 1], [0, 1]], [[1, 2], [1, 1]],
                                            [[0, 0], [1, 2]], [[1, 1], [2, 1]])]
    return numbax.vmap(lambda *a: lax.ragged_all_to_all(*a, axis_name="i"),
                       axis_name="i")(operand, output, *meta)


PERM = [(0, 1), (1, 0)]


def _send_receive(x):
    return numbax.vmap(lambda v: lax.precv(lax.psend(v, "i", PERM),
                                           numbax.ShapeDtypeStruct(v.shape, v.dtype), "i",
                                           PERM), axis_name="i")(x)


def cases() -> dict[str, list[Case]]:
    f32 = np.float32
    return {
        "reduce": [Case(_logsumexp_rows, (X,), (0,)), Case(_max_and_index, (X,))],
        "custom_linear_solve": [Case(_solve, (M, B), (0, 1))],
        "device_put": [Case(_put, (X,), (0,))],
        "scaled_dot": [Case(_scaled, (X.astype(f32)[:, :3].repeat(2, 1)[:3, :4],
                                      X.astype(f32)[:, :2].repeat(2, 0)[:4]))],
        "ragged_all_to_all": [Case(_ragged, (np.array([[1.0, 2, 2], [3, 4, 0]]),
                                             np.zeros((2, 4))), (0, 1))],
        "psend": [Case(_send_receive, (X[:2],), vmap=False, gpu=False)],
        "precv": [Case(_send_receive, (X[:2, :3],), vmap=False, gpu=False)],
    }
