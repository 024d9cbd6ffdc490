"""Compile cost of numbax (and JAX, with --jax, in the same run), each measurement in a fresh
Python process (``--child``) so that nothing is compiled or imported beforehand. No asserts.

    PYTHONPATH=. python benchmarks/bench_compile.py              # MLP step: 2 cold + 2 warm
    PYTHONPATH=. python benchmarks/bench_compile.py --rounds 3 --kernels --jax
    PYTHONPATH=. python benchmarks/bench_compile.py --profile    # cProfile of one cold call
    PYTHONPATH=. python benchmarks/bench_compile.py --chains 128,1000,5000 [--jax]
    PYTHONPATH=. python benchmarks/bench_compile.py --shapes 300 [--jax]

MLP step (issue 5's 784-512-512-10 train step, batch 128): the first call's CPU time
(`time.process_time`: this process and its threads; the figure to compare on a shared machine)
and wall time, import excluded; per Numba compile, its CPU time (Numba's ``numba:compile``
event). "cold": an empty NUMBAX_CACHE_DIR (Numba's cache of numbax's runtime modules, in the
package's ``__pycache__``, stays as an installation leaves it); "warm": a new process with the
directory the cold run filled (JAX: its persistent compilation cache, on for this run).

Chains (asv_bench/benchmarks/models.py): `elementwise_chain` and `mixed_chain` of N steps on a
float32 vector of 1000: trace + compile + first run in a cold process, peak memory (max RSS),
and numbax's generated source: lines of the distinct modules compiled and of `as_text()`.

Shapes: one function (`shape_sweep_fn`) called with x of shapes (1, 32) .. (N, 32): total time
of the N first calls, memory kept per extra shape (RSS growth from the 10th shape on, after
gc), and the files and bytes left in the disk cache.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(os.path.dirname(HERE), "asv_bench", "benchmarks")


def _import(impl: str):
    """(module, numpy namespace, nn namespace) of `impl`, float64 enabled for JAX."""
    if impl == "jax":
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)
        return jax, jnp, jax.nn
    sys.modules.setdefault("jax", None)  # bench_cpu's optional JAX import: not needed here
    import numbax
    import numbax.numpy as bnp

    return numbax, bnp, numbax.nn


def _block(out) -> None:
    import numpy as np

    for leaf in (out if isinstance(out, (list, tuple)) else [out]):
        if isinstance(leaf, (list, tuple)):
            _block(leaf)
        else:
            np.asarray(leaf)


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


# ----------------------------------------------------------------------------- children


def _child_mlp(impl: str, profile: bool) -> dict:
    """The first call of the MLP step in this (fresh) process."""
    t_start, c_start = time.perf_counter(), time.process_time()
    import numpy as np

    sys.path.insert(0, HERE)
    lib, xp, _ = _import(impl)
    from bench_cpu import mlp_step

    rng = np.random.default_rng(0)
    sizes = [784, 512, 512, 10]
    params = [(xp.asarray(rng.normal(size=(a, b)).astype(np.float32) * 0.05),
               xp.asarray(np.zeros(b, np.float32))) for a, b in zip(sizes[:-1], sizes[1:])]
    x = xp.asarray(rng.normal(size=(128, 784)).astype(np.float32))
    y = xp.asarray(np.eye(10, dtype=np.float32)[rng.integers(0, 10, 128)])
    step = mlp_step(xp, lib.grad, lib.jit)
    c_import, t_import = time.process_time() - c_start, time.perf_counter() - t_start
    compiles: list[tuple[str, float]] = []
    if impl == "numbax":
        from numba.core import event

        event.register("numba:compile", _compile_listener(compiles))
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    t0, c0 = time.perf_counter(), time.process_time()
    _block(step(params, x, y))
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    if profiler is not None:
        import pstats

        profiler.disable()
        stats = pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative")
        stats.print_stats(45)
        stats.sort_stats("tottime").print_stats(25)
    return {"cpu": cpu, "wall": wall, "import_cpu": c_import, "import_wall": t_import,
            "compiles": compiles}


def _compile_listener(out: list):
    """A Numba event listener recording the CPU time of each outermost compile (nested
    compiles are part of their parent's) as (module.function, seconds) in `out`."""
    from numba.core import event

    class Listener(event.Listener):
        def __init__(self):
            self.stack = []

        def on_start(self, ev):
            self.stack.append(time.process_time())

        def on_end(self, ev):
            t0 = self.stack.pop()
            if not self.stack:
                disp = ev.data["dispatcher"]
                mod = getattr(disp.py_func, "__module__", "?")
                out.append((f"{mod.split('.')[-1][:22]}.{disp.py_func.__name__}",
                            time.process_time() - t0))

    return Listener()


def _child_chain(impl: str, kind: str, ops: int) -> dict:
    import numpy as np

    sys.path.insert(0, MODELS)
    import models

    lib, xp, _ = _import(impl)
    chain = models.elementwise_chain if kind == "elementwise" else models.mixed_chain
    fn = lib.jit(lambda x: chain(xp, x, ops))
    x = np.linspace(-1.0, 1.0, 1000).astype(np.float32)
    t0, c0 = time.perf_counter(), time.process_time()
    _block(fn(x))
    out = {"wall": time.perf_counter() - t0, "cpu": time.process_time() - c0,
           "peak_mib": _peak_mib()}
    if impl == "numbax":  # every module the program runs (a repeated piece once per use)
        sources = fn.lower(x)._entry.exe.sources
        out["lines"] = sum(t.count("\n") + 1 for t in sources)
        out["unique_lines"] = sum(t.count("\n") + 1 for t in set(sources))
        out["modules"] = len(set(sources))
    return out


def _child_shapes(impl: str, count: int) -> dict:
    import gc

    import numpy as np

    sys.path.insert(0, MODELS)
    import models

    lib, xp, nn = _import(impl)
    fn = lib.jit(models.shape_sweep_fn(xp, nn))
    w = np.random.default_rng(0).normal(size=(32, 64))
    t0, mem = time.perf_counter(), {}
    for n in range(1, count + 1):
        _block(fn(np.ones((n, 32)), w))
        if n in (10, count):
            gc.collect()
            mem[n] = _rss_mib()
    total = time.perf_counter() - t0
    root = os.environ.get("NUMBAX_CACHE_DIR", "")
    files = [os.path.join(r, f) for r, _, fs in os.walk(root) for f in fs] if root else []
    kept = max(mem[count] - mem[10], 0.0)  # RSS may shrink: nothing kept then
    return {"total": total, "mib_per_shape": kept / (count - 10),
            "files": len(files), "disk_mib": sum(os.path.getsize(p) for p in files) / 2**20}


# ----------------------------------------------------------------------------- parent


def _run(args: list[str], cache_dir: str, jax_cache: str | None = None,
         profile: bool = False) -> dict:
    env = dict(os.environ, NUMBAX_CACHE_DIR=cache_dir)
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    if jax_cache is not None:  # JAX's persistent cache, for its warm runs
        env.update(JAX_COMPILATION_CACHE_DIR=jax_cache,
                   JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
                   JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="0")
    cmd = [sys.executable, os.path.abspath(__file__), "--child", *args]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"bench_compile child {args} failed:\n{proc.stderr[-3000:]}")
    if profile:
        print(proc.stderr)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _header() -> str:
    return (f"bench_compile | {time.strftime('%Y-%m-%d %H:%M')} | {os.cpu_count()} cores | "
            f"load {os.getloadavg()[0]:.1f}")


