"""The CPU backend: fused loop nests as @njit modules (loops.py, rows.py), compiled control flow
(control_flow.py), library calls and host callables, all run by a generated Python driver
(driver.py)."""
from __future__ import annotations

import warnings

import numpy as np

from numbax._src import core, dtypes, host_eval
from numbax._src.compiler import (
    cache,
    compose_maps,
    epilogues,
    few_scatters,
    fusion,
    ir,
    narrow_floats,
    passes,
    pipeline,
    point_gathers,
    registry,
    sink_transposes,
)
from numbax._src.compiler.backend import (
    Backend,
    EagerCall,
    Executable,
    Program,
    warn_unlowered,
)
from numbax._src.compiler.cpu import (
    columns,
    control_flow,
    driver,
    loop_products,
    loops,
    rows,
    work,
)
from numbax._src.compiler.cpu.runtime import blas, copies, gemm_amx
from numbax._src.compiler.lowerings import linalg as linalg_lowerings
from numbax._src.compiler.registry import EAGER, Unsupported
from numbax._src.config import config
from numbax._src.core import ClosedJaxpr, Jaxpr, Var
from numbax._src.lax import convert as lconv
from numbax._src.lax import dot as ld
from numbax._src.lax import linalg_blas


def _load_numba_registries() -> None:
    """Loads Numba's CPU typing and lowering registries now, while numbax is imported. Numba
    loads them (importing ~100 of its modules) at its first compile or cache load in a
    process: 0.16 s of CPU on the 2-core VM that would land in the first jitted call, warm
    disk cache or not (docs/performance.md, "Compile time")."""
    from numba.core.registry import cpu_target

    cpu_target.target_context.refresh()
    cpu_target.typing_context.refresh()


class LapackCall(EagerCall):
    """An eager implementation the driver runs between kernels (LAPACK through numpy and scipy,
    sort), under the runtime's LAPACK thread rule (`blas.lapack_threads`): one thread below
    LAPACK_THREADED_MACS; above it BLAS's threads, once Numba's workers have stopped
    spinning after a kernel. With OpenBLAS's
    default threads beside them a 500 x 500 Cholesky in a jitted program took 9-14 ms
    instead of 2-5, and the product after it ran 3x slower beside OpenBLAS's spinning
    threads. The call's layout copies (`linalg_blas.relaid`) take threads only when LAPACK
    does."""

    __slots__ = ()

    row_major = staticmethod(copies.row_major)  # column-major results by blocks
    waits = True  # a long call may wait for Numba's spinning workers (blas.lapack_threads)

    def __call__(self, *args):
        threads = blas.lapack_threads(args, wait=self.waits)  # (0: BLAS's own count)
        with linalg_blas.copy_threads_within(threads or None):
            return blas.blas_call(super().__call__, threads, *args)


def _eager_lapack(impl, args: list, params: dict) -> list:
    """An eager LAPACK call under LapackCall's thread rule. With OpenBLAS's default threads an
    eager eigh of 256^2 took 17-116 ms on the 2-core VM beside two busy processes, and the
    singular values of 512 x 256 40-308 ms, against 3.4 and 6 on one thread."""
    threads = blas.lapack_threads(args)  # (0: BLAS's own count)
    with linalg_blas.copy_threads_within(threads or None):
        return blas.blas_call(lambda: impl(*args, **params), threads)


host_eval.EAGER_RUNNERS.update(dict.fromkeys(linalg_lowerings.LAPACK, _eager_lapack))


class HostCall(LapackCall):
    """Another eager implementation between kernels (sorts, special functions, callbacks, a
    narrow float's bitcast): BLAS's threads by the same rule, but it never waits for Numba's
    spinning workers, whose wait pays only for LAPACK's n^3 work. (With the wait, the bitcasts
    around a bfloat16 product of 1000^2, numpy views, slept 3.4 ms a call on 16 cores.)"""

    __slots__ = ()
    waits = False


