"""Records jax.nn outputs (activations, attention, orthogonal initializers) into
nn_jax_reference.json, read by tests/test_nn.py. Run once with jax installed:

    /path/to/python-with-jax tests/data/make_nn_reference.py

Recorded with jax 0.10.2 on CPU, jax_enable_x64=False unless a case says otherwise.
"""
import json
import pathlib

import jax
import numpy as np
from nn_calls import attention_cases

OUT = pathlib.Path(__file__).with_name("nn_jax_reference.json")


def _entry(x) -> dict:
    x = np.asarray(x)
    return {"dtype": str(x.dtype), "shape": list(x.shape), "values": x.ravel().tolist()}


def _inputs() -> dict:
    rng = np.random.default_rng(3)
    return {"x": np.linspace(-3, 3, 25, dtype=np.float32),
            "pos": np.geomspace(1e-4, 30, 25).astype(np.float32),
            "m": rng.standard_normal((3, 4)).astype(np.float32)}


def record_activations() -> dict:
    nn = jax.nn
    inp = _inputs()
    x, pos, m = inp["x"], inp["pos"], inp["m"]
    where = np.array([[True, False, True, True]] * 3)
    out = {name: _entry(v) for name, v in inp.items()}
    calls = {
        "identity": lambda: nn.identity(x), "tanh": lambda: nn.tanh(x),
        "squareplus": lambda: nn.squareplus(x), "squareplus_b": lambda: nn.squareplus(x, 0.5),
        "sparse_plus": lambda: nn.sparse_plus(x), "sparse_sigmoid": lambda: nn.sparse_sigmoid(x),
        "mish": lambda: nn.mish(x), "glu": lambda: nn.glu(m), "glu_0": lambda: nn.glu(m.T, 0),
        "log1mexp": lambda: nn.log1mexp(pos), "logmeanexp": lambda: nn.logmeanexp(m),
        "logmeanexp_1": lambda: nn.logmeanexp(m, axis=1, keepdims=True),
        "logmeanexp_where": lambda: nn.logmeanexp(m, axis=1, where=where),
    }
    for name, fn in calls.items():
        out[name] = _entry(fn())
    grads = {"mish": (nn.mish, x), "squareplus": (nn.squareplus, x),
             "sparse_plus": (nn.sparse_plus, x), "sparse_sigmoid": (nn.sparse_sigmoid, x),
             "log1mexp": (nn.log1mexp, pos), "glu": (nn.glu, m)}
    for name, (fn, arg) in grads.items():
        out[f"grad_{name}"] = _entry(jax.grad(lambda a, fn=fn: fn(a).sum())(arg))
    return out


def _attention_args() -> dict:
    rng = np.random.default_rng(7)

    def arr(*shape, dtype=np.float32):
        return rng.standard_normal(shape).astype(dtype)

    return {"q": arr(2, 5, 4, 8), "k": arr(2, 6, 4, 8), "v": arr(2, 6, 4, 8),
            "k2": arr(2, 6, 2, 8), "v2": arr(2, 6, 2, 8), "k1": arr(2, 6, 1, 8),
            "v1": arr(2, 6, 1, 8), "bias": arr(2, 4, 5, 6), "bias1": arr(1, 1, 5, 6),
            "mask": rng.random((2, 1, 5, 6)) < 0.7, "q3": arr(5, 4, 8), "k3": arr(7, 2, 8),
            "v3": arr(7, 2, 8), "qlen": np.array([3, 5], np.int32),
            "kvlen": np.array([2, 6], np.int32)}


def record_attention() -> dict:
    a = _attention_args()
    out = {"args": {n: _entry(v) for n, v in a.items()}}
    for name, fn in attention_cases(jax.nn, a).items():
        res = fn()
        out[name] = [_entry(r) for r in res] if isinstance(res, tuple) else _entry(res)
    grad = jax.grad(lambda q: (jax.nn.dot_product_attention(q, a["k2"], a["v2"], bias=a["bias1"],
                                                            is_causal=True) ** 2).sum())
    out["grad_q"] = _entry(grad(a["q"]))
    jax.config.update("jax_enable_x64", True)
    q64, k64, v64 = (a[n].astype(np.float64) for n in ("q", "k", "v"))
    out["float64"] = _entry(jax.nn.dot_product_attention(q64, k64, v64, mask=a["mask"]))
    jax.config.update("jax_enable_x64", False)
    return out


def record_initializers() -> dict:
    init = jax.nn.initializers
    k = jax.random.PRNGKey(4)
    cases = {
        "orthogonal_3x5": init.orthogonal()(k, (3, 5)),
        "orthogonal_6x2": init.orthogonal(scale=2.0)(k, (6, 2)),
        "orthogonal_axis0": init.orthogonal(column_axis=0)(k, (4, 3)),
        "orthogonal_3d": init.orthogonal()(k, (2, 3, 4)),
        "delta_orthogonal": init.delta_orthogonal()(k, (3, 3, 2, 4)),
        "delta_orthogonal_1d": init.delta_orthogonal(scale=0.5)(k, (3, 4, 4)),
        "delta_orthogonal_3d": init.delta_orthogonal()(k, (3, 3, 3, 2, 2)),
    }
    return {name: _entry(v) for name, v in cases.items()}


def main() -> None:
    jax.config.update("jax_enable_x64", False)
    data = {"jax_version": jax.__version__, "activations": record_activations(),
            "attention": record_attention(), "initializers": record_initializers()}
    OUT.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
