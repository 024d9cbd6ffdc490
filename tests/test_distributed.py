"""jax.distributed over MPI (issue 22, "beyond one machine"): jobs of 2 and 4 processes of this
machine started with mpirun, each process with its own virtual devices. Collectives across
processes against numpy, a data-parallel training loop against the single-process run, a
process that dies or raises making the others raise within seconds, and initialize's errors
against JAX's (tests/data/distributed_jax_reference.json).

The programs live in tests/distributed_programs.py and examples/data_parallel_mlp.py; each
mpirun has a time limit, so a hang fails the test instead of stalling CI. Skipped when mpirun
or mpi4py is missing (`pip install 'numbax[mpi]'`, and an MPI: `.ci/run` installs Open MPI)."""
import functools
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MPIRUN = shutil.which("mpirun")
pytestmark = pytest.mark.skipif(
    MPIRUN is None or importlib.util.find_spec("mpi4py") is None,
    reason="needs mpirun and mpi4py (pip install 'numbax[mpi]')")


def _load(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _open_mpi() -> bool:
    return "Open MPI" in subprocess.run([MPIRUN, "--version"], capture_output=True,
                                        text=True).stdout


def _mpirun_flags(n: int) -> list[str]:
    """Open MPI wants to be told it may run as root and run more processes than cores."""
    if not _open_mpi():
        return []
    flags = ["--oversubscribe"] if n > (os.cpu_count() or 1) else []
    return flags + (["--allow-run-as-root"] if os.geteuid() == 0 else [])


def _env(devices: int) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([ROOT, *filter(None, [env.get("PYTHONPATH")])])
    env["NUMBAX_NUM_CPU_DEVICES"] = str(devices)
    return env


def mpirun(n: int, args: list[str], devices: int = 2, timeout: float = 60,
           extra: tuple = (), env: dict | None = None) -> subprocess.CompletedProcess:
    """`mpirun -n N python ARGS` from the repository root; a job that outlives `timeout`
    fails the test (its processes are killed with it)."""
    cmd = [MPIRUN, "-n", str(n), *_mpirun_flags(n), *extra, sys.executable, *args]
    try:
        return subprocess.run(cmd, cwd=ROOT, env={**_env(devices), **(env or {})},
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as err:
        pytest.fail(f"mpirun hung for {timeout} s: {' '.join(cmd)}\n{err.stdout}\n{err.stderr}")


def _results(out, name: str, n: int) -> tuple[list, list]:
    arrays = [dict(np.load(out / f"{name}_{p}.npz")) for p in range(n)]
    messages = [json.loads((out / f"{name}_{p}.json").read_text()) for p in range(n)]
    return arrays, messages


def _check_collectives(arrays: list, messages: list, n: int, local: int) -> None:
    total = n * local
    rows = np.arange(total)[:, None] * 10.0 + np.arange(3)  # device g's row
    ids = [p * 2048 + i for p in range(n) for i in range(local)]
    for p, (res, msg) in enumerate(zip(arrays, messages)):
        mine = slice(p * local, (p + 1) * local)
        assert res["ids"].tolist() == ids  # JAX's packing of CPU device ids
        assert res["process_of"].tolist() == [g // local for g in range(total)]
        assert res["local_ids"].tolist() == ids[mine]
        assert res["counts"].tolist() == [p, n, local, total]
        np.testing.assert_array_equal(res["pmap_psum"], np.tile(rows.sum(0), (local, 1)))
        np.testing.assert_array_equal(res["pmap_pmean"], np.tile(rows.mean(0), (local, 1)))
        np.testing.assert_array_equal(res["pmap_pmax"], np.tile(rows.max(0), (local, 1)))
        np.testing.assert_array_equal(res["pmap_pmin"], np.tile(rows.min(0), (local, 1)))
        np.testing.assert_array_equal(res["pmap_all_gather"], np.stack([rows] * local))
        np.testing.assert_array_equal(res["pmap_ppermute"], np.roll(rows, 1, 0)[mine])
        assert res["pmap_axis_index"].tolist() == list(range(total))[mine]
        assert res["global_shape"].tolist() == [total, 3]
        np.testing.assert_array_equal(res["global_local_shards"][:, 0], rows[mine])
        np.testing.assert_array_equal(res["smap_psum"], rows.sum(0, keepdims=True))
        np.testing.assert_array_equal(res["smap_all_gather"], rows)
        np.testing.assert_array_equal(res["smap_ppermute"][:, 0], np.roll(rows, 1, 0)[mine])
        np.testing.assert_array_equal(res["smap_psum_scatter"],
                                      np.full((local, 1, 2), rows[:, 0].sum()))
        want_a2a = [rows + g for g in range(total)][mine]
        np.testing.assert_array_equal(res["smap_all_to_all"], want_a2a)
        values = np.arange(total) + 1.0  # the large operands: device g holds g + 1
        np.testing.assert_array_equal(res["smap_big_psum"], np.full((1, 5), values.sum()))
        np.testing.assert_array_equal(res["smap_big_psum_int"], np.full((1, 5), values.sum()))
        np.testing.assert_array_equal(res["smap_big_pmax"], np.full((1, 5), values.max()))
        tops = np.array([2**63 + g if g < local else g for g in range(total)], np.uint64)
        for op, want in (("pmax", tops.max()), ("pmin", tops.min())):
            got = res[f"smap_big_{op}_uint64"]
            assert got.dtype == np.uint64
            np.testing.assert_array_equal(got, np.full((1, 5), want, np.uint64))
        looped = values.copy()
        for _ in range(3):
            looped = np.full_like(looped, looped.sum() * 0.5)
        np.testing.assert_array_equal(res["smap_big_psum_loop"], np.full((1, 5), looped[0]))
        np.testing.assert_array_equal(res["mesh2_psum_both"], rows.sum(0, keepdims=True))
        by_d = rows.reshape(n, local, 3).sum(0)  # psum over the process axis of a 2-d mesh
        np.testing.assert_array_equal(res["mesh2_psum_p"][:, 0], by_d)
        np.testing.assert_array_equal(res["jit_elementwise"][:, 0], rows[mine] * 2 + 1)
        ranks = np.arange(n)[:, None] + np.array([0.0, 0.5])
        np.testing.assert_array_equal(res["allgather_stacked"], ranks)
        np.testing.assert_array_equal(res["allgather_tiled"], ranks.reshape(-1))
        np.testing.assert_array_equal(res["allgather_global"], rows)
        np.testing.assert_array_equal(res["broadcast"], np.ones(3))
        np.testing.assert_array_equal(res["broadcast_last"], np.full(2, float(n)))
        assert msg["initialize_mismatch"].startswith(
            f"ValueError: jax.distributed.initialize: num_processes={n + 1} and process_id={p}, "
            f"but MPI started {n} processes")
        assert msg["assert_equal"].startswith("AssertionError: differ.")
        assert msg["allgather_untiled"] == ("ValueError: Gathering global non-fully-addressable"
                                            " arrays only supports tiled=True")
        assert msg["asarray"].startswith("RuntimeError: Fetching value for `jax.Array` that "
                                         "spans non-addressable (non process local) devices")
        assert msg["eager_op"].startswith("RuntimeError: numbax: `mul` was applied eagerly to "
                                          "an array that spans devices of several processes")
        assert msg["repr"] == f"Array(shape=({total}, 3), dtype=float64)"
        assert f"mapped axis has size {local + 1} in this process, expected at most " \
               f"{local}" in msg["pmap_too_many"]


def test_collectives_across_two_processes(tmp_path):
    proc = mpirun(2, ["-m", "tests.distributed_programs", "collectives", str(tmp_path)])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    _check_collectives(*_results(tmp_path, "collectives", 2), n=2, local=2)


@pytest.mark.slow  # four processes run in the fast path's 4-shm reductions
def test_collectives_across_four_processes_oversubscribed(tmp_path):
    proc = mpirun(4, ["-m", "tests.distributed_programs", "collectives", str(tmp_path)],
                  devices=1, timeout=90)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    _check_collectives(*_results(tmp_path, "collectives", 4), n=4, local=1)


# CI's fast path (-m "not slow") keeps one run per transport and the oversubscribed 4-shm
@pytest.mark.parametrize("n,shm,threads", [
    (2, "1", ""), pytest.param(2, "1", "3", marks=pytest.mark.slow), (2, "0", ""),
    (4, "1", "")], ids=["2-shm", "2-shm-3-threads", "2-mpi", "4-shm"])
def test_large_reductions_match_numpy_bit_for_bit(tmp_path, n, shm, threads):
    """psum/pmax/pmin of > 1 MB per device (the parents' allreduce step) across processes of one
    device each: through the shared-memory window (node_reduce.py: growing from its first size
    class, pipelined through its slots, on several threads, or in whole-buffer phases when the
    processes outnumber the cores) or MPI (NUMBAX_CROSSPROC_SHM=0), numpy's fold in device
    order (NaN propagating, uint64 past 2**63, wrapping sums, float16 and bfloat16), the same
    bits in every process."""
    proc = mpirun(n, ["-m", "tests.distributed_programs", "reductions", str(tmp_path)],
                  devices=1, timeout=90, env={"NUMBAX_CROSSPROC_SHM": shm,
                                              "REDUCE_THREADS": threads})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    programs = _load("tests/distributed_programs.py", "distributed_programs")
    got = [dict(np.load(tmp_path / f"reductions_{p}.npz")) for p in range(n)]
    for res in got:
        assert res["shm_groups"].tolist() == [shm == "1"]
    ufuncs = {"sum": np.add, "max": np.maximum, "min": np.minimum}
    for name, dtype, op, count in programs.REDUCTIONS:
        parts = [programs.reduction_operand(g, dtype, op, count) for g in range(n)]
        with np.errstate(over="ignore", invalid="ignore"):
            want = functools.reduce(ufuncs[op], parts)[None]
        if dtype == "bfloat16":
            want = want.view(np.uint16)
        for p, res in enumerate(got):
            assert res[name].dtype == want.dtype, (name, p)
            assert res[name].tobytes() == got[0][name].tobytes(), (name, p)
            np.testing.assert_array_equal(res[name], want, err_msg=f"{name}, process {p}")


def _single_process_params(steps: int, rows_per_device: int, devices: int) -> list:
    """The example's training on the whole global batch in one process, on one device."""
    import numbax

    example = _load("examples/data_parallel_mlp.py", "data_parallel_mlp")
    x, y = example.make_batch(0, rows_per_device * devices, first_row=0)
    params = example.init_params(1)
    step = numbax.jit(lambda p: example.sgd(p, numbax.grad(example.loss)(p, x, y)))
    for _ in range(steps):
        params = step(params)
    return [np.asarray(a) for a in numbax.tree_util.tree_leaves(params)]


def _readme_command() -> list[str]:
    """The README's command that trains on 2 processes (its environment assignments apart)."""
    with open(os.path.join(ROOT, "README.md")) as f:
        lines = [ln.strip() for ln in f if "mpirun -n 2 python examples/" in ln]
    assert lines, "README.md shows no `mpirun -n 2 python examples/...` command"
    words = lines[0].split()
    assert words[0] == "NUMBAX_NUM_CPU_DEVICES=2" and words[1] == "mpirun", lines[0]
    return words[words.index("python") + 1:]


@pytest.mark.parametrize("mode", ["shard_map", pytest.param("pmap", marks=pytest.mark.slow)])
def test_data_parallel_training_equals_single_process(tmp_path, mode):
    """The README's command: jit(shard_map) compiled in the workers, or eager pmap; the
    parameters after 6 steps equal one process's training on the whole batch."""
    args = _readme_command() + ["--steps", "6", "--out", str(tmp_path / "params.npz")]
    if mode == "pmap":
        args += ["--pmap", "--no-jit"]
    proc = mpirun(2, args, env={"NUMBAX_CACHE_DIR": os.environ.get(
        "NUMBAX_CACHE_DIR", str(tmp_path / "cache"))}, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "process 0 of 2: done, 4 devices" in proc.stdout
    assert "process 1 of 2: done, 4 devices" in proc.stdout
    saved = np.load(tmp_path / "params.npz")
    got = [saved[f"arr_{i}"] for i in range(len(saved.files))]
    want = _single_process_params(6, 32, 4)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("fault", ["kill", "kill_large", "raise",
                                   pytest.param("leave", marks=pytest.mark.slow)])
def test_a_process_that_stops_makes_the_others_raise(tmp_path, fault):
    """Process 1 is killed (SIGKILL), raises, or ends its script while process 0 calls a
    collective (kill_large: a large psum, process 0 waiting at a barrier of the shared-memory
    allreduce): process 0 raises within seconds instead of hanging. With Open MPI,
    --enable-recovery keeps mpirun from stopping process 0 itself, so the raise is numbax's."""
    extra = ("--enable-recovery",) if _open_mpi() else ()
    mpirun(2, ["-m", "tests.distributed_programs", "fault", str(tmp_path)],
           devices=1, extra=extra, env={"FAULT": fault}, timeout=60)
    record = json.loads((tmp_path / "fault_0.json").read_text())
    want = {"kill": r"JaxRuntimeError: pmap: process 1 \(pid \d+\) died",
            "kill_large": r"JaxRuntimeError: pmap: process 1 \(pid \d+\) died",
            "raise": "JaxRuntimeError: pmap: process 1 failed \\(stopped with an uncaught "
                     "ValueError: process 1 gives up\\)",
            "leave": r"JaxRuntimeError: pmap: process 1 left the job \(its script ended\)"}
    assert re.match(want[fault], record["error"]), record["error"]
    assert record["seconds"] < 10, record
    assert record["shm"] == [True], record  # one node: large reductions take the window


def test_initialize_errors_match_jax():
    maker = _load("tests/data/make_distributed_reference.py", "make_distributed_reference")
    with open(os.path.join(ROOT, "tests", "data", "distributed_jax_reference.json")) as f:
        reference = json.load(f)
    for name, group in reference["groups"].items():
        got = maker.run("numbax", group, {"PYTHONPATH": ROOT})
        assert got == reference["results"][name], name


def test_initialize_refuses_processes_no_launcher_joined():
    maker = _load("tests/data/make_distributed_reference.py", "make_distributed_reference")
    got = maker.run("numbax", {
        "two": "jax.distributed.initialize('localhost:1', num_processes=2, process_id=0)",
        "method": "jax.distributed.initialize(cluster_detection_method='pbs')",
    }, {"PYTHONPATH": ROOT})
    assert got["two"].startswith("RuntimeError: jax.distributed.initialize: num_processes=2, "
                                 "but this process was not started by an MPI launcher")
    assert "mpirun -n 2 python script.py" in got["two"]
    assert got["method"].startswith("ValueError: jax.distributed.initialize: "
                                    "cluster_detection_method is 'pbs', expected one of")


def test_a_process_no_launcher_started_is_refused_before_mpi_starts():
    """Without a launcher's variables, initialize(num_processes=2) raises before mpi4py
    starts MPI: Open MPI's singleton start needs ssh or rsh, and where neither exists (the GPU
    host's container) it aborted the process instead of raising."""
    code = ("import sys, numbax\n"
            "try:\n"
            "    numbax.distributed.initialize('localhost:1', num_processes=2, process_id=0)\n"
            "except RuntimeError as err:\n"
            "    print(str(err).split(',')[0], 'mpi4py.MPI' in sys.modules)\n")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OMPI_", "PMI", "SLURM_", "HYDRA_", "MPI_LOCALRANKID"))}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**env, "PYTHONPATH": ROOT}, timeout=300, check=True)
    assert out.stdout.strip() == "jax.distributed.initialize: num_processes=2 False"


def test_open_mpi_allreduce_algorithm_default_and_user_choice(monkeypatch):
    """Before MPI starts, numbax picks Open MPI's Rabenseifner allreduce for libnbc (the
    cross-process psum's engine) unless the user chose one; mpi4py is faked, so no MPI starts
    in this process."""
    import types

    from numbax._src.parallel import distributed

    name = "OMPI_MCA_coll_libnbc_iallreduce_algorithm"
    fake = types.ModuleType("mpi4py")
    fake.MPI = object()
    monkeypatch.setitem(sys.modules, "mpi4py", fake)
    monkeypatch.setenv(name, "placeholder")  # recorded, so the test's changes are undone
    monkeypatch.delenv(name)
    assert distributed._import_mpi(2) is fake.MPI
    assert os.environ[name] == "3"
    monkeypatch.setenv(name, "1")
    distributed._import_mpi(2)
    assert os.environ[name] == "1"
