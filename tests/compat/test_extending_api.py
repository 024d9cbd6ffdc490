"""The extension API name by name: numbax.extend.core, numbax.core, numbax.interpreters.ad and
numbax.interpreters.batching, checked against closed forms, finite differences and loops."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import core, lax
from numbax.extend import core as ecore
from numbax.interpreters import ad, batching
from numbax.test_util import check_grads

_ids = itertools.count()


def _prim(stem: str, **kw) -> ecore.Primitive:
    """A fresh user primitive (unique names: the compiler's eager fallback finds by name)."""
    return ecore.Primitive(f"test_ext_{stem}_{next(_ids)}", **kw)


X = np.array([0.3, -1.2, 2.0])

# ----------------------------------------------------------------------------- Primitive


def test_primitive_multiple_results_eager_jaxpr_and_jit():
    p = _prim("divmod", multiple_results=True)
    p.def_impl(lambda x, y: (np.floor_divide(x, y), np.mod(x, y)))
    p.def_abstract_eval(lambda x, y: (x, x))
    q, r = p.bind(np.array([7, 9]), np.array([2, 4]))
    np.testing.assert_array_equal(q, [3, 2])
    np.testing.assert_array_equal(r, [1, 1])
    jaxpr = numbax.make_jaxpr(lambda a, b: p.bind(a, b))(np.array([7]), np.array([2]))
    assert len(jaxpr.eqns) == 1 and len(jaxpr.eqns[0].outvars) == 2
    with pytest.warns(RuntimeWarning, match="no compiled lowering"):
        q2, r2 = numbax.jit(lambda a, b: p.bind(a, b))(np.array([7, 9]), np.array([2, 4]))
    np.testing.assert_array_equal(q2, [3, 2])
    np.testing.assert_array_equal(r2, [1, 1])
    assert list(p.impl(np.array(7), np.array(2))) == [3, 1]
    avals, effects = p.abstract_eval(core.ShapedArray((2,), np.int64),
                                     core.ShapedArray((2,), np.int64))
    assert [a.shape for a in avals] == [(2,), (2,)] and effects == ecore.no_effects


def test_primitive_effectful_abstract_eval():
    p = _prim("twice")
    p.def_impl(lambda x: 2 * x)
    p.def_effectful_abstract_eval(lambda x: (x, ecore.no_effects))
    jaxpr = numbax.make_jaxpr(p.bind)(X)
    assert jaxpr.out_avals[0].shape == (3,)


def test_primitive_without_rules_raises_not_implemented():
    p = _prim("bare")
    with pytest.raises(NotImplementedError, match="Evaluation rule"):
        p.bind(1.0)
    p.def_impl(lambda x: x)
    with pytest.raises(NotImplementedError, match="abstract evaluation"):
        numbax.make_jaxpr(p.bind)(1.0)


def _sin_prim():
    p = _prim("sin")
    p.def_impl(np.sin)
    p.def_abstract_eval(lambda x: x)
    return p


# ----------------------------------------------------------------------------- ad


def test_defjvp_gives_grads_that_match_finite_differences():
    p = _sin_prim()
    ad.defjvp(p, lambda g, x: g * jnp.cos(x))
    check_grads(p.bind, (X,), order=1, modes=("fwd",))
    np.testing.assert_allclose(numbax.jvp(p.bind, (X,), (np.ones(3),))[1], np.cos(X))


def test_defjvp2_sees_the_output():
    p = _prim("exp")
    p.def_impl(np.exp)
    p.def_abstract_eval(lambda x: x)
    ad.defjvp2(p, lambda g, ans, x: g * ans)
    np.testing.assert_allclose(numbax.jvp(p.bind, (X,), (np.ones(3),))[1], np.exp(X))


def test_deflinear_and_deflinear2_transpose():
    p = _prim("triple")
    p.def_impl(lambda x: 3 * x)
    p.def_abstract_eval(lambda x: x)
    ad.deflinear(p, lambda ct: [3 * ct])
    np.testing.assert_allclose(numbax.grad(lambda x: jnp.sum(p.bind(x) ** 2))(X), 18 * X)
    q = _prim("scale")
    q.def_impl(lambda x, *, c: c * x)
    q.def_abstract_eval(lambda x, *, c: x)
    ad.deflinear2(q, lambda ct, x, *, c: [c * ct])
    f = lambda x: jnp.sum(q.bind(x, c=2.5) * X)  # noqa: E731
    np.testing.assert_allclose(numbax.grad(f)(X), 2.5 * X)
    np.testing.assert_allclose(numbax.jvp(lambda x: q.bind(x, c=2.0), (X,), (X,))[1], 2 * X)


def test_defbilinear():
    p = _prim("mul")
    p.def_impl(np.multiply)
    p.def_abstract_eval(lambda x, y: x)
    ad.defbilinear(p, lambda ct, x, y: ct * y, lambda ct, x, y: x * ct)
    y = X[::-1].copy()
    gx, gy = numbax.grad(lambda a, b: jnp.sum(p.bind(a, b)), argnums=(0, 1))(X, y)
    np.testing.assert_allclose(gx, y)
    np.testing.assert_allclose(gy, X)
    check_grads(lambda a, b: p.bind(a, b), (X, y), order=1, modes=("rev",))


def test_primitive_jvps_and_transposes_read_numbax_rules():
    out, t = ad.primitive_jvps[lax.sin_p]((X,), (np.ones(3),))
    np.testing.assert_allclose(out, np.sin(X))
    np.testing.assert_allclose(t, np.cos(X))
    out, t = ad.primitive_jvps[lax.eq_p]((X, X), (np.ones(3), np.ones(3)))  # non-diff
    assert type(t) is ad.Zero
    assert lax.sin_p in ad.primitive_jvps and lax.eq_p in ad.primitive_jvps
    (ct,) = ad.primitive_transposes[lax.neg_p](np.ones(3), ad.UndefinedPrimal(
        core.ShapedArray((3,), np.float64)))
    np.testing.assert_allclose(ct, -np.ones(3))
    assert ad.get_primitive_transpose(lax.neg_p) is not None
    with pytest.raises(NotImplementedError, match="Transpose rule"):
        ad.get_primitive_transpose(lax.sin_p)


def test_rule_set_through_the_view_reads_back_and_deletes():
    p = _sin_prim()

    def rule(primals, tangents):
        (x,), (t,) = primals, tangents
        return p.bind(x), t * jnp.cos(x)

    ad.primitive_jvps[p] = rule
    assert ad.primitive_jvps[p] is rule
    del ad.primitive_jvps[p]
    assert p not in ad.primitive_jvps


def test_add_jaxvals_zero_and_helpers():
    np.testing.assert_allclose(ad.add_jaxvals(X, X), 2 * X)
    assert ad.add_jaxvals_p.name == "add_any"
    z = ad.Zero(core.ShapedArray((3,), np.float64))
    assert ad.add_tangents(z, X) is X
    np.testing.assert_array_equal(ad.instantiate_zeros(z), np.zeros(3))
    np.testing.assert_array_equal(ad.zeros_like_aval(core.ShapedArray((2,), np.int32)),
                                  np.zeros(2, np.int32))
    assert ad.is_undefined_primal(ad.UndefinedPrimal(z.aval)) and not ad.is_undefined_primal(X)


def test_ad_jvp_and_linearize():
    f = lambda x, y: (jnp.sin(x) * y, x + y)  # noqa: E731
    primals, tangents = ad.jvp(f, [X, 2.0], [np.ones(3), ad.Zero(
        core.ShapedArray((), np.float64, weak_type=True))])
    np.testing.assert_allclose(primals[0], np.sin(X) * 2)
    np.testing.assert_allclose(tangents[0], np.cos(X) * 2)
    np.testing.assert_allclose(tangents[1], np.ones(3))
    *_, aux = ad.jvp(lambda x: (jnp.sin(x), x * 3), [X], [np.ones(3)], has_aux=True)
    np.testing.assert_allclose(aux, 3 * X)
    outs, out_zeros, jaxpr, consts = ad.linearize(lambda x: jnp.sin(x) * x, [X])
    np.testing.assert_allclose(outs[0], np.sin(X) * X)
    assert out_zeros == [False]
    (lin,) = core.eval_jaxpr(jaxpr, consts, np.ones(3))
    np.testing.assert_allclose(lin, np.cos(X) * X + np.sin(X))
    with pytest.raises(ValueError, match="one tangent"):
        ad.jvp(f, [X, 2.0], [np.ones(3)])


# ----------------------------------------------------------------------------- batching


def test_primitive_batchers_fancy_and_axis_batchers():
    p = _prim("addone")
    p.def_impl(lambda x: x + 1)
    p.def_abstract_eval(lambda x: x)
    batching.primitive_batchers[p] = lambda vals, dims: (p.bind(vals[0]), dims[0])
    xs = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(numbax.vmap(p.bind, in_axes=1)(xs), xs.T + 1)
    seen = []

    def fancy(axis_data, vals, dims):
        seen.append((axis_data.size, axis_data.name))
        return p.bind(vals[0]), dims[0]

    batching.fancy_primitive_batchers[p] = fancy
    numbax.vmap(p.bind, axis_name="rows")(xs)
    assert seen == [(2, "rows")]

    def axis_rule(size, name, main, vals, dims):
        seen.append((size, name, main))
        return p.bind(vals[0]), dims[0]

    batching.axis_primitive_batchers[p] = axis_rule
    numbax.vmap(p.bind, axis_name="cols", in_axes=1)(xs)
    assert seen[-1] == (3, "cols", None)
    out, dim = batching.primitive_batchers[lax.sin_p]([xs], (1,))
    np.testing.assert_allclose(np.moveaxis(np.asarray(out), dim, 0), np.sin(xs).T)
    out, dim = batching.fancy_primitive_batchers[lax.sin_p](
        numbax._src.interpreters.batching.AxisData(2, None), [xs], (0,))
    np.testing.assert_allclose(out, np.sin(xs))


def test_defvectorized_defbroadcasting_defreducer():
    p = _prim("cube")
    p.def_impl(lambda x: x ** 3)
    p.def_abstract_eval(lambda x: x)
    batching.defvectorized(p)
    xs = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(numbax.vmap(p.bind)(xs), xs ** 3)
    q = _prim("hypot")
    q.def_impl(np.hypot)
    q.def_abstract_eval(lambda x, y: x if x.ndim else y)
    batching.defbroadcasting(q)
    np.testing.assert_allclose(numbax.vmap(q.bind, in_axes=(0, None))(xs, 2.0),
                               np.hypot(xs, 2.0))
    r = _prim("rsum")
    r.def_impl(lambda x, *, axes: np.sum(x, axis=axes))
    r.def_abstract_eval(lambda x, *, axes: core.ShapedArray(
        tuple(d for i, d in enumerate(x.shape) if i not in axes), x.dtype))
    batching.defreducer(r)
    cube = np.arange(24.0).reshape(2, 3, 4)
    got = numbax.vmap(lambda c: r.bind(c, axes=(1,)), in_axes=1)(cube)
    np.testing.assert_allclose(got, np.stack([cube[:, k].sum(1) for k in range(3)]))


def test_bdim_at_front_and_broadcast():
    xs = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(batching.bdim_at_front(xs, 1, 3), xs.T)
    np.testing.assert_allclose(batching.bdim_at_front(X, None, 2), np.stack([X, X]))
    np.testing.assert_allclose(batching.broadcast(X, 2, 1), np.stack([X, X], 1))


# ----------------------------------------------------------------------------- extend.core


def test_call_primitive_evaluates_differentiates_and_batches():
    p = ecore.CallPrimitive(f"test_ext_call_{next(_ids)}")
    f = lambda x: [jnp.sin(x) * 2.0]  # noqa: E731
    np.testing.assert_allclose(p.bind(f, X)[0], 2 * np.sin(X))
    np.testing.assert_allclose(ecore.call_impl(f, X)[0], 2 * np.sin(X))
    g = numbax.grad(lambda x: jnp.sum(p.bind(f, x)[0]))(X)
    np.testing.assert_allclose(g, 2 * np.cos(X))
    xs = np.stack([X, 2 * X])
    np.testing.assert_allclose(numbax.vmap(lambda x: p.bind(f, x)[0])(xs), 2 * np.sin(xs))
    jaxpr = numbax.make_jaxpr(lambda x: p.bind(f, x))(X)
    assert jaxpr.eqns[0].primitive is p and "call_jaxpr" in jaxpr.eqns[0].params
    assert len(list(ecore.subjaxprs(jaxpr.jaxpr))) == 1


def test_hand_built_jaxpr_checks_and_runs():
    aval = core.ShapedArray((3,), np.float64)
    newvar = ecore.gensym()
    a, b = newvar(aval), newvar(aval)
    eqn = ecore.new_jaxpr_eqn([a, ecore.Literal(2.0, core.ShapedArray((), np.float64))], [b],
                              lax.mul_p, {}, ecore.no_effects)
    jaxpr = ecore.Jaxpr([], [a], [eqn], [b])
    ecore.check_jaxpr(jaxpr)
    closed = ecore.ClosedJaxpr(jaxpr, [])
    np.testing.assert_allclose(ecore.jaxpr_as_fun(closed)(X)[0], 2 * X)
    np.testing.assert_allclose(ecore.jaxpr_as_fun(closed, X)[0], 2 * X)
    np.testing.assert_allclose(core.eval_jaxpr(jaxpr, [], X)[0], 2 * X)
    bad = ecore.Jaxpr([], [a], [eqn._replace(outvars=[newvar(core.ShapedArray((2,),
                                                                           np.float64))])], [b])
    with pytest.raises(ecore.JaxprTypeError):
        ecore.check_jaxpr(bad)
    with pytest.raises(TypeError, match="invars"):
        ecore.new_jaxpr_eqn([1.0], [b], lax.mul_p, {}, ecore.no_effects)
    assert repr(ecore.DropVar(aval)) == "_"


def test_jaxprs_in_params_mapped_avals_and_dtypes():
    jaxpr = numbax.make_jaxpr(lambda p, x: lax.cond(p, jnp.sin, jnp.cos, x))(True, 1.0)
    (eqn,) = [e for e in jaxpr.eqns if e.primitive is lax.cond_p]
    assert len(list(ecore.jaxprs_in_params(eqn.params))) == 2
    aval = core.ShapedArray((2, 5, 3), np.float32)
    assert ecore.mapped_aval(5, 1, aval).shape == (2, 3)
    assert ecore.unmapped_aval(5, 1, core.ShapedArray((2, 3), np.float32)).shape == (2, 5, 3)
    with pytest.raises(ValueError, match="mapped_aval"):
        ecore.mapped_aval(4, 1, aval)
    assert ecore.primal_dtype_to_tangent_dtype(np.int32) == numbax._src.dtypes.float0
    assert ecore.primal_dtype_to_tangent_dtype(np.float32) == np.float32
    assert ecore.valid_jaxtype(X) and ecore.valid_jaxtype(1.0) and not ecore.valid_jaxtype("x")
    assert np.ndarray in ecore.array_types and np.float32 in ecore.array_types
    assert core.max_dim(3, 5) == 5 and core.min_dim(3, 5) == 3
    assert issubclass(ecore.InconclusiveDimensionOperation, Exception)
    assert ecore.TraceTag() == ecore.TraceTag() and isinstance(ecore.Effect(), ecore.Effect)
    info = ecore.DebugInfo("jit", "f at x.py:3", ("x",), ("result",))
    assert info.func_name == "f"


def test_concrete_or_error_and_trace_state_queries():
    assert ecore.concrete_or_error(int, np.float64(3.0)) == 3
    assert ecore.concrete_or_error(None, 4) == 4

    def f(x):
        with pytest.raises(numbax.errors.ConcretizationTypeError, match="my context"):
            ecore.concrete_or_error(float, x, "my context")
        assert ecore.unsafe_am_i_under_a_jit_DO_NOT_USE()
        return x

    numbax.jit(f)(1.0)
    assert not ecore.unsafe_am_i_under_a_jit_DO_NOT_USE()

    def g(x):
        assert ecore.unsafe_am_i_under_a_vmap_DO_NOT_USE()
        assert ecore.unsafe_get_axis_names_DO_NOT_USE() == ["i"]
        assert ecore.nonempty_axis_env_DO_NOT_USE()
        return x

    numbax.vmap(g, axis_name="i")(X)
    assert not ecore.nonempty_axis_env_DO_NOT_USE()
    s0 = ecore.get_opaque_trace_state()
    assert s0 == ecore.get_opaque_trace_state()
    states = []
    numbax.jit(lambda x: states.append(ecore.get_opaque_trace_state()) or x)(1.0)
    assert states[0] != s0


def test_current_trace_context_managers_and_compile_time_eval():
    def f(x):
        with ecore.take_current_trace() as trace:
            assert isinstance(trace, core.Trace)
            assert isinstance(jnp.sin(1.0), numbax.Array)  # evaluated eagerly inside
        with ecore.set_current_trace(trace):
            staged = jnp.cos(2.0)
        assert isinstance(staged, core.Tracer)
        with core.ensure_compile_time_eval():
            y = jnp.sin(3.0)
            positive = y > 0
        assert bool(positive)  # concrete: usable in Python control flow
        with core.eval_context():
            assert not isinstance(jnp.exp(0.0), core.Tracer)
        return x * y

    np.testing.assert_allclose(numbax.jit(f)(2.0), 2 * np.sin(3.0))
    assert ecore.find_top_trace([X]).__class__.__name__ == "EvalTrace"


def test_core_names():
    assert isinstance(core.ShapedArray((2,), np.float32), core.AbstractValue)
    assert issubclass(core.ShapedArray, core.AbstractValue)

    class MyAval(core.AbstractValue):
        pass

    assert isinstance(MyAval(), core.AbstractValue)
    assert not isinstance(core.ShapedArray((), np.float32), MyAval)
    assert isinstance(numbax.make_jaxpr(jnp.sin)(1.0).jaxpr.invars[0], ecore.Var)


# ----------------------------------------------------------------------------- register_vmappable
# After JAX's tests/batching_test.py VmappableTest: a NamedArray mapped by name.


class NamedArray:
    def __init__(self, names, data):
        assert len(names) == np.ndim(data)
        self.names = list(names)
        self.data = data


class NamedMapSpec:
    def __init__(self, name, axis):
        self.name = name
        self.axis = axis


def _named_to_elt(cont, _, val, spec):
    if spec.name is None:
        return val
    names = list(val.names)
    if names.pop(spec.axis) != spec.name:
        raise ValueError("wrong name")
    return NamedArray(names, cont(val.data, spec.axis))


def _named_from_elt(cont, axis_size, elt, spec):
    data = cont(axis_size, elt.data, spec.axis)
    if spec.axis is None:
        return NamedArray(elt.names, data)
    names = list(elt.names)
    names.insert(spec.axis, spec.name)
    return NamedArray(names, data)


@pytest.mark.parametrize("jit", [False, True])
def test_register_vmappable_maps_named_arrays(jit):
    batching.register_vmappable(NamedArray, NamedMapSpec, int, _named_to_elt, _named_from_elt,
                                None)
    try:
        def f(x):
            return NamedArray(x.names, lax.mul(x.data, x.data))

        if jit:
            f = numbax.jit(f)
        x = NamedArray(["i", "j"], np.arange(12.0).reshape(3, 4))
        g = numbax.vmap(f, in_axes=NamedMapSpec("i", 0), out_axes=NamedMapSpec("i", 1),
                        axis_size=3)
        ans = g(x)
        assert ans.names == ["j", "i"]
        np.testing.assert_allclose(ans.data, np.arange(12.0).reshape(3, 4).T ** 2)
    finally:
        batching.unregister_vmappable(NamedArray)
    with pytest.raises(TypeError):  # unregistered again: a spec is not an axis
        numbax.vmap(lambda x: x, in_axes=NamedMapSpec("i", 0), axis_size=3)(x)


def test_vmappable_handlers_that_bind_primitives():
    class A:
        def __init__(self, data):
            self.data = data

    batching.register_vmappable(A, int, int, lambda cont, _, val, spec: cont(val.data + 1, spec),
                                lambda cont, size, elt, spec: A(cont(size, elt.data + 1, spec)),
                                None)
    try:
        out = numbax.jit(lambda: numbax.vmap(lambda x: x - 1, axis_size=3)(A(jnp.arange(3.0))))()
        np.testing.assert_allclose(out, np.arange(3.0))
        out = numbax.vmap(lambda x: A(x), axis_size=3)(jnp.arange(3.0))
        np.testing.assert_allclose(out.data, np.arange(3.0) + 1)
    finally:
        batching.unregister_vmappable(A)
