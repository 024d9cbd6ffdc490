"""Matrix products with a fused bias (and ReLU or GELU) epilogue through cuBLASLt, reached
through NVIDIA's nvmath-python bindings (`nvmath.bindings.cublasLt`, the `numbax[cuda]` extra).

`compiler/epilogues.py` rewrites `x @ w + b` (and its ReLU or GELU) into one `gemm_epilogue`
equation where cuBLASLt is here; this module runs it. The product's arguments are the ones
cublas.py derives for its strided-batched call (row-major C = X @ Y computed as the
column-major Cᵀ = Yᵀ Xᵀ), so the bias, one value per output column of C, is one value per row
of the column-major Cᵀ: what CUBLASLT_EPILOGUE_BIAS adds. Without nvmath-python, or under
Numba's CUDA simulator, `available()` is False and products keep the plain cuBLAS call with the
bias add in the next loop nest.

A product's descriptors, layouts and algorithm (the heuristic's first choice; timing the
heuristic's other candidates on the MLP step's products gained 0–6 %, once 24 %, on an H200) are
made once per shape, dtypes, epilogue and device, and per pointer alignment: the heuristic
assumes operands aligned to 256 bytes unless told otherwise, and a scan's row of `xs` is not.
cuBLASLt's workspace is one buffer per (device, stream), so the work stream and a capture
stream never share one.
"""
from __future__ import annotations

import functools
import threading
from typing import Any, NamedTuple

import numpy as np

from numbax._src.compiler.cuda.runtime import cublas, memory, stream

# cublasLtEpilogue_t (cublasLt.h): stable ABI values
EPILOGUE_BIAS, EPILOGUE_RELU_BIAS, EPILOGUE_GELU_BIAS = 4, 6, 36
WORKSPACE_BYTES = 32 << 20  # NVIDIA's recommended workspace on Hopper
_ALIGN_MAX = 256  # the alignment cuBLASLt's heuristic assumes unless told less


class LtGemm(NamedTuple):
    """One unbatched product with its epilogue, as the driver passes it (its repr is the
    generated source): out = act(x @ y + bias) in row-major terms."""
    gemm: cublas.Gemm
    epilogue: int


@functools.cache
def _bindings() -> Any:
    """nvmath-python's cuBLASLt module, or None when nvmath-python is not installed."""
    try:
        from nvmath.bindings import cublasLt
    except ImportError:
        return None
    return cublasLt


def available() -> bool:
    """Whether products can take a cuBLASLt epilogue: cuBLAS there (a real GPU, CuPy) and
    nvmath-python installed."""
    return cublas.available() and _bindings() is not None


def takes(eqn) -> bool:
    """Whether cuBLASLt computes this product (a dot_general, or a gemm_epilogue bound by
    hand: float64 operands, say, which the rewrite never makes, run on the host): two
    matrices, no batch dimensions, one float32 or float16 dtype throughout, a precision
    cuBLAS computes."""
    from numbax._src.compiler import epilogues

    return epilogues.matrix_product(eqn, (np.float32, np.float16)) and cublas.compute_type(
        eqn.outvars[0].aval.dtype, eqn.params["precision"]) is not None


def gemm(x: Any, y: Any, bias: Any, out: Any, p: LtGemm) -> None:
    """out (m, n contiguous) = epilogue(x @ y + bias), one cuBLASLt call."""
    g = p.gemm
    op_y, op_x, n, m, k, ld_y, _, ld_x, _, ld_c, _ = cublas.plan(g)
    _call(op_y, op_x, n, m, k, y, cublas._DATA_TYPE[g.in_dtype], ld_y, x, ld_x, bias, out,
          cublas._DATA_TYPE[g.out_dtype], ld_c, g.compute, p.epilogue)


def _call(op_a: int, op_b: int, m: int, n: int, k: int, a: Any, ab_type: int, lda: int, b: Any,
          ldb: int, bias: Any, c: Any, c_type: int, ldc: int, compute: int,
          epilogue: int) -> None:
    """cublasLtMatmul on device buffers: column-major C (m x n) = epilogue(op(A) op(B) + bias),
    the bias one value per row of C, alpha 1, beta 0, on the stream the driver's launches go
    to. Tests replace this function with a numpy model of the same contract."""
    pa, pb, pbias, pc = (memory.pointer(buf) for buf in (a, b, bias, c))
    device = memory.current_device_id()
    h = stream.current()
    key = (device, op_a, op_b, m, n, k, ab_type, lda, ldb, c_type, ldc, compute, epilogue,
           min(_ALIGN_MAX, pa & -pa), min(_ALIGN_MAX, pb & -pb), min(_ALIGN_MAX, pc & -pc))
    plan = _PLANS.get(key) or _plan(key)
    workspace = _WORKSPACES.get((device, h)) or _workspace(device, h)
    with plan.lock:  # the bias pointer is an attribute of the shared descriptor
        plan.bias[0] = pbias
        plan.set_bias(plan.desc, _BIAS_POINTER, plan.bias_address, 8)
        plan.matmul(plan.handle, plan.desc, _ONE_ADDRESS, pa, plan.a, pb, plan.b, _ZERO_ADDRESS,
                    pc, plan.c, pc, plan.c, plan.algo, workspace, WORKSPACE_BYTES, h)


