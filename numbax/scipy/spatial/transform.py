"""numbax.scipy.spatial.transform: Rotation and Slerp."""
from numbax._src.scipy.spatial import Rotation, Slerp  # noqa: F401
