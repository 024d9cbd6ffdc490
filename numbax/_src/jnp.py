"""jax.numpy's names in one place: the public numbax.numpy re-exports this module, and numbax's
own libraries (random, nn, scipy) import it as `jnp`, since _src never imports the public
namespaces. Each family module lists its names in __all__."""
# isort: skip_file
from numbax._src.numpy.array_io import *  # noqa: F403
from numbax._src.numpy.bits import *  # noqa: F403
from numbax._src.numpy.calculus import *  # noqa: F403
from numbax._src.numpy.contractions import *  # noqa: F403
from numbax._src.numpy.convolve import convolve, correlate  # noqa: F401
from numbax._src.numpy.creation import *  # noqa: F403
from numbax._src.numpy.dtypes_api import *  # noqa: F403
from numbax._src.numpy.dtypes_api import bool_ as bool  # noqa: A004, F401
from numbax._src.numpy.flips import *  # noqa: F403
from numbax._src.numpy.index_tricks import *  # noqa: F403
from numbax._src.numpy.indexing import *  # noqa: F403
from numbax._src.numpy.indexing import _getitem, _IndexUpdateHelper  # noqa: F401
from numbax._src.numpy.lax_numpy import *  # noqa: F403
from numbax._src.numpy.linalg_ops import *  # noqa: F403
from numbax._src.numpy.padding import *  # noqa: F403
from numbax._src.numpy.polynomial import *  # noqa: F403
from numbax._src.numpy.quantiles import *  # noqa: F403
from numbax._src.numpy.reductions import *  # noqa: F403
from numbax._src.numpy.selection import *  # noqa: F403
from numbax._src.numpy.setops import *  # noqa: F403
from numbax._src.numpy.shapes import *  # noqa: F403
from numbax._src.numpy.sorting import *  # noqa: F403
from numbax._src.numpy.statistics import *  # noqa: F403
from numbax._src.numpy.ufuncs import *  # noqa: F403
from numbax._src.numpy.special import sinc  # noqa: F401
# ufunc objects (jnp.add.at, .reduce, ...) replace the plain functions of the same names
from numbax._src.numpy.ufunc_api import *  # noqa: F403
from numbax._src.numpy.updates import *  # noqa: F403
from numbax._src.numpy.vectorize import *  # noqa: F403
from numbax._src.numpy.window_functions import *  # noqa: F403
from numbax._src.numpy import fft, linalg  # noqa: F401  (jnp.fft, jnp.linalg)
