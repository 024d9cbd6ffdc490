"""Arrays with short rows (indices.literal_tails): a kernel reads and writes arrays whose rows hold
at most ROW_LITERAL_MAX elements through 1-d views, at flat indices with the rows' sizes
written in, and reduces such arrays over their leading axis with the rows' loops unrolled.
Every form (serial, prange, the native pool's chunks of rows) gives numpy's numbers; rows one
element longer keep the arrays' own indexing."""
from __future__ import annotations

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax._src.compiler.cpu import indices

from .kernel_text import modules

RNG = np.random.default_rng(7)
ROW = indices.ROW_LITERAL_MAX


def _points(n, *row, dtype=np.float32):
    return RNG.normal(size=(n, *row)).astype(dtype)


# name: (numbax program, numpy truth, arguments)
CASES = {
    # column picks read at the absolute row (their kernel's tasks pass the array whole)
    "columns": (lambda y: y[:, 0] * y[:, 1] + y[:, 2],
                lambda y: y[:, 0] * y[:, 1] + y[:, 2], [(100_003, 3)]),
    # a slice read at rows i0 + r0 beside a broadcast column read at i0: one view of rows
    "divide_by_last": (lambda y: y[:, :2] / y[:, 2:], lambda y: y[:, :2] / y[:, 2:],
                       [(50_001, 3)]),
    # rows off the outer index at two offsets, a column of each, and a stride along rows
    "row_differences": (lambda y: (y[1:] - y[:-1])[:, 1] + y[:-1:1, 2] * 2,
                        lambda y: (y[1:] - y[:-1])[:, 1] + y[:-1, 2] * 2, [(40_000, 4)]),
    "every_other_row": (lambda y: y[1::2, 0] + y[::2, 1], lambda y: y[1::2, 0] + y[::2, 1],
                        [(60_000, 3)]),
    # a map whose output has short rows (stores at literal strides), with an iota
    "scaled_by_column_index": (lambda y: y * jnp.arange(3.0, dtype=y.dtype) - y[:, :1],
                               lambda y: y * np.arange(3.0, dtype=y.dtype) - y[:, :1],
                               [(70_001, 3)]),
    # rows of three axes (2 x 3 = 6 elements), a transpose of the row's axes
    "small_matrices": (lambda m: jnp.swapaxes(m, 1, 2) * 2 + m[:, :1, :1].transpose(0, 2, 1),
                       lambda m: np.swapaxes(m, 1, 2) * 2 + m[:, :1, :1].transpose(0, 2, 1),
                       [(30_000, 3, 3)]),
    # a constant row and every other row, at absolute rows (their tasks pass y whole)
    "first_row_and_strided_rows": (lambda y: (y[1::2] - y[0]) * y[::2],
                                   lambda y: (y[1::2] - y[0]) * y[::2], [(80_002, 3)]),
    # images: the channels are a literal tail of (h, w, 3) (an (h, w * 3) view), of a batch
    "image_gamma": (lambda im: (im[..., 0] * 0.3 + im[..., 1] * 0.6 + im[..., 2] * 0.1)
                    ** (1 / 2.2),
                    lambda im: (im[..., 0] * 0.3 + im[..., 1] * 0.6 + im[..., 2] * 0.1)
                    ** (1 / 2.2), [(300, 301, 3)]),
    "batch_normalize": (lambda b: (b - jnp.array([0.4, 0.5, 0.6], b.dtype)) / 0.25,
                        lambda b: (b - np.array([0.4, 0.5, 0.6], b.dtype)) / np.float32(0.25),
                        [(16, 33, 35, 3)]),
    # a reduction over the row (trailing axis) and one over the leading axis (column sums)
    "row_norms": (lambda y: jnp.sqrt((y * y).sum(-1)), lambda y: np.sqrt((y * y).sum(-1)),
                  [(80_000, 3)]),
    "centred": (lambda y: y - y.mean(0), lambda y: y - y.astype(np.float64).mean(0),
                [(100_000, 3)]),
    "column_sums_of_matrices": (lambda m: (m * 2).sum(0),
                                lambda m: (m.astype(np.float64) * 2).sum(0), [(20_000, 2, 5)]),
    # the longest literal row, and one element longer (the arrays' own indexing)
    "widest_literal_row": (lambda y: y[:, 3:] * y[:, :1] + y.sum(0)[3:],
                           lambda y: y[:, 3:] * y[:, :1] + y.astype(np.float64).sum(0)[3:],
                           [(5_000, ROW)]),
    "one_longer": (lambda y: y[:, 3:] * y[:, :1] + y.sum(0)[3:],
                   lambda y: y[:, 3:] * y[:, :1] + y.astype(np.float64).sum(0)[3:],
                   [(5_000, ROW + 1)]),
    # integers and float64, a single row, rows of one element
    "integers": (lambda y: y[:, 0] * 3 - y[:, 1] + y.sum(0)[1],
                 lambda y: y[:, 0] * 3 - y[:, 1] + y.sum(0)[1], [(9_999, 2, np.int32)]),
    "float64_one_row": (lambda y: y[:, 2] - y[:, 0] + y.mean(0)[1],
                        lambda y: y[:, 2] - y[:, 0] + y.mean(0)[1], [(1, 3, np.float64)]),
    "rows_of_one": (lambda y: y[:, 0] + y[::-1, 0] + y.sum(0),
                    lambda y: y[:, 0] + y[::-1, 0] + y.sum(0), [(3_001, 1, np.float64)]),
}


