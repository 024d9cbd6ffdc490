"""Records JAX's jet outputs for tests/data/jet_programs.py into jet_jax_reference.json (run
once, with jax; x64 on, as numbax's defaults):

    python tests/data/make_jet_reference.py
"""
import json
import pathlib
import sys
import types

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax, nn
from jax.experimental.jet import jet

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import jet_programs  # noqa: E402

OUT = pathlib.Path(__file__).with_name("jet_jax_reference.json")


def listed(tree):
    return jax.tree.map(lambda x: np.asarray(x).tolist(), tree)


def main():
    jax.config.update("jax_enable_x64", True)
    m = types.SimpleNamespace(jax=jax, jnp=jnp, lax=lax, nn=nn)
    out = {"jax_version": jax.__version__}
    for name, program in jet_programs.PROGRAMS.items():
        fun, primals, series = program(m)
        primals_out, series_out = jet(fun, primals, series)
        entry = {"primals_out": listed(primals_out), "series_out": listed(series_out)}
        if name == "order5":
            p2, s2 = jet(fun, primals, series, factorial_scaled=False)
            entry["unscaled_series_out"] = listed(s2)
        out[name] = entry
    for name, program in jet_programs.NUMBAX_ONLY.items():
        fun, primals, series = program(m)
        try:
            jet(fun, primals, series)
            out[name] = "ok"
        except Exception as err:  # noqa: BLE001  (recorded: JAX has no rule)
            out[name] = f"{type(err).__name__}: {str(err).splitlines()[0][:80]}"
    OUT.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
