"""Records JAX's answers for tests/test_leftovers_s34b.py into leftovers_s34b_jax_reference.json
(run once, with jax installed, on CPU):

    JAX_PLATFORMS=cpu python tests/data/make_leftovers_s34b_reference.py

The cases live in leftovers_s34b_cases.py, shared with the test; every group is recorded with
jax_enable_x64 False (JAX's default).
"""
import json
import pathlib
import sys

import jax
import jax.ad_checkpoint  # noqa: F401  (the cases read these submodules as attributes)
import jax.experimental.checkify  # noqa: F401

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import leftovers_s34b_cases as cases  # noqa: E402

OUT = pathlib.Path(__file__).with_name("leftovers_s34b_jax_reference.json")


def main() -> None:
    jax.config.update("jax_enable_x64", False)
    data = {"jax_version": jax.__version__}
    for group in cases.GROUPS:
        data[f"{group}/x32"] = cases.record(jax, group)
    OUT.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
