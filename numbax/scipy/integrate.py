"""numbax.scipy.integrate: numerical integration of sampled values."""
from numbax._src.scipy.integrate import trapezoid  # noqa: F401
