"""JAX-doc leftovers (session 32): vmap over a Ref argument and a Ref as an array operand,
weak types through differentiated loops, offloaded residuals in print_saved_residuals.
Expected values are JAX 0.10.2's recorded outputs or worked out by hand."""
from __future__ import annotations

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax.ad_checkpoint import checkpoint_name, print_saved_residuals

# ----------------------------------------------------------------------------- refs under vmap


def test_vmap_maps_a_ref_argument():
    def scale_into(x, ref):
        ref[...] = 2.0 * x

    xs = jnp.arange(3.0)
    out_ref = numbax.new_ref(jnp.zeros(3))
    assert numbax.vmap(scale_into)(xs, out_ref) is None
    assert np.asarray(out_ref).tolist() == [0.0, 2.0, 4.0]  # JAX: Ref([0., 2., 4.])


def test_vmapped_ref_reads_and_writes_its_row():
    ref = numbax.new_ref(jnp.arange(6.0).reshape(3, 2))
    out = numbax.vmap(lambda x, r: r[...] * x)(jnp.full((3, 2), 2.0), ref)
    assert out.tolist() == [[0.0, 2.0], [4.0, 6.0], [8.0, 10.0]]

    def inc(r):
        r[...] = r[...] + jnp.arange(2.0)

    numbax.vmap(inc)(ref)  # the Ref alone sizes the mapped axis
    assert np.asarray(ref).tolist() == [[0.0, 2.0], [2.0, 4.0], [4.0, 6.0]]
    cols = numbax.new_ref(jnp.zeros((2, 4)))
    numbax.vmap(lambda r: r.__setitem__(0, 5.0), in_axes=1)(cols)
    assert np.asarray(cols).tolist() == [[5.0] * 4, [0.0] * 4]


def test_vmapped_ref_nested_and_under_jit():
    ref = numbax.new_ref(jnp.zeros((2, 3)))
    numbax.vmap(numbax.vmap(lambda x, r: r.__setitem__(..., x * 2)))(jnp.ones((2, 3)), ref)
    assert np.asarray(ref).tolist() == [[2.0] * 3] * 2
    ref = numbax.new_ref(jnp.zeros(3))
    numbax.jit(numbax.vmap(lambda x, r: r.__setitem__(..., x * 3)))(jnp.arange(3.0), ref)
    assert np.asarray(ref).tolist() == [0.0, 3.0, 6.0]

    @numbax.jit
    def made_inside(xs):
        r = numbax.new_ref(jnp.zeros(3))
        numbax.vmap(lambda x, q: q.__setitem__(..., x + 1))(xs, r)
        return r[...]

    assert made_inside(jnp.arange(3.0)).tolist() == [1.0, 2.0, 3.0]


def test_unmapped_ref_still_refuses_a_batched_write():
    ref = numbax.new_ref(jnp.zeros((3, 2)))

    def add(x, r):
        r[...] = r[...] + x

    with pytest.raises(ValueError, match="unbatched array reference"):
        numbax.vmap(add, in_axes=(0, None))(jnp.ones((3, 2)), ref)


def test_ref_is_not_an_array_operand():
    ref = numbax.new_ref(jnp.arange(3.0))
    for op in (jnp.sin, lambda r: jnp.add(r, 1), jnp.sum, numbax.jit(jnp.sin)):
        with pytest.raises(TypeError, match="Ref"):  # JAX: TypeError
            op(ref)
    assert jnp.sin(ref[...]).shape == (3,)
    assert ref.aval.str_short().startswith("Ref{") and ref.aval.shape == (3,)


# ----------------------------------------------------------------------------- weak types


@pytest.fixture
def x32():
    with numbax.enable_x64(False):
        yield


def _weak(x) -> bool:
    return bool(x.weak_type)


