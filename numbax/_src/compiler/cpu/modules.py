"""The text every generated CPU module opens with (versions, backend, the jaxpr it implements,
the imports kernels use) and the decorators of its kernels: loop nests (loops.py, rows.py),
compiled control flow (control_flow.py) and the driver (driver.py)."""
from __future__ import annotations

import re

from numbax._src import core
from numbax._src.compiler.source import jaxpr_comment, version_line
from numbax._src.core import Jaxpr


def header(jaxpr: Jaxpr, parallel: bool | str, names: core.PrintNames) -> str:
    """Versions, backend and the jaxpr implemented (printed with the names the comments use),
    then the imports every CPU module may use: numpy, Numba, and the runtime as fm (fast
    math; fe its error functions, tg its float32 sine and cosine), rd (reduction accumulators),
    sc (scalar helpers) and xe (XLA's float32 erf_inv)."""
    return "\n".join([
        version_line("cpu", parallel if isinstance(parallel, str) else f"parallel={parallel}"),
        jaxpr_comment(jaxpr, names),
        "import math  # noqa: F401",
        "",
        "import numba  # noqa: F401",
        "import numpy as np  # noqa: F401",
        "from numba import njit, prange  # noqa: F401",
        "",
        "from numbax._src.compiler.cpu.runtime import fastmath as fm  # noqa: F401",
        "from numbax._src.compiler.cpu.runtime import fastmath_erf as fe  # noqa: F401",
        "from numbax._src.compiler.cpu.runtime import fastmath_trig as tg  # noqa: F401",
        "from numbax._src.compiler.cpu.runtime import reductions as rd  # noqa: F401",
        "from numbax._src.compiler.cpu.runtime import scalars as sc  # noqa: F401",
        "from numbax._src.compiler.cpu.runtime import xla_erf_inv as xe  # noqa: F401",
        "",
        'CACHE = "__file__" in globals()  # Numba caches only modules loaded from a file',
    ])


# The runtime modules compiled control flow calls beyond the header's, by the alias its source
# uses: its products' blocks (loop_products.py, loop_matvec.py) and the array forms of library
# primitives (lowerings/flow_arrays.py).
_FLOW_RUNTIME = {"gl": "gemm_loops", "bp": "blas_parts", "fi": "flow_index", "fl": "flow_linalg",
                 "mv": "matvec"}


def runtime_imports(body: str) -> str:
    """The import lines of the `_FLOW_RUNTIME` modules that `body` calls."""
    return "".join(f"\nfrom numbax._src.compiler.cpu.runtime import {module} as {alias}  "
                   "# noqa: F401" for alias, module in _FLOW_RUNTIME.items()
                   if re.search(rf"\b{alias}\.", body))


def decorator(parallel: bool) -> str:
    """Kernels are called from the Python driver only, never as first-class functions inside
    Numba code, so they need no cfunc wrapper (skipping it saves ~5 ms of LLVM per kernel)."""
    return (f"@njit(parallel={parallel}, error_model=\"numpy\", cache=CACHE, fastmath=False, "
            "no_cfunc_wrapper=True)")


# Numba's parallel options for compiled control flow: its pranges only. Numba's other passes
# would turn each array expression of a loop body (a slice's copy, a concatenation) into a
# parallel region of its own, a fork and a join per step for a few microseconds of work.
PRANGE_ONLY = ('{"prange": True, "comprehension": False, "reduction": False, '
               '"inplace_binop": False, "setitem": False, "numpy": False, "stencil": False, '
               '"fusion": False}')
