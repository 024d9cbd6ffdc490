"""numbax.numpy: the numpy API on traced arrays (jax.numpy), defined in numbax/_src/jnp.py."""
from numbax._src.jnp import *  # noqa: F403
from numbax._src.jnp import bool  # noqa: A004, F401
from numbax._src.numpy.arraylike import checked_namespace as _checked_namespace
from numbax._src.numpy.indexing import _getitem, _IndexUpdateHelper  # noqa: F401
from numbax.numpy import fft, linalg  # noqa: F401

globals().update(_checked_namespace(globals()))  # JAX's TypeError for lists, e.g. sum([1, 2])
