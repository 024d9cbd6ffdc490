"""Records jax's erf_inv and jax.random sampler outputs into samplers_jax_reference.json.

    /path/to/python-with-jax tests/data/make_samplers_reference.py

Run once with jax installed (recorded with jax 0.10.2, CPU, jax_enable_x64=False, threefry
partitionable, the defaults). The numbax tests read the JSON only. float32 values are stored as
their uint32 bit patterns so that the tests can compare bits.
"""
import json
import pathlib

import jax
import numpy as np
from jax import lax

OUT = pathlib.Path(__file__).with_name("samplers_jax_reference.json")


def _bits(x) -> list:
    x = np.asarray(x)
    if x.dtype == np.float32:
        return x.view(np.uint32).ravel().tolist()
    if x.dtype == np.float16:
        return x.view(np.uint16).ravel().tolist()
    return x.ravel().tolist()


def _entry(x) -> dict:
    x = np.asarray(x)
    return {"dtype": str(x.dtype), "shape": list(x.shape), "bits": _bits(x)}


def erf_inv_inputs() -> np.ndarray:
    """float32 inputs covering both polynomial branches, both log1p branches and the edges."""
    rng = np.random.default_rng(17)
    u = rng.uniform(-1, 1, 600)
    near_one = 1 - np.logspace(-1, -7.5, 150)
    near_zero = np.logspace(-30, -1, 100)
    x = np.concatenate([u, near_one, -near_one, near_zero, -near_zero])
    special = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 0.6435, 0.6437, 0.99330, 0.99331,
               np.nextafter(np.float32(1), np.float32(0)), 2e-38, 1.5, -3.0]
    return np.concatenate([x, special]).astype(np.float32)


def record_erf_inv() -> dict:
    x = erf_inv_inputs()
    h = np.linspace(-1, 1, 257).astype(np.float16)
    return {"x": _entry(x), "erf_inv": _entry(jax.jit(lax.erf_inv)(x)),
            "x_f16": _entry(h), "erf_inv_f16": _entry(jax.jit(lax.erf_inv)(h))}


def record_normal() -> dict:
    r = jax.random
    out = {}
    for seed in (0, 1, 7, 42, 2 ** 31 - 1):
        out[f"normal_{seed}"] = _entry(r.normal(r.PRNGKey(seed), (64,)))
    out["normal_f16"] = _entry(r.normal(r.PRNGKey(3), (32,), np.float16))
    out["truncated_normal"] = _entry(r.truncated_normal(r.PRNGKey(4), -0.5, 2.0, (16,)))
    return out


def main() -> None:
    jax.config.update("jax_enable_x64", False)
    data = {"jax_version": jax.__version__, "erf_inv": record_erf_inv(),
            "normal": record_normal()}
    OUT.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
