"""bfloat16 (ml_dtypes' dtype, as in JAX): numbax computes it in float32 and rounds every
bfloat16 result, eagerly (dispatch.py) and under jit on the CPU (compiler/narrow_floats.py).
Checked against numpy's float32 results rounded by ml_dtypes (bit for bit where float32 is
correctly rounded), eager against compiled on every bfloat16 value, and against JAX's recorded
outputs (tests/data/bfloat16_jax_reference.json, from tests/data/bfloat16_programs.py)."""
from __future__ import annotations

import json
import pathlib
import re
import warnings
from types import SimpleNamespace

import ml_dtypes
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax._src.compiler.cpu.runtime import scalars
from tests.data.bfloat16_programs import PROGRAMS

BF16 = np.dtype(ml_dtypes.bfloat16)
ALL = np.arange(65536, dtype=np.uint16).view(BF16)  # every bfloat16, nan and inf too
FINITE = ALL[np.isfinite(ALL.astype(np.float32))]
REFERENCE = json.loads(
    (pathlib.Path(__file__).parent / "data" / "bfloat16_jax_reference.json").read_text())


def _same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype)
    with warnings.catch_warnings():  # ml_dtypes warns casting NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        wide_got, wide_want = got.astype(np.float64), want.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(wide_got), np.isnan(wide_want))
    keep = ~np.isnan(wide_want)
    np.testing.assert_array_equal(got[keep].view(np.uint8), want[keep].view(np.uint8))


