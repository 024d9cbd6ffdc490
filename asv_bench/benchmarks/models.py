"""Models shared by the training benchmarks, written once against a numpy-like module `m`."""
import numpy as np


def init_mlp(sizes, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return [
        ((rng.normal(size=(a, b)) / np.sqrt(a)).astype(dtype), np.zeros(b, dtype))
        for a, b in zip(sizes[:-1], sizes[1:])
    ]


def mlp_logits(m, params, x):
    for w, b in params[:-1]:
        x = m.tanh(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def cross_entropy(m, logits, onehot):
    """Mean softmax cross-entropy of `logits` against one-hot labels (last axis: classes)."""
    shifted = logits - m.max(logits, axis=-1, keepdims=True)
    log_probs = shifted - m.log(m.sum(m.exp(shifted), axis=-1, keepdims=True))
    return -m.mean(m.sum(onehot * log_probs, axis=-1))


def classification_data(n, features, classes, dtype, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, features)).astype(dtype)
    onehot = np.eye(classes, dtype=dtype)[rng.integers(0, classes, size=n)]
    return x, onehot


def elementwise_chain(m, x, ops):
    """`ops` elementwise steps on x, alternating `sin(x) * 0.999 + 0.001` and `tanh(x) + 1e-4`
    (issue 20's compile-time program: one fused chain, no reduction)."""
    for i in range(ops):
        x = m.sin(x) * 0.999 + 0.001 if i % 2 == 0 else m.tanh(x) + 1e-4
    return x


def mixed_chain(m, x, ops):
    """`ops` steps alternating `x * 0.999 + mean(x) * 0.001` and `tanh(x) + 1e-4`: a full
    reduction every other step (issue 20's program that ran out of memory at 24 GB)."""
    for i in range(ops):
        x = x * 0.999 + m.mean(x) * 0.001 if i % 2 == 0 else m.tanh(x) + 1e-4
    return x


def shape_sweep_fn(m, nn):
    """The function issue 20 calls with 300 shapes: a matrix product, tanh, softmax, a row sum."""
    def f(x, w):
        h = m.tanh(x @ w)
        return m.sum(nn.softmax(h * 2.0, axis=-1) ** 2, axis=-1)

    return f
