"""numbax.scipy.stats.logistic: the logistic distribution's functions."""
from numbax._src.scipy.stats.location_scale import logistic_cdf as cdf  # noqa: F401
from numbax._src.scipy.stats.location_scale import logistic_isf as isf  # noqa: F401
from numbax._src.scipy.stats.location_scale import logistic_logpdf as logpdf  # noqa: F401
from numbax._src.scipy.stats.location_scale import logistic_pdf as pdf  # noqa: F401
from numbax._src.scipy.stats.location_scale import logistic_ppf as ppf  # noqa: F401
from numbax._src.scipy.stats.location_scale import logistic_sf as sf  # noqa: F401
