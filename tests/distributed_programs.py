"""The programs tests/test_distributed.py runs under mpirun: `python -m
tests.distributed_programs NAME OUT_DIR` from the repository root (as a module: tests/numpy
would shadow numpy if tests/ led sys.path). Each process writes what it computed to
OUT_DIR/NAME_<process>.npz (arrays) and .json (error messages), for the test to check against
numpy.

Device g (0 .. N-1, process-major) holds rows g * 10 + [0, 1, 2] of the test arrays, so every
expected value is a closed form of N."""
import json
import os
import signal
import sys
import time

import numpy as np

import numbax as jax
from numbax import lax
from numbax.experimental import multihost_utils as mu
from numbax.sharding import AxisType, NamedSharding
from numbax.sharding import PartitionSpec as P

BIG = 200_000  # elements per device of the large psum (1.6 MB: the MPI allreduce path)


def _rows(first: int, count: int) -> np.ndarray:
    return (np.arange(first, first + count)[:, None] * 10.0 + np.arange(3)).astype(np.float64)


def _local_shards(x) -> np.ndarray:
    return np.stack([np.asarray(s.data) for s in x.addressable_shards])


def _error(fn) -> str:
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the test checks class and message
        return f"{type(e).__name__}: {e}"
    return "no error"


def collectives(out: str) -> None:
    from mpi4py import MPI

    messages = {"initialize_mismatch": _error(
        lambda: jax.distributed.initialize(num_processes=MPI.COMM_WORLD.Get_size() + 1))}
    jax.distributed.initialize()
    me, n, local = jax.process_index(), jax.process_count(), jax.local_device_count()
    total = jax.device_count()
    res = {"ids": [d.id for d in jax.devices()], "process_of": [d.process_index
                                                                 for d in jax.devices()],
           "local_ids": [d.id for d in jax.local_devices()], "counts": [me, n, local, total]}
    x = _rows(me * local, local)
    ring = [(i, (i + 1) % total) for i in range(total)]
    with jax.disable_jit():  # eager workers: no compiles
        pm = lambda f: jax.pmap(f, axis_name="i")(x)  # noqa: E731
        res["pmap_psum"] = pm(lambda v: lax.psum(v, "i"))
        res["pmap_pmean"] = pm(lambda v: lax.pmean(v, "i"))
        res["pmap_pmax"] = pm(lambda v: lax.pmax(v, "i"))
        res["pmap_pmin"] = pm(lambda v: lax.pmin(v, "i"))
        res["pmap_all_gather"] = pm(lambda v: lax.all_gather(v, "i"))
        res["pmap_ppermute"] = pm(lambda v: lax.ppermute(v, "i", ring))
        res["pmap_axis_index"] = pm(lambda v: lax.axis_index("i"))

        mesh = jax.make_mesh((total,), ("i",), axis_types=(AxisType.Auto,))
        rows = NamedSharding(mesh, P("i"))
        g = jax.make_array_from_process_local_data(rows, x)
        res["global_shape"] = g.shape
        res["global_local_shards"] = _local_shards(g)
        sm = lambda f, out_specs, arr=g: jax.shard_map(  # noqa: E731
            f, mesh=mesh, in_specs=P("i"), out_specs=out_specs, check_vma=False)(arr)
        res["smap_psum"] = np.asarray(sm(lambda b: lax.psum(b, "i"), P()))
        res["smap_all_gather"] = np.asarray(sm(lambda b: lax.all_gather(b, "i", tiled=True),
                                               P()))
        res["smap_ppermute"] = _local_shards(sm(lambda b: lax.ppermute(b, "i", ring), P("i")))
        res["smap_psum_scatter"] = _local_shards(sm(
            lambda b: lax.psum_scatter(np.ones((total, 2)) * b[0, 0], "i", tiled=True),
            P("i")))
        res["smap_all_to_all"] = _local_shards(sm(
            lambda b: lax.all_to_all(b[0][None].repeat(total, 0) + np.arange(total)[:, None],
                                     "i", 0, 0, tiled=True), P("i")))
        big = jax.make_array_from_process_local_data(
            rows, np.repeat(np.arange(me * local, (me + 1) * local, dtype=np.float64)[:, None]
                            + 1.0, BIG, axis=1))
        res["smap_big_psum"] = np.asarray(sm(lambda b: lax.psum(b, "i"), P(), big))[:, :5]
        res["smap_big_psum_int"] = np.asarray(sm(lambda b: lax.psum(b.astype(np.int32), "i"),
                                                 P(), big))[:, :5]
        res["smap_big_pmax"] = np.asarray(sm(lambda b: lax.pmax(b, "i"), P(), big))[:, :5]
        # uint64 past 2**63 on the first process's devices only: MPI's MAX/MIN across the
        # processes must compare as unsigned
        tops = np.array([2**63 + g if g < local else g for g in range(total)], np.uint64)
        bigu = jax.make_array_from_process_local_data(
            rows, np.repeat(tops[me * local:(me + 1) * local, None], BIG, axis=1))
        res["smap_big_pmax_uint64"] = np.asarray(sm(lambda b: lax.pmax(b, "i"), P(), bigu))[:, :5]
        res["smap_big_pmin_uint64"] = np.asarray(sm(lambda b: lax.pmin(b, "i"), P(), bigu))[:, :5]
        # psums in a loop: more large reductions than the call's result arena holds
        res["smap_big_psum_loop"] = np.asarray(sm(lambda b: lax.fori_loop(
            0, 3, lambda i, c: lax.psum(c, "i") * 0.5, b), P(), big))[:, :5]

        mesh2 = jax.make_mesh((n, local), ("p", "d"), axis_types=(AxisType.Auto,) * 2)
        g2 = jax.make_array_from_process_local_data(NamedSharding(mesh2, P(("p", "d"))), x)
        two = lambda axes: np.asarray(jax.shard_map(  # noqa: E731
            lambda b: lax.psum(b, axes), mesh=mesh2, in_specs=P(("p", "d")),
            out_specs=P(), check_vma=False)(g2))
        res["mesh2_psum_both"] = two(("p", "d"))
        res["mesh2_psum_p"] = _local_shards(jax.shard_map(
            lambda b: lax.psum(b, "p"), mesh=mesh2, in_specs=P(("p", "d")),
            out_specs=P("d"), check_vma=False)(g2))

    res["jit_elementwise"] = _local_shards(jax.jit(lambda a: a * 2.0 + 1.0)(g))
    res["allgather_stacked"] = mu.process_allgather(np.array([me, me + 0.5]))
    res["allgather_tiled"] = mu.process_allgather(np.array([me, me + 0.5]), tiled=True)
    res["allgather_global"] = mu.process_allgather(g, tiled=True)
    res["broadcast"] = mu.broadcast_one_to_all(np.full(3, me + 1.0))
    res["broadcast_last"] = mu.broadcast_one_to_all(np.full(2, me + 1.0),
                                                    is_source=me == n - 1)
    mu.sync_global_devices("collectives done")
    mu.assert_equal(np.arange(3.0), "same everywhere")
    messages["assert_equal"] = _error(lambda: mu.assert_equal(np.array([me]), "differ"))
    messages["allgather_untiled"] = _error(lambda: mu.process_allgather(g))
    messages["asarray"] = _error(lambda: np.asarray(g))
    messages["eager_op"] = _error(lambda: g * 2.0)
    messages["repr"] = repr(g)
    messages["pmap_too_many"] = _error(lambda: jax.pmap(lambda v: v)(np.ones(local + 1)))
    np.savez(os.path.join(out, f"collectives_{me}.npz"), **res)
    with open(os.path.join(out, f"collectives_{me}.json"), "w") as f:
        json.dump(messages, f)


