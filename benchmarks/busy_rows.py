"""A busy machine: numbax's measured per-site choice of serial or parallel (busy_sites.py)
against the fixed rule it replaced (one thread while busy; Numba's pool for products of
blas.LONG_MACS and more) and against jax.jit, under the same load.

    python benchmarks/busy_rows.py [--load N] [--only name,name] [--rounds R]
                                   [--kernels-on-openmp]

`--kernels-on-openmp` keeps fused kernels' parallel arm on Numba's OpenMP threads (as before
kernel_tasks.py); products keep the native pool (NUMBAX_CPU_NATIVE_POOL=0 turns off both).

A third form runs every busy site in parallel (the quiet machine's choice), for comparison.

Starts N busy-looping processes (default: one per usable core), runs each row 0.3 s in the
measured form (its sites' first busy calls try both arms), then takes R rounds; each round
times every row once in each form (a sample is a loop of calls of at least 50 ms; the forms
take turns going first), so the forms meet the same moments of the load. Prints each form's
median and range and the ratios.
Run it under `taskset -c 0,1` on a larger host to reproduce the 2-core VM's busy rows.
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

import numpy as np
from bench_cpu import jax, samples
from bench_runtime import rows

from numbax._src.compiler.cpu.runtime import busy_sites, kernel_tasks

ROWS = ("mlp step b128", "mlp step b2048", "matmul 1000^2", "matmul 2000^2", "chain 500^2",
        "sum 1e7", "logsumexp 1e7", "logsumexp 1000^2", "softmax 1000^2", "selu 1e6")
MEASURED = busy_sites.Site.choose


def _one_thread(site):
    """The fixed rule: a busy call site always runs serially (its arm SERIAL)."""
    MEASURED(site)  # (stamps the call, as the measured rule does)
    return busy_sites.SERIAL


def _every_thread(site):
    """A busy call site always runs in parallel (its arm PARALLEL), as on a quiet machine."""
    MEASURED(site)
    return busy_sites.PARALLEL


def main() -> None:
    args = sys.argv[1:]
    cores = len(os.sched_getaffinity(0))
    load = int(args[args.index("--load") + 1]) if "--load" in args else cores
    only = args[args.index("--only") + 1].split(",") if "--only" in args else ROWS
    rounds = int(args[args.index("--rounds") + 1]) if "--rounds" in args else 7
    chosen = [r for r in rows(np.random.default_rng(0)) if r[0] in only]
    # the steady state of a long run: kernel sites try the pool without first spending
    # TASK_TIER_S serially (the tasks compile outside the load, at the warm-up calls below)
    busy_sites.TASK_TIER_S = 0.0
    if "--kernels-on-openmp" in args:
        kernel_tasks.run = lambda *a: False
        kernel_tasks.run_parts = lambda *a: False
        kernel_tasks.site = busy_sites.Site  # and OpenMP's PARALLEL_WORTH_S
    forms = {"measured": MEASURED, "one thread": _one_thread, "every thread": _every_thread}
    print(f"busy_rows | {time.strftime('%Y-%m-%d %H:%M')} | {cores} usable cores | "
          f"load {load} | kernels on {'OpenMP' if '--kernels-on-openmp' in args else 'pool'} | "
          f"jax {jax.__version__ if jax else 'absent'}")
    if jax:  # on JAX's device first, as its users keep them (no copy per call)
        chosen = [(name, f_nb, a_nb, f_jx, jax.tree_util.tree_map(
            lambda v: jax.device_put(v) if isinstance(v, np.ndarray) else v, a_jx))
            for name, f_nb, a_nb, f_jx, a_jx in chosen]
    for _name, f_nb, a_nb, f_jx, a_jx in chosen:  # compile and warm outside the load
        f_nb(*a_nb)
        if f_jx is not None:
            f_jx(*a_jx)
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(load)]
    time.sleep(1.5)
    times: dict = {}
    try:
        # the measured sites' first busy calls try both arms: settle them under the load
        # first, as a training loop's first steps do, so the rounds time the steady state
        for _name, f_nb, a_nb, _f_jx, _a_jx in chosen:
            samples(f_nb, *a_nb, repeat=1, min_time=0.3)
        order = list(forms.items())
        for k in range(rounds):
            for name, f_nb, a_nb, f_jx, a_jx in chosen:
                # the forms take turns being first after a row change (the first pays for it)
                for form, choose in order[k % len(order):] + order[:k % len(order)]:
                    busy_sites.Site.choose = choose
                    times.setdefault((name, form), []).extend(
                        samples(f_nb, *a_nb, repeat=1, min_time=0.05))
                busy_sites.Site.choose = MEASURED
                if f_jx is not None:
                    times.setdefault((name, "jax"), []).extend(
                        samples(f_jx, *a_jx, repeat=1, min_time=0.05))
    finally:
        for p in busy:
            p.kill()
    print(f"{'row':<16} {'measured':>16} {'one thread':>16} {'every thread':>16} {'jax':>16} "
          f"{'m/jax':>6} {'1/jax':>6} {'all/jax':>7}   (medians, ms; min-max)")
    for name, *_ in chosen:
        med = {}
        cells = []
        for form in ("measured", "one thread", "every thread", "jax"):
            t = times.get((name, form))
            if not t:
                cells.append(f"{'-':>16}")
                med[form] = float("nan")
                continue
            med[form] = statistics.median(t) * 1e3
            cells.append(f"{med[form]:7.2f} {min(t) * 1e3:4.1f}-{max(t) * 1e3:<4.1f}")
        print(f"{name:<16} {' '.join(cells)} {med['measured'] / med['jax']:6.2f} "
              f"{med['one thread'] / med['jax']:6.2f} {med['every thread'] / med['jax']:7.2f}",
              flush=True)


if __name__ == "__main__":
    main()
