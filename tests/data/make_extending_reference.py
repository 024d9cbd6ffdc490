"""Records JAX's outputs of the extension tutorials (tests/compat/extending_tutorials.py) into
extending_jax_reference.json (run once, with jax installed, from the repository root):

    python tests/data/make_extending_reference.py

Recorded with jax_enable_x64=True, so Python floats are float64 as in numbax's defaults. The
numbax tests read the JSON only, so they run without jax."""
import json
import pathlib
import sys
from types import SimpleNamespace

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
from jax import core, lax  # noqa: E402
from jax.extend import core as ecore  # noqa: E402
from jax.interpreters import ad, batching  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))
from tests.compat.extending_tutorials import TUTORIALS  # noqa: E402

OUT = pathlib.Path(__file__).with_name("extending_jax_reference.json")


def main() -> None:
    modules = SimpleNamespace(jax=jax, jnp=jnp, lax=lax, core=core, ecore=ecore, ad=ad,
                              batching=batching, has_lowering_fallback=False)
    record = {"jax_version": jax.__version__}
    record.update({name: fn(modules) for name, fn in TUTORIALS.items()})
    OUT.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
