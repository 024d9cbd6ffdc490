"""numbax.scipy.stats.expon: the expon distribution's functions."""
from numbax._src.scipy.stats.location_scale import expon_cdf as cdf  # noqa: F401
from numbax._src.scipy.stats.location_scale import expon_logcdf as logcdf  # noqa: F401
from numbax._src.scipy.stats.location_scale import expon_logpdf as logpdf  # noqa: F401
from numbax._src.scipy.stats.location_scale import expon_logsf as logsf  # noqa: F401
from numbax._src.scipy.stats.location_scale import expon_pdf as pdf  # noqa: F401
from numbax._src.scipy.stats.location_scale import expon_ppf as ppf  # noqa: F401
from numbax._src.scipy.stats.location_scale import expon_sf as sf  # noqa: F401
