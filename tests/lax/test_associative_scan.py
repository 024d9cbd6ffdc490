"""lax.associative_scan under jit on the CPU: one sequential loop (lax/along_axis.py's
`_sequential_scan`, chosen by trace_target) where eager calls and other backends run JAX's
tree. Both give the fold of fn over each prefix (each suffix when reverse, combined as JAX
combines them: fn(later result, earlier element)); checked against Python loops and numpy."""
from __future__ import annotations

import re

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax
from numbax._src import trace_target

RNG = np.random.default_rng(7)


def _fold(fn, rows: list, reverse: bool) -> list:
    """out[i] = fn(... fn(rows[0], rows[1]) ..., rows[i]); from the end when reverse."""
    order = range(len(rows) - 1, -1, -1) if reverse else range(len(rows))
    out, acc = [None] * len(rows), None
    for i in order:
        acc = rows[i] if acc is None else fn(acc, rows[i])
        out[i] = acc
    return out


def _affine(a, b):  # x -> b0 * (a0 * x + a1) + b1: not commutative
    return a[0] * b[0], a[1] * b[0] + b[1]


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_jitted_scans_fold_each_prefix(axis, reverse):
    x = RNG.normal(size=(5, 6, 7))
    got = numbax.jit(lambda v: lax.associative_scan(jnp.add, v, reverse=reverse,
                                                    axis=axis))(x)
    flip = (lambda v: np.flip(v, axis)) if reverse else (lambda v: v)
    np.testing.assert_allclose(np.asarray(got), flip(np.cumsum(flip(x), axis=axis)),
                               rtol=1e-12, atol=1e-12)
    a = RNG.uniform(0.5, 1.5, size=(4, 9, 3))
    b = RNG.normal(size=(4, 9, 3))
    got = numbax.jit(lambda p, q: lax.associative_scan(_affine, (p, q), reverse=reverse,
                                                       axis=axis))(a, b)
    ax = axis % 3
    rows = [(np.take(a, [i], ax), np.take(b, [i], ax)) for i in range(a.shape[ax])]
    want = _fold(_affine, rows, reverse)
    for k in range(2):
        np.testing.assert_allclose(np.asarray(got[k]),
                                   np.concatenate([w[k] for w in want], ax), rtol=1e-12)


