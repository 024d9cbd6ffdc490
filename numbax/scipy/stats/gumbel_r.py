"""numbax.scipy.stats.gumbel_r: the gumbel_r distribution's functions."""
from numbax._src.scipy.stats.location_scale import gumbel_r_cdf as cdf  # noqa: F401
from numbax._src.scipy.stats.location_scale import gumbel_r_logcdf as logcdf  # noqa: F401
from numbax._src.scipy.stats.location_scale import gumbel_r_logpdf as logpdf  # noqa: F401
from numbax._src.scipy.stats.location_scale import gumbel_r_logsf as logsf  # noqa: F401
from numbax._src.scipy.stats.location_scale import gumbel_r_pdf as pdf  # noqa: F401
from numbax._src.scipy.stats.location_scale import gumbel_r_ppf as ppf  # noqa: F401
from numbax._src.scipy.stats.location_scale import gumbel_r_sf as sf  # noqa: F401
