"""Dense layers' epilogues on the CPU (compiler/epilogues.py, runtime/gemm.py): `x @ w + b` and
its ReLU, GELU, tanh or sigmoid computed inside numbax's GEMM (or after a BLAS product in one
pass), against numpy in float64 and against the same program compiled without the rewrite."""
from __future__ import annotations

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import nn
from numbax._src.compiler.cpu.runtime import gemm as gemm_cpu
from numbax._src.compiler.cpu.runtime import gemm_epilogues, library

RNG = np.random.default_rng(34)


def _reference(x, w, b, activation):
    """act(x @ w + b) in float64: the tanh form of GELU, as jax.nn.gelu's default."""
    z = x.astype(np.float64) @ w.astype(np.float64) + b.astype(np.float64)
    if activation == "relu":
        return np.maximum(z, 0.0)
    if activation == "gelu":
        return z * 0.5 * (1 + np.tanh(np.sqrt(2 / np.pi) * (z + 0.044715 * z ** 3)))
    if activation == "tanh":
        return np.tanh(z)
    if activation == "sigmoid":
        return 1 / (1 + np.exp(-z))
    return z


def _operands(m, k, n, dtype, transpose_x=False, transpose_w=False):
    x = RNG.normal(size=(k, m) if transpose_x else (m, k)).astype(dtype)
    w = (RNG.normal(size=(n, k) if transpose_w else (k, n)) / np.sqrt(k)).astype(dtype)
    b = RNG.normal(size=n).astype(dtype)
    return (x.T if transpose_x else x), (w.T if transpose_w else w), b


# shapes: whole tiles; ragged rows and columns; several k blocks (KC = 256); one row
SHAPES = [(24, 64, 64), (37, 300, 45), (130, 600, 70), (1, 20, 33)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("activation", ["none", "relu", "gelu", "tanh", "sigmoid"])
@pytest.mark.parametrize("m,k,n", SHAPES)
def test_gemm_applies_the_epilogue_to_every_tile(dtype, activation, m, k, n):
    x, w, b = _operands(m, k, n, dtype, transpose_x=m % 2 == 1, transpose_w=n % 2 == 1)
    tol = 2e-5 if dtype == np.float32 else 1e-12
    want = _reference(x, w, b, activation)
    for threads in (1, 3):
        got = gemm_cpu.matmul(x, w, threads, bias=b, activation=activation)
        assert got.dtype == dtype
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.sqrt(k))


def test_an_empty_contraction_still_gets_bias_and_activation():
    x, w = np.ones((5, 0), np.float32), np.ones((0, 4), np.float32)
    b = np.array([-1.0, 0.0, 2.0, -3.0], np.float32)
    got = gemm_cpu.matmul(x, w, 1, bias=b, activation="relu")
    np.testing.assert_array_equal(got, np.tile(np.maximum(b, 0), (5, 1)))


def test_bad_epilogue_arguments_are_named():
    x, w, b = _operands(4, 8, 6, np.float32)
    with pytest.raises(ValueError, match=r"bias must be a float32 array of shape \(6,\)"):
        gemm_cpu.matmul(x, w, 1, bias=b[:5])
    with pytest.raises(ValueError, match="bias must be a float32"):
        gemm_cpu.matmul(x, w, 1, bias=b.astype(np.float64))
    with pytest.raises(ValueError, match="activation must be one of"):
        gemm_cpu.matmul(x, w, 1, bias=b, activation="swish")
    with pytest.raises(ValueError, match="needs a bias row"):
        gemm_cpu.matmul(x, w, 1, activation="relu")


@pytest.mark.parametrize("route", ["numbax", "blas"])
@pytest.mark.parametrize("activation", ["none", "relu", "gelu", "tanh", "sigmoid"])
def test_library_dot_on_either_product(route, activation):
    """`lw.dot` with a bias: numbax's GEMM, or BLAS followed by one pass (finish_block, or
    finish_rows on several threads for a large result)."""
    for m, k, n in ((33, 40, 50), (700, 64, 512)):
        x, w, b = _operands(m, k, n, np.float32)
        with numbax.config.override("cpu_matmul", route):
            got = library.dot(x, w, m * n * k, b, activation)
        np.testing.assert_allclose(got, _reference(x, w, b, activation), rtol=2e-5, atol=1e-4)
    out = np.ascontiguousarray(RNG.normal(size=(600, 300)).astype(np.float32))
    b = RNG.normal(size=300).astype(np.float32)
    want = _reference(out, np.eye(300, dtype=np.float32), b, activation)
    gemm_epilogues.finish_rows(out.reshape(-1), 600, 300, *gemm_epilogues.epilogue_args(
        np.float32, (600, 300), b, activation), 1.0, 4)
    np.testing.assert_allclose(out, want, rtol=2e-5, atol=1e-5)


def _spy(monkeypatch):
    """The bias/activation arguments of every `lw.dot` call from compiled drivers."""
    calls = []
    plain = library.dot

    def dot(x, y, macs, bias=None, activation="none"):
        calls.append(None if bias is None else activation)
        return plain(x, y, macs, bias, activation)

    monkeypatch.setattr(library, "dot", dot)
    return calls


