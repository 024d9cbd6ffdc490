"""numbax.random: counter-based, splittable threefry PRNG, bit-compatible with jax.random."""
from numbax._src.prng import KeyTy, PRNGKeyArray  # noqa: F401
from numbax._src.random import (  # noqa: F401
    bits,
    exponential,
    gumbel,
    multivariate_normal,
    normal,
    orthogonal,
    truncated_normal,
    uniform,
)
from numbax._src.random_continuous import (  # noqa: F401
    cauchy,
    double_sided_maxwell,
    laplace,
    logistic,
    lognormal,
    maxwell,
    pareto,
    rayleigh,
    triangular,
    wald,
    weibull_min,
)
from numbax._src.random_counts import binomial, multinomial, poisson  # noqa: F401
from numbax._src.random_discrete import (  # noqa: F401
    bernoulli,
    categorical,
    choice,
    geometric,
    permutation,
    rademacher,
    randint,
)
from numbax._src.random_gamma import (  # noqa: F401
    ball,
    beta,
    chisquare,
    dirichlet,
    f,
    gamma,
    generalized_normal,
    loggamma,
    random_gamma_p,
    t,
)
from numbax._src.random_keys import (  # noqa: F401
    PRNGKey,
    PRNGSpec,
    clone,
    fold_in,
    key,
    key_data,
    key_dtype,
    key_impl,
    split,
    wrap_key_data,
)

__all__ = [
    "PRNGKey", "PRNGKeyArray", "ball", "bernoulli", "beta", "binomial", "bits", "categorical",
    "cauchy", "chisquare", "choice", "clone", "dirichlet", "double_sided_maxwell", "exponential",
    "f", "fold_in", "gamma", "generalized_normal", "geometric", "gumbel", "key", "key_data",
    "key_dtype", "key_impl", "laplace", "loggamma", "logistic", "lognormal", "maxwell",
    "multinomial", "multivariate_normal", "normal", "orthogonal", "pareto", "permutation",
    "poisson", "rademacher", "randint", "random_gamma_p", "rayleigh", "split", "t", "triangular",
    "truncated_normal", "uniform", "wald", "weibull_min", "wrap_key_data",
]
