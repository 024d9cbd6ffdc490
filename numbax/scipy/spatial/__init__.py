"""numbax.scipy.spatial: spatial transforms (the transform module)."""
from numbax.scipy.spatial import transform  # noqa: F401