class ViewCall(EagerCall):
    """A bit cast between dtypes of one width (narrow_floats' views between bfloat16 and
    uint16 around the products it keeps in bfloat16): numpy's view of the C-contiguous
    operand, without the eager dispatch and the BLAS thread rule (16 -> 1 us a view; a
    bfloat16 MLP step makes nine)."""

    __slots__ = ()

    def __call__(self, x: np.ndarray) -> list[np.ndarray]:
        # (ascontiguousarray makes a 0-d operand 1-d: the shape put back)
        return [np.ascontiguousarray(x).view(self.dtypes[0]).reshape(np.shape(x))]


class CpuBackend(Backend):
    name = "cpu"
    split_unrelated = True  # a kernel call costs ~1 µs here, a module ~50 ms of compile

    def __init__(self) -> None:
        _load_numba_registries()

    def config_key(self) -> tuple:
        # (which kernel loop bodies' products call: cpu/loop_products.py)
        return (*loops.CODEGEN_CONFIG, ("loop_products", loop_products.kind()))

    def settings_key(self) -> tuple:
        return (*self.config_key(), ("cpu_epilogues", config.hot("cpu_epilogues")),
                ("cpu_amx", gemm_amx.available()))

    def fusible(self, eqn) -> bool:
        return not narrow_floats.touches(eqn) and registry.fusible(eqn, self.name)

    def rewrite(self, jaxpr: Jaxpr) -> Jaxpr:
        """bfloat16 computed in float32 (narrow_floats.py); dense layers' bias adds and
        activations in their products (compiler/epilogues.py); a QR's R alone where nothing
        reads its Q (passes.qr_without_q); batched products of small matrices as fused
        loops (passes.expand_small_dots); scatters of a few indices a line as selects
        (few_scatters.py); gathers of single elements as loads (point_gathers.py);
        transposes sunk to small leaves (sink_transposes.py); chains of index maps as one
        (compose_maps.py)."""
        mode = narrow_floats.Mode(narrow_products=gemm_amx.available(), takes=tile_product,
                                  in_bodies=False)
        jaxpr = passes.expand_small_dots(passes.qr_without_q(narrow_floats.widen(jaxpr, mode)))
        jaxpr = point_gathers.gathers_as_lookups(few_scatters.expand_few_scatters(jaxpr))
        if config.hot("cpu_epilogues"):
            jaxpr = epilogues.fuse(jaxpr, epilogues.cpu_takes, epilogues.CPU_ACTIVATIONS,
                                   updates=True)
        return compose_maps.compose_index_maps(sink_transposes.sink_transposes(jaxpr))

    def op_cost(self, eqn: core.JaxprEqn) -> float:
        low = registry.lowering(eqn.primitive, "cpu")
        heavy = low is not None and low.heavy
        return work.NS_PER_HEAVY_OP / work.NS_PER_LIGHT_OP if heavy else 1.0

    def render_loop(self, nest: ir.LoopNest) -> ir.Kernel:
        if fusion.trailing(nest) is not None:
            return rows.render_rows(nest)
        return loops.render_loop(nest, columns.column_body)

    def build(self, program: Program) -> Executable:
        jaxpr, nodes = program.jaxpr, program.nodes
        sources: list[str] = []
        steps = []
        for node in nodes:
            if isinstance(node, ir.LoopNest):
                kernel = self.render_loop(node)
                steps.append(driver.Step(node, self._load(kernel, sources), kernel))
            else:
                steps.append(self._call_step(node, program, sources))
        plan = driver.donation_plan(jaxpr, nodes, program.donated)
        src, hosts = driver.render_driver(jaxpr, steps, plan)
        module = cache.load_plain(src)
        sources.append(src)
        consts = [np.asarray(core.to_numpy(c), order="C") for c in program.consts]
        run = module.driver  # parallel kernels set their own thread counts (runtime/threads)
        # (an in-place update's result is a fresh copy, or the donated buffer it was given)
        nested = {v for n in nodes if isinstance(n, ir.LoopNest) or driver.updates_in_place(n)
                  for v in n.outputs}
        fresh = tuple(isinstance(v, Var) and v in nested and jaxpr.outvars.count(v) == 1
                      for v in jaxpr.outvars)
        return Executable("cpu", run, [*hosts, *consts], jaxpr, sources,
                          tuple(i for _, i in plan), fresh)

    def _load(self, kernel: ir.Kernel, sources: list[str]) -> str:
        sources.append(kernel.source)
        return cache.load_module(kernel.source, self.name, self.config_key()).__name__

    def _call_step(self, node: ir.LibraryCall, program: Program,
                   sources: list[str]) -> driver.Step:
        """A library call: compiled control flow (or its host loop), a library rule, or the
        primitive's eager implementation."""
        eqn = node.eqn
        low = registry.lowering(eqn.primitive, "cpu")
        if low is not None and low.statements is not None:
            try:
                kernel = control_flow.render(eqn)
            except Unsupported:
                return driver.Step(node, host=low.host(
                    eqn, lambda sub, donated=frozenset(): self._compile_sub(
                        sub, program.name, donated)))
            return driver.Step(node, self._load(kernel, sources), kernel)
        if eqn.primitive is lconv.bitcast_convert_type_p and \
                eqn.invars[0].aval.dtype.itemsize == eqn.outvars[0].aval.dtype.itemsize and \
                narrow_floats.touches(eqn):
            return driver.Step(node, host=ViewCall(eqn.primitive, dict(eqn.params),
                                                   (eqn.outvars[0].aval.dtype,)))
        rule = registry.library(eqn, "cpu")
        if narrow_floats.touches(eqn) and not _kept_product(eqn):
            warn_narrow_float(eqn)
            rule = EAGER
        if rule is None or rule is EAGER:
            warn_unlowered(eqn.primitive)
            dtypes = tuple(v.aval.dtype for v in eqn.outvars)
            call = EagerCall if rule is None else \
                LapackCall if eqn.primitive in linalg_lowerings.LAPACK else HostCall
            return driver.Step(node, host=call(eqn.primitive, dict(eqn.params), dtypes))
        return driver.Step(node, call=rule)

    def _compile_sub(self, closed: ClosedJaxpr, name: str,
                     donated: frozenset = frozenset()) -> Executable:
        """A sub-jaxpr of host-driven control flow, compiled on its own (`donated`: the input
        positions whose buffers the loop may hand over, host_flow.host_while/host_scan)."""
        return pipeline.compile_with(closed, self, donated, name=name)


