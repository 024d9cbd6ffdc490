"""Cases shared by make_leftovers_s34_reference.py (run with jax) and tests/test_leftovers_s34.py
(numbax): each case takes the `jax` module (jax or numbax) and returns a JSON-able summary, so
both record the same thing. `summary` turns a result or an exception into that summary.

Groups: JAXPRS (str(make_jaxpr(f)(...)) layout), TREES (typed key arrays as pytree leaves),
KEY_OPS (numpy functions on key arrays: supported or which error class), DTYPES (histogram /
bincount / angle / convert_element_type result dtypes, run with and without x64) and ASARRAY
(jnp.asarray / jnp.array of traced values)."""
import numpy as np


def summary(fn):
    """A case's JSON summary: its value, or {"error": the builtin class JAX's error is}."""
    try:
        return fn()
    except (TypeError, ValueError, IndexError) as e:
        for cls in (TypeError, ValueError, IndexError):
            if isinstance(e, cls):
                return {"error": cls.__name__}
        raise


def arr(jax, x):
    """dtype, weak type, shape, values and whether x is an Array (not a numpy value)."""
    return {"dtype": str(x.dtype), "weak_type": bool(getattr(x, "weak_type", False)),
            "shape": list(np.shape(x)), "is_array": isinstance(x, jax.Array),
            "value": np.asarray(x).astype(np.complex128 if np.iscomplexobj(x) else np.float64)
            .real.ravel().tolist()}


# ----------------------------------------------------------------------------- jaxprs


def _jaxprs(jax):
    jnp, lax = jax.numpy, jax.lax
    f32 = np.float32

    def elementwise(x):
        return jnp.sin(x) * 2.0 + x

    def many_inputs(a, b, c, d, e, f, g):
        return a * b + c - d * e + f / g

    def reductions(x):
        return jnp.max(x, axis=0), jnp.min(x, axis=1), jnp.argmax(x, axis=0)

    def cond(x):
        return lax.cond(x.max() > 0, lambda v: v + 1.0, lambda v: jnp.cos(v) - 1.0, x)

    def scan(x):
        def body(c, v):
            return c + v, c * v
        return lax.scan(body, np.float32(0), x)

    def long_scan(x):  # a body of more than 10 equations is printed first, as `let jaxpr =`
        def body(c, v):
            for _ in range(6):
                c = jnp.sin(c) * v
            return c, c
        return lax.scan(body, np.float32(0), x)

    def cond_in_scan(x):
        def body(c, v):
            c = lax.cond(v > 0, lambda a, b: a * b, lambda a, b: a - b, c, v)
            return c, c
        return lax.scan(body, np.float32(0), x)

    x3 = np.arange(3, dtype=f32)
    x23 = np.ones((2, 3), f32)
    big = np.ones((4, 5, 6), f32)
    return {
        "elementwise": lambda: str(jax.make_jaxpr(elementwise)(x3)),
        "many_inputs": lambda: str(jax.make_jaxpr(many_inputs)(*[big] * 7)),
        "reductions": lambda: str(jax.make_jaxpr(reductions)(x23)),
        "cond": lambda: str(jax.make_jaxpr(cond)(x3)),
        "scan": lambda: str(jax.make_jaxpr(scan)(x3)),
        "long_scan": lambda: str(jax.make_jaxpr(long_scan)(x3)),
        "cond_in_scan": lambda: str(jax.make_jaxpr(cond_in_scan)(x3)),
    }


# ----------------------------------------------------------------------------- key pytrees


def _leaf(jax, x):
    kind = "key" if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key) else str(x.dtype)
    return [kind, list(x.shape)]


