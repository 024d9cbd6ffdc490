"""numbax.scipy.stats.norm: the norm distribution's functions."""
from numbax._src.scipy.stats.location_scale import norm_cdf as cdf  # noqa: F401
from numbax._src.scipy.stats.location_scale import norm_isf as isf  # noqa: F401
from numbax._src.scipy.stats.location_scale import norm_logcdf as logcdf  # noqa: F401
from numbax._src.scipy.stats.location_scale import norm_logpdf as logpdf  # noqa: F401
from numbax._src.scipy.stats.location_scale import norm_logsf as logsf  # noqa: F401
from numbax._src.scipy.stats.location_scale import norm_pdf as pdf  # noqa: F401
from numbax._src.scipy.stats.location_scale import norm_ppf as ppf  # noqa: F401
from numbax._src.scipy.stats.location_scale import norm_sf as sf  # noqa: F401
