"""numbax.ops (jax.ops) segment reductions against np.ufunc.at loops, with modes, buckets,
empty segments, jit/vmap, and derivatives against finite differences."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import ops
from numbax.errors import ConcretizationTypeError, NumbaxTypeError, NumbaxValueError
from numbax.test_util import check_grads

RNG = np.random.default_rng(12)
DATA = RNG.normal(size=(9, 2))
IDS = np.array([0, 2, 2, 1, 0, 4, 2, -1, 7])  # -1 and 7 fall outside 5 segments


def _reference(ufunc, init, data, ids, n, clip=False):
    out = np.full((n,) + data.shape[1:], init, data.dtype)
    ids = np.clip(ids, 0, n - 1) if clip else ids
    keep = (ids >= 0) & (ids < n)
    ufunc.at(out, ids[keep], data[keep])
    return out


CASES = [(ops.segment_sum, np.add, 0.0), (ops.segment_prod, np.multiply, 1.0),
         (ops.segment_max, np.maximum, -np.inf), (ops.segment_min, np.minimum, np.inf)]


@pytest.mark.parametrize("fn,ufunc,init", CASES, ids=[c[0].__name__ for c in CASES])
def test_segments_match_loops(fn, ufunc, init):
    np.testing.assert_allclose(fn(DATA, IDS, 5), _reference(ufunc, init, DATA, IDS, 5))
    np.testing.assert_allclose(fn(DATA, IDS, 5, mode="clip"),
                               _reference(ufunc, init, DATA, IDS, 5, clip=True))
    for bucket in (1, 2, 4, 100):
        np.testing.assert_allclose(fn(DATA, IDS, 5, bucket_size=bucket),
                                   _reference(ufunc, init, DATA, IDS, 5), rtol=1e-13)
    inside = np.array([0, 2, 2, 1, 0, 4, 2, 3, 3])
    np.testing.assert_allclose(fn(DATA, inside), _reference(ufunc, init, DATA, inside, 5))
    f = numbax.jit(lambda d, i: fn(d, i, num_segments=5))
    np.testing.assert_allclose(f(DATA, IDS), _reference(ufunc, init, DATA, IDS, 5))


def test_integer_data_and_empty_segments():
    d = np.array([3, 1, 4, 1, 5])
    ids = np.array([0, 0, 2, 2, 2])
    np.testing.assert_array_equal(ops.segment_sum(d, ids, 4), [4, 0, 10, 0])
    np.testing.assert_array_equal(ops.segment_prod(d, ids, 4), [3, 1, 20, 1])
    info = np.iinfo(np.int64)
    np.testing.assert_array_equal(ops.segment_max(d, ids, 4), [3, info.min, 5, info.min])
    np.testing.assert_array_equal(ops.segment_min(d, ids, 4), [1, info.max, 1, info.max])
    assert ops.segment_sum(d, ids).shape == (3,)


def test_segment_derivatives():
    ids = np.array([0, 0, 1, 1, 1, 3, 2])
    x = RNG.uniform(0.5, 2.0, size=7)
    for fn in (ops.segment_sum, ops.segment_prod, ops.segment_max, ops.segment_min):
        check_grads(lambda v, fn=fn: fn(v, ids, 4), (x,), order=2)
    # segment_prod with zeros: the derivative is the product of the other members.
    z = np.array([2.0, 0.0, 3.0, 0.0, 0.0, 5.0, 7.0])
    zs = np.array([0, 0, 0, 1, 1, 2, 2])
    g = numbax.grad(lambda v: (ops.segment_prod(v, zs, 3) * np.array([1.0, 2.0, 3.0])).sum())(z)
    np.testing.assert_allclose(g, [0.0, 6.0, 0.0, 0.0, 0.0, 21.0, 15.0])
    rows = numbax.vmap(lambda d: ops.segment_sum(d, ids, 4))(RNG.normal(size=(3, 7)))
    assert rows.shape == (3, 4)


def test_segment_bad_inputs():
    with pytest.raises(NumbaxTypeError, match="segment_ids has dtype float64"):
        ops.segment_sum(DATA, IDS.astype(float), 5)
    with pytest.raises(NumbaxValueError, match="leading axis"):
        ops.segment_sum(DATA, IDS[:3], 5)
    with pytest.raises(NumbaxValueError, match="1-d"):
        ops.segment_sum(DATA, IDS.reshape(3, 3), 5)
    with pytest.raises(NumbaxValueError, match="mode is 'wrap'"):
        ops.segment_sum(DATA, IDS, 5, mode="wrap")
    with pytest.raises(NumbaxValueError, match="num_segments is -1"):
        ops.segment_max(DATA, IDS, -1)
    with pytest.raises(NumbaxValueError, match="bucket_size is 0"):
        ops.segment_min(DATA, IDS, 5, bucket_size=0)
    with pytest.raises(ConcretizationTypeError):
        numbax.jit(lambda d, i: ops.segment_sum(d, i))(DATA, IDS)
    with pytest.raises(NumbaxTypeError, match="real dtype"):
        ops.segment_max(jnp.ones(2, complex), np.array([0, 1]))


def test_doctests():
    import doctest

    from numbax._src import ops as ops_src

    result = doctest.testmod(ops_src, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


def test_out_sharding_only_none():
    np.testing.assert_allclose(ops.segment_sum(DATA, IDS, 5, out_sharding=None),
                               _reference(np.add, 0.0, DATA, IDS, 5))
    with pytest.raises(NumbaxValueError, match="out_sharding"):
        ops.segment_sum(DATA, IDS, 5, out_sharding="x")
