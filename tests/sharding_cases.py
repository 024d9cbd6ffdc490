"""Sharding cases written once against a JAX-like module `jx` (jax or numbax): the recorder
(tests/data/make_sharding_reference.py) runs them on JAX 0.10.2 with 8 CPU devices and stores
what they return; tests/test_sharding*.py run them on numbax and compare. Each case returns
JSON-able data (strings, nested lists of numbers)."""
import contextlib
import io
from functools import partial

import numpy as np

CASES: dict = {}


def case(group: str):
    def register(fn):
        CASES[f"{group}/{fn.__name__}"] = fn
        return fn

    return register


def _auto(jx, shape, names):
    A = jx.sharding.AxisType.Auto
    return jx.make_mesh(shape, names, axis_types=(A,) * len(shape))


def _index(idx):
    return [[s.start, s.stop] for s in idx]


def _printed(fn, *args, **kwargs):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        fn(*args, **kwargs)
    return out.getvalue()


def _shards(x):
    return [[s.device.id, _index(s.index), s.replica_id] for s in x.addressable_shards]


def _spec(x):
    return repr(x.sharding.spec)


# ----------------------------------------------------------------------------- metadata


@case("meta")
def reprs(jx):
    P, AT = jx.sharding.PartitionSpec, jx.sharding.AxisType
    m = jx.sharding.Mesh(np.array(jx.devices()).reshape(2, 4), ("x", "y"))
    e = jx.make_mesh((2, 4), ("X", "Y"))
    mixed = jx.make_mesh((4, 2), ("a", "b"), axis_types=(AT.Explicit, AT.Auto))
    am = jx.sharding.AbstractMesh((2, 4), ("a", "b"))
    return [repr(m), str(m), repr(e), repr(mixed), repr(am), repr(m.abstract_mesh),
            repr(P()), repr(P("x")), repr(P("x", None)), repr(P(("x", "y"), None)),
            repr(P(None, "y")), str(P(("x",))), repr(AT.Auto), str(AT.Explicit),
            repr(jx.NamedSharding(m, P("x", "y"))), repr(jx.NamedSharding(e, P(None, "Y"))),
            repr(jx.sharding.SingleDeviceSharding(jx.devices()[3])),
            repr(jx.sharding.get_abstract_mesh()), repr(jx.sharding.get_mesh()),
            [list(m.axis_names), list(m.axis_sizes), m.size, list(m.shape.items()),
             m.devices.shape, [d.id for d in m.devices.flat], m.device_ids.tolist()],
            [P("x") == P("x"), P(("x",)) == P("x"), P("x") == P("x", None), len(P("x", None)),
             list(P("x", None))]]


@case("meta")
def blocks(jx):
    P = jx.sharding.PartitionSpec
    m = _auto(jx, (2, 4), ("x", "y"))
    out = []
    for spec, shape in [(P("x", "y"), (4, 8)), (P("y", "x"), (8, 4)), (P(None, "y"), (4, 8)),
                        (P("x"), (4, 3)), (P(("x", "y")), (16,)), (P(("y", "x")), (16,)),
                        (P(), (3, 5)), (P(None, ("y", "x")), (2, 16))]:
        s = jx.NamedSharding(m, spec)
        out.append([repr(spec), list(s.shard_shape(shape)), s.is_fully_replicated,
                    {str(d.id): _index(i) for d, i in s.devices_indices_map(shape).items()},
                    _shards(jx.device_put(np.zeros(shape), s)), s.num_devices,
                    sorted(d.id for d in s.device_set), s.is_fully_addressable])
    return out


