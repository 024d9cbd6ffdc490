"""The CUDA backend: loop nests and library kernels as @cuda.jit modules, launched by a host
driver (driver.py) with control flow driven from the host, replayed as a CUDA graph where that
pays (runtime/graphs.py)."""
from __future__ import annotations

import contextlib

import numpy as np

from numbax._src import core, dtypes
from numbax._src.compiler import ir
from numbax._src.compiler.backend import Backend, Executable, Program
from numbax._src.compiler.cuda import driver
from numbax._src.compiler.cuda.config import Config
from numbax._src.compiler.cuda.runtime import graphs
from numbax._src.compiler.cuda.runtime import memory as cuda_runtime


class CudaBackend(Backend):
    name = "cuda"

    def config(self) -> Config:
        """Launch geometry; the simulator's is smaller (decided when numba.cuda loads)."""
        return Config(cuda_runtime.simulator_enabled())

    def config_key(self) -> tuple:
        return self.config().key()

    def render_loop(self, nest: ir.LoopNest) -> ir.Kernel:
        return driver.render_nest(nest, self.config())

    def build(self, program: Program) -> Executable:
        if _holds_bfloat16(program.jaxpr):
            raise NotImplementedError(
                "numbax's GPU backend cannot hold bfloat16 values yet (numba-cuda types no "
                "bfloat16 arrays). Compute in float32 or float16 on the GPU, or run bfloat16 "
                "programs on the CPU backend.")
        cuda_runtime.get_cuda()
        cfg = self.config()
        scope = (cuda_runtime.on_device(program.device.id) if program.device is not None
                 else contextlib.nullcontext())
        with scope:  # the consts go to the device the program runs on
            built = driver.build_driver(program.jaxpr, cfg, program.name, nodes=program.nodes)
            consts = [cuda_runtime.to_device(np.asarray(core.to_numpy(c)))
                      for c in program.consts]
        run = built.module.driver
        jaxpr = program.jaxpr
        if graphs.replayable(built.steps, built.graphable and not built.hosts,
                             [graphs.nbytes(v.aval) for v in jaxpr.invars],
                             [graphs.nbytes(v.aval) for v in jaxpr.outvars]):
            run = graphs.GraphReplay(run, len(built.hosts) + len(consts))
        return Executable("cuda", run, [*built.hosts, *consts], jaxpr, built.sources,
                          device=program.device)


def _holds_bfloat16(jaxpr: core.Jaxpr) -> bool:
    """Whether any variable of `jaxpr` or of a sub-jaxpr in its params is bfloat16."""
    if any(v.aval.dtype == dtypes.bfloat16 for v in (*jaxpr.constvars, *jaxpr.invars)):
        return True
    for eqn in jaxpr.eqns:
        if any(getattr(v.aval, "dtype", None) == dtypes.bfloat16 for v in eqn.outvars):
            return True
        for p in eqn.params.values():
            for sub in p if isinstance(p, tuple) else (p,):
                inner = sub.jaxpr if isinstance(sub, core.ClosedJaxpr) else sub
                if isinstance(inner, core.Jaxpr) and _holds_bfloat16(inner):
                    return True
    return False
