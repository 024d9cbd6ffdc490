"""Modules imported at their first use rather than with numbax.

scipy.special, scipy.linalg and scipy.fft cost ~0.3 s of the ~1.4 s `import numbax` takes on
the 2-core VM (scipy.special alone 0.2 s: it pulls in scipy's array-API layer, which imports
numpy.testing and numpy.f2py), and numbax uses them only inside eager implementations. Every
virtual-device worker process imports numbax, so pmap and shard_map programs paid it once
per device. `lazy("scipy.special")` stands where `import scipy.special as sp` stood: the
module is imported when an attribute is first read, and its attributes are copied over so
later reads are plain lookups."""
from __future__ import annotations

import importlib
import types


class LazyModule(types.ModuleType):
    """Stands for the module `name` until an attribute is read; then is a copy of it."""

    def __getattr__(self, attr: str):
        module = importlib.import_module(self.__name__)
        self.__dict__.update(module.__dict__)  # later reads find it without __getattr__
        return getattr(module, attr)


def lazy(name: str) -> types.ModuleType:
    """The module `name`, imported at the first read of one of its attributes."""
    return LazyModule(name)