def _args(shapes):
    out = []
    for shape in shapes:
        dtype = shape[-1] if isinstance(shape[-1], type) else np.float32
        dims = shape[:-1] if isinstance(shape[-1], type) else shape
        if np.dtype(dtype).kind == "i":
            out.append(RNG.integers(-50, 50, size=dims).astype(dtype))
        else:
            out.append(_points(*dims, dtype=dtype))
    return out


@pytest.mark.parametrize("threads", [1, 0])
@pytest.mark.parametrize("name", list(CASES))
def test_short_rows_give_numpys_numbers(name, threads):
    f, truth, shapes = CASES[name]
    args = _args(shapes)
    with numbax.config.override("cpu_threads", threads):
        got = np.asarray(numbax.jit(f)(*args))
    want = truth(*args)
    assert got.shape == want.shape
    if got.dtype.kind == "i":
        np.testing.assert_array_equal(got, want)
    else:
        tol = 1e-12 if got.dtype == np.float64 else 2e-6
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 10)


def _kernels(f, *args) -> str:
    return "\n".join(modules(numbax.jit(f).lower(*args).as_text())[:-1])


def test_short_rows_are_read_at_literal_strides_and_longer_ones_by_shape():
    """The column picks of (n, 3) points read one flat view at `row * 3 + k`; rows one past
    ROW_LITERAL_MAX are indexed by the arrays' shapes (two indices), as every array was."""
    f = CASES["columns"][0]
    short = _kernels(f, _points(1000, 3))
    assert "* np.uint64(3) + np.uint64(1)]" in short
    assert "a0[(i0 + r0), 1]" not in short
    long = _kernels(f, _points(1000, ROW + 1))
    assert "a0[(i0 + r0), 1]" in long


def test_images_are_read_through_views_merging_their_channels():
    """(h, w, 3): the kernel indexes an (h, w * 3) view at `i1 * 3 + c`."""
    im = _points(40, 50, 3)
    text = _kernels(CASES["image_gamma"][0], im)
    assert "np.uint64(i1) * np.uint64(3) + np.uint64(2)]" in text


def test_rows_read_with_gaps_keep_their_shape():
    """Three of a quaternion's four elements (a row with a gap, which LLVM would load as a
    gather) are read by shape; the points, read whole, through the flat view; numbers as
    numpy's."""
    q, x = _points(20_000, 4), _points(20_000, 3)

    def f(q, x):
        return jnp.cross(q[:, 1:], x)
    text = _kernels(f, q, x)
    assert "a0[(i0 + r0), 1]" in text or "a0[i0, 1]" in text
    assert "* np.uint64(3) + np.uint64(2)]" in text
    np.testing.assert_allclose(np.asarray(numbax.jit(f)(q, x)), np.cross(q[:, 1:], x),
                               rtol=2e-6, atol=2e-6)


