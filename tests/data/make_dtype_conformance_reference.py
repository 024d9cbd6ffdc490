"""Records JAX's outcome of every case of tests/dtype_conformance.py (each jax.numpy function
on each of 11 dtypes), with x64 on and off, into dtype_conformance_jax_reference.json (run
once, with jax):

    JAX_PLATFORMS=cpu /work/jaxenv/bin/python tests/data/make_dtype_conformance_reference.py
"""
import json
import pathlib
import sys

import jax
import jax.numpy as jnp

sys.path.insert(0, str(pathlib.Path(__file__).parents[2]))
from tests.dtype_conformance import probe  # noqa: E402

OUT = pathlib.Path(__file__).with_name("dtype_conformance_jax_reference.json")

if __name__ == "__main__":
    tables = {"jax_version": jax.__version__,
              "x64": probe(jax, jnp, True), "x32": probe(jax, jnp, False)}
    OUT.write_text(json.dumps(tables, separators=(",", ":")))
    print(f"{OUT.name}: {sum(len(t) for k, t in tables.items() if k != 'jax_version')} cases")