def _mlp(impls: list[str], rounds: int, kernels: bool) -> None:
    print(_header())
    for impl in impls:
        cold, warm = [], []
        for _ in range(rounds):
            with tempfile.TemporaryDirectory() as d:
                cache, jax_cache = os.path.join(d, "cache"), os.path.join(d, "jax")
                jc = jax_cache if impl == "jax" else None
                cold.append(_run(["mlp", impl], cache, jc))
                warm.append(_run(["mlp", impl], cache, jc))
        for name, runs in (("cold", cold), ("warm", warm)):
            cpu = [r["cpu"] for r in runs]
            wall = [r["wall"] for r in runs]
            numba_cpu = [sum(t for _, t in r["compiles"]) for r in runs]
            print(f"{impl} {name}: first call cpu {statistics.median(cpu):.3f} s "
                  f"(min {min(cpu):.3f}), wall {statistics.median(wall):.3f} s "
                  f"(min {min(wall):.3f}), numba compiles {len(runs[0]['compiles'])} taking "
                  f"{statistics.median(numba_cpu):.3f} s cpu; import cpu "
                  f"{statistics.median([r['import_cpu'] for r in runs]):.3f} s")
        if kernels and impl == "numbax":
            for name, t in sorted(cold[0]["compiles"], key=lambda c: -c[1]):
                print(f"  {t:7.3f} s  {name}")