def test_a_column_sum_of_short_rows_unrolls_its_row():
    """A leading-axis reduction of (n, 3) writes the row's 3 elements out, each partial a
    scalar (no column blocks), and its numbers are the float64 column sums cast back."""
    y = _points(10_000, 3)
    text = _kernels(lambda y: y.sum(0), y)
    assert "q0_2 = " in text and "range(j0, j1)" not in text
    np.testing.assert_allclose(np.asarray(numbax.jit(lambda y: y.sum(0))(y)),
                               y.astype(np.float64).sum(0), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("tail", [(3,), (2, 3), (16,)])
def test_bounding_boxes_of_short_rows(dtype, tail):
    """min and max along the leading axis of short rows (a bounding box), partials in scalars:
    numpy's numbers, with a NaN in one column and signed zeros in another, and over rows that
    fill several chunks and a last partial one."""
    n = 10_000 + 37
    y = (_points(n, int(np.prod(tail))) * 100).astype(dtype).reshape((n, *tail))
    if dtype != np.int32:
        flat = y.reshape(n, -1)
        flat[5_000, 0] = np.nan
        flat[:, -1] = np.where(np.arange(n) % 2, 0.0, -0.0)
    box = numbax.jit(lambda y: (y.min(0), y.max(0), (y * 2).max(0) - y.sum(0)))
    got = [np.asarray(v) for v in box(y)]
    want = [y.min(0), y.max(0), (y * 2).max(0) - y.astype(np.float64).sum(0).astype(dtype)]
    for g, w in zip(got[:2], want[:2]):
        np.testing.assert_array_equal(g, w)
    if dtype != np.int32:  # lax.min/max: -0.0 below +0.0 (numpy's min and max pick either)
        assert np.signbit(got[0].reshape(-1)[-1]) and not np.signbit(got[1].reshape(-1)[-1])
    np.testing.assert_allclose(got[2], want[2], rtol=1e-5)


@pytest.mark.parametrize("shape", [(5, 0), (3, 2, 0), (0, 3)])
def test_column_reductions_of_empty_rows(shape):
    """A leading-axis reduction whose rows hold no element (or that has no rows) gives numpy's
    empty or identity results (the written-out rows had no line to write: the kernel did
    not parse)."""
    y = np.ones(shape)
    got = numbax.jit(lambda y: (y.sum(0), (y * 2).prod(0)))(y)
    np.testing.assert_array_equal(np.asarray(got[0]), y.sum(0))
    np.testing.assert_array_equal(np.asarray(got[1]), (y * 2).prod(0))


def test_a_strided_input_view_is_read_right():
    """A (n, 3) input that is a view of a wider numpy array (not C-contiguous) gives numpy's
    numbers: the driver's flat view copies it."""
    wide = _points(20_000, 5)
    y = wide[:, 1:4]
    got = np.asarray(numbax.jit(lambda y: y[:, 0] * y[:, 2] + y.sum(0)[1])(y))
    np.testing.assert_allclose(got, y[:, 0] * y[:, 2] + y.astype(np.float64).sum(0)[1],
                               rtol=2e-6, atol=1e-5)


def test_literal_rows_under_vmap_and_grad():
    """Per-example (3,)-vectors under vmap and the gradient of a column-sum loss."""
    y = _points(4_096, 3)
    w = np.array([0.5, -1.0, 2.0], np.float32)

    def loss(w, y):
        r = y * w - y.mean(0)
        return (r[:, 0] * r[:, 1] + lax.square(r[:, 2])).sum()

    g = np.asarray(numbax.jit(numbax.grad(loss))(w, y))
    eps = 1e-3
    y64, w64 = y.astype(np.float64), w.astype(np.float64)

    def loss64(w):
        r = y64 * w - y64.mean(0)
        return (r[:, 0] * r[:, 1] + r[:, 2] ** 2).sum()
    fd = [(loss64(w64 + eps * e) - loss64(w64 - eps * e)) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(g, fd, rtol=2e-4)
    cross = numbax.jit(numbax.vmap(lambda a, b: jnp.cross(a, b)))(y, y[::-1])
    np.testing.assert_allclose(np.asarray(cross), np.cross(y, y[::-1]), rtol=2e-6, atol=2e-5)


def test_maps_along_rows_longer_than_an_unrolled_loop_index_by_shape():
    """A map over (n, 8): its innermost loop runs along the rows and vectorises as it is, so
    its full arrays keep their shapes' indexing (the views ran it 1.3x slower); numbers as
    numpy's."""
    x = _points(1000, 8)

    def f(x):
        return (x - x[0]) / (x[1] + 3.0)
    text = _kernels(f, x)
    assert "(a0[i0, i1] - " in text and "o0[i0, i1] = " in text
    np.testing.assert_allclose(np.asarray(numbax.jit(f)(x)), (x - x[0]) / (x[1] + 3.0),
                               rtol=2e-6, atol=2e-7)
