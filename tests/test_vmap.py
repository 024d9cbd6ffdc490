"""vmap: in_axes/out_axes forms, pytrees, nesting, collectives, composition with grad."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax

RNG = np.random.default_rng(0)


def loop_stack(f, *args, in_axes=0):
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    n = next(np.shape(a)[ax] for a, ax in zip(args, axes) if ax is not None)
    outs = []
    for i in range(n):
        sliced = [a if ax is None else np.take(a, i, axis=ax) for a, ax in zip(args, axes)]
        outs.append(np.asarray(f(*sliced)))
    return np.stack(outs)


@pytest.mark.parametrize("in_axes", [0, 1, -1, (0, None), (1, 0), (None, 1)])
def test_binary_elementwise_in_axes(in_axes):
    x = RNG.normal(size=(3, 3))
    y = RNG.normal(size=(3, 3))
    f = lambda a, b: jnp.sin(a) * b + 1.0  # noqa: E731
    got = numbax.vmap(f, in_axes=in_axes)(x, y)
    np.testing.assert_allclose(np.asarray(got), loop_stack(f, x, y, in_axes=in_axes))


def test_scalar_per_example_broadcast_against_array():
    xs = RNG.normal(size=(4,))
    v = RNG.normal(size=(5,))
    f = lambda s: s * v + jnp.exp(s)  # noqa: E731
    np.testing.assert_allclose(np.asarray(numbax.vmap(f)(xs)), loop_stack(f, xs))


@pytest.mark.parametrize("out_axes", [0, 1, -1])
def test_out_axes(out_axes):
    x = RNG.normal(size=(4, 3))
    got = numbax.vmap(lambda a: a * 2, out_axes=out_axes)(x)
    np.testing.assert_allclose(np.asarray(got), np.moveaxis(x * 2, 0, out_axes))


def test_out_axes_none_for_unbatched_output():
    x = RNG.normal(size=(4, 3))
    out, c = numbax.vmap(lambda a: (a, 7.0), out_axes=(0, None))(x)
    assert np.asarray(out).shape == (4, 3) and float(c) == 7.0


def test_pytree_in_axes_and_outputs():
    params = {"w": RNG.normal(size=(3,)), "b": 0.5}
    xs = RNG.normal(size=(6, 3))

    def f(p, x):
        return {"dot": jnp.sum(p["w"] * x) + p["b"], "pair": (x, -x)}

    out = numbax.vmap(f, in_axes=({"w": None, "b": None}, 0))(params, xs)
    np.testing.assert_allclose(np.asarray(out["dot"]), xs @ params["w"] + 0.5)
    np.testing.assert_allclose(np.asarray(out["pair"][1]), -xs)
    out2 = numbax.vmap(f, in_axes=(None, 0))(params, xs)
    np.testing.assert_allclose(np.asarray(out2["dot"]), xs @ params["w"] + 0.5)


def test_tuple_argument():
    xs, ys = RNG.normal(size=(5, 2)), RNG.normal(size=(5, 2))
    f2 = lambda xy: xy[0] * xy[1]  # noqa: E731
    np.testing.assert_allclose(np.asarray(numbax.vmap(f2)((xs, ys))), xs * ys)


def test_nested_vmap_is_an_outer_product():
    a, b = RNG.normal(size=(3,)), RNG.normal(size=(4,))
    f = numbax.vmap(numbax.vmap(lambda x, y: x * y, (None, 0)), (0, None))
    np.testing.assert_allclose(np.asarray(f(a, b)), np.outer(a, b))


def test_reductions_and_reshape_under_vmap():
    x = RNG.normal(size=(3, 2, 3))
    f = lambda m: jnp.sum(m.reshape(3, 2) ** 2, axis=0)  # noqa: E731
    np.testing.assert_allclose(np.asarray(numbax.vmap(f)(x)), loop_stack(f, x))
    np.testing.assert_allclose(np.asarray(numbax.vmap(f, in_axes=2)(x)),
                               loop_stack(f, x, in_axes=2))


def _mlp_predict(params, x):
    for w, b in params[:-1]:
        x = jnp.tanh(jnp.dot(x, w) + b) if hasattr(jnp, "dot") else jnp.tanh(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def _mlp_loss(params, x, y):
    return jnp.sum((_mlp_predict(params, x) - y) ** 2)


def _mlp_params():
    sizes = [3, 4, 2]
    return [(RNG.normal(size=(m, n)) * 0.5, RNG.normal(size=(n,)))
            for m, n in zip(sizes[:-1], sizes[1:])]


def test_per_example_gradients_match_loop_of_grads():
    params = _mlp_params()
    xs, ys = RNG.normal(size=(5, 3)), RNG.normal(size=(5, 2))
    per_ex = numbax.vmap(numbax.grad(_mlp_loss), in_axes=(None, 0, 0))(params, xs, ys)
    for i in range(5):
        g = numbax.grad(_mlp_loss)(params, xs[i], ys[i])
        for (gw, gb), (pw, pb) in zip(g, per_ex):
            np.testing.assert_allclose(np.asarray(pw)[i], np.asarray(gw), rtol=1e-10)
            np.testing.assert_allclose(np.asarray(pb)[i], np.asarray(gb), rtol=1e-10)


def test_grad_of_vmap():
    x = RNG.normal(size=(4,))
    g = numbax.grad(lambda v: jnp.sum(numbax.vmap(jnp.sin)(v) ** 2))(x)
    np.testing.assert_allclose(np.asarray(g), 2 * np.sin(x) * np.cos(x))


def test_collectives_against_numpy():
    x = RNG.normal(size=(5, 3))
    np.testing.assert_allclose(
        np.asarray(numbax.vmap(lambda v: v / lax.psum(v, "i"), axis_name="i")(x)),
        x / x.sum(0))
    np.testing.assert_allclose(
        np.asarray(numbax.vmap(lambda v: lax.pmean(v, "i"), axis_name="i")(x)),
        np.broadcast_to(x.mean(0), x.shape))
    np.testing.assert_allclose(
        np.asarray(numbax.vmap(lambda v: lax.pmax(v, "i") - lax.pmin(v, "i"), axis_name="i")(x)),
        np.broadcast_to(x.max(0) - x.min(0), x.shape))
    gathered = numbax.vmap(lambda v: lax.all_gather(v, "i"), axis_name="i")(x)
    np.testing.assert_allclose(np.asarray(gathered), np.broadcast_to(x, (5, 5, 3)))
    tiled = numbax.vmap(lambda v: lax.all_gather(v, "i", tiled=True), axis_name="i")(x)
    assert np.asarray(tiled).shape == (5, 15)
    idx = numbax.vmap(lambda v: lax.axis_index("i"), axis_name="i")(x)
    np.testing.assert_array_equal(np.asarray(idx), np.arange(5))
    assert int(numbax.vmap(lambda v: lax.psum(1, "i"), axis_name="i")(x)[0]) == 5


def test_nested_collectives_over_two_names():
    x = RNG.normal(size=(2, 3))
    f = numbax.vmap(numbax.vmap(lambda v: lax.psum(v, ("i", "j")), axis_name="j"),
                    axis_name="i")
    np.testing.assert_allclose(np.asarray(f(x)), np.full((2, 3), x.sum()))


def test_grad_through_psum():
    x = RNG.normal(size=(4,))
    g = numbax.grad(lambda v: jnp.sum(numbax.vmap(
        lambda e: e * lax.psum(e, "i"), axis_name="i")(v)))(x)
    np.testing.assert_allclose(np.asarray(g), 2 * np.full(4, x.sum()), rtol=1e-12)


def test_inconsistent_sizes_list_each_argument():
    with pytest.raises(ValueError, match="inconsistent sizes") as info:
        numbax.vmap(lambda a, b: a + b)(np.ones(3), np.ones(4))
    assert "size 3" in str(info.value) and "size 4" in str(info.value)


def test_in_axes_structure_mismatch():
    with pytest.raises(ValueError, match="in_axes"):
        numbax.vmap(lambda a, b: a, in_axes=(0,))(np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="tree prefix"):
        numbax.vmap(lambda d: d["a"], in_axes=({"b": 0},))({"a": np.ones(3)})


def test_out_of_range_axis_names_rank():
    with pytest.raises(ValueError, match="rank"):
        numbax.vmap(lambda a: a, in_axes=2)(np.ones((3, 2)))


def test_unbound_axis_name_is_a_name_error():
    with pytest.raises(NameError, match="'k'"):
        numbax.vmap(lambda v: lax.psum(v, "k"), axis_name="i")(np.ones(3))


def test_grad_through_pmax_splits_ties():
    x = np.array([1.0, 3.0, 2.0, 3.0])
    f = lambda v: jnp.sum(numbax.vmap(lambda e: lax.pmax(e, "i") * e, axis_name="i")(v))  # noqa
    # f = max(v) * sum(v): d/dv_k = max + sum * (1/2 at each of the two tied maxima).
    np.testing.assert_allclose(np.asarray(numbax.grad(f)(x)), [3.0, 7.5, 3.0, 7.5])
    g = lambda v: jnp.sum(numbax.vmap(lambda e: lax.pmin(e, "i"), axis_name="i")(v))  # noqa
    np.testing.assert_allclose(np.asarray(numbax.grad(g)(x)), [4.0, 0.0, 0.0, 0.0])


class _Checked:
    """A pytree whose unflatten refuses anything but arrays (as user classes often do)."""

    calls = 0

    def __init__(self, w, b):
        self.w, self.b = w, b

    def tree_flatten(self):
        return (self.w, self.b), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        cls.calls += 1
        for c in children:
            if not hasattr(c, "shape"):
                raise TypeError(f"_Checked got a placeholder leaf {c!r}")
        return cls(*children)


numbax.tree_util.register_pytree_node_class(_Checked)


def test_vmap_never_unflattens_placeholders():
    params = _Checked(np.ones(3), np.zeros(3))
    xs = np.arange(6.0).reshape(2, 3)
    out = numbax.vmap(lambda p, x: _Checked(p.w * x, p.b + x), in_axes=(None, 0),
                      out_axes=_Checked(0, 1))(params, xs)
    np.testing.assert_allclose(np.asarray(out.w), xs)
    np.testing.assert_allclose(np.asarray(out.b), xs.T)
    out = numbax.vmap(lambda p: p.w.sum(), in_axes=(_Checked(0, None),))(
        _Checked(np.ones((4, 3)), np.zeros(3)))
    np.testing.assert_allclose(np.asarray(out), [3.0] * 4)


def test_out_axes_out_of_range_raises():
    x = np.ones((3, 4))
    for k in (2, -3, 5):
        with pytest.raises(ValueError, match=f"axis {k} is out of bounds for array of dimension 2"):
            numbax.vmap(lambda a: a, out_axes=k)(x)
    assert numbax.vmap(lambda a: a, out_axes=-2)(x).shape == (3, 4)
    assert numbax.vmap(lambda a: a, out_axes=1)(x).shape == (4, 3)
    with pytest.raises(ValueError, match="axis 1 is out of bounds for array of dimension 1"):
        numbax.vmap(lambda a: (a, a.sum()), out_axes=(0, 1))(x)


def test_axis_spec_types_and_structure():
    with pytest.raises(TypeError, match="in_axes must be an int, None, or .* got 'a'"):
        numbax.vmap(lambda a: a, in_axes="a")(np.ones(3))
    with pytest.raises(TypeError, match="out_axes must be an int, None.*got 1.5"):
        numbax.vmap(lambda a: a, out_axes=1.5)(np.ones(3))
    with pytest.raises(ValueError, match=r"out_axes specification must be a tree prefix.*"
                                         r"tuple with 2 children"):
        numbax.vmap(lambda a: (a, a), out_axes=(0, 0, 0))(np.ones(3))


def test_vmap_of_grad_through_cond_with_batched_predicate():
    """Found by the fuzzer (issue 21): add_any's batching left an unbatched 0-d cotangent
    beside a batched one, so tracing jit(vmap(grad(f))) failed with an IndexError."""
    from numbax import lax

    def loss(x, p):
        return lax.cond(p, lambda v: v, lambda v: jnp.flip(v) ** 2, x) * 0.3 + x * 0.7

    xs, ps = np.array([0.5, -1.5]), np.array([True, False])
    want = [float(numbax.grad(loss)(x, p)) for x, p in zip(xs, ps)]
    np.testing.assert_allclose(np.asarray(numbax.vmap(numbax.grad(loss))(xs, ps)), want)
    np.testing.assert_allclose(np.asarray(numbax.jit(numbax.vmap(numbax.grad(loss)))(xs, ps)),
                               [1.0, 0.7 - 0.6 * 1.5])
