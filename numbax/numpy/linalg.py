"""numbax.numpy.linalg: numpy.linalg (jnp.linalg) on traced arrays."""
from numbax._src.numpy.linalg import *  # noqa: F403
from numbax._src.numpy.linalg import __all__  # noqa: F401