def _trees(jax):
    tu = jax.tree_util
    k = jax.random.key(0)
    ks = jax.random.split(k, 3)
    tree = {"a": k, "b": [ks, np.float32(1.0)], "c": (ks[0], None)}
    return {
        "leaves_key": lambda: [_leaf(jax, x) for x in tu.tree_leaves(k)],
        "leaves_split": lambda: [_leaf(jax, x) for x in tu.tree_leaves(ks)],
        "leaves_tree": lambda: [_leaf(jax, x) for x in tu.tree_leaves(tree)],
        "structure_key": lambda: str(tu.tree_structure(k)),
        "structure_tree": lambda: str(tu.tree_structure(tree)),
        "flatten_split": lambda: [len(tu.tree_flatten(ks)[0]), str(tu.tree_flatten(ks)[1])],
        "map_shapes": lambda: tu.tree_map(lambda x: list(x.shape), {"a": k, "b": [ks]}),
        "map_split": lambda: [_leaf(jax, x) for x in tu.tree_leaves(
            tu.tree_map(lambda key: jax.random.split(key, 2), [k, ks[1]]))],
        "unflatten": lambda: tu.tree_unflatten(tu.tree_structure([k, (ks,)]), [1, 2]),
        "paths": lambda: [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(tree)],
        "tree_leaves_alias": lambda: len(jax.tree.leaves([k, ks])),
        "tree_structure_alias": lambda: str(jax.tree.structure({"k": ks})),
        "reduce_count": lambda: tu.tree_reduce(lambda n, _: n + 1, [k, ks, k], 0),
        "all_leaves": lambda: tu.all_leaves([k, ks]),
        "jit_tree": lambda: [_leaf(jax, x) for x in tu.tree_leaves(
            jax.jit(lambda t: t)({"k": ks}))],
    }


# ----------------------------------------------------------------------------- keys in jnp


def _key_ops(jax):
    jnp = jax.numpy
    ks = jax.random.split(jax.random.key(0), 3)
    k = ks[0]
    mask = jnp.array([True, False, True])

    def data(x):
        return np.asarray(jax.random.key_data(x)).tolist()

    cases = {
        "sort": lambda: data(jnp.sort(ks)),
        "sort_axis_none": lambda: data(jnp.sort(ks, axis=None)),
        "argsort": lambda: jnp.argsort(ks).tolist(),
        "lexsort": lambda: jnp.lexsort([ks]).tolist(),
        "sort_complex": lambda: data(jnp.sort_complex(ks)),
        "partition": lambda: data(jnp.partition(ks, 1)),
        "argpartition": lambda: jnp.argpartition(ks, 1).tolist(),
        "unique": lambda: data(jnp.unique(ks)),
        "unique_values": lambda: data(jnp.unique_values(ks)),
        "unique_counts": lambda: data(jnp.unique_counts(ks)[0]),
        "union1d": lambda: data(jnp.union1d(ks, ks)),
        "intersect1d": lambda: data(jnp.intersect1d(ks, ks)),
        "setdiff1d": lambda: data(jnp.setdiff1d(ks, ks)),
        "nonzero": lambda: [a.tolist() for a in jnp.nonzero(ks)],
        "isin": lambda: jnp.isin(ks, ks[:2]).tolist(),
        "isin_invert": lambda: jnp.isin(ks, ks[:1], invert=True).tolist(),
        "isin_scalar": lambda: bool(jnp.isin(k, ks)),
        "concatenate": lambda: data(jnp.concatenate([ks, ks[:1]])),
        "concatenate_mixed": lambda: data(jnp.concatenate([ks, jnp.zeros(3, jnp.uint32)])),
        "stack": lambda: data(jnp.stack([k, ks[2]])),
        "where": lambda: data(jnp.where(mask, ks, jnp.flip(ks))),
        "where_scalar": lambda: data(jnp.where(False, k, ks[1])),
        "take": lambda: data(jnp.take(ks, jnp.array([2, 0]))),
        "take_along_axis": lambda: data(jnp.take_along_axis(ks, jnp.array([1]), axis=0)),
        "searchsorted": lambda: jnp.searchsorted(ks, k).tolist(),
        "max": lambda: data(jnp.max(ks)),
    }
    for mode in ("constant", "edge", "reflect", "symmetric", "wrap", "empty", "maximum",
                 "mean", "median", "minimum", "linear_ramp"):
        cases[f"pad_{mode}"] = lambda mode=mode: data(jnp.pad(ks, (1, 2), mode=mode))
    return cases


