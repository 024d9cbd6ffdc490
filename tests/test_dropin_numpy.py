"""Plain-numpy code under numbax transforms: tracers dispatch numpy calls to numbax.numpy."""
import numpy as np
import pytest
from scipy.special import erf as scipy_erf

import numbax
from numbax.errors import NumbaxTypeError

RNG = np.random.default_rng(7)


# ---- ordinary numpy code, written without any knowledge of numbax ------------------------

def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def knn_distances(a, b):
    sq = np.sum(a ** 2, axis=1)[:, None] + np.sum(b ** 2, axis=1)[None, :] - 2 * a @ b.T
    return np.sqrt(np.maximum(sq, 0.0))


def black_scholes_call(s, k, t, r, sigma):
    def norm_cdf(z):
        return 0.5 * (1.0 + np.tanh(0.7978845608 * (z + 0.044715 * z ** 3)))

    d1 = (np.log(s / k) + (r + 0.5 * sigma ** 2) * t) / (sigma * np.sqrt(t))
    d2 = d1 - sigma * np.sqrt(t)
    return s * norm_cdf(d1) - k * np.exp(-r * t) * norm_cdf(d2)


def logistic_step(w, x, y, lr=0.1):
    p = 1.0 / (1.0 + np.exp(-(x @ w)))
    grad = x.T @ (p - y) / len(y)
    return w - lr * grad


def standardize(x):
    return (x - np.mean(x, axis=0)) / np.std(x, axis=0)


def polynomial(x):
    return np.polyval_free(x) if hasattr(np, "polyval_free") else 3 * x ** 3 - 2 * x + 1


def stacked_features(x):
    return np.concatenate([x, np.square(x), np.sin(x)], axis=1)


def masked_mean(x):
    return np.sum(np.where(x > 0, x, 0.0)) / np.sum(x > 0)


def cosine_similarity(a, b):
    return np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b))


def clipped_log(x):
    return np.log(np.clip(x, 1e-3, None))


def log_loss(w, x, y):
    z = x @ w
    return np.mean(np.logaddexp(0.0, -z) * y + np.logaddexp(0.0, z) * (1 - y))


def rms_norm(x):
    return x / np.sqrt(np.mean(np.square(x), axis=-1, keepdims=True) + 1e-6)


X = RNG.normal(size=(5, 3))
B = RNG.normal(size=(4, 3))
W = RNG.normal(size=3)
Y = (RNG.uniform(size=5) > 0.5).astype(np.float64)
S, K, T, R, SIG = 100.0, 95.0, 0.5, 0.01, 0.2

CASES = [
    ("softmax", softmax, (X,)),
    ("knn", knn_distances, (X, B)),
    ("black_scholes", black_scholes_call, (S, K, T, R, SIG)),
    ("logistic_step", logistic_step, (W, X, Y)),
    ("standardize", standardize, (X,)),
    ("polynomial", polynomial, (X,)),
    ("stacked", stacked_features, (X,)),
    ("masked_mean", masked_mean, (X,)),
    ("cosine", cosine_similarity, (W, W[::-1].copy())),
    ("clipped_log", clipped_log, (np.abs(X),)),
    ("log_loss", log_loss, (W, X, Y)),
    ("rms_norm", rms_norm, (X,)),
]


@pytest.mark.parametrize("name,fn,args", CASES, ids=[c[0] for c in CASES])
def test_jit_of_plain_numpy_matches_numpy(name, fn, args):
    np.testing.assert_allclose(np.asarray(numbax.jit(fn)(*args)), fn(*args), rtol=1e-10,
                               atol=1e-12)


def _scalar(fn):
    return lambda *a: np.sum(fn(*a))


@pytest.mark.parametrize("name,fn,args", CASES, ids=[c[0] for c in CASES])
def test_grad_of_plain_numpy_matches_finite_differences(name, fn, args):
    f = _scalar(fn)
    x0 = np.asarray(args[0], dtype=np.float64)
    g = np.asarray(numbax.grad(lambda v: f(v, *args[1:]))(x0))
    eps = 1e-6
    fd = np.zeros_like(x0)
    for i in np.ndindex(x0.shape):
        d = np.zeros_like(x0)
        d[i] = eps
        fd[i] = (f(x0 + d, *args[1:]) - f(x0 - d, *args[1:])) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6)


def test_vmap_of_plain_numpy():
    got = numbax.vmap(softmax)(X)
    np.testing.assert_allclose(np.asarray(got), softmax(X), rtol=1e-12)


def test_uncovered_numpy_function_on_tracer_is_a_clear_error():
    with pytest.raises(NumbaxTypeError, match="numpy.real_if_close"):
        numbax.jit(lambda x: np.real_if_close(x))(np.ones(3))


def test_concrete_arrays_fall_back_to_numpy_for_uncovered_functions():
    a = numbax.numpy.asarray(np.arange(4.0))
    counts, _ = np.histogram(a, bins=2)
    np.testing.assert_array_equal(counts, [2, 2])
    assert isinstance(np.sin(a), numbax.Array)
    np.testing.assert_allclose(float(np.std(a)), np.std(np.arange(4.0)))


def test_erf_through_scipy_is_not_traced():
    # scipy.special functions are not numpy functions: they convert their input, which is
    # an error on a tracer (numbax.scipy.special.erf is the traceable one).
    with pytest.raises(TypeError):
        numbax.jit(lambda x: scipy_erf(x))(np.ones(2))
