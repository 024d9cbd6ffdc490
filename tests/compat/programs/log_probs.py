"""docs/notebooks/vmapped_log_probs.md: Bayesian logistic regression's log joint batched by
hand and by vmap, and variational inference (ELBO gradients under jit(value_and_grad)) with
a quasi-stateful jitted sampler taking a static shape. 1000 steps become 60."""
from tests.compat.programs import builtin_error, program


@program("docs/notebooks/vmapped_log_probs.md", rtol=5e-5, atol=5e-5, heavy=True)
def vmapped_log_probs_advi():
    import jax
    import jax.numpy as jnp
    import jax.scipy as jsp
    import numpy as np
    import scipy as sp
    from jax import random

    np.random.seed(10009)
    num_features = 10
    num_points = 100
    true_beta = np.random.randn(num_features).astype(jnp.float32)
    all_x = np.random.randn(num_points, num_features).astype(jnp.float32)
    y = (np.random.rand(num_points) < sp.special.expit(all_x.dot(true_beta))).astype(jnp.int32)

    def log_joint(beta):
        result = 0.
        result = result + jnp.sum(jsp.stats.norm.logpdf(beta, loc=0., scale=1.))
        result = result + jnp.sum(-jnp.log(1 + jnp.exp(-(2*y-1) * jnp.dot(all_x, beta))))
        return result

    out = {"log_joint": log_joint(np.random.randn(num_features))}
    try:
        log_joint(np.random.randn(10, num_features))
        out["unbatched_error"] = "no error"
    except (ValueError, TypeError) as e:
        out["unbatched_error"] = builtin_error(e)

    def batched_log_joint(beta):
        result = 0.
        result = result + jnp.sum(jsp.stats.norm.logpdf(beta, loc=0., scale=1.), axis=-1)
        result = result + jnp.sum(-jnp.log(1 + jnp.exp(-(2*y-1) * jnp.dot(all_x, beta.T).T)),
                                  axis=-1)
        return result

    batch_size = 10
    batched_test_beta = np.random.randn(batch_size, num_features)
    out["by_hand"] = batched_log_joint(batched_test_beta)
    out["vmap"] = jax.vmap(log_joint)(batched_test_beta)

    @jax.jit
    def log_joint(beta):
        result = 0.
        result = result + jnp.sum(jsp.stats.norm.logpdf(beta, loc=0., scale=10.))
        result = result + jnp.sum(-jnp.log(1 + jnp.exp(-(2*y-1) * jnp.dot(all_x, beta))))
        return result

    batched_log_joint = jax.jit(jax.vmap(log_joint))

    def elbo(beta_loc, beta_log_scale, epsilon):
        beta_sample = beta_loc + jnp.exp(beta_log_scale) * epsilon
        return (jnp.mean(batched_log_joint(beta_sample), 0)
                + jnp.sum(beta_log_scale - 0.5 * np.log(2*np.pi)))

    elbo = jax.jit(elbo)
    elbo_val_and_grad = jax.jit(jax.value_and_grad(elbo, argnums=(0, 1)))

    def normal_sample(key, shape):
        new_key, sub_key = random.split(key)
        return new_key, random.normal(sub_key, shape)

    normal_sample = jax.jit(normal_sample, static_argnums=(1,))
    key = random.key(10003)
    beta_loc = jnp.zeros(num_features, jnp.float32)
    beta_log_scale = jnp.zeros(num_features, jnp.float32)
    step_size = 0.01
    epsilon_shape = (32, num_features)
    elbos = []
    for i in range(60):
        key, epsilon = normal_sample(key, epsilon_shape)
        elbo_val, (beta_loc_grad, beta_log_scale_grad) = elbo_val_and_grad(
            beta_loc, beta_log_scale, epsilon)
        beta_loc += step_size * beta_loc_grad
        beta_log_scale += step_size * beta_log_scale_grad
        if i % 10 == 0:
            elbos.append(elbo_val)
    out["elbos"] = jnp.stack(elbos)
    out["posterior"] = [beta_loc, beta_log_scale]
    return out
