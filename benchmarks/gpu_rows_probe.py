"""Probes for tuning the CUDA row kernels and the random samplers (one process, one card):

1. row softmax / logsumexp at (16384, 4096) and (524288, 128) f32 under several row-kernel
   geometries (Config.row_block_max, row_slots), each against jax.jit;
2. random.bits / uniform / normal of 1e8 float32 against jax.random, to see which stage of
   the sampler costs.

    PYTHONPATH=. python3 benchmarks/gpu_rows_probe.py
"""
# ruff: noqa: B023  (benchmark closures run immediately, inside their loop iteration)
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
from bench_cuda import timeit  # noqa: E402  (also sets XLA_PYTHON_CLIENT_PREALLOCATE)

import numbax  # noqa: E402
from numbax._src.compiler.cuda.config import Config  # noqa: E402


def with_rows(block_max: int, slots: int):
    """Config.__init__ patched so row kernels render with this geometry (the cache key
    includes both fields, so every geometry compiles its own kernels)."""
    original = Config.__init__

    def init(self, sim):
        original(self, sim)
        self.row_block_max, self.row_slots = block_max, slots

    Config.__init__ = init
    return original


def main() -> None:
    argparse.ArgumentParser(description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    import jax
    import jax.numpy as jjnp

    gpu = numbax.devices("gpu")[0]
    jgpu = jax.devices("gpu")[0]
    nb_sync = lambda o: o.block_until_ready()  # noqa: E731
    jx_sync = lambda o: o.block_until_ready()  # noqa: E731
    rng = np.random.default_rng(0)
    print(f"gpu_rows_probe | {time.strftime('%Y-%m-%d %H:%M')} | {gpu}")
    host = rng.normal(size=16384 * 4096).astype(np.float32)
    for shape in ((16384, 4096), (524288, 128)):
        m = host.reshape(shape)
        dm, jm = numbax.device_put(m, gpu), jax.device_put(m, jgpu)
        for what in ("softmax", "logsumexp"):
            jf = jax.jit(lambda x: getattr(jax.nn, what)(x, axis=-1))
            tj = timeit(lambda: jf(jm), jx_sync)
            for block_max, slots in ((1024, 16), (512, 16), (256, 16), (256, 32), (128, 32)):
                original = with_rows(block_max, slots)
                try:
                    fn = numbax.jit(lambda x: getattr(numbax.nn, what)(x, axis=-1),
                                    backend="gpu")
                    got = np.asarray(fn(dm))
                    ok = np.allclose(got[:4], np.asarray(jf(jm))[:4], rtol=1e-4, atol=1e-7)
                    tn = timeit(lambda: fn(dm), nb_sync)
                finally:
                    Config.__init__ = original
                print(f"{what:<9} {str(shape):<14} rows(block_max={block_max:>4}, slots={slots:>2})"
                      f" {tn * 1e3:7.3f} ms  jax {tj * 1e3:7.3f} ms  numbax/jax time "
                      f"{tn / tj:5.2f}  {'ok' if ok else 'WRONG'}", flush=True)
    n = 10**8
    key, jkey = numbax.random.PRNGKey(0), jax.random.PRNGKey(0)
    cases = [
        ("bits u32", lambda k: numbax.random.bits(k, (n,)), lambda k: jax.random.bits(k, (n,))),
        ("uniform f32", lambda k: numbax.random.uniform(k, (n,), np.float32),
         lambda k: jax.random.uniform(k, (n,), jjnp.float32)),
        ("normal f32", lambda k: numbax.random.normal(k, (n,), np.float32),
         lambda k: jax.random.normal(k, (n,), jjnp.float32)),
        ("erf_inv f32", None, None),
    ]
    for name, f, jfun in cases:
        if f is None:
            u = numbax.device_put(rng.uniform(-0.99, 0.99, n).astype(np.float32), gpu)
            ju = jax.device_put(np.asarray(u), jgpu)
            fn = numbax.jit(numbax.lax.erf_inv, backend="gpu")
            jf = jax.jit(jax.lax.erf_inv)
            tn, tj = timeit(lambda: fn(u), nb_sync, 5), timeit(lambda: jf(ju), jx_sync, 5)
        else:
            fn = numbax.jit(f, backend="gpu")
            jf = jax.jit(jfun)
            tn, tj = timeit(lambda: fn(key), nb_sync, 5), timeit(lambda: jf(jkey), jx_sync, 5)
        print(f"{name:<12} 1e8: numbax {tn * 1e3:8.3f} ms  jax {tj * 1e3:8.3f} ms  "
              f"numbax/jax time {tn / tj:6.2f}", flush=True)


if __name__ == "__main__":
    main()
