"""Slices fused as index maps (registry.AxisRead): a reader loads the slice's operand at
start + stride * index instead of reading a copy, on every kernel form (maps, reductions over
leading, trailing or all axes, row groups, compiled loop bodies); a slice no reader takes stays
the driver's view or copy; the native pool's tasks read rows taken off the outer index at
their absolute index. Truth: numpy on the same slices, and Python loops for the scans."""
from __future__ import annotations

import re

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax

from .kernel_text import modules

RNG = np.random.default_rng(5)


def _driver(f, *args) -> str:
    return modules(numbax.jit(f).lower(*args).as_text())[-1]


# (function on numbax and numpy alike, argument shapes)
FUSED = {
    "pairs_along_rows": (lambda x: x[:, :-1:2] + x[:, 1::2], [(300, 257)]),
    "diff_flat": (lambda x: x[1:] - x[:-1], [(100_037,)]),
    "stencil_2d": (lambda u: u[2:, 1:-1] - 2 * u[1:-1, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:],
                   [(257, 130)]),
    "strided_offsets_3d": (lambda x: x[1::3, :, 2::2] * x[:-2:3, :, 1:-1:2],
                           [(64, 5, 41)]),
    "with_a_broadcast": (lambda x, b: x[:, 1:] * b[None, :], [(300, 65), (64,)]),
    "column_sum": (lambda x: (x[1:, ::2] * x[:-1, 1::2]).sum(0), [(1000, 64)]),
    "row_sum": (lambda x: (x[:, 1:] * x[:, :-1]).sum(1), [(300, 513)]),
    "full_sum": (lambda x: (x[::3] * 2.0).sum(), [(300_001,)]),
    "row_softmax_of_rows_off_the_index": (
        lambda x: numbax.nn.softmax(x[1:] + x[:-1], axis=-1), [(513, 300)]),
}


def _numpy(name, args):
    f = FUSED[name][0]
    if name == "row_softmax_of_rows_off_the_index":
        v = args[0][1:] + args[0][:-1]
        e = np.exp(v - v.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)
    return f(*args)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(FUSED))
def test_slices_fuse_into_their_readers(name, dtype):
    f, shapes = FUSED[name]
    args = [RNG.normal(size=s).astype(dtype) for s in shapes]
    assert "kc.slice_(" not in _driver(f, *args)  # no copies: the kernels read the operand
    got = np.asarray(numbax.jit(f)(*args))
    want = _numpy(name, args)
    assert got.shape == want.shape and got.dtype == dtype
    tol = 2e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1.0, np.abs(want).max()))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_broadcasts_fuse_into_their_readers(dtype):
    """An FFT convolution multiplies each image's spectrum by the kernel's, broadcast over the
    batch: a load in the product's loop, not a host call that writes the broadcast out (17 MB
    for 64 images of 256 x 129 frequencies); and a 0-d complex value broadcast into a loop."""
    spectra = (RNG.normal(size=(6, 8, 5)) + 1j * RNG.normal(size=(6, 8, 5))).astype(dtype)
    kernel = (RNG.normal(size=(8, 5)) + 1j * RNG.normal(size=(8, 5))).astype(dtype)
    scale = dtype(0.5 - 2j)
    cases = [(lambda s, k: s + k[None], (spectra, kernel), spectra + kernel[None]),
             (lambda s, c: s - jnp.broadcast_to(c, s.shape), (spectra, scale), spectra - scale),
             (lambda k: jnp.broadcast_to(k[:, :1], (3, 8, 5)) + k, (kernel,),
              np.broadcast_to(kernel[:, :1], (3, 8, 5)) + kernel)]
    for f, args, want in cases:
        assert not re.search(r"= h\d+\(", _driver(f, *args))  # no eager broadcast
        got = np.asarray(numbax.jit(f)(*args))
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("name", ["pairs_along_rows", "diff_flat", "stencil_2d", "column_sum",
                                  "row_softmax_of_rows_off_the_index"])
def test_any_thread_count_gives_the_one_thread_bits(name, threads):
    f, shapes = FUSED[name]
    args = [RNG.normal(size=s).astype(np.float32) for s in shapes]
    with numbax.config.override("cpu_threads", 1):
        want = np.asarray(numbax.jit(f)(*args))
    with numbax.config.override("cpu_threads", threads):
        for _ in range(3):  # (parallel variants start after a few calls)
            got = np.asarray(numbax.jit(f)(*args))
    np.testing.assert_array_equal(got, want)


