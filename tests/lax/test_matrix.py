"""The primitive test matrix: every registered primitive, compiled vs eager, vmap vs a loop,
and (when differentiable) jvp/vjp vs finite differences with transposition consistency.

Cases are keyed by primitive name; test_every_primitive_has_matrix_rows fails when a new
primitive is registered without rows here or in a family module of tests/lax/matrix_cases/.
"""
from __future__ import annotations

import numpy as np
import pytest

import numbax
import numbax.nn  # noqa: F401  (imported for the primitives they register)
import numbax.numpy as jnp
import numbax.numpy.linalg  # noqa: F401
import numbax.random  # noqa: F401
import numbax.scipy.special  # noqa: F401
from numbax import lax
from numbax._src import core
from numbax._src.interpreters import ad, batching
from numbax._src.lax import indexing as element  # the element gather/scatter
from numbax._src.lax.convert import round_to_bfloat16_p as _round_bf16
from numbax._src.lax.convert import round_to_float16_p as _round16
from numbax._src.parallel import pmap as _pmap  # noqa: F401
from numbax.test_util import check_grads
from tests.lax.matrix_cases import Case, collect

RNG = np.random.default_rng(42)


def normal(*shape, dtype=np.float64):
    return RNG.normal(size=shape).astype(dtype)


def positive(*shape, dtype=np.float64):
    return (RNG.uniform(0.5, 2.0, size=shape)).astype(dtype)


def unit(*shape, dtype=np.float64):
    return RNG.uniform(-0.9, 0.9, size=shape).astype(dtype)


def ints(*shape, low=-5, high=6, dtype=np.int64):
    return RNG.integers(low, high, size=shape).astype(dtype)


X, Y = normal(3, 4), normal(3, 4)
P = positive(3, 4)
U = unit(3, 4)
I1, I2 = ints(3, 4), ints(3, 4, low=1, high=4)

_UNARY_FLOAT = {
    "neg": (lax.neg, X), "sign": (lax.sign, X), "floor": (lax.floor, X),
    "ceil": (lax.ceil, X), "round": (lax.round, X), "is_finite": (lax.is_finite, X),
    "exp": (lax.exp, X), "exp2": (lax.exp2, X), "log": (lax.log, P), "log1p": (lax.log1p, P),
    "expm1": (lax.expm1, X), "tanh": (lax.tanh, X), "logistic": (lax.logistic, X),
    "sin": (lax.sin, X), "cos": (lax.cos, X), "tan": (lax.tan, U), "asin": (lax.asin, U),
    "acos": (lax.acos, U), "atan": (lax.atan, X), "sinh": (lax.sinh, X),
    "cosh": (lax.cosh, X), "asinh": (lax.asinh, X), "acosh": (lax.acosh, P + 1.5),
    "atanh": (lax.atanh, U), "sqrt": (lax.sqrt, P), "rsqrt": (lax.rsqrt, P),
    "cbrt": (lax.cbrt, P), "abs": (lax.abs, X + 0.1), "erf": (lax.erf, X),
    "erfc": (lax.erfc, X), "erf_inv": (lax.erf_inv, U), "lgamma": (lax.lgamma, P),
    "digamma": (lax.digamma, P), "square": (lax.square, X),
    "integer_pow": (lambda x: lax.integer_pow(x, 3), X),
    "stop_gradient": (lax.stop_gradient, X),
}
_NON_DIFF = {"sign", "floor", "ceil", "round", "is_finite", "stop_gradient"}

_BINARY_FLOAT = {
    "add": (lax.add, X, Y), "sub": (lax.sub, X, Y), "mul": (lax.mul, X, Y),
    "div": (lax.div, X, P), "rem": (lax.rem, X, P), "pow": (lax.pow, P, X),
    "max": (lax.max, X, Y), "min": (lax.min, X, Y), "atan2": (lax.atan2, X, P),
    "nextafter": (lax.nextafter, X, Y), "polygamma": (lambda x: lax.polygamma(
        np.ones_like(x), x), P),
}
_COMPARE = {name: getattr(lax, name) for name in ("eq", "ne", "lt", "le", "gt", "ge")}
_BITWISE = {"and": lax.bitwise_and, "or": lax.bitwise_or, "xor": lax.bitwise_xor,
            "shift_left": lax.shift_left, "shift_right_arithmetic": lax.shift_right_arithmetic,
            "shift_right_logical": lax.shift_right_logical}


