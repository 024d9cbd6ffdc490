"""numbax.stages (jax.stages): Traced/Lowered/Compiled against what JAX 0.10.2 returns for the
same programs (its outputs recorded below as literals)."""
import numpy as np
import pytest

import numbax
import numbax.numpy as jnp
from numbax import lax, stages

X = np.ones((3, 4), np.float32)
M = np.ones((4, 5), np.float32)


def f(x, y, *, z):
    return {"a": x * y, "b": (x.sum(), z + 1)}


@pytest.fixture(scope="module")
def staged():
    wrapped = numbax.jit(f, donate_argnums=1)
    traced = wrapped.trace(X, X, z=2)
    lowered = traced.lower()
    return wrapped, traced, lowered, lowered.compile()


def test_public_names_are_jaxs():
    # JAX 0.10.2: sorted(n for n in vars(jax.stages) if not n.startswith("_"))
    assert sorted(stages.__all__) == ["ArgInfo", "Compiled", "CompilerOptions", "Lowered",
                                      "Traced", "Wrapped"]
    assert numbax.stages is stages
    assert stages.CompilerOptions == dict[str, str | bool]


def test_isinstance_checks(staged):
    wrapped, traced, lowered, compiled = staged
    assert isinstance(wrapped, stages.Wrapped)
    assert isinstance(traced, stages.Traced) and not isinstance(traced, stages.Lowered)
    assert isinstance(lowered, stages.Lowered) and not isinstance(lowered, stages.Traced)
    assert isinstance(compiled, stages.Compiled)
    assert not isinstance(f, stages.Wrapped)


# JAX 0.10.2 (x64 on) for f above, jit(f, donate_argnums=1).trace(x, y, z=2), x and y f32[3,4]
JAX_ARGS_INFO = ("((ArgInfo(_aval=ShapedArray(float32[3,4]), donated=False), "
                 "ArgInfo(_aval=ShapedArray(float32[3,4]), donated=True)), "
                 "{'z': ArgInfo(_aval=ShapedArray(int64[], weak_type=True), donated=False)})")
JAX_IN_TREE = "PyTreeDef(((*, *), {'z': *}))"
JAX_OUT_TREE = "PyTreeDef({'a': *, 'b': (*, *)})"
JAX_TRACED_OUT_INFO = ("{'a': ShapeDtypeStruct(shape=(3, 4), dtype=float32), "
                       "'b': (ShapeDtypeStruct(shape=(), dtype=float32), "
                       "ShapeDtypeStruct(shape=(), dtype=int64, weak_type=True))}")
# Lowered/Compiled.out_info drop weak types (JAX's Compiled adds sharding=, format=: not here)
JAX_LOWERED_OUT_INFO = ("{'a': ShapeDtypeStruct(shape=(3, 4), dtype=float32), "
                        "'b': (ShapeDtypeStruct(shape=(), dtype=float32), "
                        "ShapeDtypeStruct(shape=(), dtype=int64))}")


def test_every_stage_reports_jaxs_args_info_and_trees(staged):
    _, traced, lowered, compiled = staged
    for stage in (traced, lowered, compiled):
        assert repr(stage.args_info) == JAX_ARGS_INFO
        assert str(stage.in_tree) == JAX_IN_TREE
        assert str(stage.out_tree) == JAX_OUT_TREE
        assert stage.donate_argnums == (1,)
        assert repr(stage.in_avals) == ("((ShapedArray(float32[3,4]), ShapedArray(float32[3,4])),"
                                        " {'z': ShapedArray(int64[], weak_type=True)})")
    info = numbax.tree.leaves(compiled.args_info)[0]
    assert (info.shape, info.dtype, info.donated) == ((3, 4), np.float32, False)
    assert str(info._aval) == "float32[3,4]"
    with pytest.raises(AttributeError):
        info.donated = True  # frozen, as JAX's dataclass


def test_out_info(staged):
    _, traced, lowered, compiled = staged
    assert repr(traced.out_info) == JAX_TRACED_OUT_INFO
    assert repr(lowered.out_info) == JAX_LOWERED_OUT_INFO
    assert repr(compiled.out_info) == JAX_LOWERED_OUT_INFO
    assert repr(traced.out_avals) == ("{'a': ShapedArray(float32[3,4]), 'b': (ShapedArray("
                                      "float32[]), ShapedArray(int64[], weak_type=True))}")


def test_traced_jaxpr_fun_name_and_call(staged):
    _, traced, _, _ = staged
    assert traced.fun_name == "f"
    assert type(traced.jaxpr).__name__ == "ClosedJaxpr"  # as in JAX
    # JAX prints reduce_sum[axes=(0, 1) out_sharding=None]; the equations are the same
    assert [e.primitive.name for e in traced.jaxpr.eqns] == ["mul", "reduce_sum", "add"]
    out = traced(X, X, z=2)
    np.testing.assert_array_equal(out["a"], X)
    assert float(out["b"][0]) == 12.0 and int(out["b"][1]) == 3


def test_compiled_call_and_its_errors(staged):
    _, _, _, compiled = staged
    out = compiled(X, X, z=2)
    assert float(out["b"][0]) == 12.0 and out["b"][1].weak_type
    with pytest.raises(TypeError, match="structure"):  # JAX: TypeError, "input pytree"
        compiled(X, X)
    with pytest.raises(TypeError, match=r"compiled with f32\[3,4\] and called with f32\[2\]"):
        compiled(X, np.ones(2, np.float32), z=2)


