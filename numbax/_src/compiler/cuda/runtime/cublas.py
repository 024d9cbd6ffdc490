"""Matrix products on the GPU through cuBLAS (the library CuPy's binding loads, called directly):
the one door to the vendor library (numba-cuda's SIMT kernels cannot reach tensor cores).

A `dot_general` whose operands read as (batch, free, contracting) groups of even strides becomes
one `cublasGemmStridedBatchedEx` call. numbax's arrays are row-major and cuBLAS is
column-major, so the row-major product C = X @ Y (m x n) is computed as the column-major
Cᵀ = Yᵀ Xᵀ (n x m, leading dimension n): each operand is passed as is, transposed or not by
which of its two strides is 1.

Precision follows JAX on the GPU: float32 products at the default precision run on TF32 tensor
cores (JAX's default on Ampere and newer), `"highest"` (and the F32_F32_F32 preset) in full
float32; float16/bfloat16 inputs accumulate in float32; float64 and complex products in their
own precision. `available()` is False without CuPy or under Numba's CUDA simulator, and the
driver then keeps numbax's own tiled matmul kernel.
"""
from __future__ import annotations

import functools
from typing import Any, NamedTuple

import numpy as np

from numbax._src.compiler.cuda.runtime import memory, stream

# cuBLAS / CUDA library enums (cublas_api.h, library_types.h): stable ABI values.
OP_N, OP_T = 0, 1
CUDA_R_16F, CUDA_R_32F, CUDA_R_64F, CUDA_C_32F, CUDA_C_64F, CUDA_R_16BF = 2, 0, 1, 4, 5, 14
COMPUTE_32F, COMPUTE_32F_FAST_TF32, COMPUTE_32F_FAST_16BF = 68, 77, 75
COMPUTE_64F = 70
GEMM_DEFAULT = -1

_DATA_TYPE = {"float16": CUDA_R_16F, "bfloat16": CUDA_R_16BF, "float32": CUDA_R_32F,
              "float64": CUDA_R_64F, "complex64": CUDA_C_32F, "complex128": CUDA_C_64F}
# The scalar type of alpha/beta for each compute type (host pointers).
_SCALAR = {COMPUTE_32F: np.float32, COMPUTE_32F_FAST_TF32: np.float32,
           COMPUTE_32F_FAST_16BF: np.float32, COMPUTE_64F: np.float64}


class Gemm(NamedTuple):
    """One strided-batched product, as the driver passes it (all plain ints and strings, so
    its repr is the generated source): out[b] = x[b] @ y[b] in row-major terms."""
    batch: int
    m: int
    n: int
    k: int
    x_strides: tuple[int, int, int]  # element strides of (batch, free, contracting) in x
    y_strides: tuple[int, int, int]  # element strides of (batch, contracting, free) in y
    in_dtype: str
    out_dtype: str
    compute: int


@functools.cache
def _cupy() -> Any:
    """CuPy's cuBLAS binding module, or None when CuPy is not installed."""
    try:
        from cupy_backends.cuda.libs import cublas
    except ImportError:
        return None
    return cublas


def available() -> bool:
    """Whether products can go to cuBLAS: CuPy installed and a real GPU (not the simulator)."""
    return not memory.simulator_enabled() and _cupy() is not None


def compute_type(in_dtype: np.dtype, precision: Any) -> int | None:
    """The cuBLAS compute type JAX's precision rules give, or None where cuBLAS does not apply
    (integer and boolean products stay on numbax's kernel)."""
    name = np.dtype(in_dtype).name if str(in_dtype) != "bfloat16" else "bfloat16"
    if name not in _DATA_TYPE:
        return None
    if name in ("float64", "complex128"):
        return COMPUTE_64F
    if name in ("float16", "bfloat16"):
        return COMPUTE_32F
    preset = getattr(precision, "name", None)
    if preset is not None and not isinstance(precision, tuple):  # a DotAlgorithmPreset
        if preset in ("TF32_TF32_F32", "DEFAULT", "ANY_F8_ANY_F8_F32"):
            return COMPUTE_32F_FAST_TF32
        if preset.startswith("BF16_BF16_F32"):
            return COMPUTE_32F_FAST_16BF if preset == "BF16_BF16_F32" else COMPUTE_32F
        return COMPUTE_32F
    if isinstance(precision, tuple) and any(getattr(p, "name", "") == "HIGHEST"
                                            for p in precision):
        return COMPUTE_32F
    return COMPUTE_32F_FAST_TF32  # None, DEFAULT, HIGH: TF32, as XLA on Ampere and newer


def operand_layout(rows: int, cols: int, row_stride: int, col_stride: int) -> tuple[int, int]:
    """(op, leading dimension) of a row-major-indexed rows x cols operand (element (r, c) at
    r * row_stride + c * col_stride) read as the column-major matrix cuBLAS wants for its
    transpose: op N when its rows are contiguous in cuBLAS's sense (col_stride == 1), else T."""
    if cols == 1 or col_stride == 1:
        return OP_N, max(row_stride if rows > 1 else cols, cols, 1)
    if rows == 1 or row_stride == 1:
        return OP_T, max(col_stride if cols > 1 else rows, rows, 1)
    raise ValueError(f"operand of strides ({row_stride}, {col_stride}) has no unit stride")


