"""Data-parallel training of a small MLP over every device of every process of a job.

Run it on 2 processes of one machine, each with 2 virtual CPU devices:

    NUMBAX_NUM_CPU_DEVICES=2 mpirun -n 2 python examples/data_parallel_mlp.py

(as root, Open MPI also wants --allow-run-as-root; with more processes than cores,
--oversubscribe). Each process makes its own slice of the batch; the gradient is averaged over
all devices by `lax.pmean` inside `shard_map`, which runs each process's devices in its own
worker processes and combines the processes over MPI; every process ends with the same
parameters. `--pmap` trains with `pmap` instead (each process maps its local devices), and
`--out FILE` saves the final parameters (process 0) to an .npz file.
"""
import argparse

import numpy as np

import numbax as jax
import numbax.numpy as jnp
from numbax import lax
from numbax.experimental import multihost_utils
from numbax.sharding import NamedSharding
from numbax.sharding import PartitionSpec as P

SIZES = (8, 16, 3)
LEARNING_RATE = 0.5


def init_params(seed: int) -> list:
    rng = np.random.default_rng(seed)
    return [(rng.normal(size=(a, b)) / np.sqrt(a), np.zeros(b))
            for a, b in zip(SIZES[:-1], SIZES[1:], strict=True)]


def make_batch(seed: int, rows: int, first_row: int):
    """Rows first_row .. first_row + rows of a fixed synthetic classification data set."""
    rng = np.random.default_rng(seed)
    total = first_row + rows
    x = rng.normal(size=(total, SIZES[0]))
    labels = (x[:, 0] > 0).astype(int) + (x[:, 1] > 0.5).astype(int)
    y = np.eye(SIZES[-1])[labels]
    return x[first_row:], y[first_row:]


def loss(params, x, y):
    h = x
    for w, b in params[:-1]:
        h = jnp.tanh(h @ w + b)
    w, b = params[-1]
    logits = h @ w + b
    logp = logits - jax.nn.logsumexp(logits, axis=-1, keepdims=True)
    return -jnp.mean(jnp.sum(logp * y, axis=-1))


def sgd(params, grads):
    return [(w - LEARNING_RATE * gw, b - LEARNING_RATE * gb)
            for (w, b), (gw, gb) in zip(params, grads, strict=True)]


def pmap_step(params, x, y):
    """One device's step under pmap: its slice's gradient, averaged over every device."""
    value, grads = jax.value_and_grad(loss)(params, x, y)
    return sgd(params, lax.pmean(grads, "batch")), lax.pmean(value, "batch")


def shard_map_step(params, x, y):
    """One device's step under shard_map: the gradient of the loss averaged over every
    device (shard_map's varying-axes rules make the replicated parameters' gradient the
    sum over devices of each device's part, as in JAX)."""
    global_loss = lambda p: lax.pmean(loss(p, x, y), "batch")  # noqa: E731
    value, grads = jax.value_and_grad(global_loss)(params)
    return sgd(params, grads), value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rows-per-device", type=int, default=32)
    parser.add_argument("--pmap", action="store_true", help="train with pmap, not shard_map")
    parser.add_argument("--no-jit", action="store_true", help="run eagerly (no Numba compiles)")
    parser.add_argument("--out", help="save the final parameters here (process 0)")
    args = parser.parse_args()

    jax.distributed.initialize()  # the launcher says how many processes and which one this is
    me, local = jax.process_index(), jax.local_device_count()
    rows = args.rows_per_device * local  # this process's slice of the global batch
    x, y = make_batch(0, rows, first_row=me * rows)
    params = init_params(1)  # the same on every process

    if args.pmap:
        step = jax.pmap(pmap_step, axis_name="batch", in_axes=(None, 0, 0), out_axes=None)
        batch = (x.reshape(local, -1, SIZES[0]), y.reshape(local, -1, SIZES[-1]))
    else:
        mesh = jax.make_mesh((jax.device_count(),), ("batch",),
                             axis_types=(jax.sharding.AxisType.Explicit,))
        step = jax.jit(jax.shard_map(shard_map_step, mesh=mesh,
                                     in_specs=(P(), P("batch"), P("batch")),
                                     out_specs=(P(), P())))
        rows_sharding = NamedSharding(mesh, P("batch"))
        batch = (jax.make_array_from_process_local_data(rows_sharding, x),
                 jax.make_array_from_process_local_data(rows_sharding, y))
        params = jax.device_put(params, NamedSharding(mesh, P()))

    with jax.disable_jit(args.no_jit):
        for i in range(args.steps):
            params, value = step(params, *batch)
            if me == 0 and (i % 5 == 0 or i == args.steps - 1):
                print(f"step {i:3d}  loss {float(np.asarray(value)):.6f}", flush=True)

    # Every process holds the same parameters; check it, then save process 0's.
    leaves = [np.asarray(p) for p in jax.tree_util.tree_leaves(params)]
    multihost_utils.assert_equal(leaves, "the processes' parameters differ")
    if me == 0 and args.out:
        np.savez(args.out, *leaves)
    print(f"process {me} of {jax.process_count()}: done, {jax.device_count()} devices",
          flush=True)


if __name__ == "__main__":
    main()
