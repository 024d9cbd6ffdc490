"""numbax.export: jax.export's `export` and `Exported` (no serialization: numbax/_src/export.py
says why)."""
from numbax._src.export import Exported, export

__all__ = ["Exported", "export"]
