"""dot_general: eager vs einsum, jvp/vjp vs finite differences, second order, vmap as one dot."""
import numpy as np
import pytest

import numbax
from numbax import lax
from numbax.errors import NumbaxTypeError, NumbaxValueError

RNG = np.random.default_rng(1)

# (lhs shape, rhs shape, dimension_numbers, einsum spec)
CASES = [
    ((3,), (3,), (((0,), (0,)), ((), ())), "i,i->"),
    ((2, 3), (3,), (((1,), (0,)), ((), ())), "ij,j->i"),
    ((2, 3), (3, 4), (((1,), (0,)), ((), ())), "ij,jk->ik"),
    ((3, 2), (4, 3), (((0,), (1,)), ((), ())), "ji,kj->ik"),
    ((5, 2, 3), (5, 3, 4), (((2,), (1,)), ((0,), (0,))), "bij,bjk->bik"),
    ((2, 5, 3), (3, 4, 5), (((2,), (0,)), ((1,), (2,))), "ibj,jkb->bik"),
    ((2, 3, 4), (4, 3, 5), (((1, 2), (1, 0)), ((), ())), "ijk,kjl->il"),
    ((2, 3), (4,), (((), ()), ((), ())), "ij,k->ijk"),
]


def _data(shape, dtype):
    if np.dtype(dtype).kind == "i":
        return RNG.integers(-3, 4, size=shape).astype(dtype)
    return RNG.normal(size=shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("ls,rs,dims,spec", CASES)
def test_dot_general_eager(dtype, ls, rs, dims, spec):
    x, y = _data(ls, dtype), _data(rs, dtype)
    out = lax.dot_general(x, y, dims)
    assert out.dtype == dtype
    np.testing.assert_allclose(np.asarray(out), np.einsum(spec, x, y), rtol=1e-5, atol=1e-5)


def test_preferred_element_type():
    x = RNG.integers(-100, 100, size=(3, 4)).astype(np.int8)
    y = RNG.integers(-100, 100, size=(4, 2)).astype(np.int8)
    out = lax.dot_general(x, y, (((1,), (0,)), ((), ())), preferred_element_type=np.int32)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(out), x.astype(np.int32) @ y.astype(np.int32))


@pytest.mark.parametrize("ls,rs,dims,spec", CASES)
def test_dot_general_derivatives(ls, rs, dims, spec):
    x, y = _data(ls, np.float64), _data(rs, np.float64)
    vx, vy = _data(ls, np.float64), _data(rs, np.float64)
    f = lambda x, y: lax.dot_general(x, y, dims)  # noqa: E731
    out, t = numbax.jvp(f, (x, y), (vx, vy))
    eps = 1e-6
    fd = (np.asarray(f(x + eps * vx, y + eps * vy)) - np.asarray(f(x - eps * vx, y - eps * vy)))
    np.testing.assert_allclose(np.asarray(t), fd / (2 * eps), rtol=1e-6, atol=1e-8)
    u = RNG.normal(size=np.shape(out))
    cx, cy = numbax.vjp(f, x, y)[1](u)
    assert np.shape(cx) == ls and np.shape(cy) == rs
    lhs = np.vdot(np.asarray(cx), vx) + np.vdot(np.asarray(cy), vy)
    np.testing.assert_allclose(lhs, np.vdot(u, np.asarray(t)), rtol=1e-10)


def test_dot_general_second_order():
    # f(x) = x^T A x: Hessian A + A^T, by nested jvp.
    a = RNG.normal(size=(4, 4))
    f = lambda x: lax.dot(x, lax.dot(a, x))  # noqa: E731
    x = RNG.normal(size=4)
    eye = np.eye(4)
    hess = np.array([[float(numbax.jvp(lambda y, j=j: numbax.jvp(f, (y,), (eye[j],))[1],
                                       (x,), (eye[i],))[1]) for j in range(4)]
                     for i in range(4)])
    np.testing.assert_allclose(hess, a + a.T, rtol=1e-12)
    # reverse-over-forward: grad of the directional derivative
    v = RNG.normal(size=4)
    (g,) = numbax.vjp(lambda y: numbax.jvp(f, (y,), (v,))[1], x)[1](np.array(1.0))
    np.testing.assert_allclose(np.asarray(g), (a + a.T) @ v, rtol=1e-12)