@case("meta")
def errors(jx):
    P = jx.sharding.PartitionSpec
    m = _auto(jx, (2, 4), ("x", "y"))
    out = []
    for make in [lambda: jx.sharding.Mesh(jx.devices(), ("x", "y")),
                 lambda: jx.NamedSharding(m, P("z")),
                 lambda: jx.NamedSharding(m, P("x", "x")),
                 lambda: jx.NamedSharding(m, P("x")).shard_shape((5,)),
                 lambda: jx.device_put(np.ones(5), jx.NamedSharding(m, P("x"))),
                 lambda: jx.device_put(np.ones(4), jx.NamedSharding(m, P("x", None)))]:
        try:
            make()
            out.append(None)
        except Exception as e:  # noqa: BLE001
            out.append([type(e).__name__, str(e)])
    return out


def _vis_cases(jx):
    P = jx.sharding.PartitionSpec
    m1 = _auto(jx, (8,), ("x",))
    m2 = _auto(jx, (4, 2), ("a", "b"))
    m3 = _auto(jx, (2, 4), ("x", "y"))
    return [((32,), jx.NamedSharding(m1, P("x"))), ((32,), jx.NamedSharding(m1, P())),
            ((64, 8), jx.NamedSharding(m1, P("x"))),
            ((8, 64), jx.NamedSharding(m1, P(None, "x"))),
            ((8, 8), jx.NamedSharding(m2, P("a", "b"))),
            ((8, 8), jx.NamedSharding(m2, P("b", "a"))),
            ((8, 8), jx.NamedSharding(m2, P(None, "a"))),
            ((8, 8), jx.NamedSharding(m2, P(("a", "b"), None))),
            ((3, 100), jx.NamedSharding(m2, P(None, "a"))),
            ((4, 8), jx.NamedSharding(m3, P("x", "y"))), ((8,), jx.NamedSharding(m3, P("y"))),
            ((4, 8), jx.NamedSharding(m3, P("x"))), ((4, 8), jx.NamedSharding(m3, P())),
            ((4, 8), jx.sharding.SingleDeviceSharding(jx.devices()[0])),
            ((6, 3), jx.NamedSharding(m3, P(None, None))),
            ((96, 2), jx.NamedSharding(m3, P(("x", "y"))))]


@case("meta")
def visualize(jx):
    out = [_printed(jx.debug.visualize_sharding, shape, s) for shape, s in _vis_cases(jx)]
    x = jx.device_put(np.arange(32.0).reshape(4, 8),
                      jx.NamedSharding(_auto(jx, (2, 4), ("x", "y")), jx.P("x", "y")))
    out.append(_printed(jx.debug.visualize_array_sharding, x))
    out.append(_printed(jx.debug.visualize_array_sharding, jx.numpy.arange(32.0).reshape(4, 8)))
    out.append(_printed(jx.debug.visualize_sharding, (4, 8), x.sharding, max_width=30))
    out.append(_printed(jx.debug.visualize_sharding, (4, 8), x.sharding, scale=2.0,
                        min_width=12))
    seen = []
    jx.debug.inspect_array_sharding(x, callback=lambda s: seen.append(repr(s)))
    out.append(seen)
    return out


# ----------------------------------------------------------------------------- explicit mode


