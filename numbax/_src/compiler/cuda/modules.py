"""Assembly of CUDA kernel modules: the header every module opens with (versions, backend, the
jaxpr it implements, the imports kernels use) and modules of several named kernels."""
from __future__ import annotations

from numbax._src import core
from numbax._src.compiler import ir
from numbax._src.compiler.source import jaxpr_comment, version_line
from numbax._src.core import Jaxpr

_IMPORTS = [
    "import math  # noqa: F401",
    "",
    "import numpy as np  # noqa: F401",
    "",
    "from numbax._src.compiler.cuda.runtime import device as sc  # noqa: F401",
    "from numbax._src.compiler.cuda.runtime import memory as cuda_runtime",
    "",
    "cuda = cuda_runtime.get_cuda()",
    'CACHE = "__file__" in globals() and not cuda_runtime.simulator_enabled()',
]


def header(jaxpr: Jaxpr, names: core.PrintNames, *tags: str) -> str:
    """The module header: versions and backend, the jaxpr (printed with `names`, which the
    kernel's comments share), then the imports; `sc` is the scalar/device helper library."""
    return "\n".join([version_line("cuda", *tags), jaxpr_comment(jaxpr, names), *_IMPORTS])


def module(tag: str, funcs: dict[str, tuple[str, list[str]]]) -> str:
    """A module of kernels `name(params)` with the given body lines, for a library equation
    described by `tag` (its header prints no jaxpr)."""
    parts = [version_line("cuda", tag), *_IMPORTS, ""]
    for name, (params, body) in funcs.items():
        parts += ["", f"@cuda.jit(cache=CACHE)\ndef {name}({params}):", *body]
    return "\n".join(parts) + "\n"


def planned(source: str, launches: list[tuple[str, int, int]],
            scratch: list[tuple[int, object]] = ()) -> ir.Kernel:
    """A library kernel module whose functions all take (inputs..., outputs..., scratch...):
    launches as (function, blocks, threads), in order."""
    return ir.Kernel(source, launches=tuple(ir.Launch(f, b, t) for f, b, t in launches),
                     scratch=tuple(scratch))
