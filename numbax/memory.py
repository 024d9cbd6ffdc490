"""numbax.memory: memory spaces (jax.memory.Space). numbax keeps every buffer in host memory;
the names exist so code that passes memory_space= runs."""
from numbax._src.refs import MemorySpace as Space  # noqa: F401

__all__ = ["Space"]
