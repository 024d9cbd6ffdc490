"""Records JAX's values and gradients of tests/data/ode_programs.py into
ode_jax_reference.json (run once, with jax installed, from the repository root):

    python tests/data/make_ode_reference.py

Recorded with jax_enable_x64=True, so Python floats are float64 as in numbax's defaults."""
import json
import pathlib
import sys
from types import SimpleNamespace

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
from jax.experimental.ode import odeint  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))
from tests.data.ode_programs import PROGRAMS  # noqa: E402

OUT = pathlib.Path(__file__).with_name("ode_jax_reference.json")


def main() -> None:
    modules = SimpleNamespace(jax=jax, jnp=jnp, odeint=odeint)
    record = {"jax_version": jax.__version__}
    record.update({name: fn(modules) for name, fn in PROGRAMS.items()})
    OUT.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
