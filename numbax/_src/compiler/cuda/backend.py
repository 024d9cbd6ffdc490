"""The CUDA backend: loop nests and library kernels as @cuda.jit modules, launched by a host
driver (driver.py) with control flow driven from the host, replayed as a CUDA graph where that
pays (runtime/graphs.py)."""
from __future__ import annotations

import contextlib

import numpy as np

from numbax._src import core
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