# ----------------------------------------------------------------------------- dtypes


def _dtypes(jax):
    jnp, lax = jax.numpy, jax.lax
    x = jnp.array([0.5, 1.5, 2.5, 1.0], jnp.float32)
    xi = jnp.array([0, 1, 2, 1], jnp.int32)
    w = jnp.array([1.0, 2.0, 3.0, 4.0], jnp.float32)
    wi = jnp.array([1, 2, 3, 4], jnp.int32)
    pts = jnp.stack([x, x[::-1]], 1)

    def many(*xs):
        return [arr(jax, v) for v in xs]

    cases = {
        "histogram": lambda: many(*jnp.histogram(x, bins=3)),
        "histogram_int": lambda: many(*jnp.histogram(xi, bins=3)),
        "histogram_weights": lambda: many(*jnp.histogram(x, bins=3, weights=w)),
        "histogram_int_weights": lambda: many(*jnp.histogram(x, bins=3, weights=wi)),
        "histogram_density": lambda: many(*jnp.histogram(x, bins=3, density=True)),
        "histogram_edges": lambda: many(*jnp.histogram(x, bins=jnp.array([0.0, 1.0, 3.0]))),
        "histogram2d": lambda: many(*jnp.histogram2d(x, x[::-1], bins=3)),
        "histogram2d_weights": lambda: many(*jnp.histogram2d(x, x, bins=2, weights=w)),
        "histogram2d_int_weights": lambda: many(*jnp.histogram2d(x, x, bins=2, weights=wi)),
        "histogram2d_density": lambda: many(*jnp.histogram2d(x, x, bins=2, density=True)),
        "histogramdd": lambda: many(*jnp.histogramdd(pts, bins=2)[:1]),
        "histogramdd_weights": lambda: many(*jnp.histogramdd(pts, bins=2, weights=w)[:1]),
        "histogramdd_int_weights": lambda: many(*jnp.histogramdd(pts, bins=2, weights=wi)[:1]),
        "histogramdd_density": lambda: many(*jnp.histogramdd(pts, bins=2, density=True)[:1]),
        "histogram_bin_edges_int": lambda: many(jnp.histogram_bin_edges(xi, bins=3)),
        "bincount": lambda: many(jnp.bincount(xi)),
        "bincount_length": lambda: many(jnp.bincount(xi, length=5)),
        "bincount_uint8": lambda: many(jnp.bincount(xi.astype(jnp.uint8))),
        "bincount_weights": lambda: many(jnp.bincount(xi, weights=w)),
        "bincount_int_weights": lambda: many(jnp.bincount(xi, weights=wi)),
        "bincount_float16_weights": lambda: many(jnp.bincount(xi, weights=w.astype(jnp.float16))),
        "bincount_bool_weights": lambda: many(jnp.bincount(xi, weights=xi > 0)),
    }
    for name, z in (("float", 1.0), ("negative", -2.0), ("int", 1), ("bool", True),
                    ("complex", 1 + 1j), ("np_float32", np.float32(-1.0)),
                    ("np_int8", np.int8(1)), ("array", x), ("int_array", xi),
                    ("complex_array", x.astype(jnp.complex64) * 1j),
                    ("float16_array", x.astype(jnp.float16))):
        cases[f"angle_{name}"] = lambda z=z: many(jnp.angle(z))
        cases[f"angle_deg_{name}"] = lambda z=z: many(jnp.angle(z, deg=True))
    conversions = {
        "float_to_int": (1.7, jnp.int32), "int_to_float": (1, jnp.float32),
        "bool_to_int": (True, jnp.int32), "complex_to_float": (1 + 2j, jnp.float32),
        "np_complex_to_float": (np.complex64(1 + 2j), jnp.float32),
        "np_scalar": (np.float32(2.5), jnp.int32), "np_scalar_same": (np.float32(2.5), jnp.float32),
        "np_array": (np.ones(2), jnp.int32), "array": (x, jnp.int32),
        "array_same": (x, jnp.float32),
        "float_python_type": (1, float), "int_python_type": (1.5, int),
        "weak_array": (jnp.asarray(1.0), jnp.float32)}
    for name, (v, dt) in conversions.items():
        cases[f"convert_{name}"] = lambda v=v, dt=dt: many(lax.convert_element_type(v, dt))
    cases["convert_in_jit"] = lambda: many(jax.jit(
        lambda a: lax.convert_element_type(a, jnp.int32))(1.5))
    return cases