@case("explicit")
def types(jx):
    P = jx.sharding.PartitionSpec
    jnp = jx.numpy
    mesh = jx.make_mesh((2, 2), ("X", "Y"))
    out = []
    with jx.sharding.set_mesh(mesh):
        out.append(repr(jx.sharding.get_abstract_mesh()))
        a = jx.reshard(np.arange(8).reshape(4, 2), P("X", None))
        arg0 = jx.reshard(np.arange(4).reshape(4, 1), P("X", None))
        arg1 = jx.reshard(np.arange(8).reshape(1, 8), P(None, "Y"))
        sx = jx.reshard(np.arange(16).reshape(4, 4), P("X", None))
        sy = jx.reshard(np.arange(16).reshape(4, 4), P(None, "X"))
        types = [jx.typeof(np.arange(8)), jx.typeof(a), jx.typeof(arg0 + arg1),
                 jx.typeof(jnp.sin(sx)), jx.typeof(sx.T), jx.typeof(sx.sum(0)),
                 jx.typeof(sx.sum(1)), jx.typeof(sx @ sy.T), jx.typeof(sx * 2),
                 jx.typeof(jnp.zeros((4, 4))), jx.typeof(sx.reshape(2, 2, 4)),
                 jx.typeof(sx.reshape(4, 2, 2)), jx.typeof(sx.astype(np.float32)),
                 jx.typeof(jnp.exp(sy)[None]), jx.typeof(jnp.where(sx > 3, sx, 0))]
        out.append([_short(t) for t in types])
        out.append([repr(a.sharding), repr(jx.typeof(a).sharding.spec),
                    repr((arg0 + arg1).sharding.spec), np.asarray(arg0 + arg1).tolist()])
        seen = []

        @jx.jit
        def add_arrays(x, y):
            ans = x + y
            seen.append([_short(jx.typeof(v)) for v in (x, y, ans, ans.sum(0), x.T)])
            return ans

        r = add_arrays(arg0, arg1)
        out.append([seen, repr(r.sharding.spec), np.asarray(r).tolist()])
        errs = []
        for f in [lambda: sx + sy, lambda: sx @ sy, lambda: sx @ sx,
                  lambda: jx.lax.with_sharding_constraint(sx, jx.NamedSharding(mesh, P("X")))]:
            try:
                f()
                errs.append(None)
            except Exception as e:  # noqa: BLE001
                errs.append([type(e).__name__, str(e).split("\n")[0]])
        out.append(errs)
        sm = jx.shard_map(lambda b: b * 2, mesh=mesh, in_specs=P("X"), out_specs=P("X"))
        try:
            sm(np.arange(4.0))
            out.append(None)
        except Exception as e:  # noqa: BLE001
            out.append([type(e).__name__, str(e).split(".")[0]])
        r = sm(jx.reshard(np.arange(4.0), P("X")))
        out.append([np.asarray(r).tolist(), repr(r.sharding.spec), _short(jx.typeof(r))])
    out.append(repr(jx.sharding.get_abstract_mesh()))
    return out


@case("explicit")
def switch_axes(jx):
    """auto_axes and explicit_axes (JAX's explicit-sharding notebook)."""
    P = jx.sharding.PartitionSpec
    jnp = jx.numpy
    seen = []

    def add(x, y):
        seen.append([repr(jx.sharding.get_abstract_mesh()), _short(jx.typeof(x))])
        return x + y

    with jx.sharding.set_mesh(jx.make_mesh((2, 2), ("X", "Y"))):
        sx = jx.reshard(np.arange(16).reshape(4, 4), P("X", None))
        sy = jx.reshard(np.arange(16).reshape(4, 4), P(None, "X"))
        r1 = jx.sharding.auto_axes(add, out_sharding=P("X", None))(sx, sy)
        r2 = jx.sharding.auto_axes(add)(sx, sy, out_sharding=P("X", None))
        g = jx.sharding.auto_axes(lambda y: y * 2, axes="X", out_sharding=P("X", "Y"))
        r3 = jx.jit(lambda v: g(jnp.sin(v)))(sx.astype(np.float32))
    with jx.sharding.set_mesh(_auto(jx, (2, 2), ("X", "Y"))):
        x = jx.device_put(np.arange(16).reshape(4, 4), P("X", "Y"))

        def eg(y):
            seen.append([repr(jx.sharding.get_abstract_mesh()), _short(jx.typeof(y))])
            return y * 2

        r4 = jx.sharding.explicit_axes(eg, axes=("X", "Y"), in_sharding=P("X", "Y"))(x)
    return [seen, [_short(jx.typeof(r)) for r in (r1, r2, r3, r4)],
            [repr(r.sharding.spec) for r in (r1, r2, r3, r4)], np.asarray(r1).tolist(),
            np.asarray(r3).tolist(), np.asarray(r4).tolist()]


