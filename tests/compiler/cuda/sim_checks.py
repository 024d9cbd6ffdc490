"""Checks of the CUDA backend, run in a subprocess under NUMBA_ENABLE_CUDASIM=1 (test-only).

Run as `python tests/compiler/cuda/sim_checks.py [names...]`: prints one JSON line per check.
The same checks run on a real GPU (benchmarks/bench_cuda.py --check); numpy is the truth
throughout."""
from __future__ import annotations

import json
import sys
import traceback
import warnings

import numpy as np

import numbax
import numbax.numpy as jnp
from numbax._src.array import GpuArray
from tests.compiler.cuda import sim_support

sim_support.prepare()
RNG = np.random.default_rng(0)
# the simulator runs uint32 arithmetic in numpy scalars: threefry's wrapping adds warn
warnings.filterwarnings("ignore", "overflow encountered", RuntimeWarning)
CHECKS = {}


def check(fn):
    CHECKS[fn.__name__] = fn
    return fn


def gjit(f, **kw):
    return numbax.jit(f, backend="gpu", **kw)


def close(got, want, rtol=1e-5, atol=1e-6):
    assert isinstance(got, GpuArray), type(got)
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)


UNARY = {
    "exp": (jnp.exp, np.exp), "log": (jnp.log, np.log), "log1p": (jnp.log1p, np.log1p),
    "expm1": (jnp.expm1, np.expm1), "tanh": (jnp.tanh, np.tanh), "sin": (jnp.sin, np.sin),
    "cos": (jnp.cos, np.cos), "tan": (jnp.tan, np.tan), "arcsin": (jnp.arcsin, np.arcsin),
    "arctan": (jnp.arctan, np.arctan), "sinh": (jnp.sinh, np.sinh),
    "arcsinh": (jnp.arcsinh, np.arcsinh), "sqrt": (jnp.sqrt, np.sqrt),
    "cbrt": (jnp.cbrt, np.cbrt), "abs": (jnp.abs, np.abs), "sign": (jnp.sign, np.sign),
    "floor": (jnp.floor, np.floor), "ceil": (jnp.ceil, np.ceil), "neg": (jnp.negative, np.negative),
    "square": (jnp.square, np.square), "round": (jnp.round, np.round),
    "rsqrt": (numbax.lax.rsqrt, lambda x: 1 / np.sqrt(x)),
    "logistic": (numbax.nn.sigmoid, lambda x: 1 / (1 + np.exp(-x))),
    "cube": (lambda x: x ** 3, lambda x: x ** 3),
    "recip2": (lambda x: x ** -2, lambda x: x ** -2.0),
    "isfinite": (jnp.isfinite, np.isfinite),
}


@check
def unary_float():
    x = RNG.uniform(0.1, 0.9, 40)
    for dt in (np.float32, np.float64):
        xd = x.astype(dt)
        for name, (f, ref) in UNARY.items():
            try:
                close(gjit(f)(xd), ref(xd).astype(np.bool_ if name == "isfinite" else dt),
                      rtol=2e-5 if dt == np.float32 else 1e-12)
            except AssertionError as e:
                raise AssertionError(f"{name} {np.dtype(dt).name}: {e}") from None


@check
def binary_float():
    x = RNG.uniform(-3, 3, (5, 8))
    y = RNG.uniform(0.5, 2, (5, 8))
    x[0, 0] = np.nan
    pairs = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
             "divide": np.divide, "maximum": np.maximum, "minimum": np.minimum,
             "arctan2": np.arctan2, "fmod": np.fmod, "less": np.less,
             "greater_equal": np.greater_equal, "equal": np.equal, "not_equal": np.not_equal}
    for name, ref in pairs.items():
        got = gjit(getattr(jnp, name))(x, y)
        close(got, ref(x, y))
    close(gjit(jnp.power)(np.abs(x), y), np.power(np.abs(x), y), rtol=1e-12)
    close(gjit(lambda a: jnp.clip(a, -1.0, 1.5))(x), np.clip(x, -1.0, 1.5))
    close(gjit(lambda a, b: jnp.where(a > b, a, b * 2))(x, y), np.where(x > y, x, y * 2))


@check
def integer_and_bool():
    a = RNG.integers(-20, 20, (4, 6)).astype(np.int32)
    b = RNG.integers(1, 7, (4, 6)).astype(np.int32)
    close(gjit(lambda a, b: a + b * 3 - 1)(a, b), a + b * 3 - 1)
    close(gjit(numbax.lax.div)(a, b), (np.trunc(a / b)).astype(np.int32))
    close(gjit(numbax.lax.rem)(a, b), np.fmod(a, b))
    close(gjit(jnp.maximum)(a, b), np.maximum(a, b))
    close(gjit(lambda a, b: (a & b) ^ (a | 3))(a, b), (a & b) ^ (a | 3))
    m, n = a > 0, b > 3
    close(gjit(lambda m, n: jnp.logical_and(m, jnp.logical_not(n)))(m, n), m & ~n)
    close(gjit(lambda a: a.astype(jnp.float32) * 0.5)(a), a.astype(np.float32) * np.float32(0.5))
    close(gjit(lambda x: (x * 10).astype(jnp.int32))(a * 0.37), (a * 0.37 * 10).astype(np.int32))


