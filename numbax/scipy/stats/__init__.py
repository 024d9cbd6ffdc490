"""numbax.scipy.stats: scipy.stats' distributions (JAX's subset) and summaries on traced
arrays; each distribution is a module of functions (norm.logpdf, ...)."""
from numbax._src.scipy.stats.kde import gaussian_kde  # noqa: F401
from numbax._src.scipy.stats.summary import ModeResult, mode, rankdata, sem  # noqa: F401
from numbax.scipy.stats import (  # noqa: F401
    bernoulli,
    beta,
    betabinom,
    binom,
    cauchy,
    chi2,
    dirichlet,
    expon,
    gamma,
    gennorm,
    geom,
    gumbel_l,
    gumbel_r,
    laplace,
    logistic,
    multinomial,
    multivariate_normal,
    nbinom,
    norm,
    pareto,
    poisson,
    t,
    truncnorm,
    uniform,
    vonmises,
    wrapcauchy,
)
