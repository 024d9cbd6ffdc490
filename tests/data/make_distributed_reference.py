"""Records what JAX's jax.distributed.initialize raises for bad calls (run once, with jax
installed, from the repository root):

    python tests/data/make_distributed_reference.py

Each group of snippets runs in one fresh process (a group shares that process's state: the
argument errors leave none; `twice` and `after_devices` need their own), with the launcher and
coordinator variables cleared. The result of each snippet is "ExceptionClass: message", or the
repr of its value. tests/test_distributed.py runs the same snippets on numbax."""
import json
import os
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent

GROUPS = {
    "arguments": {
        "no_arguments": "jax.distributed.initialize()",
        "no_num_processes": "jax.distributed.initialize('localhost:1234')",
        "no_process_id": "jax.distributed.initialize('localhost:1234', num_processes=2)",
        "process_id_str": "jax.distributed.initialize('localhost:1234', 2, '0')",
        "num_processes_float": "jax.distributed.initialize('localhost:1234', 2.0, 0)",
        "process_id_too_big": "jax.distributed.initialize('localhost:1234', 2, 2)",
        "process_id_negative": "jax.distributed.initialize('localhost:1234', 2, -1)",
        "deactivated": "jax.distributed.initialize(cluster_detection_method='deactivate')",
        "not_initialized": "jax.distributed.is_initialized()",
        "shutdown_when_not_initialized": "jax.distributed.shutdown()",
    },
    "twice": {
        "first": "jax.distributed.initialize('localhost:12977', num_processes=1, process_id=0)",
        "initialized": "jax.distributed.is_initialized()",
        "second": "jax.distributed.initialize('localhost:12977', num_processes=1, process_id=0)",
        "process_count": "jax.process_count()",
        "shutdown": "jax.distributed.shutdown()",
        "initialized_after_shutdown": "jax.distributed.is_initialized()",
    },
    "after_devices": {
        "devices": "len(jax.devices()) > 0",
        "initialize": "jax.distributed.initialize('localhost:12978', num_processes=1, "
                      "process_id=0)",
    },
}

LAUNCHER_PREFIXES = ("OMPI_", "PMIX_", "PMI_", "SLURM_", "JAX_COORDINATOR", "JAX_LOCAL_DEVICE",
                     "HYDRA_", "MPI_LOCALRANKID")

RUNNER = r"""
import json, sys
import {module} as jax
out = {{}}
for name, code in json.loads(sys.argv[1]).items():
    try:
        out[name] = repr(eval(code))
    except Exception as e:
        out[name] = f"{{type(e).__name__}}: {{e}}"
print("RESULT " + json.dumps(out))
"""


def run(module: str, group: dict, env: dict | None = None) -> dict:
    """The snippets of one group run in a fresh process importing `module` as jax."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(LAUNCHER_PREFIXES)}
    clean.update(env or {})
    proc = subprocess.run([sys.executable, "-c", RUNNER.format(module=module),
                           json.dumps(group)], env=clean, capture_output=True, text=True,
                          timeout=120)
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if not line:
        raise RuntimeError(f"the snippets did not run:\n{proc.stdout}\n{proc.stderr}")
    return json.loads(line[-1][len("RESULT "):])


def main() -> None:
    results = {name: run("jax", group, {"JAX_PLATFORMS": "cpu"})
               for name, group in GROUPS.items()}
    path = HERE / "distributed_jax_reference.json"
    path.write_text(json.dumps({"groups": GROUPS, "results": results}, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