class _Plan(NamedTuple):
    """One product's descriptors and algorithm on one device, with what a call needs at hand."""
    handle: int
    desc: int
    a: int
    b: int
    c: int
    algo: int  # the address of the chosen algorithm (inside `results`)
    results: Any  # the heuristic's results, kept alive
    bias: np.ndarray  # one int64: the bias pointer a call sets
    bias_address: int
    set_bias: Any  # the binding's matmul_desc_set_attribute
    matmul: Any  # the binding's matmul
    lock: threading.Lock


# alpha, beta (float32 scale) and the bias-pointer attribute, read when a call is issued
_ONE, _ZERO = np.ones(1, np.float32), np.zeros(1, np.float32)
_ONE_ADDRESS, _ZERO_ADDRESS = _ONE.ctypes.data, _ZERO.ctypes.data
_BIAS_POINTER = 8  # CUBLASLT_MATMUL_DESC_BIAS_POINTER (cublasLt.h)
_PLANS: dict[tuple, _Plan] = {}
_WORKSPACES: dict[tuple[int, int], int] = {}  # (device, stream) -> the workspace's address
_KEPT: list = []  # the workspaces' buffers


def _set(setter: Any, obj: int, attr: int, value: int, dtype: Any) -> None:
    buf = np.array([value], dtype)
    setter(obj, attr, buf.ctypes.data, buf.itemsize)


def _plan(key: tuple) -> _Plan:
    """The descriptors and algorithm of one product on one device (made once, never freed:
    one per distinct product of the process's programs, as cuBLAS keeps its own)."""
    (device, op_a, op_b, m, n, k, ab_type, lda, ldb, c_type, ldc, compute, epilogue,
     *align) = key
    lt = _bindings()
    attr = lt.MatmulDescAttribute
    desc = lt.matmul_desc_create(compute, cublas.CUDA_R_32F)
    _set(lt.matmul_desc_set_attribute, desc, attr.TRANSA, op_a, np.int32)
    _set(lt.matmul_desc_set_attribute, desc, attr.TRANSB, op_b, np.int32)
    _set(lt.matmul_desc_set_attribute, desc, attr.EPILOGUE, epilogue, np.uint32)
    a = lt.matrix_layout_create(ab_type, *((m, k) if op_a == cublas.OP_N else (k, m)), lda)
    b = lt.matrix_layout_create(ab_type, *((k, n) if op_b == cublas.OP_N else (n, k)), ldb)
    c = lt.matrix_layout_create(c_type, m, n, ldc)
    pref = lt.matmul_preference_create()
    pa = lt.MatmulPreferenceAttribute
    _set(lt.matmul_preference_set_attribute, pref, pa.MAX_WORKSPACE_BYTES, WORKSPACE_BYTES,
         np.uint64)
    for which, bytes_ in zip((pa.MIN_ALIGNMENT_A_BYTES, pa.MIN_ALIGNMENT_B_BYTES,
                              pa.MIN_ALIGNMENT_C_BYTES, pa.MIN_ALIGNMENT_D_BYTES),
                             (align[0], align[1], align[2], align[2])):
        _set(lt.matmul_preference_set_attribute, pref, which, bytes_, np.uint32)
    results, count = lt.MatmulHeuristicResult(1), np.zeros(1, np.int32)
    handle = _handle(device)
    with memory.on_device(device):
        lt.matmul_algo_get_heuristic(handle, desc, a, b, c, c, pref, 1, results.ptr,
                                     count.ctypes.data)
    lt.matmul_preference_destroy(pref)
    if count[0] == 0:
        raise RuntimeError(
            f"numbax GPU backend: cuBLASLt has no algorithm for a {m}x{n}x{k} product with "
            f"epilogue {epilogue} (compute type {compute}). Set NUMBAX_CUDA_EPILOGUES=0 to "
            "keep products on cuBLAS with the bias added by a separate kernel.")
    if int(attr.BIAS_POINTER) != _BIAS_POINTER:
        raise RuntimeError("numbax GPU backend: this cuBLASLt numbers its bias-pointer "
                           "attribute differently; set NUMBAX_CUDA_EPILOGUES=0.")
    bias = np.zeros(1, np.int64)
    plan = _PLANS[key] = _Plan(handle, desc, a, b, c, results.ptr, results, bias,
                               bias.ctypes.data, lt.matmul_desc_set_attribute, lt.matmul,
                               threading.Lock())
    return plan


@functools.cache
def _handle(device: int) -> int:
    """numbax's cuBLASLt handle of one device (streams are given per call)."""
    with memory.on_device(device):
        memory.get_cuda().current_context()
        return _bindings().create()


def _workspace(device: int, stream_handle: int) -> int:
    """The address of cuBLASLt's workspace for one (device, stream), a buffer taken out of the
    pool for good."""
    buf = memory.kept_buffer((device, WORKSPACE_BYTES, np.dtype(np.uint8).str))
    _KEPT.append(buf)
    _WORKSPACES[(device, stream_handle)] = address = memory.pointer(buf)
    return address
