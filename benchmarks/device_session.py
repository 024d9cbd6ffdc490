"""Runs the GPU machine's checks and benchmarks in one go, each step in its own subprocess with
a time limit, and writes every step's output to $OUT/<step>.txt (plus a summary on stdout).

    PYTHONPATH=. python3 benchmarks/device_session.py [step ...]

Steps (all by default, in this order): info, sim_checks (tests/compiler/cuda/sim_checks.py on
the real card), matrix (tests/compiler/cuda/sim_matrix.py on the card), multi_gpu, bench_cuda,
driver, sort, linalg, rows_probe, softmax_probe, cpu_isa, bench_cpu, mlp_profile, gemm,
compile, runtime, load, conv (cuDNN convolutions), shard_map, mpi and mpi_variants (issue 22's
16-core rows).
`step=a,b` passes
a and b to the step's script as arguments (e.g. `sim_checks=sort_device,reductions`)."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable

STEPS: dict[str, tuple[list[str], int]] = {
    "info": (["bash", "-c", "nvidia-smi -L; lscpu | grep -E 'Model name|^CPU\\(s\\)'; "
              f"{PY} -c 'import numba, numpy; print(numba.__version__, numpy.__version__)'"], 60),
    "sim_checks": ([PY, "tests/compiler/cuda/sim_checks.py"], 420),
    "matrix": ([PY, "tests/compiler/cuda/sim_matrix.py"], 400),
    "multi_gpu": ([PY, "-X", "faulthandler", "tests/compiler/cuda/multi_gpu_checks.py"], 200),
    "multi_gpu_nocupy": ([PY, "-X", "faulthandler", "tests/compiler/cuda/multi_gpu_checks.py"],
                         200),
    "bench_cuda": ([PY, "benchmarks/bench_cuda.py"], 300),
    "driver": ([PY, "-W", "ignore", "benchmarks/bench_cuda_driver.py"], 240),
    "sort": ([PY, "benchmarks/gpu_sort_bench.py"], 200),
    "linalg": ([PY, "benchmarks/gpu_linalg_bench.py"], 200),
    "rows_probe": ([PY, "-W", "ignore", "benchmarks/gpu_rows_probe.py"], 200),
    "softmax_probe": ([PY, "-W", "ignore", "benchmarks/gpu_softmax_probe.py"], 200),
    "cpu_isa": ([PY, "benchmarks/cpu_isa_probe.py"], 150),
    "bench_cpu": ([PY, "benchmarks/bench_cpu.py"], 300),
    "mlp_profile": ([PY, "benchmarks/mlp_profile.py"], 150),
    "gemm": ([PY, "benchmarks/gemm_bench.py"], 200),
    "compile": ([PY, "benchmarks/bench_compile.py"], 200),
    "runtime": ([PY, "benchmarks/bench_runtime.py"], 420),
    "load": ([PY, "benchmarks/load_latency.py"], 200),
    "conv": ([PY, "-W", "ignore", "benchmarks/gpu_conv_bench.py"], 200),
    # issue 22's 16-core rows: jit(shard_map) MLP steps against JAX's, then MPI jobs on
    # this host (psum of 64 MB over 4 processes; 4 processes x 4 devices against 1 x 4)
    "shard_map": (["bash", "-c", f"{PY} benchmarks/shard_map_mlp.py 8 16 --repeats 20; "
                   f"{PY} benchmarks/shard_map_mlp.py 8 16 --jax"], 300),
    "mpi": (["bash", "-c", "M='mpirun --allow-run-as-root --oversubscribe'; "
             f"NUMBAX_NUM_CPU_DEVICES=1 $M -n 4 {PY} benchmarks/mpi_scaling.py psum; "
             f"NUMBAX_NUM_CPU_DEVICES=4 $M -n 4 {PY} benchmarks/mpi_scaling.py mlp; "
             f"NUMBAX_NUM_CPU_DEVICES=4 {PY} benchmarks/mpi_scaling.py mlp"], 400),
    # Open MPI's transports for the 64 MB psum over 4 processes of one host (0.9-1.0 GB/s at
    # the last measurement): the shared-memory BTL's single-copy mechanism and libnbc's
    # allreduce algorithm (numbax's default is 3, Rabenseifner's)
    "mpi_variants": (["bash", "-c", "M='mpirun --allow-run-as-root --oversubscribe'; "
                      "for v in '' 'OMPI_MCA_btl_vader_single_copy_mechanism=none' "
                      "'OMPI_MCA_btl_vader_single_copy_mechanism=cma' "
                      "'OMPI_MCA_coll_libnbc_iallreduce_algorithm=2'; do echo \"== $v\"; "
                      f"env $v NUMBAX_NUM_CPU_DEVICES=1 $M -n 4 {PY} "
                      "benchmarks/mpi_scaling.py psum | grep psum; done"], 400),
}

# CPU benchmarks compare with JAX on the CPU and keep numbax off the GPU
CPU_STEPS = frozenset({"cpu_isa", "bench_cpu", "mlp_profile", "gemm", "compile", "runtime",
                       "load", "shard_map", "mpi", "mpi_variants"})
CPU_ENV = {"JAX_PLATFORMS": "cpu", "NUMBAX_PLATFORMS": "cpu"}


def _summary(step: str, text: str) -> str:
    """A few lines worth reading from a step's output."""
    lines = text.splitlines()
    if step in ("sim_checks", "matrix"):
        rows = [json.loads(x) for x in lines if x.startswith("{")]
        key = "check" if step == "sim_checks" else "row"
        good = ("ok", True)
        bad = [r for r in rows if r.get("outcome", r.get("ok")) not in (*good, "refused")]
        refused = sorted({r[key].split(":")[1] for r in rows if r.get("outcome") == "refused"})
        out = [f"{len(rows)} rows, {len(bad)} failing; refused: {refused}"]
        out += [f"  FAIL {r[key]}: {str(r.get('error'))[-600:]}" for r in bad]
        return "\n".join(out)
    return "\n".join(lines[-60:])


