"""numbax.scipy.stats.multinomial: the multinomial distribution's functions."""
from numbax._src.scipy.stats.discrete import multinomial_logpmf as logpmf  # noqa: F401
from numbax._src.scipy.stats.discrete import multinomial_pmf as pmf  # noqa: F401
