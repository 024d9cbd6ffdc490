"""JAX 0.10.2's config option names and what numbax does with each (read by config.py).

Every name JAX defines is accepted by numbax.config, so programs that set them run. Each entry is
(kind, default, choices, effect):
  kind     "bool", "int", "float", "str" (None allowed), "enum" (one of choices) or "device";
  effect   "numbax": honoured by numbax (see config.py and docs/sharp_bits.md);
           "none": accepted and validated, no effect here (XLA, TPU/GPU, export, logging or
                   cache tuning numbax does not have; docs/sharp_bits.md lists them);
           "default": only JAX's default is supported, because another value would change
                   results in a way numbax does not implement; setting another raises.
"""
from __future__ import annotations

from typing import Any, NamedTuple


class JaxOption(NamedTuple):
    kind: str
    default: Any
    choices: tuple | None
    effect: str


_PRECISIONS = (
    "default", "high", "highest", "bfloat16", "tensorfloat32", "float32", "ANY_F8_ANY_F8_F32",
    "ANY_F8_ANY_F8_F32_FAST_ACCUM", "ANY_F8_ANY_F8_ANY", "ANY_F8_ANY_F8_ANY_FAST_ACCUM",
    "F16_F16_F16", "F16_F16_F32", "BF16_BF16_BF16", "BF16_BF16_F32", "BF16_BF16_F32_X3",
    "BF16_BF16_F32_X6", "BF16_BF16_F32_X9", "TF32_TF32_F32", "TF32_TF32_F32_X3", "F32_F32_F32",
    "F64_F64_F64",
)
_GUARDS = ("allow", "log", "disallow", "log_explicit", "disallow_explicit")


def _b(default: bool, effect: str = "none") -> JaxOption:
    return JaxOption("bool", default, None, effect)


def _i(default: int, effect: str = "none") -> JaxOption:
    return JaxOption("int", default, None, effect)


def _s(default: str | None, effect: str = "none") -> JaxOption:
    return JaxOption("str", default, None, effect)


def _e(default: str | None, choices: tuple, effect: str = "none") -> JaxOption:
    return JaxOption("enum", default, choices, effect)


