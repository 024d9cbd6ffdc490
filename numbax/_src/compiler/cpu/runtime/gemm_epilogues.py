"""Epilogues on a product's C: a dense layer's act(C + bias row) (ReLU, GELU (tanh form), tanh
or sigmoid after the bias) and an update's base + scale * C (a whole array added: an SGD step's
`w - lr * (h.T @ d)`, a residual's `x + h @ w`), applied by gemm.py to each tile of C as its
last k block finishes (`finish_tile`, while the tile is in L1), or by library.py to a product
BLAS computed (`finish_block`, `finish_rows`). The codes and the bias row (an update's base,
flat) come from `epilogue_args`."""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic, overload

from numbax._src.compiler.cpu.runtime import fastmath as fm
from numbax._src.compiler.cpu.runtime import scalars as sc

# The epilogues (compiler/epilogues.py's activations, after the bias).
NO_EPILOGUE, BIAS, BIAS_RELU, BIAS_GELU, BIAS_TANH, BIAS_SIGMOID, UPDATE = 0, 1, 2, 3, 4, 5, 6
EPILOGUES = {"none": BIAS, "relu": BIAS_RELU, "gelu": BIAS_GELU, "tanh": BIAS_TANH,
             "sigmoid": BIAS_SIGMOID, "update": UPDATE}
GELU_CUBE, GELU_SCALE = 0.044715, 0.7978845608028654  # jax.nn.gelu's tanh form: sqrt(2/pi)


def _by_width(f32, f64):
    """A function of one float for compiled code: fastmath's `f32` form on float32, its `f64`
    form otherwise (the forms the unfused kernels call, so fused results are the same bits)."""
    def stub(x):
        """(typed by the overload below)"""

    @overload(stub)
    def _impl(x):
        if x == types.float32:
            return lambda x: f32(x)
        return lambda x: f64(x)

    return stub


_tanh = _by_width(fm.tanh_f32, fm.tanh_f64)
_logistic = _by_width(fm.logistic_f32, fm.logistic_f64)


@intrinsic
def _prefetch(typingctx, arr, index):
    """Asks for the cache line of flat array element `index` in L1, for reading."""
    def codegen(context, builder, sig, args):
        data = cgutils.create_struct_proxy(sig.args[0])(context, builder, value=args[0]).data
        i8p, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
            "llvm.prefetch.p0i8")
        line = builder.bitcast(builder.gep(data, [args[1]]), i8p)
        read, to_l1, data_cache = ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)
        builder.call(fn, [line, read, to_l1, data_cache])
        return context.get_dummy_value()
    return types.void(arr, types.intp), codegen


@njit(cache=True, error_model="numpy")
def before_tile(bias, c_off, ldc, mr, nr, epilogue, last_block):
    """Before a tile's `last_block` of k: an update's base lines for the tile asked for, so
    they arrive while the tile computes (read after it, they were a miss a line: the 784 x 128
    x 512 weight gradient's update cost 120 us over the plain product on two threads, with
    this 90)."""
    if epilogue != UPDATE or not last_block:
        return
    step = max(1, 64 // bias.itemsize)
    for i in range(mr):
        for j in range(0, nr, step):
            _prefetch(bias, c_off + i * ldc + j)


@njit(cache=True, error_model="numpy")  # a call per tile: inlined, its loops stayed scalar
def finish_tile(c, c_off, ldc, mr, nr, bias, j0, epilogue, scale):
    """c[c_off + i*ldc + j] = act(c[...] + bias[j0 + j]) for i < mr, j < nr (`epilogue`: one of
    BIAS, BIAS_RELU, BIAS_GELU, BIAS_TANH, BIAS_SIGMOID), or for UPDATE bias[c_off + i*ldc +
    j] + scale * c[...] (`bias` then the base, flat in C's layout), in the order the unfused
    equations compute it. One loop per epilogue, indexed by unsigned integers (no negative-index
    wraparound), so each vectorises (a branch in the loop, or signed flat indices, left GELU
    scalar: ~9 ns an element against ~1). No slices: each view of C would count a reference
    on C's one shared counter, from every thread, per row."""
    zero, half, one = c.dtype.type(0), c.dtype.type(0.5), c.dtype.type(1)
    cube, inner = c.dtype.type(GELU_CUBE), c.dtype.type(GELU_SCALE)
    b0, width = np.uint64(j0), np.uint64(nr)
    s = c.dtype.type(scale)
    for i in range(mr):
        r0 = np.uint64(c_off + i * ldc)
        if epilogue == UPDATE:
            for j in range(width):
                c[r0 + j] = bias[r0 + j] + s * c[r0 + j]
        elif epilogue == BIAS:
            for j in range(width):
                c[r0 + j] = c[r0 + j] + bias[b0 + j]
        elif epilogue == BIAS_RELU:
            for j in range(width):
                c[r0 + j] = sc.fmax(c[r0 + j] + bias[b0 + j], zero)
        elif epilogue == BIAS_TANH:
            for j in range(width):
                c[r0 + j] = _tanh(c[r0 + j] + bias[b0 + j])
        elif epilogue == BIAS_SIGMOID:
            for j in range(width):
                c[r0 + j] = _logistic(c[r0 + j] + bias[b0 + j])
        else:
            for j in range(width):
                z = c[r0 + j] + bias[b0 + j]
                c[r0 + j] = z * (half * (one + _tanh(inner * (z + cube * (z * z * z)))))


@njit(cache=True, error_model="numpy")
def finish_block(c, lo, hi, n, bias, epilogue, scale):
    """`finish_tile` over rows [lo, hi) of C (m x n, flat), on this thread."""
    finish_tile(c, lo * n, n, hi - lo, n, bias, 0, epilogue, scale)


@njit(cache=True, parallel=True, error_model="numpy")
def finish_rows(c, m, n, bias, epilogue, scale, parts):
    """`finish_tile` over all of C (m x n, flat), in `parts` row blocks on Numba's threads: the
    epilogue of a product that ran on BLAS."""
    for p in prange(parts):
        finish_block(c, m * p // parts, m * (p + 1) // parts, n, bias, epilogue, scale)


_no_bias: dict = {}  # dtype -> a read-only one-element row: the bias of a plain product


def epilogue_args(dtype, shape: tuple, bias: np.ndarray | None, activation: str):
    """(read-only flat bias row, epilogue code) for `_gemm_part` and `finish_rows` on a C of
    `shape` (m, n); the row is always the same array type, so plain and fused products share
    one compilation. With activation "update", `bias` is the base: an array of C's shape."""
    if bias is None:
        if activation != "none":
            raise ValueError(f"gemm_cpu: activation {activation!r} needs a bias row")
        row = _no_bias.get(dtype)
        if row is None:
            row = _no_bias[dtype] = np.zeros(1, dtype)
            row.flags.writeable = False
        return row, NO_EPILOGUE
    if activation not in EPILOGUES:
        raise ValueError(f"gemm_cpu: activation must be one of {sorted(EPILOGUES)}; got "
                         f"{activation!r}")
    bias = np.asarray(bias)
    want = tuple(shape) if activation == "update" else (shape[1],)
    if bias.dtype != dtype or bias.shape != want:
        what = "the base of an update" if activation == "update" else "bias"
        raise ValueError(f"gemm_cpu: {what} must be a {np.dtype(dtype)} array of shape {want}; "
                         f"got {bias.dtype}{bias.shape}")
    row = np.ascontiguousarray(bias).reshape(-1).view()
    row.flags.writeable = False
    return row, EPILOGUES[activation]
