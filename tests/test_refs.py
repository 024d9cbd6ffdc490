"""Mutable array references (numbax.new_ref, numbax.ref), jax.ds, fwd_and_bwd, live_arrays:
the Ref guide's programs (values checked by hand / numpy), under jit, grad, vmap and scan."""
from __future__ import annotations

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax


def test_eager_reads_writes_and_updates():
    ref = numbax.new_ref(jnp.arange(6.0))
    ref[3] = 100.0
    ref.addupdate(jnp.ones(6))
    ref.addupdate(5.0, 0)
    assert np.asarray(ref).tolist() == [6.0, 2.0, 3.0, 101.0, 5.0, 6.0]
    assert repr(ref) == "Ref([  6.,   2.,   3., 101.,   5.,   6.], dtype=float64)"
    assert ref[1:3].tolist() == [2.0, 3.0] and float(numbax.ref.get(ref, 0)) == 6.0
    assert float(numbax.ref.swap(ref, 1, 20.0)) == 2.0 and float(ref[1]) == 20.0
    numbax.ref.set(ref, slice(4, None), 0.0)
    assert ref[...].tolist() == [6.0, 20.0, 3.0, 101.0, 0.0, 0.0]
    assert (ref.shape, ref.dtype, ref.ndim, ref.size) == ((6,), np.float64, 1, 6)
    assert isinstance(ref, numbax.Ref)


def test_closed_over_ref_is_mutated_at_every_jitted_call():
    x_ref = numbax.new_ref(jnp.zeros(3))

    @numbax.jit
    def f():
        x_ref[1] += 1.0

    f()
    f()
    assert x_ref[...].tolist() == [0.0, 2.0, 0.0]


def test_ref_argument_to_jit_is_updated_in_place():
    ref = numbax.new_ref(jnp.ones(2))

    @numbax.jit
    def h(ref, x):
        ref[...] += x
        return ref[0] * 2

    assert float(h(ref, 3.0)) == 8.0 and ref[...].tolist() == [4.0, 4.0]
    assert float(h(ref, 1.0)) == 10.0 and ref[...].tolist() == [5.0, 5.0]


def test_ref_made_inside_a_differentiated_function():
    def g(x):
        x_ref = numbax.new_ref(0.0)
        x_ref[...] = jnp.sin(x)
        x_ref.addupdate(x * x)
        return x_ref[...]

    for grad in (numbax.grad(g), numbax.jit(numbax.grad(g))):
        assert float(grad(1.0)) == pytest.approx(np.cos(1.0) + 2.0, rel=1e-15)
    np.testing.assert_allclose(numbax.vmap(g)(jnp.arange(3.0)),
                               np.sin(np.arange(3.0)) + np.arange(3.0) ** 2, rtol=1e-15)


def test_outer_ref_accumulates_inside_scan_and_keeps_program_order():
    acc = numbax.new_ref(0.0)
    seen = numbax.new_ref(jnp.zeros(4))

    def body(c, x):
        seen[c] = acc[...]  # the value before this step's update
        acc[...] += x
        return c + 1, None

    lax.scan(body, 0, jnp.arange(1.0, 5.0))
    assert float(acc[...]) == 10.0 and seen[...].tolist() == [0.0, 1.0, 3.0, 6.0]
    numbax.jit(lambda xs: lax.scan(body, 0, xs))(jnp.arange(1.0, 5.0))
    assert float(acc[...]) == 20.0 and seen[...].tolist() == [10.0, 11.0, 13.0, 16.0]


def test_writing_an_outer_ref_under_grad_stores_the_primal():
    log = numbax.new_ref(0.0)

    def f(x):
        y = x ** 3
        log[...] = y
        return y

    assert float(numbax.grad(f)(2.0)) == 12.0 and float(log[...]) == 8.0


