"""One-shot GPU probe for eager ops on GpuArrays and the sort kernel (timings, printed).

    PYTHONPATH=. python3 benchmarks/gpu_eager_sort_probe.py
"""
import argparse
import time

import numpy as np

import numbax
import numbax.numpy as jnp


def main() -> None:
    argparse.ArgumentParser(description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    gpu = numbax.devices("gpu")[0]
    print("card:", numbax._src.cuda_runtime.gpu_name(0))
    x = numbax.device_put(np.random.default_rng(0).standard_normal(10**6).astype(np.float32),
                          gpu)
    for i in range(3):
        t = time.perf_counter()
        y = jnp.sin(x) * 2.0
        y.block_until_ready()
        print(f"eager sin*2 on 1e6 f32, call {i}: {(time.perf_counter() - t) * 1e3:.2f} ms",
              type(y).__name__)
    h = np.asarray(x)
    t = time.perf_counter()
    _ = np.sin(h) * 2.0
    print(f"numpy sin*2 same data: {(time.perf_counter() - t) * 1e3:.2f} ms")
    for shape in ((1000, 1000), (100, 10000), (10, 100000)):
        a = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
        f = numbax.jit(lambda v: jnp.sort(v, axis=-1), backend="gpu")
        r = f(a).block_until_ready()
        assert np.array_equal(np.asarray(r), np.sort(a, axis=-1))
        t = time.perf_counter()
        f(a).block_until_ready()
        tg = time.perf_counter() - t
        t = time.perf_counter()
        np.sort(a, axis=-1)
        tn = time.perf_counter() - t
        print(f"sort {shape} f32 (incl. host->device copy): gpu jit {tg * 1e3:.2f} ms, "
              f"numpy {tn * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