def test_integer_and_bool_slices():
    x = RNG.integers(-50, 50, size=(40, 31))
    f = lambda v: (v[1:, ::2] * v[:-1, ::2], v[:, 1:] > v[:, :-1])  # noqa: E731
    got = numbax.jit(f)(x)
    for g, w in zip(got, f(x), strict=True):
        np.testing.assert_array_equal(np.asarray(g), w)


def test_a_slice_no_reader_takes_stays_a_view_or_a_copy():
    x = RNG.normal(size=(100, 40)).astype(np.float32)
    w = RNG.normal(size=(4, 3)).astype(np.float32)
    rows = lambda v: v[10:20]  # noqa: E731  (a program output: the driver's view)
    assert "kc.slice_(" in _driver(rows, x)
    np.testing.assert_array_equal(np.asarray(numbax.jit(rows)(x)), x[10:20])
    product = lambda v, m: v[:, 1:5] @ m  # noqa: E731  (read by a library call)
    assert "kc.slice_(" in _driver(product, x, w)
    np.testing.assert_allclose(np.asarray(numbax.jit(product)(x, w)), x[:, 1:5] @ w,
                               rtol=1e-5, atol=1e-5)


def test_slices_inside_a_scan_body():
    xs = RNG.normal(size=(6, 200))

    def body(c, x):
        c = c * 0.5 + x
        return c, (c[1:] * c[:-1]).sum() + c[::2].max()

    got_c, got_ys = numbax.jit(lambda c, xs: lax.scan(body, c, xs))(np.zeros(200), xs)
    c, ys = np.zeros(200), []
    for x in xs:
        c = c * 0.5 + x
        ys.append((c[1:] * c[:-1]).sum() + c[::2].max())
    np.testing.assert_allclose(np.asarray(got_c), c, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(got_ys), ys, rtol=1e-12)


def _python_scan(op, xs, axis, reverse):
    """op folded along `axis` one element at a time: the inclusive scan by its definition."""
    xs = [np.moveaxis(x, axis, 0) for x in xs]
    order = range(xs[0].shape[0] - 1, -1, -1) if reverse else range(xs[0].shape[0])
    out = [np.empty_like(x) for x in xs]
    acc = None
    for i in order:
        cur = tuple(x[i] for x in xs)
        acc = cur if acc is None else op(acc, cur)
        for o, a in zip(out, acc, strict=True):
            o[i] = a
    return [np.moveaxis(o, 0, axis) for o in out]


# n = 1000: 9-18 s of compile a case on the Emerald Rapids VM (90+ kernels); with -m slow only
# (test_linear_recurrence_by_associative_scan_and_its_gradient scans 301 elements)
@pytest.mark.parametrize("n", [1, 2, 3, 7, 64, pytest.param(1000, marks=pytest.mark.slow)])
@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("reverse", [False, True])
def test_associative_scan_against_its_definition(n, axis, reverse):
    shape = [3, 4, 5]
    shape[axis] = n
    ints = RNG.integers(-9, 9, size=shape)
    flags = RNG.random(size=shape) < 0.1
    # max is exact: -0.0 and NaN come through as the definition's
    floats = RNG.normal(size=shape)
    floats.flat[::7] = -0.0
    floats.flat[5::11] = np.nan
    for xs, fn, op in [
            ((ints,), lambda a, b: a + b, lambda a, b: (a[0] + b[0],)),
            ((flags,), jnp.logical_or, lambda a, b: (a[0] | b[0],)),
            ((floats,), jnp.maximum, lambda a, b: (np.maximum(a[0], b[0]),))]:
        want = _python_scan(op, xs, axis, reverse)[0]
        def run(v, fn=fn):
            return lax.associative_scan(fn, v, reverse=reverse, axis=axis)

        for got in (run(xs[0]), numbax.jit(run)(xs[0])):
            got = np.asarray(got)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_linear_recurrence_by_associative_scan_and_its_gradient():
    a = RNG.uniform(0.5, 1.0, size=(4, 301, 3))
    b = RNG.normal(size=(4, 301, 3))

    def recurrence(a, b):
        op = lambda x, y: (x[0] * y[0], y[0] * x[1] + y[1])  # noqa: E731
        return lax.associative_scan(op, (a, b), axis=1)[1]

    want = _python_scan(lambda x, y: (x[0] * y[0], y[0] * x[1] + y[1]), (a, b), 1, False)[1]
    np.testing.assert_allclose(np.asarray(numbax.jit(recurrence)(a, b)), want, rtol=1e-10)
    # d/db of sum(h * w): h_t = sum_{s<=t} (prod_{s<r<=t} a_r) b_s, so the gradient is the
    # reverse recurrence g_s = w_s + a_{s+1} g_{s+1}
    w = RNG.normal(size=b.shape)
    grad = numbax.jit(numbax.grad(lambda b: jnp.sum(recurrence(a, b) * w)))(b)
    g = np.zeros_like(b)
    g[:, -1] = w[:, -1]
    for s in range(b.shape[1] - 2, -1, -1):
        g[:, s] = w[:, s] + a[:, s + 1] * g[:, s + 1]
    np.testing.assert_allclose(np.asarray(grad), g, rtol=1e-10)


