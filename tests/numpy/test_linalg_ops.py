"""numbax.numpy products (dot, matmul, tensordot, einsum, kron, cross) against numpy."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax.errors import NumbaxValueError
from tests.jax_promotion import jax_promoted

RNG = np.random.default_rng(4)
pytestmark = pytest.mark.filterwarnings("ignore:Arrays of 2-dimensional:DeprecationWarning")


def _r(*shape, dtype=np.float64):
    x = RNG.normal(size=shape)
    return x.astype(dtype) if np.dtype(dtype).kind != "i" else (x * 4).astype(dtype)


def _check(got, want, rtol=1e-10):
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-10)


@pytest.mark.parametrize("sa,sb", [((), (3,)), ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)),
                                   ((2, 3), (3, 4)), ((2, 5, 3), (4, 3, 2)), ((2, 3), ())])
def test_dot(sa, sb):
    a, b = _r(*sa), _r(*sb)
    _check(jnp.dot(a, b), np.dot(a, b))


@pytest.mark.parametrize("sa,sb", [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)),
                                   ((2, 3), (3, 4)), ((5, 2, 3), (3, 4)), ((5, 1, 2, 3), (7, 3, 2)),
                                   ((1, 2, 3), (4, 3, 2)), ((3,), (6, 3, 2))])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
def test_matmul(sa, sb, dtype):
    a, b = _r(*sa, dtype=dtype), _r(*sb, dtype=dtype)
    _check(jnp.matmul(a, b), np.matmul(a, b), rtol=1e-5)
    _check(jnp.asarray(a) @ b, a @ b, rtol=1e-5)


@pytest.mark.parametrize("sa,sb", [((16, 8, 5), (5, 3)), ((5,), (4, 5, 3)),
                                   ((2, 1, 4, 5), (3, 5, 6)), ((1, 4, 5), (2, 5, 3)),
                                   ((3, 4, 5), (3, 5, 2))])
def test_matmul_broadcast_axes_are_free_axes_as_in_jax(sa, sb):
    """As jnp.matmul forms it: an axis only one operand has (or has at a size above 1) is a
    free axis of that operand's product, not a broadcast copy of the other (activations @
    weights is one product, and the weights' gradient one product too); an axis both have is
    a batch axis. Results and gradients as numpy's."""
    a, b = _r(*sa), _r(*sb)
    jaxpr = numbax.make_jaxpr(jnp.matmul)(a, b).jaxpr
    assert "broadcast_in_dim" not in [e.primitive.name for e in jaxpr.eqns]
    (dot,) = [e for e in jaxpr.eqns if e.primitive.name == "dot_general"]
    shared = sum(x == y > 1 for x, y in zip(sa[-3::-1], sb[-3::-1]))
    assert len(dot.params["dimension_numbers"][1][0]) == shared
    _check(jnp.matmul(a, b), np.matmul(a, b))
    _check(numbax.jit(jnp.matmul)(a, b), np.matmul(a, b))
    g = numbax.grad(lambda y: jnp.sum(jnp.sin(jnp.matmul(a, y))))(b)
    np.testing.assert_allclose(np.asarray(g), _fd(lambda y: np.sum(np.sin(a @ y)), b),
                               rtol=1e-6, atol=1e-8)


def test_mixed_dtype_products_promote():
    """As JAX promotes: an integer operand joins a float one at the float's width."""
    a, b = _r(2, 3, dtype=np.float32), _r(3, dtype=np.int64)
    _check(jnp.dot(a, b), np.dot(*jax_promoted((a, b))), rtol=1e-5)
    c = _r(3, 2, dtype=np.int32)
    _check(jnp.matmul(b.astype(np.int8), c), np.matmul(b.astype(np.int8), c), rtol=1e-5)


