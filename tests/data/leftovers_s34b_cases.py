"""Cases shared by make_leftovers_s34b_reference.py (run with jax) and tests/test_leftovers_s34b.py
(numbax): each case takes the `jax` module (jax or numbax) and returns a JSON-able summary, so
both record the same thing. `summary` turns a result or an exception into that summary.

Groups: WEAK (weak types of reciprocal, hypot's gradient, pow's gradient), ARRAYLIKE (which
jax.numpy functions refuse a list, and that array constructors still take one), TREES (dicts
with keys of mixed types), TRACERS (how tracers print under jit, vmap, grad, jvp), COND (vmap of
cond / switch with a batched predicate: both branches, callbacks, gradients), VJP (the VJP
object's args_res and opaque_residuals), CHECKIFY (Python scalar arguments) and RESIDUALS
(print_saved_residuals' lines)."""
import contextlib
import io
import re

import numpy as np

ERRORS = (TypeError, ValueError, IndexError, NotImplementedError)


def summary(fn):
    """A case's JSON summary: its value, or {"error": the builtin class JAX's error is}."""
    try:
        return fn()
    except ERRORS as e:
        for cls in ERRORS:
            if isinstance(e, cls):
                return {"error": cls.__name__}
        raise


def typed(x):
    """[dtype, weak type, value] of an array result."""
    return [str(x.dtype), bool(getattr(x, "weak_type", False)),
            np.asarray(x).astype(np.float64).ravel().tolist()]


