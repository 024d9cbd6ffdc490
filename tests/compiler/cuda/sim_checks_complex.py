"""Checks of complex64/complex128 on the CUDA backend (compiler/cuda_complex.py): fused complex
arithmetic and functions, reductions, dot_general, shape/indexing kernels, grad through complex
intermediates, and the refusals. The truth is numpy and the CPU backend's jit."""
from __future__ import annotations

import warnings

import numpy as np

import numbax
import numbax.numpy as jnp
from tests.compiler.cuda.sim_checks import RNG, check, close, gjit, on_host

DTYPES = (np.complex64, np.complex128)
TOL = {np.dtype(np.complex64): (2e-5, 1e-6), np.dtype(np.float32): (2e-5, 1e-6),
       np.dtype(np.complex128): (1e-12, 1e-13), np.dtype(np.float64): (1e-12, 1e-13),
       np.dtype(np.bool_): (0, 0)}


def _c(shape, dt, scale=1.0):
    z = RNG.uniform(-scale, scale, shape) + 1j * RNG.uniform(-scale, scale, shape)
    return z.astype(dt)


def _same(f, *args, want=None):
    """gjit(f) against the CPU jit (and `want`, numpy's value, where given)."""
    got = gjit(f)(*args)
    cpu = np.asarray(numbax.jit(f)(*args))
    rtol, atol = TOL[np.dtype(cpu.dtype)]
    close(got, cpu, rtol=rtol, atol=atol)
    if want is not None:
        want = np.asarray(want)
        np.testing.assert_allclose(np.asarray(got), want, rtol=max(rtol, 1e-5) if
                                   want.dtype in (np.complex64, np.float32) else rtol,
                                   atol=max(atol, 1e-6))
    return got


UNARY = {
    "exp": (jnp.exp, np.exp), "log": (jnp.log, np.log), "log1p": (jnp.log1p, np.log1p),
    "expm1": (jnp.expm1, np.expm1), "sqrt": (jnp.sqrt, np.sqrt), "sin": (jnp.sin, np.sin),
    "cos": (jnp.cos, np.cos), "tan": (jnp.tan, np.tan), "sinh": (jnp.sinh, np.sinh),
    "cosh": (jnp.cosh, np.cosh), "tanh": (jnp.tanh, np.tanh), "arcsin": (jnp.arcsin, np.arcsin),
    "arccos": (jnp.arccos, np.arccos), "arctan": (jnp.arctan, np.arctan),
    "arcsinh": (jnp.arcsinh, np.arcsinh), "arccosh": (jnp.arccosh, np.arccosh),
    "arctanh": (jnp.arctanh, np.arctanh), "sign": (jnp.sign, np.sign), "abs": (jnp.abs, np.abs),
    "neg": (jnp.negative, np.negative), "square": (jnp.square, np.square),
    "conj": (jnp.conj, np.conj), "real": (jnp.real, np.real), "imag": (jnp.imag, np.imag),
    "rsqrt": (numbax.lax.rsqrt, lambda z: 1 / np.sqrt(z)),
    "isfinite": (jnp.isfinite, np.isfinite),
    "cube": (lambda z: z ** 3, lambda z: z ** 3), "pow5": (lambda z: z ** 5, lambda z: z ** 5),
    "recip2": (lambda z: z ** -2, lambda z: z ** -2),
    "pow2.5": (lambda z: z ** 2.5, lambda z: z ** 2.5),
    "exp2": (jnp.exp2, np.exp2),
}


@check
def complex_unary():
    for dt in DTYPES:
        z = _c(24, dt)
        z[0] = 0
        for name, (f, ref) in UNARY.items():
            arg = z[1:] if name in ("log", "rsqrt", "recip2") else z
            with np.errstate(all="ignore"):
                want = ref(arg)
            try:
                _same(f, arg, want=want)
            except AssertionError as e:
                raise AssertionError(f"{name} {np.dtype(dt).name}: {e}") from None