@check
def integer_edges_match_the_cpu():
    """issue 21 item 9: MIN // -1, MIN % -1 and float -> integer casts of NaN, inf and
    out-of-range values through the shared scalar helpers give the CPU's (numpy's) values."""
    lo = np.iinfo(np.int64).min
    a, b = np.array([lo, lo, 7, -7], np.int64), np.array([-1, 1, -1, 2], np.int64)
    for fn in (jnp.floor_divide, jnp.remainder, numbax.lax.div, numbax.lax.rem):
        np.testing.assert_array_equal(np.asarray(gjit(fn)(a, b)), np.asarray(numbax.jit(fn)(a, b)))
    x = np.array([np.nan, np.inf, -np.inf, -1.0, 1e20, -3e9, 2.0**63, 3.7, -0.0])
    signs = np.asarray(gjit(jnp.sign)(x))
    np.testing.assert_array_equal(np.signbit(signs), np.signbit(np.sign(x)))
    y = np.array([-0.3, 0.3, -0.0, 0.0, -1.5, 2.5])
    for fn in (jnp.floor, jnp.ceil, jnp.rint, jnp.round):  # zeros keep the operand's sign
        np.testing.assert_array_equal(np.signbit(np.asarray(gjit(fn)(y))), np.signbit(fn(y)))
    for dt in (np.int8, np.int32, np.int64, np.uint8, np.uint32, np.uint64):
        def cast(v, dt=dt):
            return v.astype(dt)
        want = np.asarray(numbax.jit(cast)(x))
        np.testing.assert_array_equal(np.asarray(gjit(cast)(x)), want)


@check
def one_branch_switch():
    """Found by the fuzzer (issue 21): a switch with one branch rendered an `else:` with no
    `if` in the CUDA driver (SyntaxError)."""
    f = gjit(lambda i, x: numbax.lax.switch(i, [lambda v: v * 2], x))
    for i in (-1, 0, 5):
        close(f(np.int32(i), np.float64(2.5)), np.float64(5.0))


@check
def bfloat16_programs_match_the_cpu():
    """bfloat16 on the GPU: held as uint16 bits, computed in float32 and rounded per operation
    as on the CPU, so exact operations agree with the CPU bit for bit and libdevice's
    transcendental functions within a bfloat16 ulp; products on cuBLAS's bfloat16 tensor
    cores where cuBLAS is (float32 sums either way)."""
    bf16 = jnp.bfloat16.dtype
    x = RNG.normal(size=(24, 40)).astype(bf16)
    w = (RNG.normal(size=(40, 16)) / 6).astype(bf16)
    on_gpu = numbax.device_put(x, numbax.devices("gpu")[0])
    assert on_gpu.dtype == bf16 and np.asarray(on_gpu).dtype == bf16
    np.testing.assert_array_equal(np.asarray(on_gpu).view(np.uint16), x.view(np.uint16))
    exact = {"affine": lambda v: v * 3 + 1, "div": lambda v: v / 7,
             "max": lambda v: jnp.maximum(v, 0.25), "sum": lambda v: jnp.sum(v, axis=1),
             "cast": lambda v: (v.astype(jnp.float32) / 3).astype(jnp.bfloat16),
             "bits": lambda v: numbax.lax.bitcast_convert_type(v, jnp.uint16),
             "scan": lambda v: numbax.lax.scan(lambda c, r: (c * 0.5 + r, c), v[0], v)[1]}
    for name, f in exact.items():
        got, want = gjit(f)(x), numbax.jit(f)(x)
        assert isinstance(got, GpuArray) and got.dtype == want.dtype, (name, got.dtype)
        np.testing.assert_array_equal(np.asarray(got).view(np.uint8),
                                      np.asarray(want).view(np.uint8), err_msg=name)
    for name, f in {"tanh": jnp.tanh, "exp": jnp.exp, "eager": None}.items():
        got = (on_gpu * 2 + 1) if f is None else gjit(f)(x)
        want = (jnp.asarray(x) * 2 + 1) if f is None else numbax.jit(f)(x)
        assert isinstance(got, GpuArray) and got.dtype == bf16, name
        np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32),
                                   rtol=2 ** -7, err_msg=name)
    product = gjit(lambda a, b: a @ b)(x, w)
    wide = gjit(lambda a, b: jnp.dot(a, b, preferred_element_type=jnp.float32))(x, w)
    exact_sums = x.astype(np.float64) @ w.astype(np.float64)
    assert product.dtype == bf16 and wide.dtype == np.float32
    np.testing.assert_allclose(np.asarray(product, np.float64), exact_sums, rtol=2 ** -7,
                               atol=1e-3)
    np.testing.assert_allclose(np.asarray(wide), exact_sums, rtol=1e-5, atol=1e-5)