def _short(t):
    try:
        return t.str_short(short_dtypes=True)
    except TypeError:
        return t.str_short()


# ----------------------------------------------------------------------------- the tutorial


@case("tutorial")
def parallel_programming(jx):
    """JAX's "Introduction to parallel programming" on a 2x2 (and 4) device mesh, Auto axes."""
    P = jx.sharding.PartitionSpec
    jnp = jx.numpy
    out = []
    arr = jnp.arange(32.0).reshape(4, 8)
    out.append([sorted(d.id for d in arr.devices()), repr(arr.sharding)])
    mesh = _auto(jx, (2, 2), ("x", "y"))
    sharding = jx.NamedSharding(mesh, P("x", "y"))
    arr_sharded = jx.device_put(arr, sharding)
    out.append([str(sharding), np.asarray(arr_sharded).tolist(),
                _printed(jx.debug.visualize_array_sharding, arr_sharded)])

    @jx.jit
    def f_elementwise(x):
        return 2 * jnp.sin(x) + 1

    result = f_elementwise(arr_sharded)
    out.append([result.sharding == arr_sharded.sharding, np.asarray(result).tolist()])

    @jx.jit
    def f_contract(x):
        return x.sum(axis=0)

    result = f_contract(arr_sharded)
    out.append([_printed(jx.debug.visualize_array_sharding, result), np.asarray(result).tolist(),
                _spec(result)])

    @jx.jit
    def f_contract_2(x):
        out = x.sum(axis=0)
        return jx.lax.with_sharding_constraint(out, jx.NamedSharding(mesh, P("x")))

    result = f_contract_2(arr_sharded)
    out.append([_printed(jx.debug.visualize_array_sharding, result), np.asarray(result).tolist(),
                _spec(result)])
    mesh1 = _auto(jx, (4,), ("x",))
    shard_map = jx.experimental.shard_map.shard_map
    f_sharded = shard_map(f_elementwise, mesh=mesh1, in_specs=P("x"), out_specs=P("x"))
    x = jnp.arange(32)
    r = f_sharded(x)
    out.append([np.asarray(r).tolist(), _spec(r), str(r.dtype)])
    shapes = []

    def f(x):
        shapes.append(list(x.shape))
        return x * 2

    r = shard_map(f, mesh=mesh1, in_specs=P("x"), out_specs=P("x"))(x)
    out.append([shapes, np.asarray(r).tolist()])
    r = shard_map(lambda x: jnp.sum(x, keepdims=True), mesh=mesh1, in_specs=P("x"),
                  out_specs=P("x"))(x)
    out.append(np.asarray(r).tolist())
    r = shard_map(lambda x: jx.lax.psum(x.sum(), "x"), mesh=mesh1, in_specs=P("x"),
                  out_specs=P())(x)
    out.append([np.asarray(r).tolist(), _spec(r)])

    @jx.jit
    def layer(x, weights, bias):
        return jx.nn.sigmoid(x @ weights + bias)

    rng = np.random.default_rng(0)
    x = rng.normal(size=(32,)).astype(np.float32)
    weights = rng.normal(size=(32, 4)).astype(np.float32)
    bias = rng.normal(size=(4,)).astype(np.float32)
    out.append(np.asarray(layer(x, weights, bias)).tolist())
    sharding1 = jx.NamedSharding(mesh1, P("x"))
    r = layer(jx.device_put(x, sharding1), jx.device_put(weights, sharding1), bias)
    out.append([np.asarray(r).tolist(), r.sharding.is_fully_replicated])

    @jx.jit
    def layer_auto(x, weights, bias):
        x = jx.lax.with_sharding_constraint(x, sharding1)
        weights = jx.lax.with_sharding_constraint(weights, sharding1)
        return layer(x, weights, bias)

    out.append(np.asarray(layer_auto(x, weights, bias)).tolist())

    @jx.jit
    @partial(shard_map, mesh=mesh1, in_specs=(P("x"), P("x", None), P(None)),
             out_specs=P(None))
    def layer_sharded(x, weights, bias):
        return jx.nn.sigmoid(jx.lax.psum(x @ weights, "x") + bias)

    r = layer_sharded(x, weights, bias)
    out.append([np.asarray(r).tolist(), _spec(r)])
    return out