def _count(jaxpr, name):
    return sum(e.primitive.name == name for e in jaxpr.jaxpr.eqns)


@pytest.mark.parametrize("in_axes", [(0, None), (None, 0), (0, 0), (1, None), (None, 1), (1, 1),
                                     (2, 1)])
def test_dot_general_vmap(in_axes):
    dims = (((1,), (0,)), ((), ()))  # matrix @ matrix
    f = lambda x, y: lax.dot_general(x, y, dims)  # noqa: E731
    shape_x, shape_y = [2, 3], [3, 4]
    if in_axes[0] is not None:
        shape_x.insert(in_axes[0], 5)
    if in_axes[1] is not None:
        shape_y.insert(in_axes[1], 5)
    x, y = RNG.normal(size=shape_x), RNG.normal(size=shape_y)
    out = numbax.vmap(f, in_axes=in_axes)(x, y)
    pick = lambda v, ax, i: v if ax is None else np.take(v, i, ax)  # noqa: E731
    loop = np.stack([pick(x, in_axes[0], i) @ pick(y, in_axes[1], i) for i in range(5)])
    np.testing.assert_allclose(np.asarray(out), loop, rtol=1e-12)
    jaxpr = numbax.make_jaxpr(numbax.vmap(f, in_axes=in_axes))(x, y)
    assert _count(jaxpr, "dot_general") == 1


@pytest.mark.parametrize("in_axes", [(None, 0), (0, 0), (0, None)])
def test_vmap_matvec_is_one_matmul(in_axes):
    a = RNG.normal(size=(5, 3, 4)) if in_axes[0] == 0 else RNG.normal(size=(3, 4))
    v = RNG.normal(size=(5, 4)) if in_axes[1] == 0 else RNG.normal(size=4)
    jaxpr = numbax.make_jaxpr(numbax.vmap(lax.dot, in_axes=in_axes))(a, v)
    assert [e.primitive.name for e in jaxpr.eqns if e.primitive.name != "transpose"] == [
        "dot_general"]
    out = numbax.vmap(lax.dot, in_axes=in_axes)(a, v)
    loop = np.stack([(a[i] if in_axes[0] == 0 else a) @ (v[i] if in_axes[1] == 0 else v)
                     for i in range(5)])
    np.testing.assert_allclose(np.asarray(out), loop, rtol=1e-12)


def test_vmap_of_grad_matvec():
    a = RNG.normal(size=(3, 4))
    xs = RNG.normal(size=(6, 4))
    g = numbax.vmap(numbax.grad(lambda x: lax.reduce_sum(lax.dot(a, x), (0,))))(xs)
    np.testing.assert_allclose(np.asarray(g), np.broadcast_to(a.sum(0), (6, 4)), rtol=1e-12)


def test_dot_and_batch_matmul():
    a, b = RNG.normal(size=(3, 4)), RNG.normal(size=(4, 2))
    np.testing.assert_allclose(np.asarray(lax.dot(a, b)), a @ b)
    np.testing.assert_allclose(np.asarray(lax.dot(b[:, 0], b[:, 1])), b[:, 0] @ b[:, 1])
    x, y = RNG.normal(size=(2, 5, 3, 4)), RNG.normal(size=(2, 5, 4, 6))
    np.testing.assert_allclose(np.asarray(lax.batch_matmul(x, y)), x @ y, rtol=1e-12)


