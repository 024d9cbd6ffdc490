"""lax calls written once against a module bundle `m` (m.lax, m.jnp, m.jax), so the same lines
run on JAX (tests/data/make_lax_reference.py records their results into
lax_jax_reference.json, with jax_enable_x64) and on numbax (tests/lax/test_jax_reference.py
compares). Each case is a thunk returning arrays, nested lists of them, or strings."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

RNG = np.random.default_rng(1234)
F32 = RNG.normal(size=(4, 5)).astype(np.float32)
F64 = RNG.normal(size=(3, 4))
I32 = RNG.integers(-1000, 1000, size=(3, 4)).astype(np.int32)
U32 = RNG.integers(0, 2**32, size=(6,), dtype=np.uint64).astype(np.uint32)


def _precision_cases(m) -> dict[str, Callable]:
    lax = m.lax
    strings = ["highest", "float32", "high", "bfloat16_3x", "tensorfloat32", "default",
               "bfloat16", "fastest"]
    cases: dict[str, Callable] = {
        "precision_strings": lambda: [repr(lax.Precision(s)) for s in strings],
        "precision_ints": lambda: [repr(lax.Precision(i)) for i in range(3)],
        "precision_str": lambda: [str(p) for p in lax.Precision],
    }

    def params_of(precision):
        def thunk():
            jaxpr = m.jax.make_jaxpr(lambda a, b: lax.dot(a, b, precision=precision))(
                F32, F32.T.copy())
            (eqn,) = [e for e in jaxpr.eqns if e.primitive.name == "dot_general"]
            return repr(eqn.params["precision"])
        return thunk

    for name, p in [("none", None), ("highest", "highest"), ("enum", lax.Precision.HIGH),
                    ("pair", ("highest", "default")),
                    ("enum_pair", (lax.Precision.HIGH, lax.Precision.DEFAULT)),
                    ("preset", lax.DotAlgorithmPreset.F32_F32_F32),
                    ("preset_name", "F64_F64_F64")]:
        cases[f"dot_params_{name}"] = params_of(p)
    for p in ["highest", "default", ("high", "fastest"), "DEFAULT", "F16_F16_F16",
              "BF16_BF16_F32", "BF16_BF16_F32_X3", "BF16_BF16_F32_X6", "F32_F32_F32",
              "F64_F64_F64"]:
        cases[f"dot_value_{p}"] = lambda p=p: lax.dot(F32, F32.T, precision=p)
    cases["dot_preferred_int8"] = lambda: lax.dot(
        I32.astype(np.int8), I32.T.astype(np.int8), preferred_element_type=np.int32)
    cases["dot_general_preferred_f64"] = lambda: lax.dot_general(
        F32, F32, (((1,), (1,)), ((), ())), preferred_element_type=np.float64)
    cases["batch_matmul_precision"] = lambda: lax.batch_matmul(
        F32.reshape(2, 2, 5), F32.reshape(2, 5, 2), precision="highest")
    cases["round_methods"] = lambda: [
        lax.round(np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.4]), method)
        for method in (lax.RoundingMethod.AWAY_FROM_ZERO, lax.RoundingMethod.TO_NEAREST_EVEN)]
    cases["rounding_method_repr"] = lambda: [repr(r) for r in lax.RoundingMethod]
    cases["random_algorithm_str"] = lambda: [str(r) for r in lax.RandomAlgorithm]
    cases["gather_scatter_mode"] = lambda: [
        repr(lax.GatherScatterMode.from_any(s)) for s in ("clip", None, "fill", "drop",
                                                           "promise_in_bounds")]
    cases["gather_dimension_numbers_repr"] = lambda: repr(
        lax.GatherDimensionNumbers((1,), (0,), (0,)))
    cases["scatter_dimension_numbers_repr"] = lambda: repr(
        lax.ScatterDimensionNumbers((1,), (0,), (0,)))
    cases["accuracy_exp"] = lambda: [lax.exp(F64, accuracy=lax.AccuracyMode.HIGHEST),
                                     lax.sin(F64, accuracy=lax.Tolerance(atol=1e-3))]
    return cases


def _creation_cases(m) -> dict[str, Callable]:
    lax, jnp = m.lax, m.jnp
    return {
        "full_like_f32": lambda: lax.full_like(np.ones(3, np.float32), 2),
        "full_like_int_fill_float": lambda: lax.full_like(np.arange(3), 1.5),
        "full_like_dtype_shape": lambda: lax.full_like(np.ones((2,)), 1, dtype=np.int8,
                                                       shape=(2, 3)),
        "full_like_struct": lambda: lax.full_like(m.jax.ShapeDtypeStruct((2,), np.float32), 4),
        "empty_shape_dtype": lambda: [str(lax.empty((2, 3), np.float32).shape),
                                      str(lax.empty(4, np.int32).dtype)],
        "broadcast_shapes": lambda: [str(lax.broadcast_shapes((3, 1), (1, 4), (5, 1, 1))),
                                     str(lax.broadcast_shapes((2,)))],
        "broadcast_shapes_clash": lambda: lax.broadcast_shapes((3,), (4,)),
        "broadcast_to_rank": lambda: lax.broadcast_to_rank(np.arange(3.0), 3),
        "broadcast_to_rank_same": lambda: lax.broadcast_to_rank(np.arange(3.0), 1),
        "broadcast_like": lambda: [lax.broadcast_like(np.array([1, 2, 3]), np.zeros((2, 3))),
                                   lax.broadcast_like(F64[:, :1], np.zeros((2, 3, 4)))],
        "shape_as_value": lambda: [lax.shape_as_value((2, 3)), lax.shape_as_value(())],
        "padtype_to_pads": lambda: [str(lax.padtype_to_pads((5, 7), (3, 2), (2, 3), pad))
                                    for pad in ("SAME", "SAME_LOWER", "valid", "same")],
        "padtype_to_pads_bad": lambda: lax.padtype_to_pads((5,), (3,), (2,), "bad"),
        "reciprocal": lambda: lax.reciprocal(F64),
        "reciprocal_int": lambda: lax.reciprocal(np.array([2, 4])),
        "dtype": lambda: [str(lax.dtype(x)) for x in (1.0, 2, np.float32(1), "int16", F32)],
        "integer_pow_negative_int": lambda: lax.integer_pow(np.array([1, 2, 3]), -2),
        "integer_pow_negative_float": lambda: lax.integer_pow(F64, -3),
        "power_negative_int": lambda: jnp.power(np.array([1, 2, 3]), -2),
    }


SPECIAL32 = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 1e-30, 3.5, -3.5, 1e30,
                      65504.0, 65520.0, 6e-5, 1.0 + 2**-11, 1.0 + 3 * 2**-11], np.float32)


def _bits_cases(m) -> dict[str, Callable]:
    lax = m.lax
    ints = {dt: np.array([0, 1, 2, 3, 100, -1, -100, np.iinfo(dt).min, np.iinfo(dt).max], dt)
            for dt in (np.int8, np.int16, np.int32, np.int64)}
    uints = {dt: np.array([0, 1, 2, 3, 100, np.iinfo(dt).max, np.iinfo(dt).max // 3], dt)
             for dt in (np.uint8, np.uint16, np.uint32, np.uint64)}
    out: dict[str, Callable] = {}
    for dt, x in {**ints, **uints}.items():
        name = np.dtype(dt).name
        out[f"clz_{name}"] = lambda x=x: lax.clz(x)
        out[f"mulhi_{name}"] = lambda x=x: lax.mulhi(x, x[::-1].copy())
    for e, mb in [(5, 10), (8, 7), (8, 23), (4, 3), (5, 2), (11, 52), (8, 0), (2, 1)]:
        out[f"reduce_precision_f32_{e}_{mb}"] = lambda e=e, mb=mb: lax.reduce_precision(
            SPECIAL32, e, mb)
        out[f"reduce_precision_f64_{e}_{mb}"] = lambda e=e, mb=mb: lax.reduce_precision(
            SPECIAL32.astype(np.float64) * np.pi, e, mb)
    out["reduce_precision_int"] = lambda: lax.reduce_precision(np.arange(3), 5, 10)
    out["reduce_precision_bad_bits"] = lambda: lax.reduce_precision(F32, 0, 10)
    out["clz_float"] = lambda: lax.clz(F32)
    out["mulhi_float"] = lambda: lax.mulhi(F32, F32)
    sp = SPECIAL32
    for name in ("eq_to", "le_to", "lt_to"):
        out[f"{name}_floats"] = lambda name=name: getattr(lax, name + "_p").bind(
            sp[:, None] * np.ones(len(sp), np.float32), sp[None, :] * np.ones((len(sp), 1),
                                                                             np.float32))
        out[f"{name}_ints"] = lambda name=name: getattr(lax, name + "_p").bind(
            I32, I32[:, ::-1].copy())
    return out


def _pieces_cases(m) -> dict[str, Callable]:
    lax = m.lax
    x = F64
    return {
        "split": lambda: lax.split(x, (1, 3), axis=1),
        "split_empty_piece": lambda: lax.split(x, (0, 3), axis=0),
        "split_bad_sum": lambda: lax.split(x, (1, 2), axis=1),
        "split_negative": lambda: lax.split(x, (-1, 5), axis=1),
        "stack": lambda: [lax.stack([x, 2 * x], axis=-1), lax.stack([x, x])],
        "stack_shapes": lambda: lax.stack([x, x[:2]]),
        "stack_dtypes": lambda: lax.stack([x, I32]),
        "unstack": lambda: [list(lax.unstack(x, axis=1)), list(lax.unstack(x, axis=-2))],
        "tile": lambda: [lax.tile(x, (2, 1)), lax.tile(x, (0, 2)), lax.tile(I32[0], (3,))],
        "tile_bad_reps": lambda: lax.tile(x, (2,)),
        "unstack_jaxpr": lambda: str(m.jax.make_jaxpr(lambda a: lax.unstack(a, axis=1))(x)),
        "split_grad": lambda: m.jax.grad(lambda a: (lax.split(a, (1, 3), axis=1)[1] ** 2).sum())(
            x),
        "tile_grad": lambda: m.jax.grad(lambda a: (lax.tile(a, (2, 3)) * np.arange(
            72.0).reshape(6, 12)).sum())(x),
    }


def _reduce_cases(m) -> dict[str, Callable]:
    lax, jnp, jax = m.lax, m.jnp, m.jax
    special = np.array([[1.0, -np.inf, 3.0, 0.0], [2.0, 2.0, -1.0, 5.0], [-np.inf] * 4])
    argmax_pair = lambda a, b: (jnp.maximum(a[0], b[0]),  # noqa: E731
                                jnp.where(a[0] >= b[0], a[1], b[1]))
    return {
        "reduce_xor": lambda: [lax.reduce_xor(I32, (0,)), lax.reduce_xor(I32 > 0, (1,)),
                               lax.reduce_xor(U32, (0,))],
        "reduce_xor_float": lambda: lax.reduce_xor(F64, (0,)),
        "cumlogsumexp": lambda: [lax.cumlogsumexp(special, axis=1),
                                 lax.cumlogsumexp(special, axis=0, reverse=True),
                                 lax.cumlogsumexp(F32, axis=1)],
        "cumlogsumexp_jvp": lambda: jax.jvp(lambda v: lax.cumlogsumexp(v, axis=1),
                                            (special[:2],), (np.arange(8.0).reshape(2, 4),))[1],
        "cumlogsumexp_grad": lambda: jax.grad(lambda v: (lax.cumlogsumexp(v, axis=0, reverse=True)
                                                         * F64).sum())(F64),
        "reduce_monoids": lambda: [
            lax.reduce(F64, 0.0, lax.add, (1,)), lax.reduce(F64, 1.0, lax.mul, (0,)),
            lax.reduce(F64, -np.inf, lax.max, (0, 1)), lax.reduce(I32, 0, lax.bitwise_xor, (1,)),
            lax.reduce(I32 > 0, True, lax.bitwise_and, (0,))],
        "reduce_general": lambda: [
            lax.reduce(F64, 1.0, lax.add, (0, 1)),
            lax.reduce(F64, 1.0, lambda a, b: a * b, (1,)),
            lax.reduce(np.ones((3, 0)), 2.0, lambda a, b: a * b, (1,))],
        "reduce_multi_operand": lambda: list(lax.reduce(
            (F64, np.arange(12).reshape(3, 4)), (-np.inf, 0), argmax_pair, (1,))),
        "reduce_grad": lambda: jax.grad(lambda v: lax.reduce(v, 1.0, lambda a, b: a * b,
                                                             (0, 1)))(F64),
        "reduce_bad_tree": lambda: lax.reduce((F64, F64), 0.0, lax.add, (0,)),
        "reduce_jaxpr_monoid": lambda: [e.primitive.name for e in jax.make_jaxpr(
            lambda v: lax.reduce(v, 0.0, lax.add, (1,)))(F64).eqns],
    }


def _slicing_cases(m) -> dict[str, Callable]:
    lax, jax = m.lax, m.jax
    G, S = lax.GatherDimensionNumbers, lax.ScatterDimensionNumbers
    x = np.arange(12.0).reshape(3, 4)
    cube = np.arange(24.0).reshape(2, 3, 4)
    rows = G(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    win = G(offset_dims=(1, 2), collapsed_slice_dims=(), start_index_map=(0, 1))
    bat = G(offset_dims=(2,), collapsed_slice_dims=(2,), start_index_map=(2,),
            operand_batching_dims=(0,), start_indices_batching_dims=(0,))
    idx_rows = np.array([[2], [0], [5], [-1]])
    idx_win = np.array([[0, 0], [1, 2], [2, 3], [-1, 1]])
    idx_bat = np.array([[[3], [0], [1], [9], [2]], [[1], [1], [0], [2], [-4]]])
    out: dict[str, Callable] = {}
    for mode in (None, "clip", "fill", "promise_in_bounds"):
        out[f"gather_rows_{mode}"] = lambda mode=mode: lax.gather(x, idx_rows, rows, (1, 4),
                                                                  mode=mode)
        out[f"gather_window_{mode}"] = lambda mode=mode: lax.gather(x, idx_win, win, (2, 2),
                                                                    mode=mode)
        out[f"gather_batching_{mode}"] = lambda mode=mode: lax.gather(cube, idx_bat, bat,
                                                                      (1, 3, 1), mode=mode)
    out["gather_fill_value"] = lambda: lax.gather(x, idx_rows, rows, (1, 4), mode="fill",
                                                  fill_value=-7.0)
    out["gather_int_fill"] = lambda: lax.gather(I32, idx_rows[:3], rows, (1, 4), mode="fill")
    out["gather_grad"] = lambda: jax.grad(lambda v: (lax.gather(v, idx_win, win, (2, 2),
                                                                mode="fill") ** 2).sum())(F64)
    out["gather_bad_slice"] = lambda: lax.gather(x, idx_rows, rows, (2, 4))
    out["gather_bad_offset"] = lambda: lax.gather(x, idx_rows, G((0,), (0,), (0,)), (1, 4))
    one = S(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
    rows_s = S(update_window_dims=(1,), inserted_window_dims=(0,),
               scatter_dims_to_operand_dims=(0,))
    win_s = S(update_window_dims=(1, 2), inserted_window_dims=(),
              scatter_dims_to_operand_dims=(0, 1))
    bat_s = S(update_window_dims=(2,), inserted_window_dims=(2,),
              scatter_dims_to_operand_dims=(2,), operand_batching_dims=(0,),
              scatter_indices_batching_dims=(0,))
    vec = np.arange(5.0)
    idx1 = np.array([[1], [1], [4], [7], [-1]])
    upd1 = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    for name in ("scatter", "scatter_add", "scatter_sub", "scatter_mul", "scatter_min",
                 "scatter_max"):
        fn = getattr(lax, name)
        for mode in (None, "clip"):
            out[f"{name}_one_{mode}"] = lambda fn=fn, mode=mode: fn(vec, idx1, upd1, one,
                                                                    mode=mode)
        out[f"{name}_rows"] = lambda fn=fn: fn(x, idx_rows, np.arange(16.0).reshape(4, 4),
                                               rows_s)
        out[f"{name}_window"] = lambda fn=fn: fn(x, idx_win, np.arange(16.0).reshape(4, 2, 2),
                                                 win_s, mode="clip")
        out[f"{name}_batching"] = lambda fn=fn: fn(cube, idx_bat, np.arange(30.0).reshape(
            2, 5, 3), bat_s)
    out["scatter_add_grad"] = lambda: list(jax.grad(
        lambda v, u: (lax.scatter_add(v, idx_win, u, win_s) ** 2).sum(), argnums=(0, 1))(
        x, np.arange(16.0).reshape(4, 2, 2)))
    out["scatter_sub_jaxpr"] = lambda: [e.primitive.name for e in jax.make_jaxpr(
        lambda v: lax.scatter_sub(v, idx1, upd1, one))(vec).eqns][-1]
    out["scatter_bad_updates"] = lambda: lax.scatter_add(vec, idx1, upd1[:3], one)
    out["scatter_apply"] = lambda: [
        lax.scatter_apply(vec, idx1, lambda v: v * 10 + 1, one, update_shape=(5,)),
        lax.scatter_apply(x, idx_rows[:2], jax.numpy.sin, rows_s, update_shape=(2, 4))]
    out["index_take"] = lambda: [
        lax.index_take(I32, (np.array([0, 2, -1]), np.array([1, 3, -4])), (0, 1)),
        lax.index_take(I32, (np.array([0, 2]),), (1,))]
    out["dynamic_update_slice_in_dim"] = lambda: [
        lax.dynamic_update_slice_in_dim(x, -np.ones((3, 2)), -1, axis=1),
        lax.dynamic_update_slice_in_dim(x, -np.ones((3, 2)), 1, axis=1,
                                        allow_negative_indices=False),
        lax.dynamic_update_slice_in_dim(x, -np.ones((1, 4)), 5, axis=0)]
    return out


def _top_k_cases(m) -> dict[str, Callable]:
    lax, jax = m.lax, m.jax
    x = np.array([[3.0, np.nan, 1.0, 3.0, -np.inf, 7.0], [0.0, -0.0, 2.0, 2.0, 2.0, 1.0]])
    return {
        "top_k": lambda: [list(lax.top_k(x, 3)), list(lax.top_k(x, 2, axis=0)),
                          list(lax.top_k(I32, 4)), list(lax.top_k(np.int8([3, 1, 2]), 2))],
        "top_k_jvp": lambda: jax.jvp(lambda a: lax.top_k(a, 2)[0], (x,),
                                     (np.arange(12.0).reshape(2, 6),))[1],
        "top_k_grad": lambda: jax.grad(lambda a: (lax.top_k(a, 3)[0] * np.arange(3.0)).sum())(
            F64),
        "top_k_too_big": lambda: lax.top_k(x, 7),
        "top_k_negative": lambda: lax.top_k(x, -1),
        "top_k_jaxpr": lambda: str(jax.make_jaxpr(lambda a: lax.top_k(a, 3))(x)),
        "approx_max_k": lambda: [list(lax.approx_max_k(F64, 2)),
                                 list(lax.approx_max_k(F64, 2, reduction_dimension=0)),
                                 list(lax.approx_min_k(F64, 3))],
        "approx_min_k_ties": lambda: list(lax.approx_min_k(x[1:], 3)),
    }


def _ordering_cases(m) -> dict[str, Callable]:
    lax, jax = m.lax, m.jax

    def jaxpr(f, *args):
        return lambda: str(jax.make_jaxpr(f)(*args))

    return {
        "tokens_jaxpr": jaxpr(lambda x: lax.after_all(lax.create_token(), lax.create_token()),
                              1.0),
        "token_repr_types": lambda: [type(lax.create_token()).__name__,
                                     type(lax.after_all()).__name__],
        "after_all_not_tokens": lambda: lax.after_all(1.0),
        "optimization_barrier_jaxpr": jaxpr(lambda x: lax.optimization_barrier((x, x + 1)), 1.0),
        "optimization_barrier_value": lambda: list(lax.optimization_barrier((1.0, I32))),
        "optimization_barrier_grad": lambda: jax.grad(
            lambda x: lax.optimization_barrier((x * x, x))[0])(3.0),
        "stage_jaxpr": jaxpr(lambda x: lax.stage(x), 1.0),
        "stage_value": lambda: lax.stage(F64),
        "dce_sink_jaxpr": jaxpr(lambda x: lax.dce_sink(x), 1.0),
        "dce_sink_value": lambda: str(lax.dce_sink(1.0)),
        "platform_dependent": lambda: [
            lax.platform_dependent(2.0, cpu=lambda x: x * 3, default=lambda x: x),
            lax.platform_dependent(2.0, default=lambda x: x + 1),
            lax.platform_dependent(2.0, 3.0, cuda=lambda x, y: x * y, default=lambda x, y: x - y),
            jax.jit(lambda v: lax.platform_dependent(v, cpu=jax.numpy.sin,
                                                     tpu=jax.numpy.cos))(F64)],
        "platform_dependent_gpu": lambda: lax.platform_dependent(1.0, gpu=lambda x: x),
        "composite": lambda: [lax.composite(lambda x, y: x * y + 1, name="my.fma")(F64, F64),
                              lax.composite(lambda x, *, k: x * k, name="scale", version=2)(
                                  F64, k=3)],
    }


def _scan_cases(m) -> dict[str, Callable]:
    lax, jnp, jax = m.lax, m.jnp, m.jax
    affine = lambda a, b: (a[0] * b[0], a[1] * b[0] + b[1])  # noqa: E731
    return {
        "associative_scan_add": lambda: [lax.associative_scan(jnp.add, np.arange(n, dtype=float))
                                         for n in (0, 1, 2, 5, 8)],
        "associative_scan_tuple_reverse": lambda: list(lax.associative_scan(
            affine, (np.arange(1.0, 6.0), np.ones(5)), reverse=True)),
        "associative_scan_axis": lambda: [lax.associative_scan(jnp.maximum, F64, axis=1),
                                          lax.associative_scan(jnp.minimum, F64, axis=-2)],
        "associative_scan_grad": lambda: jax.grad(
            lambda v: (lax.associative_scan(jnp.multiply, v, axis=1) * F64).sum())(F64),
        "associative_scan_lengths": lambda: lax.associative_scan(
            jnp.add, (np.ones(3), np.ones(4))),
    }


def _solve_cases(m) -> dict[str, Callable]:
    lax, jnp, jax = m.lax, m.jnp, m.jax
    a = F64[:, :3] @ F64[:, :3].T / 4 + np.eye(3)
    b = F64[0, :3].copy()

    def richardson(matvec, rhs):
        step = lambda c: (c[0] + 0.05 * (rhs - matvec(c[0])), c[1] + 1)  # noqa: E731
        return lax.while_loop(lambda c: c[1] < 800, step, (jnp.zeros_like(rhs), 0))[0]

    def solve_sym(s, r):
        return lax.custom_linear_solve(lambda v: s @ v, r, richardson, symmetric=True)

    def solve_gen(s, r):
        return lax.custom_linear_solve(lambda v: s @ v, r, lambda mv, y: jnp.linalg.solve(s, y),
                                       lambda vm, y: jnp.linalg.solve(s.T, y))

    def newton_sqrt(x):
        def newton(f, x0):
            return lax.fori_loop(0, 40, lambda i, y: y - f(y) / (2 * y), x0)
        return lax.custom_root(lambda y: y * y - x, 1.0, newton, lambda g, y: y / g(1.0))

    nonsym = a + np.triu(np.ones((3, 3)), 1)
    return {
        "custom_linear_solve": lambda: [solve_sym(a, b), solve_gen(nonsym, b)],
        "custom_linear_solve_grad": lambda: list(jax.grad(
            lambda s, r: (solve_sym(s, r) ** 2).sum(), argnums=(0, 1))(a, b)),
        "custom_linear_solve_grad_nonsym": lambda: list(jax.grad(
            lambda s, r: (solve_gen(s, r) * np.arange(3.0)).sum(), argnums=(0, 1))(nonsym, b)),
        "custom_linear_solve_jvp": lambda: jax.jvp(lambda s: solve_gen(s, b), (nonsym,),
                                                   (np.ones((3, 3)),))[1],
        "custom_linear_solve_vmap": lambda: jax.vmap(lambda r: solve_sym(a, r))(F64[:, :3]),
        "custom_linear_solve_aux": lambda: list(lax.custom_linear_solve(
            lambda v: a @ v, b, lambda mv, r: (jnp.linalg.solve(a, r), r.sum()), symmetric=True,
            has_aux=True)),
        "custom_root": lambda: [newton_sqrt(2.0), jax.grad(newton_sqrt)(2.0),
                                jax.grad(jax.grad(newton_sqrt))(2.0),
                                jax.vmap(newton_sqrt)(np.array([1.0, 4.0, 9.0]))],
        "custom_root_jvp": lambda: jax.jvp(newton_sqrt, (3.0,), (1.0,))[1],
    }


def _collective_cases(m) -> dict[str, Callable]:
    lax, jax = m.lax, m.jax
    x = np.arange(24.0).reshape(4, 3, 2)
    y = np.arange(48.0).reshape(4, 4, 3)
    z = np.arange(96.0).reshape(4, 8, 3)

    def named(f, *args):
        return lambda: jax.vmap(f, axis_name="i")(*args)

    return {
        "all_to_all": named(lambda v: lax.all_to_all(v, "i", 0, 1), y),
        "all_to_all_tiled": named(lambda v: lax.all_to_all(v, "i", 0, 1, tiled=True), z),
        "all_to_all_tiled_same": named(lambda v: lax.all_to_all(v, "i", 0, 0, tiled=True), z),
        "all_to_all_grad": lambda: jax.grad(lambda w: (jax.vmap(
            lambda v: lax.all_to_all(v, "i", 0, 1), axis_name="i")(w)
            * np.arange(48.0).reshape(4, 3, 4)).sum())(y),
        "all_to_all_bad_size": named(lambda v: lax.all_to_all(v, "i", 1, 0), y),
        "pswapaxes": named(lambda v: lax.pswapaxes(v, "i", 0), y),
        "pshuffle": named(lambda v: lax.pshuffle(v, "i", [2, 0, 3, 1]), x),
        "pshuffle_bad": named(lambda v: lax.pshuffle(v, "i", [2, 0, 0, 1]), x),
        "pbroadcast": named(lambda v: lax.pbroadcast(v, "i", 2), x),
    }


def _ragged_cases(m) -> dict[str, Callable]:
    lax, jax = m.lax, m.jax
    rng = np.random.default_rng(8)
    lhs = rng.normal(size=(7, 3))
    rhs = rng.normal(size=(3, 3, 2))
    sizes = np.array([2, 0, 4], np.int32)
    R = lax.RaggedDotDimensionNumbers
    contracting = R(dot_dimension_numbers=(((1,), (0,)), ((), ())), lhs_ragged_dimensions=(1,),
                    rhs_group_dimensions=())
    batched = R(dot_dimension_numbers=(((2,), (2,)), ((0,), (1,))), lhs_ragged_dimensions=(1,),
                rhs_group_dimensions=(0,))
    lhs_b = rng.normal(size=(2, 5, 3))
    rhs_b = rng.normal(size=(2, 2, 3, 4))
    rhs_c = rng.normal(size=(7, 2))
    rhs_batch = rng.normal(size=(2, 3, 4))
    sizes_b = np.array([[3, 2], [1, 3]], np.int32)
    batch_ragged = R(dot_dimension_numbers=(((2,), (1,)), ((0,), (0,))),
                     lhs_ragged_dimensions=(0,), rhs_group_dimensions=())
    return {
        "ragged_dot": lambda: lax.ragged_dot(lhs, rhs, sizes),
        "ragged_dot_short_groups": lambda: lax.ragged_dot(lhs, rhs, np.array([1, 2, 1])),
        "ragged_dot_preferred": lambda: lax.ragged_dot(
            lhs.astype(np.float32), rhs.astype(np.float32), sizes,
            preferred_element_type=np.float64),
        "ragged_dot_grad": lambda: list(jax.grad(lambda a, b: (lax.ragged_dot(a, b, sizes) ** 2)
                                                 .sum(), argnums=(0, 1))(lhs, rhs)),
        "ragged_dot_contracting": lambda: lax.ragged_dot_general(
            lhs.T.copy(), rhs_c, np.array([3, 4], np.int32), contracting),
        "ragged_dot_batched_groups": lambda: lax.ragged_dot_general(lhs_b, rhs_b, sizes_b,
                                                                    batched),
        "ragged_dot_batch_mode": lambda: lax.ragged_dot_general(
            lhs_b, rhs_batch, np.array([1, 1], np.int32), batch_ragged),
    }


def cases(m) -> dict[str, Callable]:
    """Every recorded case, by name."""
    out: dict[str, Callable] = {}
    for family in (_precision_cases, _creation_cases, _bits_cases, _pieces_cases,
                   _reduce_cases, _slicing_cases, _top_k_cases, _ordering_cases,
                   _scan_cases, _solve_cases, _collective_cases, _ragged_cases):
        out.update(family(m))
    return out