@check
def complex_binary():
    for dt in DTYPES:
        z, w = _c(20, dt), _c(20, dt)
        x = RNG.normal(size=20).astype(np.float32 if dt == np.complex64 else np.float64)
        _same(lambda a, b: a + b, z, w, want=z + w)
        _same(lambda a, b: a - b, z, w, want=z - w)
        _same(lambda a, b: a * b, z, w, want=z * w)
        _same(lambda a, b: a / b, z, w, want=z / w)
        _same(lambda a, b: a ** b, z, w, want=z ** w)
        half = np.where(RNG.random(20) < 0.5, z, w)
        _same(lambda a, b: a == b, z, half, want=z == half)
        _same(lambda a, b: a != b, z, half, want=z != half)
        _same(lambda a, b: numbax.lax.complex(a, b), x, x[::-1].copy(), want=x + 1j * x[::-1])
        _same(lambda a, b, c: jnp.where(c > 0, a, b), z, w, x, want=np.where(x > 0, z, w))
        _same(lambda a, dt=dt: a.astype(dt) * (1 + 2j), x)
        _same(lambda a: (a * 2).astype(bool), np.where(x > 0, z, 0).astype(dt))
        _same(lambda a, x=x: jnp.real(a * (2 - 1j)).astype(x.dtype) + x, z)
        _same(lambda a, b: a[:, None] * b[None, :] + 1j, z[:5], w[:4],
              want=z[:5, None] * w[None, :4] + 1j)
        # a zero divisor gives numpy's inf/nan (the CPU jit raises ZeroDivisionError there)
        num, den = np.array([1 + 1j, 2j, 0j], dt), np.zeros(3, dt)
        with np.errstate(all="ignore"):
            want = num / den
        got = np.asarray(gjit(lambda a, b: a / b)(num, den))
        np.testing.assert_array_equal(np.isnan(got.real), np.isnan(want.real))
        np.testing.assert_array_equal(np.isnan(got.imag), np.isnan(want.imag))
        assert np.isinf(got[0].real) and np.isinf(got[1].imag), got


@check
def complex_fused_one_kernel():
    x = RNG.uniform(-2, 2, 64)
    z = _c(64, np.complex128)
    f = gjit(lambda x, z: jnp.abs(jnp.exp(1j * x) * z))
    close(f(x, z), np.abs(np.exp(1j * x) * z), rtol=1e-12, atol=1e-13)
    text = f.lower(x, z).as_text()
    assert text.count("@cuda.jit") == 1, text  # one loop nest, no library call
    _same(lambda x, z: jnp.sum(jnp.exp(1j * x) * z), x, z, want=np.sum(np.exp(1j * x) * z))


@check
def complex_reductions():
    for dt in DTYPES:
        z = _c((6, 40), dt)
        _same(jnp.sum, z, want=z.sum())
        _same(lambda a: jnp.sum(a, axis=1), z, want=z.sum(axis=1))
        _same(lambda a: jnp.sum(a, axis=0), z, want=z.sum(axis=0))
        p = (1 + 0.05 * _c((6, 40), dt)).astype(dt)
        _same(jnp.prod, p, want=p.prod())
        _same(lambda a: jnp.prod(a, axis=1), p, want=p.prod(axis=1))
        _same(lambda a: jnp.mean(a * jnp.conj(a), axis=1), z,
              want=(z * z.conj()).mean(axis=1))


@check
def complex_dot_general():
    for dt in DTYPES:
        a, b = _c((5, 7), dt), _c((7, 3), dt)
        _same(jnp.matmul, a, b, want=a @ b)
        _same(lambda a, b: a.T @ b, a.T.copy(), b, want=a @ b)
        ba, bb = _c((2, 4, 6), dt), _c((2, 6, 3), dt)
        _same(jnp.matmul, ba, bb, want=ba @ bb)
        r = RNG.normal(size=(7, 3)).astype(np.float32 if dt == np.complex64 else np.float64)
        _same(jnp.matmul, a, r, want=a @ r)


