"""The small problem on which make_example_libraries_reference.py records JAX's optimizer
trajectories and tests/test_example_libraries.py replays numbax's: one table for both APIs."""
from collections.abc import Callable
from typing import Any

import numpy as np

STEPS = 12
_A = np.array([[1.0, 0.5, -0.3], [0.2, -1.2, 0.8], [0.7, 0.1, 0.4], [-0.5, 0.9, 1.1]],
              np.float32)
_B = np.array([0.3, -0.7, 1.1, 0.2], np.float32)


def initial_params(jnp: Any) -> dict:
    """A pytree with a matrix, a vector and a scalar leaf (float32)."""
    return {"w": jnp.asarray(np.array([[0.5, -0.2], [0.1, 0.3], [-0.4, 0.6]], np.float32)),
            "b": jnp.asarray(np.array([0.1, -0.1], np.float32)),
            "s": jnp.asarray(np.float32(0.7))}


def loss(params: dict) -> Any:
    """A least-squares loss with a scalar gain; any numpy-API module's arrays work."""
    pred = (_A @ params["w"] + params["b"]) * params["s"]
    return ((pred - _B[:, None]) ** 2).sum()


OPTIMIZERS: dict[str, Callable] = {
    "sgd": lambda o: o.sgd(0.05),
    "momentum": lambda o: o.momentum(0.05, 0.9),
    "nesterov": lambda o: o.nesterov(0.05, 0.9),
    "adagrad": lambda o: o.adagrad(0.1),
    "rmsprop": lambda o: o.rmsprop(0.02),
    "rmsprop_momentum": lambda o: o.rmsprop_momentum(0.02),
    "adam": lambda o: o.adam(0.05),
    "adamax": lambda o: o.adamax(0.05),
    "sm3": lambda o: o.sm3(0.1),
    "sgd_exponential_decay": lambda o: o.sgd(o.exponential_decay(0.1, 3, 0.5)),
    "adam_piecewise": lambda o: o.adam(o.piecewise_constant([4, 8], [0.1, 0.05, 0.01])),
}

SCHEDULES: dict[str, Callable] = {
    "constant": lambda o: o.constant(0.3),
    "exponential_decay": lambda o: o.exponential_decay(0.1, 3, 0.5),
    "inverse_time_decay": lambda o: o.inverse_time_decay(0.1, 4, 0.5),
    "inverse_time_decay_staircase": lambda o: o.inverse_time_decay(0.1, 4, 0.5, True),
    "polynomial_decay": lambda o: o.polynomial_decay(0.1, 8, 0.01, 2.0),
    "piecewise_constant": lambda o: o.piecewise_constant([4, 8], [0.1, 0.05, 0.01]),
}
