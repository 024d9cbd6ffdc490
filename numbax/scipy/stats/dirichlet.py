"""numbax.scipy.stats.dirichlet: the dirichlet distribution's functions."""
from numbax._src.scipy.stats.multivariate import dirichlet_logpdf as logpdf  # noqa: F401
from numbax._src.scipy.stats.multivariate import dirichlet_pdf as pdf  # noqa: F401
