"""Records JAX's answers for tests/test_leftovers_s34.py into leftovers_s34_jax_reference.json
(run once, with jax installed, on CPU):

    JAX_PLATFORMS=cpu python tests/data/make_leftovers_s34_reference.py

The cases live in leftovers_s34_cases.py, shared with the test. Groups in BOTH_X64 are
recorded with jax_enable_x64 False ("x32") and True ("x64"); the others with JAX's default
(False) only.
"""
import json
import pathlib
import sys

import jax

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import leftovers_s34_cases as cases  # noqa: E402

OUT = pathlib.Path(__file__).with_name("leftovers_s34_jax_reference.json")


def main() -> None:
    data = {"jax_version": jax.__version__}
    for group in cases.GROUPS:
        modes = (("x32", False), ("x64", True)) if group in cases.BOTH_X64 else (("x32", False),)
        for mode, flag in modes:
            jax.config.update("jax_enable_x64", flag)
            data[f"{group}/{mode}"] = cases.record(jax, group)
    jax.config.update("jax_enable_x64", False)
    OUT.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
