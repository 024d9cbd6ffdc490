"""The data-parallel MLP training step of issue 22's target: jit(shard_map) over N devices, a
784-512-512-10 MLP, batch 256 per device, the gradient pmean'd over the batch axis and SGD
applied; numbax (N worker processes) or, with --jax, JAX's shard_map on N CPU devices. With
--pmap the same step runs as pmap(step, axis_name="batch", in_axes=(None, 0, 0)) over the
batch split into N rows (issue 19's pmap row). Prints the best-of-R step time, and checks
the parameters equal a one-device step's.

    python benchmarks/shard_map_mlp.py [N ...] [--repeats R] [--jax] [--pmap] [--warmup W]

(N default: 4 and 8 up to the core count). Each N runs in a fresh process, since the device
count is fixed at import. Compare numbax and --jax on the same machine in one sitting.
Both libraries first run W untimed steps (default 200): numbax's workers time their
products' grids in their first calls and compile a kernel's threaded variant once it has run
enough work (threads.PARALLEL_TIER_NS), so the first steps are not a training loop's.
"""
import argparse
import os
import subprocess
import sys
import time

import numpy as np

SIZES = (784, 512, 512, 10)
BATCH_PER_DEVICE = 256


def _child(n: int, repeats: int, use_jax: bool, use_pmap: bool, warmup: int) -> None:
    if use_jax:
        os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={n}"
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
        import jax as lib
    else:
        os.environ["NUMBAX_NUM_CPU_DEVICES"] = str(n)
        import numbax as lib
        lib.config.update("jax_enable_x64", False)
    jnp = lib.numpy
    P = lib.sharding.PartitionSpec
    mesh = lib.make_mesh((n,), ("batch",), axis_types=(lib.sharding.AxisType.Auto,))
    rng = np.random.default_rng(0)
    params = [(rng.normal(size=(a, b)).astype(np.float32) / np.sqrt(a),
               np.zeros(b, np.float32)) for a, b in zip(SIZES[:-1], SIZES[1:])]
    x = rng.normal(size=(n * BATCH_PER_DEVICE, SIZES[0])).astype(np.float32)
    y = np.eye(SIZES[-1], dtype=np.float32)[rng.integers(0, SIZES[-1], n * BATCH_PER_DEVICE)]

    def loss(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = jnp.tanh(h @ w + b)
        w, b = params[-1]
        logits = h @ w + b
        logp = logits - lib.nn.logsumexp(logits, axis=-1, keepdims=True)
        return -jnp.mean(jnp.sum(logp * y, axis=-1))

    def local_step(params, xb, yb):
        grads = lib.lax.pmean(lib.grad(loss)(params, xb, yb), "batch")
        return [(w - 0.1 * gw, b - 0.1 * gb) for (w, b), (gw, gb) in zip(params, grads)]

    if use_pmap:
        mapped = lib.pmap(local_step, axis_name="batch", in_axes=(None, 0, 0))
        xs, ys = x.reshape(n, BATCH_PER_DEVICE, -1), y.reshape(n, BATCH_PER_DEVICE, -1)

        def step(params, xs, ys):  # every device holds the same new parameters: take one
            return lib.tree_util.tree_map(lambda a: a[0], mapped(params, xs, ys))
    else:
        step = lib.jit(lib.shard_map(local_step, mesh=mesh,
                                     in_specs=(P(), P("batch"), P("batch")), out_specs=P(),
                                     check_vma=False))
        sharding = lib.NamedSharding(mesh, P("batch"))
        xs, ys = lib.device_put(x, sharding), lib.device_put(y, sharding)
    out = step(params, xs, ys)
    lib.block_until_ready(out)
    for _ in range(warmup):
        lib.block_until_ready(step(params, xs, ys))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        lib.block_until_ready(step(params, xs, ys))
        times.append(time.perf_counter() - start)
    one = lib.jit(lambda p, x, y: [(w - 0.1 * gw, b - 0.1 * gb) for (w, b), (gw, gb) in
                                   zip(p, lib.grad(loss)(p, x, y))])(params, x, y)
    err = max(float(np.max(np.abs(np.asarray(a) - np.asarray(b))))
              for a, b in zip(lib.tree_util.tree_leaves(out), lib.tree_util.tree_leaves(one)))
    name = ("jax" if use_jax else "numbax") + (" pmap" if use_pmap else "")
    print(f"{name:11s} devices={n:2d} batch={n * BATCH_PER_DEVICE:5d} step best "
          f"{min(times) * 1e3:8.2f} ms  median {sorted(times)[len(times) // 2] * 1e3:8.2f} ms  "
          f"max |params - one-device| {err:.1e}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("counts", nargs="*", type=int, metavar="N", help="device counts")
    parser.add_argument("--repeats", type=int, default=20, metavar="R", help="timed steps")
    parser.add_argument("--jax", action="store_true", help="JAX's shard_map on N CPU devices")
    parser.add_argument("--pmap", action="store_true", help="pmap(step) instead of shard_map")
    parser.add_argument("--warmup", type=int, default=200, metavar="W", help="untimed steps")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)  # one N
    args = parser.parse_intermixed_args()
    use_jax, use_pmap, repeats, warmup = args.jax, args.pmap, args.repeats, args.warmup
    counts = args.counts
    if args.child:
        _child(counts[0], repeats, use_jax, use_pmap, warmup)
        return
    cores = os.cpu_count() or 1
    counts = counts or [k for k in (4, 8, 16) if k <= max(cores, 4)]
    print(f"cores={cores} MLP {SIZES} batch {BATCH_PER_DEVICE}/device, float32")
    for n in counts:
        cmd = [sys.executable, __file__, str(n), "--child", "--repeats", str(repeats),
               "--warmup", str(warmup)]
        subprocess.run(cmd + (["--jax"] if use_jax else []) + (["--pmap"] if use_pmap else []),
                       check=True)


if __name__ == "__main__":
    main()