def _chains(impls: list[str], sizes: list[int]) -> None:
    print(_header())
    for kind in ("elementwise", "mixed"):
        for ops in sizes:
            for impl in impls:
                with tempfile.TemporaryDirectory() as d:
                    r = _run(["chain", impl, kind, str(ops)], os.path.join(d, "cache"))
                extra = ""
                if impl == "numbax":
                    extra = (f", {r['modules']} distinct modules, {r['unique_lines']} lines "
                             f"({r['unique_lines'] / ops:.1f}/op), as_text {r['lines']} lines "
                             f"({r['lines'] / ops:.1f}/op)")
                print(f"{kind} chain {ops} ops, {impl}: first call wall {r['wall']:.2f} s, "
                      f"cpu {r['cpu']:.2f} s, peak RSS {r['peak_mib']:.0f} MiB{extra}")


def _shapes(impls: list[str], count: int) -> None:
    print(_header())
    for impl in impls:
        with tempfile.TemporaryDirectory() as d:
            r = _run(["shapes", impl, str(count)], os.path.join(d, "cache"))
        print(f"{count} shapes, {impl}: total {r['total']:.2f} s, "
              f"{r['mib_per_shape']:.3f} MiB kept per extra shape, disk cache "
              f"{r['files']} files, {r['disk_mib']:.2f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jax", action="store_true", help="also measure JAX, same run")
    parser.add_argument("--rounds", type=int, default=2, help="MLP step: cold+warm pairs")
    parser.add_argument("--kernels", action="store_true",
                        help="MLP step: list numbax's Numba compiles of the first cold run")
    parser.add_argument("--profile", action="store_true", help="cProfile of one cold call")
    parser.add_argument("--chains", nargs="?", const="128,1000,5000", metavar="N,N",
                        help="chain lengths (bare: %(const)s)")
    parser.add_argument("--shapes", nargs="?", const=300, type=int, metavar="N",
                        help="shapes (1, 32) .. (N, 32) (bare: %(const)s)")
    # a measurement's fresh process: MODE mlp IMPL [--profile] | chain IMPL KIND OPS |
    # shapes IMPL COUNT (also asv_bench/benchmarks/bench_compile.py's)
    parser.add_argument("--child", nargs="+", metavar="ARG", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        mode, *rest = args.child
        if mode == "mlp":
            out = _child_mlp(rest[0], args.profile)
        elif mode == "chain":
            out = _child_chain(rest[0], rest[1], int(rest[2]))
        else:
            out = _child_shapes(rest[0], int(rest[1]))
        print(json.dumps(out))
        return
    impls = ["numbax", "jax"] if args.jax else ["numbax"]
    if args.profile:
        with tempfile.TemporaryDirectory() as d:
            _run(["mlp", "numbax", "--profile"], os.path.join(d, "cache"), profile=True)
    elif args.chains is not None:
        _chains(impls, [int(s) for s in args.chains.split(",")])
    elif args.shapes is not None:
        _shapes(impls, args.shapes)
    else:
        _mlp(impls, args.rounds, args.kernels)


if __name__ == "__main__":
    main()