def test_vdot_inner_outer_tensordot_kron_cross():
    a, b = _r(3, 4), _r(5, 4)
    c = a + 1j * _r(3, 4)
    _check(jnp.vdot(c, c), np.vdot(c, c))
    _check(jnp.inner(a, b), np.inner(a, b))
    _check(jnp.inner(a[0], b[0]), np.inner(a[0], b[0]))
    _check(jnp.outer(a, b), np.outer(a, b))
    x, y = _r(2, 3, 4), _r(3, 4, 5)
    _check(jnp.tensordot(x, y), np.tensordot(x, y))
    _check(jnp.tensordot(x, y[:, :, 0].T, 1), np.tensordot(x, y[:, :, 0].T, 1))
    _check(jnp.tensordot(x, y, ((1, 2), (0, 1))), np.tensordot(x, y, ((1, 2), (0, 1))))
    _check(jnp.tensordot(x, y, 0), np.tensordot(x, y, 0))
    _check(jnp.kron(a, b[:2, :2]), np.kron(a, b[:2, :2]))
    _check(jnp.kron(a[0], b), np.kron(a[0], b))
    u, v = _r(4, 3), _r(3)
    _check(jnp.cross(u, v), np.cross(u, v))
    _check(jnp.cross(u[:, :2], v[:2]), _cross_of_planar(u[:, :2], v[:2]))
    _check(jnp.cross(u.T, v, axisa=0), np.cross(u.T, v, axisa=0))
    _check(jnp.cross(u[:, :2], v), _cross_of_planar(u[:, :2], v))


def _cross_of_planar(a, b):
    """The cross product where 2-vectors are 3-vectors with z = 0 (JAX's and numpy 1's rule;
    numpy 2.5 refuses 2-vectors): the z component alone when both are 2-vectors."""
    def lift(v):
        return np.concatenate([v, np.zeros((*v.shape[:-1], 1))], -1) if v.shape[-1] == 2 else v

    c = np.cross(lift(a), lift(b))
    return c[..., 2] if a.shape[-1] == b.shape[-1] == 2 else c


EINSUMS = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]), ("ij->ji", [(2, 3)]), ("ij->", [(2, 3)]), ("ij->j", [(2, 3)]),
    ("i,i->", [(4,), (4,)]), ("i,j->ij", [(2,), (3,)]), ("bij,bjk->bik", [(5, 2, 3), (5, 3, 4)]),
    ("...ij,...jk->...ik", [(5, 2, 3), (5, 3, 4)]), ("...ij,jk", [(2, 5, 2, 3), (3, 4)]),
    ("i...,i...->...", [(3, 2, 4), (3, 2, 4)]), ("ij...,jk->ik...", [(2, 3, 7), (3, 4)]),
    ("abc,cd,de->abe", [(2, 3, 4), (4, 5), (5, 6)]), ("ijk,ikl,ilm->ijm",
                                                      [(2, 3, 4), (2, 4, 5), (2, 5, 3)]),
    ("iij->j", [(3, 3, 2)]), ("ij,ij,ij->i", [(2, 3), (2, 3), (2, 3)]),
    ("ab,cd->", [(2, 3), (4, 5)]), ("...,...", [(2, 3), (1, 3)]), ("i,i", [(1,), (4,)]),
    ("ba,ca->bc", [(3, 2), (4, 2)]), ("a b, b c -> a c", [(2, 3), (3, 4)]),
]


@pytest.mark.parametrize("subscripts,shapes", EINSUMS)
def test_einsum(subscripts, shapes):
    ops = [_r(*s) for s in shapes]
    _check(jnp.einsum(subscripts, *ops), np.einsum(subscripts.replace(" ", ""), *ops))


def test_einsum_int_and_mixed_dtypes():
    a, b = _r(2, 3, dtype=np.int32), _r(3, 4, dtype=np.float32)
    _check(jnp.einsum("ij,jk->ik", a, b), np.einsum("ij,jk->ik", *jax_promoted((a, b))),
           rtol=1e-5)


