"""numbax under JAX's module names: `install_as_jax()` lets code that does `import jax` (a
script, or a library such as optax) run on numbax, unchanged, in the current process."""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types

from numbax._src.config import config

_PRIVATE_HINT = ("numbax mirrors JAX's public modules only; JAX's private implementation "
                 "(jax._src) has no counterpart here")


def _is_jax_name(name: str) -> bool:
    return name == "jax" or name.startswith("jax.")


class _NumbaxAsJaxFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers every `import jax[.x.y]` with the module `numbax[.x.y]`.

    The loader swaps its module in sys.modules for numbax's (the import system returns what
    sys.modules holds after exec_module), so numbax's modules keep their own names and specs.
    """

    def find_spec(self, fullname, path=None, target=None):
        if not _is_jax_name(fullname):
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        return None  # the import system's default empty module, swapped in exec_module

    def exec_module(self, module: types.ModuleType) -> None:
        name = module.__name__
        target = "numbax" + name[len("jax"):]
        if name == "jax._src" or name.startswith("jax._src."):
            raise ModuleNotFoundError(f"No module named {name!r} under numbax.install_as_jax(): "
                                      f"{_PRIVATE_HINT}.", name=name)
        try:
            sys.modules[name] = importlib.import_module(target)
        except ModuleNotFoundError as err:
            if err.name is None or not (target == err.name or
                                        target.startswith(err.name + ".")):
                raise  # a dependency missing inside numbax's own module: not ours to rename
            raise ModuleNotFoundError(
                f"No module named {name!r} under numbax.install_as_jax(): numbax has no "
                f"module {target!r} yet. Run this code with JAX itself, or leave out what "
                "needs it.", name=name) from None


_FINDER = _NumbaxAsJaxFinder()


def install_as_jax() -> None:
    """Makes `import jax` (and `jax.numpy`, `jax.lax`, `jax.tree_util`, `jax.typing`, ...) give
    numbax's modules for the rest of this process, and sets JAX's 32-bit defaults.

    Call it before anything imports jax, e.g. at the top of a script or a notebook, then
    import the JAX library you want to run (optax, ...)::

        import numbax
        numbax.install_as_jax()
        import optax                  # optax's `import jax` now gets numbax

    `python -m numbax.as_jax script.py [args]` does the same for a script you do not edit.

    Unlike numbax's numpy-like defaults, code run this way gets JAX's: `jax_enable_x64` is
    turned off (float32/int32 defaults), unless the environment (`NUMBAX_ENABLE_X64`,
    `JAX_ENABLE_X64`) chose a value. Calling it again is harmless.

    Raises:
      RuntimeError: JAX itself is already imported in this process. Code that imported it
        holds JAX's modules, and mixing JAX's arrays with numbax's is not supported.
      ModuleNotFoundError: later, from `import jax.<name>` where numbax has no such module
        (or `jax._src.*`, JAX's private implementation, which numbax does not mirror).
    """
    numbax = importlib.import_module("numbax")
    present = sys.modules.get("jax")
    if present is numbax and _FINDER in sys.meta_path:
        return
    real = sorted(n for n, m in sys.modules.items()
                  if _is_jax_name(n) and not (m is None or m.__name__.startswith("numbax")))
    if real:
        where = getattr(sys.modules.get(real[0]), "__file__", None) or "an unknown location"
        raise RuntimeError(
            f"numbax.install_as_jax(): the module {real[0]!r} is already imported in this "
            f"process (from {where}), so code that imported it holds JAX's own modules. Call "
            "numbax.install_as_jax() before anything imports jax, or run the program with "
            "`python -m numbax.as_jax script.py`.")
    if not config.set_by_environment("jax_enable_x64"):
        config.update("jax_enable_x64", False)
    sys.meta_path.insert(0, _FINDER)
    sys.modules["jax"] = numbax  # `"jax" in sys.modules` checks see it at once


def installed_as_jax() -> bool:
    """Whether install_as_jax() is in force in this process."""
    return _FINDER in sys.meta_path


def uninstall_as_jax() -> None:
    """Undoes install_as_jax(): removes the `jax` names it gave numbax's modules (for tests
    and tools that run JAX code on numbax in a process that goes on afterwards). Modules that
    imported jax meanwhile keep the numbax modules they hold; jax_enable_x64 is left as is."""
    while _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    for name, module in list(sys.modules.items()):
        if _is_jax_name(name) and module is not None and module.__name__.startswith("numbax"):
            del sys.modules[name]