@check
def empty_scatter():
    """Found by the fuzzer (issue 21): a scatter into a 0-size operand launches nothing, and
    the driver imported a `kernel` its module does not define (ImportError)."""
    x, v = np.zeros((2, 0)), np.zeros((1, 0))
    got = gjit(lambda a, b: a.at[np.array([0])].set(b))(x, v)
    assert got.shape == (2, 0)
    close(gjit(lambda a, b: a.at[np.array([0])].add(b) + 1)(x, v), x + 1)


@check
def broadcasts():
    x = RNG.normal(size=(3, 1)).astype(np.float32)
    y = RNG.normal(size=(1, 4)).astype(np.float32)
    z = RNG.normal(size=(2, 3, 4)).astype(np.float32)
    close(gjit(lambda x, y: x + y)(x, y), x + y)
    close(gjit(lambda x, y, z: x * z - y)(x, y, z), x * z - y)
    v = RNG.normal(size=5)
    close(gjit(lambda v, s: v * s + 1.0)(v, 2.5), v * 2.5 + 1.0)
    close(gjit(lambda v: jnp.broadcast_to(v, (3, 5)) * 2)(v), np.broadcast_to(v, (3, 5)) * 2)


@check
def reductions():
    x = RNG.normal(size=(6, 5, 7))
    for dt in (np.float32, np.float64):
        xd = x.astype(dt)
        tol = 1e-5 if dt == np.float32 else 1e-12
        for axis in (None, 0, 1, 2, (0, 2), (1, 2)):
            for fn, ref in ((jnp.sum, np.sum), (jnp.max, np.max), (jnp.min, np.min),
                            (jnp.prod, np.prod)):
                got = gjit(lambda a, fn=fn, axis=axis: fn(a, axis=axis))(xd)
                try:
                    close(got, ref(xd, axis=axis), rtol=tol, atol=tol)
                except AssertionError as e:
                    raise AssertionError(f"{fn.__name__} axis={axis} {xd.dtype}: {e}") from None
    big = RNG.normal(size=3000)  # several blocks and the unrolled loop + tail
    close(gjit(jnp.sum)(big), np.sum(big), rtol=1e-12)
    nan = big.copy()
    nan[1234] = np.nan
    close(gjit(jnp.max)(nan), np.max(nan))
    i = RNG.integers(-5, 5, (4, 9)).astype(np.int32)
    close(gjit(lambda a: jnp.sum(a, axis=1))(i), np.sum(i, axis=1))
    close(gjit(lambda a: jnp.max(a, axis=0))(i), np.max(i, axis=0))
    close(gjit(lambda a: jnp.any(a > 3, axis=1))(i), np.any(i > 3, axis=1))
    close(gjit(lambda a: jnp.all(a > -5))(i), np.all(i > -5))
    close(gjit(lambda a: jnp.mean(a * a, axis=0))(x), np.mean(x * x, axis=0), rtol=1e-12)


@check
def softmax_rows():
    x = RNG.normal(size=(6, 50)).astype(np.float32)
    f = gjit(lambda x: numbax.nn.softmax(x, axis=-1))
    e = np.exp(x - x.max(-1, keepdims=True))
    close(f(x), e / e.sum(-1, keepdims=True), rtol=1e-5)
    g = gjit(lambda x: numbax.nn.logsumexp(x, axis=1))
    close(g(x.astype(np.float64)),
          np.log(np.exp(x.astype(np.float64)).sum(1)), rtol=1e-12)


@check
def dot_general():
    for dt, tol in ((np.float32, 1e-5), (np.float64, 1e-12)):
        a = RNG.normal(size=(7, 9)).astype(dt)
        b = RNG.normal(size=(9, 11)).astype(dt)
        close(gjit(jnp.matmul)(a, b), a @ b, rtol=tol, atol=tol)
        close(gjit(lambda a, b: a.T @ b.T)(b, a), b.T @ a.T, rtol=tol, atol=tol)
        v = RNG.normal(size=9).astype(dt)
        close(gjit(jnp.dot)(a, v), a @ v, rtol=tol, atol=tol)
        p = RNG.normal(size=(3, 5, 4)).astype(dt)
        q = RNG.normal(size=(3, 4, 6)).astype(dt)
        close(gjit(lambda p, q: jnp.einsum("bij,bjk->bik", p, q))(p, q),
              np.einsum("bij,bjk->bik", p, q), rtol=tol, atol=tol)
        close(gjit(lambda p, q: jnp.einsum("bij,bkj->ikb", p, q))(p, p),
              np.einsum("bij,bkj->ikb", p, p), rtol=tol, atol=tol)
    ai = RNG.integers(-3, 3, (4, 5)).astype(np.int64)
    close(gjit(jnp.matmul)(ai, ai.T), ai @ ai.T)


@check
def transposes():
    x = RNG.normal(size=(2, 3, 4))
    close(gjit(lambda x: jnp.transpose(x, (2, 0, 1)))(x), np.transpose(x, (2, 0, 1)))
    close(gjit(lambda x: x.T + 1.0)(x), x.T + 1.0)
    close(gjit(lambda x: x.reshape(6, 4)[None].sum(axis=(0, 2)))(x), x.reshape(6, 4).sum(1))