# The reductions of `reductions`: (name, dtype, op, elements per device), the first of each
# size class of the shared-memory window (node_reduce.py) before a larger one (it grows).
REDUCTIONS = [
    ("f16_sum", "float16", "sum", 600_000), ("f32_max_nan", "float32", "max", 600_000),
    ("f32_min_nan", "float32", "min", 600_000), ("f64_sum", "float64", "sum", 600_000),
    ("bf16_sum", "bfloat16", "sum", 600_000), ("bf16_max_nan", "bfloat16", "max", 600_000),
    ("i32_sum", "int32", "sum", 600_000), ("u64_sum", "uint64", "sum", 600_000),
    ("u64_max", "uint64", "max", 600_000), ("u64_min", "uint64", "min", 600_000),
    ("f64_sum_large", "float64", "sum", 1_100_003),  # more pieces than the window's slots
]


def reduction_operand(device: int, dtype: str, op: str, count: int) -> np.ndarray:
    """Device `device`'s operand: small integers where sums must be exact in any order (16-bit
    floats), normal floats with NaNs at device-dependent places (max/min), integers over the
    whole range (uint64 past 2**63, sums that wrap)."""
    rng = np.random.default_rng(device)
    dt = jnp_dtype(dtype)
    if dtype in ("float16", "bfloat16"):
        x = rng.integers(-8, 9, count).astype(dt)
    elif dtype.startswith("float"):
        x = rng.standard_normal(count).astype(dt)
    elif dtype == "uint64":
        return rng.integers(0, 2**64, count, dtype=np.uint64, endpoint=False)
    else:
        return rng.integers(-2**20, 2**20, count).astype(dt)
    if op != "sum":
        x[device::7] = np.nan
    return x


