"""Test-wide settings: checks on, float64 default (NumPy semantics); module generators replay."""
import os

import numpy as np
import pytest

# Threaded forms compile in line, in this process and the processes tests start, so tests of
# threaded paths see them from their first call on a fresh clone too (the helper process would
# run one-thread forms meanwhile, and compile beside the suite); the helper's own tests turn it
# on (tests/compiler/cpu/test_compile_ahead.py and the tier tests).
os.environ.setdefault("NUMBAX_CPU_COMPILE_AHEAD", "0")

import numbax  # noqa: E402

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


# Heavy parametrized families of many processes each (worker pools, MPI ranks, notebooks,
# asv's benchmarks): the CI fast path (-m "not slow") runs every k-th case of each (in
# collection order), `pytest -m slow` the others. The compiler's own families ran sampled
# too until the native pool's idle workers stopped spinning (2026-11-29): the fast suite
# went from 15 to 8 minutes on the 2-core VM, and they all run in it again (~40 s more).
SAMPLED = {
    "tests/test_asv_suite.py::test_benchmark_runs_once": 3,  # CI's asv step runs one module too
    "tests/test_notebooks.py::test_notebook_executes": 4,  # 01_quickstart and 05_mlp_digits
    "tests/test_distributed.py::test_large_reductions_match_numpy_bit_for_bit": 4,
    "tests/test_distributed.py::test_a_process_that_stops_makes_the_others_raise": 3,
    "tests/parallel/test_all_to_all_axes.py::test_shard_map_over_both_mesh_axes": 3,
    "tests/parallel/test_misuse.py::test_grouped_pmax_pmin_at_the_ends_of_every_dtype": 3,
    "tests/parallel/test_barriers.py::test_collectives_in_a_row_on_three_and_four_devices": 2,
    "tests/test_devices.py::test_virtual_device_count_from_environment": 2,
    # compile-bound families, measured on the 2-core Zen 3 VM (2026-11-30: the suite took 17
    # minutes there against 10 on the Zen 5 VM before): 186 s, 47 s and 32 s of worker time
    # (2026-12-02: every 4th, with float16 not counted, runs each dtype and each module once;
    # every 3rd counting float16 ran float32 and bool only, scipy.special's two 46 s each)
    "tests/numpy/test_dtype_conformance.py::test_jit_gives_what_eager_gives": 4,
    "tests/compiler/cpu/test_scans.py::test_scans_give_numpys_bits": 7,  # both thread counts
    "tests/lax/test_matrix.py::test_jit_matches_eager": 2,
    # (2026-11-30, later: clean CI runs of 17.9 and 18.1 minutes on that noisy VM) 93 s,
    # 18 s and 21 s of worker time; odeint's programs: exponential stays (predator_prey and
    # transformations are slow already; pytree_state joins them)
    "tests/test_ode.py::test_program_matches_jax": 4,
    "tests/lax/test_matrix.py::test_grads_match_finite_differences": 2,
    # (2026-12-02, a clean CI run took 19.7 minutes on the Emerald Rapids VM's slow hours) 21 s
    "tests/compiler/cpu/test_column_reductions.py::"
    "test_same_bits_serial_and_parallel_and_numpy_values": 3,
    # the Krylov solvers compiled (cg and gmres batched run; gmres's two take 13-15 s each)
    "tests/scipy/test_sparse_linalg.py::test_jit_and_vmap_give_the_eager_solutions": 2,
    "tests/scipy/test_sparse_linalg.py::test_gradients_by_implicit_differentiation": 2,
    # (2026-12-04, the 2-core VM now a Zen 1 at ~2 GHz: a tenth of the fast suite, every 10th
    # case, took 385 s of worker time, the whole an estimated 32 minutes; these families'
    # estimated worker seconds) 190, 171, 96, 80, 75, 66, 66, 55, 44, 42, 42, 35, 29
    # (n = 1000 is slow-marked: every 7th of the other 30 still runs each n, axis and flag)
    "tests/compiler/cpu/test_index_maps.py::test_associative_scan_against_its_definition": 7,
    "tests/compat/test_programs.py::test_program_matches_jax": 3,
    "tests/numpy/test_searchsorted_search.py::"
    "test_searchsorted_matches_numpy_on_every_side_and_method": 6,
    "tests/compiler/cpu/test_short_rows.py::"
    "test_softmax_log_softmax_and_logsumexp_of_short_rows": 3,
    "tests/compiler/cpu/test_windows_cpu.py::"
    "test_reductions_and_max_pool_derivatives_match_eager": 2,
    "tests/compiler/cpu/test_gemm_epilogues.py::test_gemm_applies_the_epilogue_to_every_tile": 3,
    "tests/numpy/test_dtype_conformance.py::test_every_function_and_dtype_matches_jax": 2,
    "tests/compiler/cpu/test_conv_cpu.py::test_jit_matches_eager_and_runs_compiled": 2,
    "tests/scipy/test_sparse_linalg.py::test_fixed_steps_give_scipys_iterates": 2,
    "tests/lax/test_indexing.py::test_vmap_gather_of_batched_tables_and_indices": 2,
    "tests/lax/test_top_k_rows.py::test_top_k_along_every_axis_and_k_up_to_the_whole_row": 2,
    "tests/numpy/test_setops.py::test_nan_across_the_two_arrays_is_not_shared": 2,
    "tests/compiler/cpu/test_flow_special_functions.py::"
    "test_a_loop_with_a_special_function_is_compiled_and_gives_the_eager_steps": 2,
    # (2026-12-04, later: a clean CI run took 23.8 minutes after the ml_dtypes and byte-code
    # fixes; worker seconds of each family) 42, 25, 28, 20, 25, 17, 12. Each k keeps every
    # value of every parameter at least once (the 2 x 2 grids' diagonals, tail x dtype's, each
    # pad mode), except top_k's rows: four of its seven dtypes (float32, int8, uint16, bool)
    "tests/compiler/cpu/test_loop_threads.py::"
    "test_products_in_scan_bodies_and_their_gradients_match_numpy": 3,
    "tests/compiler/cpu/test_loop_threads.py::"
    "test_body_products_of_every_operand_layout_match_numpy": 3,
    "tests/lax/test_parallel_sendrecv.py::test_shard_map_receives_what_ppermute_would": 3,
    "tests/lax/test_parallel_ragged.py::test_shard_map_on_four_devices_matches_the_pseudocode": 3,
    "tests/compiler/cpu/test_literal_rows.py::test_bounding_boxes_of_short_rows": 4,
    "tests/lax/test_top_k_rows.py::"
    "test_top_k_of_rows_with_ties_nans_and_signed_zeros_matches_a_python_sort": 2,
    "tests/numpy/test_wrong_results_s32.py::test_pad_value_modes_match_numpy": 2,
    # (the same day: 23.8 minutes again, 43 minutes of CPU for two cores: the suite is bound by
    # Numba compiling its programs) the families above sampled more thinly (associative scans
    # every 7th: each size, axis and flag still once; scans every 7th: both thread counts,
    # every dtype and shape; searchsorted every 6th: the size x dtype diagonal; the recorded
    # JAX programs every 3rd) and these: every layout, thread count and flag still once; the
    # pooled kernels', full reductions' and bfloat16 programs every other one; the loop-body
    # products' two larger shapes, one in each dtype (the 2 x 3 x 2 one only with -m slow)
    "tests/compiler/cpu/test_blas_parts.py::"
    "test_loop_bodies_products_match_numpy_on_any_thread_count": 5,
    "tests/compiler/cpu/test_kernel_tasks.py::test_pooled_kernels_give_the_serial_bits": 2,
    "tests/compiler/cpu/test_kernel_tasks.py::"
    "test_full_reductions_run_their_passes_as_pool_jobs": 2,
    "tests/compiler/cpu/test_index_maps.py::test_any_thread_count_gives_the_one_thread_bits": 2,
    "tests/compiler/cpu/test_flow_arrays.py::test_triangular_solve_in_a_loop": 3,
    "tests/test_bfloat16.py::test_matches_jax_recorded": 2,
    # (2026-12-04, a third round: CI took 27.5 minutes on the Zen 1 VM) the next-process load
    # for one of the two body-product kinds; lu in a loop in float32 (float64: the Kalman
    # filter test inverts in its scan)
    "tests/compiler/cpu/test_loop_threads.py::"
    "test_loop_kernels_compiled_against_cached_runtime_load_in_the_next_process": 2,
    "tests/compiler/cpu/test_flow_arrays.py::test_lu_solve_det_inverse_in_a_loop": 2,
    # (2026-12-08, the AVX2 EPYC VM: CI 28.6 then 24.8 minutes) 73 s and 16 s of worker time:
    # every 3rd still runs each of the 7 orientations, both sizes and both dtypes, and each
    # reduction, axis and dtype
    "tests/compiler/cpu/test_loop_matvec.py::"
    "test_every_orientation_matches_numpy_on_one_and_two_threads": 3,
    "tests/compiler/cpu/test_reductions_codegen.py::test_reduction_matches_numpy": 3,
}