@case("tutorial")
def jit_shardings(jx):
    """jit(in_shardings=, out_shardings=) and resharding on 1-d and 2-d meshes."""
    P = jx.sharding.PartitionSpec
    jnp = jx.numpy
    mesh = _auto(jx, (2, 2), ("x", "y"))
    x = np.arange(32.0).reshape(8, 4)
    out = []
    f = jx.jit(lambda a: jnp.tanh(a) * 3, in_shardings=jx.NamedSharding(mesh, P("x", "y")),
               out_shardings=jx.NamedSharding(mesh, P(None, "y")))
    r = f(x)
    out.append([np.asarray(r).tolist(), _spec(r), _shards(r)])
    g = jx.jit(lambda a, b: (a @ b, (a * 2).sum(1)),
               in_shardings=(jx.NamedSharding(mesh, P("x")), jx.NamedSharding(mesh, P())),
               out_shardings=jx.NamedSharding(mesh, P("x")))
    r1, r2 = g(x, x.T)
    out.append([np.asarray(r1).tolist(), np.asarray(r2).tolist(), _spec(r1), _spec(r2)])
    with jx.sharding.set_mesh(mesh):
        h = jx.jit(lambda a: a - a.mean(0), in_shardings=P("x"), out_shardings=P("x", "y"))
        r = h(x)
        out.append([np.asarray(r).tolist(), _spec(r)])
    y = jx.device_put(x, jx.NamedSharding(mesh, P("x", "y")))
    for spec in (P("y", "x"), P(), P(("x", "y"))):
        z = jx.device_put(y, jx.NamedSharding(mesh, spec))
        out.append([np.asarray(z).tolist(), _shards(z)])
    z = jx.jit(lambda a: a + 1, out_shardings=jx.NamedSharding(mesh, P("y")))(y)
    out.append([_spec(z), _shards(z)])
    return out


@case("tutorial")
def make_arrays(jx):
    P = jx.sharding.PartitionSpec
    mesh = _auto(jx, (2, 2), ("x", "y"))
    s = jx.NamedSharding(mesh, P("x"))
    data = np.arange(24.0).reshape(4, 6)
    seen = []

    def cb(index):
        seen.append(_index(index))
        return data[index]

    a = jx.make_array_from_callback(data.shape, s, cb)
    index_map = s.addressable_devices_indices_map(data.shape)
    b = jx.make_array_from_single_device_arrays(data.shape, s, [
        jx.device_put(data[i], d) for d, i in index_map.items()])
    c = jx.make_array_from_process_local_data(s, data)
    return [sorted(seen), np.asarray(a).tolist(), _spec(a), np.asarray(b).tolist(),
            np.asarray(c).tolist(), _shards(c)]


# ----------------------------------------------------------------------------- shard_map


