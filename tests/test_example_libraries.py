"""numbax.example_libraries: stax layer shapes/params/outputs vs numpy, optimizers' first
updates vs hand-written numpy formulas, pytree states, adam training, bad input."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax.errors import NumbaxTypeError, NumbaxValueError
from numbax.example_libraries import optimizers, stax


def _key(seed=0):
    return numbax.random.PRNGKey(seed)


def test_stax_mlp_shapes_params_and_output():
    init, apply = stax.serial(stax.Dense(8), stax.Relu, stax.Dense(3), stax.LogSoftmax)
    out_shape, params = init(_key(), (-1, 5))
    assert out_shape == (-1, 3)
    assert [tuple(p.shape for p in layer) for layer in params] == [((5, 8), (8,)), (),
                                                                  ((8, 3), (3,)), ()]
    x = np.random.RandomState(0).randn(4, 5)
    (w1, b1), _, (w2, b2), _ = [tuple(np.asarray(p) for p in layer) for layer in params]
    h = np.maximum(x @ w1 + b1, 0) @ w2 + b2
    ref = h - np.log(np.exp(h).sum(-1, keepdims=True))
    np.testing.assert_allclose(np.asarray(apply(params, x)), ref, rtol=1e-12)
    # Dense's default W init is glorot_normal: std sqrt(2 / (fan_in + fan_out)) at most
    assert np.abs(w1).max() <= 2 * np.sqrt(2 / 13) / 0.87962566103423978 + 1e-12


def test_stax_elementwise_layers_match_numpy():
    x = np.array([[-2.0, -0.5, 0.0, 1.5]])
    cases = [(stax.Tanh, np.tanh(x)), (stax.Relu, np.maximum(x, 0)),
             (stax.Sigmoid, 1 / (1 + np.exp(-x))), (stax.Softplus, np.logaddexp(x, 0)),
             (stax.Elu, np.where(x > 0, x, np.expm1(x))),
             (stax.LeakyRelu, np.where(x >= 0, x, 0.01 * x)),
             (stax.Softmax, np.exp(x) / np.exp(x).sum()), (stax.Identity, x)]
    for (init, apply), ref in cases:
        shape, params = init(_key(), x.shape)
        assert shape == x.shape and params == ()
        np.testing.assert_allclose(np.asarray(apply(params, x)), ref, rtol=1e-12)


def test_stax_flatten_fanout_parallel_fanin():
    init, apply = stax.serial(stax.Flatten, stax.FanOut(2),
                              stax.parallel(stax.Dense(4), stax.Identity), stax.FanInConcat())
    out_shape, params = init(_key(1), (2, 3, 2))
    assert out_shape == (2, 10)
    x = np.random.RandomState(2).randn(2, 3, 2)
    w, b = (np.asarray(p) for p in params[2][0])
    flat = x.reshape(2, 6)
    np.testing.assert_allclose(np.asarray(apply(params, x)),
                               np.concatenate([flat @ w + b, flat], -1), rtol=1e-12)
    init, apply = stax.serial(stax.FanOut(2), stax.parallel(stax.Dense(3), stax.Dense(3)),
                              stax.FanInSum)
    out_shape, params = init(_key(2), (5, 4))
    assert out_shape == (5, 3)
    x = np.ones((5, 4))
    (w1, b1), (w2, b2) = [[np.asarray(p) for p in layer] for layer in params[1]]
    np.testing.assert_allclose(np.asarray(apply(params, x)), x @ w1 + b1 + x @ w2 + b2)


def test_stax_dropout_and_batchnorm():
    init, apply = stax.Dropout(0.5)
    _, params = init(_key(), (1000,))
    x = np.ones(1000)
    out = np.asarray(apply(params, x, rng=_key(3)))
    assert set(np.unique(out)) <= {0.0, 2.0} and 400 < (out > 0).sum() < 600
    _, apply_test = stax.Dropout(0.5, mode="test")
    np.testing.assert_array_equal(np.asarray(apply_test(params, x, rng=_key(3))), x)
    init, apply = stax.BatchNorm(axis=(0,))
    shape, (beta, gamma) = init(_key(), (8, 3))
    assert shape == (8, 3) and beta.shape == (3,) and gamma.shape == (3,)
    x = np.random.RandomState(4).randn(8, 3) * 3 + 1
    ref = (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5)
    np.testing.assert_allclose(np.asarray(apply((beta, gamma), x)), ref, rtol=1e-10)


def test_stax_grad_through_mlp():
    init, apply = stax.serial(stax.Dense(4), stax.Tanh, stax.Dense(1))
    _, params = init(_key(5), (-1, 3))
    x = np.random.RandomState(6).randn(6, 3)

    def loss(p):
        return jnp.sum(apply(p, x) ** 2)

    g = numbax.grad(loss)(params)
    w = np.asarray(params[0][0]).copy()
    eps = 1e-6
    wp, wm = w.copy(), w.copy()
    wp[1, 2] += eps
    wm[1, 2] -= eps

    def with_w(wv):
        return [(wv, params[0][1]), (), params[2]]

    fd = (float(loss(with_w(wp))) - float(loss(with_w(wm)))) / (2 * eps)
    assert float(np.asarray(g[0][0])[1, 2]) == pytest.approx(fd, rel=1e-6)


def test_stax_bad_inputs():
    init, _ = stax.Dense(3)
    with pytest.raises(NumbaxTypeError, match="input_shape"):
        init(_key(), "abc")
    with pytest.raises(NumbaxValueError, match="rank 0"):
        init(_key(), ())
    with pytest.raises(NumbaxValueError, match="out_dim"):
        stax.Dense(0)
    with pytest.raises(NumbaxValueError, match="mode"):
        stax.Dropout(0.5, mode="eval")
    _, apply = stax.Dropout(0.5)
    with pytest.raises(NumbaxValueError, match="rng"):
        apply((), np.ones(3))


# ----------------------------------------------------------------------------- optimizers

G = [np.array([0.3, -1.2, 0.0]), np.array([0.5, 0.1, -0.4]), np.array([-0.2, 0.8, 0.6])]
X0 = np.array([1.0, -2.0, 0.5])


def _np_sgd(lr):
    x = X0.copy()
    for g in G:
        x = x - lr * g
        yield x


def _np_momentum(lr, mass, nesterov=False):
    x, v = X0.copy(), np.zeros(3)
    for g in G:
        v = mass * v + g
        x = x - lr * ((mass * v + g) if nesterov else v)
        yield x


def _np_adagrad(lr, mom=0.9):
    x, gsq, m = X0.copy(), np.zeros(3), np.zeros(3)
    for g in G:
        gsq = gsq + g * g
        inv = np.where(gsq > 0, 1 / np.sqrt(np.where(gsq > 0, gsq, 1)), 0)
        m = (1 - mom) * g * inv + mom * m
        x = x - lr * m
        yield x


def _np_rmsprop(lr, gamma=0.9, eps=1e-8):
    x, a = X0.copy(), np.zeros(3)
    for g in G:
        a = gamma * a + (1 - gamma) * g * g
        x = x - lr * g / np.sqrt(a + eps)
        yield x


def _np_adam(lr, b1=0.9, b2=0.999, eps=1e-8):
    x, m, v = X0.copy(), np.zeros(3), np.zeros(3)
    for i, g in enumerate(G):
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * g * g + b2 * v
        x = x - lr * (m / (1 - b1 ** (i + 1))) / (np.sqrt(v / (1 - b2 ** (i + 1))) + eps)
        yield x


def _np_adamax(lr, b1=0.9, b2=0.999, eps=1e-8):
    x, m, u = X0.copy(), np.zeros(3), np.zeros(3)
    for i, g in enumerate(G):
        m = (1 - b1) * g + b1 * m
        u = np.maximum(b2 * u, np.abs(g))
        x = x - lr / (1 - b1 ** (i + 1)) * m / (u + eps)
        yield x


@pytest.mark.parametrize("opt,ref", [
    (optimizers.sgd(0.1), _np_sgd(0.1)),
    (optimizers.momentum(0.1, 0.9), _np_momentum(0.1, 0.9)),
    (optimizers.nesterov(0.1, 0.9), _np_momentum(0.1, 0.9, nesterov=True)),
    (optimizers.adagrad(0.1), _np_adagrad(0.1)),
    (optimizers.rmsprop(0.01), _np_rmsprop(0.01)),
    (optimizers.adam(0.01), _np_adam(0.01)),
    (optimizers.adamax(0.01), _np_adamax(0.01)),
], ids=["sgd", "momentum", "nesterov", "adagrad", "rmsprop", "adam", "adamax"])
def test_optimizer_first_updates_match_numpy(opt, ref):
    opt_init, opt_update, get_params = opt
    state = opt_init(X0)
    for i, (g, expected) in enumerate(zip(G, ref)):
        state = opt_update(i, g, state)
        np.testing.assert_allclose(np.asarray(get_params(state)), expected, rtol=1e-12,
                                   atol=1e-15)


def test_schedules():
    s = optimizers.exponential_decay(0.1, 10, 0.5)
    assert float(s(20)) == pytest.approx(0.025)
    s = optimizers.inverse_time_decay(1.0, 2, 1.0)
    assert float(s(3)) == pytest.approx(1 / 2.5)
    s = optimizers.inverse_time_decay(1.0, 2, 1.0, staircase=True)
    assert float(s(3)) == pytest.approx(0.5)
    s = optimizers.piecewise_constant([2, 4], [1.0, 0.5, 0.1])
    assert [float(s(i)) for i in [0, 2, 3, 4, 5]] == [1.0, 1.0, 0.5, 0.5, 0.1]
    s = optimizers.polynomial_decay(1.0, 4, 0.0)
    assert float(s(1)) == pytest.approx(0.75) and float(s(10)) == pytest.approx(0.0)
    opt_init, opt_update, get_params = optimizers.sgd(optimizers.exponential_decay(0.1, 1, 0.5))
    state = opt_update(1, np.ones(3), opt_init(np.zeros(3)))
    np.testing.assert_allclose(np.asarray(get_params(state)), -0.05 * np.ones(3))


def test_optimizer_state_is_a_pytree():
    params = {"w": np.ones((2, 2)), "b": (np.zeros(2), 3.0)}
    opt_init, opt_update, get_params = optimizers.adam(1e-3)
    state = opt_init(params)
    leaves, tree = numbax.tree_util.tree_flatten(state)
    assert len(leaves) == 9  # (x, m, v) per parameter leaf
    rebuilt = numbax.tree_util.tree_unflatten(tree, leaves)
    assert isinstance(rebuilt, optimizers.OptimizerState)
    doubled = numbax.tree_util.tree_map(lambda x: x * 2, state)
    np.testing.assert_array_equal(np.asarray(get_params(doubled)["w"]), 2 * np.ones((2, 2)))
    marked = optimizers.unpack_optimizer_state(state)
    packed = optimizers.pack_optimizer_state(marked)
    assert packed.tree_def == state.tree_def and packed.subtree_defs == state.subtree_defs
    grads = numbax.tree_util.tree_map(jnp.ones_like, params)
    new = numbax.jit(lambda s, g: opt_update(0, g, s))(state, grads)
    assert get_params(new)["w"].shape == (2, 2)


def test_l2_norm_and_clip_grads():
    tree = {"a": np.array([3.0, 0.0]), "b": np.array([[4.0]])}
    assert float(optimizers.l2_norm(tree)) == pytest.approx(5.0)
    clipped = optimizers.clip_grads(tree, 1.0)
    np.testing.assert_allclose(np.asarray(clipped["a"]), [0.6, 0.0])
    np.testing.assert_allclose(np.asarray(clipped["b"]), [[0.8]])
    same = optimizers.clip_grads(tree, 10.0)
    np.testing.assert_allclose(np.asarray(same["a"]), [3.0, 0.0])


def test_adam_trains_linear_regression():
    rs = np.random.RandomState(0)
    x = rs.randn(64, 3)
    y = x @ np.array([1.5, -2.0, 0.5]) + 0.3

    def loss(p):
        return jnp.mean((jnp.dot(x, p["w"]) + p["b"] - y) ** 2)

    opt_init, opt_update, get_params = optimizers.adam(0.1)
    state = opt_init({"w": np.zeros(3), "b": 0.0})
    losses = []
    for i in range(60):
        value, g = numbax.value_and_grad(loss)(get_params(state))
        losses.append(float(value))
        state = opt_update(i, g, state)
    assert losses[-1] < 0.05 * losses[0]
    assert all(b <= a * 1.5 for a, b in zip(losses, losses[1:]))


def test_optimizer_bad_inputs():
    with pytest.raises(NumbaxTypeError, match="step_size has type str"):
        optimizers.sgd("fast")
    with pytest.raises(NumbaxTypeError, match="step_size has type list"):
        optimizers.adam([0.1, 0.2])
    opt_init, opt_update, _ = optimizers.sgd(0.1)
    state = opt_init({"a": 1.0})
    with pytest.raises(NumbaxTypeError, match="grad_tree has structure"):
        opt_update(0, {"b": 1.0}, state)
    with pytest.raises(NumbaxValueError, match="len\\(values\\)"):
        optimizers.piecewise_constant([1, 2], [0.1, 0.2])
    with pytest.raises(NumbaxTypeError, match="JoinPoint"):
        optimizers.pack_optimizer_state({"a": 1.0})
