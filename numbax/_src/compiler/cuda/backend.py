"""The CUDA backend: loop nests and library kernels as @cuda.jit modules, launched by a host
driver (driver.py) with control flow driven from the host, replayed as a CUDA graph where that
pays (runtime/graphs.py)."""
from __future__ import annotations

import contextlib

import numpy as np

from numbax._src import core, dtypes
from numbax._src.compiler import epilogues, ir, narrow_floats
from numbax._src.compiler.backend import Backend, Executable, Program
from numbax._src.compiler.cuda import driver
from numbax._src.compiler.cuda.config import Config
from numbax._src.compiler.cuda.runtime import cublas, cublaslt, graphs
from numbax._src.compiler.cuda.runtime import memory as cuda_runtime
from numbax._src.config import config
from numbax._src.lax import convert as lconv
from numbax._src.lax import dot as ld


class CudaBackend(Backend):
    name = "cuda"

    def config(self) -> Config:
        """Launch geometry; the simulator's is smaller (decided when numba.cuda loads)."""
        return Config(cuda_runtime.simulator_enabled())

    def config_key(self) -> tuple:
        return self.config().key()

    def settings_key(self) -> tuple:
        return (*self.config_key(), ("cuda_epilogues", config.hot("cuda_epilogues")))

    def render_loop(self, nest: ir.LoopNest) -> ir.Kernel:
        return driver.render_nest(nest, self.config())

    def rewrite(self, jaxpr: core.Jaxpr) -> core.Jaxpr:
        """bfloat16 computed in float32 (numba-cuda has no bfloat16 arithmetic), its products
        on cuBLAS's bfloat16 tensor cores where cuBLAS is there (narrow_floats.py); dense
        layers' bias adds and ReLUs in their products where cuBLASLt is (compiler/epilogues.py)."""
        jaxpr = narrow_floats.widen(jaxpr, narrow_floats.Mode((dtypes.bfloat16,),
                                                              cublas.available()))
        if config.hot("cuda_epilogues") and cublaslt.available():
            jaxpr = epilogues.fuse(jaxpr, cublaslt.takes)
        return jaxpr

    def build(self, program: Program) -> Executable:
        left = _bfloat16_left(program.jaxpr)
        if left is not None:
            raise NotImplementedError(
                f"numbax's GPU backend cannot run {left} on bfloat16 values (it computes "
                "bfloat16 in float32 and has no float32 form of this equation). Compute it in "
                "float32 on the GPU, or run it on the CPU backend.")
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


def _bfloat16_left(jaxpr: core.Jaxpr) -> str | None:
    """The name of an equation of `jaxpr` (or of a sub-jaxpr in its params) still computing
    on bfloat16 after the rewrite, or None: only the views between bfloat16 and uint16 and
    cuBLAS's products may read or make it."""
    for eqn in jaxpr.eqns:
        if eqn.primitive not in (lconv.bitcast_convert_type_p, ld.dot_general_p) and any(
                getattr(v.aval, "dtype", None) == dtypes.bfloat16
                for v in (*eqn.invars, *eqn.outvars)):
            return eqn.primitive.name
        for sub in core.jaxprs_in_params(eqn.params):
            name = _bfloat16_left(sub)
            if name is not None:
                return name
    return None
