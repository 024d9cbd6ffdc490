"""numbax.image: image resampling (jax.image): resize, scale_and_translate, ResizeMethod."""
from numbax._src.image import ResizeMethod, resize, scale_and_translate  # noqa: F401

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]
