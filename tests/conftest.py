"""Test-wide settings: checks on, float64 default (NumPy semantics); module generators replay."""
import numpy as np
import pytest

import numbax

numbax.config.update("jax_enable_checks", True)

_FIRST_STATES = {}


@pytest.fixture(autouse=True)
def module_generators_replay(request):
    """A module's own generator (RNG or rng) starts each test where it stood before that
    module's first test, so a test draws the same numbers whichever tests ran before it on
    its xdist worker. Without this a tolerance could pass in one order and fail in another."""
    module = request.module
    for name in ("RNG", "rng"):
        generator = getattr(module, name, None)
        if isinstance(generator, np.random.Generator):
            state = _FIRST_STATES.setdefault((module.__name__, name), generator.bit_generator.state)
            generator.bit_generator.state = state


# Heavy parametrized families: the CI fast path (-m "not slow") runs every k-th case of each
# (in collection order), `pytest -m slow` the others, so the fast suite fits CI's 20 minutes
# on two cores. Each family spent 5-74 s of test time in a `--durations=0` run (2026-11-29).
SAMPLED = {
    "tests/test_asv_suite.py::test_benchmark_runs_once": 3,  # CI's asv step runs one module too
    "tests/lax/test_matrix.py::test_jit_matches_eager": 3,
    "tests/lax/test_matrix.py::test_grads_match_finite_differences": 2,
    "tests/test_notebooks.py::test_notebook_executes": 2,
    "tests/test_distributed.py::test_large_reductions_match_numpy_bit_for_bit": 4,
    "tests/compiler/cpu/test_gemm_cpu.py::test_matches_float64_numpy": 2,
    "tests/compiler/cpu/test_column_reductions.py::"
    "test_same_bits_serial_and_parallel_and_numpy_values": 2,
    "tests/compiler/cpu/test_reductions_codegen.py::test_reduction_matches_numpy": 2,
    "tests/compiler/cpu/test_control_flow_jit.py::"
    "test_products_in_compiled_control_flow_match_einsum": 3,
    "tests/compiler/cpu/test_control_flow_jit.py::test_jit_grad_of_control_flow": 2,
    "tests/compiler/cpu/test_conv_cpu.py::test_jit_matches_eager_and_runs_compiled": 2,
    "tests/parallel/test_all_to_all_axes.py::test_shard_map_over_both_mesh_axes": 2,
    "tests/parallel/test_collectives.py::"
    "test_mixed_in_place_and_staged_operands_reduce_in_group_order": 2,
    "tests/test_bfloat16.py::test_matches_jax_recorded": 3,
    "tests/test_ode.py::test_program_matches_jax": 3,
    "tests/test_distributed.py::test_a_process_that_stops_makes_the_others_raise": 3,
    "tests/compiler/cpu/test_conv_cpu.py::test_both_forms_on_every_configuration": 2,
    "tests/test_devices.py::test_virtual_device_count_from_environment": 2,
    "tests/compiler/test_scalar_helpers.py::test_min_divided_by_minus_one": 2,
    "tests/compiler/test_scalar_helpers.py::test_float_to_int_inside_compiled_control_flow": 2,
    "tests/compiler/test_scalar_helpers.py::test_float_to_int_special_values": 2,
    "tests/numpy/test_wrong_results_s32.py::test_pad_value_modes_match_numpy": 2,
    "tests/test_key_arrays.py::test_structural_op_moves_key_data": 2,
    "tests/compiler/cpu/test_fastmath_linking.py::test_generated_kernel_inlines_and_vectorises": 2,
    "tests/compiler/cpu/test_fastmath.py::test_max_ulp_error": 2,
    "tests/parallel/test_barriers.py::test_collectives_in_a_row_on_three_and_four_devices": 2,
    "tests/parallel/test_misuse.py::test_grouped_pmax_pmin_at_the_ends_of_every_dtype": 2,
    # (logsumexp's seeded passes, a last pass without a reduction, two outputs stay)
    "tests/compiler/cpu/test_kernel_tasks.py::test_full_reductions_run_their_passes_as_pool_jobs":
        2,
}


def pytest_collection_modifyitems(config, items):
    seen: dict[str, int] = {}
    for item in items:
        family, _, params = item.nodeid.partition("[")
        every = SAMPLED.get(family)
        if every is None or not params:
            continue
        if seen.get(family, 0) % every:
            item.add_marker(pytest.mark.slow)
        seen[family] = seen.get(family, 0) + 1
