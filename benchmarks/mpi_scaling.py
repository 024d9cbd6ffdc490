"""Issue 22's multi-process targets, run under mpirun (or as one process):

- the data-parallel MLP step (784-512-512-10, float32, jit(shard_map), gradient pmean'd over
  every device of every process) on a fixed total batch: compare `mpirun -n 4` with 4 devices
  per process against one process of 4 devices;
- `lax.psum` of a 64 MB float32 block per device across the job, as GB/s of the block size
  (the bytes each process gets back per second), next to this machine's copy bandwidth.

    NUMBAX_NUM_CPU_DEVICES=4 mpirun -n 4 python benchmarks/mpi_scaling.py mlp
    NUMBAX_NUM_CPU_DEVICES=4 python benchmarks/mpi_scaling.py mlp
    NUMBAX_NUM_CPU_DEVICES=1 mpirun -n 4 python benchmarks/mpi_scaling.py psum

(as root, Open MPI also wants --allow-run-as-root). Process 0 prints best and median times;
nothing is asserted.
"""
import argparse
import os
import sys
import time

import numpy as np

import numbax as jax
from numbax import lax
from numbax.experimental import multihost_utils
from numbax.sharding import NamedSharding
from numbax.sharding import PartitionSpec as P

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "examples"))
from data_parallel_mlp import loss  # noqa: E402  (the README example's MLP loss)

SIZES = (784, 512, 512, 10)


def step(params, x, y):
    grads = jax.grad(lambda p: lax.pmean(loss(p, x, y), "batch"))(params)
    return [(w - 0.1 * gw, b - 0.1 * gb) for (w, b), (gw, gb) in zip(params, grads)]


def _timed(fn, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        multihost_utils.sync_global_devices("timed")
        start = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - start)
    return times


def _report(what: str, times: list[float], extra: str = "") -> None:
    if jax.process_index() == 0:
        print(f"{what}: processes={jax.process_count()} devices={jax.device_count()} best "
              f"{min(times) * 1e3:.2f} ms median {float(np.median(times)) * 1e3:.2f} ms "
              f"{extra}", flush=True)


def mlp(total_batch: int, repeats: int) -> None:
    mesh = jax.make_mesh((jax.device_count(),), ("batch",),
                         axis_types=(jax.sharding.AxisType.Explicit,))
    rows = total_batch // jax.process_count()
    rng = np.random.default_rng(jax.process_index())
    x = rng.normal(size=(rows, SIZES[0])).astype(np.float32)
    y = np.eye(SIZES[-1], dtype=np.float32)[rng.integers(0, SIZES[-1], rows)]
    init = np.random.default_rng(0)
    params = [(init.normal(size=(a, b)).astype(np.float32) / np.sqrt(a), np.zeros(b, np.float32))
              for a, b in zip(SIZES[:-1], SIZES[1:])]
    sharding = NamedSharding(mesh, P("batch"))
    xs = jax.make_array_from_process_local_data(sharding, x)
    ys = jax.make_array_from_process_local_data(sharding, y)
    params = jax.device_put(params, NamedSharding(mesh, P()))
    fn = jax.jit(jax.shard_map(step, mesh=mesh, in_specs=(P(), P("batch"), P("batch")),
                               out_specs=P()))
    jax.block_until_ready(fn(params, xs, ys))
    _report(f"mlp step total batch {total_batch}", _timed(lambda: fn(params, xs, ys), repeats))


def psum(megabytes: int, repeats: int) -> None:
    mesh = jax.make_mesh((jax.device_count(),), ("batch",))
    n = megabytes * 2**20 // 4
    local = np.full((jax.local_device_count() * n,), jax.process_index() + 1.0, np.float32)
    blocks = jax.make_array_from_process_local_data(NamedSharding(mesh, P("batch")), local)
    fn = jax.jit(jax.shard_map(lambda v: lax.psum(v, "batch"), mesh=mesh, in_specs=P("batch"),
                               out_specs=P()))
    out = fn(blocks)
    want = jax.local_device_count() * sum(range(1, jax.process_count() + 1))
    got = float(np.asarray(out.addressable_shards[0].data)[0])
    times = _timed(lambda: fn(blocks), repeats)
    src = np.ones(n, np.float32)
    dst = np.empty_like(src)
    copy = min(_copy_time(src, dst) for _ in range(5))
    gbs = n * 4 / min(times) / 1e9
    _report(f"psum {megabytes} MB/device", times,
            f"= {gbs:.1f} GB/s; copy of the same size {n * 4 / copy / 1e9:.1f} GB/s "
            f"(read+write {2 * n * 4 / copy / 1e9:.1f}); value {got} (want {want})")


def _copy_time(src: np.ndarray, dst: np.ndarray) -> float:
    start = time.perf_counter()
    np.copyto(dst, src)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("mlp", "psum"))
    parser.add_argument("--total-batch", type=int, default=4096)
    parser.add_argument("--megabytes", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    launched = any(k in os.environ for k in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"))
    if launched:  # one process without a launcher: no coordinator to name
        jax.distributed.initialize()
    jax.config.update("jax_enable_x64", False)
    if args.what == "mlp":
        mlp(args.total_batch, args.repeats)
    else:
        psum(args.megabytes, args.repeats)
    if launched:
        jax.distributed.shutdown()


if __name__ == "__main__":
    main()
