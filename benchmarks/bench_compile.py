"""Cold and warm first-call cost of the issue-5 MLP step, in fresh processes (no asserts).

Each measurement runs in a new Python process (``--child``) so that nothing is compiled or
imported beforehand. CPU time (``time.process_time``: this process and its threads) is the
figure to compare on a shared machine, wall time is printed beside it. The child also records,
per Numba compile, the CPU time spent (Numba's ``numba:compile`` event), so the cost of each
kernel shows up.

    PYTHONPATH=. python benchmarks/bench_compile.py            # 2 cold + 2 warm runs
    PYTHONPATH=. python benchmarks/bench_compile.py --rounds 3 --kernels
    PYTHONPATH=. python benchmarks/bench_compile.py --profile  # cProfile of one cold call

"cold": an empty NUMBAX_CACHE_DIR (Numba's own cache of numbax's helper modules, in the
package's ``__pycache__``, stays as an installation leaves it); "warm": a new process with the
directory the cold run filled.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def _child(profile: bool) -> None:
    """Time the first call of the MLP step in this (fresh) process; print one JSON line."""
    t_start, c_start = time.perf_counter(), time.process_time()
    import numpy as np
    from numba.core import event

    sys.path.insert(0, HERE)
    sys.modules.setdefault("jax", None)  # bench_cpu's optional JAX import: not needed here
    from bench_cpu import mlp_step

    import numbax
    import numbax.numpy as bnp

    compiles: list[tuple[str, float]] = []

    class _Listener(event.Listener):
        """CPU time of each outermost Numba compile (nested ones are part of their parent)."""

        def __init__(self):
            self.stack = []

        def on_start(self, ev):
            self.stack.append(time.process_time())

        def on_end(self, ev):
            t0 = self.stack.pop()
            if not self.stack:
                disp = ev.data["dispatcher"]
                mod = getattr(disp.py_func, "__module__", "?")
                compiles.append((f"{mod.split('.')[-1][:22]}.{disp.py_func.__name__}",
                                 time.process_time() - t0))

    rng = np.random.default_rng(0)
    sizes = [784, 512, 512, 10]
    params = [(bnp.asarray(rng.normal(size=(a, b)).astype(np.float32) * 0.05),
               bnp.asarray(np.zeros(b, np.float32))) for a, b in zip(sizes[:-1], sizes[1:])]
    x = bnp.asarray(rng.normal(size=(128, 784)).astype(np.float32))
    y = bnp.asarray(np.eye(10, dtype=np.float32)[rng.integers(0, 10, 128)])
    step = mlp_step(bnp, numbax.grad, numbax.jit)
    c_import = time.process_time() - c_start
    t_import = time.perf_counter() - t_start
    listener = _Listener()
    event.register("numba:compile", listener)
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    t0, c0 = time.perf_counter(), time.process_time()
    out = step(params, x, y)
    np.asarray(out[0][0])
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    if profiler is not None:
        import pstats

        profiler.disable()
        stats = pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative")
        stats.print_stats(45)
        stats.sort_stats("tottime").print_stats(25)
    print(json.dumps({"cpu": cpu, "wall": wall, "import_cpu": c_import, "import_wall": t_import,
                      "compiles": compiles}))


def _run(cache_dir: str, extra_env: dict | None = None, profile: bool = False) -> dict:
    env = dict(os.environ, NUMBAX_CACHE_DIR=cache_dir, **(extra_env or {}))
    cmd = [sys.executable, os.path.abspath(__file__), "--child"] + (["--profile"] if profile
                                                                       else [])
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"bench_compile child failed:\n{proc.stderr[-3000:]}")
    if profile:
        print(proc.stderr)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    if "--child" in sys.argv:
        _child("--profile" in sys.argv)
        return
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 2
    if "--profile" in sys.argv:
        with tempfile.TemporaryDirectory() as d:
            _run(os.path.join(d, "cache"), profile=True)
        return
    cold, warm = [], []
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as d:
            cache = os.path.join(d, "cache")
            cold.append(_run(cache))
            warm.append(_run(cache))
    print(f"bench_compile | {time.strftime('%Y-%m-%d %H:%M')} | {os.cpu_count()} cores | "
          f"load {os.getloadavg()[0]:.1f}")
    for name, runs in (("cold", cold), ("warm", warm)):
        cpu = [r["cpu"] for r in runs]
        wall = [r["wall"] for r in runs]
        numba_cpu = [sum(t for _, t in r["compiles"]) for r in runs]
        print(f"{name}: first call cpu {statistics.median(cpu):.3f} s "
              f"(min {min(cpu):.3f}), wall {statistics.median(wall):.3f} s, "
              f"numba compiles {len(runs[0]['compiles'])} taking "
              f"{statistics.median(numba_cpu):.3f} s cpu; import cpu "
              f"{statistics.median([r['import_cpu'] for r in runs]):.3f} s; each run cpu "
              f"{[round(c, 3) for c in cpu]}, wall {[round(w, 3) for w in wall]}")
    if "--kernels" in sys.argv:
        for name, t in sorted(cold[0]["compiles"], key=lambda c: -c[1]):
            print(f"  {t:7.3f} s  {name}")


if __name__ == "__main__":
    main()
