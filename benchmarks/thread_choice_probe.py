"""What the thread runtime decides while a 16-thread pool works: for a large convolution and a
large product called back to back in one process, each call's time and the thread count
`gemm_threads` picks, plus the free-core estimate (no asserts).

    PYTHONPATH=. python benchmarks/thread_choice_probe.py
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import numbax
from numbax import lax
from numbax._src.compiler.cpu.runtime import library
from numbax._src.compiler.cpu.runtime import threads as rt_threads


def main() -> None:
    argparse.ArgumentParser(description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 56, 56, 64)).astype(np.float32)
    w = rng.normal(size=(3, 3, 64, 64)).astype(np.float32)
    conv = numbax.jit(lambda x, w: lax.conv_general_dilated(
        x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")))
    a = rng.normal(size=(1000, 1000)).astype(np.float32)
    mm = numbax.jit(lambda a: a @ a)
    conv(x, w).block_until_ready()
    mm(a).block_until_ready()
    macs = 32 * 56 * 56 * 64 * 64 * 9
    print(f"cores {rt_threads.CORES} pool {rt_threads.pool_size()}")
    for name, fn, args in (("conv", conv, (x, w)), ("matmul", mm, (a,))):
        rows = []
        for _ in range(12):
            picked = library.gemm_threads(macs)
            others = rt_threads._others_running()
            t0 = time.perf_counter()
            fn(*args).block_until_ready()
            rows.append((time.perf_counter() - t0, picked, others))
        times = sorted(r[0] for r in rows)
        print(f"{name}: median {times[len(times) // 2] * 1e3:.2f} ms, min {times[0] * 1e3:.2f}"
              f" ms; threads picked {[r[1] for r in rows]}; others running "
              f"{[round(r[2]) for r in rows]}")


if __name__ == "__main__":
    main()
