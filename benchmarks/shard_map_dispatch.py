"""The fixed per-call cost of small jitted shard_map / pmap calls on 2 virtual CPU devices,
numbax against JAX (issue 22): shard_map of v + 1 on 1024 float32, shard_map with a small
psum, pmap of v + 1. Each library runs in a process of its own (they would share the cores'
threads otherwise); per case: median and range of the per-call time over many calls.

Run: python benchmarks/shard_map_dispatch.py [--calls N] [--only numbax|jax]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np

DEVICES = 2


def _cases(jax):
    from functools import partial

    jnp = jax.numpy
    P = jax.sharding.PartitionSpec
    mesh = jax.make_mesh((DEVICES,), ("i",))
    x = jax.device_put(np.arange(1024, dtype=np.float32),
                       jax.sharding.NamedSharding(mesh, P("i")))

    @jax.jit
    @partial(jax.shard_map, mesh=mesh, in_specs=P("i"), out_specs=P("i"))
    def plus_one(v):
        return v + 1

    @jax.jit
    @partial(jax.shard_map, mesh=mesh, in_specs=P("i"), out_specs=P())
    def small_psum(v):
        return jax.lax.psum(jnp.sum(v, keepdims=True), "i")

    pmapped = jax.pmap(lambda v: v + 1)
    stacked = jnp.asarray(np.arange(DEVICES * 512, dtype=np.float32).reshape(DEVICES, 512))
    return [("shard_map v+1, 1024 f32", plus_one, x),
            ("shard_map small psum", small_psum, x),
            ("pmap v+1, 2x512 f32", pmapped, stacked)]


def _time(fn, arg, calls):
    for _ in range(20):  # warm up: workers, compiles, caches
        jax_block(fn(arg))
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        jax_block(fn(arg))
        times.append(time.perf_counter() - start)
    return times


def jax_block(out):
    out.block_until_ready()


def measure(lib: str, calls: int) -> None:
    if lib == "jax":
        os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={DEVICES}"
        import jax
        jax.config.update("jax_platforms", "cpu")
    else:
        os.environ["NUMBAX_NUM_CPU_DEVICES"] = str(DEVICES)
        import numbax as jax
    for name, fn, arg in _cases(jax):
        times = [t * 1e6 for t in _time(fn, arg, calls)]
        print(f"{lib:6s} {name:26s} median {statistics.median(times):8.1f} us  "
              f"range {min(times):8.1f} .. {max(times):8.1f} us", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=2000, metavar="N", help="timed calls a case")
    parser.add_argument("--only", choices=("numbax", "jax"), help="one library")
    parser.add_argument("--lib", choices=("numbax", "jax"), help=argparse.SUPPRESS)  # a child
    args = parser.parse_args()
    calls, only = args.calls, args.only
    if args.lib:
        measure(args.lib, calls)
        return
    print(f"cores={os.cpu_count()} devices={DEVICES} calls={calls} "
          f"load={os.getloadavg()[0]:.2f}")
    for lib in ("numbax", "jax"):
        if only in (None, lib):
            subprocess.run([sys.executable, __file__, "--lib", lib, "--calls", str(calls)],
                           check=True)


if __name__ == "__main__":
    main()
