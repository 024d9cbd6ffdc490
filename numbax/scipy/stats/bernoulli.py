"""numbax.scipy.stats.bernoulli: the bernoulli distribution's functions."""
from numbax._src.scipy.stats.discrete import bernoulli_cdf as cdf  # noqa: F401
from numbax._src.scipy.stats.discrete import bernoulli_logpmf as logpmf  # noqa: F401
from numbax._src.scipy.stats.discrete import bernoulli_pmf as pmf  # noqa: F401
from numbax._src.scipy.stats.discrete import bernoulli_ppf as ppf  # noqa: F401