def _run_step(spec: str, env: dict, out_dir: Path) -> str:
    step, _, extra = spec.partition("=")
    cmd, limit = STEPS[step]
    if not (ROOT / cmd[-1]).exists() and cmd[0] == PY:
        return f"## {step}: {cmd[-1]} missing, skipped"
    cmd = [*cmd, *(a for a in extra.split(",") if a)]
    if step == "multi_gpu_nocupy":  # whether the exit-time crash needs CuPy in the process
        cmd += ["gpu_listing", "put_and_get_on_gpu1", "transfer_between_gpus", "jit_on_gpu1",
                "control_flow_on_gpu1", "eager_ops_on_gpu1", "mixing_devices_errors"]
    t = time.perf_counter()
    step_env = dict(env, **CPU_ENV) if step in CPU_STEPS else env
    if not step.startswith(("info", "multi_gpu")):  # timings and checks on one card, as
        step_env = dict(step_env, CUDA_VISIBLE_DEVICES="0")  # users with one GPU have
    try:
        r = subprocess.run(cmd, cwd=ROOT, env=step_env, capture_output=True, text=True,
                           timeout=limit)
        text, rc = r.stdout + "\n--- stderr ---\n" + r.stderr[-6000:], r.returncode
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        text, rc = f"{out}\nTIMEOUT after {limit} s", "timeout"
    (out_dir / f"{step}.txt").write_text(text)
    return (f"## {step} (rc={rc}, {time.perf_counter() - t:.0f} s)\n"
            f"{_summary(step, text.split('--- stderr ---')[0])}")


def main(names: list[str]) -> int:
    """Each argument is a step, or steps joined by '+' that run at the same time (checks
    that compile a lot; never timings)."""
    from concurrent.futures import ThreadPoolExecutor

    out_dir = Path(os.environ.get("OUT", "/tmp/device_session"))
    out_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT), XLA_PYTHON_CLIENT_PREALLOCATE="false")
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    for group in names or list(STEPS):
        steps = group.split("+")
        with ThreadPoolExecutor(len(steps)) as pool:
            for report in pool.map(lambda s: _run_step(s, env, out_dir), steps):
                print(report, flush=True)
    return 0


def _parse(argv: list[str] | None = None) -> list[str]:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("steps", nargs="*", metavar="step",
                        help="STEP, STEP=ARG,ARG, or STEP+STEP (run at the same time)")
    names = parser.parse_args(argv).steps
    unknown = [s for g in names for s in (p.partition("=")[0] for p in g.split("+"))
               if s not in STEPS]
    if unknown:
        parser.error(f"unknown steps {unknown}; known: {', '.join(STEPS)}")
    return names


if __name__ == "__main__":
    sys.exit(main(_parse()))
