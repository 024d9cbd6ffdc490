"""numbax.scipy.stats.uniform: the uniform distribution's functions."""
from numbax._src.scipy.stats.location_scale import uniform_cdf as cdf  # noqa: F401
from numbax._src.scipy.stats.location_scale import uniform_logpdf as logpdf  # noqa: F401
from numbax._src.scipy.stats.location_scale import uniform_pdf as pdf  # noqa: F401
from numbax._src.scipy.stats.location_scale import uniform_ppf as ppf  # noqa: F401
