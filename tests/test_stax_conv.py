"""stax's convolution and pooling layers vs JAX's (output shapes, outputs with fixed weights),
JAX's MNIST convnet (narrowed) forward pass and gradients, jit, and bad input."""
import pathlib

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax.errors import NumbaxTypeError, NumbaxValueError
from numbax.example_libraries import optimizers, stax

REF = np.load(pathlib.Path(__file__).parent / "data" / "conv_jax_reference.npz")
LAYERS = {
    "general_conv": (lambda: stax.GeneralConv(("NCHW", "OIHW", "NCHW"), 3, (3, 2), (2, 1),
                                              "SAME"), (2, 2, 7, 6)),
    "conv_transpose": (lambda: stax.ConvTranspose(3, (3, 3), (2, 2), "SAME"), (2, 4, 5, 2)),
    "conv1d_transpose": (lambda: stax.Conv1DTranspose(2, (4,), (3,), "VALID"), (2, 5, 3)),
    "general_conv_transpose": (lambda: stax.GeneralConvTranspose(
        ("NCH", "IOH", "NCH"), 2, (3,), (2,), "SAME"), (2, 3, 6)),
    "max_pool": (lambda: stax.MaxPool((2, 3), (2, 1), "SAME"), (2, 5, 7, 3)),
    "sum_pool": (lambda: stax.SumPool((2, 2), None, "VALID", spec="NCHW"), (2, 3, 5, 4)),
    "avg_pool": (lambda: stax.AvgPool((3, 3), (2, 2), "SAME"), (2, 6, 5, 2)),
}


def convnet():
    return stax.serial(stax.Conv(8, (3, 3)), stax.Relu, stax.Conv(16, (3, 3)), stax.Relu,
                       stax.MaxPool((2, 2), (2, 2)), stax.Flatten, stax.Dense(32), stax.Relu,
                       stax.Dense(10), stax.LogSoftmax)


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layers_match_jax(name):
    make, shape = LAYERS[name]
    init, apply = make()
    out_shape, params = init(numbax.random.PRNGKey(0), shape)
    assert out_shape == tuple(REF[f"stax/{name}/out_shape"])
    recorded = tuple(REF[f"stax/{name}/param{i}"] for i in range(len(params)))
    assert [np.shape(p) for p in params] == [p.shape for p in recorded]
    got = apply(recorded, REF[f"stax/{name}/x"])
    assert got.shape == out_shape
    np.testing.assert_allclose(np.asarray(got), REF[f"stax/{name}/out"], rtol=1e-12,
                               atol=1e-12)


def _recorded(structure, kind="param"):
    """The recorded weights (or gradients) laid out like `structure` (init's params)."""
    return [tuple(REF[f"convnet/{kind}{i}_{j}"] for j in range(len(layer)))
            for i, layer in enumerate(structure)]


def test_convnet_forward_and_gradient_match_jax():
    init, apply = convnet()
    out_shape, fresh = init(numbax.random.PRNGKey(1), (-1, 8, 8, 1))
    assert out_shape == tuple(REF["convnet/out_shape"])
    params = _recorded(fresh)
    assert [tuple(np.shape(p) for p in layer) for layer in fresh] == [
        tuple(p.shape for p in layer) for layer in params]
    x, labels = REF["convnet/x"], REF["convnet/labels"]
    np.testing.assert_allclose(np.asarray(apply(params, x)), REF["convnet/logits"], rtol=1e-11,
                               atol=1e-12)

    def loss(ps):
        return -jnp.mean(jnp.sum(apply(ps, x) * labels, axis=1))

    for grads in (numbax.grad(loss)(params), numbax.jit(numbax.grad(loss))(params)):
        for i, layer in enumerate(grads):
            for j, g in enumerate(layer):
                np.testing.assert_allclose(np.asarray(g), REF[f"convnet/grad{i}_{j}"],
                                           rtol=1e-10, atol=1e-12)


def test_convnet_trains():
    init, apply = convnet()
    _, params = init(numbax.random.PRNGKey(2), (-1, 8, 8, 1))
    x, labels = REF["convnet/x"], REF["convnet/labels"]
    opt_init, opt_update, get_params = optimizers.sgd(0.1)

    @numbax.jit
    def step(i, state):
        loss = lambda ps: -jnp.mean(jnp.sum(apply(ps, x) * labels, axis=1))  # noqa: E731
        value, grads = numbax.value_and_grad(loss)(get_params(state))
        return value, opt_update(i, grads, state)

    state = opt_init(params)
    losses = []
    for i in range(30):
        value, state = step(i, state)
        losses.append(float(value))
    assert losses[-1] < 0.5 * losses[0]


def test_default_initializers():
    init, _ = stax.Conv(6, (3, 3))
    _, (w, b) = init(numbax.random.PRNGKey(3), (2, 8, 8, 4))
    assert w.shape == (3, 3, 4, 6) and b.shape == (1, 1, 1, 6)
    assert float(jnp.max(jnp.abs(b))) < 1e-4  # normal(1e-6)
    fan_in, fan_out = 3 * 3 * 4, 3 * 3 * 6  # glorot over the I and O axes
    assert abs(float(jnp.std(w)) - np.sqrt(2 / (fan_in + fan_out))) < 0.06
    assert stax.glorot is stax.glorot_normal and stax.randn is stax.normal
    x = np.array([[1.0, 2.0, 3.0]])
    np.testing.assert_allclose(np.asarray(stax.logsoftmax(x)),
                               x - np.log(np.exp(x).sum()), rtol=1e-12)


def test_bad_inputs():
    with pytest.raises(NumbaxValueError, match="out_chan"):
        stax.Conv(0, (3, 3))
    with pytest.raises(NumbaxValueError, match="filter_shape"):
        stax.Conv(2, (3,))
    with pytest.raises(NumbaxTypeError, match="filter_shape"):
        stax.Conv(2, "3x3")
    with pytest.raises(NumbaxValueError, match="dimension_numbers"):
        stax.GeneralConv(("NCHW", "XYHW", "NCHW"), 2, (3, 3))
    with pytest.raises(NumbaxValueError, match="spec"):
        stax.MaxPool((2, 2), spec="NHW")
    with pytest.raises(NumbaxValueError, match="equal lengths"):
        stax.AvgPool((2, 2), (1,))
    with pytest.raises(NumbaxTypeError, match="input_shape"):
        stax.Conv(2, (3, 3))[0](numbax.random.PRNGKey(0), "big")
