"""`numbax_as_jax()`: numbax under JAX's module names for the duration of a test, with JAX's
32-bit defaults, restoring afterwards whatever the process had (JAX itself, if something
imported it, and numbax's config)."""
from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

import numbax
from numbax._src import jax_alias


@contextlib.contextmanager
def numbax_as_jax() -> Iterator[None]:
    stashed = {n: m for n, m in sys.modules.items() if n == "jax" or n.startswith("jax.")}
    for name in stashed:
        del sys.modules[name]
    x64 = numbax.config.jax_enable_x64
    try:
        numbax.install_as_jax()
        numbax.config.update("jax_enable_x64", False)  # even where the environment says 1
        yield
    finally:
        jax_alias.uninstall_as_jax()
        numbax.config.update("jax_enable_x64", x64)
        sys.modules.update(stashed)
