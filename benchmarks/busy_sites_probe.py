"""What a busy machine's per-site choice (busy_sites.py) does inside one program: for each
row, every busy call's site, the arm it ran (serial or parallel) and its time; and the CPU
time each thread of this process took, pool workers included.

    python benchmarks/busy_sites_probe.py [--rows name,name] [--seconds S] [--load N]
                                          [--form measured|one|every]

Starts N busy-looping processes (default: one per usable core), then calls each row for S
seconds (default 3) in the chosen form: "measured" (the per-site choice), "one" (every site
serial) or "every" (every site parallel). Prints the row's median and mean call time over
the last two thirds of the calls, then one line per site, the busiest first: its caller
(file:function:line), its `worth` (the serial time from which it tries its parallel arm), and
per arm the number of runs, their median and their total in ms. Run the forms in turn to see
how a site's serial runs fare between other sites' parallel ones. The thread table is how the
idle pool workers that never slept were found (docs/performance.md, "Idle pool workers
spun").
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np
from bench_runtime import rows
from busy_rows import every_thread, one_thread

from numbax._src.compiler.cpu.runtime import busy_sites, library
from numbax._src.compiler.cpu.runtime import threads as rt_threads

_runs: list = []  # (site id, arm, seconds) of each busy call
_callers: dict = {}  # site id -> "file:function:line worth=..."


def _recording(measured):
    def record(site, threads):
        if site is not None and site.started:
            frame = sys._getframe(1)
            _callers.setdefault(id(site), f"{os.path.basename(frame.f_code.co_filename)}:"
                                          f"{frame.f_code.co_name}:{frame.f_lineno} "
                                          f"worth={site.worth * 1e3:g}ms")
            arm = busy_sites.SERIAL if threads == 1 else busy_sites.PARALLEL
            _runs.append((id(site), arm, time.perf_counter() - site.started))
        measured(site, threads)
    return record


def _thread_cpu_ms() -> dict:
    """{thread id: (name, user + system CPU ms)} of this process's threads."""
    out = {}
    for tid in sorted(os.listdir("/proc/self/task")):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        ticks = int(fields[11]) + int(fields[12])
        out[tid] = (stat[stat.index("(") + 1:stat.rindex(")")],
                    ticks * 1000 // os.sysconf("SC_CLK_TCK"))
    return out


def _print_sites() -> None:
    per_site: dict = {}
    for sid, arm, t in _runs:
        per_site.setdefault(sid, ([], []))[arm].append(t)
    for sid, arms in sorted(per_site.items(), key=lambda kv: -sum(map(sum, kv[1]))):
        cells = []
        for label, times in zip(("serial", "parallel"), arms, strict=True):
            median = statistics.median(times) * 1e3 if times else 0.0
            cells.append(f"{label} {len(times):5d} runs, median {median:7.3f}, total "
                         f"{sum(times) * 1e3:6.0f}" if times else f"{label} -")
        print(f"  {_callers[sid][:56]:<56} {cells[0]:<46} {cells[1]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", default="mlp step b128,sum 1e7,selu 1e6",
                        metavar="name,name", help="default: %(default)s")
    parser.add_argument("--seconds", type=float, default=3.0, metavar="S")
    parser.add_argument("--load", type=int, default=len(os.sched_getaffinity(0)), metavar="N",
                        help="busy-looping processes (default: one per usable core)")
    parser.add_argument("--form", choices=("measured", "one", "every"), default="measured")
    args = parser.parse_args()
    names, seconds, load, form = args.rows.split(","), args.seconds, args.load, args.form
    busy_sites.TASK_TIER_S = 0.0  # (a long run's steady state: the pool tasks compile first)
    record = _recording(busy_sites.measured)
    rt_threads.measured = busy_sites.measured = library.rt_threads.measured = record
    if form != "measured":
        busy_sites.Site.choose = one_thread if form == "one" else every_thread
    chosen = [r for r in rows(np.random.default_rng(0)) if r[0] in names]
    for _name, f, a, *_ in chosen:  # compile and warm outside the load
        f(*a)
        f(*a)
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(load)]
    time.sleep(1.0)
    try:
        for name, f, a, *_ in chosen:
            _runs.clear()
            cpu_before = _thread_cpu_ms()
            calls = []
            end = time.perf_counter() + seconds
            while time.perf_counter() < end:
                start = time.perf_counter()
                f(*a)
                calls.append(time.perf_counter() - start)
            cpu = _thread_cpu_ms()
            steady = calls[len(calls) // 3:]
            print(f"{name} [{form}, load {load}]: {len(calls)} calls, median "
                  f"{statistics.median(steady) * 1e3:.2f} ms, mean "
                  f"{statistics.mean(steady) * 1e3:.2f} ms")
            _print_sites()
            took = {tid: (nm, ms - cpu_before.get(tid, (nm, 0))[1])
                    for tid, (nm, ms) in cpu.items()}
            print("  threads' CPU ms over the row: " + ", ".join(
                f"{nm}/{tid} {ms}" for tid, (nm, ms) in took.items() if ms))
    finally:
        for p in busy:
            p.kill()


if __name__ == "__main__":
    main()