def _selu(x):
    return 1.0507 * jnp.where(x > 0, x, 1.67326 * (jnp.exp(x) - 1))


@check
def fused_selu_one_kernel():
    x = RNG.normal(size=1000).astype(np.float32)
    f = gjit(_selu)
    want = np.float32(1.0507) * np.where(x > 0, x, np.float32(1.67326) * (np.exp(x) - 1))
    close(f(x), want.astype(np.float32), rtol=2e-6)
    text = f.lower(x).as_text()
    assert text.count("@cuda.jit(") == 1, text
    assert "np.float64" not in text.split("def kernel")[1], "float32 kernel promoted to float64"


@check
def iota_fused_as_the_index():
    """iota joins elementwise nests as each element's index along its dimension (random
    bits: the threefry counters are never written out)."""
    from numbax import lax

    x = RNG.normal(size=(3, 5, 7)).astype(np.float32)
    f = gjit(lambda x: x * lax.broadcasted_iota(np.float32, (3, 5, 7), 1)
             + lax.broadcasted_iota(np.int32, (3, 5, 7), 2).astype(np.float32))
    i1, i2 = np.indices((3, 5, 7))[1:]
    close(f(x), (x * i1 + i2).astype(np.float32))
    assert "iota" not in "".join(line.split("#")[0] for line in
                                 f.lower(x).as_text().splitlines())
    key = numbax.random.key(3)
    u = gjit(lambda k: numbax.random.uniform(k, (1000,), dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(u(key)), np.asarray(
        numbax.random.uniform(key, (1000,), dtype=np.float32)))


@check
def grad_and_vmap_compose():
    x = RNG.normal(size=30)
    loss = lambda x: jnp.sum(_selu(x) ** 2)  # noqa: E731
    g = gjit(numbax.grad(loss))(x)
    cpu = numbax.jit(numbax.grad(loss))(x)
    close(g, np.asarray(cpu), rtol=1e-12)
    eps = 1e-6
    fd = np.array([(loss(x + eps * e) - loss(x - eps * e)) / (2 * eps) for e in np.eye(30)[:3]])
    np.testing.assert_allclose(np.asarray(g)[:3], fd, rtol=1e-5)
    a = RNG.normal(size=(4, 3, 5))
    b = RNG.normal(size=(4, 5))
    close(gjit(numbax.vmap(jnp.dot))(a, b), np.einsum("bij,bj->bi", a, b), rtol=1e-12)
    w = RNG.normal(size=(5, 3))
    xs = RNG.normal(size=(8, 5))
    ys = RNG.normal(size=(8, 3))

    def mse(w, x, y):
        return jnp.mean((jnp.tanh(x @ w) - y) ** 2)

    gw = gjit(numbax.grad(mse))(w, xs, ys)
    close(gw, np.asarray(numbax.grad(mse)(w, xs, ys)), rtol=1e-10)
    per_ex = gjit(numbax.vmap(numbax.grad(mse), in_axes=(None, 0, 0)))(w, xs, ys)
    close(per_ex, np.asarray(numbax.vmap(numbax.grad(mse), in_axes=(None, 0, 0))(w, xs, ys)),
          rtol=1e-10)


@check
def device_put_get():
    gpu = numbax.devices("gpu")[0]
    assert repr(gpu) == "CudaDevice(id=0)"
    assert numbax.devices("cuda") == [gpu]
    x = np.arange(12.0).reshape(3, 4)
    d = numbax.device_put(x, gpu)
    assert isinstance(d, GpuArray) and d.device == gpu and d.shape == (3, 4)
    assert d.dtype == np.float64 and d.ndim == 2 and d.size == 12
    np.testing.assert_array_equal(np.asarray(d), x)
    np.testing.assert_array_equal(numbax.device_get({"a": d})["a"], x)
    # jit on committed arguments runs on the GPU without a backend argument
    y = numbax.jit(lambda a: a * 2.0 + 1.0)(d)
    assert isinstance(y, GpuArray) and y.device == gpu
    np.testing.assert_array_equal(np.asarray(y), x * 2 + 1)
    # pooled device buffers: a later call must not overwrite an earlier result
    z = numbax.jit(lambda a: a * 3.0)(numbax.device_put(x + 1, gpu))
    np.testing.assert_array_equal(np.asarray(y), x * 2 + 1)
    np.testing.assert_array_equal(np.asarray(z), (x + 1) * 3)
    # eager ops stay on the GPU (eager_ops_stay_on_gpu); back to the CPU device
    np.testing.assert_array_equal(np.asarray(d + 1.0), x + 1)
    back = numbax.device_put(d, numbax.devices("cpu")[0])
    assert not isinstance(back, GpuArray)
    np.testing.assert_array_equal(np.asarray(back), x)
    s = numbax.device_put(jnp.float32(3.0), gpu)
    assert s.shape == () and float(np.asarray(s)) == 3.0
    assert d.block_until_ready() is d


@check
def mixing_devices_error():
    gpu = numbax.devices("gpu")[0]
    cpu = numbax.devices("cpu")[0]
    a = numbax.device_put(np.ones(3), gpu)
    b = numbax.device_put(np.ones(3), cpu)
    try:
        numbax.jit(lambda a, b: a + b)(a, b)
    except ValueError as e:
        assert "CudaDevice(id=0)" in str(e) and "CpuDevice(id=0)" in str(e), str(e)
    else:
        raise AssertionError("no error for arrays on two devices")


def on_host(f, *args, prim: str, operand: str):
    """f under jit(backend="gpu") where no CUDA lowering covers `prim`: the equation runs on
    the host (one RuntimeWarning naming it and its operands), the result stays on the GPU
    and equals the CPU backend's."""
    import warnings

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        got = gjit(f)(*args)
    msgs = [str(w.message) for w in seen if issubclass(w.category, RuntimeWarning)]
    assert any(prim in m and operand in m and "backend='gpu'" in m for m in msgs), msgs
    want = numbax.jit(f)(*args)
    for g, w in zip(numbax.tree.leaves(got), numbax.tree.leaves(want), strict=True):
        assert isinstance(g, GpuArray), type(g)
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12, atol=1e-12)