def _cases() -> dict[str, list[Case]]:
    cases: dict[str, list[Case]] = collect()

    def add(name, *case_list):
        cases.setdefault(name, []).extend(case_list)

    for name, (fn, x) in _UNARY_FLOAT.items():
        diff = () if name in _NON_DIFF else (0,)
        add(name, Case(fn, (x,), diff), Case(fn, (x.astype(np.float32),)))
    for name, (fn, *xs) in _BINARY_FLOAT.items():
        diff = () if name in ("nextafter", "polygamma") else tuple(range(len(xs)))
        add(name, Case(fn, tuple(xs), diff))
    add("add", Case(lax.add, (I1, I2)), Case(lambda x: lax.mul(x, 2.0), (X,), (0,)))
    add("mul", Case(lax.mul, (I1, I2)))
    add("max", Case(lax.max, (I1, I2)))
    for name, fn in _COMPARE.items():
        add(name, Case(fn, (X, Y)), Case(fn, (I1, I2)))
    for name, fn in _BITWISE.items():
        rhs = I2 if name.startswith("shift") else I1
        add(name, Case(fn, (np.abs(I1), rhs)))
        if name.startswith("shift"):  # negative values and over-wide shift amounts
            wide = np.array([0, 1, 31, 32, 33, 63, 64, 70, 5, 2, 3, 4]).reshape(3, 4)
            add(name, Case(fn, (I1 * 1000, wide)),
                Case(fn, ((I1 * 1000).astype(np.int32), wide.astype(np.int32))),
                Case(fn, (np.abs(I1).astype(np.uint32), wide.astype(np.uint32))))
    add("not", Case(lax.bitwise_not, (I1,)), Case(lax.bitwise_not, (X > 0,)))
    add("population_count", Case(lax.population_count, (np.abs(I1),)))
    add("complex", Case(lax.complex, (X, Y)))
    add("real", Case(lambda x, y: lax.real(lax.complex(x, y)), (X, Y), (0, 1)))
    add("imag", Case(lambda x, y: lax.imag(lax.complex(x, y)), (X, Y), (0, 1)))
    add("conj", Case(lambda x, y: lax.real(lax.conj(lax.complex(x, y)) * 2.0), (X, Y)))
    add("select_n", Case(lambda p, x, y: lax.select(p, x, y), (X > 0, X, Y), (1, 2)))
    add("clamp", Case(lambda x: lax.clamp(-0.5, x, 0.5), (X,), (0,)))
    add("convert_element_type",
        Case(lambda x: lax.convert_element_type(x, np.float32), (X,)),
        Case(lambda x: lax.convert_element_type(x, np.int32), (X * 3,)),
        Case(lambda x: lax.convert_element_type(x, np.float64), (I1,)))
    add("bitcast_convert_type", Case(lambda x: lax.bitcast_convert_type(x, np.int64), (X,)))
    # numbax-internal (the CPU compiler's float16 and bfloat16 programs): their values, kept in
    # float32/64
    add("round_to_float16", Case(lambda x: _round16.bind(x * 1000.0), (X,)),
        Case(lambda x: _round16.bind(x), (X.astype(np.float32) * 1e-6,)))
    add("round_to_bfloat16", Case(lambda x: _round_bf16.bind(x * 1000.0),
                                  (X.astype(np.float32),)),
        Case(lambda x: _round_bf16.bind(x), (X.astype(np.float32) * 1e-39,)))
    add("add_any", Case(lambda x: lax.reduce_sum(lax.sin(x) * lax.cos(x), (0, 1)), (X,), (0,)))
    # shapes
    add("broadcast_in_dim", Case(lambda x: lax.broadcast_in_dim(x, (2, 3, 4), (1, 2)), (X,),
                                 (0,)))
    add("reshape", Case(lambda x: lax.reshape(x, (4, 3)), (X,), (0,)))
    add("transpose", Case(lambda x: lax.transpose(x, (1, 0)), (X,), (0,)))
    add("squeeze", Case(lambda x: lax.squeeze(x, (0,)), (normal(1, 4),), (0,)))
    add("rev", Case(lambda x: lax.rev(x, (1,)), (X,), (0,)))
    add("slice", Case(lambda x: lax.slice(x, (0, 1), (3, 4), (2, 1)), (X,), (0,)))
    add("concatenate", Case(lambda x, y: lax.concatenate([x, y], 1), (X, Y), (0, 1)))
    add("pad", Case(lambda x: lax.pad(x, 0.5, ((1, 0, 1), (0, 2, 0))), (X,), (0,)))
    add("iota", Case(lambda x: x + lax.convert_element_type(lax.iota(np.int64, 4),
                                                           np.float64), (X,)))
    add("copy", Case(lax.copy, (X,), (0,)))
    # indexing
    add("dynamic_slice", Case(lambda x, i: lax.dynamic_slice(x, (i, 1), (2, 2)),
                              (X, np.int64(1)), (0,)))
    add("dynamic_update_slice", Case(lambda x, u, i: lax.dynamic_update_slice(x, u, (i, 0)),
                                     (X, normal(2, 4), np.int64(1)), (0, 1)))
    idx = np.array([[2], [0], [2]])
    add("gather", Case(lambda x: element.gather(x, idx, (0,)), (X,), (0,)))
    uniq = np.array([[2], [0]])
    for name, fn in (("scatter", element.scatter), ("scatter-add", element.scatter_add),
                     ("scatter-mul", element.scatter_mul), ("scatter-min", element.scatter_min),
                     ("scatter-max", element.scatter_max)):
        upd = normal(2, 4)
        diff = (0, 1) if name in ("scatter", "scatter-add") else ()
        add(name, Case(lambda x, u, fn=fn: fn(x, uniq, u, (0,)), (X, upd), diff))
    along = np.argsort(X, axis=1)
    add("take_along_axis", Case(lambda x: jnp.take_along_axis(x, along, axis=1), (X,), (0,)))
    add("scatter_add_along_axis", Case(
        lambda u: numbax._src.lax.along_axis.scatter_add_along_axis(u, along, 1, 4), (X,),
        (0,)))
    # reductions
    for name, fn in (("reduce_sum", lax.reduce_sum), ("reduce_max", lax.reduce_max),
                     ("reduce_min", lax.reduce_min), ("reduce_prod", lax.reduce_prod)):
        add(name, Case(lambda x, fn=fn: fn(x, (1,)), (X,), (0,)),
            Case(lambda x, fn=fn: fn(x, (0, 1)), (X.astype(np.float32),)))
    add("reduce_sum", Case(lambda x: lax.reduce_sum(x, (0,)), (I1,)))
    add("reduce_and", Case(lambda x: lax.reduce_and(x, (1,)), (X > -1,)))
    add("reduce_or", Case(lambda x: lax.reduce_or(x, (0,)), (X > 1,)))
    add("argmax", Case(lambda x: lax.argmax(x, 1, np.int64), (X,)))
    add("argmin", Case(lambda x: lax.argmin(x, 0, np.int64), (X,)))
    for name in ("cumsum", "cumprod", "cummax", "cummin"):
        fn = getattr(lax, name)
        add(name, Case(lambda x, fn=fn: fn(x, axis=1), (X,), (0,)),
            Case(lambda x, fn=fn: fn(x, axis=0, reverse=True), (X,)))
    add("dot_general", Case(lambda x, y: lax.dot_general(x, y, (((1,), (1,)), ((), ()))),
                            (X, Y), (0, 1)),
        Case(lambda x, y: lax.dot_general(x, y, (((1,), (0,)), ((), ()))),
             (X.astype(np.float32), normal(4, 2, dtype=np.float32))))
    add("sort", Case(lambda x: lax.sort(x, dimension=1), (X,), (0,)),
        Case(lambda x, y: lax.sort((x, y), dimension=0, num_keys=1)[1], (X, Y)))
    # linear algebra (gauge-invariant outputs for the decompositions)
    from numbax.lax import linalg

    spd = normal(3, 3) @ normal(3, 3).T + 3 * np.eye(3)
    tri = np.tril(normal(3, 3)) + 3 * np.eye(3)
    add("cholesky", Case(linalg.cholesky, (spd,), (0,), vmap=False))
    add("triangular_solve", Case(lambda a, b: linalg.triangular_solve(
        a, b, left_side=True, lower=True), (tri, normal(3, 2)), (0, 1)))
    add("lu", Case(lambda a: linalg.lu(a)[0], (spd,), (0,)))
    add("qr", Case(lambda a: jnp.abs(linalg.qr(a, full_matrices=False)[1]), (normal(4, 3),),
                   (0,)))
    add("eigh", Case(lambda a: linalg.eigh(a)[1], (spd,), (0,)))
    add("svd", Case(lambda a: linalg.svd(a, compute_uv=False), (normal(4, 3),), (0,)))
    # control flow and call primitives
    add("cond", Case(lambda p, x: lax.cond(p > 0, lambda v: lax.sin(v), lambda v: v * 2.0, x),
                     (np.float64(0.3), X), (1,)))
    add("scan", Case(lambda x: lax.scan(lambda c, r: (c * 0.5 + r, c), X[0] * 0, x)[1], (X,),
                     (0,)))
    add("while", Case(lambda x: lax.while_loop(lambda c: c[0] < 3,
                                               lambda c: (c[0] + 1, c[1] * 1.5), (0, x))[1],
                      (X,)))
    add("custom_jvp_call", Case(lambda x: numbax.nn.relu(x) if hasattr(numbax, "nn") and
                                hasattr(numbax.nn, "relu") else _custom_square(x), (X,), (0,)))
    add("custom_vjp_call", Case(_custom_vjp_cube, (X,), (0,), modes=("rev",)))
    add("custom_lin", Case(lambda x: numbax.grad(lambda v: jnp.sum(_custom_vjp_cube(v)))(x),
                           (X,)))
    add("checkpoint", Case(lambda x: numbax.checkpoint(lambda v: lax.sin(lax.sin(v)))(x), (X,),
                           (0,)))
    return cases


