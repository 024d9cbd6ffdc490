"""Records jax.random outputs into random_jax_reference.json (run once, with jax installed).

    python tests/data/make_random_reference.py

The numbax tests read the JSON only, so they run without jax. Recorded with jax 0.10 defaults
(threefry2x32, jax_threefry_partitionable=True).
"""
import json
import pathlib

import jax
import numpy as np

OUT = pathlib.Path(__file__).with_name("random_jax_reference.json")


def _list(x):
    return np.asarray(x).tolist()


def record_x32() -> dict:
    r = jax.random
    out: dict = {"jax_version": jax.__version__,
                 "partitionable": bool(jax.config.jax_threefry_partitionable)}
    seeds = [0, 1, 42, -1, 2 ** 31 - 1, 2 ** 32 + 5]
    out["PRNGKey"] = {str(s): _list(r.PRNGKey(s)) for s in seeds}
    out["split3"] = {str(s): _list(r.split(r.PRNGKey(s), 3)) for s in (0, 1, 42)}
    out["split_2x2"] = _list(r.split(r.PRNGKey(7), (2, 2)))
    out["fold_in"] = {str(d): _list(r.fold_in(r.PRNGKey(3), d)) for d in (0, 7, 2 ** 31)}
    k = r.PRNGKey(0)
    out["bits_u32_5"] = _list(r.bits(k, (5,), "uint32"))
    out["bits_u32_2x3"] = _list(r.bits(r.PRNGKey(9), (2, 3), "uint32"))
    out["bits_u32_scalar"] = _list(r.bits(r.PRNGKey(9), (), "uint32"))
    out["bits_u8_4"] = _list(r.bits(k, (4,), "uint8"))
    out["bits_u16_4"] = _list(r.bits(k, (4,), "uint16"))
    out["uniform_5"] = _list(r.uniform(k, (5,)))
    out["uniform_range"] = _list(r.uniform(r.PRNGKey(1), (2, 3), minval=np.float32([-1, 0, 2]),
                                           maxval=4.0))
    out["normal_3"] = _list(r.normal(k, (3,)))
    out["normal_2x4"] = _list(r.normal(r.PRNGKey(5), (2, 4)))
    out["randint_0_10"] = _list(r.randint(k, (6,), 0, 10))
    out["randint_m5_5"] = _list(r.randint(r.PRNGKey(2), (2, 3), -5, 5))
    out["randint_int8"] = _list(r.randint(r.PRNGKey(2), (5,), -100, 100, "int8"))
    out["bernoulli"] = _list(r.bernoulli(k, 0.3, (8,)))
    out["permutation_10"] = _list(r.permutation(k, 10))
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    out["permutation_rows"] = _list(r.permutation(r.PRNGKey(4), x))
    out["permutation_indep"] = _list(r.permutation(r.PRNGKey(4), x, axis=1, independent=True))
    logits = np.log(np.float32([0.2, 0.3, 0.5]))
    out["categorical"] = _list(r.categorical(k, logits, shape=(8,)))
    out["categorical_2d"] = _list(r.categorical(r.PRNGKey(3), np.zeros((2, 5), np.float32),
                                                axis=-1))
    out["gumbel"] = _list(r.gumbel(k, (4,)))
    out["exponential"] = _list(r.exponential(k, (4,)))
    out["choice_noreplace"] = _list(r.choice(k, 10, (3,), replace=False))
    out["choice_replace"] = _list(r.choice(r.PRNGKey(8), np.float32([5, 6, 7, 8]), (5,)))
    out["choice_p"] = _list(r.choice(k, 10, (3,), p=np.ones(10, np.float32) / 10))
    out["truncated_normal"] = _list(r.truncated_normal(k, -1.0, 1.0, (3,)))
    out["gamma"] = _list(r.gamma(k, np.float32([0.5, 1.0, 3.0])))
    out["beta"] = _list(r.beta(k, 2.0, 3.0, (3,)))
    out["dirichlet"] = _list(r.dirichlet(k, np.float32([1.0, 2.0, 3.0])))
    cov = np.float32([[2.0, 1.0], [1.0, 2.0]])
    out["mvn"] = _list(r.multivariate_normal(k, np.float32([1.0, -1.0]), cov, (2,)))
    return out


def record_x64() -> dict:
    r = jax.random
    out: dict = {}
    out["PRNGKey"] = {str(s): _list(r.PRNGKey(s)) for s in (0, -1, 2 ** 32 + 5, -2 ** 40)}
    k = r.PRNGKey(0)
    out["bits_u64_3"] = [str(v) for v in np.asarray(r.bits(k, (3,), "uint64")).tolist()]
    out["uniform_f64_4"] = _list(r.uniform(k, (4,), "float64"))
    out["normal_f64_4"] = _list(r.normal(k, (4,), "float64"))
    out["randint_i64"] = _list(r.randint(k, (4,), 0, 1000, "int64"))
    return out


def main() -> None:
    jax.config.update("jax_enable_x64", False)
    data = {"x32": record_x32()}
    jax.config.update("jax_enable_x64", True)
    data["x64"] = record_x64()
    OUT.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
