"""Records JAX's results of the lax cases in tests/lax/jax_cases.py into
lax_jax_reference.json (run once, with jax installed, from the repository root):

    python tests/data/make_lax_reference.py

Recorded with jax_enable_x64=True (numbax's defaults are numpy's 64-bit ones). A case that
raises records the exception's class name. The numbax tests read the JSON only."""
import json
import pathlib
import sys
from types import SimpleNamespace

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))
from tests.lax.jax_cases import cases  # noqa: E402

OUT = pathlib.Path(__file__).with_name("lax_jax_reference.json")


def encode(x):
    """JSON for a case's result: strings, lists, or {"dtype", "shape", "value"} for arrays."""
    if isinstance(x, str):
        return x
    if isinstance(x, (list, tuple)):
        return [encode(v) for v in x]
    a = np.asarray(x)
    value = a.tolist()
    if a.dtype.kind == "f":
        value = [float(v) if np.isfinite(v) else str(v) for v in a.ravel()]
    return {"dtype": a.dtype.name, "shape": list(a.shape), "value": value}


def main() -> None:
    modules = SimpleNamespace(jax=jax, jnp=jnp, lax=lax)
    record = {"jax_version": jax.__version__}
    for name, thunk in cases(modules).items():
        try:
            record[name] = encode(thunk())
        except Exception as err:  # noqa: BLE001 - the exception is the recorded result
            record[name] = {"raises": type(err).__name__}
    OUT.write_text(json.dumps(record, indent=0, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
