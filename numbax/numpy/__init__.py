"""numbax.numpy: the numpy API on traced arrays (jnp)."""
from numbax._src.numpy.indexing import *  # noqa: F403
from numbax._src.numpy.indexing import _getitem, _IndexUpdateHelper  # noqa: F401
from numbax._src.numpy.lax_numpy import *  # noqa: F403
from numbax._src.numpy.ufuncs import *  # noqa: F403
