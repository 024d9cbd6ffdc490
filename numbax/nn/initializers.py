"""numbax.nn.initializers: weight initializers returning init(key, shape, dtype)."""
from numbax._src.nn.initializers import *  # noqa: F403
