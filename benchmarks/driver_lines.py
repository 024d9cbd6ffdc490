"""Where a jitted program's time goes, line by line of its generated CPU driver: the MLP step
(784-512-512-10, softmax cross-entropy, SGD) at a batch size, run under a line tracer that
charges the time between two lines of the driver to the first (a kernel call, a product, an
allocation). The tracer adds ~1 µs a line; compare lines, not the total. No asserts.
With --gpu the step runs on the GPU driver (no graph replay) and the tracer waits for the
card at every line, so a line's time is its kernel's time plus a launch and a sync.

    PYTHONPATH=. python benchmarks/driver_lines.py [--batch 2048] [--steps 20] [--gpu]
        [--dtype bfloat16] [--load N] [--warmup N]

--warmup N untimed steps first (default 3, 30 under load). A kernel's prange variant compiles
once the kernel has run threads.PARALLEL_TIER_NS of estimated serial work, which at batch 256
takes tens of steps: give enough warm-up steps for the steady state (a compile inside the
timed steps shows as one kernel's line at hundreds of ms).

With --load N, N busy-looping processes run beside it (the busy-machine rules: each call
site's serial/parallel choice settles in the untimed steps first).
"""
from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_cpu  # noqa: E402

import numbax  # noqa: E402
import numbax.numpy as jnp  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=2048)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--gpu", action="store_true")
    parser.add_argument("--dtype", default="float32", help="of parameters and data")
    parser.add_argument("--load", type=int, default=0, help="busy-looping processes beside it")
    parser.add_argument("--warmup", type=int, default=None, help="untimed steps first")
    args = parser.parse_args()
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(args.load)]
    try:
        _run(args)
    finally:
        for p in busy:
            p.kill()


def _run(args) -> None:
    sync = lambda: None  # noqa: E731
    jit = numbax.jit
    if args.gpu:
        from numba import cuda

        numbax.config.update("cuda_graphs", False)
        numbax.config.update("jax_default_device", numbax.devices("gpu")[0])
        sync = cuda.synchronize
        jit = lambda f: numbax.jit(f, backend="gpu")  # noqa: E731
    rng = np.random.default_rng(0)
    sizes = [784, 512, 512, 10]
    params = [(jnp.asarray(rng.normal(size=(a, b)).astype(np.float32) * 0.05),
               jnp.asarray(np.zeros(b, np.float32))) for a, b in zip(sizes[:-1], sizes[1:])]
    x = jnp.asarray(rng.normal(size=(args.batch, 784)).astype(np.float32))
    y = jnp.asarray(np.eye(10, dtype=np.float32)[rng.integers(0, 10, args.batch)])
    params, x, y = numbax.tree.map(lambda a: a.astype(args.dtype), (params, x, y))
    step = bench_cpu.mlp_step(jnp, numbax.grad, jit)
    if args.gpu:
        params, x, y = numbax.device_put((params, x, y), numbax.devices("gpu")[0])
    warmup = args.warmup if args.warmup is not None else 3 if not args.load else 30
    for _ in range(warmup):  # (busy sites settle in the first calls)
        numbax.block_until_ready(step(params, x, y))
    usage0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    for _ in range(args.steps):
        numbax.block_until_ready(step(params, x, y))
    plain = (time.perf_counter() - t0) / args.steps
    usage1 = resource.getrusage(resource.RUSAGE_SELF)
    exe = _executable_of(step)
    code = getattr(exe.driver, "driver", exe.driver).__code__  # under a GraphReplay
    source = exe.sources[-1].splitlines()  # the driver module (run from memory, no file)
    spent: dict[int, float] = defaultdict(float)
    state = {"line": None, "t": 0.0}

    def tracer(frame, event, arg):
        if frame.f_code is not code:
            return None
        sync()
        now = time.perf_counter()
        if state["line"] is not None:
            spent[state["line"]] += now - state["t"]
        state["line"] = frame.f_lineno if event == "line" else None
        state["t"] = time.perf_counter()
        return tracer

    t0 = time.perf_counter()
    for _ in range(args.steps):
        sys.settrace(tracer)
        out = step(params, x, y)
        sys.settrace(None)
        numbax.block_until_ready(out)
    traced = (time.perf_counter() - t0) / args.steps
    print(f"MLP step batch {args.batch}: {plain * 1e3:.2f} ms a step untraced, "
          f"{traced * 1e3:.2f} traced; a step untraced: "
          f"{(usage1.ru_minflt - usage0.ru_minflt) / args.steps:.0f} page faults, "
          f"{(usage1.ru_nivcsw - usage0.ru_nivcsw) / args.steps:.1f} preemptions, "
          f"{(usage1.ru_nvcsw - usage0.ru_nvcsw) / args.steps:.1f} waits; per line (ms a step):")
    for line, t in sorted(spent.items(), key=lambda kv: -kv[1])[:25]:
        text = source[line - 1].strip() if 0 < line <= len(source) else "?"
        print(f"{t / args.steps * 1e3:8.3f}  {text[:110]}")


def _executable_of(jitted):
    """The Executable of the jitted step's one compiled signature."""
    from numbax._src import jit as jit_mod

    for obj in _reachable(jitted):
        if isinstance(obj, jit_mod._Entry):
            return obj.exe
    raise RuntimeError("no compiled signature found")


def _reachable(root, depth: int = 4):
    seen, todo = set(), [(root, 0)]
    while todo:
        obj, d = todo.pop()
        if id(obj) in seen or d > depth:
            continue
        seen.add(id(obj))
        yield obj
        kids = []
        if isinstance(obj, dict):
            kids = list(obj.values())
        elif isinstance(obj, (list, tuple)):
            kids = list(obj)
        elif hasattr(obj, "__dict__"):
            kids = list(vars(obj).values())
        elif hasattr(obj, "__slots__"):
            kids = [getattr(obj, s, None) for s in obj.__slots__]
        todo.extend((k, d + 1) for k in kids)


if __name__ == "__main__":
    main()
