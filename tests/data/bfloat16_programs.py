"""bfloat16 programs shared by make_api_reference.py (run with JAX) and tests/test_bfloat16.py
(numbax): each takes a namespace holding `jax` and `jnp` and returns plain Python data (dtype
names, float values, and the raw bits of random draws)."""
import numpy as np

_RNG = np.random.default_rng(7)
X = _RNG.normal(size=(8, 16)).astype(np.float32) * 3  # rounded to bfloat16 by each program
W1 = _RNG.normal(size=(16, 32)).astype(np.float32) / 4
W2 = _RNG.normal(size=(32, 4)).astype(np.float32) / 6
LABELS = _RNG.integers(0, 4, 8)


def _values(a):
    return np.asarray(a).astype(np.float32).tolist()


def _bits(a):
    return np.asarray(a).view(np.uint16).tolist()


def random_draws(m):
    jax, jnp = m.jax, m.jnp
    key = jax.random.key(0)
    return {"uniform": _bits(jax.random.uniform(key, (64,), jnp.bfloat16)),
            "normal": _bits(jax.random.normal(key, (64,), jnp.bfloat16)),
            "uniform_range": _bits(jax.random.uniform(jax.random.key(3), (32,), jnp.bfloat16,
                                                      -2.0, 5.0))}


def promotion(m):
    jnp = m.jnp
    x = jnp.ones(2, jnp.bfloat16)
    others = {"int8": jnp.ones(2, jnp.int8), "uint8": jnp.ones(2, jnp.uint8),
              "bool": jnp.ones(2, bool), "float16": jnp.ones(2, jnp.float16),
              "float32": jnp.ones(2, jnp.float32), "complex64": jnp.ones(2, jnp.complex64),
              "python_float": 2.5, "python_int": 3}
    return {name: str((x + y).dtype) for name, y in others.items()}


def elementwise(m):
    jax, jnp = m.jax, m.jnp
    x = jnp.asarray(X, jnp.bfloat16)
    fns = {"exp": lambda v: jnp.exp(v / 4), "tanh": jnp.tanh, "affine": lambda v: v * v + 1,
           "div": lambda v: v / 3, "sqrt": lambda v: jnp.sqrt(jnp.abs(v)),
           "gelu": lambda v: jax.nn.gelu(v), "softmax": lambda v: jax.nn.softmax(v, axis=1),
           "logsumexp": lambda v: jax.nn.logsumexp(v, axis=1)}
    out = {}
    for name, f in fns.items():
        eager, jitted = f(x), jax.jit(f)(x)
        out[name] = {"dtype": str(jitted.dtype), "eager": _values(eager),
                     "jit": _values(jitted)}
    return out


def reductions(m):
    jax, jnp = m.jax, m.jnp
    x = jnp.asarray(X, jnp.bfloat16)
    fns = {"sum": lambda v: jnp.sum(v, axis=1), "mean": lambda v: jnp.mean(v, axis=0),
           "max": jnp.max, "var": lambda v: jnp.var(v, axis=1)}
    return {name: {"dtype": str(jax.jit(f)(x).dtype), "value": _values(jax.jit(f)(x))}
            for name, f in fns.items()}


def products(m):
    jax, jnp = m.jax, m.jnp
    x, w = jnp.asarray(X, jnp.bfloat16), jnp.asarray(W1, jnp.bfloat16)
    plain = jax.jit(lambda a, b: a @ b)(x, w)
    wide = jax.jit(lambda a, b: jnp.dot(a, b, preferred_element_type=jnp.float32))(x, w)
    return {"plain_dtype": str(plain.dtype), "plain": _values(plain),
            "f32_dtype": str(wide.dtype), "f32": _values(wide)}


def mixed_precision_step(m):
    """An SGD step of a two-layer MLP with float32 parameters computed in bfloat16. XLA drops
    the bfloat16 rounding of a product it converts straight to float32; numbax rounds every
    bfloat16 result, as eager execution does, so the two differ in last bits: one step is
    compared, not a chaotic many-step trajectory."""
    jax, jnp = m.jax, m.jnp

    def loss(params, x, labels):
        w1, w2 = params
        h = jax.nn.relu(x.astype(jnp.bfloat16) @ w1.astype(jnp.bfloat16))
        logits = (h @ w2.astype(jnp.bfloat16)).astype(jnp.float32)
        logp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))

    @jax.jit
    def step(params, x, labels):
        value, grads = jax.value_and_grad(loss)(params, x, labels)
        return value, [p - 0.5 * g for p, g in zip(params, grads)], grads

    value, params, grads = step([jnp.asarray(W1), jnp.asarray(W2)], jnp.asarray(X),
                                jnp.asarray(LABELS))
    return {"loss": float(value), "grad_dtypes": [str(g.dtype) for g in grads],
            "grad_w2": _values(grads[1]), "w1": _values(params[0])}


def grad_and_loops(m):
    jax, jnp, lax = m.jax, m.jnp, m.jax.lax
    x = jnp.asarray(X[0], jnp.bfloat16)
    g = jax.grad(lambda v: jnp.sum(jnp.sin(v) * v))(x)

    def body(c, row):
        c = c * jnp.bfloat16(0.75) + jnp.tanh(row)
        return c, c.sum()

    carry, sums = jax.jit(lambda v: lax.scan(body, v[0], v))(jnp.asarray(X, jnp.bfloat16))
    return {"grad_dtype": str(g.dtype), "grad": _values(g), "carry": _values(carry),
            "sums": _values(sums), "sums_dtype": str(sums.dtype)}


PROGRAMS = {"random_draws": random_draws, "promotion": promotion, "elementwise": elementwise,
            "reductions": reductions, "products": products,
            "mixed_precision_step": mixed_precision_step, "grad_and_loops": grad_and_loops}