JAX_OPTIONS: dict[str, JaxOption] = {
    # --- honoured by numbax -------------------------------------------------------------------
    "jax_debug_infs": _b(False, "numbax"),
    "jax_default_device": JaxOption("device", None, None, "numbax"),
    "jax_explain_cache_misses": _b(False, "numbax"),
    "jax_log_compiles": _b(False, "numbax"),
    "jax_numpy_dtype_promotion": _e("standard", ("standard", "strict"), "numbax"),
    "jax_numpy_rank_promotion": _e("allow", ("allow", "warn", "raise"), "numbax"),
    # Matrix products always run at the operands' full precision, as on JAX's CPU backend.
    "jax_default_matmul_precision": _e(None, _PRECISIONS),
    # --- only JAX's default: other values would change random numbers or semantics -----------
    "jax_default_prng_impl": _e("threefry2x32", ("threefry2x32", "threefry4x32", "rbg",
                                                 "unsafe_rbg", "philox2x32", "philox4x32"),
                                "default"),
    "jax_threefry_partitionable": _b(True, "default"),
    "jax_random_seed_offset": _i(0, "default"),
    "jax_high_dynamic_range_gumbel": _b(False, "default"),
    "jax_error_checking_behavior_divide": _e("ignore", ("ignore", "raise"), "default"),
    "jax_error_checking_behavior_nan": _e("ignore", ("ignore", "raise"), "default"),
    "jax_error_checking_behavior_oob": _e("ignore", ("ignore", "raise"), "default"),
    # --- checks and guards numbax does not perform ------------------------------------------
    "jax_allow_f16_reductions": _b(True),
    "jax_array_garbage_collection_guard": _e(None, ("allow", "log", "fatal")),
    "jax_check_static_indices": _b(False),
    "jax_check_tracer_leaks": _b(False),
    "jax_debug_key_reuse": _b(False),
    "jax_explicit_x64_dtypes": _e("warn", ("allow", "warn", "error")),
    "jax_legacy_prng_key": _e("allow", ("allow", "warn", "error")),
    "jax_log_checkpoint_residuals": _b(False),
    "jax_mutable_array_checks": _b(True),
    "jax_no_execution": _b(False),
    "jax_no_tracing": _b(False),
    "jax_thread_guard": _b(False),
    "jax_transfer_guard": _e(None, _GUARDS),
    "jax_transfer_guard_device_to_device": _e(None, _GUARDS),
    "jax_transfer_guard_device_to_host": _e(None, _GUARDS),
    "jax_transfer_guard_host_to_device": _e(None, _GUARDS),
    # --- JAX implementation switches (numbax has one implementation) -------------------------
    "check_vma": _b(False),
    "eager_constant_folding": _b(False),
    "jax_auto_pcast": _b(True),
    "jax_custom_vjp3": _b(False),
    "jax_disable_bwd_checks": _b(False),
    "jax_disable_vmap_shmap_error": _b(False),
    "jax_disallow_mesh_context_manager": _b(False),
    "jax_enable_custom_prng": _b(False),
    "jax_refs_to_pins": _b(False),
    "jax_remat3": _b(False),
    "jax_remove_custom_partitioning_ptr_from_cache_key": _b(False),
    "jax_remove_size_one_mesh_axis_from_type": _b(False),
    "jax_scan3": _b(False),
    "jax_softmax_custom_jvp": _b(False),
    "jax_use_direct_linearize": _b(True),
    "jax_use_shardy_partitioner": _b(True),
    "jax_use_simplified_jaxpr_constants": _b(False),
    # --- XLA, TPU, GPU and Pallas tuning ----------------------------------------------------
    "jax_backend_target": _s(""),
    "jax_bcoo_cusparse_lowering": _b(False),
    "jax_compiler_detailed_logging_min_ops": _i(10),
    "jax_compiler_enable_remat_pass": _b(True),
    "jax_cuda_visible_devices": _s("all"),
    "jax_disable_most_optimizations": _b(False),
    "jax_dump_ir_modes": _s("stablehlo"),
    "jax_dump_ir_to": _s(""),
    "jax_embedded_constants_max_bytes": _i(32),
    "jax_enable_pgle": _b(False),
    "jax_exec_time_optimization_effort": JaxOption("float", 0.0, None, "none"),
    "jax_experimental_unsafe_xla_runtime_errors": _b(False),
    "jax_include_debug_info_in_dumps": _b(True),
    "jax_memory_fitting_effort": JaxOption("float", 0.0, None, "none"),
    "jax_memory_fitting_level": _e("O2", ("UNKNOWN", "O0", "O1", "O2", "O3")),
    "jax_mosaic_allow_hlo": _b(False),
    "jax_oneapi_visible_devices": _s("all"),
    "jax_optimization_level": _e("UNKNOWN", ("UNKNOWN", "O0", "O1", "O2", "O3")),
    "jax_pallas_enable_debug_checks": _b(False),
    "jax_pallas_poison_buffers": _b(False),
    "jax_pallas_use_mosaic_gpu": _b(True),
    "jax_pallas_verbose_errors": _b(False),
    "jax_pgle_aggregation_percentile": _i(90),
    "jax_pgle_profiling_runs": _i(3),
    "jax_pjrt_client_create_options": _s(None),
    "jax_ragged_dot_use_gpu_pallas_triton_lowering": _b(False),
    "jax_ragged_dot_use_ragged_dot_instruction": _b(True),
    "jax_rocm_visible_devices": _s("all"),
    "jax_threefry_gpu_kernel_lowering": _b(False),
    "jax_use_emit_pipeline_primitive": _b(False),
    "jax_use_magma": _e("auto", ("off", "on", "auto")),
    "jax_xla_backend": _s(""),
    "jax_xla_profile_version": _i(0),
    # --- XLA's persistent compilation cache (numbax's cache has its own options) -------------
    "jax_compilation_cache_check_contents": _b(False),
    "jax_compilation_cache_expect_pgle": _b(False),
    "jax_compilation_cache_include_metadata_in_key": _b(False),
    "jax_compilation_cache_max_size": _i(-1),
    "jax_persistent_cache_enable_xla_caches": _s("xla_gpu_per_fusion_autotune_cache_dir"),
    "jax_persistent_cache_min_compile_time_secs": JaxOption("float", 1.0, None, "none"),
    "jax_persistent_cache_min_entry_size_bytes": _i(0),
    "jax_raise_persistent_cache_errors": _b(False),
    "jax_share_binary_between_hosts": _b(False),
    "jax_share_binary_between_hosts_timeout_ms": _i(1200000),
    # --- multi-host runtime, transfers and distributed services ------------------------------
    "jax_check_proxy_envs": _b(True),
    "jax_cpu_collectives_implementation": _e("gloo", ("gloo", "mpi", "megascale")),
    "jax_cpu_enable_async_dispatch": _b(True),
    "jax_cpu_get_global_topology_timeout_minutes": _i(5),
    "jax_cpu_get_local_topology_timeout_minutes": _i(2),
    "jax_cross_host_transfer_socket_address": _s(""),
    "jax_cross_host_transfer_timeout_seconds": JaxOption("int", None, None, "none"),
    "jax_cross_host_transfer_transfer_size": JaxOption("int", None, None, "none"),
    "jax_cross_host_transport_addresses": _s(""),
    "jax_debug_leaked_clients_on_clear_backends": _b(False),
    "jax_distributed_debug": _b(False),
    "jax_enable_preemption_service": _b(True),
    "jax_enable_recoverability": _b(False),
    "jax_force_dcn_cross_host_transfers": _b(False),
    "jax_mock_gpu_topology": _s(""),
    "jax_sort_devices_by_process_index": _b(True),
    "mock_num_gpu_processes": _i(0),
    # --- tracebacks, printing and logging ----------------------------------------------------
    "jax_captured_constants_report_frames": _i(0),
    "jax_captured_constants_warn_bytes": _i(2000000000),
    "jax_debug_log_modules": _s(""),
    "jax_hlo_source_file_canonicalization_regex": _s(None),
    "jax_include_full_tracebacks_in_locations": _b(True),
    "jax_logging_level": _e("NOTSET", ("NOTSET", "DEBUG", "INFO", "WARNING", "ERROR",
                                       "CRITICAL")),
    "jax_pprint_use_color": _b(True),
    "jax_send_traceback_to_runtime": _e("off", ("off", "on", "full")),
    "jax_source_url_schema": _s(None),
    "jax_traceback_filtering": _e("auto", ("off", "tracebackhide", "remove_frames",
                                           "quiet_remove_frames", "auto")),
    "jax_traceback_in_locations_limit": _i(100),
    "jax_tracer_error_num_traceback_frames": _i(5),
    # --- jax2tf and jax.export (not in numbax) ----------------------------------------------
    "jax2tf_associative_scan_reductions": _b(False),
    "jax2tf_default_native_serialization": _b(True),
    "jax_export_calling_convention_version": _i(10),
    "jax_export_ignore_forward_compatibility": _b(False),
    "jax_serialization_version": _i(0),
}

# JAX names numbax keeps under its own option: (numbax option, value meaning "unset").
JAX_ALIASES: dict[str, str] = {
    "jax_num_cpu_devices": "num_cpu_devices",
    "jax_platforms": "platforms",
    "jax_platform_name": "platforms",
    "jax_compilation_cache_dir": "cache_dir",
    "jax_enable_compilation_cache": "compilation_cache",
}
