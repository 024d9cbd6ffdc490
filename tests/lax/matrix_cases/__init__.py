"""Rows of the primitive test matrix kept outside test_matrix.py, one module per lax family.

Each module here defines `cases() -> dict[str, list[Case]]` (primitive name -> rows); the
matrix (tests/lax/test_matrix.py) merges every module's rows into its own, so a family that
adds primitives adds one module and touches no shared file."""
from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from typing import NamedTuple


class Case(NamedTuple):
    """One row: `fn(*args)` jitted vs eager, vmapped vs a loop, and its gradients (argnums
    in `grad`, float64 inputs) vs finite differences in `modes`; `gpu` False for programs bound
    to the CPU devices (a mesh of virtual CPU devices), which the GPU matrix leaves out."""

    fn: Callable
    args: tuple
    grad: tuple = ()
    vmap: bool = True
    modes: tuple = ("fwd", "rev")
    gpu: bool = True


def collect() -> dict[str, list[Case]]:
    """Every family module's rows, merged by primitive name."""
    rows: dict[str, list[Case]] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        for name, cases in module.cases().items():
            rows.setdefault(name, []).extend(cases)
    return rows
