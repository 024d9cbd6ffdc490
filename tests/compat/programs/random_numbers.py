"""docs/random-numbers.md and docs/stateful-computations.md: keys, split, normal draws one
by one and all at once, vmap over keys; a counter made pure; linear regression with
NamedTuple parameters."""
from tests.compat.programs import program


@program("docs/random-numbers.md")
def random_keys_and_draws():
    import jax
    import numpy as np
    from jax import random

    key = random.key(42)
    out = {"same_key": [random.normal(key), random.normal(key)]}
    draws = []
    for i in range(3):
        new_key, subkey = random.split(key)
        del key
        val = random.normal(subkey)
        del subkey
        draws.append(val)
        key = new_key
    out["draws"] = draws
    key, *forty_two_subkeys = random.split(key, num=43)
    out["subkey_data"] = random.key_data(forty_two_subkeys[41])
    key = random.key(42)
    subkeys = random.split(key, 3)
    out["individually"] = np.stack([random.normal(subkey) for subkey in subkeys])
    key = random.key(42)
    out["all_at_once"] = random.normal(key, shape=(3,))
    out["vectorized"] = jax.vmap(random.normal)(subkeys)
    out["legacy_key"] = random.uniform(random.PRNGKey(0), (4,))
    out["str_key"] = str(random.key(42))
    return out


@program("docs/stateful-computations.md", rtol=1e-5, atol=1e-6)
def stateful_counter_and_regression():
    from typing import NamedTuple

    import jax
    import jax.numpy as jnp

    class Counter:
        def __init__(self):
            self.n = 0

        def count(self) -> int:
            self.n += 1
            return self.n

        def reset(self):
            self.n = 0

    counter = Counter()
    plain = [counter.count() for _ in range(3)]
    counter.reset()
    fast_count = jax.jit(counter.count)
    jitted = [fast_count() for _ in range(3)]  # traced once: 1, 1, 1

    class CounterV2:
        def count(self, n):
            return n+1, n+1

        def reset(self):
            return 0

    counter = CounterV2()
    state = counter.reset()
    fast_count = jax.jit(counter.count)
    pure = []
    for _ in range(3):
        value, state = fast_count(state)
        pure.append(value)

    class Params(NamedTuple):
        weight: jnp.ndarray
        bias: jnp.ndarray

    def init(rng) -> Params:
        weights_key, bias_key = jax.random.split(rng)
        weight = jax.random.normal(weights_key, ())
        bias = jax.random.normal(bias_key, ())
        return Params(weight, bias)

    def loss(params, x, y):
        pred = params.weight * x + params.bias
        return jnp.mean((pred - y) ** 2)

    LEARNING_RATE = 0.005

    @jax.jit
    def update(params, x, y):
        grad = jax.grad(loss)(params, x, y)
        return jax.tree.map(lambda param, g: param - g * LEARNING_RATE, params, grad)

    rng = jax.random.key(42)
    true_w, true_b = 2, -1
    x_rng, noise_rng = jax.random.split(rng)
    xs = jax.random.normal(x_rng, (128, 1))
    noise = jax.random.normal(noise_rng, (128, 1)) * 0.5
    ys = xs * true_w + true_b + noise
    params = init(rng)
    for _ in range(300):
        params = update(params, xs, ys)
    return {"plain": plain, "jitted": jitted, "pure": pure, "params": params,
            "loss": loss(params, xs, ys)}