def jnp_dtype(name: str) -> np.dtype:
    return np.dtype(jax.numpy.bfloat16) if name == "bfloat16" else np.dtype(name)


def reductions(out: str) -> None:
    """Large psum/pmax/pmin (the parents' cross-process allreduce) of every REDUCTIONS case;
    records the results and whether the groups took the shared-memory path (os.environ
    REDUCE_THREADS: how many threads it runs on)."""
    from numbax._src.parallel import distributed, node_reduce

    if os.environ.get("REDUCE_THREADS"):  # the threaded copies and reductions on any host
        node_reduce.thread_count = lambda processes: int(os.environ["REDUCE_THREADS"])
    jax.distributed.initialize()
    me, local = jax.process_index(), jax.local_device_count()
    mesh = jax.make_mesh((jax.device_count(),), ("i",), axis_types=(AxisType.Auto,))
    rows = NamedSharding(mesh, P("i"))
    res = {}
    with jax.disable_jit():
        for name, dtype, op, count in REDUCTIONS:
            x = np.stack([reduction_operand(g, dtype, op, count)
                          for g in range(me * local, (me + 1) * local)])
            arr = jax.make_array_from_process_local_data(rows, x)
            reduce = {"sum": lax.psum, "max": lax.pmax, "min": lax.pmin}[op]
            # int32: an operand the device computed, not one in shared memory (read in place)
            scale = 1 if dtype == "int32" else None
            got = np.asarray(jax.shard_map(
                lambda b, f=reduce, k=scale: f(b if k is None else b * k, "i"), mesh=mesh,
                in_specs=P("i"), out_specs=P(), check_vma=False)(arr))
            res[name] = got.view(np.uint16) if dtype == "bfloat16" else got
    res["shm_groups"] = [node is not None for node in distributed.state.nodes.values()]
    np.savez(os.path.join(out, f"reductions_{me}.npz"), **res)


def fault(out: str) -> None:
    """Process 1 fails (os.environ FAULT: kill, raise or leave; kill_large: killed during a
    large psum, the parents' allreduce step) while process 0 keeps calling a collective;
    process 0 records what it raised and when."""
    jax.distributed.initialize()
    me = jax.process_index()
    step = jax.pmap(lambda v: lax.psum(v, "i"), axis_name="i")
    # 2.4 MB per device: the parents' allreduce (node_reduce.py on one node), not an exchange
    width = 300_000 if os.environ["FAULT"] == "kill_large" else 1
    operand = np.ones((jax.local_device_count(), width))
    with jax.disable_jit():
        step(operand)
        start = time.monotonic()
        if me == 1:
            time.sleep(0.5)
            kind = os.environ["FAULT"]
            if kind in ("kill", "kill_large"):
                os.kill(os.getpid(), signal.SIGKILL)
            if kind == "raise":
                raise ValueError("process 1 gives up")
            return  # "leave": its script ends while process 0 still calls psum
        try:
            while time.monotonic() - start < 60:
                step(operand)
            message = "no error within 60 s"
        except Exception as e:  # noqa: BLE001 - the test checks class and message
            message = f"{type(e).__name__}: {e}"
        from numbax._src.parallel import distributed

        shm = [node is not None for node in distributed.state.nodes.values()]
        with open(os.path.join(out, "fault_0.json"), "w") as f:
            json.dump({"error": message, "seconds": time.monotonic() - start, "shm": shm}, f)
        raise SystemExit(3)


if __name__ == "__main__":
    {"collectives": collectives, "reductions": reductions,
     "fault": fault}[sys.argv[1]](sys.argv[2])
