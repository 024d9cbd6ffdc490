"""numbax.scipy.stats.gennorm: the gennorm distribution's functions."""
from numbax._src.scipy.stats.shape import gennorm_cdf as cdf  # noqa: F401
from numbax._src.scipy.stats.shape import gennorm_logpdf as logpdf  # noqa: F401
from numbax._src.scipy.stats.shape import gennorm_pdf as pdf  # noqa: F401