@check
def unsupported_primitive_runs_on_host():
    # scatter-mul on int16: numba.cuda has no 16-bit compare-and-swap
    on_host(lambda x: x.at[np.array([0, 1])].multiply(2), np.arange(4, dtype=np.int16),
            prim="scatter-mul", operand="i16[4]")
    try:
        numbax.jit(jnp.sin, backend="tpu")
    except ValueError as e:
        assert "'tpu'" in str(e)
    else:
        raise AssertionError("no error for backend='tpu'")


@check
def shifts_bitwise_bitcast():
    for dt in (np.int32, np.uint32, np.int64):
        bits = np.dtype(dt).itemsize * 8
        x = RNG.integers(-50, 50, 12).astype(dt)
        y = np.array([0, 1, 3, bits - 1, bits, bits + 5, 2, 7, 0, 1, 31, 4]).astype(dt)
        lax = numbax.lax
        for f in (lax.shift_left, lax.shift_right_logical, lax.shift_right_arithmetic):
            got = gjit(f)(x, y)
            want = numbax.jit(f)(x, y)  # the CPU backend: over-wide shifts defined the same way
            close(got, np.asarray(want))
        for f in (jnp.bitwise_and, jnp.bitwise_or, jnp.bitwise_xor, jnp.less, jnp.less_equal,
                  jnp.greater, jnp.equal, jnp.not_equal):
            close(gjit(f)(x, y), np.asarray(f(x, y)))
        close(gjit(jnp.invert)(x), ~x)
    f = np.array([1.5, -0.0, np.inf, 3e-39], np.float32)
    close(gjit(lambda a: numbax.lax.bitcast_convert_type(a, jnp.uint32) + 1)(f),
          f.view(np.uint32) + np.uint32(1))
    u = f.view(np.uint32)
    close(gjit(lambda a: numbax.lax.bitcast_convert_type(a >> 1, jnp.float32))(u),
          (u >> 1).view(np.float32))
    for src, dst in ((np.float32, np.int32), (np.int64, np.float32), (np.uint32, np.float64),
                     (np.int32, np.uint8), (np.float64, np.float32), (np.int8, np.int64)):
        v = RNG.integers(0, 100, 6).astype(src)
        close(gjit(lambda a, dst=dst: a.astype(dst))(v), v.astype(dst))


@check
def random_same_bits_as_cpu():
    from numbax import random

    key = random.PRNGKey(42)
    close(gjit(lambda k: random.bits(k, (40,)))(key), np.asarray(random.bits(key, (40,))),
          rtol=0, atol=0)
    close(gjit(random.split)(key), np.asarray(random.split(key)), rtol=0, atol=0)
    close(gjit(lambda k: random.uniform(k, (33,)))(key), np.asarray(random.uniform(key, (33,))),
          rtol=0, atol=0)
    got = gjit(lambda k: random.normal(k, (50,)))(key)
    close(got, np.asarray(random.normal(key, (50,))), rtol=1e-13, atol=1e-13)
    got = gjit(lambda k: random.normal(k, (50,), np.float32))(key)
    close(got, np.asarray(random.normal(key, (50,), np.float32)), rtol=5e-7, atol=1e-7)


@check
def erf_inv_device():
    from scipy.special import erfinv

    y = np.concatenate([np.linspace(-0.999999, 0.999999, 41), [0.0, -1.0, 1.0, 1 - 1e-12]])
    close(gjit(numbax.lax.erf_inv)(y), erfinv(y), rtol=1e-13, atol=1e-15)
    y32 = y.astype(np.float32)  # float32: Giles' polynomial alone, as XLA (4 ulp)
    close(gjit(numbax.lax.erf_inv)(y32), erfinv(y32.astype(np.float64)).astype(np.float32),
          rtol=5e-7, atol=1e-7)