LAYERS = {
    "relu": lambda x, w, b: nn.relu(x @ w + b),
    "gelu": lambda x, w, b: nn.gelu(x @ w + b),
    "tanh": lambda x, w, b: jnp.tanh(x @ w + b),
    "sigmoid": lambda x, w, b: nn.sigmoid(x @ w + b),
    "none": lambda x, w, b: jnp.sin(x @ w + b),  # the sin stays a loop nest; the bias joins
    "maximum": lambda x, w, b: jnp.maximum(jnp.dot(x, w) + b, 0),
}


@pytest.mark.parametrize("name", list(LAYERS))
def test_jit_fuses_dense_layers_and_matches_the_unfused_program(name, monkeypatch):
    calls = _spy(monkeypatch)
    x, w, b = _operands(70, 90, 40, np.float32)
    x[0, 0], x[1, :] = np.nan, 0.0  # NaN propagates through ReLU as lax.max's; zero rows
    fn = LAYERS[name]
    fused = np.asarray(numbax.jit(fn)(x, w, b))
    want = {"relu": "relu", "maximum": "relu", "gelu": "gelu", "tanh": "tanh",
            "sigmoid": "sigmoid", "none": "none"}[name]
    assert calls == [want]
    with numbax.config.override("cpu_epilogues", False):
        calls.clear()
        unfused = np.asarray(numbax.jit(lambda *a: fn(*a))(x, w, b))
        assert calls == [None]
    # the same operations in the same order: the same bits (sign of zero and NaN included)
    np.testing.assert_array_equal(fused, unfused)
    np.testing.assert_array_equal(np.signbit(fused), np.signbit(unfused))
    assert np.isnan(fused[0]).all()


def test_a_product_read_elsewhere_is_left_alone(monkeypatch):
    calls = _spy(monkeypatch)
    x, w, b = _operands(20, 30, 40, np.float32)
    y, h = numbax.jit(lambda x, w, b: (x @ w, nn.relu(x @ w + b)))(x, w, b)
    assert None in calls  # x @ w is an output: the add cannot move into it
    np.testing.assert_allclose(np.asarray(h), _reference(x, w, b, "relu"), rtol=2e-5,
                               atol=1e-5)


def test_training_step_gradients_equal_the_unfused_ones():
    """In a training step the backward pass reads the pre-activation sum, so only the bias
    joins the product; gradients are those of the unfused program."""
    x, w, b = _operands(64, 30, 20, np.float32)

    def loss(params, x):
        w, b = params
        return jnp.sum(nn.gelu(x @ w + b) ** 2)

    fused = numbax.jit(numbax.grad(loss))((w, b), x)
    with numbax.config.override("cpu_epilogues", False):
        unfused = numbax.jit(numbax.grad(lambda p, x: loss(p, x)))((w, b), x)
    for a, c in zip(fused, unfused):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(c))
    eps = 1e-3  # and the bias gradient against central differences in float64
    z = lambda bb: np.sum(_reference(x, w, bb, "gelu") ** 2)  # noqa: E731
    fd = [(z(b + eps * e) - z(b - eps * e)) / (2 * eps) for e in np.eye(20)]
    np.testing.assert_allclose(np.asarray(fused[1]), fd, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("activation", ["tanh", "sigmoid"])
def test_tanh_and_sigmoid_layers_fuse_in_training_with_the_unfused_gradients(activation,
                                                                             monkeypatch):
    """tanh's and sigmoid's derivatives read their output, not the sum, so in a training step
    the whole layer (bias and activation) joins the product, on the CPU; the gradients are the
    unfused program's, bit for bit."""
    x, w, b = _operands(64, 30, 20, np.float32)
    act = {"tanh": jnp.tanh, "sigmoid": nn.sigmoid}[activation]

    def loss(params, x):
        w, b = params
        return jnp.sum(act(x @ w + b) ** 2)

    calls = _spy(monkeypatch)
    fused = numbax.jit(numbax.grad(loss))((w, b), x)
    assert activation in calls
    with numbax.config.override("cpu_epilogues", False):
        unfused = numbax.jit(numbax.grad(lambda p, x: loss(p, x)))((w, b), x)
    for a, c in zip(fused, unfused):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(c))
    eps = 1e-3
    z = lambda bb: np.sum(_reference(x, w, bb, activation) ** 2)  # noqa: E731
    fd = [(z(b + eps * e) - z(b - eps * e)) / (2 * eps) for e in np.eye(20)]
    np.testing.assert_allclose(np.asarray(fused[1]), fd, rtol=2e-3, atol=2e-3)


def test_the_gpu_rule_leaves_tanh_and_sigmoid_layers_unfused():
    """cuBLASLt has neither epilogue: `fuse` without them in its activations moves only the
    bias into the product."""
    from numbax._src.compiler import epilogues

    x, w, b = _operands(8, 6, 4, np.float32)
    for name, act in (("tanh", jnp.tanh), ("sigmoid", nn.sigmoid)):
        jaxpr = numbax.make_jaxpr(lambda x, w, b, act=act: act(x @ w + b))(x, w, b).jaxpr
        fused = {a: [e.params["activation"] for e in epilogues.fuse(
                     jaxpr, epilogues.cpu_takes, a).eqns
                     if e.primitive is epilogues.gemm_epilogue_p]
                 for a in (("relu", "gelu"), epilogues.CPU_ACTIVATIONS)}
        assert fused == {("relu", "gelu"): ["none"], epilogues.CPU_ACTIVATIONS: [name]}
