"""Assembly of CUDA kernel modules: the header every module opens with (versions, backend, the
jaxpr it implements, the imports kernels use), modules of several named kernels, and the
grid-stride loop of one-thread-per-element library kernels (kernels/index.py, windows.py)."""
from __future__ import annotations

from numbax._src import core
from numbax._src.compiler import ir
from numbax._src.compiler.cuda.config import Config, prod, strides
from numbax._src.compiler.source import jaxpr_comment, version_line
from numbax._src.core import Jaxpr, JaxprEqn

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


def eqn_kernel(eqn: JaxprEqn, cfg: Config, funcs: dict[str, tuple[str, list[str]]],
               steps: list[tuple[str, int]]) -> ir.Kernel:
    """A library equation's module of `funcs`, launched in `steps` order, each over its
    element count (grid-stride: cfg.blocks of it)."""
    ins = [x.aval for x in eqn.invars]
    out = eqn.outvars[0].aval
    tag = f"{eqn.primitive.name} {tuple(a.shape for a in ins)} -> {out.shape} {out.dtype.name}"
    launches = [ir.Launch(f, cfg.blocks(n), cfg.threads) for f, n in steps if n]
    return ir.Kernel(module(tag, funcs), launches=tuple(launches))


def eqn_args(eqn: JaxprEqn) -> str:
    """The kernel parameters of a one-output library equation: a0, a1, ..., o0."""
    return ", ".join([f"a{k}" for k in range(len(eqn.invars))] + ["o0"])


def grid_loop(n: int, shape, body: list[str], pre: list[str] = ()) -> list[str]:
    """A grid-stride loop over n elements of `shape`: j<d> is element i's index along axis d."""
    lines = [f"    {line}" for line in pre] + ["    i = cuda.grid(1)", f"    while i < {n}:"]
    st = strides(shape)
    lines += [f"        j{d} = (i // {st[d]}) % {shape[d]}" for d in range(len(shape))]
    lines += [f"        {line}" for line in body] + ["        i += cuda.gridsize(1)"]
    return lines


def grid_kernel(eqn: JaxprEqn, cfg: Config, shape, body: list[str],
                pre: list[str] = ()) -> ir.Kernel:
    """One grid-stride kernel over the elements of `shape`."""
    n = prod(shape)
    return eqn_kernel(eqn, cfg, {"kernel": (eqn_args(eqn), grid_loop(n, shape, body, pre))},
                      [("kernel", n)])
