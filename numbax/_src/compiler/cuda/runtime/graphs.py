"""Whole GPU programs replayed as CUDA graphs: one launch per call instead of one per step.

A generated driver issues its launches, cuBLAS calls and copies one by one from Python, each
~8-20 µs of host time: a training step of a few dozen steps is bound by the host (1.1 ms on an
H200 against XLA's 0.19 ms), and a `lax.scan` pays its body's launches every iteration. A
program whose driver never reads a value back (`DriverBuild.graphable`: no while_loop or cond,
no host fallback, no CuPy-allocated result) runs like this:

- its first WARMUP calls run the driver itself (kernels compile, launch sites settle);
- the next call runs the driver under stream capture (stream.py) on graph-owned copies of its
  inputs: nothing executes, every buffer the driver allocates is taken out of the pool for
  good (memory.holding), and a scan's iterations are unrolled into the graph;
- every later call copies its inputs into those buffers, replays the graph on the work stream
  and copies the outputs into fresh buffers, so results stay independent arrays (as JAX's are)
  and the next replay cannot overwrite them; each set of copies is one kernel launch
  (`Copies`: a cuMemcpyDtoDAsync per buffer cost ~5 µs of host time each, 70 µs a training
  step of 8 inputs and 6 outputs).

Whether a program is replayed is decided once, when it is compiled (`worth`): the driver steps
saved against the copies added. The same holds for the sub-drivers a host-driven loop or
branch calls (a while_loop's body, a cond's branches, a scan body without stacked outputs):
one graph launch an iteration instead of the body's launches; inside an enclosing program's
capture they run their drivers, so the loop is unrolled into the enclosing graph. A capture
that fails leaves the program on its driver (nothing ran under capture). One call at a time
replays a graph; a call finding it busy (another thread) runs the driver itself.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from numbax._src.compiler import cache
from numbax._src.compiler.cuda.config import Config
from numbax._src.compiler.cuda.runtime import memory, stream
from numbax._src.compiler.cuda.runtime.launch import launcher
from numbax._src.config import config

WARMUP = 2  # calls run by the driver itself before the capture
STEP_US = 8.0  # host time of one driver step (a launch through launch.py's fast path, H200 host)
COPY_BYTES_PER_US = 1e6  # copied bytes per µs on the card, a low estimate (1 TB/s)


def worth(steps: int, copy_bytes: int) -> bool:
    """Whether replaying a graph beats the driver: the host time of the driver's steps saved
    must be twice what replay adds (a graph launch and two copy launches, and the copies'
    time on the card): a single bandwidth-bound kernel over large arrays is never replayed."""
    return steps * STEP_US > 2 * (3 * STEP_US + copy_bytes / COPY_BYTES_PER_US)


def nbytes(aval: Any) -> int:
    """The bytes of an array of this abstract value."""
    return int(np.prod(aval.shape, dtype=np.int64)) * np.dtype(aval.dtype).itemsize


def replayable(steps: int, graphable: bool, in_sizes: Sequence[int],
               out_sizes: Sequence[int]) -> bool:
    """Whether a program of `steps` driver steps with inputs and outputs of these byte sizes is
    replayed as a graph on this machine (while `config.cuda_graphs` is on)."""
    if not graphable or stream.work_stream() is None:
        return False
    return worth(steps, sum(in_sizes) + sum(out_sizes))


class GraphReplay:
    """A driver with CUDA-graph replay: call it as the driver (its `n_lead` leading arguments
    are the program's persistent constants, then the input buffers)."""

    def __init__(self, driver: Callable[..., tuple], n_lead: int) -> None:
        self.driver = driver
        self.n_lead = n_lead
        self.calls = 0
        self.lock = threading.Lock()
        self.graph: Any = None
        self.failed: BaseException | None = None  # why the capture failed (kept for tests)
        self.static_in: list = []  # graph-owned input buffers
        self.static_out: tuple = ()  # the buffers the graph leaves its outputs in
        self.kept: list = []  # everything else the graph writes (its temporaries)
        self.lead: tuple = ()  # the constants the graph reads
        self.copy_in: Copies | None = None  # the call's inputs into static_in, one launch
        self.copy_out: Copies | None = None  # static_out into a call's fresh outputs

    def __call__(self, *args: Any) -> tuple:
        if not config.hot("cuda_graphs") or stream.capturing() is not None:
            return self.driver(*args)  # off, or inside an enclosing program's capture
        if self.graph is None:
            if self.failed is not None or self.calls < WARMUP or \
                    not self.lock.acquire(blocking=False):
                self.calls += 1
                return self.driver(*args)
            try:
                self._capture(args)
            finally:
                self.lock.release()
            if self.graph is None:
                return self.driver(*args)
        if not self.lock.acquire(blocking=False):
            return self.driver(*args)
        try:
            return self._replay(args)
        finally:
            self.lock.release()

    def _capture(self, args: tuple) -> None:
        lead, inputs = args[:self.n_lead], args[self.n_lead:]
        device = memory.current_device_id()
        kept: list = []

        def hold(key: tuple[int, int, str]) -> Any:
            buf = memory.kept_buffer(key)
            kept.append(buf)
            return buf

        try:  # out of memory for the graph's own buffers, say: the driver goes on without it
            static_in = [memory.kept_buffer((device, a.size, a.dtype.str)) for a in inputs]
            with memory.holding(hold):
                graph, outs = stream.capture(lambda: self.driver(*lead, *static_in))
            self.copy_in = Copies([a.size for a in static_in])
            self.copy_out = Copies([o.size for o in outs])
        except Exception as e:  # noqa: BLE001 - any failure keeps the driver
            self.failed = e
            return
        self.lead, self.static_in, self.kept = lead, static_in, kept
        self.static_out = tuple(outs)
        self.graph = graph

    def _replay(self, args: tuple) -> tuple:
        self.copy_in(self.static_in, args[self.n_lead:])
        stream.launch(self.graph)
        outs = tuple([memory.empty(o.size, o.dtype) for o in self.static_out])
        self.copy_out(outs, self.static_out)
        return outs

    def __del__(self) -> None:
        if self.graph is not None:
            try:
                stream.release(self.graph)
            except Exception:  # noqa: BLE001 - interpreter shutdown: the context may be gone
                pass


class Copies:
    """One kernel launch copying flat buffers of fixed sizes into others as large (zero-size
    ones skipped), on the work stream."""

    def __init__(self, sizes: Sequence[int]) -> None:
        self.used = [q for q, n in enumerate(sizes) if n]
        self.launch = None
        if self.used:
            cfg = Config(memory.simulator_enabled())
            kernel = _copy_kernel([sizes[q] for q in self.used], cfg)
            blocks = cfg.blocks(-(-max(sizes) // cfg.unroll))  # cfg.unroll elements a thread
            self.launch = launcher(kernel, blocks, cfg.threads)

    def __call__(self, dsts: Sequence[Any], srcs: Sequence[Any]) -> None:
        if self.launch is not None:
            self.launch(*[srcs[q] for q in self.used], *[dsts[q] for q in self.used])


def _copy_kernel(sizes: Sequence[int], cfg: Config) -> Any:
    """The @cuda.jit kernel copying s0..s{n-1} into d0..d{n-1} (of these sizes), grid-stride
    over `cfg.unroll` elements a thread, loads before stores, as the generated elementwise
    kernels do. One element a thread kept too few loads in flight, and a `range(i, s.size,
    step)` loop computed its trip count with a 64-bit division per buffer and thread: the MLP
    step's inputs (15.6 MB in 8 buffers) took 42.6 µs on an H200, 19.9 µs with one unsigned
    element a thread (its bfloat16 inputs, half the bytes, as long)."""
    n, u = len(sizes), cfg.unroll
    names = [f"s{q}" for q in range(n)] + [f"d{q}" for q in range(n)]
    at = [f"np.uint64(j + {r} * step)" if r else "np.uint64(j)" for r in range(u)]
    lines = ["    i = cuda.grid(1)", "    step = cuda.gridsize(1)"]
    for q, size in enumerate(sizes):
        lines += ["    j = i", f"    while j + {u - 1} * step < {size}:"]
        lines += [f"        v{r} = s{q}[{at[r]}]" for r in range(u)]
        lines += [f"        d{q}[{at[r]}] = v{r}" for r in range(u)]
        lines += [f"        j += {u} * step", f"    while j < {size}:",
                  f"        d{q}[np.uint64(j)] = s{q}[np.uint64(j)]", "        j += step"]
    source = ("import numpy as np\nfrom numba import cuda\n\n\n@cuda.jit\n"
              f"def kernel({', '.join(names)}):\n" + "\n".join(lines) + "\n")
    return cache.load_module(source, "cuda", cfg.key()).kernel