def _eager_and_jit(fn, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("error", RuntimeWarning)  # no equation may fall back to numpy
        return fn(*[jnp.asarray(a) for a in args]), numbax.jit(fn)(*args)


def _rounded(values):
    """float32 values rounded to bfloat16 by ml_dtypes: the truth for one correctly rounded
    float32 operation."""
    with np.errstate(all="ignore"):
        return np.asarray(values, np.float32).astype(BF16)


def test_dtype_surface():
    x = jnp.bfloat16(1.5)
    assert x.dtype == BF16 and float(x) == 1.5 and jnp.bfloat16 == ml_dtypes.bfloat16
    assert numbax.dtypes.bfloat16 is ml_dtypes.bfloat16
    info = jnp.finfo(jnp.bfloat16)
    assert info.bits == 16 and info.eps == 2.0 ** -7 and info.nmant == 7
    assert jnp.issubdtype(jnp.bfloat16, jnp.floating) and jnp.issubdtype(BF16, jnp.inexact)
    assert not jnp.issubdtype(jnp.bfloat16, jnp.integer)
    assert jnp.isdtype(jnp.bfloat16, "real floating") and not jnp.isdtype(BF16, "integral")
    a = jnp.ones((2, 3), jnp.bfloat16)
    assert np.asarray(a).dtype == BF16 and "bfloat16" in repr(a)
    assert jnp.zeros_like(a).dtype == BF16 and jnp.full((2,), 3.3, BF16).dtype == BF16
    assert numbax.numpy.dtype("bfloat16") == BF16


def test_promotion_puts_bfloat16_where_numpy_puts_float16():
    """numbax promotes by NumPy 2's rules; bfloat16 takes float16's place in them, so it
    agrees with JAX for bool, 8-bit integers, float32 and weak scalars (the recorded
    `promotion` program) and widens past 8-bit integers where JAX keeps bfloat16."""
    for other in (np.int16, np.int32, np.uint16, np.int64, np.float32, np.float64, np.bool_,
                  np.int8, np.uint8, np.complex64):
        want = jnp.promote_types(jnp.float16, other)
        assert jnp.promote_types(jnp.bfloat16, other) == (BF16 if want == np.float16 else want)
    assert jnp.promote_types(jnp.bfloat16, jnp.float16) == np.float32
    assert jnp.result_type(jnp.ones(2, BF16), 2.5, 3) == BF16


def test_rounding_helper_is_ml_dtypes_cast():
    rng = np.random.default_rng(1)
    bits = rng.integers(0, 2**32, 500_000, dtype=np.uint64).astype(np.uint32)
    ties = (rng.integers(0, 2**16, 20_000, dtype=np.uint64).astype(np.uint32) << 16) | 0x8000
    edges = np.array([np.inf, -np.inf, 3.39e38, 3.3961775e38, -3.3961775e38, 3.4028235e38,
                      1e-40, -1e-45, 0.0, -0.0, 1 + 2**-8, 1 + 3 * 2**-8], np.float32)
    x = np.concatenate([bits.view(np.float32), ties.view(np.float32), edges])
    got = scalars.round_to_bfloat16_array(x)
    with np.errstate(all="ignore"):
        want = x.astype(BF16).astype(np.float32)
    _same_bits(got, want)
    # the upper half of every result, NaNs included, is ml_dtypes' bfloat16 bits: compiled
    # programs take their bfloat16 outputs from it
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # ml_dtypes warns casting NaN
        want_bits = x.astype(BF16).view(np.uint16)
    np.testing.assert_array_equal((got.view(np.uint32) >> 16).astype(np.uint16), want_bits)


@pytest.mark.parametrize("fn,kind", [
    (jnp.negative, "one"), (jnp.abs, "one"), (jnp.sqrt, "one"), (jnp.floor, "one"),
    (lambda a: a * 3 + 1, "chain"), (lambda a: a / 7, "one"), (jnp.square, "one"),
    (jnp.exp, "approx"), (jnp.tanh, "approx"), (jnp.log1p, "approx"),
    (numbax.nn.sigmoid, "approx"), (lambda a: a.astype(np.float32) * 2, "one"),
    (lambda a: a.astype(np.int32), "one"), (lambda a: (a.astype(np.float32) / 7).astype(BF16),
                                            "one"),
    (lambda a: a.astype(np.float16), "one"),
], ids=["neg", "abs", "sqrt", "floor", "affine", "div", "square", "exp", "tanh", "log1p",
        "sigmoid", "to-f32", "to-i32", "from-f32", "to-f16"])
def test_every_bfloat16_value(fn, kind):
    """"one": a single correctly rounded float32 operation, so eager is numpy's float32 result
    rounded and compiled is eager bit for bit; "chain": several, compiled is eager bit for
    bit; "approx": float32 exp/tanh/log1p, where numpy's and the compiled ones may differ by
    an ulp (a bfloat16 ulp after rounding) and numpy's flushes some subnormal results."""
    eager, compiled = _eager_and_jit(fn, ALL)
    if kind == "approx":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            np.testing.assert_allclose(np.asarray(compiled, np.float32),
                                       np.asarray(eager, np.float32), rtol=2 ** -7, atol=1e-37)
        return
    _same_bits(compiled, eager)
    if kind == "one":
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = np.asarray(fn(jnp.asarray(ALL.astype(np.float32))))
        want = _rounded(want) if np.asarray(eager).dtype == BF16 else want.astype(
            np.asarray(eager).dtype)
        _same_bits(eager, want)


@pytest.mark.parametrize("fn", [
    jnp.add, jnp.subtract, jnp.multiply, jnp.true_divide, jnp.maximum, jnp.less,
    lambda x, y: jnp.where(x > y, x, y * 2)], ids=["add", "sub", "mul", "div", "max", "less",
                                                   "where"])
def test_random_bfloat16_pairs(fn):
    rng = np.random.default_rng(2)
    a, b = (FINITE[rng.integers(0, len(FINITE), 50_000)] for _ in range(2))
    eager, compiled = _eager_and_jit(fn, a, b)
    _same_bits(compiled, eager)
    with np.errstate(all="ignore"):
        want = np.asarray(fn(jnp.asarray(a.astype(np.float32)), jnp.asarray(b.astype(
            np.float32))))
    _same_bits(eager, _rounded(want) if want.dtype == np.float32 else want)


@pytest.mark.parametrize("fn", [
    lambda v: jnp.max(v, axis=1), lambda v: jnp.sum(v, axis=1),
    lambda v: lax.fori_loop(0, 3, lambda i, c: c * jnp.bfloat16(1.5) - v, v),
    lambda v: lax.scan(lambda c, r: (c + r, c * r), v[0], v)[1],
    lambda v: lax.cond(v[0, 0] > 0, lambda: v * 2, lambda: v / 3),
    lambda v: lax.while_loop(lambda c: c[0] < 3,
                             lambda c: (c[0] + 1, c[1] * jnp.bfloat16(0.7) + 1), (0, v))[1],
    lambda v: numbax.nn.softmax(v, axis=1),
], ids=["max", "sum", "fori", "scan", "cond", "while", "softmax"])
def test_reductions_products_and_control_flow(fn):
    x = FINITE[np.random.default_rng(3).integers(0, len(FINITE), 400)].reshape(20, 20)
    x = (x.astype(np.float32) % 8).astype(BF16)  # keep products and loops finite
    eager, compiled = _eager_and_jit(fn, x)
    _same_bits(compiled, eager)


def test_matmul_is_the_rounded_float32_product():
    rng = np.random.default_rng(4)
    a = rng.normal(size=(64, 48)).astype(BF16)
    b = rng.normal(size=(48, 32)).astype(BF16)
    exact = a.astype(np.float64) @ b.astype(np.float64)  # float32 sums are nearly exact here
    got = numbax.jit(jnp.matmul)(a, b)
    assert got.dtype == BF16
    np.testing.assert_allclose(np.asarray(got, np.float64), exact, rtol=2 ** -8, atol=1e-6)
    wide = numbax.jit(lambda x, y: jnp.dot(x, y, preferred_element_type=jnp.float32))(a, b)
    assert wide.dtype == np.float32
    np.testing.assert_allclose(np.asarray(wide), exact, rtol=1e-5, atol=1e-5)


def test_bitcasts_keep_the_bits():
    for int_type in (np.uint16, np.int16):
        as_int = numbax.jit(lambda v, t=int_type: lax.bitcast_convert_type(v, t))(ALL)
        np.testing.assert_array_equal(np.asarray(as_int), ALL.view(int_type))
        back = numbax.jit(lambda u: lax.bitcast_convert_type(u, jnp.bfloat16))(ALL.view(
            int_type))
        np.testing.assert_array_equal(np.asarray(back).view(np.uint16), ALL.view(np.uint16))


def test_grad_keeps_bfloat16():
    x = jnp.asarray(np.random.default_rng(5).uniform(-2, 2, 64).astype(BF16))
    g = numbax.grad(lambda v: jnp.sum(v * v))(x)
    assert g.dtype == BF16
    np.testing.assert_array_equal(np.asarray(g, np.float32), 2 * np.asarray(x, np.float32))
    g_sin = numbax.jit(numbax.grad(lambda v: jnp.sum(jnp.sin(v))))(x)
    np.testing.assert_allclose(np.asarray(g_sin, np.float32), np.cos(np.asarray(x, np.float64)),
                               rtol=2 ** -7, atol=2 ** -9)


def test_library_functions_without_numpy_bfloat16_loops():
    """scipy has no bfloat16: eager calls compute in float32 and round, as jit does."""
    x = jnp.asarray(np.random.default_rng(6).uniform(0.5, 6, 128).astype(BF16))
    for fn in (numbax.scipy.special.gammaln, numbax.scipy.special.erf, numbax.nn.gelu):
        eager, compiled = fn(x), numbax.jit(fn)(x)
        assert eager.dtype == BF16 and compiled.dtype == BF16
        want = _rounded(np.asarray(fn(x.astype(np.float32))))
        np.testing.assert_allclose(np.asarray(eager, np.float32), want.astype(np.float32),
                                   rtol=2 ** -7)
        _same_bits(compiled, eager)


def test_arithmetic_compiles_into_kernels():
    """A chain of bfloat16 arithmetic is float32 kernels with a rounding after each step: no
    equation runs numpy, so no warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        fn = numbax.jit(lambda a: jnp.tanh(a * 2 + 1) / 3)
        text = fn.lower(ALL[:8]).as_text()
        fn(ALL[:8])
    # each element loop (the serial variant's; the prange variant and the native pool's task
    # call it on chunks) rounds after each of the four steps
    loops = len(re.findall(r"\n    for i0 in ", text))
    assert loops and text.count("sc.round_to_bfloat16(") == 4 * loops


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_matches_jax_recorded(name):
    """JAX's outputs. Random draws and dtypes are exact; values within bfloat16's rounding
    (XLA skips the rounding of a bfloat16 product converted straight to float32; numbax
    rounds every bfloat16 result, as eager execution does)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        got = PROGRAMS[name](SimpleNamespace(jax=numbax, jnp=jnp))
    _close(got, REFERENCE[name], name)


def _close(got, want, where):
    if isinstance(want, dict):
        assert sorted(got) == sorted(want), where
        for k in want:
            _close(got[k], want[k], f"{where}.{k}")
    elif isinstance(want, (str, int)) or where.startswith("random_draws") or (
            isinstance(want, list) and isinstance(want[0], str)):
        assert got == want, where
    else:
        tol = {"loss": 1e-3, "grad_w2": 3e-2, "w1": 3e-2}.get(where.rsplit(".", 1)[-1], 2 ** -7)
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol / 16, err_msg=where)


