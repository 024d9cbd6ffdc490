"""Results never alias a buffer the caller can still write (issue 21 item 2): outputs of jit,
vmap, jvp and eager primitives that are views of a numpy argument (reshape, ravel, slices,
indexing, new axes, identity) are copies, and numpy arrays closed over by a traced function
are captured by value at trace time, as JAX does. Data loaders reusing one batch buffer rely
on both."""
from __future__ import annotations

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax

VIEWS = {
    "identity": lambda v: v, "reshape": lambda v: v.reshape(2, 3), "ravel": lambda v: v.ravel(),
    "tail": lambda v: v[1:], "first": lambda v: v[0], "new-axis": lambda v: v[None],
    "pair": lambda v: (v * 2, v), "transpose": lambda v: v.reshape(3, 2).T,
}


def _survives_overwrite(run, shape=(6,)):
    """Calls `run` on a fresh buffer, then overwrites the buffer; the result must not move."""
    x = np.arange(float(np.prod(shape))).reshape(shape)
    out = run(x)
    before = [np.array(o) for o in numbax.tree_util.tree_leaves(out)]
    x[...] = -99.0
    after = [np.asarray(o) for o in numbax.tree_util.tree_leaves(out)]
    for b, a in zip(before, after, strict=True):
        np.testing.assert_array_equal(a, b)
    assert all(isinstance(o, numbax.Array) for o in numbax.tree_util.tree_leaves(out))


@pytest.mark.parametrize("name", VIEWS)
def test_jit_outputs_do_not_alias_numpy_arguments(name):
    f = numbax.jit(VIEWS[name])
    _survives_overwrite(f)
    _survives_overwrite(lambda x: f.lower(x).compile()(x))
    _survives_overwrite(lambda x: numbax.jit(lambda d: VIEWS[name](d["a"]))({"a": x}))


@pytest.mark.parametrize("name", VIEWS)
def test_vmap_outputs_do_not_alias_numpy_arguments(name):
    _survives_overwrite(numbax.vmap(VIEWS[name]), shape=(2, 6))
    _survives_overwrite(lambda x: numbax.vmap(lambda a, b: VIEWS[name](b), in_axes=(0, None))(
        np.ones(2), x))


def test_jvp_vjp_and_eager_primitives_do_not_alias():
    _survives_overwrite(lambda x: numbax.jvp(lambda v: v, (x,), (x,)))
    _survives_overwrite(lambda x: numbax.jvp(lambda v: v.reshape(2, 3), (x,), (x,)))
    _survives_overwrite(lambda x: numbax.vjp(lambda v: v, x)[1](x))
    _survives_overwrite(lambda x: lax.reshape(x, (2, 3)))
    _survives_overwrite(lambda x: lax.slice(x, (1,), (4,)))
    _survives_overwrite(lambda x: lax.stop_gradient(x))
    _survives_overwrite(lambda x: lax.squeeze(x[None], (0,)))


def test_outputs_viewing_numbax_arrays_are_not_copied():
    """Arrays are immutable, so a view of one is safe to return as it is."""
    a = jnp.arange(6.0)
    out = numbax.jit(lambda v: v[1:])(a)
    assert np.shares_memory(np.asarray(out), np.asarray(a))
    assert not np.asarray(out).flags.writeable


def test_closed_over_numpy_arrays_are_captured_at_trace_time():
    for c in (np.ones(3), np.array(2.0)):  # an array constant and a 0-d literal
        want = np.asarray(numbax.jit(lambda v, c=c: v + c)(np.zeros(3)))
        f = numbax.jit(lambda v, c=c: v + c)
        first = np.asarray(f(np.zeros(3)))
        c[...] = 5.0
        np.testing.assert_array_equal(np.asarray(f(np.zeros(3))), first)  # cached trace
        np.testing.assert_array_equal(first, want)
    c = np.arange(4.0)
    g = numbax.jit(lambda v: lax.cond(v > 0, lambda: c[1:] * 1.0, lambda: c[1:]))
    first = np.asarray(g(1.0)), np.asarray(g(-1.0))
    out = g(-1.0)  # returns a view of the captured constant
    c[:] = 7.0
    np.testing.assert_array_equal(np.asarray(g(1.0)), first[0])
    np.testing.assert_array_equal(np.asarray(g(-1.0)), first[1])
    np.testing.assert_array_equal(np.asarray(out), [1.0, 2.0, 3.0])


@pytest.mark.parametrize("order", ["C", "F"])
def test_large_returned_inputs_are_copied_on_the_threads(order, monkeypatch):
    """A jitted program returning its input copies it (as above), a large one on Numba's
    threads (runtime/copies.py), into a C-contiguous array whatever the input's layout."""
    from numbax._src.compiler.cpu.runtime import copies

    calls = []
    for name in ("_copy_runs", "_copy_tiles"):
        kernel = getattr(copies, name)
        monkeypatch.setattr(copies, name, lambda *a, k=kernel: (calls.append(1), k(*a)))
    x = np.asfortranarray(np.arange(2 ** 21, dtype=np.float32).reshape(1024, 2048)) \
        if order == "F" else np.arange(2 ** 21, dtype=np.float32).reshape(1024, 2048)
    with numbax.config.override("cpu_threads", 2):
        _survives_overwrite(numbax.jit(lambda v: (v, v + 1)), shape=(1024, 2048))
        out = np.asarray(numbax.jit(lambda v: v)(x))
    np.testing.assert_array_equal(out, x)
    assert out.flags.c_contiguous and calls
