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
from sampler_calls import sampler_calls

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


def record_samplers() -> dict:
    """One small draw per sampler (x32), keys PRNGKey(10 + i)."""
    r = jax.random
    calls = sampler_calls(r)
    return {name: _entry(fn(r.PRNGKey(10 + i))) for i, (name, fn) in enumerate(calls.items())}


def record_gamma_grads() -> dict:
    """d(draw)/da of gamma and loggamma draws, and lax.random_gamma_grad on a grid."""
    r = jax.random
    out = {}
    a = np.float32([0.2, 0.7, 1.0, 3.0, 12.0])
    for name, fn in (("gamma", r.gamma), ("loggamma", r.loggamma)):
        g = jax.vmap(jax.grad(lambda ai, k, fn=fn: fn(k, ai)), in_axes=(0, 0))(
            a, r.split(r.PRNGKey(5), len(a)))
        out[f"{name}_a"] = _entry(a)
        out[f"{name}_grad"] = _entry(g)
    aa, xx = np.meshgrid(np.float32([0.1, 0.5, 1.0, 2.0, 7.5, 30.0]),
                         np.float32([1e-3, 0.1, 0.9, 1.5, 4.0, 20.0, 60.0]))
    out["grid_a"], out["grid_x"] = _entry(aa), _entry(xx)
    out["grid_grad"] = _entry(lax.random_gamma_grad(aa, xx))
    out["beta_grad"] = _entry(jax.grad(lambda b: r.beta(r.PRNGKey(2), 2.0, b).sum())(
        np.float32([0.5, 3.0])))
    return out


def record_keys() -> dict:
    """PRNGKey of edge seeds (x32 and x64), fold_in of edge data, the printed forms of keys."""
    r = jax.random
    out = {}
    seeds = {"int64_max": 2 ** 63 - 1, "int64_min": -2 ** 63, "true": True,
             "uint64_big": np.uint64(2 ** 63 + 5), "int8_m1": np.int8(-1)}
    for x64 in (False, True):
        jax.config.update("jax_enable_x64", x64)
        out[f"prngkey_x64_{x64}"] = {n: _list(r.PRNGKey(s)) for n, s in seeds.items()}
    jax.config.update("jax_enable_x64", False)
    k = r.PRNGKey(3)
    data = {"2**31": 2 ** 31, "np_int64_2**40": np.int64(2 ** 40), "float_1": 1.0, "true": True,
            "np_uint32_max": np.uint32(2 ** 32 - 1)}
    out["fold_in"] = {n: _list(r.fold_in(k, d)) for n, d in data.items()}
    out["repr_key"] = repr(r.key(0))
    out["repr_split"] = repr(r.split(r.key(0), 2))
    out["key_impl"] = str(r.key_impl(r.key(0)))
    out["key_dtype"] = repr(r.key_dtype())
    return out


def _list(x) -> list:
    return np.asarray(x).tolist()


def main() -> None:
    jax.config.update("jax_enable_x64", False)
    data = {"jax_version": jax.__version__, "erf_inv": record_erf_inv(),
            "normal": record_normal(), "samplers": record_samplers(),
            "gamma_grads": record_gamma_grads(), "keys": record_keys()}
    OUT.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