def tile_product(eqn: core.JaxprEqn) -> bool:
    """Whether narrow_floats keeps a bfloat16 product's operands for AMX's tiles
    (runtime/gemm_amx.py, by library.dot_general): a float32 or bfloat16 result, and matrices
    (of any batch) of a size the tiles take."""
    if eqn.outvars[0].aval.dtype not in (dtypes.bfloat16, np.dtype(np.float32)):
        return False
    x, y = (v.aval.shape for v in eqn.invars[:2])
    return gemm_amx.takes_product(x, y, eqn.params["dimension_numbers"])


def _kept_product(eqn: core.JaxprEqn) -> bool:
    """A product narrow_floats left on bfloat16 operands (`tile_product`): the library runs
    it."""
    return eqn.primitive is ld.dot_general_p and all(
        v.aval.dtype == dtypes.bfloat16 for v in eqn.invars) and tile_product(eqn)


_warned_narrow: set = set()


def warn_narrow_float(eqn: core.JaxprEqn) -> None:
    """One RuntimeWarning per primitive run eagerly on float16 or bfloat16 values (those
    narrow_floats.widen does not compute in float32): the result is eager's, the speed
    numpy's."""
    primitive = eqn.primitive
    if primitive in _warned_narrow or primitive in (lconv.convert_element_type_p,
                                                    lconv.bitcast_convert_type_p):
        return  # narrow_floats.widen's exact boundary casts and bit views: nothing to compile
    _warned_narrow.add(primitive)
    name = "bfloat16" if any(v.aval.dtype == dtypes.bfloat16
                             for v in (*eqn.invars, *eqn.outvars)) else "float16"
    warnings.warn(f"jit: {primitive.name} on {name} values runs its eager implementation "
                  f"between compiled kernels (Numba's CPU target has no {name}); results are "
                  "eager's. Compute in float32 for compiled speed.", RuntimeWarning,
                  stacklevel=3)
