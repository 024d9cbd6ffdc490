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