@check
def complex_shape_ops():
    for dt in DTYPES:
        z = _c((4, 6), dt)
        idx = np.array([3, 0, 2])
        _same(lambda a: a.T, z, want=z.T)
        _same(lambda a: a.reshape(6, 4) * 1j, z, want=z.reshape(6, 4) * 1j)
        _same(lambda a: a[1:3, ::2], z, want=z[1:3, ::2])
        _same(lambda a: jnp.concatenate([a, a[:1]], axis=0), z, want=np.concatenate([z, z[:1]]))
        _same(lambda a, idx=idx: a[idx], z, want=z[idx])
        _same(lambda a: jnp.flip(a, axis=1), z, want=z[:, ::-1])
        _same(lambda a: jnp.pad(a, 1), z, want=np.pad(z, 1))
        _same(lambda a: jnp.cumsum(a, axis=1), z, want=np.cumsum(z, axis=1))
        _same(lambda a, idx=idx: a.at[idx].set(a[0] * 2j), z)
        rep = np.array([1, 3, 1, 1])  # repeated indices: the float atomics on the parts add up
        want = z.copy()
        np.add.at(want, rep, z[:4, :] * 1j)
        _same(lambda a, rep=rep: a.at[rep].add(a[:4, :] * 1j), z, want=want)
        _same(lambda a: numbax.lax.dynamic_slice(a, (1, 2), (2, 3)), z, want=z[1:3, 2:5])


@check
def complex_grad():
    z0 = _c(16, np.complex128)

    def f(x):
        u = jnp.exp(1j * x) * z0
        v = jnp.sin(x * (1 + 2j)) / (2 + x * 1j)
        return jnp.sum(jnp.abs(u) ** 2 + jnp.real(v * jnp.conj(u)) + jnp.imag(jnp.sqrt(v + 3)))

    x = RNG.uniform(-1, 1, 16)
    idx = np.array([0, 5, 5, 9, 0])  # the transpose of a complex gather: complex scatter-add
    g = lambda x: jnp.sum(jnp.abs(jnp.exp(1j * x)[idx] * z0[:5]) ** 3)  # noqa: E731
    close(gjit(numbax.grad(g))(x), np.asarray(numbax.jit(numbax.grad(g))(x)), rtol=1e-12,
          atol=1e-13)
    got = gjit(numbax.grad(f))(x)
    want = np.asarray(numbax.jit(numbax.grad(f))(x))
    close(got, want, rtol=1e-12, atol=1e-13)
    # central differences as an independent check
    eps, fd = 1e-6, np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = eps
        fd[i] = (float(numbax.jit(f)(x + e)) - float(numbax.jit(f)(x - e))) / (2 * eps)
    np.testing.assert_allclose(np.asarray(got), fd, rtol=1e-6, atol=1e-7)


def _runs_on_host(f, *args, prim: str, dtype: str = "c128") -> None:
    """No CUDA lowering for this complex equation: it runs on the host (sim_checks.on_host)."""
    on_host(f, *args, prim=prim, operand=dtype)


@check
def complex_refusals():
    """No complex order, no complex multiply/min/max atomics: refused at jit time, naming the
    primitive and dtypes (lax itself rejects argmax/cummax of complex operands)."""
    z = _c(8, np.complex128)
    _runs_on_host(jnp.max, z, prim="reduce_max")
    _runs_on_host(lambda a: jnp.maximum(a, 2 * a), z, prim="max")
    # (complex `<` is not among them: jnp orders complex numbers lexicographically, as JAX and
    # numpy do, through comparisons of the real parts, which run on the device)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        got = gjit(lambda a: a < 2 * a)(z)
    assert not [w for w in seen if issubclass(w.category, RuntimeWarning)], seen
    np.testing.assert_array_equal(np.asarray(got), z < 2 * z)
    _runs_on_host(jnp.sort, z, prim="sort")
    _runs_on_host(lambda a: a.astype(np.complex64).at[np.array([1])].multiply(2), z,
             prim="scatter-mul", dtype="c64")
