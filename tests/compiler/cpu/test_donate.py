"""jit's donate_argnums: outputs written into donated Array buffers, the donors deleted."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax.errors import NumbaxTypeError

RNG = np.random.default_rng(0)
X = RNG.standard_normal(6)
P0 = RNG.standard_normal(6)


def _loss(p, x):
    return jnp.sum(jnp.tanh(p * x) ** 2)


def _step(p, x):
    return p - 0.1 * numbax.grad(_loss)(p, x)


_step_donate = numbax.jit(_step, donate_argnums=(0,))
_step_plain = numbax.jit(_step)
_fresh = numbax.jit(lambda x: x + 1.0)  # outputs are buffers jit allocated (donatable)


def _ptr(a) -> int:
    return np.asarray(a).ctypes.data  # keeps no reference to the buffer


def _numpy_step(p, x):
    t = np.tanh(p * x)
    return p - 0.1 * (2 * t * (1 - t**2) * x)


def test_training_loop_matches_without_donation_and_reuses_buffers():
    x = jnp.asarray(X)
    p, q = jnp.asarray(P0), jnp.asarray(P0)
    truth = P0.copy()
    reused = 0
    for _ in range(6):
        before = _ptr(p)
        old = p
        p = _step_donate(p, x)
        q = _step_plain(q, x)
        truth = _numpy_step(truth, X)
        if old.is_deleted():
            reused += 1
            assert _ptr(p) == before
        del old
        np.testing.assert_allclose(np.asarray(p), np.asarray(q), rtol=0, atol=0)
        np.testing.assert_allclose(np.asarray(p), truth, rtol=1e-12)
    assert reused >= 4  # the first call's input came from jnp.asarray (not jit's own buffer)


def test_donated_array_raises_on_every_use():
    x = jnp.asarray(X)
    p = _fresh(P0)
    before = _ptr(p)
    out = _step_donate(p, x)
    assert p.is_deleted() and not out.is_deleted()
    assert _ptr(out) == before and np.asarray(out).flags.writeable is False
    for use in (np.asarray, lambda a: a + 1.0, lambda a: _step_donate(a, x),
                lambda a: _step_plain(a, x), lambda a: a.shape, lambda a: jnp.sum(a)):
        with pytest.raises(RuntimeError, match="Array has been deleted .it was donated"):
            use(p)
    assert repr(p) == "Array(<deleted>)"


def test_numpy_argument_is_never_written_into():
    p = P0.copy()
    out = _step_donate(p, jnp.asarray(X))
    np.testing.assert_array_equal(p, P0)
    assert not np.shares_memory(p, np.asarray(out))
    np.testing.assert_allclose(np.asarray(out), _numpy_step(P0, X), rtol=1e-12)


def test_buffer_still_referenced_is_not_reused():
    p = _fresh(P0)
    view = np.asarray(p)  # a numpy handle on the buffer: donation must not clobber it
    out = _step_donate(p, jnp.asarray(X))
    assert not p.is_deleted()
    np.testing.assert_array_equal(view, P0 + 1.0)
    assert not np.shares_memory(view, np.asarray(out))
    derived = _fresh(P0)
    row = derived[1:]  # eager slicing may view the buffer
    _step_donate(derived, jnp.asarray(X))
    np.testing.assert_array_equal(np.asarray(row), P0[1:] + 1.0)


def test_same_array_twice_is_not_reused():
    f = numbax.jit(lambda a, b: a * 2.0 + b[::-1], donate_argnums=(0,))
    p = _fresh(P0)
    out = f(p, p)
    assert not p.is_deleted()
    np.testing.assert_allclose(np.asarray(out), (P0 + 1) * 2 + (P0 + 1)[::-1], rtol=1e-14)


@pytest.mark.parametrize("fun, ref", [
    (lambda p: (jnp.exp(p), jnp.dot(p, jnp.exp(p))),  # a later library call reads p
     lambda p: (np.exp(p), np.dot(p, np.exp(p)))),
    (lambda p: p + p[::-1], lambda p: p + p[::-1]),  # the nest reads a view of p
    (lambda p: p * 2.0 + jnp.sum(p), lambda p: p * 2.0 + np.sum(p)),  # a reduction first
    (lambda p: (p * 2.0, p + 1.0, -p), lambda p: (p * 2.0, p + 1.0, -p)),  # one nest, 3 outs
    (lambda p: jnp.cumsum(p) + p, lambda p: np.cumsum(p) + p),
])
def test_donation_keeps_results_exact(fun, ref):
    f = numbax.jit(fun, donate_argnums=0)
    for _ in range(2):  # slow path, then the fast path
        p_np = P0 + 1.0
        outs = f(_fresh(P0))
        want = ref(p_np)
        outs, want = (outs, want) if isinstance(want, tuple) else ((outs,), (want,))
        for o, w in zip(outs, want, strict=True):
            np.testing.assert_allclose(np.asarray(o), w, rtol=1e-13)


def test_output_read_by_a_later_kernel_is_not_aliased():
    f = numbax.jit(lambda p: (jnp.exp(p), jnp.dot(p, jnp.exp(p))), donate_argnums=0)
    text = f.lower(_fresh(P0)).as_text()
    driver = text[text.index("def driver"):]
    assert "d0" not in driver  # p is read by the dot after exp's kernel: no output takes it
    g = numbax.jit(lambda p: p * 3.0, donate_argnums=0)
    text = g.lower(_fresh(P0)).as_text()
    assert "def driver(a0, d0=None)" in text


def test_slow_path_and_pytrees_donate():
    step = numbax.jit(lambda params, x: [w - 0.5 * x for w in params], donate_argnums=(0,))
    params = [_fresh(P0), _fresh(2 * P0)]
    ptrs = [_ptr(w) for w in params]
    new = step(params, X)  # numpy x: the slow path
    assert all(w.is_deleted() for w in params)
    assert [_ptr(w) for w in new] == ptrs
    np.testing.assert_allclose(np.asarray(new[1]), 2 * P0 + 1 - 0.5 * X, rtol=1e-14)
    ptrs = [_ptr(w) for w in new]
    x = jnp.asarray(X)
    newer = step(new, x)  # all Arrays in a pytree: the fast tree path
    newer = step(newer, x)
    assert [_ptr(w) for w in newer] == ptrs and all(w.is_deleted() for w in new)
    np.testing.assert_allclose(np.asarray(newer[0]), P0 + 1 - 1.5 * X, rtol=1e-14)


def test_kwargs_and_static_args_with_donation():
    f = numbax.jit(lambda n, p, x: p * n + x, static_argnums=(0,), donate_argnums=(1,))
    p = _fresh(P0)
    before = _ptr(p)
    out = f(3.0, p, X)
    assert p.is_deleted() and _ptr(out) == before
    np.testing.assert_allclose(np.asarray(out), (P0 + 1) * 3.0 + X, rtol=1e-14)
    g = numbax.jit(lambda p, x: p + x, donate_argnums=(0,))
    p = _fresh(P0)
    out = g(p, x=jnp.asarray(X))  # keyword arguments: the slow path
    assert p.is_deleted()
    np.testing.assert_allclose(np.asarray(out), P0 + 1 + X, rtol=1e-14)


def test_bad_donate_argnums():
    with pytest.raises(NumbaxTypeError, match="donate_argnums has an entry .p. of type str"):
        numbax.jit(lambda p: p, donate_argnums=("p",))