# ----------------------------------------------------------------------------- asarray


def _asarray(jax):
    jnp = jax.numpy
    x = np.float32(1.5)
    v = np.arange(3.0, dtype=np.float32)
    i = np.int32(2)

    def traced(f, *args):
        """(out dtype, weak type, shape, returned the argument tracer itself, has a copy eqn)."""
        same = []

        def g(*a):
            r = f(*a)
            same.append(r is a[0])
            return r
        jp = jax.make_jaxpr(g)(*args)
        aval = jp.out_avals[0]
        value = np.asarray(jax.jit(f)(*args)).astype(np.float64).ravel().tolist()
        return [str(aval.dtype), bool(aval.weak_type), list(aval.shape), same[0],
                any(e.primitive.name == "copy" for e in jp.jaxpr.eqns), value]

    return {
        "asarray": lambda: traced(lambda a: jnp.asarray(a), x),
        "asarray_vector": lambda: traced(lambda a: jnp.asarray(a), v),
        "array": lambda: traced(lambda a: jnp.array(a), v),
        "array_copy_false": lambda: traced(lambda a: jnp.array(a, copy=False), v),
        "asarray_copy_true": lambda: traced(lambda a: jnp.asarray(a, copy=True), v),
        "asarray_dtype": lambda: traced(lambda a: jnp.asarray(a, dtype=jnp.int32), v),
        "asarray_same_dtype": lambda: traced(lambda a: jnp.asarray(a, dtype=jnp.float32), v),
        "array_dtype": lambda: traced(lambda a: jnp.array(a, dtype=jnp.float16), v),
        "list": lambda: traced(lambda a: jnp.asarray([a, a]), x),
        "list_python": lambda: traced(lambda a: jnp.asarray([a, 1.0, 2]), x),
        "list_int_tracer_float": lambda: traced(lambda a: jnp.asarray([a, 1.0]), i),
        "tuple": lambda: traced(lambda a: jnp.array((a, a)), x),
        "nested": lambda: traced(lambda a: jnp.array([[a, 0.0], [1.0, a]]), x),
        "list_dtype": lambda: traced(lambda a: jnp.array([a, a], dtype=jnp.int32), x),
        "list_vectors": lambda: traced(lambda a: jnp.array([a, a]), v),
        "ndmin": lambda: traced(lambda a: jnp.array(a, ndmin=2), v),
        "weak_product": lambda: traced(lambda a: jnp.asarray(a * 2), x),
        "list_none": lambda: traced(lambda a: jnp.asarray([a, None]), x),
        "grad": lambda: float(jax.grad(lambda a: jnp.asarray([a, a]).sum())(1.0)),
        "vmap": lambda: list(jax.vmap(lambda a: jnp.asarray([a, 1.0]))(v).shape),
    }


GROUPS = {"jaxprs": _jaxprs, "trees": _trees, "key_ops": _key_ops, "dtypes": _dtypes,
          "asarray": _asarray}
# groups recorded twice, with jax_enable_x64 False and True (numbax's default is True)
BOTH_X64 = ("dtypes", "asarray")


def record(jax, group: str) -> dict:
    return {name: summary(fn) for name, fn in GROUPS[group](jax).items()}