@check
def fused_slices():
    """Slices read inside the kernels that use them (index maps): no copy, numpy's values."""
    x = RNG.normal(size=(9, 13)).astype(np.float32)
    pairs = lambda a: a[:, :-1:2] * a[:, 1::2] + a[1:, ::2][:, :6].sum()  # noqa: E731
    text = numbax.jit(pairs, backend="gpu").lower(x).as_text()
    assert text.count("slice_(") <= 1, text  # (the [:, :6] of a slice stays one)
    close(gjit(pairs)(x), x[:, :-1:2] * x[:, 1::2] + x[1:, ::2][:, :6].sum(), rtol=1e-5)
    u = RNG.normal(size=(7, 6, 5))
    close(gjit(lambda a: a[2:, 1::2, :-1] - a[:-2, :-1:2, 1:])(u),
          u[2:, 1::2, :-1] - u[:-2, :-1:2, 1:], rtol=1e-12)
    close(gjit(lambda a: jnp.sum(a[1:, 3::2] ** 2, axis=1))(u), np.sum(u[1:, 3::2] ** 2, 1),
          rtol=1e-12)


@check
def shape_ops_device():
    x = RNG.normal(size=(4, 5)).astype(np.float32)
    lax = numbax.lax
    close(gjit(lambda a: lax.slice(a, (1, 0), (4, 5), (2, 2)) * 2)(x), x[1:4:2, 0:5:2] * 2)
    close(gjit(lambda a: a[1:3, ::-1])(x), x[1:3, ::-1])
    close(gjit(lambda a: lax.rev(a, (0, 1)))(x), x[::-1, ::-1])
    close(gjit(lambda a, b: jnp.concatenate([a, b, a], axis=1))(x, x[:, :2]),
          np.concatenate([x, x[:, :2], x], 1))
    cfg = ((1, -1, 1), (-2, 2, 0))
    close(gjit(lambda a: lax.pad(a, np.float32(7), cfg))(x),
          np.asarray(lax.pad(x, np.float32(7), cfg)))
    close(gjit(lambda a, v: lax.pad(a, v, ((2, 0, 2), (0, 1, 0))))(x, np.float32(-1)),
          np.asarray(lax.pad(x, np.float32(-1), ((2, 0, 2), (0, 1, 0)))))
    close(gjit(lambda a: a + lax.broadcasted_iota(jnp.float32, (4, 5), 1))(x),
          x + np.arange(5, dtype=np.float32))
    close(gjit(lambda: jnp.arange(7, dtype=jnp.int32))(), np.arange(7, dtype=np.int32))
    for s in (0, 2, 9, -3):
        close(gjit(lambda a, s: lax.dynamic_slice(a, (s, 1), (2, 3)))(x, s),
              np.asarray(lax.dynamic_slice(x, (s, 1), (2, 3))))
        u = np.ones((2, 2), np.float32)
        close(gjit(lambda a, u, s: lax.dynamic_update_slice(a, u, (1, s)))(x, u, s),
              np.asarray(lax.dynamic_update_slice(x, u, (1, s))))


@check
def gather_scatter_device():
    x = RNG.normal(size=(6, 3))
    idx = np.array([0, 5, 2, 2, 7, -1], np.int32)
    from numbax._src.lax import indexing as lax  # the element gather/scatter
    for mode in ("clip", "fill"):
        f = lambda a, i, mode=mode: lax.gather(a, i[:, None], (0,), mode=mode)  # noqa: E731
        close(gjit(f)(x, idx), np.asarray(f(x, idx)))
    close(gjit(lambda a, i: a[i])(x, idx[:4]), x[idx[:4]])
    close(gjit(lambda a, i: a[:, i[2:4]])(x, idx), x[:, idx[2:4]])
    upd = RNG.normal(size=(6, 3))
    for mode in ("clip", "drop"):
        for fn in (lax.scatter_add, lax.scatter):
            f = lambda a, i, u, fn=fn, mode=mode: fn(a, i[:, None], u, (0,), mode=mode)  # noqa
            # scatter (set) is defined for unique targets only (GPU threads race otherwise):
            # after clipping or dropping, these are unique
            i2 = np.array([0, 5, 1, 3, 7, -1] if mode == "drop" else [0, 5, 1, 3, 4, 2],
                          np.int32)
            ii = idx if fn is lax.scatter_add else i2
            close(gjit(f)(x, ii, upd), np.asarray(f(x, ii, upd)), rtol=1e-12)
    close(gjit(lambda a, i: a.at[i].add(1.0))(x, idx[:4]),
          np.asarray(jnp.asarray(x).at[idx[:4]].add(1.0)), rtol=1e-12)
    g = gjit(numbax.grad(lambda a, i: jnp.sum(jnp.sin(a[i]))))(x, idx[:4])
    close(g, np.asarray(numbax.grad(lambda a, i: jnp.sum(jnp.sin(a[i])))(x, idx[:4])),
          rtol=1e-12)
    xi = RNG.integers(0, 9, (4, 3)).astype(np.int32)
    close(gjit(lambda a, i: a.at[i].add(2))(xi, np.array([1, 1, 3], np.int32)),
          np.asarray(jnp.asarray(xi).at[np.array([1, 1, 3])].add(2)))