def test_gpu_rewrite_keeps_bfloat16_products_for_the_library():
    """CUDA's rewrite (narrow_floats.Mode((bfloat16,), narrow_products=True), used where
    cuBLAS is) leaves products on bfloat16 operands with a bfloat16 result, which the library
    rounds from its float32 sums, and computes the rest in float32: the same values as the
    program itself."""
    from numbax._src import core
    from numbax._src.compiler import narrow_floats
    from numbax._src.lax import dot as ld

    rng = np.random.default_rng(8)
    a, b = (rng.normal(size=s).astype(BF16) for s in ((6, 5), (5, 4)))
    closed = numbax.make_jaxpr(lambda x, y: jnp.tanh(x @ y) * 2)(a, b)
    mode = narrow_floats.Mode((BF16,), narrow_products=True)
    wide = narrow_floats.widen(closed.jaxpr, mode)
    dots = [e for e in wide.eqns if e.primitive is ld.dot_general_p]
    assert len(dots) == 1
    assert [v.aval.dtype for v in (*dots[0].invars, *dots[0].outvars)] == [BF16] * 3
    assert all(v.aval.dtype != BF16 for e in wide.eqns if e.primitive is not ld.dot_general_p
               for v in e.invars if e.primitive.name != "bitcast_convert_type")
    got = core.eval_jaxpr(wide, closed.consts, a, b)[0]
    want = core.eval_jaxpr(closed.jaxpr, closed.consts, a, b)[0]
    _same_bits(np.asarray(got), np.asarray(want))


