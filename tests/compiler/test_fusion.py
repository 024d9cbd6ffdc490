"""Fusion's bounds on long programs: nests cut into pieces (identical pieces of a repeated
structure are one module), row groups that stop recomputing, scalar hoisting, deferred
broadcasts; every program still computes what numpy computes."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax._src.compiler import fusion, ir, pipeline, registry
from numbax._src.compiler.api import get_backend
from numbax._src.core import Var

CPU = get_backend("cpu")
X = np.linspace(-1.0, 1.0, 257)


def _elementwise_chain(x, steps):
    for i in range(steps):
        x = jnp.sin(x) * 0.999 + 0.001 if i % 2 == 0 else jnp.tanh(x) + 1e-4
    return x


def _np_elementwise_chain(x, steps):
    for i in range(steps):
        x = np.sin(x) * 0.999 + 0.001 if i % 2 == 0 else np.tanh(x) + 1e-4
    return x


def _mixed_chain(x, steps):
    for i in range(steps):
        x = x * 0.999 + jnp.mean(x) * 0.001 if i % 2 == 0 else jnp.tanh(x) + 1e-4
    return x


def _np_mixed_chain(x, steps):
    for i in range(steps):
        x = x * 0.999 + np.mean(x) * 0.001 if i % 2 == 0 else np.tanh(x) + 1e-4
    return x


def _nests(fn, *args):
    jaxpr = pipeline.prepare(numbax.make_jaxpr(fn)(*args).jaxpr)
    return jaxpr, fusion.partition(jaxpr, CPU.fusible, CPU.op_cost)


def test_long_chain_is_cut_into_bounded_pieces_that_repeat(monkeypatch):
    monkeypatch.setattr(fusion, "MAX_NEST_COST", 40)
    _, nodes = _nests(lambda x: _elementwise_chain(x, 120), X)
    costs = [sum(CPU.op_cost(e) for e in n.eqns) for n in nodes]
    assert len(nodes) > 5 and all(isinstance(n, ir.LoopNest) for n in nodes)
    assert all(20 <= c <= 40 for c in costs[:-1]) and costs[-1] <= 40
    f = numbax.jit(lambda x: _elementwise_chain(x, 120))
    np.testing.assert_allclose(np.asarray(f(X)), _np_elementwise_chain(X, 120), rtol=1e-13)
    sources = f.lower(X)._entry.exe.sources[:-1]
    assert len(sources) == len(nodes) and len(set(sources)) <= 3  # first, repeated, last


def test_cut_points_are_where_fewest_values_cross():
    def two_then_one(x):
        a, b = x, x * 2.0
        for _ in range(30):  # two values live across this stretch
            a, b = jnp.tanh(a) + b * 1e-3, jnp.sin(b) + a * 1e-3
        c = a + b
        for _ in range(30):  # one value
            c = jnp.tanh(c) * 0.5
        return c

    jaxpr, _ = _nests(two_then_one, X)
    eqns = jaxpr.eqns
    costs = [CPU.op_cost(e) for e in eqns]
    old = fusion.MAX_NEST_COST
    try:
        fusion.MAX_NEST_COST = int(sum(costs) * 0.9)
        (cut,) = fusion._cut_points(eqns, costs)
    finally:
        fusion.MAX_NEST_COST = old
    made_before = {v for e in eqns[:cut] for v in e.outvars}
    read_after = {x for e in eqns[cut:] for x in e.invars if isinstance(x, Var)}
    assert len(made_before & read_after) == 1


def test_mixed_chain_source_grows_linearly_and_matches_numpy():
    lines = {}
    for steps in (40, 80):
        f = numbax.jit(lambda x, s=steps: _mixed_chain(x, s))
        np.testing.assert_allclose(np.asarray(f(X)), _np_mixed_chain(X, steps), rtol=1e-12)
        lines[steps] = f.lower(X).as_text().count("\n")
    assert lines[80] < 2.2 * lines[40]  # a chain of reductions recomputed nothing quadratic


def test_row_group_stops_before_recomputing_too_much():
    _, nodes = _nests(lambda x: _mixed_chain(x, 30), X)
    for node in nodes:
        if not isinstance(node, ir.LoopNest) or node.passes is None:
            continue
        group = fusion._RowGroup()
        for kind, eqns in node.passes:
            again = fusion.recompute(eqns, group.row_defs, group.seed) if kind == "row" else []
            assert sum(CPU.op_cost(e) for e in again) <= fusion.MAX_RECOMPUTE
            group.add(kind, eqns, CPU.op_cost)


def test_softmax_and_layer_norm_stay_one_row_kernel():
    def layer_norm(x):
        mu = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.mean((x - mu) ** 2, axis=-1, keepdims=True)
        return (x - mu) / jnp.sqrt(var + 1e-5)

    x = np.random.default_rng(0).normal(size=(16, 40))
    for fn in (numbax.nn.softmax, layer_norm):
        _, nodes = _nests(fn, x)
        assert len([n for n in nodes if isinstance(n, ir.LoopNest)]) == 1


@pytest.mark.parametrize("shape", [(2, 3), (1000, 3), (300, 50), (3, 1000)])
def test_an_element_of_a_row_read_after_the_rows_reduction(shape):
    """`y[:, 0] * norm(y)`: the per-row work after a row reduction reads an element of the
    rows themselves, which a row group keeps in no array; the reading pass stays out of the
    group (it raised a KeyError while rendering the group)."""
    rng = np.random.default_rng(1)
    w, v = rng.normal(size=shape), rng.normal(size=shape[0])

    def f(w, v):
        y = w * v[:, None]
        return y[:, 0] * jnp.sqrt((y * y).sum(1)) + y[:, 1]

    y = w * v[:, None]
    np.testing.assert_allclose(np.asarray(numbax.jit(f)(w, v)),
                               y[:, 0] * np.sqrt((y * y).sum(1)) + y[:, 1], rtol=1e-12)


def _hoist_reference(eqns, fusible):
    """The hoisting order as first written (one list insertion per scalar)."""
    order, made_at = [], {}
    for eqn in eqns:
        scalar = fusible(eqn) and all(v.aval.ndim == 0 for v in eqn.outvars) and all(
            x.aval.ndim == 0 for x in eqn.invars if isinstance(x, Var))
        at = len(order)
        if scalar:
            at = max((made_at[x] + 1 for x in eqn.invars if isinstance(x, Var) and x in made_at),
                     default=0)
            for v, k in made_at.items():
                if k >= at:
                    made_at[v] = k + 1
        order.insert(at, eqn)
        for v in eqn.outvars:
            made_at[v] = at
    return order


@pytest.mark.parametrize("seed", range(6))
def test_scalar_hoisting_order_is_the_reference_order(seed):
    rng = np.random.default_rng(seed)

    def program(x, s):
        vals, scalars = [x], [s]
        for _ in range(40):
            pick = rng.integers(0, 4)
            if pick == 0:
                scalars.append(scalars[rng.integers(len(scalars))] * 1.5 + 0.25)
            elif pick == 1:
                scalars.append(jnp.sum(vals[rng.integers(len(vals))]))
            elif pick == 2:
                vals.append(vals[-1] * scalars[rng.integers(len(scalars))])
            else:
                vals.append(jnp.tanh(vals[rng.integers(len(vals))]))
        return vals[-1] + sum(scalars[1:])

    jaxpr = numbax.make_jaxpr(program)(X, 2.0).jaxpr
    got = fusion._hoist_scalars(jaxpr.eqns, CPU.fusible)
    assert [id(e) for e in got] == [id(e) for e in _hoist_reference(jaxpr.eqns, CPU.fusible)]


def test_input_broadcast_joins_its_reader_not_an_earlier_nest():
    w1, w2 = np.ones((8, 16)), np.ones((16, 16))
    b1, b2 = np.arange(16.0), np.arange(16.0) * 2

    def two_layers(x):  # (sin: a tanh would join its product's epilogue, leaving no nest)
        h = jnp.sin(x @ w1 + b1)
        return jnp.sin(h @ w2 + b2)

    x = np.linspace(-1, 1, 32).reshape(4, 8)
    jaxpr, nodes = _nests(two_layers, x)
    nests = [n for n in nodes if isinstance(n, ir.LoopNest)]
    assert len(nests) == 2 and all(len(n.outputs) == 1 for n in nests)  # no stored broadcast
    f = numbax.jit(two_layers)
    want = np.sin(np.sin(x @ w1 + b1) @ w2 + b2)
    np.testing.assert_allclose(np.asarray(f(x)), want, rtol=1e-13)
    sources = f.lower(x)._entry.exe.sources[:-1]
    assert len(set(sources)) == 1  # both layers: one module


def test_partition_handles_thousands_of_reductions():
    """1500 full reductions, each with hoisted scalars: hoisting (once one list insertion per
    scalar) and inlining (once a copy of the environment per call) are linear now; and
    recomputation does not cascade (a copy is never copied again)."""
    def many(x):
        for _ in range(1500):
            x = x * 0.999 + jnp.mean(x) * 0.001
        return x

    jaxpr = pipeline.prepare(numbax.make_jaxpr(many)(X).jaxpr)
    nodes = fusion.partition(jaxpr, CPU.fusible, CPU.op_cost)
    placed = [e for n in nodes for e in ir.node_eqns(n)]
    original = {id(e) for e in jaxpr.eqns}
    kept = [e for e in placed if id(e) in original]
    assert len({id(e) for e in kept}) == len(kept)  # no original equation placed twice
    copies = [e for e in placed if id(e) not in original]
    assert all(registry.cheap(e.primitive) for e in copies)
    # a step's value is recomputed by the next step alone, and not where that step is itself
    # a recomputation: ~1.5 copied equations a step of 5 (a cascade copied ~3.2)
    assert len(copies) <= len(jaxpr.eqns) // 2
    made = {v for e in placed for v in e.outvars}
    assert all(v in made for v in jaxpr.outvars)


# ----------------------------------------------------------------------------- recomputation


def _nest_making(nodes, primitive_name):
    return next(n for n in nodes if isinstance(n, ir.LoopNest)
                and any(e.primitive.name == primitive_name for e in n.eqns))


def _derivative_after_product(x, w):
    y = jnp.tanh(x)
    d = 1.0 - y * y  # made beside y, read only after the product
    return (y @ w) * d


def test_cheap_values_are_recomputed_by_later_nests_not_stored():
    x = np.linspace(-2.0, 2.0, 12).reshape(3, 4)
    w = np.linspace(0.5, 1.5, 16).reshape(4, 4)
    jaxpr, nodes = _nests(_derivative_after_product, x, w)
    forward = _nest_making(nodes, "tanh")
    assert [v.aval.shape for v in forward.outputs] == [(3, 4)]  # y alone, not 1 - y*y
    later = [n for n in nodes if n is not forward and isinstance(n, ir.LoopNest)]
    assert any(e.primitive.name == "square" or e.primitive.name == "mul" for n in later
               for e in n.eqns)
    y = np.tanh(x)
    got = numbax.jit(_derivative_after_product)(x, w)
    np.testing.assert_allclose(np.asarray(got), (y @ w) * (1 - y * y), rtol=1e-13)


@pytest.mark.parametrize("case", ["costly", "no_saving", "read_by_a_product", "other_shape",
                                  "returned", "read_by_a_reduction"])
def test_values_stay_stored_where_recomputing_does_not_pay(case):
    """A costly value, one whose recomputation needs as many new bytes, one a product or a
    nest of another shape reads, and a returned one stay stored; a reduction over the value's
    own shape recomputes it like any nest."""
    x = np.linspace(-2.0, 2.0, 12).reshape(3, 4)
    w = np.linspace(0.5, 1.5, 16).reshape(4, 4)

    def f(x, w):
        y = jnp.sin(x)
        if case == "costly":
            d = jnp.exp(y)  # not cheap: stored
        elif case == "no_saving":
            d = jnp.sin(y) * 2.0  # recomputing needs sin(y): as many bytes as d
        else:
            d = y * y
        p = y @ w
        if case == "read_by_a_product":
            return p * d, d @ w
        if case == "other_shape":
            return p * d, d[None] * jnp.ones((2, 3, 4))  # a nest of another shape reads d
        if case == "read_by_a_reduction":
            return p * d, jnp.sum(d, axis=0)  # a reduction's nest iterates over d's shape
        if case == "returned":
            return p * d, d
        return p * d

    _, nodes = _nests(f, x, w)
    forward = _nest_making(nodes, "sin")
    stored = {v.aval.shape for v in forward.outputs}
    assert len(forward.outputs) == (1 if case == "read_by_a_reduction" else 2), case
    assert stored == {(3, 4)}
    y = np.sin(x)
    d = {"costly": np.exp(y), "no_saving": np.sin(y) * 2.0}.get(case, y * y)
    got = numbax.jit(f)(x, w)
    want = {"read_by_a_product": ((y @ w) * d, d @ w),
            "other_shape": ((y @ w) * d, np.broadcast_to(d, (2, 3, 4))),
            "read_by_a_reduction": ((y @ w) * d, d.sum(0)), "returned": ((y @ w) * d, d)
            }.get(case, (y @ w) * d)
    for g, wv in zip(*(t if isinstance(t, tuple) else (t,) for t in (got, want))):
        np.testing.assert_allclose(np.asarray(g), wv, rtol=1e-13)