@numbax.custom_jvp
def _custom_square(x):
    return x * x


@_custom_square.defjvp
def _custom_square_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return x * x, 2.0 * x * t


@numbax.custom_vjp
def _custom_vjp_cube(x):
    return x * x * x


_custom_vjp_cube.defvjp(lambda x: (x * x * x, x), lambda x, g: (3.0 * x * x * g,))

CASES = _cases()
# Primitives exercised by other test modules because they need an enclosing named axis.
COLLECTIVES = {"psum", "psum_many", "pmax", "pmin", "all_gather", "ppermute", "psum_scatter",
               "axis_index", "all_to_all"}
ROWS = [(name, i) for name, cs in sorted(CASES.items()) for i in range(len(cs))]


def _tol(outs) -> dict:
    dtypes = {np.asarray(o).dtype for o in outs}
    if np.dtype(np.float32) in dtypes:
        return dict(rtol=2e-5, atol=2e-6)
    return dict(rtol=1e-12, atol=1e-12)


def _assert_trees_close(got, want) -> None:
    g_leaves, w_leaves = numbax.tree.leaves(got), numbax.tree.leaves(want)
    assert len(g_leaves) == len(w_leaves)
    for g, w in zip(g_leaves, w_leaves):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        if g.dtype.kind in "fc":
            np.testing.assert_allclose(g, w, equal_nan=True, **_tol([g]))
        else:
            np.testing.assert_array_equal(g, w)


