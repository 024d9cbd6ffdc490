"""Records JAX's outcome of every case of tests/dtype_conformance.py (each function of
jax.numpy, jax.nn, jax.scipy.special and jax.lax on each of 11 dtypes), with x64 on and off, into
dtype_conformance_jax_reference.json (run once, with jax):

    JAX_PLATFORMS=cpu python tests/data/make_dtype_conformance_reference.py
"""
import importlib
import json
import pathlib
import sys

import jax

sys.path.insert(0, str(pathlib.Path(__file__).parents[2]))
from tests.dtype_conformance import MODULES, probe  # noqa: E402

OUT = pathlib.Path(__file__).with_name("dtype_conformance_jax_reference.json")

if __name__ == "__main__":
    tables = {"jax_version": jax.__version__}
    for name in MODULES:
        module = importlib.import_module(f"jax.{name}")
        tables[name] = {"x64": probe(jax, module, True), "x32": probe(jax, module, False)}
    OUT.write_text(json.dumps(tables, separators=(",", ":")))
    print(f"{OUT.name}: {sum(len(t) for m in MODULES for t in tables[m].values())} cases")