# Single tests that are a second, heavier check of what a lighter test in the fast path checks
# (named in the comment above each): with -m slow only. Compile-bound, 14-36 s each on the
# 2-core Zen 1 VM.
SECOND_CHECKS = {
    # jit(expm) stays (test_expm_frechet_derivatives_and_jit); batched loop predicates too
    # (tests/lax/test_control_flow.py)
    "tests/test_scipy_linalg.py::test_expm_squarings_jitted_and_batched",
    # jit(grad) of a pmean'd loss closing over replicated parameters
    # (test_compiled_bodies_with_collectives_under_jit_and_grad,
    # test_every_collective_values_and_grads_against_jax)
    "tests/test_shard_map.py::test_data_parallel_loss_closing_over_params_grad_matches_one_device",
}


def pytest_collection_modifyitems(config, items):
    seen: dict[str, int] = {}
    for item in items:
        if item.nodeid in SECOND_CHECKS:
            item.add_marker(pytest.mark.slow)
        family, _, params = item.nodeid.partition("[")
        every = SAMPLED.get(family)
        # cases marked slow by their own test are not counted, so the sample rotates through
        # the other parameters (a k that divides a parameter's period would skip some values)
        if every is None or not params or item.get_closest_marker("slow"):
            continue
        if seen.get(family, 0) % every:
            item.add_marker(pytest.mark.slow)
        seen[family] = seen.get(family, 0) + 1
