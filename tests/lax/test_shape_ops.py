"""rev, slice, concatenate, pad, iota, copy and their wrappers: eager vs numpy, AD, vmap."""
import numpy as np
import pytest

import numbax
from numbax import lax
from numbax.errors import NumbaxTypeError, NumbaxValueError
from tests.lax._checks import RNG, check_ad, check_vmap

DTYPES = [np.float32, np.float64, np.int32]
SHAPES = [(5,), (3, 4), (2, 3, 4)]


def _x(shape, dtype):
    return (RNG.standard_normal(shape) * 10).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_rev_eager(shape, dtype):
    x = _x(shape, dtype)
    for dims in [(0,), tuple(range(len(shape))), (len(shape) - 1,)]:
        out = lax.rev(x, dims)
        assert out.dtype == x.dtype
        np.testing.assert_array_equal(np.asarray(out), np.flip(x, dims))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_slice_eager(shape, dtype):
    x = _x(shape, dtype)
    start = tuple(1 if n > 1 else 0 for n in shape)
    limit = shape
    strides = tuple(2 for _ in shape)
    out = lax.slice(x, start, limit, strides)
    expected = x[tuple(slice(a, b, s) for a, b, s in zip(start, limit, strides))]
    np.testing.assert_array_equal(np.asarray(out), expected)
    np.testing.assert_array_equal(np.asarray(lax.slice_in_dim(x, -3, None, 1, axis=-1)),
                                  x[..., -3:])
    np.testing.assert_array_equal(np.asarray(lax.index_in_dim(x, -1, 0, keepdims=False)), x[-1])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_concatenate_eager(shape, dtype):
    xs = [_x(shape, dtype) for _ in range(3)]
    for axis in range(len(shape)):
        out = lax.concatenate(xs, axis)
        np.testing.assert_array_equal(np.asarray(out), np.concatenate(xs, axis))


def _np_pad(x, pv, config):
    """A reference pad: interior by scattering into a larger array, negatives by cropping."""
    out = x
    for axis, (lo, hi, interior) in enumerate(config):
        n = out.shape[axis]
        size = n + max(n - 1, 0) * interior
        shape = list(out.shape)
        shape[axis] = size
        spread = np.full(shape, pv, x.dtype)
        idx = [slice(None)] * out.ndim
        idx[axis] = slice(0, size, interior + 1)
        spread[tuple(idx)] = out
        widths = [(0, 0)] * out.ndim
        widths[axis] = (max(lo, 0), max(hi, 0))
        spread = np.pad(spread, widths, constant_values=pv)
        idx = [slice(None)] * out.ndim
        idx[axis] = slice(max(-lo, 0), spread.shape[axis] - max(-hi, 0))
        out = spread[tuple(idx)]
    return out


PAD_CONFIGS = [(1, 2, 0), (0, 0, 1), (-1, 2, 2), (2, -1, 1), (0, -2, 0)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_pad_eager(shape, dtype):
    x = _x(shape, dtype)
    for k in range(len(PAD_CONFIGS)):
        config = [PAD_CONFIGS[(k + d) % len(PAD_CONFIGS)] for d in range(len(shape))]
        out = lax.pad(x, dtype(7), config)
        np.testing.assert_array_equal(np.asarray(out), _np_pad(x, dtype(7), config))


def test_scalar_operands():
    x = np.float64(3.5)
    np.testing.assert_array_equal(np.asarray(lax.rev(x, ())), x)
    np.testing.assert_array_equal(np.asarray(lax.pad(x, 0.0, ())), x)
    np.testing.assert_array_equal(np.asarray(lax.copy(x)), x)
    np.testing.assert_array_equal(np.asarray(lax.slice(x, (), ())), x)


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.float64])
def test_iota(dtype):
    np.testing.assert_array_equal(np.asarray(lax.iota(dtype, 5)), np.arange(5, dtype=dtype))
    out = lax.broadcasted_iota(dtype, (2, 3, 4), 1)
    assert out.dtype == dtype
    np.testing.assert_array_equal(np.asarray(out),
                                  np.broadcast_to(np.arange(3, dtype=dtype)[:, None], (2, 3, 4)))
    assert numbax.grad(lambda x: lax.reduce_sum(x * lax.iota(np.float64, 3), (0,)))(
        np.ones(3)).tolist() == [0.0, 1.0, 2.0]


def test_copy_and_collapse():
    x = _x((2, 3, 4), np.float64)
    np.testing.assert_array_equal(np.asarray(lax.copy(x)), x)
    np.testing.assert_array_equal(np.asarray(lax.collapse(x, 1)), x.reshape(2, 12))
    np.testing.assert_array_equal(np.asarray(lax.collapse(x, 0, 2)), x.reshape(6, 4))


# ----------------------------------------------------------------------------- AD