def test_unsupported_uses_raise_clear_errors():
    outer = numbax.new_ref(jnp.zeros(2))
    with pytest.raises(ValueError, match="vmapped value on an unbatched array reference"):
        numbax.vmap(lambda x: outer.__setitem__(..., x))(jnp.ones((3, 2)))

    def local_in_scan(xs):
        acc = numbax.new_ref(0.0)
        lax.scan(lambda c, x: (acc.addupdate(x), (c, None))[1], 0, xs)
        return acc[...]

    assert float(local_in_scan(jnp.arange(4.0))) == 6.0  # eager: made outside any trace
    with pytest.raises(ValueError, match="nested transformation"):
        numbax.jit(local_in_scan)(jnp.arange(4.0))
    ref = numbax.new_ref(jnp.arange(3))
    assert numbax.freeze(ref).tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="frozen or freed"):
        ref[...]
    other = numbax.new_ref(1.0)
    numbax.free_ref(other)
    with pytest.raises(ValueError, match="frozen or freed"):
        other[...] = 2.0
    with pytest.raises(TypeError, match="init_val is a str"):
        numbax.new_ref("x")
    with pytest.raises(TypeError, match="value is a Ref"):
        numbax.new_ref(1.0)[...] = numbax.new_ref(2.0)
    with pytest.raises(ValueError, match="kind is 'other'"):
        numbax.new_ref(1.0, kind="other")
    with pytest.raises(TypeError, match="cannot be constructed directly"):
        numbax.Ref()


def test_empty_ref_and_memory_spaces():
    f = numbax.jit(lambda: (lambda r: (r.__setitem__(..., jnp.ones(2)), r[...])[1])(
        numbax.empty_ref(numbax.ShapeDtypeStruct((2,), np.float32))))
    out = f()
    assert out.dtype == np.float32 and out.tolist() == [1.0, 1.0]
    assert [s.name for s in numbax.memory.Space] == ["Device", "Host", "Any"]
    ref = numbax.new_ref(jnp.ones(2), memory_space=numbax.memory.Space.Host)
    assert ref.memory_space is numbax.memory.Space.Host


def test_ds_indexes_arrays_and_refs_with_traced_starts():
    x = jnp.arange(10)
    assert x[numbax.ds(4, 2)].tolist() == [4, 5] and x[numbax.ds(3)].tolist() == [0, 1, 2]
    assert x[numbax.ds(1, 3, 2)].tolist() == [1, 3, 5] and numbax.ds(None) == slice(None)
    f = numbax.jit(lambda x, i: x[numbax.ds(i, 2)])
    assert f(x, 4).tolist() == [4, 5] and f(x, 8).tolist() == [8, 9]
    y = jnp.arange(12).reshape(3, 4)
    assert numbax.jit(lambda y, i: y[..., numbax.ds(i, 2)])(y, 2).tolist() == \
        [[2, 3], [6, 7], [10, 11]]
    ref = numbax.new_ref(jnp.zeros(5))
    numbax.jit(lambda i: ref.__setitem__(numbax.ds(i, 2), jnp.array([1.0, 2.0])))(2)
    assert ref[...].tolist() == [0.0, 0.0, 1.0, 2.0, 0.0]
    assert ref[numbax.ds(1, 3)].tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(ValueError, match="Non-static stride"):
        numbax.ds(1, 2, 1.5)


def test_fwd_and_bwd_reuses_one_backward_compilation():
    def f(x, W):
        return jnp.tanh(x @ W)

    x, W = np.linspace(-1, 1, 6).reshape(2, 3), np.linspace(0, 1, 12).reshape(3, 4)
    fwd, bwd = numbax.fwd_and_bwd(f, argnums=(0, 1))
    ct = np.ones((2, 4))
    want_y, f_vjp = numbax.vjp(f, x, W)
    want = f_vjp(ct)
    for _ in range(3):
        y, res = fwd(x, W)
        got = bwd(res, ct)
        np.testing.assert_allclose(y, want_y, rtol=1e-15)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-14)
    fwd1, bwd1 = numbax.fwd_and_bwd(lambda x: (jnp.sum(x ** 2), "aux"), argnums=0,
                                    has_aux=True, jitted=False)
    y, res, aux = fwd1(np.arange(3.0))
    assert aux == "aux" and bwd1(res, 1.0).tolist() == [0.0, 2.0, 4.0]
    with pytest.raises(TypeError, match="argnums is"):
        numbax.fwd_and_bwd(f, argnums="x")
    with pytest.raises(ValueError, match="refers to argument 5"):
        numbax.fwd_and_bwd(f, argnums=5, jitted=False)[0](x, W)


def test_live_arrays_lists_arrays_in_use():
    marker = jnp.arange(7) * 3
    assert any(a is marker for a in numbax.live_arrays())
    assert any(a is marker for a in numbax.live_arrays("cpu"))
    assert not any(a is marker for a in numbax.live_arrays("gpu"))
    with pytest.raises(ValueError, match="platform is 'tpu'"):
        numbax.live_arrays("tpu")