# numbax's own primitives, taken when this module is imported (after importing every numbax
# namespace that registers some), so primitives that other test modules define are left out.
_NUMBAX_PRIMITIVES = {p.name: p for p in core.abstract_eval_rules
                      if not p.name.startswith("test_")}


def _registered() -> dict[str, core.Primitive]:
    return dict(_NUMBAX_PRIMITIVES)


def test_every_primitive_has_matrix_rows():
    missing = sorted(set(_registered()) - set(CASES) - COLLECTIVES)
    assert not missing, f"primitives without rows in the test matrix: {missing}"


def test_every_primitive_has_a_jvp_and_batch_rule():
    no_jvp = [n for n, p in _registered().items()
              if p not in ad.jvp_rules and p not in ad.non_differentiable]
    assert not no_jvp, f"primitives with neither a jvp rule nor a non-differentiable mark: {no_jvp}"
    no_batch = [n for n, p in _registered().items()
                if p not in batching.batch_rules and p not in batching.collective_rules
                and p not in batching.axis_batch_rules]
    assert not no_batch, f"primitives without a batching rule: {no_batch}"


@pytest.mark.parametrize("name,i", ROWS)
def test_jit_matches_eager(name, i):
    case = CASES[name][i]
    want = case.fn(*case.args)
    got = numbax.jit(case.fn)(*case.args)
    _assert_trees_close(got, want)


@pytest.mark.parametrize("name,i", [r for r in ROWS if CASES[r[0]][r[1]].vmap])
def test_vmap_matches_loop(name, i):
    case = CASES[name][i]
    batched = tuple(np.stack([a, np.roll(np.asarray(a), 1)]) if np.ndim(a) else
                    np.stack([a, a]) for a in case.args)
    got = numbax.vmap(case.fn)(*batched)
    want = [case.fn(*[b[k] for b in batched]) for k in range(2)]
    want = numbax.tree.map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *want)
    _assert_trees_close(got, want)


@pytest.mark.parametrize("name,i", [r for r in ROWS if CASES[r[0]][r[1]].grad])
def test_grads_match_finite_differences(name, i):
    case = CASES[name][i]
    argnums = case.grad

    def f(*diff):
        args = list(case.args)
        for k, a in zip(argnums, diff):
            args[k] = a
        return case.fn(*args)

    check_grads(f, tuple(case.args[k] for k in argnums), order=2, modes=case.modes)

