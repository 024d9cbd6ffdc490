"""numbax.scipy.stats.t: the t distribution's functions."""
from numbax._src.scipy.stats.shape import t_logpdf as logpdf  # noqa: F401
from numbax._src.scipy.stats.shape import t_pdf as pdf  # noqa: F401
