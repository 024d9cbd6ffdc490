"""The sharding API against JAX 0.10.2's recorded results (tests/sharding_cases.py): meshes,
specs and shardings with their printed forms and block arithmetic, JAX's errors, the
visualisations, explicit-sharding types, the parallel-programming tutorial, jit with
in/out shardings (elementwise and batch-parallel programs run block by block in the
workers), make_array_from_*; plus bad inputs and the Array attributes."""
import json
import os
import sys
import types

import numpy as np
import pytest

import numbax
import numbax.experimental.shard_map  # noqa: F401  (jx.experimental.shard_map in the cases)
import numbax.numpy as jnp
from numbax._src.config import config
from numbax._src.parallel import pool, spmd, visualize
from numbax.sharding import NamedSharding
from numbax.sharding import PartitionSpec as P

sys.path.append(os.path.dirname(os.path.abspath(__file__)))
import sharding_cases  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "data", "sharding_jax_reference.json")) as _f:
    REF = json.load(_f)["results"]


class _Jx(types.ModuleType):
    """numbax, with jax.debug's three sharding names read from numbax's module of them
    (numbax.debug itself belongs to another module)."""

    def __getattr__(self, name):
        return getattr(numbax, name)


JX = _Jx("jx")
JX.debug = types.SimpleNamespace(visualize_sharding=visualize.visualize_sharding,
                                 visualize_array_sharding=visualize.visualize_array_sharding,
                                 inspect_array_sharding=visualize.inspect_array_sharding)


@pytest.fixture(scope="module", autouse=True)
def eight_devices():
    previous = config.num_cpu_devices
    config.update("num_cpu_devices", 8)
    yield
    pool.shutdown_pool()
    config.update("num_cpu_devices", previous)


def _same(got, want, path=""):
    """Equal, floats to float32 precision; an error matches when numbax's class is JAX's or
    a subclass of the builtin JAX raised (numbax's ValueErrors are NumbaxValueError)."""
    if isinstance(want, list) and len(want) == 2 and isinstance(want[0], str) and \
            want[0].endswith(("Error", "Exception")) and isinstance(got, list):
        names = got[0] if isinstance(got[0], list) else [got[0]]
        assert want[0] in names or got[0] == want[0], (path, got, want)
        assert got[1] == want[1], path
        return
    if isinstance(want, list):
        assert isinstance(got, (list, tuple)) and len(got) == len(want), (path, got, want)
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            _same(g, w, f"{path}/{i}")
    elif isinstance(want, dict):
        assert set(got) == set(want), path
        for k in want:
            _same(got[k], want[k], f"{path}/{k}")
    elif isinstance(want, float):
        assert np.isclose(got, want, rtol=2e-6, atol=2e-6), (path, got, want)
    else:
        assert got == want, (path, got, want)


def _run(name):
    return json.loads(json.dumps(sharding_cases.CASES[name](JX)))


@pytest.mark.parametrize("name", ["meta/reprs", "meta/blocks", "meta/visualize"])
def test_metadata_against_jax(name):
    _same(_run(name), REF[name])


def test_errors_against_jax():
    """The same messages; the same classes (numbax's ValueErrors are NumbaxValueError)."""
    got = sharding_cases.CASES["meta/errors"](JX)
    for g, w in zip(got, REF["meta/errors"], strict=True):
        assert g[1] == w[1]
        assert g[0] == w[0] or (g[0], w[0]) == ("NumbaxValueError", "ValueError")


def test_explicit_mode_types_and_errors_against_jax():
    with numbax.enable_x64(False):  # JAX's 32-bit dtypes in the printed types
        got = _run("explicit/types")
    want = REF["explicit/types"]
    assert got[5][0] in ("ValueError", "NumbaxValueError")
    got[5][0] = "ValueError"
    _same(got, want)
    assert repr(numbax.sharding.get_abstract_mesh()) == "AbstractMesh((), axis_types=())"


