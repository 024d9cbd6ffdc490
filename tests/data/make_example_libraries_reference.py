"""Records jax.example_libraries outputs into example_libraries_jax_reference.json, read by
tests/test_example_libraries.py: 12-step optimizer trajectories on a small least-squares
problem, schedules, and stax's parallel/glorot/randn/logsoftmax. Run once with jax installed:

    /path/to/python-with-jax tests/data/make_example_libraries_reference.py

Recorded with jax 0.10.2 on CPU, jax_enable_x64=False.
"""
import json
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
from jax.example_libraries import optimizers, stax
from optimizer_problem import OPTIMIZERS, SCHEDULES, STEPS, initial_params, loss

OUT = pathlib.Path(__file__).with_name("example_libraries_jax_reference.json")


def _tolist(tree):
    return jax.tree.map(lambda x: np.asarray(x).tolist(), tree)


def record_trajectories() -> dict:
    out = {}
    grad = jax.grad(loss)
    for name, make in OPTIMIZERS.items():
        init, update, get_params = make(optimizers)
        state = init(initial_params(jnp))
        steps = []
        for i in range(STEPS):
            state = update(i, grad(get_params(state)), state)
            steps.append(_tolist(get_params(state)))
        out[name] = steps
    return out


def record_schedules() -> dict:
    return {name: [float(make(optimizers)(i)) for i in range(12)]
            for name, make in SCHEDULES.items()}


def record_stax() -> dict:
    key = jax.random.PRNGKey(0)
    init, apply = stax.parallel(stax.Dense(3), stax.Dense(2, W_init=stax.glorot(),
                                                           b_init=stax.randn(0.5)))
    shapes, params = init(key, ((-1, 4), (-1, 5)))
    x = (np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4),
         np.linspace(0, 2, 10, dtype=np.float32).reshape(2, 5))
    outs = apply(params, x)
    return {
        "parallel_init_types": [type(shapes).__name__, type(params).__name__],
        "parallel_shapes": _tolist(list(shapes)), "parallel_params": _tolist(list(params)),
        "parallel_outputs": _tolist(outs),
        "glorot": _tolist(stax.glorot()(key, (3, 4))),
        "randn": _tolist(stax.randn()(key, (5,))),
        "logsoftmax": _tolist(stax.logsoftmax(np.float32([[1.0, 2.0, 3.0]]))),
    }


def main() -> None:
    jax.config.update("jax_enable_x64", False)
    data = {"jax_version": jax.__version__, "trajectories": record_trajectories(),
            "schedules": record_schedules(), "stax": record_stax()}
    OUT.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