def plan(g: Gemm) -> tuple:
    """The cuBLAS arguments (before pointers) of one product: Cᵀ (n x m) = Yᵀ Xᵀ, where Yᵀ is
    y read as an n x k matrix and Xᵀ is x read as a k x m matrix."""
    (ybs, ycs, yfs), (xbs, xfs, xcs) = g.y_strides, g.x_strides
    op_y, ld_y = operand_layout(g.k, g.n, ycs, yfs)  # y as row-major k x n
    op_x, ld_x = operand_layout(g.m, g.k, xfs, xcs)  # x as row-major m x k
    return (op_y, op_x, g.n, g.m, g.k, ld_y, ybs, ld_x, xbs, g.n, g.m * g.n)


def gemm(x: Any, y: Any, out: Any, g: Gemm) -> None:
    """out (batch, m, n contiguous) = x @ y per batch entry, one cuBLAS call (no size is 0:
    the driver keeps such products on its own kernel)."""
    op_y, op_x, n, m, k, ld_y, s_y, ld_x, s_x, ld_c, s_c = plan(g)
    _call(op_y, op_x, n, m, k, y, _DATA_TYPE[g.in_dtype], ld_y, s_y, x,
          _DATA_TYPE[g.in_dtype], ld_x, s_x, out, _DATA_TYPE[g.out_dtype], ld_c, s_c, g.batch,
          g.compute)


@functools.cache
def _library() -> Any:
    """libcublas, as CuPy's binding loaded it into the process, with the prototypes numbax
    calls. numbax calls it directly (ctypes): CuPy's wrappers point their handle at CuPy's
    current stream before every call and refuse to run while a stream is capturing a graph."""
    import ctypes
    import ctypes.util

    _cupy()  # importing CuPy's binding loads libcublas (or its first handle does)
    path = _loaded("libcublas.so")
    if path is None:
        import cupy

        cupy.cuda.device.get_cublas_handle()
        path = _loaded("libcublas.so") or ctypes.util.find_library("cublas")
    if path is None:
        raise RuntimeError("numbax GPU backend: CuPy is installed but libcublas was not found")
    lib = ctypes.CDLL(path)
    c_int, ptr, i64 = ctypes.c_int, ctypes.c_void_p, ctypes.c_longlong
    lib.cublasCreate_v2.argtypes = [ctypes.POINTER(ptr)]
    lib.cublasSetStream_v2.argtypes = [ptr, ptr]
    lib.cublasGemmStridedBatchedEx.argtypes = [
        ptr, c_int, c_int, c_int, c_int, c_int, ptr, ptr, c_int, c_int, i64, ptr, c_int, c_int,
        i64, ptr, ptr, c_int, c_int, i64, c_int, c_int, c_int]
    return lib


def _loaded(prefix: str) -> str | None:
    """The path of a shared library this process has mapped whose file name starts with
    `prefix`, or None."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                if line.rstrip().rsplit("/", 1)[-1].startswith(prefix):
                    return line.split(None, 5)[-1].strip()
    except OSError:
        pass
    return None


@functools.cache
def _handle(device_id: int, stream_handle: int) -> int:
    """numbax's own cuBLAS handle of one device, bound to one stream (the work stream, or the
    capture stream) once: it is never re-pointed, so calls from two streams never meet."""
    import ctypes

    lib = _library()
    h = ctypes.c_void_p()
    with memory.on_device(device_id):
        memory.get_cuda().current_context()  # cuBLAS binds the handle to the current context
        _status("cublasCreate", lib.cublasCreate_v2(ctypes.byref(h)))
        _status("cublasSetStream", lib.cublasSetStream_v2(h, stream_handle))
    return h.value


def _status(call: str, status: int) -> None:
    if status:
        raise RuntimeError(f"numbax GPU backend: {call} failed with cuBLAS status {status}")


def _pointer(buf: Any) -> int:
    return buf.__cuda_array_interface__["data"][0]


# alpha = 1, beta = 0 as host scalars of each scalar type (read when the call is issued)
_ONE = {t: np.ones(1, t) for t in (np.float32, np.float64, np.complex64, np.complex128)}
_ZERO = {t: np.zeros(1, t) for t in (np.float32, np.float64, np.complex64, np.complex128)}


def _call(op_a: int, op_b: int, m: int, n: int, k: int, a: Any, a_type: int, lda: int,
          stride_a: int, b: Any, b_type: int, ldb: int, stride_b: int, c: Any, c_type: int,
          ldc: int, stride_c: int, batch: int, compute: int) -> None:
    """cublasGemmStridedBatchedEx on device buffers (column-major C = op(A) op(B), alpha 1,
    beta 0), on the stream the driver's launches go to. Tests replace this function with a
    numpy model of the same contract."""
    scalar = _SCALAR[compute]
    if c_type in (CUDA_C_32F, CUDA_C_64F):
        scalar = np.complex64 if c_type == CUDA_C_32F else np.complex128
    handle = _handle(memory.current_device_id(), stream.current())
    _status("cublasGemmStridedBatchedEx", _library().cublasGemmStridedBatchedEx(
        handle, op_a, op_b, m, n, k, _ONE[scalar].ctypes.data, _pointer(a), a_type, lda,
        stride_a, _pointer(b), b_type, ldb, stride_b, _ZERO[scalar].ctypes.data, _pointer(c),
        c_type, ldc, stride_c, batch, compute, GEMM_DEFAULT))