def _collective_programs(jx):
    lax = jx.lax
    jnp = jx.numpy
    P = jx.sharding.PartitionSpec
    n = 4
    perm = [(i, (i + 1) % n) for i in range(n)]
    progs = {
        "psum": (lambda b: lax.psum(b, "i"), P()),
        "pmean": (lambda b: lax.pmean(b * b, "i"), P()),
        "pmax": (lambda b: lax.pmax(jnp.sin(b), "i"), P()),
        "pmin": (lambda b: lax.pmin(jnp.cos(b), "i"), P()),
        "all_gather": (lambda b: lax.all_gather(b * b, "i"), P()),
        "all_gather_tiled": (lambda b: lax.all_gather(jnp.sin(b), "i", tiled=True), P()),
        "all_gather_axis1": (lambda b: lax.all_gather(b, "i", axis=1), P()),
        "psum_scatter": (lambda b: lax.psum_scatter(b * b, "i", scatter_dimension=1,
                                                    tiled=True), P("i")),
        "psum_scatter_untiled": (lambda b: lax.psum_scatter(
            jnp.broadcast_to(b[:1], (n, 1, 4)) * b[0], "i")[None], P("i")),
        "all_to_all": (lambda b: lax.all_to_all(b * b, "i", 1, 1, tiled=True), P("i")),
        "ppermute": (lambda b: lax.ppermute(jnp.sin(b), "i", perm) * b, P("i")),
        "axis_index": (lambda b: b * (lax.axis_index("i") + 1), P("i")),
        "axis_size": (lambda b: b * lax.axis_size("i"), P("i")),
        "pbroadcast": (lambda b: lax.pbroadcast(b * b, "i", 2), P("i")),
        "pcast": (lambda b: lax.pcast(b, "i", to="varying") * b, P("i")),
    }
    return progs, n


@case("shard_map")
def collectives(jx):
    """Every collective in shard_map over a 1-d mesh of 4: values, under jit, and the gradient
    of a scalar loss through it (check_vma on and off)."""
    P = jx.sharding.PartitionSpec
    jnp = jx.numpy
    progs, n = _collective_programs(jx)
    mesh = _auto(jx, (n,), ("i",))
    x = (np.arange(n * 2 * 4, dtype=np.float32).reshape(n * 2, 4) - 10) / 7
    out = {}
    for name, (body, out_spec) in progs.items():
        row = []
        for check in (True, False):
            f = jx.shard_map(body, mesh=mesh, in_specs=P("i"), out_specs=out_spec,
                             check_vma=check)
            try:
                value = np.asarray(f(x)).tolist()
                jitted = np.asarray(jx.jit(f)(x)).tolist()
                grad = np.asarray(jx.grad(lambda v, f=f: jnp.sum(jnp.sin(f(v))))(x)).tolist()
                jgrad = np.asarray(jx.jit(jx.grad(lambda v, f=f: jnp.sum(f(v) ** 2)))(x)).tolist()
                row.append([value, jitted, grad, jgrad])
            except Exception as e:  # noqa: BLE001
                row.append([type(e).__name__, str(e).split("\n")[0]])
        out[name] = row
    return out


@case("shard_map")
def mesh_2d(jx):
    """Collectives over one axis, both axes, and replicated inputs on a 2x2 mesh."""
    P = jx.sharding.PartitionSpec
    jnp = jx.numpy
    lax = jx.lax
    mesh = _auto(jx, (2, 2), ("x", "y"))
    a = np.arange(16.0).reshape(4, 4) / 3
    b = np.arange(16.0).reshape(4, 4)[::-1] / 5

    def matmul(ab, bb):
        return lax.psum(jnp.dot(ab, bb), "y")

    f = jx.shard_map(matmul, mesh=mesh, in_specs=(P("x", "y"), P("y", None)),
                     out_specs=P("x", None))
    g = jx.shard_map(lambda v: (lax.psum(v, ("x", "y")), lax.axis_index(("x", "y")) + 0 * v,
                                lax.all_gather(v, "x", tiled=True), lax.pmax(v, "y")),
                     mesh=mesh, in_specs=P("x", "y"), out_specs=(P(), P("x", "y"), P("x", "y"),
                                                                 P("x")))
    h = jx.shard_map(lambda w, v: lax.psum((w * v).sum(), ("x", "y")), mesh=mesh,
                     in_specs=(P(), P("x", "y")), out_specs=P())
    outs = g(a)
    return [np.asarray(f(a, b)).tolist(), np.asarray(jx.jit(f)(a, b)).tolist(),
            [np.asarray(o).tolist() for o in outs], [_spec(o) for o in outs],
            np.asarray(h(a[:2, :2], b)).tolist(),
            [np.asarray(t).tolist() for t in jx.grad(h, argnums=(0, 1))(a[:2, :2], b)],
            [np.asarray(t).tolist() for t in jx.jit(jx.grad(lambda u, v: jnp.sum(
                f(u, v) ** 2), argnums=(0, 1)))(a, b)]]