AD_CASES = [
    ("rev", lambda x: lax.rev(x, (0, 2)), (2, 3, 4)),
    ("slice", lambda x: lax.slice(x, (0, 1), (3, 4), (2, 2)), (3, 4)),
    ("slice_vec", lambda x: lax.slice(x, (1,), (5,), (3,)), (5,)),
    ("concatenate", lambda x: lax.concatenate([x, x * 2.0, x], 1), (3, 4)),
    ("pad", lambda x: lax.pad(x, 1.5, ((1, -1, 1), (-2, 2, 0))), (3, 4)),
    ("pad3", lambda x: lax.pad(x, 0.0, ((0, 1, 0), (1, 1, 2), (-1, 0, 0))), (2, 3, 4)),
    ("copy", lambda x: lax.copy(x) * x, (3, 4)),
    ("index_in_dim", lambda x: lax.index_in_dim(x, 1, 1, False), (3, 4)),
]


@pytest.mark.parametrize("name,f,shape", AD_CASES, ids=[c[0] for c in AD_CASES])
def test_ad(name, f, shape):
    check_ad(f, RNG.standard_normal(shape))


def test_pad_value_gradient():
    config = ((1, 2, 1), (0, -1, 0))
    x = RNG.standard_normal((3, 4))

    def f(pv):
        return lax.pad(x, pv, config)

    check_ad(f, np.float64(0.3))
    g = numbax.grad(lambda pv: lax.reduce_sum(f(pv), (0, 1)))(np.float64(0.3))
    n_pad = _np_pad(np.zeros((3, 4)), 1.0, config).sum()
    np.testing.assert_allclose(float(g), n_pad)


def test_concatenate_partial_gradient():
    y = RNG.standard_normal((2, 3))
    check_ad(lambda x: lax.concatenate([y, x, y], 0), RNG.standard_normal((4, 3)))


# ----------------------------------------------------------------------------- vmap

VMAP_CASES = [
    ("rev", lambda x: lax.rev(x, (0,))),
    ("slice", lambda x: lax.slice(x, (1, 0), (3, 4), (1, 3))),
    ("pad", lambda x: lax.pad(x, -1.0, ((1, -1, 1), (0, 2, 0)))),
    ("concatenate", lambda x: lax.concatenate([x, x], 1)),
    ("copy", lambda x: lax.copy(x)),
    ("iota", lambda x: x + lax.broadcasted_iota(np.float64, (3, 4), 0)),
]


@pytest.mark.parametrize("name,f", VMAP_CASES, ids=[c[0] for c in VMAP_CASES])
@pytest.mark.parametrize("in_axis", [0, 1])
def test_vmap(name, f, in_axis):
    x = RNG.standard_normal((5, 3, 4) if in_axis == 0 else (3, 5, 4))
    check_vmap(f, [x], [in_axis])


def test_vmap_concatenate_mixed_and_pad_batched_value():
    y = RNG.standard_normal((3, 4))
    check_vmap(lambda x: lax.concatenate([y, x], 0), [RNG.standard_normal((3, 2, 4))], [1])
    x = RNG.standard_normal((3, 4))
    check_vmap(lambda x, pv: lax.pad(x, pv, ((1, 1, 1), (0, -1, 0))),
               [x, RNG.standard_normal(5)], [None, 0])


def test_jaxpr_names():
    text = str(numbax.make_jaxpr(lambda x: lax.pad(lax.rev(lax.slice(x, (1,), (4,)), (0,)),
                                                   0.0, ((1, 0, 0),)))(np.ones(5)))
    for name in ("slice[", "rev[", "pad["):
        assert name in text


# ----------------------------------------------------------------------------- bad input


def test_bad_inputs():
    x = np.ones((3, 4))
    with pytest.raises(NumbaxValueError, match="axis 1 of size 4"):
        lax.slice(x, (0, 0), (3, 5))
    with pytest.raises(NumbaxTypeError, match="start_indices has 1 entries"):
        lax.slice(x, (0,), (3,))
    with pytest.raises(NumbaxTypeError, match=r"operand 1 has shape \(3, 5\)"):
        lax.concatenate([x, np.ones((3, 5))], 0)
    with pytest.raises(NumbaxTypeError, match="operand 1 has dtype int32"):
        lax.concatenate([x, np.ones((3, 4), np.int32)], 0)
    with pytest.raises(NumbaxValueError, match="empty"):
        lax.concatenate([], 0)
    with pytest.raises(NumbaxValueError, match="negative output shape"):
        lax.pad(x, 0.0, ((-2, -2, 0), (0, 0, 0)))
    with pytest.raises(NumbaxTypeError, match="padding_value has f32"):
        lax.pad(x, np.float32(0), ((0, 0, 0), (0, 0, 0)))
    with pytest.raises(NumbaxValueError, match="padding_config has 1 entries"):
        lax.pad(x, 0.0, ((0, 0, 0),))
    with pytest.raises(NumbaxValueError, match="axis is 2"):
        lax.rev(x, (2,))
    with pytest.raises(NumbaxValueError, match="axis is 3"):
        lax.broadcasted_iota(np.int32, (2, 3), 3)
    with pytest.raises(IndexError, match="axis 0 with size 3"):
        lax.index_in_dim(x, 3)
    with pytest.raises(NumbaxValueError, match="stop_dimension"):
        lax.collapse(x, 1, 0)
