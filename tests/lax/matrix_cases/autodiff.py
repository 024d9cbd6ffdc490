"""Matrix rows of the autodiff helpers: checkpoint_name's `name`, linear_call, and the
remat_opt of custom_vjp(optimize_remat=True) (under checkpoint)."""
from __future__ import annotations

import numpy as np

import numbax
from numbax import ad_checkpoint, custom_derivatives
from numbax import numpy as jnp
from tests.lax.matrix_cases import Case

RNG = np.random.default_rng(6)
X = RNG.normal(size=(3, 4))


def _scaled(x):
    return x + custom_derivatives.linear_call(lambda r, v: v * r, lambda r, ct: ct * r, 2.0, x)


@numbax.custom_vjp
def _tanh(x):
    return jnp.tanh(x)


_tanh.defvjp(lambda x: (jnp.tanh(x), 1.0 - jnp.tanh(x) ** 2), lambda d, g: (d * g,),
             optimize_remat=True)


def cases() -> dict[str, list[Case]]:
    return {
        "name": [Case(lambda x: jnp.sin(ad_checkpoint.checkpoint_name(x * x, "sq")), (X,),
                      (0,))],
        "linear_call": [Case(_scaled, (X,), (0,))],
        # the equation appears once fwd runs: under a gradient (jit, vmap and the derivative
        # of that gradient then see it)
        "remat_opt": [Case(numbax.grad(lambda x: jnp.sum(numbax.checkpoint(_tanh)(x * 0.5))),
                           (X,), (0,))],
    }