# ----------------------------------------------------------------------------- composed maps


def test_index_map_reads_where_its_axis_reads_say():
    from numbax._src.lax import index_map as im

    x = RNG.normal(size=(7, 5, 6))
    reads = (im.AxisRead(0, 1, 2), im.AxisRead(None, 3, 0), im.AxisRead(1, 0, 1))
    got = np.asarray(im.index_map(x, reads, (3, 6)))  # eager: a strided view, copied
    np.testing.assert_array_equal(got, x[1::2, 3, :])
    # composing a slice, then a squeeze, then a broadcast gives the one map
    first = im.slice_reads((1, 0, 0), (2, 1, 1))
    then = im.unit_axes_reads((3, 1, 6), (3, 6))
    assert im.compose(then, first) == (im.AxisRead(0, 1, 2), im.AxisRead(None, 0, 0),
                                        im.AxisRead(1, 0, 1))


COMPOSED = {
    # a closed-form determinant reads each entry of a stack of 3 x 3 matrices (slice + squeeze)
    "det_3x3": (jnp.linalg.det, np.linalg.det, [(1000, 3, 3)]),
    "columns": (lambda s: s[:, 0] * s[:, 1] - s[:, 2], lambda s: s[:, 0] * s[:, 1] - s[:, 2],
                [(4096, 3)]),
    # slice, squeeze, then a broadcast against another operand
    "column_broadcast": (lambda s, y: s[:, 2][None, :] * y, lambda s, y: s[:, 2][None, :] * y,
                         [(300, 3), (7, 300)]),
    "expand_then_squeeze": (lambda x: jnp.squeeze(x[:, None, ::2], 1) + 1.0,
                            lambda x: x[:, ::2] + 1.0, [(40, 31)]),
}


@pytest.mark.parametrize("name", list(COMPOSED))
def test_chains_of_index_maps_are_one_load(name):
    f, g, shapes = COMPOSED[name]
    args = [RNG.normal(size=s).astype(np.float32) for s in shapes]
    driver = _driver(f, *args)
    assert "kc.slice_(" not in driver and "kc.index_map(" not in driver, driver
    np.testing.assert_allclose(np.asarray(numbax.jit(f)(*args)), g(*args), rtol=2e-6,
                               atol=2e-6)


def test_a_composed_map_no_reader_takes_is_a_view_or_a_copy():
    x = RNG.normal(size=(6, 50))
    assert "kc.index_map(" in _driver(lambda v: v[:, 7], x)
    for f, want in [(lambda v: v[3], x[3]), (lambda v: v[:, 7], x[:, 7]),
                    (lambda v: v[2:5, None, 1], x[2:5, None, 1])]:
        driver = _driver(f, x)
        assert "_loop(" not in driver and ("kc.index_map(" in driver or "kc.slice_(" in driver)
        np.testing.assert_array_equal(np.asarray(numbax.jit(f)(x)), want)


