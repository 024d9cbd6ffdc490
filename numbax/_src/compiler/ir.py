"""The kernel graph: what fusion makes of a jaxpr (loop nests and library calls) and what a
backend renders for one node (a Kernel: module source plus how its driver runs it)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from numbax._src.core import JaxprEqn, Var


@dataclass(eq=False)
class LoopNest:
    """Equations over one iteration space (`shape`), optionally reducing `reduce_axes`."""

    shape: tuple[int, ...]
    eqns: list[JaxprEqn] = field(default_factory=list)
    reduce_axes: tuple[int, ...] | None = None
    inputs: list[Var] = field(default_factory=list)
    outputs: list[Var] = field(default_factory=list)
    reduced: set = field(default_factory=set)  # outvars of reductions in this nest
    # A row group (fusion.fuse_rows): the equations split into passes, each ("row", eqns)
    # looping over the reduced trailing axes or ("outer", eqns) run once per outer index;
    # None otherwise.
    passes: list | None = None


@dataclass(eq=False)
class LibraryCall:
    """One equation the driver runs on its own: a library kernel, a view, control flow, or the
    primitive's eager implementation."""

    eqn: JaxprEqn
    inputs: list[Var] = field(default_factory=list)
    outputs: list[Var] = field(default_factory=list)


Node = LoopNest | LibraryCall


def node_eqns(node: Node) -> list[JaxprEqn]:
    return node.eqns if isinstance(node, LoopNest) else [node.eqn]


@dataclass(frozen=True)
class Launch:
    """One CUDA launch of a kernel module's function: grid and block sizes, and its arguments
    as references into the driver's buffers — ("in", k), ("out", k) or ("scratch", k); None
    means every input, then every output, then every scratch buffer."""

    function: str
    blocks: int
    threads: int
    args: tuple[tuple[str, int], ...] | None = None


@dataclass
class Kernel:
    """A rendered kernel module and how the driver runs it.

    CPU: the module's source holds no array size (one compiled kernel serves every shape of
    its structure). The driver calls `function` with the arguments' reshaped views (`views`,
    per input then output: a shape, or None for the array as is), then `args`: sources of the
    sizes and scalars that follow the arrays. When `parallel`, the module's prange variant
    `parallel_function` may run instead, on the thread count runtime/threads.py gives its estimated
    serial time `work_ns`; `chunks` = (elements, minimum per chunk) makes the driver pass that
    variant a chunk count as its last argument.
    CUDA: `launches` in order, with `scratch` device buffers (size, dtype) allocated before
    them and passed after the outputs."""

    source: str
    parallel: bool = False
    views: tuple[tuple[int, ...] | None, ...] = ()
    args: tuple[str, ...] = ()
    function: str = "kernel"
    parallel_function: str = "kernel"
    work_ns: float = 0.0
    chunks: tuple[int, int] | None = None
    # the module's `kernel_task` (cpu/pool_tasks.py): a busy machine's parallel arm on the
    # native pool, over `task_rows` outer rows, chunk bounds on multiples of `task_align`
    task: bool = False
    task_rows: int = 0
    task_align: int = 1
    task_function: str = "kernel_task"
    # the module's `kernel_pool` and `PART_TASKS` (a full reduction's passes or a column
    # reduction: their chunks as native pool jobs; cpu/pool_tasks.py)
    pool_parts: bool = False
    # compiled control flow (cpu/control_flow.py): `parallel` when it runs on threads, its
    # products through blas_parts.loop_block (its OpenBLAS entry and thread count passed last)
    # or, where `loop_work` (float64 words of scratch a thread), gemm_loops.loop_block (the
    # scratch and thread count passed last)
    loop_products: bool = False
    loop_work: int = 0
    # ... or none, but matrix-vector products on row blocks (cpu/loop_matvec.py): the thread
    # count alone passed last
    loop_threads: bool = False
    # compiled control flow on threads: the module's one-thread variant (plain loops, products
    # in one block), which the driver runs on one thread and until the kernel has run
    # `tier_ns` of estimated serial work (its pranges' compile: threads.parallel_ready); the
    # parallel regions a call enters (the loops' trips; while loops counted as 64); where
    # `quiet_site` (loop nests alone), the call site's timings choose one thread or more,
    # trying threads once a serial call takes REGION_WORTH_S for each of `site_regions` (the
    # regions with each while loop run once: its trips are unknown, and its serial time
    # grows with the trips it makes, as its regions do)
    serial_function: str | None = None
    regions: int = 0
    site_regions: int = 0
    quiet_site: bool = False
    tier_ns: float = 0.0
    launches: tuple[Launch, ...] = ()
    scratch: tuple[tuple[int, np.dtype], ...] = ()
