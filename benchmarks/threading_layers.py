"""Which Numba threading layer and wait policy numbax's CPU runtime should run on.

Each configuration runs in its own process (Numba picks its layer once per process):
    omp            Numba's OpenMP layer, libgomp's default wait policy (spin, then sleep)
    omp-passive    the same with OMP_WAIT_POLICY=passive (workers sleep at once)
    tbb            Intel TBB (work stealing; pip install tbb)
    tbb-chunked    TBB with prange loops cut into 4 chunks per thread (idle threads take
                   the chunks of descheduled ones)
    workqueue      Numba's own queue (not safe for calls from several threads)
and times, per layer: a small parallel map (dispatch and barrier cost), selu on 1e6 float32
(p50 and p99 of many calls), the same while np.dot runs between calls (OpenBLAS's threads
against the layer's), and the same again with `--busy N` processes spinning on the cores.

    python benchmarks/threading_layers.py [--busy N] [--calls K] [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import subprocess
import sys
import time

LAYERS = {
    "omp": {"NUMBA_THREADING_LAYER": "omp"},
    "omp-passive": {"NUMBA_THREADING_LAYER": "omp", "OMP_WAIT_POLICY": "passive"},
    "tbb": {"NUMBA_THREADING_LAYER": "tbb"},
    "tbb-chunked": {"NUMBA_THREADING_LAYER": "tbb", "BENCH_CHUNKS_PER_THREAD": "4"},
    "workqueue": {"NUMBA_THREADING_LAYER": "workqueue"},
}

CHILD = r"""
import json, sys, time
import numpy as np
import numba
from numba import njit, prange

@njit(parallel=True, fastmath=False, error_model="numpy")
def selu(x, o):
    for i in prange(x.size):
        v = x[i]
        o[i] = np.float32(1.0507) * (v if v > 0 else np.float32(1.6733) * (np.exp(v) - 1))

@njit(parallel=True)
def add1(x, o):
    for i in prange(x.size):
        o[i] = x[i] + 1

calls = int(sys.argv[1])
import os
per_thread = int(os.environ.get("BENCH_CHUNKS_PER_THREAD", "0"))
x = np.random.default_rng(0).standard_normal(1_000_000).astype(np.float32)
o = np.empty_like(x)
small = np.ones(4096, np.float32)
so = np.empty_like(small)
a = np.random.default_rng(1).standard_normal((512, 512)).astype(np.float32)
selu(x, o); add1(small, so); a @ a
if per_thread:
    numba.set_parallel_chunksize(x.size // (per_thread * numba.get_num_threads()))

def times(fn, n):
    out = []
    for _ in range(n):
        t = time.perf_counter(); fn(); out.append(time.perf_counter() - t)
    out.sort()
    return {"p50_us": out[len(out) // 2] * 1e6, "p99_us": out[int(len(out) * 0.99)] * 1e6,
            "max_us": out[-1] * 1e6}

res = {"layer": numba.threading_layer(), "threads": numba.get_num_threads()}
res["add_4096"] = times(lambda: add1(small, so), calls)
res["selu_1e6"] = times(lambda: selu(x, o), calls)
def mixed():
    a @ a
    selu(x, o)
res["dot512_then_selu"] = times(mixed, max(calls // 4, 10))
print(json.dumps(res))
"""


def _spin(stop):
    while not stop.is_set():
        pass


def run(layer: str, calls: int) -> dict:
    env = {**os.environ, **LAYERS[layer]}
    done = subprocess.run([sys.executable, "-c", CHILD, str(calls)], env=env,
                          capture_output=True, text=True, timeout=600)
    if done.returncode:
        return {"layer": layer, "error": done.stderr.strip().splitlines()[-1:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--busy", type=int, default=0, help="spinning processes during the runs")
    ap.add_argument("--calls", type=int, default=400)
    ap.add_argument("--json")
    args = ap.parse_args()
    ctx = mp.get_context("spawn")
    stop = ctx.Event()
    spinners = [ctx.Process(target=_spin, args=(stop,)) for _ in range(args.busy)]
    for p in spinners:
        p.start()
    time.sleep(0.5 if spinners else 0)
    results = {}
    try:
        for layer in LAYERS:
            results[layer] = run(layer, args.calls)
    finally:
        stop.set()
        for p in spinners:
            p.join()
    print(f"busy processes: {args.busy}, cores: {os.cpu_count()}")
    print(f"{'layer':12s} {'add 4096 p50/p99 us':>22s} {'selu 1e6 p50/p99 us':>22s} "
          f"{'dot+selu p50/p99 us':>22s}")
    for layer, r in results.items():
        if "error" in r:
            print(f"{layer:12s} unavailable: {r['error']}")
            continue
        cells = [f"{r[k]['p50_us']:9.1f} /{r[k]['p99_us']:9.1f}"
                 for k in ("add_4096", "selu_1e6", "dot512_then_selu")]
        print(f"{layer:12s} " + " ".join(f"{c:>22s}" for c in cells))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"busy": args.busy, "cores": os.cpu_count(), "results": results}, f,
                      indent=1)


if __name__ == "__main__":
    main()