def test_columns_and_a_stack_inside_a_loop_body():
    """An ODE's right-hand side unpacks the state's columns and stacks the derivatives: the
    columns are loads of the state, the stack a loop per column (RK4 against numpy)."""
    def rhs(y, xp):
        a, b, c = y[:, 0], y[:, 1], y[:, 2]
        return xp.stack([10 * (b - a), a * (28 - c) - b, a * b - 8 / 3 * c], 1)

    def rk4(y, xp, steps=30, h=0.01):
        for _ in range(steps):
            k1 = rhs(y, xp)
            k2 = rhs(y + h / 2 * k1, xp)
            k3 = rhs(y + h / 2 * k2, xp)
            k4 = rhs(y + h * k3, xp)
            y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return y

    y0 = RNG.normal(size=(257, 3))

    def loop(y):
        return lax.fori_loop(0, 30, lambda i, y: rk4(y, jnp, steps=1), y)

    text = numbax.jit(loop).lower(y0).as_text()
    assert "np.concatenate" not in text and "def kernel(" in text  # compiled, stack as loops
    np.testing.assert_allclose(np.asarray(numbax.jit(loop)(y0)), rk4(y0, np), rtol=1e-10,
                               atol=1e-10)


def test_concatenations_inside_a_scan_body():
    xs = RNG.normal(size=(5, 4, 6))

    def body(c, x):
        both = jnp.concatenate([c, x[:, :2], x], axis=1)[:, ::2]
        rows = jnp.concatenate([x[:1], c[1:] * 2, x[:2]], axis=0)
        return c + both[:, :6], rows.sum(0)

    got_c, got_ys = numbax.jit(lambda c, xs: lax.scan(body, c, xs))(np.ones((4, 6)), xs)
    c, ys = np.ones((4, 6)), []
    for x in xs:
        both = np.concatenate([c, x[:, :2], x], axis=1)[:, ::2]
        rows = np.concatenate([x[:1], c[1:] * 2, x[:2]], axis=0)
        c, y = c + both[:, :6], rows.sum(0)
        ys.append(y)
    np.testing.assert_allclose(np.asarray(got_c), c, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(got_ys), ys, rtol=1e-12)


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_stacks_fuse_as_selects(axis, dtype):
    """A stack (a concatenation of one-element-thick operands) is a select among them by an
    iota of its axis, fused into its reader; more than STACK_MAX operands (ROW_PAD_MAX
    along the last axis) stay a copy."""
    from numbax._src.compiler import compose_maps

    parts = [RNG.normal(size=(5, 7)) > 0 if dtype == np.bool_ else
             (RNG.normal(size=(5, 7)) * 10).astype(dtype) for _ in range(3)]

    def f(a, b, c):
        s = jnp.stack([a, b, c, a], axis=axis)
        return s ^ True if dtype == np.bool_ else s * 2 + 1

    want = np.stack([*parts, parts[0]], axis=axis)
    want = want ^ True if dtype == np.bool_ else want * 2 + 1
    driver = _driver(f, *parts)
    assert "kc.concatenate(" not in driver
    got = np.asarray(numbax.jit(f)(*parts))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    many = [parts[0]] * (compose_maps.longest_select(axis, 3) + 1)
    assert "kc.concatenate(" in _driver(lambda *p: jnp.stack(p, axis=axis) + 1, *many)
    np.testing.assert_array_equal(np.asarray(numbax.jit(lambda *p: jnp.stack(p, axis) + 1)(
        *many)), np.stack(many, axis) + 1)


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_short_concatenations_and_reversals_fuse_as_selects(axis, dtype):
    """A concatenation of thicker operands (an alpha channel, a column of ones appended) with
    at most STACK_MAX elements along an axis after the first (ROW_PAD_MAX along the last),
    and a reversal of such an axis (`y[:, ::-1]`), is a select among one-element slices,
    fused into its reader; longer ones stay copies."""
    from numbax._src.compiler import compose_maps

    def part(shape):
        x = RNG.normal(size=shape)
        return x > 0 if dtype == np.bool_ else (x * 10).astype(dtype)

    def bump(s):
        return s ^ True if dtype == np.bool_ else s * 2 + 1

    shape = [4, 5, 6]
    thick, thin = list(shape), list(shape)
    thick[axis], thin[axis] = 3, 1
    a, b = part(thick), part(thin)
    cat = lambda a, b: bump(jnp.concatenate([a, b, a], axis=axis))  # noqa: E731
    # (blocks of whole rows stay the library's copy, a memcpy a block)
    assert ("kc.concatenate(" in _driver(cat, a, b)) == (axis == 0)
    got = np.asarray(numbax.jit(cat)(a, b))
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, bump(np.concatenate([a, b, a], axis=axis)))
    rev = lambda a: bump(jnp.flip(a, axis))  # noqa: E731
    assert "kc.rev(" not in _driver(rev, a)
    np.testing.assert_array_equal(np.asarray(numbax.jit(rev)(a)), bump(np.flip(a, axis)))
    long = list(shape)
    long[axis] = compose_maps.longest_select(axis, 3) + 1
    c = part(long)
    assert "kc.rev(" in _driver(rev, c)
    np.testing.assert_array_equal(np.asarray(numbax.jit(rev)(c)), bump(np.flip(c, axis)))
    assert "kc.concatenate(" in _driver(cat, c, b)
    np.testing.assert_array_equal(np.asarray(numbax.jit(cat)(c, b)),
                                  bump(np.concatenate([c, b, c], axis=axis)))


