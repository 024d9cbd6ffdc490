"""pmap's donate_argnums, as JAX 0.10.2 behaves: a donated Array laid out as pmap lays it (a
pmap's result) is deleted and its buffer takes a matching output; numpy arrays, Python values
and Arrays laid out otherwise are left alone; unusable donations warn; bad entries raise."""
import warnings

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from tests.virtual_devices import cpu_devices

N = 4
four_devices = cpu_devices(N, eager=True)


def _placed(x):
    """x laid out over the devices as pmap lays its mapped arguments (a pmap's result)."""
    return numbax.pmap(lambda a: a)(jnp.asarray(x))


def _address(x) -> int:
    return np.asarray(x).__array_interface__["data"][0]


def test_donated_result_is_deleted_and_its_buffer_takes_the_output():
    f = numbax.pmap(lambda a, b: a * 2 + b, donate_argnums=0)
    x = _placed(np.arange(12.0).reshape(N, 3))
    at = _address(x)
    y = f(x, np.ones((N, 3)))
    assert x.is_deleted() and repr(x) == "Array(<deleted>)"
    np.testing.assert_array_equal(np.asarray(y), np.arange(12.0).reshape(N, 3) * 2 + 1)
    assert _address(y) == at
    for use in (lambda: x + 1, lambda: np.asarray(x), lambda: x.shape, lambda: f(x, 1.0)):
        with pytest.raises(RuntimeError, match=r"Array has been deleted \(it was donated"):
            use()
    z = f(y, np.ones((N, 3)))  # the second call takes pmap's fast path
    assert y.is_deleted() and _address(z) == at
    np.testing.assert_array_equal(np.asarray(z), np.arange(12.0).reshape(N, 3) * 4 + 3)


def test_a_buffer_something_else_views_is_not_written():
    f = numbax.pmap(lambda a: a + 1, donate_argnums=0)
    x = _placed(np.zeros((N, 2)))
    held = np.asarray(x)
    y = f(x)
    assert x.is_deleted() and _address(y) != _address(held)
    np.testing.assert_array_equal(held, np.zeros((N, 2)))
    np.testing.assert_array_equal(np.asarray(y), np.ones((N, 2)))


def test_outputs_that_view_the_donated_input_are_read_before_it_is_overwritten():
    f = numbax.pmap(lambda a: (a * 10, a[::-1], a), donate_argnums=0)
    x = np.arange(12.0).reshape(N, 3)
    big, rev, same = f(_placed(x))
    np.testing.assert_array_equal(np.asarray(big), x * 10)
    np.testing.assert_array_equal(np.asarray(rev), x[:, ::-1])
    np.testing.assert_array_equal(np.asarray(same), x)


def test_host_values_and_arrays_laid_out_otherwise_are_left_alone():
    """JAX copies them onto the devices first: the copy is donated, the argument survives."""
    f = numbax.pmap(lambda a, b: a + b, in_axes=(0, None), donate_argnums=(0,))
    xn = np.arange(8.0).reshape(N, 2)
    plain = jnp.arange(8.0).reshape(N, 2)
    across = _placed(np.arange(8.0).reshape(2, N)).T  # split along its second axis
    for x in (xn, plain, across):
        np.testing.assert_array_equal(np.asarray(f(x, 1.0)), np.asarray(x) + 1)
        assert not getattr(x, "is_deleted", lambda: False)()
    np.testing.assert_array_equal(xn, np.arange(8.0).reshape(N, 2))


def test_pytrees_statics_and_positions_as_jax_counts_them():
    x, y = _placed(np.ones((N, 2))), _placed(np.ones((N, 2)))
    g = numbax.pmap(lambda t, k, u: t[0] * k + t[1] + u, static_broadcasted_argnums=1,
                    donate_argnums=(0,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # two donated, one output
        np.testing.assert_array_equal(np.asarray(g((x, y), 3.0, np.ones((N, 2)))),
                                      np.full((N, 2), 5.0))
    assert x.is_deleted() and y.is_deleted()
    keep = [_placed(np.ones((N, 2))) for _ in range(3)]
    h = numbax.pmap(lambda a, b: a + b, donate_argnums=(-1, 5))  # nothing, as in JAX
    h(keep[0], keep[1])
    numbax.pmap(lambda a, b: a + b, donate_argnums=1)(keep[0], b=keep[2])  # keywords: no
    assert not any(k.is_deleted() for k in keep)


def test_unusable_donation_warns_with_the_block_shape():
    f = numbax.pmap(lambda a: a.sum(), donate_argnums=0)
    x = _placed(np.ones((N, 3)))
    with pytest.warns(UserWarning, match=r"Some donated buffers were not usable: f64\[1,3\]"):
        out = f(x)
    np.testing.assert_array_equal(np.asarray(out), np.full(N, 3.0))
    assert x.is_deleted()


def test_no_donation_under_a_trace():
    """As under JAX's jit: a traced pmap donates nothing."""
    x = _placed(np.ones((N, 2)))
    f = numbax.pmap(lambda a: a + 1, donate_argnums=0)
    assert "shard_map" in str(numbax.make_jaxpr(f)(x))
    assert not x.is_deleted()


@pytest.mark.parametrize("donate, error, match", [
    ("a", TypeError, r"pmap: donate_argnums has an entry 'a'"),
    (1.5, TypeError, r"pmap: donate_argnums has 1.5 of type float"),
    (None, TypeError, r"pmap: donate_argnums has None"),
])
def test_donate_argnums_of_the_wrong_type(donate, error, match):
    with pytest.raises(error, match=match):
        numbax.pmap(lambda a: a, donate_argnums=donate)


def test_static_and_donated_cannot_intersect():
    with pytest.raises(ValueError, match=r"`static_argnums` \[1\] and `donate_argnums` \[0, 1\] "
                                         "cannot intersect"):
        numbax.pmap(lambda a, k: a, static_broadcasted_argnums=1, donate_argnums=(0, 1))
