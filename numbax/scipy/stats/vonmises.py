"""numbax.scipy.stats.vonmises: the vonmises distribution's functions."""
from numbax._src.scipy.stats.shape import vonmises_logpdf as logpdf  # noqa: F401
from numbax._src.scipy.stats.shape import vonmises_pdf as pdf  # noqa: F401
