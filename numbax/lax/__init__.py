"""numbax.lax: the primitives under JAX's names."""
from numbax._src.custom_derivatives import stop_gradient  # noqa: E402, F401
from numbax._src.lax.control_flow.conditionals import cond, switch  # noqa: F401
from numbax._src.lax.control_flow.loops import (  # noqa: F401
    fori_loop,
    map,
    scan,
    while_loop,
)
from numbax._src.lax.convert import (  # noqa: F401
    convert_element_type_api as convert_element_type,
)
from numbax._src.lax.dot import batch_matmul, dot, dot_general  # noqa: F401
from numbax._src.lax.elementwise import (  # noqa: F401
    abs,
    acos,
    acosh,
    add,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    bitcast_convert_type,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    cbrt,
    ceil,
    clamp,
    conj,
    cos,
    cosh,
    digamma,
    div,
    eq,
    erf,
    erf_inv,
    erfc,
    exp,
    exp2,
    expm1,
    floor,
    ge,
    gt,
    imag,
    integer_pow,
    is_finite,
    le,
    lgamma,
    log,
    log1p,
    logistic,
    lt,
    max,
    min,
    mul,
    ne,
    neg,
    nextafter,
    polygamma,
    population_count,
    pow,
    real,
    rem,
    round,
    rsqrt,
    select,
    select_n,
    shift_left,
    shift_right_arithmetic,
    shift_right_logical,
    sign,
    sin,
    sinh,
    sqrt,
    square,
    sub,
    tan,
    tanh,
)
from numbax._src.lax.elementwise import (
    complex_ as complex,  # noqa: F401
)
from numbax._src.lax.indexing import (  # noqa: F401
    dynamic_index_in_dim,
    dynamic_slice,
    dynamic_slice_in_dim,
    dynamic_update_index_in_dim,
    dynamic_update_slice,
)
from numbax._src.lax.parallel import (  # noqa: F401
    all_gather,
    axis_index,
    axis_size,
    pmax,
    pmean,
    pmin,
    ppermute,
    psum,
    psum_scatter,
)
from numbax._src.lax.reductions import (  # noqa: F401
    argmax,
    argmin,
    cummax,
    cummin,
    cumprod,
    cumsum,
    reduce_and,
    reduce_max,
    reduce_min,
    reduce_or,
    reduce_prod,
    reduce_sum,
)
from numbax._src.lax.shape_ops import (  # noqa: F401
    broadcast,
    broadcast_in_dim,
    broadcasted_iota,
    collapse,
    concatenate,
    copy,
    expand_dims,
    full,
    index_in_dim,
    iota,
    pad,
    reshape,
    rev,
    slice,
    slice_in_dim,
    squeeze,
    transpose,
)
from numbax._src.lax.sort import sort, sort_key_val  # noqa: F401

# --- convolutions, windowed reductions and FFT (issue 18)
# isort: split
from numbax._src.lax.conv_ops import (  # noqa: E402, F401
    conv,
    conv_general_dilated,
    conv_general_dilated_local,
    conv_general_dilated_patches,
    conv_transpose,
    conv_with_general_padding,
)
from numbax._src.lax.convolution import (  # noqa: E402, F401
    ConvDimensionNumbers,
    ConvGeneralDilatedDimensionNumbers,
    conv_dimension_numbers,
    conv_general_dilated_p,
    conv_general_permutations,
    conv_general_shape_tuple,
    conv_shape_tuple,
    conv_transpose_shape_tuple,
)
from numbax._src.lax.fft import FftType, fft, fft_p  # noqa: E402, F401
from numbax._src.lax.reduce_window import reduce_window, reduce_window_p  # noqa: E402, F401
from numbax._src.lax.windowed_reductions import (  # noqa: E402, F401
    reduce_window_max_p,
    reduce_window_min_p,
    reduce_window_shape_tuple,
    reduce_window_sum_p,
    select_and_gather_add_p,
    select_and_scatter_add_p,
    select_and_scatter_p,
)

