"""docs/notebooks/thinking_in_jax.md: jax.Array vs numpy arrays, immutability and .at, a
jitted normalisation, boolean masks under jit, grad / jacobian / hessian of a logistic sum,
batching by hand and by vmap, split keys, tracer printing under jit."""
from tests.compat.programs import builtin_error, program


@program("docs/notebooks/thinking_in_jax.md", rtol=2e-5, atol=2e-5)
def thinking_in_jax():
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax import grad, jacfwd, jacobian, jacrev, jit, random, vmap

    x_np = np.linspace(0, 10, 50)
    x_jnp = jnp.linspace(0, 10, 50)
    out = {"linspace": [x_jnp, 2 * jnp.sin(x_jnp) * jnp.cos(x_jnp)],
           "types": [isinstance(x_jnp, jax.Array), isinstance(x_np, jax.Array),
                     len(x_jnp.devices())]}
    x = jnp.arange(10)
    try:
        x[0] = 10
        out["setitem"] = "no error"
    except TypeError as err:
        out["setitem"] = builtin_error(err)
    out["at_set"] = [x, x.at[0].set(10)]

    def norm(X):
        X = X - X.mean(0)
        return X / X.std(0)

    np.random.seed(1701)
    X = jnp.array(np.random.rand(200, 10))
    # bool(): np.allclose of numbax Arrays returns an Array (numbax's numpy dispatch,
    # docs/sharp_bits.md, Arrays); JAX's returns a Python bool
    out["norm"] = [jit(norm)(X)[:3], bool(np.allclose(norm(X), jit(norm)(X), atol=1E-6))]

    def get_negatives(x):
        return x[x < 0]

    x = jnp.array(np.random.randn(10))
    out["negatives"] = get_negatives(x)
    try:
        jit(get_negatives)(x)
        out["mask_under_jit"] = "no error"
    except jax.errors.NonConcreteBooleanIndexError as err:
        out["mask_under_jit"] = builtin_error(err)

    def sum_logistic(x):
        return jnp.sum(1.0 / (1.0 + jnp.exp(-x)))

    x_small = jnp.arange(3.)

    def first_finite_differences(f, x, eps=1E-3):
        return jnp.array([(f(x + eps * v) - f(x - eps * v)) / (2 * eps)
                          for v in jnp.eye(len(x))])

    def hessian(fun):
        return jit(jacfwd(jacrev(fun)))

    out["derivatives"] = [grad(sum_logistic)(x_small),
                          grad(jit(grad(jit(grad(sum_logistic)))))(1.0),
                          jacobian(jnp.exp)(x_small), hessian(sum_logistic)(x_small)]
    out["finite_differences_close"] = jnp.allclose(
        first_finite_differences(sum_logistic, x_small), grad(sum_logistic)(x_small),
        atol=1e-2)
    key = random.key(1701)
    key1, key2 = random.split(key)
    mat = random.normal(key1, (15, 10))
    batched_x = random.normal(key2, (4, 10))

    def apply_matrix(x):
        return jnp.dot(mat, x)

    out["batched"] = [jnp.stack([apply_matrix(v) for v in batched_x]),
                      jit(lambda b: jnp.dot(b, mat.T))(batched_x),
                      jit(lambda b: vmap(apply_matrix)(b))(batched_x)]
    printed = []

    @jax.jit
    def f(x):
        printed.append(str(x.aval if hasattr(x, "aval") else x))
        y = jnp.sin(x)
        return y

    out["traced_print"] = [f(2.), len(printed)]
    return out
