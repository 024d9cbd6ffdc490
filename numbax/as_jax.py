"""`python -m numbax.as_jax script.py [args]` (or `-m module [args]`): runs a program written
for JAX on numbax without editing it — `numbax.install_as_jax()`, then the program as
`python script.py` would run it."""
from __future__ import annotations

import os
import runpy
import sys

from numbax._src.jax_alias import install_as_jax

_USAGE = ("usage: python -m numbax.as_jax script.py [args ...]\n"
          "       python -m numbax.as_jax -m module [args ...]\n"
          "Runs a program that imports jax on numbax (numbax.install_as_jax() first).")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_USAGE, file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    if argv[0] == "-m" and len(argv) < 2:
        print(f"python -m numbax.as_jax: -m needs a module name.\n{_USAGE}", file=sys.stderr)
        return 2
    if argv[0] != "-m" and not os.path.exists(argv[0]):
        print(f"python -m numbax.as_jax: no such script {argv[0]!r}.", file=sys.stderr)
        return 2
    install_as_jax()
    if argv[0] == "-m":
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = argv
        sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))  # as `python script.py` does
        runpy.run_path(argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