def test_grad_through_fori_loop_keeps_a_weak_carry_weak(x32):
    def f(c):
        return lax.fori_loop(0, 3, lambda i, x: x * 2.0, c)

    g = numbax.grad(f)(2.0)  # JAX: Array(8., dtype=float32, weak_type=True)
    assert float(g) == 8.0 and _weak(g) and g.dtype == np.float32
    assert _weak(numbax.jit(numbax.grad(f))(2.0))
    assert _weak(numbax.jit(f)(2.0))  # JAX: weak float32
    primal, tangent = numbax.jvp(f, (2.0,), (1.0,))
    assert _weak(primal) and _weak(tangent) and float(tangent) == 8.0


def test_jit_of_fori_loop_promotes_a_weak_int_carry(x32):
    out = numbax.jit(lambda c: lax.fori_loop(0, 3, lambda i, x: x * 2.0, c))(2)
    assert float(out) == 16.0 and out.dtype == np.float32 and not _weak(out)  # as JAX


def test_jvp_of_scan_and_while_keep_weak_types(x32):
    xs = jnp.arange(3.0, dtype=np.float32)
    (carry, ys), (carry_t, ys_t) = numbax.jvp(
        lambda c: lax.scan(lambda x, a: (x * a, x), c, xs), (2.0,), (1.0,))
    assert not _weak(carry) and _weak(ys) and not _weak(carry_t) and _weak(ys_t)  # as JAX
    out, out_t = numbax.jvp(lambda c: lax.while_loop(lambda x: x < 10, lambda x: x * 2.0, c),
                            (2.0,), (1.0,))
    assert float(out) == 16.0 and _weak(out) and _weak(out_t) and float(out_t) == 8.0


# ----------------------------------------------------------------------------- saved residuals


def _saved(capsys, f, *args) -> list[str]:
    print_saved_residuals(f, *args)
    return capsys.readouterr().out.splitlines()


def test_checkpoint_residuals_name_the_parameters(capsys):
    def g(W, x):
        return jnp.sin(jnp.dot(W, x))

    w, x = jnp.ones((5, 4), np.float32), jnp.ones(4, np.float32)
    # JAX 0.10.2 labels a checkpointed function's arguments by parameter name
    assert _saved(capsys, numbax.checkpoint(g), w, x) == [
        "f32[5,4] from the argument W", "f32[4] from the argument x"]
    assert _saved(capsys, numbax.checkpoint(lambda *a: g(*a)), w, x) == [
        "f32[5,4] from the argument a[0]", "f32[4] from the argument a[1]"]


def test_offloaded_residuals_print_as_host_device_puts(capsys):
    policy = numbax.checkpoint_policies.save_and_offload_only_these_names(
        names_which_can_be_saved=["y"], names_which_can_be_offloaded=["z"],
        offload_src="device", offload_dst="pinned_host")

    def f(x):
        y = checkpoint_name(jnp.sin(x), "y")
        z = checkpoint_name(jnp.sin(y), "z")
        return jnp.sum(jnp.sin(z))

    lines = _saved(capsys, numbax.checkpoint(f, policy=policy), jnp.ones(3, np.float32))
    assert len(lines) == 3 and lines[0] == "f32[3] from the argument x"
    assert lines[1].startswith("f32[3] named 'y' from ")
    assert lines[2] == "f32<host>[3] output of device_put from "  # JAX's line, verbatim


def test_offload_dot_policy_residuals(capsys):
    policy = numbax.checkpoint_policies.offload_dot_with_no_batch_dims("device", "pinned_host")

    def f(x):
        x = jnp.sin(jnp.einsum("ij,jk->ik", x, x))
        return jnp.sum(jnp.sin(jnp.einsum("ij,jk->ik", x, x)))

    lines = _saved(capsys, numbax.checkpoint(f, policy=policy), jnp.ones((3, 3), np.float32))
    assert lines == ["f32[3,3] from the argument x",
                     "f32<host>[3,3] output of device_put from ",
                     "f32<host>[3,3] output of device_put from "]