def test_auto_axes_and_explicit_axes_against_jax():
    with numbax.enable_x64(False):
        _same(_run("explicit/switch_axes"), REF["explicit/switch_axes"])


def test_tutorial_against_jax_with_blocks_run_in_the_workers(monkeypatch):
    calls = []
    real_run = spmd.run
    monkeypatch.setattr(spmd, "run", lambda api, *a, **k: calls.append(api) or
                        real_run(api, *a, **k))
    with numbax.enable_x64(False):
        got = _run("tutorial/parallel_programming")
    _same(got, REF["tutorial/parallel_programming"])
    # f_elementwise, f_contract (a psum), f_contract_2, the shard_maps, layer on sharded
    # inputs (a psum over the split contraction) and layer_sharded ran on the engine
    assert "jit(f_elementwise)" in calls and "jit(f_contract)" in calls
    assert "jit(layer)" in calls and calls.count("shard_map") >= 4


def test_jit_shardings_against_jax(monkeypatch):
    calls = []
    real_run = spmd.run
    monkeypatch.setattr(spmd, "run", lambda api, *a, **k: calls.append(api) or
                        real_run(api, *a, **k))
    _same(_run("tutorial/jit_shardings"), REF["tutorial/jit_shardings"])
    assert calls.count("jit(<lambda>)") == 4


def test_make_arrays_against_jax():
    _same(_run("tutorial/make_arrays"), REF["tutorial/make_arrays"])


def test_a_program_that_needs_a_gather_runs_in_one_process(monkeypatch):
    """A sort along the split axis cannot run on blocks: the global program runs here (no data
    moves: the devices share one buffer) and the result keeps a layout."""
    mesh = sharding_cases._auto(numbax, (4,), ("i",))
    x = numbax.device_put(np.arange(16.0)[::-1].copy(), NamedSharding(mesh, P("i")))
    monkeypatch.setattr(spmd, "run", lambda *a, **k: pytest.fail("ran on the engine"))
    out = numbax.jit(jnp.sort)(x)
    np.testing.assert_array_equal(out, np.arange(16.0))
    assert out.sharding.mesh == mesh


def test_array_attributes_and_device_put_forms():
    a = jnp.arange(6.0).reshape(2, 3)
    assert a.sharding == numbax.sharding.SingleDeviceSharding(numbax.devices()[0])
    assert a.is_fully_addressable and a.is_fully_replicated
    (shard,) = a.addressable_shards
    assert shard.index == (slice(None), slice(None)) and shard.replica_id == 0
    np.testing.assert_array_equal(shard.data, a)
    mesh = sharding_cases._auto(numbax, (2, 2), ("x", "y"))
    with numbax.set_mesh(mesh):
        s = numbax.device_put(np.arange(8.0).reshape(4, 2), P("x", "y"))
        assert numbax.sharding.get_mesh() == mesh
    assert numbax.sharding.get_mesh().empty
    assert s.sharding == NamedSharding(mesh, P("x", "y")) and not s.is_fully_replicated
    assert s.device == s.sharding and s.devices() == set(numbax.devices()[:4])
    np.testing.assert_array_equal(np.asarray(s), np.arange(8.0).reshape(4, 2))
    one = numbax.device_put(s, numbax.sharding.SingleDeviceSharding(numbax.devices()[3]))
    assert one.device == numbax.devices()[3] and type(one) is numbax._src.array.Array
    r = numbax.reshard(s, NamedSharding(mesh, P()))
    assert r.is_fully_replicated and np.shares_memory(np.asarray(r), np.asarray(s))


