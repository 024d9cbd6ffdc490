"""Records JAX 0.10.2's results of tests/sharding_cases.py (meshes, shardings, the
visualisations, explicit-mode types and errors, the parallel-programming tutorial, jit with
shardings, shard_map with every collective under jit and grad) into
sharding_jax_reference.json. Run once, with jax and rich installed:

    XLA_FLAGS=--xla_force_host_platform_device_count=8 JAX_PLATFORMS=cpu \
        python tests/data/make_sharding_reference.py
"""
import json
import pathlib
import sys

import jax
import jax.experimental.shard_map  # noqa: F401  (jx.experimental.shard_map in the cases)

sys.path.insert(0, str(pathlib.Path(__file__).parents[1]))
import sharding_cases  # noqa: E402

OUT = pathlib.Path(__file__).with_name("sharding_jax_reference.json")


def main() -> None:
    assert jax.device_count() == 8, "run with XLA_FLAGS=--xla_force_host_platform_device_count=8"
    results = {}
    for name, fn in sharding_cases.CASES.items():
        results[name] = fn(jax)
        print("recorded", name)
    OUT.write_text(json.dumps({"jax_version": jax.__version__, "results": results},
                              indent=0, sort_keys=True) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
