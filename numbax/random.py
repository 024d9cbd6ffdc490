"""numbax.random: counter-based, splittable threefry PRNG, bit-compatible with jax.random."""
from numbax._src.prng import PRNGKeyArray  # noqa: F401
from numbax._src.random import (  # noqa: F401
    PRNGKey,
    bernoulli,
    beta,
    bits,
    categorical,
    choice,
    dirichlet,
    exponential,
    fold_in,
    gamma,
    gumbel,
    key,
    key_data,
    loggamma,
    multivariate_normal,
    normal,
    permutation,
    randint,
    split,
    truncated_normal,
    uniform,
    wrap_key_data,
)

__all__ = [
    "PRNGKey", "PRNGKeyArray", "bernoulli", "beta", "bits", "categorical", "choice", "dirichlet",
    "exponential", "fold_in", "gamma", "gumbel", "key", "key_data", "loggamma",
    "multivariate_normal", "normal", "permutation", "randint", "split", "truncated_normal",
    "uniform", "wrap_key_data",
]
