"""Rows for custom_vmap_call (jax.custom_batching.custom_vmap): a rule that computes what the
batched function would (so vmap matches the loop), differentiated in forward mode only (reverse
mode is refused, as in JAX)."""
import numpy as np

from numbax import custom_batching
from numbax import numpy as jnp
from tests.lax.matrix_cases import Case


@custom_batching.custom_vmap
def _scaled_sine(x, y):
    return jnp.sin(x) * y


@_scaled_sine.def_vmap
def _scaled_sine_rule(axis_size, in_batched, xs, ys):
    ys = ys if in_batched[1] else jnp.broadcast_to(ys, (axis_size, *np.shape(ys)))
    xs = xs if in_batched[0] else jnp.broadcast_to(xs, (axis_size, *np.shape(xs)))
    return jnp.sin(xs) * ys[:, None, :], True  # (an example's y is one row of x's shape)


def cases() -> dict[str, list[Case]]:
    x = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
    y = np.arange(1.0, 4.0)
    return {"custom_vmap_call": [Case(_scaled_sine, (x, y), (0, 1), modes=("fwd",))]}
