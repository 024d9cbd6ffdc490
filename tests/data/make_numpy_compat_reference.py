"""Records JAX's outputs for tests/data/numpy_compat_cases.py into
numpy_compat_jax_reference.json (run once, with jax installed):

    python tests/data/make_numpy_compat_reference.py

The numbax tests read the JSON only, so they run without jax. Recorded with x64 enabled, as
numbax's defaults are 64-bit.
"""
import json
import pathlib
import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax import ops

jax.config.update("jax_enable_x64", True)
sys.path.insert(0, str(pathlib.Path(__file__).parent))
from numpy_compat_cases import CASES  # noqa: E402

OUT = pathlib.Path(__file__).with_name("numpy_compat_jax_reference.json")


def _encode(value):
    leaves = value if isinstance(value, (tuple, list)) else (value,)
    out = []
    for leaf in leaves:
        a = np.asarray(leaf)
        data = a.tolist() if a.dtype.kind != "c" else [a.real.tolist(), a.imag.tolist()]
        out.append({"dtype": str(a.dtype), "shape": list(a.shape), "data": _nan_safe(data)})
    return out


def _nan_safe(data):
    if isinstance(data, list):
        return [_nan_safe(d) for d in data]
    if isinstance(data, float) and not np.isfinite(data):
        return "nan" if np.isnan(data) else ("inf" if data > 0 else "-inf")
    return data


def main() -> None:
    record = {"jax_version": jax.__version__,
              "cases": {name: _encode(fn(jnp, ops)) for name, fn in CASES.items()}}
    OUT.write_text(json.dumps(record, indent=None, separators=(",", ":")) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes, {len(CASES)} cases)")


if __name__ == "__main__":
    main()
