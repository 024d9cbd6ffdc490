"""A busy machine: numbax's measured per-site choice of serial or parallel (busy_sites.py)
against the fixed rule it replaced (one thread while busy; Numba's pool for products of
blas.LONG_MACS and more) and against jax.jit, under the same load.

    python benchmarks/busy_rows.py [--load N] [--only name,name] [--rounds R]
                                   [--kernels-on-openmp] [--forms form,form] [--separate]

`--kernels-on-openmp` keeps fused kernels' parallel arm on Numba's OpenMP threads (as before
kernel_tasks.py); products keep the native pool (NUMBAX_CPU_NATIVE_POOL=0 turns off both).

A third form runs every busy site in parallel (the quiet machine's choice), for comparison.
`--forms` times only some of "measured", "one thread", "every thread" and "jax" (default:
all). Forms in one process share it: a parallel form's threads, spinning after its calls, and
jax.jit's own threads slow the next form's samples (on the 2-core VM beside two loops the MLP
step b128 took 12.7 ms in the one-thread form beside the others, 4.8-9 ms in a process of
its own; jax.jit's b128 step 10.5 ms beside numbax's forms, 6.0 alone). `--separate` runs
each form (jax.jit too) in a process of its own, the processes taking turns for R rounds, and
prints the same table from all their samples: the figures a program alone would get.

Starts N busy-looping processes (default: one per usable core), runs each row 0.3 s in the
measured form (its sites' first busy calls try both arms), then takes R rounds; each round
times every row once in each form (a sample is a loop of calls of at least 50 ms; the forms
take turns going first), so the forms meet the same moments of the load. Prints each form's
median and range and the ratios.
Run it under `taskset -c 0,1` on a larger host to reproduce the 2-core VM's busy rows.
"""
from __future__ import annotations

import argparse
import json
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


def one_thread(site, busy=True):
    """The fixed rule: a busy call site always runs serially (its arm SERIAL)."""
    MEASURED(site, busy)  # (stamps the call, as the measured rule does)
    return busy_sites.SERIAL


def every_thread(site, busy=True):
    """A busy call site always runs in parallel (its arm PARALLEL), as on a quiet machine."""
    MEASURED(site, busy)
    return busy_sites.PARALLEL


def _separate(args: argparse.Namespace, forms: list[str], rounds: int) -> dict:
    """Each form in a process of its own (this script with --forms FORM --rounds 1 --json),
    forms taking turns for `rounds` rounds: {(row, form): seconds}."""
    base = [*(["--load", str(args.load)] if args.load is not None else []),
            *(["--only", args.only] if args.only is not None else []),
            *(["--kernels-on-openmp"] if args.kernels_on_openmp else [])]
    times: dict = {}
    for k in range(rounds):
        for form in forms[k % len(forms):] + forms[:k % len(forms)]:
            out = subprocess.run([sys.executable, __file__, *base, "--forms", form, "--rounds",
                                  "1", "--json"], capture_output=True, text=True, check=True)
            for (name, f), t in json.loads(out.stdout.splitlines()[-1]):
                times.setdefault((name, f), []).extend(t)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--load", type=int, metavar="N",
                        help="busy-looping processes (default: one per usable core)")
    parser.add_argument("--only", metavar="name,name", help="these rows (default: all)")
    parser.add_argument("--rounds", type=int, default=7, metavar="R")
    parser.add_argument("--kernels-on-openmp", action="store_true",
                        help="fused kernels' parallel arm on Numba's OpenMP threads")
    parser.add_argument("--forms", metavar="form,form",
                        help='some of "measured", "one thread", "every thread", "jax"')
    parser.add_argument("--separate", action="store_true", help="each form in its own process")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # its children
    args = parser.parse_args()
    cores = len(os.sched_getaffinity(0))
    load = args.load if args.load is not None else cores
    only = args.only.split(",") if args.only is not None else ROWS
    rounds = args.rounds
    chosen = [r for r in rows(np.random.default_rng(0)) if r[0] in only]
    # the steady state of a long run: kernel sites try the pool without first spending
    # TASK_TIER_S serially (the tasks compile outside the load, at the warm-up calls below)
    busy_sites.TASK_TIER_S = 0.0
    if args.kernels_on_openmp:
        kernel_tasks.run = lambda *a: False
        kernel_tasks.run_parts = lambda *a: False
        kernel_tasks.site = busy_sites.Site  # and OpenMP's PARALLEL_WORTH_S
    forms = {"measured": MEASURED, "one thread": one_thread, "every thread": every_thread}
    wanted = args.forms.split(",") if args.forms is not None else [*forms, "jax"]
    if args.separate:
        print(f"busy_rows | {time.strftime('%Y-%m-%d %H:%M')} | {cores} usable cores | "
              f"load {load} | each form in its own process, {rounds} rounds")
        _print(_separate(args, wanted, rounds), only)
        return
    forms = {k: v for k, v in forms.items() if k in wanted}
    if "jax" not in wanted:
        chosen = [(name, f_nb, a_nb, None, None) for name, f_nb, a_nb, *_ in chosen]
    if not args.json:
        print(f"busy_rows | {time.strftime('%Y-%m-%d %H:%M')} | {cores} usable cores | "
              f"load {load} | kernels on "
              f"{'OpenMP' if args.kernels_on_openmp else 'pool'} | "
              f"jax {jax.__version__ if jax else 'absent'}")
    if jax:  # on JAX's device first, as its users keep them (no copy per call)
        chosen = [(name, f_nb, a_nb, f_jx, jax.tree_util.tree_map(
            lambda v: jax.device_put(v) if isinstance(v, np.ndarray) else v, a_jx))
            for name, f_nb, a_nb, f_jx, a_jx in chosen]
    for _name, f_nb, a_nb, f_jx, a_jx in chosen:  # compile and warm outside the load
        if forms:
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
            if forms:
                samples(f_nb, *a_nb, repeat=1, min_time=0.3)
        order = list(forms.items())
        for k in range(rounds):
            for name, f_nb, a_nb, f_jx, a_jx in chosen:
                # the forms take turns being first after a row change (the first pays for it)
                turn = k % len(order) if order else 0
                for form, choose in order[turn:] + order[:turn]:
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
    if args.json:  # a --separate run's child
        print(json.dumps(list(times.items())))
        return
    _print(times, [name for name, *_ in chosen])


def _print(times: dict, names: list[str]) -> None:
    print(f"{'row':<16} {'measured':>16} {'one thread':>16} {'every thread':>16} {'jax':>16} "
          f"{'m/jax':>6} {'1/jax':>6} {'all/jax':>7}   (medians, ms; min-max)")
    for name in names:
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