@check
def cumulative_and_arg_device():
    x = RNG.normal(size=(3, 5, 4))
    x[1, 2, 3] = np.nan
    lax = numbax.lax
    for axis in (0, 1, 2):
        for rev in (False, True):
            for fn in (lax.cumsum, lax.cumprod, lax.cummax, lax.cummin):
                f = lambda a, fn=fn, axis=axis, rev=rev: fn(a, axis=axis, reverse=rev)  # noqa
                close(gjit(f)(x), np.asarray(f(x)), rtol=1e-12)
        for fn in (jnp.argmax, jnp.argmin):
            f = lambda a, fn=fn, axis=axis: fn(a, axis=axis)  # noqa: E731
            close(gjit(f)(x), np.asarray(f(x)))
    i = RNG.integers(-9, 9, (4, 6)).astype(np.int32)
    close(gjit(lambda a: jnp.cumsum(a, axis=1))(i), np.asarray(jnp.cumsum(i, axis=1)))
    np.testing.assert_array_equal(np.asarray(jnp.cumsum(i, axis=1)), np.cumsum(i, 1))
    close(gjit(lambda a: jnp.argmax(a, axis=0))(i), np.argmax(i, axis=0))


@check
def control_flow_host_driven():
    lax = numbax.lax

    def collatz(n):
        return lax.while_loop(lambda c: c[0] != 1, lambda c: (
            jnp.where(c[0] % 2 == 0, c[0] // 2, 3 * c[0] + 1), c[1] + 1), (n, 0))

    got = gjit(collatz)(np.int32(27))
    assert int(np.asarray(got[0])) == 1 and int(np.asarray(got[1])) == 111, got
    w = RNG.normal(size=(3,))

    def cumulate(w, xs):
        def step(c, x):
            c = jnp.tanh(c * w + x)
            return c, c.sum()
        return lax.scan(step, jnp.zeros(3), xs)

    xs = RNG.normal(size=(6, 3))
    c_ref, y_ref = cumulate(w, xs)
    c, ys = gjit(cumulate)(w, xs)
    close(c, np.asarray(c_ref), rtol=1e-12)
    close(ys, np.asarray(y_ref), rtol=1e-12)
    rev = gjit(lambda xs: lax.scan(lambda c, x: (c + x, c * 2), 0.0, xs, reverse=True))
    c2, y2 = rev(xs[:, 0])
    c2r, y2r = lax.scan(lambda c, x: (c + x, c * 2), 0.0, xs[:, 0], reverse=True)
    close(c2, np.asarray(c2r), rtol=1e-12)
    close(y2, np.asarray(y2r), rtol=1e-12)
    f = gjit(lambda p, x: lax.cond(p > 0, lambda x: jnp.sin(x) + 1, lambda x: x * 2, x))
    x = RNG.normal(size=4)
    close(f(1.0, x), np.sin(x) + 1, rtol=1e-12)
    close(f(-1.0, x), x * 2, rtol=1e-12)
    fori = gjit(lambda x: lax.fori_loop(0, 5, lambda i, a: a * 2 + i, x))
    close(fori(x), np.asarray(lax.fori_loop(0, 5, lambda i, a: a * 2 + i, x)), rtol=1e-12)
    g = gjit(numbax.grad(lambda w: jnp.sum(cumulate(w, xs)[1])))(w)
    close(g, np.asarray(numbax.grad(lambda w: jnp.sum(cumulate(w, xs)[1]))(w)), rtol=1e-10)


@check
def sort_device():
    lax = numbax.lax
    x = RNG.integers(0, 5, (3, 37)).astype(np.float64)
    x[0, 3] = x[1, 7] = x[2, 0] = np.nan
    x[1, 8] = -0.0
    for dt in (np.float32, np.float64, np.int32, np.int64):
        xd = x.astype(dt) if dt in (np.float32, np.float64) else np.nan_to_num(x).astype(dt)
        for axis in (0, 1):
            close(gjit(lambda a, axis=axis: jnp.sort(a, axis=axis))(xd),
                  np.sort(xd, axis=axis), rtol=0)
    # multi-operand, two keys, stable: the third operand records the original positions
    k0 = RNG.integers(0, 3, (2, 50)).astype(np.float32)
    k0[0, 5] = np.nan
    k1 = RNG.integers(0, 4, (2, 50)).astype(np.int32)
    pos = np.broadcast_to(np.arange(50), (2, 50)).astype(np.int64)
    f = gjit(lambda a, b, c: lax.sort((a, b, c), dimension=1, num_keys=2))
    cpu = lax.sort((k0, k1, pos), dimension=1, num_keys=2)
    for got, want in zip(f(k0, k1, pos), cpu, strict=True):
        close(got, np.asarray(want), rtol=0)
    one = gjit(lambda a, b: lax.sort((a, b), dimension=0, num_keys=1))
    cpu = lax.sort((k0[0], pos[0]), dimension=0, num_keys=1)
    for got, want in zip(one(k0[0], pos[0]), cpu, strict=True):
        close(got, np.asarray(want), rtol=0)
    close(gjit(jnp.sort)(np.ones((2, 0))), np.ones((2, 0)), rtol=0)
    close(gjit(jnp.argsort)(x[0]), np.asarray(jnp.argsort(x[0])), rtol=0)


@check
def scatter_mul_min_max_device():
    idx = np.array([[0], [2], [0], [4], [2], [0]])
    for dt in (np.float32, np.float64, np.int32, np.int64):
        x = RNG.integers(-3, 4, (5, 3)).astype(dt)
        upd = RNG.integers(-3, 4, (6, 3)).astype(dt)
        if dt in (np.float32, np.float64):
            x[1, 0] = np.nan
            upd[2, 1] = np.nan
        for method in ("min", "max") + (("multiply",) if dt in (np.int32, np.int64) else ()):
            def f(a, u, method=method):
                return getattr(a.at[idx[:, 0]], method)(u)
            want = getattr(np, {"min": "minimum", "max": "maximum"}.get(method, method))
            ref = x.copy()
            want.at(ref, idx[:, 0], upd)
            close(gjit(f)(x, upd), ref, rtol=0)
            close(gjit(f)(x, upd), np.asarray(f(numbax.numpy.asarray(x), upd)), rtol=0)


@check
def eager_ops_stay_on_gpu():
    from numbax._src import dispatch

    gpu = numbax.devices("gpu")[0]
    x = RNG.uniform(-2, 2, (4, 6))
    d = numbax.device_put(x, gpu)
    cpu = jnp.sin(jnp.asarray(x)) * 2.0 + 1.0  # the CPU eager path is unchanged
    assert not isinstance(cpu, GpuArray)
    before = dispatch.gpu_cache_size()
    for _ in range(2):  # the second round reuses the compiled executables
        y = jnp.sin(d) * 2.0 + 1.0
        close(y, np.asarray(cpu), rtol=1e-12)
        assert y.device == gpu
    assert dispatch.gpu_cache_size() - before == 3, dispatch.gpu_cache_size() - before
    close(jnp.sum(d, axis=1), x.sum(axis=1), rtol=1e-12)
    close(d @ d.T, x @ x.T, rtol=1e-12)
    close(d[1:3, ::2], x[1:3, ::2], rtol=0)
    close(jnp.sort(d, axis=1), np.sort(x, axis=1), rtol=0)
    close(d.reshape(24) + x.reshape(24), 2 * x.reshape(24), rtol=0)  # mixed with numpy
    vals, idx = numbax.lax.sort((d[0], jnp.arange(6)), num_keys=1)  # multiple results
    close(vals, np.sort(x[0]), rtol=0)
    close(idx, np.argsort(x[0], kind="stable"), rtol=0)
    z = d * (1 + 2j)  # complex dtypes run on the GPU too (cuda_complex.py)
    assert isinstance(z, GpuArray), type(z)
    np.testing.assert_allclose(np.asarray(z), x * (1 + 2j), rtol=1e-12)
    # no CUDA lowering (complex max: no order on complex): computed on the host, kept on the GPU
    m = jnp.maximum(z, z * 0.5)
    assert isinstance(m, GpuArray), type(m)
    np.testing.assert_allclose(np.asarray(m), np.maximum(x * (1 + 2j), x * (0.5 + 1j)),
                               rtol=1e-12)
    # bad input still raises the CPU path's error
    try:
        d + np.ones(5)
    except (TypeError, ValueError) as e:
        assert "(4, 6)" in str(e) and "(5,)" in str(e), str(e)
    else:
        raise AssertionError("no error for mismatched shapes")
    g = numbax.grad(lambda w: jnp.sum(jnp.tanh(w) ** 2))(d)
    np.testing.assert_allclose(np.asarray(g), 2 * np.tanh(x) / np.cosh(x) ** 2, rtol=1e-10)


# Checks in other files register into this module's CHECKS (import them after the helpers
# above exist; run as a script, main() below reads the importable module's CHECKS).
from tests.compiler.cuda import (  # noqa: E402, F401
    sim_checks_complex,
    sim_checks_conv,
    sim_checks_cublas,
    sim_checks_devices,
    sim_checks_fft,
    sim_checks_graphs,
    sim_checks_linalg,
    sim_checks_matmul,
    sim_checks_reduce,
    sim_checks_rows,
    sim_checks_sort,
    sim_checks_special,
    sim_checks_windows,
)


def main(names):
    import time

    sim_support.full_precision_products()
    for name in names or list(CHECKS):
        t = time.perf_counter()
        try:
            CHECKS[name]()
            result = {"check": name, "ok": True}
        except Exception:  # noqa: BLE001 - reported to the parent process
            result = {"check": name, "ok": False, "error": traceback.format_exc()[-3000:]}
        result["seconds"] = round(time.perf_counter() - t, 2)
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    from tests.compiler.cuda import sim_checks as importable  # where every check file registers

    importable.main(sys.argv[1:])