def test_bad_inputs():
    mesh = sharding_cases._auto(numbax, (2, 2), ("x", "y"))
    with pytest.raises(ValueError, match="no mesh is set"):
        numbax.device_put(np.ones(4), P("x"))
    with pytest.raises(TypeError, match="expected a jax.sharding.Sharding"):
        numbax.reshard(np.ones(4), "x")
    with pytest.raises(TypeError, match="spec is a tuple"):
        NamedSharding(mesh, ("x",))
    with pytest.raises(ValueError, match="need 16 devices, but there are 8"):
        numbax.make_mesh((4, 4), ("a", "b"))
    with pytest.raises(ValueError, match="axis_types"):
        numbax.make_mesh((2,), ("a",), axis_types=("Auto",))
    with pytest.raises(ValueError, match="returned shape"):
        numbax.make_array_from_callback((4,), NamedSharding(mesh, P("x")),
                                        lambda idx: np.zeros(3))
    with pytest.raises(ValueError, match="got 3 arrays, expected one per device"):
        numbax.make_array_from_single_device_arrays((4,), NamedSharding(mesh, P("x")),
                                                    [np.zeros(2)] * 3)
    with pytest.raises(ValueError, match="only works for shapes with 1 and 2 dimensions"):
        visualize.visualize_sharding((2, 2, 2), NamedSharding(mesh, P()))
    with pytest.raises(TypeError, match="expected a jax.sharding.Mesh"):
        numbax.set_mesh("mesh")


def test_num_cpu_devices_config_names():
    assert numbax.config.jax_num_cpu_devices == numbax.config.num_cpu_devices == 8
    assert numbax.device_count() == 8


def test_readme_sharding_example():
    with open(os.path.join(os.path.dirname(HERE), "README.md")) as f:
        section = f.read().split("## pmap on one machine", 1)[1].split("\n## ", 1)[0]
    blocks = section.split("```python\n")[1:]
    namespace: dict = {}
    for block in blocks:
        exec(block.split("```")[0], namespace)  # noqa: S102 - the README's own code
    assert float(namespace["total"]) == 28.0
    assert namespace["x"].sharding.spec == P("x")


@pytest.mark.parametrize("module", [
    "numbax._src.sharding.mesh", "numbax._src.sharding.shardings", "numbax._src.sharding.api",
    "numbax._src.parallel.visualize", "numbax._src.parallel.shard_map",
    "numbax.experimental.mesh_utils"])
def test_docstring_examples(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module),
                             extraglobs={"numbax": numbax, "np": np})
    assert result.attempted and not result.failed


def test_device_put_with_a_sharding_inside_jit_pins_the_layout():
    mesh = sharding_cases._auto(numbax, (2, 2), ("x", "y"))
    s = NamedSharding(mesh, P("x"))
    out = numbax.jit(lambda v: numbax.device_put(v * 2, s) + 1)(np.arange(8.0))
    np.testing.assert_array_equal(out, np.arange(8.0) * 2 + 1)
    assert out.sharding == s


def test_jit_refuses_an_argument_laid_out_otherwise_than_in_shardings():
    """As JAX: a committed sharded argument is not moved behind the user's back (ValueError);
    an equal layout, or a host array, goes through."""
    m4 = numbax.make_mesh((4,), ("i",), axis_types=(numbax.sharding.AxisType.Auto,))
    m22 = numbax.make_mesh((2, 2), ("j", "k"), axis_types=(numbax.sharding.AxisType.Auto,) * 2)
    x = np.arange(8.0)
    placed = numbax.device_put(x, numbax.NamedSharding(m4, P("i")))
    for other in (numbax.NamedSharding(m22, P("j")), numbax.NamedSharding(m4, P())):
        with pytest.raises(ValueError, match="does not match the sharding"):
            numbax.jit(lambda a: a * 2, in_shardings=other)(placed)
    same = numbax.jit(lambda a: a * 2, in_shardings=numbax.NamedSharding(m4, P("i")))
    np.testing.assert_array_equal(same(placed), 2 * x)
    host = numbax.jit(lambda a: a * 2, in_shardings=numbax.NamedSharding(m4, P()))
    np.testing.assert_array_equal(host(x), 2 * x)