def test_nextafter_steps_by_bfloat16s_ulp():
    """nextafter's step is bfloat16's own (not float32's, which rounding back would undo):
    it runs ml_dtypes' loop, eagerly and between compiled kernels."""
    rng = np.random.default_rng(9)
    x = np.concatenate([FINITE[rng.integers(0, len(FINITE), 2000)], np.zeros(4, BF16)])
    y = np.concatenate([FINITE[rng.integers(0, len(FINITE), 2000)],
                        np.array([1, -1, 0, 2], BF16)])
    want = np.nextafter(x, y)
    _same_bits(jnp.nextafter(x, y), want)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the eager step between kernels
        _same_bits(numbax.jit(lambda a, b: jnp.nextafter(a * 1, b))(x, y), want)


@pytest.mark.parametrize("narrow_products", [False, True])
def test_values_cross_kernels_as_their_bits(narrow_products):
    """A bfloat16 value made before a product and read after it is stored as its 16 bits and
    widened by the kernel reading it (remat.rematerialize), on the CPU and under the GPU's
    rewrite; the results are the eager ones."""
    from numbax._src.compiler import fusion, narrow_floats, pipeline
    from numbax._src.compiler.api import get_backend
    from numbax._src.compiler.ir import LoopNest

    def f(x, w):
        y = jnp.tanh(x)
        d = 1 - y * y  # made beside y, read only after the product
        return (y @ w) * d

    rng = np.random.default_rng(11)
    x, w = (rng.normal(size=s).astype(BF16) for s in ((64, 32), (32, 32)))
    jaxpr = pipeline.prepare(numbax.make_jaxpr(f)(x, w).jaxpr)
    jaxpr = narrow_floats.widen(jaxpr, narrow_floats.Mode((BF16,), narrow_products))
    nodes = fusion.partition(jaxpr, get_backend("cpu").fusible)
    first = next(n for n in nodes if isinstance(n, LoopNest))
    crossing = sorted(v.aval.dtype.name for v in first.outputs if v.aval.shape == (64, 32))
    # d crosses as bits; y too where cuBLAS reads bfloat16, as float32 for the CPU's product
    assert crossing == (["uint16", "uint16"] if narrow_products else ["float32", "uint16"])
    eager = f(jnp.asarray(x), jnp.asarray(w))
    _same_bits(numbax.jit(f)(x, w), eager)


def test_index_maps_of_inputs_stay_on_their_bits():
    """A squeeze, slice or transpose of a bfloat16 input, read by a product or by float32
    work, is composed onto the input's uint16 bits: compose_maps and sink_transposes do not
    move a map onto bfloat16 values, whose maps would run eagerly between kernels (a pmap's
    per-device squeeze did, with a RuntimeWarning each call). The results are eager's."""
    rng = np.random.default_rng(21)
    x = rng.normal(size=(1, 64, 96)).astype(BF16)
    w = rng.normal(size=(96, 48)).astype(BF16)
    products = [lambda d: (jnp.squeeze(d, 0) @ w).reshape(1, 64, 48),
                lambda d: jnp.squeeze(d, 0).T @ jnp.asarray(w[:64])]
    elementwise = [lambda d: jnp.squeeze(d, 0)[::2] * 2,
                   lambda d: jnp.transpose(d, (0, 2, 1)) * 3 + 1]
    for f in products + elementwise:
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            got = np.asarray(numbax.jit(f)(x))
        want = np.asarray(f(jnp.asarray(x)))
        if f in elementwise:
            _same_bits(got, want)
        else:  # (sums in another order on another GEMM: within bfloat16's rounding)
            np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32),
                                       rtol=2 ** -7, atol=2 ** -7 * float(np.abs(
                                           want.astype(np.float32)).max()))
