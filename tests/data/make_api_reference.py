"""Records JAX's outputs of the API programs (callbacks and jax.debug, checkpoint policies,
custom derivatives, checkify, odeint, bfloat16) into one JSON file per program module (run
once, with jax installed, from the repository root):

    python tests/data/make_api_reference.py [callback checkify ...]

Recorded with jax_enable_x64=True, so Python floats are float64 as in numbax's defaults. The
numbax tests read the JSON only, so they run without jax."""
import importlib
import json
import pathlib
import sys
from types import SimpleNamespace

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
from jax import ad_checkpoint, lax  # noqa: E402
from jax import custom_derivatives as cd  # noqa: E402
from jax.experimental import checkify, io_callback  # noqa: E402
from jax.experimental.ode import odeint  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

# output name -> programs module; every module reads what it needs from one namespace
TABLES = {
    "callback": "callback_programs",
    "checkpoint": "checkpoint_programs",
    "custom_derivatives": "custom_derivative_programs",
    "checkify": "checkify_programs",
    "ode": "ode_programs",
    "bfloat16": "bfloat16_programs",
}
MODULES = SimpleNamespace(jax=jax, jnp=jnp, lax=lax, io_callback=io_callback, cd=cd,
                          ad_checkpoint=ad_checkpoint, checkify=checkify, odeint=odeint)


def main(names) -> None:
    for name in names or TABLES:
        programs = importlib.import_module(f"tests.data.{TABLES[name]}").PROGRAMS
        record = {"jax_version": jax.__version__}
        record.update({key: fn(MODULES) for key, fn in programs.items()})
        out = pathlib.Path(__file__).with_name(f"{name}_jax_reference.json")
        out.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
