"""numbax.scipy.stats.wrapcauchy: the wrapcauchy distribution's functions."""
from numbax._src.scipy.stats.shape import wrapcauchy_logpdf as logpdf  # noqa: F401
from numbax._src.scipy.stats.shape import wrapcauchy_pdf as pdf  # noqa: F401