def test_short_concatenations_under_grad_and_of_computed_columns():
    """Homogeneous coordinates and an RGBA image from computed channels, and their
    gradients, against numpy and the closed-form gradient."""
    p = RNG.normal(size=(1000, 3)).astype(np.float32)
    hom = numbax.jit(lambda p: jnp.concatenate([p * 2, jnp.ones((p.shape[0], 1), p.dtype)], 1))
    # (a column of ones is a constant in the loop, not an array of its own)
    ones = lambda p: jnp.concatenate([p, jnp.ones((p.shape[0], 1), p.dtype)], 1)  # noqa: E731
    assert _driver(ones, p).count("_loop(") == 1
    np.testing.assert_array_equal(np.asarray(numbax.jit(ones)(p)),
                                  np.concatenate([p, np.ones((1000, 1), np.float32)], 1))
    np.testing.assert_array_equal(np.asarray(hom(p)),
                                  np.concatenate([p * 2, np.ones((1000, 1), np.float32)], 1))
    im = RNG.random(size=(64, 48, 3))
    rgba = numbax.jit(lambda im: jnp.concatenate([im * 0.5, im.mean(-1, keepdims=True)], -1))
    np.testing.assert_allclose(np.asarray(rgba(im)), np.concatenate(
        [im * 0.5, im.mean(-1, keepdims=True)], -1), rtol=1e-14)
    w = np.array([1.0, -2.0, 3.0, 0.5])
    loss = lambda im: (jnp.concatenate([im * 0.5, im[..., ::-1][..., :1]], -1) * w).sum()  # noqa
    # d/d im[..., c]: 0.5 w[c], plus w[3] on the last channel (the reversed first one)
    want = np.broadcast_to(0.5 * w[:3] + np.array([0, 0, w[3]]), im.shape)
    np.testing.assert_allclose(np.asarray(numbax.jit(numbax.grad(loss))(im)), want, rtol=1e-14)


def test_rows_picked_by_an_iota_have_their_size_written_in():
    """A reversal or concatenation of rows of 8 (past UNROLL_MAX) loops over the row's size
    as written, so that each element's pick folds to a constant; numpy's values."""
    x = RNG.normal(size=(1000, 8)).astype(np.float32)
    for f, want in [(lambda x: jnp.flip(x, 1) + 1, np.flip(x, 1) + 1),
                    (lambda x: jnp.concatenate([x[:, :5], x[:, :3] * 2], 1) - 1,
                     np.concatenate([x[:, :5], x[:, :3] * 2], 1) - 1)]:
        text = numbax.jit(f).lower(x).as_text()
        assert "in range(8):" in text
        np.testing.assert_array_equal(np.asarray(numbax.jit(f)(x)), want)


def _heat(xp, u, roll):
    return u + 0.1 * (roll(u, 1, 0) + roll(u, -1, 0) + roll(u, 1, 1) + roll(u, -1, 1) - 4 * u)