def test_static_arguments_leave_args_info():
    # JAX: args_info ((ArgInfo(_aval=ShapedArray(float64[2]), donated=False),), {}), and the
    # compiled function takes x alone
    lowered = numbax.jit(lambda n, x: x * n, static_argnums=0).lower(3, np.ones(2))
    assert repr(lowered.args_info) == \
        "((ArgInfo(_aval=ShapedArray(float64[2]), donated=False),), {})"
    np.testing.assert_array_equal(lowered.compile()(np.ones(2)), [3.0, 3.0])
    with pytest.raises(TypeError, match="structure"):
        lowered.compile()(3, np.ones(2))


def test_shardings_name_the_device_and_none_for_unread_arguments():
    # JAX: ((SingleDeviceSharding(...), {'p': None, 'q': None}), {}): XLA dropped b
    compiled = numbax.jit(lambda a, b: a).lower(
        np.ones(2), {"q": np.ones(3, np.int32), "p": 1.0}).compile()
    one = numbax.sharding.SingleDeviceSharding(numbax.devices()[0])
    assert compiled.input_shardings == ((one, {"p": None, "q": None}), {})
    assert compiled.output_shardings == one
    assert repr(one) == "SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)"


# XLA's flops and transcendentals for the same programs (x f32[3,4], m f32[4,5]), recorded from
# JAX 0.10.2's Lowered.cost_analysis() and Compiled.cost_analysis() (they agree on these keys)
JAX_COSTS = {
    "mul": (lambda a: a * a, (X,), {"flops": 12.0}),
    "exp": (lambda a: jnp.exp(a), (X,), {"transcendentals": 12.0}),
    "sum": (lambda a: a.sum(), (X,), {"flops": 11.0}),
    "sum0": (lambda a: a.sum(0), (X,), {"flops": 8.0}),
    "max": (lambda a: a.max(), (X,), {"flops": 11.0}),
    "dot": (lambda a, b: a @ b, (X, M), {"flops": 120.0}),
    "chain": (lambda a: jnp.exp(a * 2.0 + 1.0).sum(), (X,),
              {"flops": 35.0, "transcendentals": 12.0}),
    "select": (lambda a: jnp.where(a < 1.0, a, 2.0), (X,), {"flops": 24.0}),
    "ipow3": (lambda a: a ** 3, (X,), {"flops": 24.0}),
    "logistic": (lambda a: numbax.nn.sigmoid(a), (X,), {"flops": 36.0, "transcendentals": 12.0}),
    "convert": (lambda a: a.astype(jnp.int32), (X,), {"flops": 12.0}),
    "clamp": (lambda a: lax.clamp(0.0, a, 1.0), (X,), {"flops": 12.0}),
}


@pytest.mark.parametrize("name", sorted(JAX_COSTS))
def test_cost_analysis_counts_as_xla(name):
    fun, args, expected = JAX_COSTS[name]
    lowered = numbax.jit(fun).lower(*args)
    for cost in (lowered.cost_analysis(), lowered.compile().cost_analysis()):
        assert {k: v for k, v in cost.items() if k != "bytes accessed"} == expected


def test_bytes_accessed_before_and_after_fusion():
    lowered = numbax.jit(lambda a: a * a).lower(X)
    assert lowered.cost_analysis()["bytes accessed"] == 144.0  # JAX's Lowered: 144.0 too
    assert lowered.compile().cost_analysis()["bytes accessed"] == 96.0  # JAX's Compiled: 96.0
    ident = numbax.jit(lambda a: a).lower(X)
    assert ident.cost_analysis() == {}  # JAX: {} (no operations)
    assert ident.compile().cost_analysis() == {"bytes accessed": 96.0}  # JAX: the same


def test_scan_body_costs_once_per_step():
    scan = numbax.jit(lambda a: lax.scan(lambda c, r: (c * r, None), jnp.ones(4, np.float32),
                                         a)[0]).lower(X)
    assert scan.cost_analysis()["flops"] == 12.0


def test_memory_analysis_fields_and_aliasing():
    x = jnp.ones((3, 4))
    stats = numbax.jit(lambda a, b: a * b, donate_argnums=1).lower(x, x).compile() \
        .memory_analysis()
    assert (stats.argument_size_in_bytes, stats.output_size_in_bytes,
            stats.alias_size_in_bytes, stats.temp_size_in_bytes) == (192, 96, 96, 0)
    assert stats.generated_code_size_in_bytes > 0
    # JAX's CompiledMemoryStats fields, in its order
    assert str(stats).startswith("CompiledMemoryStats(generated_code_size_in_bytes=")
    assert str(stats).endswith("host_alias_size_in_bytes=0, host_temp_size_in_bytes=0)")


def test_text_ir_and_options():
    lowered = numbax.jit(lambda a: jnp.sin(a) * 2.0).lower(X)
    assert "def kernel" in lowered.as_text() and lowered.as_text() == \
        lowered.compile().as_text()
    assert lowered.compiler_ir() is lowered.jaxpr
    assert lowered.compiler_ir("stablehlo") is None
    with pytest.raises(ValueError, match="dialect"):
        lowered.as_text("hlo")
    with pytest.raises(ValueError, match="compiler_options"):
        lowered.compile({"xla_cpu_enable_fast_math": True})
    assert isinstance(lowered.compile({}), stages.Compiled)
    assert lowered.compile().runtime_executable() is not None
    traced = numbax.jit(lambda a: a + 1).trace(X)
    assert isinstance(traced.lower(lowering_platforms=("cpu",)), stages.Lowered)
    with pytest.raises(ValueError, match="lowering_platforms"):
        traced.lower(lowering_platforms=("tpu",))
