"""numbax.example_libraries: stax layer shapes/params/outputs vs numpy, optimizers' first
updates vs hand-written numpy formulas, pytree states, adam training, bad input."""
import json
import pathlib

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax.errors import NumbaxTypeError, NumbaxValueError
from numbax.example_libraries import optimizers, stax
from tests.data.optimizer_problem import OPTIMIZERS, SCHEDULES, STEPS, initial_params, loss

REF = json.loads((pathlib.Path(__file__).parent / "data" /
                  "example_libraries_jax_reference.json").read_text())


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


# ----------------------------------------------------------------------------- JAX's numbers


@pytest.fixture
def x32():
    with numbax.config.override("jax_enable_x64", False):
        yield


@pytest.mark.usefixtures("x32")
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizer_trajectory_matches_jax(name):
    """12 steps on a least-squares problem (a matrix, a vector and a scalar leaf), float32:
    each step's parameters within 1e-5 of JAX's (XLA fuses multiply-adds; numpy rounds twice)."""
    init, update, get_params = OPTIMIZERS[name](optimizers)
    state = init(initial_params(jnp))
    grad = numbax.grad(loss)
    for i in range(STEPS):
        state = update(i, grad(get_params(state)), state)
        params, want = get_params(state), REF["trajectories"][name][i]
        for k in ("w", "b", "s"):
            assert params[k].dtype == np.float32
            np.testing.assert_allclose(params[k], np.float32(want[k]), rtol=1e-5, atol=1e-5,
                                       err_msg=f"{name} step {i} {k}")


@pytest.mark.usefixtures("x32")
@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_schedule_matches_jax(name):
    schedule = SCHEDULES[name](optimizers)
    np.testing.assert_array_equal([np.float32(schedule(i)) for i in range(12)],
                                  np.float32(REF["schedules"][name]))


def _sm3_numpy(x, grads, step_size, momentum=0.9):
    """SM3 written out with one accumulator vector per axis (Anil et al. 2019, Alg. 2)."""
    x = np.array(x, np.float64)
    m = np.zeros_like(x)
    vs = [np.zeros(d) for d in x.shape]
    for g in grads:
        accum = np.full(x.shape, np.inf)
        for j, v in enumerate(vs):
            shape = [1] * x.ndim
            shape[j] = -1
            accum = np.minimum(accum, v.reshape(shape))
        accum = accum + g * g
        inv = np.where(accum > 0, 1 / np.sqrt(np.where(accum > 0, accum, 1)), 0)
        m = (1 - momentum) * g * inv + momentum * m
        x = x - step_size * m
        vs = [accum.max(axis=tuple(a for a in range(x.ndim) if a != j)) for j in range(x.ndim)]
    return x


def test_sm3_matches_numpy_and_keeps_shapes():
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal((3, 4, 2))
    grads = [rng.standard_normal((3, 4, 2)) for _ in range(5)]
    init, update, get_params = optimizers.sm3(0.1)
    state = init(x0)
    for i, g in enumerate(grads):
        state = update(i, g, state)
    np.testing.assert_allclose(get_params(state), _sm3_numpy(x0, grads, 0.1), rtol=1e-13)
    init, update, get_params = optimizers.sm3(0.5, momentum=0.0)
    state = update(0, 2.0, init(3.0))
    out = get_params(state)
    assert out.shape == () and float(out) == 2.5  # g / sqrt(g^2) = 1


def test_safe_map_zip_unzip2_and_aliases():
    assert optimizers.map(lambda a, b: a * b, [1, 2], (3, 4)) == [3, 8]
    assert optimizers.safe_zip("ab", [1, 2]) == [("a", 1), ("b", 2)]
    assert optimizers.zip is optimizers.safe_zip and optimizers.map is optimizers.safe_map
    assert optimizers.unzip2([(1, "x"), (2, "y")]) == ((1, 2), ("x", "y"))
    assert optimizers.unzip2([]) == ((), ())
    assert optimizers.partial(pow, 2)(3) == 8
    assert optimizers.Step is int and optimizers.Updates is optimizers.Params
    with pytest.raises(ValueError, match=r"lengths \(1, 2\)"):
        optimizers.safe_map(lambda a, b: a, [1], [1, 2])
    with pytest.raises(ValueError, match=r"lengths \(2, 1\)"):
        optimizers.zip([1, 2], [1])


@pytest.mark.usefixtures("x32")
def test_stax_parallel_glorot_randn_logsoftmax_match_jax():
    ref = REF["stax"]
    init, apply = stax.parallel(stax.Dense(3), stax.Dense(2, W_init=stax.glorot(),
                                                           b_init=stax.randn(0.5)))
    shapes, params = init(_key(0), ((-1, 4), (-1, 5)))
    assert [type(shapes).__name__, type(params).__name__] == ref["parallel_init_types"]
    assert [list(s) for s in shapes] == ref["parallel_shapes"]
    for got_layer, want_layer in zip(params, ref["parallel_params"]):
        for got, want in zip(got_layer, want_layer):
            np.testing.assert_allclose(got, np.float32(want), rtol=1e-6, atol=1e-7)
    x = (np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4),
         np.linspace(0, 2, 10, dtype=np.float32).reshape(2, 5))
    outs = apply(params, x)
    assert isinstance(outs, list)
    for got, want in zip(outs, ref["parallel_outputs"]):
        np.testing.assert_allclose(got, np.float32(want), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(stax.glorot()(_key(0), (3, 4)), np.float32(ref["glorot"]),
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(stax.randn()(_key(0), (5,)), np.float32(ref["randn"]),
                               rtol=1e-6)
    np.testing.assert_allclose(stax.logsoftmax(np.float32([[1.0, 2.0, 3.0]])),
                               np.float32(ref["logsoftmax"]), rtol=1e-6)
    assert stax.glorot is stax.glorot_normal and stax.randn is stax.normal
