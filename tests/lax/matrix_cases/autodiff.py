"""Matrix rows of the autodiff markers: checkpoint_name's `name`."""
from __future__ import annotations

import numpy as np

from numbax import ad_checkpoint
from numbax import numpy as jnp
from tests.lax.matrix_cases import Case

RNG = np.random.default_rng(6)
X = RNG.normal(size=(3, 4))


def cases() -> dict[str, list[Case]]:
    return {
        "name": [Case(lambda x: jnp.sin(ad_checkpoint.checkpoint_name(x * x, "sq")), (X,),
                      (0,))],
    }