@case("shard_map")
def transforms(jx):
    """vmap of shard_map, shard_map of grad (data-parallel SGD), jvp through collectives."""
    P = jx.sharding.PartitionSpec
    jnp = jx.numpy
    lax = jx.lax
    mesh = _auto(jx, (4,), ("i",))
    x = np.linspace(-1, 1, 8 * 3).reshape(8, 3)
    y = np.linspace(0, 2, 8)
    w = np.array([0.3, -0.2, 0.5])

    def loss(w, xb, yb):
        return jnp.mean((jnp.tanh(xb @ w) - yb) ** 2)

    def step(check):
        return jx.jit(jx.shard_map(
            lambda w, xb, yb: w - 0.1 * lax.pmean(jx.grad(loss)(w, xb, yb), "i"), mesh=mesh,
            in_specs=(P(), P("i"), P("i")), out_specs=P(), check_vma=check))

    smap = jx.shard_map(lambda v: lax.psum(jnp.sin(v), "i"), mesh=mesh, in_specs=P("i"),
                        out_specs=P())
    batched = jx.vmap(smap)(np.stack([x, 2 * x]))
    primal, tangent = jx.jvp(smap, (x,), (np.ones_like(x),))
    return [np.asarray(step(False)(w, x, y)).tolist(), np.asarray(batched).tolist(),
            np.asarray(primal).tolist(), np.asarray(tangent).tolist(),
            np.asarray(step(True)(w, x, y)).tolist()]


@case("shard_map")
def partial_manual(jx):
    """axis_names: manual over 'x' only, 'y' left automatic."""
    P = jx.sharding.PartitionSpec
    lax = jx.lax
    mesh = _auto(jx, (2, 2), ("x", "y"))
    x = np.arange(16.0, dtype=np.float32).reshape(4, 4)
    f = jx.shard_map(lambda b: lax.psum(b, "x") * 2, mesh=mesh, in_specs=P("x"),
                     out_specs=P(), axis_names={"x"})
    g = jx.shard_map(lambda b: b.sum(1, keepdims=True) + lax.axis_index("x"), mesh=mesh,
                     in_specs=P("x", None), out_specs=P("x"), axis_names={"x"})
    r1, r2 = f(x), g(x)
    return [np.asarray(r1).tolist(), _spec(r1), np.asarray(r2).tolist(), _spec(r2)]


@case("shard_map")
def grad_inside(jx):
    """grad inside the body w.r.t. a replicated argument, check_vma on and off."""
    P = jx.sharding.PartitionSpec
    lax = jx.lax
    mesh = _auto(jx, (4,), ("i",))
    xb = np.arange(8.0, dtype=np.float32).reshape(8, 1)
    w = np.float32(2.0)
    out = []
    for check in (True, False):
        def body(w, xb):
            g1 = jx.grad(lambda w: lax.psum((w * xb).sum(), "i") + w ** 2)(w)
            g2 = jx.grad(lambda w: (w * xb).sum())(w)
            g3 = jx.grad(lambda w: (w * xb).sum() + w ** 2)(w)
            g4 = jx.grad(lambda v: jx.numpy.sum(v * lax.pmean(v, "i")))(xb)
            return g1, g2, g3, g4

        f = jx.shard_map(body, mesh=mesh, in_specs=(P(), P("i")), out_specs=(P(), P(), P(),
                                                                            P("i")),
                         check_vma=check)
        out.append([np.asarray(r).tolist() for r in f(w, xb)])
    return out