def test_shape_mismatch_names_both_shapes():
    with pytest.raises(NumbaxTypeError, match=r"\(2, 3\).*\(4, 5\).*contracting"):
        lax.dot_general(np.ones((2, 3)), np.ones((4, 5)), (((1,), (0,)), ((), ())))
    with pytest.raises(NumbaxValueError, match=r"\(2, 3\).*\(4,\)"):  # JAX: ValueError
        lax.dot(np.ones((2, 3)), np.ones(4))


def test_bad_dimension_numbers_and_dtypes():
    with pytest.raises(NumbaxValueError, match=r"lhs has shape \(2, 3\).*\[0, 2\)"):
        lax.dot_general(np.ones((2, 3)), np.ones((3,)), (((2,), (0,)), ((), ())))
    with pytest.raises(NumbaxTypeError, match="dimension_numbers"):
        lax.dot_general(np.ones((2, 3)), np.ones((3,)), ((1, 0),))
    with pytest.raises(NumbaxTypeError, match="float32.*float64"):
        lax.dot_general(np.ones((2, 3), np.float32), np.ones(3), (((1,), (0,)), ((), ())))
    with pytest.raises(NumbaxValueError, match=r"dimension_numbers must be specified"):
        lax.dot(np.ones((2, 3, 4)), np.ones(4))
    with pytest.raises(NumbaxValueError, match=r"batch_matmul.*\(3, 4\)"):
        lax.batch_matmul(np.ones((3, 4)), np.ones((2, 4, 3)))


def test_ragged_dot_transformations_and_bad_input():
    from numbax.test_util import check_grads

    rng = np.random.default_rng(6)
    lhs, rhs = rng.normal(size=(5, 3)), rng.normal(size=(2, 3, 4))
    sizes = np.array([2, 3], np.int32)
    want = np.concatenate([lhs[:2] @ rhs[0], lhs[2:] @ rhs[1]])
    np.testing.assert_allclose(numbax.jit(lax.ragged_dot)(lhs, rhs, sizes), want)
    got = numbax.vmap(lambda a: lax.ragged_dot(a, rhs, sizes))(np.stack([lhs, 2 * lhs]))
    np.testing.assert_allclose(got, np.stack([want, 2 * want]))
    check_grads(lambda a, b: lax.ragged_dot(a, b, sizes), (lhs, rhs), order=1)
    with pytest.raises(NotImplementedError, match="group_offset"):
        lax.ragged_dot(lhs, rhs, sizes, group_offset=np.array([1]))
    with pytest.raises(TypeError, match="integer"):
        lax.ragged_dot(lhs, rhs, sizes.astype(float))
    with pytest.raises(ValueError, match="groups"):
        lax.ragged_dot(lhs, rhs, np.array([1, 1, 3]))
    with pytest.raises(TypeError, match="RaggedDotDimensionNumbers"):
        lax.ragged_dot_general(lhs, rhs, sizes, (((1,), (1,)), ((), ())))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.int32])
@pytest.mark.parametrize("lhs_shape,rhs_shape", [((7, 33), (33, 5)), ((7, 33), (33,)),
                                                 ((33,), (33, 5)), ((33,), (33,))])
@pytest.mark.parametrize("fortran", [False, True])
def test_eager_matmul_form_gives_the_general_forms_bits(dtype, lhs_shape, rhs_shape, fortran):
    # x @ y runs as np.matmul on the operands as they are; the general path (transposes and
    # reshapes to one batched matmul) must give the same bits on the same operands
    from numbax._src.lax import dot
    rng = np.random.default_rng(3)
    a = (rng.standard_normal(lhs_shape) * 4).astype(dtype)
    b = (rng.standard_normal(rhs_shape) * 4).astype(dtype)
    if fortran:
        a, b = np.asfortranarray(a), np.asfortranarray(b)
    dims = (((a.ndim - 1,), (0,)), ((), ()))
    plain = np.asarray(lax.dot_general(a, b, dims))
    assert plain.tobytes() == dot._as_batched_matmul(a, b, dims).tobytes()
    np.testing.assert_allclose(plain, np.matmul(a, b), rtol=1e-5, atol=1e-4)