@pytest.mark.parametrize("shape", [(2, 3), (64, 48), (2000, 1000)])
def test_rolls_are_wrapped_loads_in_their_readers_loop(shape):
    """jnp.roll (two slices and a concatenation) read by a stencil is a wrapped load in the
    stencil's loop: one kernel, numpy's bits, small arrays and ones split among threads."""
    u = RNG.normal(size=shape).astype(np.float32)
    f = lambda u: _heat(jnp, u, jnp.roll)  # noqa: E731
    driver = _driver(f, u)
    assert "kc.concatenate(" not in driver and "kc.roll(" not in driver
    assert driver.count("_loop(") == 1
    for _ in range(2):  # (the second call may take the native pool's tasks)
        np.testing.assert_array_equal(np.asarray(numbax.jit(f)(u)),
                                      _heat(np, u, np.roll).astype(np.float32))


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.bool_])
@pytest.mark.parametrize("shift, axis", [(2, 0), (-3, 1), (8, 1), (4, 2), ((1, -2), (0, 2))])
def test_rolls_of_any_shift_axis_and_dtype(shift, axis, dtype):
    """Shifts near either end of the axis, two axes at once, a roll read by nothing fused
    (the library's copy), of floats, integers and booleans."""
    x = RNG.normal(size=(7, 9, 5)) * 10
    x = (x > 0) if dtype == np.bool_ else x.astype(dtype)

    def mix(xp, x):
        rolled = xp.roll(x, shift, axis)
        return rolled ^ x if dtype == np.bool_ else rolled * 3 + x

    np.testing.assert_array_equal(np.asarray(numbax.jit(lambda x: mix(jnp, x))(x)), mix(np, x))
    np.testing.assert_array_equal(np.asarray(numbax.jit(lambda x: jnp.roll(x, shift, axis))(x)),
                                  np.roll(x, shift, axis))


def test_rolls_in_loops_under_grad_and_vmap():
    """Ten heat steps in fori_loop (a compiled loop), a batch of rolled rows under vmap, and
    the gradient of a rolled product (the roll's transpose rolls back)."""
    u = RNG.normal(size=(40, 30))
    steps = numbax.jit(lambda u: lax.fori_loop(0, 10, lambda i, v: _heat(jnp, v, jnp.roll), u))
    want = u
    for _ in range(10):
        want = _heat(np, want, np.roll)
    np.testing.assert_allclose(np.asarray(steps(u)), want, rtol=1e-12, atol=1e-12)
    rows = numbax.jit(numbax.vmap(lambda r: jnp.roll(r, 2) * r))(u)
    np.testing.assert_array_equal(np.asarray(rows), np.roll(u, 2, 1) * u)
    w = RNG.normal(size=(40, 30))
    g = numbax.jit(numbax.grad(lambda u: (jnp.roll(u, 3, 0) * w).sum()))(u)
    np.testing.assert_array_equal(np.asarray(g), np.roll(w, -3, 0))


@pytest.mark.parametrize("shift, axis", [(2, 0), (-3, 1), (1, 2)])
def test_a_rolls_array_form_is_numpys_roll(shift, axis):
    """The form compiled control flow writes for a roll no nest reads (its two slices
    concatenated), evaluated as written against np.roll."""
    from numbax._src import core
    from numbax._src.compiler import registry
    from numbax._src.core import JaxprEqn, Var
    from numbax._src.lax import index_map as im

    x = RNG.normal(size=(5, 7, 4))
    aval = core.ShapedArray(x.shape, x.dtype)
    eqn = JaxprEqn(im.roll_p, [Var(aval)], [Var(aval)], {"shift": shift, "axis": axis})
    text = registry.lowering(im.roll_p, "cpu").array(["x"], eqn)
    np.testing.assert_array_equal(eval(text, {"np": np, "x": x}), np.roll(x, shift, axis))


def test_a_value_read_through_an_index_map_is_not_recomputed_in_its_reader():
    """A rolled stack of a cheap product (ppermute under vmap) reads the product at other
    rows than the loop's: the product stays stored, not recomputed in the reading loop."""
    x, y = RNG.normal(size=(4, 2, 4)), RNG.normal(size=(4, 2, 4))

    def f(x, y):
        e = x * y
        return jnp.concatenate([e[3:4], e[0:1], e[1:2], e[2:3]], axis=0) * y + x

    e = x * y
    want = np.concatenate([e[3:4], e[0:1], e[1:2], e[2:3]], axis=0) * y + x
    np.testing.assert_allclose(np.asarray(numbax.jit(f)(x, y)), want, rtol=1e-12)
    perm = ((1, 0), (2, 1), (3, 2), (0, 3))
    g = numbax.vmap(lambda u, v: lax.ppermute(u * v, "i", perm) * v + u, axis_name="i")
    np.testing.assert_allclose(np.asarray(numbax.jit(g)(x, y)), np.roll(x * y, -1, 0) * y + x,
                               rtol=1e-12)