def printed(fn):
    """The lines fn prints (stdout, sorted: callbacks may print in any order)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        fn()
    return sorted(line for line in buf.getvalue().splitlines() if line)


# ----------------------------------------------------------------------------- weak types


def _weak(jax):
    jnp = jax.numpy

    def x():  # a weakly typed float32 scalar, as in the sharp-bits doc
        return (jnp.arange(5) + 1.0)[1] / 5.0

    return {
        "operand": lambda: typed(x()),
        "reciprocal": lambda: typed(jnp.reciprocal(x())),
        "reciprocal_strong": lambda: typed(jnp.reciprocal(jnp.float32(2))),
        "reciprocal_int": lambda: typed(jnp.reciprocal(jnp.arange(1, 4))),
        "hypot": lambda: typed(jnp.hypot(x(), x() + 1.0)),
        "hypot_grad": lambda: typed(jax.grad(lambda v: jnp.hypot(v, v + 1.0))(x())),
        "hypot_grad_strong": lambda: typed(
            jax.grad(lambda v: jnp.hypot(v, v + 1.0))(jnp.float32(0.4))),
        "pow_grad": lambda: typed(jax.grad(lambda v: v ** 2.5)(x())),
        "pow_grad_exponent": lambda: typed(jax.grad(lambda e: x() ** e)(x())),
        "pow": lambda: typed(x() ** 2.5),
        "pow_grad_strong": lambda: typed(jax.grad(lambda v: v ** 2.5)(jnp.float32(0.4))),
    }


# ----------------------------------------------------------------------------- arraylike

# jax.numpy functions that refuse a list, by the call that shows it: "l" f(list), "ll"
# f(list, list), "lll" f(list, list, list) (recorded from JAX 0.10.2)
REFUSING = {
    "l": """
    abs absolute acos acosh add all amax amin angle any arccos arccosh arcsin arcsinh arctan
    arctanh argmax argmin argsort argwhere around asin asinh atan atanh atleast_1d
    atleast_2d atleast_3d bincount bitwise_and bitwise_count bitwise_invert bitwise_not
    bitwise_or bitwise_xor broadcast_arrays cbrt ceil clip conj conjugate copy corrcoef cos
    cosh count_nonzero cov cumprod cumsum cumulative_prod cumulative_sum deg2rad degrees
    diag diag_indices_from diagflat diagonal diff ediff1d empty_like exp exp2 expm1 fabs
    flatnonzero flip fliplr flipud floor frexp histogram histogram_bin_edges histogramdd i0
    imag invert iscomplex isfinite isinf isnan isneginf isposinf isreal ix_ log log10 log1p
    log2 logaddexp logaddexp2 logical_and logical_not logical_or logical_xor
    matrix_transpose max maximum mean median meshgrid min minimum modf multiply nan_to_num
    nanargmax nanargmin nancumprod nancumsum nanmax nanmean nanmedian nanmin nanprod nanstd
    nansum nanvar negative nonzero ones_like packbits poly polyder polyint positive prod ptp
    rad2deg radians ravel real reciprocal rint roots rot90 round sign signbit sin sinc sinh
    sort sort_complex spacing sqrt square squeeze std subtract sum tan tanh trace transpose
    trapezoid tril tril_indices_from trim_zeros triu triu_indices_from trunc unique
    unique_all unique_counts unique_inverse unique_values unpackbits unstack unwrap vander
    var where zeros_like""",
    "ll": """
    allclose append arctan2 array_split astype atan2 bitwise_left_shift bitwise_right_shift
    broadcast_to choose compress convolve copysign correlate cross delete digitize divide
    divmod dot dsplit equal expand_dims extract float_power floor_divide fmax fmin fmod full
    full_like gcd greater greater_equal heaviside histogram2d hsplit hypot inner intersect1d
    isclose isin kron lcm ldexp left_shift less less_equal linspace matmul matvec mod
    nanpercentile nanquantile nextafter not_equal outer pad percentile permute_dims polyadd
    polydiv polymul polysub polyval pow power quantile remainder repeat reshape right_shift
    roll searchsorted setdiff1d setxor1d split take take_along_axis tensordot tile
    true_divide union1d unravel_index vdot vecdot vecmat vsplit""",
    "lll": """
    apply_along_axis apply_over_axes eye insert interp moveaxis piecewise place select""",
}


def _arraylike(jax):
    jnp = jax.numpy
    lst = [1.0, 2.0, 3.0]

    def refuses(name, n):
        def run():
            try:
                getattr(jnp, name)(*[lst] * n)
            except TypeError as e:
                return "refused" if "requires ndarray or scalar arguments" in str(e) else "other"
            except Exception as e:  # noqa: BLE001  (any other failure: not this check)
                return f"other {type(e).__name__}"
            return "ok"
        return run

    def accepted(fn):
        return lambda: np.asarray(fn()).astype(np.float64).ravel().tolist()

    a = jnp.ones(3)
    cases = {f"refuses_{name}": refuses(name, len(pattern))
             for pattern, names in REFUSING.items() for name in names.split()}
    cases.update({
        "sum_list": lambda: float(jnp.sum([1, 2, 3])),
        "sum_tuple": lambda: float(jnp.sum((1, 2, 3))),
        "add_second": lambda: np.asarray(jnp.add(a, [1.0, 2.0, 3.0])).tolist(),
        "where_x": lambda: np.asarray(jnp.where(a > 0, [1.0, 2.0, 3.0], a)).tolist(),
        "full_fill": lambda: np.asarray(jnp.full(3, [1.0, 2.0, 3.0])).tolist(),
        "histogram_weights_kw": lambda: np.asarray(
            jnp.histogram(a, bins=2, weights=[1.0, 2.0, 3.0])[0]).tolist(),
        "sum_array": lambda: float(jnp.sum(jnp.asarray([1, 2, 3]))),
        "add_reduce": lambda: float(jnp.add.reduce(jnp.arange(4.0))),
        "array": accepted(lambda: jnp.array(lst)),
        "asarray": accepted(lambda: jnp.asarray((1, 2))),
        "concatenate": accepted(lambda: jnp.concatenate([a, a])),
        "stack": accepted(lambda: jnp.stack([a, a])),
        "hstack": accepted(lambda: jnp.hstack([a, a])),
        "vstack": accepted(lambda: jnp.vstack([a, a])),
        "block": accepted(lambda: jnp.block([a, a])),
        "full_shape": accepted(lambda: jnp.full([2], 1.0)),
        "zeros_shape": accepted(lambda: jnp.zeros([2, 1])),
        "reshape_shape": accepted(lambda: jnp.reshape(a, [3, 1])),
        "sum_axis": accepted(lambda: jnp.sum(jnp.ones((2, 3)), axis=[0, 1])),
    })
    return cases


# ----------------------------------------------------------------------------- pytrees


def _trees(jax):
    import collections

    tu = jax.tree_util
    return {
        "mixed_keys": lambda: tu.tree_leaves({1: 8, "y": 43}),
        "mixed_keys_with_path": lambda: len(tu.tree_flatten_with_path({1: 8, "y": 43})[0]),
        "mixed_keys_ordered": lambda: tu.tree_leaves(collections.OrderedDict({1: 8, "y": 43})),
        "mixed_keys_defaultdict": lambda: tu.tree_leaves(
            collections.defaultdict(int, {1: 8, "y": 43})),
        "same_type_keys": lambda: tu.tree_leaves({2: 8, 1: 43}),
    }


# ----------------------------------------------------------------------------- tracer reprs


def _tracers(jax):
    jnp = jax.numpy

    def shown(transform, *args):
        out = []

        def f(x):
            out.append(repr(x))
            out.append(str(x))
            return x * 2
        transform(f)(*args)
        return out

    return {
        "jit_int": lambda: shown(jax.jit, 1),
        "jit_float": lambda: shown(jax.jit, 1.0),
        "jit_array": lambda: shown(jax.jit, jnp.ones((2, 3))),
        "vmap": lambda: shown(jax.vmap, jnp.arange(3)),
        "vmap_matrix": lambda: shown(jax.vmap, jnp.ones((3, 2))),
        "grad": lambda: shown(lambda f: jax.grad(lambda x: f(x).sum()), jnp.ones(2)),
        "grad_scalar": lambda: shown(jax.grad, 1.0),
        "jvp": lambda: shown(lambda f: lambda x: jax.jvp(f, (x,), (x,)), 1.0),
        "jvp_array": lambda: shown(lambda f: lambda x: jax.jvp(f, (x,), (x,)), jnp.ones(2)),
        "jit_of_grad": lambda: shown(lambda f: jax.jit(jax.grad(f)), 1.0),
        "vmap_of_grad": lambda: shown(lambda f: jax.vmap(jax.grad(f)), jnp.ones(3)),
        "vjp": lambda: shown(lambda f: lambda x: jax.vjp(f, x), 1.0),
        "linearize": lambda: shown(lambda f: lambda x: jax.linearize(f, x), 1.0),
        "jit_of_jvp": lambda: shown(lambda f: jax.jit(lambda x: jax.jvp(f, (x,), (x,))), 1.0),
    }


# ----------------------------------------------------------------------------- vmap of cond


def _cond(jax):
    jnp, lax = jax.numpy, jax.lax

    def _raise(x):
        raise RuntimeError("the callback ran")

    def callback_cond(x):
        return lax.cond(x < 0, lambda v: jax.pure_callback(_raise, v, v), lambda v: v, x)

    def sqrt_cond(x):
        return lax.cond(x > 0, jnp.sqrt, lambda v: 0.0 * v, x)

    def branch(name):
        def run(v):
            jax.debug.print(name + " {}", v)
            return v + 1.0 if name == "a" else v - 1.0
        return run

    def printing(pred_batched):
        def run():
            xs = jnp.array([-1.0, 4.0])
            if pred_batched:
                f = jax.vmap(lambda v: lax.cond(v > 0, branch("a"), branch("b"), v))
            else:
                f = jax.vmap(lambda v: lax.cond(True, branch("a"), branch("b"), v))
            out = f(xs)
            jax.effects_barrier()
            return np.asarray(out).tolist()
        return lambda: printed(run)

    def io_cond():
        from_ = jax.experimental.io_callback
        return jax.vmap(lambda v: lax.cond(
            v > 0, lambda u: from_(lambda w: np.asarray(w), jax.ShapeDtypeStruct((), jnp.float32),
                                   u), lambda u: u, v))(jnp.array([-1.0, 4.0]))

    xs = jnp.array([-1.0, 4.0])
    return {
        "pure_callback_both_branches": lambda: typed(jax.vmap(callback_cond)(jnp.arange(4))),
        "sequential_callback": lambda: typed(jax.vmap(lambda v: lax.cond(
            v > 0, lambda u: jax.pure_callback(lambda w: np.asarray(w) * 10, u, u,
                                               vmap_method="sequential"),
            lambda u: u, v))(xs)),
        "io_callback": lambda: typed(io_cond()),
        "values": lambda: typed(jax.vmap(sqrt_cond)(xs)),
        "grad_of_vmap": lambda: typed(jax.grad(lambda v: jax.vmap(sqrt_cond)(v).sum())(xs)),
        "vmap_of_grad": lambda: typed(jax.vmap(jax.grad(sqrt_cond))(xs)),
        "jacfwd": lambda: typed(jax.jacfwd(jax.vmap(sqrt_cond))(xs)),
        "print_batched": printing(True),
        "print_unbatched": printing(False),
        "switch": lambda: typed(jax.vmap(lambda i, v: lax.switch(
            i, [lambda u: u + 1, lambda u: u * 2, lambda u: -u], v))(
                jnp.array([0, 1, 2, 5]), jnp.arange(4.0))),
        "switch_grad": lambda: typed(jax.grad(lambda v: jax.vmap(lambda i, u: lax.switch(
            i, [jnp.sqrt, jnp.log, lambda w: w * 3.0], u))(jnp.array([0, 1, 2]), v).sum())(
                jnp.array([4.0, 2.0, -1.0]))),
        "jit_vmap": lambda: typed(jax.jit(jax.vmap(sqrt_cond))(xs)),
    }


# ----------------------------------------------------------------------------- VJP object


def _vjp(jax):
    jnp = jax.numpy

    def shape_of(x):
        return "NotNeeded" if type(x).__name__ == "NotNeeded" else list(np.shape(x))

    def walk(tree):
        if isinstance(tree, (list, tuple)):
            return [walk(t) for t in tree]
        return shape_of(tree)

    def args_res(f, *args):
        _, f_vjp = jax.vjp(f, *args)
        return walk(f_vjp.args_res)

    return {
        "product": lambda: args_res(lambda x, w: x * w, jnp.ones(2), jnp.ones(2) * 2),
        "sin_times": lambda: args_res(lambda x, w: jnp.sin(x) * w["a"], 1.0,
                                      {"a": jnp.ones(2)}),
        "linear": lambda: args_res(lambda x, w: x + 2.0 * w, jnp.ones(2), jnp.ones(2)),
        "tanh_of_sum": lambda: args_res(lambda W, x: jnp.tanh(W + x), jnp.ones(2), jnp.ones(2)),
        "square": lambda: args_res(lambda x: x * x, jnp.ones(3)),
        "type": lambda: type(jax.vjp(jnp.sin, 1.0)[1].args_res).__name__,
        "opaque_type": lambda: type(jax.vjp(jnp.sin, 1.0)[1].opaque_residuals).__name__,
        "opaque_linear": lambda: len(jax.vjp(lambda x: 2.0 * x, jnp.ones(2))[1]
                                     .opaque_residuals),
    }


# ----------------------------------------------------------------------------- checkify


def _checkify(jax):
    jnp = jax.numpy
    checkify = jax.experimental.checkify

    def indexed(x, i):
        checkify.check(i >= 0, "index needs to be non-negative, got {i}", i=i)
        return x[i]

    def kinds(*args):
        seen = []

        def f(*a):
            seen.extend("tracer" if "Tracer" in type(v).__name__ else type(v).__name__
                        for v in a[1:])
            return a[0]
        checkify.checkify(f)(jnp.ones(3), *args)
        return seen

    def failing(x, i):
        checkify.check(i < 0, "i must be negative")
        return x * i

    return {
        "python_int_fmt_arg": lambda: checkify.checkify(indexed)(jnp.ones(3), 100)[1].tolist(),
        "array_fmt_arg": lambda: [checkify.checkify(indexed)(jnp.arange(3.0), jnp.int32(1))[0]
                                  .get(), float(checkify.checkify(indexed)(
                                      jnp.arange(3.0), jnp.int32(1))[1])],
        "python_scalars_untouched": lambda: kinds(1, 2.0, True),
        "python_pred_recorded": lambda: checkify.checkify(failing)(1.0, 3)[0].get(),
        "python_pred_jit": lambda: jax.jit(checkify.checkify(failing))(1.0, 3)[0].get(),
        "python_pred_passes": lambda: checkify.checkify(failing)(1.0, -3)[0].get(),
    }


# ----------------------------------------------------------------------------- residuals


def _residuals(jax):
    jnp = jax.numpy
    print_saved_residuals = jax.ad_checkpoint.print_saved_residuals
    checkpoint_name = jax.ad_checkpoint.checkpoint_name

    def g(W, x):
        return jnp.sin(jnp.dot(W, x))

    def f(W1, W2, W3, x):
        return g(W3, g(W2, g(W1, x)))

    def f_remat(W1, W2, W3, x):
        return jax.checkpoint(g)(W3, jax.checkpoint(g)(W2, jax.checkpoint(g)(W1, x)))

    def predict(params, x):
        *Ws, Wlast = params
        for i, W in enumerate(Ws):
            x = checkpoint_name(g(W, x), name=f"layer{i}_output")
        return jnp.dot(Wlast, x)

    def loss(params, x, y):
        return jnp.sum((predict(params, x) - y) ** 2)

    def lines(fn, *args):
        out = printed(lambda: print_saved_residuals(fn, *args))
        return [re.sub(r"from \S*leftovers_s34b_cases\.py", "from cases", s) for s in out]

    W1, W2, W3, x = jnp.ones((5, 4)), jnp.ones((6, 5)), jnp.ones((7, 6)), jnp.ones(4)
    params, v = [jnp.ones((4, 4))] * 3, jnp.ones(4)
    policies = jax.checkpoint_policies
    return {
        "plain": lambda: lines(f, W1, W2, W3, x),
        "remat_each": lambda: lines(f_remat, W1, W2, W3, x),
        "dots_saveable": lambda: lines(jax.checkpoint(
            f, policy=policies.dots_with_no_batch_dims_saveable), W1, W2, W3, x),
        "pytree_params": lambda: lines(loss, params, v, v),
        "names_but": lambda: lines(jax.checkpoint(
            loss, policy=policies.save_any_names_but_these("layer1_output")), params, v, v),
        "star_args": lambda: lines(lambda *a: jnp.sin(a[0] * a[1]).sum(), v, v),
        "dict_arg": lambda: lines(lambda d: jnp.sin(d["w"] * d["x"]).sum(), {"w": v, "x": v}),
    }


GROUPS = {"weak": _weak, "arraylike": _arraylike, "trees": _trees, "tracers": _tracers,
          "cond": _cond, "vjp": _vjp, "checkify": _checkify, "residuals": _residuals}


def record(jax, group: str) -> dict:
    return {name: summary(fn) for name, fn in GROUPS[group](jax).items()}
