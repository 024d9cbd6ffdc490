"""Lowerings of dot_general (lax/dot.py): a matrix product in the CPU driver (numbax's GEMM or
BLAS, cpu/runtime/library.py), numpy's dot inside compiled control flow for the products
cpu/loop_products.py does not run on the loop's threads, and the tiled matmul kernel on CUDA;
and scaled_dot (lax/scaled_dot.py), expanded into its composition."""
from __future__ import annotations

import math

from numbax._src.compiler import epilogues
from numbax._src.compiler.cpu import loop_products
from numbax._src.compiler.cpu.runtime import matvec
from numbax._src.compiler.cuda import driver as cuda_driver
from numbax._src.compiler.cuda.runtime import cublaslt
from numbax._src.compiler.lowerings.forms import Unsupported
from numbax._src.compiler.registry import EAGER, register
from numbax._src.compiler.source import render_value
from numbax._src.core import JaxprEqn
from numbax._src.lax import dot as ld
from numbax._src.lax import scaled_dot as lscaled


def _library(eqn: JaxprEqn, ins: list[str]) -> str:
    plain = _plain_matmul(eqn, ins)
    if plain is not None:
        return plain
    dims = render_value(eqn.params["dimension_numbers"])
    dtype = render_value(eqn.outvars[0].aval.dtype)
    return f"lw.dot_general({ins[0]}, {ins[1]}, {dims}, {dtype})"


def _plain_matmul(eqn: JaxprEqn, ins: list[str]) -> str | None:
    """`[lw.dot(x, y, macs)]` for a float product of matrices/vectors without batch dims or
    casts: the layout work of `dot_general` (5 us a call, a third of a small jitted program)
    is done here, once; a contraction over a matrix's other axis passes its `.T` view. A
    small matrix-vector product calls its loops directly (`_small_matvec`)."""
    small = _small_matvec(eqn, ins)
    if small is not None:
        return small
    args = _dot_args(eqn, ins)
    return None if args is None else f"[lw.dot({args})]"


def _small_matvec(eqn: JaxprEqn, ins: list[str]) -> str | None:
    """`[mv.top(matrix, vector)]` for a float32/float64 product of a matrix of at most
    matvec.TOP_LEVEL_LOOP_ELEMENTS elements and a 1-D vector, in either order (the matrix
    passed as the (result, contraction) view); None for other products."""
    x, y = (v.aval for v in eqn.invars[:2])
    (xc, yc), (xb, yb) = eqn.params["dimension_numbers"]
    if xb or yb or len(xc) != 1 or sorted((x.ndim, y.ndim)) != [1, 2]:
        return None
    if not (x.dtype == y.dtype == eqn.outvars[0].aval.dtype) or x.dtype.name not in (
            "float32", "float64"):
        return None
    if x.ndim == 2:  # x @ v: the matrix's free axis first
        matrix, contracted, vector = ins[0], xc[0], ins[1]
    else:  # v @ y
        matrix, contracted, vector = ins[1], yc[0], ins[0]
    shape = (x if x.ndim == 2 else y).shape
    if shape[0] * shape[1] > matvec.TOP_LEVEL_LOOP_ELEMENTS:
        return None
    return f"[mv.top({matrix if contracted == 1 else matrix + '.T'}, {vector})]"


def _dot_args(eqn: JaxprEqn, ins: list[str]) -> str | None:
    """`x, y, macs` of `lw.dot` for `_plain_matmul`'s products (None for others)."""
    x, y = (v.aval for v in eqn.invars[:2])
    out = eqn.outvars[0].aval
    (xc, yc), (xb, yb) = eqn.params["dimension_numbers"]
    if xb or yb or len(xc) != 1 or x.ndim > 2 or y.ndim > 2 or x.ndim + y.ndim < 3:
        return None
    if not (x.dtype == y.dtype == out.dtype) or out.dtype.kind not in "fc":
        return None
    xs = ins[0] if xc[0] == x.ndim - 1 else f"{ins[0]}.T"
    ys = ins[1] if yc[0] == 0 else f"{ins[1]}.T"
    k = x.shape[xc[0]]
    macs = math.prod(x.shape) * math.prod(y.shape) // k if k else 0
    return f"{xs}, {ys}, {macs}"


def pair_call(first: JaxprEqn, first_ins: list[str], second: JaxprEqn,
              second_ins: list[str]) -> str | None:
    """`lw.dot_pair((x1, y1, macs1, ...), (x2, y2, macs2, ...))` for two plain products of
    matrices or products with an epilogue (the CPU driver's adjacent ones, the second not
    reading the first: cpu/driver.py), which the runtime runs together on its threads; None
    where either is another kind of product."""
    args = []
    for eqn, ins in ((first, first_ins), (second, second_ins)):
        if eqn.primitive not in (ld.dot_general_p, epilogues.gemm_epilogue_p) or not all(
                v.aval.ndim == 2 for v in eqn.invars[:2]):
            return None
        args.append(_dot_args(eqn, ins))
        if eqn.primitive is epilogues.gemm_epilogue_p and args[-1] is not None:
            args[-1] += _epilogue_args(eqn, ins)
    return None if None in args else f"lw.dot_pair(({args[0]}), ({args[1]}))"


def _epilogue_args(eqn: JaxprEqn, ins: list[str]) -> str:
    """`, bias, activation` (an update's `, base, 'update', scale`) after `lw.dot`'s operands."""
    activation = eqn.params["activation"]
    if activation == "update":  # base + scale * (x @ y)
        return f", {ins[2]}, 'update', {render_value(eqn.params['scale'])}"
    return f", {ins[2]}, {activation!r}"


def _epilogue_library(eqn: JaxprEqn, ins: list[str]) -> str:
    """A dense layer (compiler/epilogues.py) as one `lw.dot` with its bias and activation, an
    update as one with its base and scale."""
    return f"[lw.dot({_dot_args(eqn, ins)}{_epilogue_args(eqn, ins)})]"


def _array(args, eqn):
    """np.dot of the operands reshaped to (m, k) @ (k, n): float products without batch dims."""
    operands = loop_products.matrix_operands(args, eqn)
    if operands is None:
        raise Unsupported("dot_general")
    x2, y2, (m, _, n) = operands
    out = eqn.outvars[0].aval
    if out.ndim == 0:
        return f"np.dot({x2}, {y2})[0, 0]"
    if out.shape == (m, n):
        return f"np.dot({x2}, {y2})"
    return f"np.dot({x2}, {y2}).reshape({out.shape})"


register(ld.dot_general_p, backend="cpu", library=_library, array=_array)
register(ld.dot_general_p, backend="cuda", library=cuda_driver.CudaDriver.dot_general)
# gemm_epilogue is the backends' own rewrite (compiler/epilogues.py); bound by hand on operands
# a backend's product does not take (float16 on the CPU; float64, or a GPU without cuBLASLt),
# it runs eagerly on the host
register(epilogues.gemm_epilogue_p, backend="cpu", library=_epilogue_library,
         library_ok=epilogues.cpu_takes)
register(epilogues.gemm_epilogue_p, backend="cuda", library=cuda_driver.CudaDriver.gemm_epilogue,
         library_ok=lambda eqn: cublaslt.available() and cublaslt.takes(eqn))

# scaled_dot: its composition (bfloat16 scaling, then dot_general) spliced in before fusion
register(lscaled.scaled_dot_p, expand=lscaled.expand_scaled_dot)
register(lscaled.scaled_dot_p, backend="cpu", library=EAGER)