# --- compat-lax: JAX's remaining jax.lax names (parameter classes, *_p primitives, helpers)
# isort: split
from numbax._src.custom_derivatives import stop_gradient_p  # noqa: E402, F401
from numbax._src.lax.along_axis import (  # noqa: E402, F401
    public_associative_scan as associative_scan,
)
from numbax._src.lax.bits import (  # noqa: E402, F401
    clz,
    clz_p,
    eq_to_p,
    le_to_p,
    lt_to_p,
    mulhi,
    mulhi_p,
    reduce_precision,
    reduce_precision_p,
)
from numbax._src.lax.control_flow.conditionals import cond_p  # noqa: E402, F401
from numbax._src.lax.control_flow.linear_solve import linear_solve_p  # noqa: E402, F401
from numbax._src.lax.control_flow.loops import scan_p, while_p  # noqa: E402, F401
from numbax._src.lax.control_flow.solves import (  # noqa: E402, F401
    custom_linear_solve,
    custom_root,
)
from numbax._src.lax.creation import (  # noqa: E402, F401
    broadcast_like,
    broadcast_shapes,
    broadcast_to_rank,
    dtype,
    empty,
    full_like,
    padtype_to_pads,
    reciprocal,
    shape_as_value,
)
from numbax._src.lax.dot import dot_general_p  # noqa: E402, F401
from numbax._src.lax.elementwise import (  # noqa: E402, F401
    abs_p,
    acos_p,
    acosh_p,
    add_p,
    and_p,
    asin_p,
    asinh_p,
    atan2_p,
    atan_p,
    atanh_p,
    bitcast_convert_type_p,
    cbrt_p,
    ceil_p,
    clamp_p,
    complex_p,
    conj_p,
    convert_element_type_p,
    cos_p,
    cosh_p,
    digamma_p,
    div_p,
    eq_p,
    erf_inv_p,
    erf_p,
    erfc_p,
    exp2_p,
    exp_p,
    expm1_p,
    floor_p,
    ge_p,
    gt_p,
    imag_p,
    integer_pow_p,
    is_finite_p,
    le_p,
    lgamma_p,
    log1p_p,
    log_p,
    logistic_p,
    lt_p,
    max_p,
    min_p,
    mul_p,
    ne_p,
    neg_p,
    nextafter_p,
    not_p,
    or_p,
    polygamma_p,
    population_count_p,
    pow_p,
    real_p,
    rem_p,
    round_p,
    rsqrt_p,
    select_n_p,
    shift_left_p,
    shift_right_arithmetic_p,
    shift_right_logical_p,
    sign_p,
    sin_p,
    sinh_p,
    sqrt_p,
    square_p,
    sub_p,
    tan_p,
    tanh_p,
    xor_p,
)
from numbax._src.lax.indexing import (  # noqa: E402, F401
    dynamic_slice_p,
    dynamic_update_slice_p,
    gather_p,
    scatter_add_p,
    scatter_max_p,
    scatter_min_p,
    scatter_mul_p,
    scatter_p,
)
from numbax._src.lax.ordering import (  # noqa: E402, F401  # noqa: E402, F401
    after_all,
    after_all_p,
    composite,
    create_token,
    create_token_p,
    dce_sink,
    dce_sink_p,
    optimization_barrier,
    optimization_barrier_p,
    platform_dependent,
    stage,
    stage_p,
)
from numbax._src.lax.parallel import (  # noqa: E402, F401
    all_gather_p,
    axis_index_p,
    pmax_p,
    pmin_p,
    ppermute_p,
    psum_p,
)
from numbax._src.lax.parallel_ragged import (  # noqa: E402, F401
    ragged_all_to_all,
    ragged_all_to_all_p,
)
from numbax._src.lax.parallel_redistribute import (  # noqa: E402, F401
    all_to_all,
    all_to_all_p,
    pbroadcast,
    pcast,
    pshuffle,
    pswapaxes,
)
from numbax._src.lax.parallel_sendrecv import precv, psend  # noqa: E402, F401
from numbax._src.lax.params import (  # noqa: E402, F401
    AccuracyMode,
    DotAlgorithm,
    DotAlgorithmPreset,
    DotDimensionNumbers,
    GatherDimensionNumbers,
    GatherScatterMode,
    Precision,
    PrecisionLike,
    RaggedDotDimensionNumbers,
    RandomAlgorithm,
    RoundingMethod,
    ScatterDimensionNumbers,
    Tolerance,
)
from numbax._src.lax.pieces import (  # noqa: E402, F401
    split,
    split_p,
    stack,
    stack_p,
    tile,
    tile_p,
    unstack,
    unstack_p,
)
from numbax._src.lax.ragged import ragged_dot, ragged_dot_general  # noqa: E402, F401
from numbax._src.lax.reduce import reduce, reduce_p  # noqa: E402, F401
from numbax._src.lax.reductions import (  # noqa: E402, F401
    argmax_p,
    argmin_p,
    cumlogsumexp,
    cumlogsumexp_p,
    cummax_p,
    cummin_p,
    cumprod_p,
    cumsum_p,
    reduce_and_p,
    reduce_max_p,
    reduce_min_p,
    reduce_or_p,
    reduce_prod_p,
    reduce_sum_p,
    reduce_xor,
    reduce_xor_p,
)
from numbax._src.lax.rng import (  # noqa: E402, F401
    rng_bit_generator,
    rng_bit_generator_p,
    rng_uniform,
    rng_uniform_p,
)
from numbax._src.lax.scaled_dot import scaled_dot  # noqa: E402, F401
from numbax._src.lax.scatter import scatter_sub_p  # noqa: E402, F401
from numbax._src.lax.shape_ops import (  # noqa: E402, F401
    broadcast_in_dim_p,
    concatenate_p,
    copy_p,
    iota_p,
    pad_p,
    reshape_p,
    rev_p,
    slice_p,
    squeeze_p,
    transpose_p,
)
from numbax._src.lax.slicing import (  # noqa: E402, F401
    dynamic_update_slice_in_dim,
    gather,
    index_take,
    scatter_add,
    scatter_apply,
    scatter_max,
    scatter_min,
    scatter_mul,
    scatter_sub,
)
from numbax._src.lax.slicing import scatter_set as scatter  # noqa: E402, F401
from numbax._src.lax.sort import (  # noqa: E402, F401
    approx_max_k,
    approx_min_k,
    approx_top_k_p,
    sort_p,
    top_k_p,
)
from numbax._src.lax.sort import lax_top_k as top_k  # noqa: E402, F401

# special functions (incomplete gamma and beta, zeta, scaled Bessel I0/I1)
from numbax._src.lax.special import (  # noqa: E402, F401
    bessel_i0e,
    bessel_i0e_p,
    bessel_i1e,
    bessel_i1e_p,
    betainc,
    igamma,
    igamma_grad_a,
    igamma_grad_a_p,
    igamma_p,
    igammac,
    igammac_p,
    random_gamma_grad,
    regularized_incomplete_beta_p,
    zeta,
    zeta_p,
)

# isort: split
# --- sharding: with_sharding_constraint (jax.lax's name for pinning a layout)
from numbax._src.lax.sharding_ops import (  # noqa: E402, F401
    device_put_p,
    sharding_constraint_p,
)
from numbax._src.sharding.api import with_sharding_constraint  # noqa: E402, F401

# isort: split
# --- jax.lax.linalg is an attribute after a plain `import jax`: programs call it without
# importing the submodule
from numbax.lax import linalg  # noqa: E402, F401