def _fd(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


def test_grads_of_matmul_and_einsum():
    a, b = _r(2, 3, 4), _r(4, 5)
    f = lambda x: jnp.sum(jnp.sin(jnp.matmul(x, b)))  # noqa: E731
    np.testing.assert_allclose(np.asarray(numbax.grad(f)(a)),
                               _fd(lambda x: np.sum(np.sin(x @ b)), a), rtol=1e-6, atol=1e-8)
    g = lambda y: jnp.sum(jnp.einsum("bij,jk,kk->bik", a, y, jnp.eye(4) * 2.0) ** 2)  # noqa
    ref = lambda y: np.sum(np.einsum("bij,jk,kk->bik", a, y, np.eye(4) * 2.0) ** 2)  # noqa
    y = _r(4, 4)
    np.testing.assert_allclose(np.asarray(numbax.grad(g)(y)), _fd(ref, y), rtol=1e-6, atol=1e-6)
    h = lambda x: jnp.einsum("ii->", x) * jnp.einsum("ij,ij", x, x)  # noqa: E731
    np.testing.assert_allclose(np.asarray(numbax.grad(h)(y)),
                               _fd(lambda x: np.trace(x) * np.sum(x * x), y), rtol=1e-6)


def test_traceable_and_vmapped():
    a, b = _r(6, 2, 3), _r(3, 4)
    jaxpr = numbax.make_jaxpr(lambda x, y: jnp.einsum("ij,jk->ki", x, y))(a[0], b)
    text = str(jaxpr)
    assert "dot_general" in text and "einsum" not in text
    out = numbax.vmap(lambda x: jnp.einsum("ij,jk->ik", x, b))(a)
    _check(out, np.einsum("bij,jk->bik", a, b))
    out = numbax.vmap(jnp.matmul, in_axes=(0, None))(a, b)
    _check(out, a @ b)
    out = numbax.vmap(jnp.dot)(a[:, 0], a[:, 1])
    _check(out, np.einsum("bi,bi->b", a[:, 0], a[:, 1]))


def test_bad_inputs():
    with pytest.raises(NumbaxValueError, match=r"\(2, 3\).*\(4, 5\)"):
        jnp.dot(_r(2, 3), _r(4, 5))
    with pytest.raises(NumbaxValueError, match=r"a has shape \(2, 3\) and b has shape \(2, 3\)"):
        jnp.matmul(_r(2, 3), _r(2, 3))
    with pytest.raises(NumbaxValueError, match=r"\(2,\) \(3,\)"):
        jnp.matmul(_r(2, 2, 3), _r(3, 3, 2))
    with pytest.raises(NumbaxValueError, match="rank >= 1"):
        jnp.matmul(1.0, _r(2))
    with pytest.raises(NumbaxValueError, match="label 'j' has size 3.*4"):
        jnp.einsum("ij,jk", _r(2, 3), _r(4, 5))
    with pytest.raises(NumbaxValueError, match="name 2 operands but 1"):
        jnp.einsum("ij,jk", _r(2, 3))
    with pytest.raises(NumbaxValueError, match="does not match"):
        jnp.einsum("ijk", _r(2, 3))
    with pytest.raises(NumbaxValueError, match="output label 'z'"):
        jnp.einsum("ij->z", _r(2, 3))
    with pytest.raises(NumbaxValueError, match="contracted axis"):
        jnp.tensordot(_r(2, 3), _r(2, 3), ((1,), (0,)))
    with pytest.raises(NumbaxValueError, match="expected 2 or 3"):
        jnp.cross(_r(4), _r(4))
    with pytest.raises(TypeError):
        jnp.dot(np.array(["a"]), _r(1))


@pytest.mark.parametrize("name, call", [
    ("matmul", lambda a, b, **kw: jnp.matmul(a, b, **kw)),
    ("dot", lambda a, b, **kw: jnp.dot(a, b, **kw)),
    ("inner", lambda a, b, **kw: jnp.inner(a, b.T, **kw)),
    ("tensordot", lambda a, b, **kw: jnp.tensordot(a, b, 1, **kw)),
    ("einsum", lambda a, b, **kw: jnp.einsum("ij,jk->ik", a, b, **kw)),
    ("vdot", lambda a, b, **kw: jnp.vdot(a, b, **kw)),
])
def test_products_pass_precision_and_result_type_to_dot_general(name, call):
    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    b = np.arange(6.0, dtype=np.float32).reshape(3, 2) if name != "vdot" else a
    jaxpr = numbax.make_jaxpr(lambda a, b: call(a, b, precision="highest",
                                                preferred_element_type=np.float64))(a, b)
    [dot] = [e for e in jaxpr.eqns if e.primitive.name == "dot_general"]
    highest = numbax.lax.Precision.HIGHEST
    assert dot.params["precision"] == (highest, highest), name
    assert dot.params["preferred_element_type"] == np.float64, name
    got = call(a, b, preferred_element_type=np.float64)
    want = np.vdot(a, a) if name == "vdot" else a @ b
    want = np.asarray(want, np.float64)
    assert got.dtype == np.float64, name
    np.testing.assert_array_equal(np.asarray(got), want)