def test_jitted_scan_matches_the_eager_tree_on_a_matrix_product():
    """fn vectorised over the scan axis on trailing matrix axes (JAX's docs' example): the loop
    gives it rows of shape (1, 2, 2), the product m0 @ m1 @ ... @ mi in order."""
    mats = RNG.normal(size=(33, 2, 2))
    got = numbax.jit(lambda m: lax.associative_scan(jnp.matmul, m))(mats)
    want = _fold(np.matmul, list(mats), False)
    np.testing.assert_allclose(np.asarray(got), np.stack(want), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(np.asarray(got), np.asarray(lax.associative_scan(jnp.matmul,
                                                                                mats)),
                               rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_short_axes(n):
    x = RNG.normal(size=(n, 3)).astype(np.float32)
    got = numbax.jit(lambda v: lax.associative_scan(jnp.maximum, v))(x)
    np.testing.assert_array_equal(np.asarray(got), np.maximum.accumulate(x, axis=0))


def test_grad_and_vmap_of_a_jitted_linear_recurrence():
    """h_t = a_t h_{t-1} + b_t as an associative scan (linear RNNs): its gradient against
    central differences, its vmap against a Python loop over the batch."""
    a = RNG.uniform(0.5, 1.0, size=(3, 40))
    b = RNG.normal(size=(3, 40))

    def last_states(a, b):
        return lax.associative_scan(_affine, (a, b), axis=1)[1]

    def loss(a, b):
        return jnp.sum(jnp.sin(last_states(a, b)))

    ga, gb = numbax.jit(numbax.grad(loss, argnums=(0, 1)))(a, b)
    eps = 1e-6
    for arr, g, at in [(a, ga, (1, 7)), (a, ga, (2, 39)), (b, gb, (0, 0)), (b, gb, (1, 20))]:
        up, down = arr.copy(), arr.copy()
        up[at] += eps
        down[at] -= eps
        args_up = (up, b) if arr is a else (a, up)
        args_down = (down, b) if arr is a else (a, down)
        fd = (float(loss(*args_up)) - float(loss(*args_down))) / (2 * eps)
        np.testing.assert_allclose(float(np.asarray(g)[at]), fd, rtol=1e-6, atol=1e-8)
    batched = numbax.jit(numbax.vmap(lambda p, q: lax.associative_scan(_affine, (p, q))[1]))
    got = np.asarray(batched(a, b))
    for r in range(3):
        h, want = 0.0, []
        for t in range(40):
            h = a[r, t] * h + b[r, t]
            want.append(h)
        np.testing.assert_allclose(got[r], want, rtol=1e-12, atol=1e-12)


def test_a_recurrence_of_one_element_rows_carries_scalars():
    """A 1-D scan's carry is one element: the compiled loop keeps it in scalars (no array
    made or read back each step) and stores only the outputs read (against a float64 loop)."""
    a = RNG.uniform(0.5, 1.0, size=5000).astype(np.float32)
    b = RNG.normal(size=5000).astype(np.float32)
    f = numbax.jit(lambda a, b: lax.associative_scan(_affine, (a, b))[1])
    h, want = 0.0, []
    for t in range(len(a)):
        h = float(a[t]) * h + float(b[t])
        want.append(h)
    np.testing.assert_allclose(np.asarray(f(a, b)), want, rtol=2e-4, atol=2e-4)
    text = f.lower(a, b).as_text()
    body = text[text.index("= scan["):]
    body = body[body.index("def kernel("):body.index("return")]
    assert "np.full(" not in body and "np.asarray(" not in body
    assert len(re.findall(r"np\.empty\(\(4999,", body)) == 1  # one stacked output


def test_the_cpu_jit_traces_one_loop_and_eager_calls_the_tree():
    x = RNG.normal(size=(300,))
    f = lambda v: lax.associative_scan(jnp.add, v)  # noqa: E731
    with trace_target.tracing_for("cpu"):
        loop = numbax.make_jaxpr(f)(x)
    tree = numbax.make_jaxpr(f)(x)
    assert [e.primitive.name for e in loop.jaxpr.eqns].count("scan") == 1
    assert "scan" not in [e.primitive.name for e in tree.jaxpr.eqns]
    assert len(tree.jaxpr.eqns) > 5 * len(loop.jaxpr.eqns)


def test_an_fn_that_changes_the_rows_type_gets_the_trees_error():
    """A loop's carry keeps its type; an fn giving another dtype is traced as JAX's tree
    instead, under the CPU's jit as eagerly, and fails there as it does eagerly."""
    x = np.arange(6, dtype=np.int32)
    widen = lambda a, b: (a + b).astype(np.float32)  # noqa: E731
    errors = []
    for target in ("cpu", None):
        with trace_target.tracing_for(target), pytest.raises(TypeError) as caught:
            numbax.make_jaxpr(lambda v: lax.associative_scan(widen, v))(x)
        errors.append(str(caught.value))
    assert errors[0] == errors[1] and "dtype float32" in errors[0]


@pytest.mark.parametrize("name", ["associative_scan_add", "associative_scan_tuple_reverse",
                                  "associative_scan_axis", "associative_scan_grad"])
def test_jax_recorded_cases_under_jit(name):
    """The eager cases JAX's results were recorded for (tests/lax/jax_cases.py), jitted: the
    loop's order of combining rounds differently from the tree's, nothing more."""
    from tests.lax.test_jax_reference import CASES, REFERENCE

    got = numbax.jit(CASES[name])()
    want = REFERENCE[name]
    got, want = (got, want) if isinstance(want, list) else ([got], [want])
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        g = np.asarray(g)
        assert g.dtype.name == w["dtype"] and list(g.shape) == w["shape"]
        np.testing.assert_allclose(g, np.asarray(w["value"], float).reshape(g.shape), rtol=1e-12,
                                   atol=1e-12)
