"""Convolutions, windowed reductions and FFT (lax/convolution.py, reduce_window.py,
windowed_reductions.py, fft.py) under jit. On the CPU, float convolutions run on numbax's
register tile (cpu/runtime/conv.py, planned per shape at compile time), the sum/max/min
windowed reductions and max pooling's select-and-scatter/gather as Numba loops
(cpu/runtime/windows.py), FFT through pocketfft (scipy.fft) with the thread runtime's worker
count (cpu/runtime/fft.py); configurations those do not take and the general reduce_window run
their eager implementations from the driver."""
from __future__ import annotations

import numpy as np

from numbax._src.compiler.cpu.runtime import conv as cpu_conv
from numbax._src.compiler.cpu.runtime import windows as cpu_windows
from numbax._src.compiler.cuda import driver as cuda_driver
from numbax._src.compiler.cuda.kernels import conv as cuda_conv
from numbax._src.compiler.cuda.kernels import windows as cuda_windows
from numbax._src.compiler.cuda.runtime import cudnn, cufft
from numbax._src.compiler.registry import EAGER, register
from numbax._src.compiler.source import render_value
from numbax._src.core import JaxprEqn
from numbax._src.lax import convolution, fft, reduce_window, windowed_reductions

_CONV_PARAMS = ("window_strides", "padding", "lhs_dilation", "rhs_dilation",
                "dimension_numbers", "feature_group_count", "batch_group_count")


def _conv_plan(eqn: JaxprEqn):
    """The CPU runtime's plan for this convolution (None: it runs eagerly)."""
    lhs, rhs = (v.aval for v in eqn.invars)
    preferred = eqn.params["preferred_element_type"]
    dtype = np.dtype(preferred) if preferred is not None else lhs.dtype
    if lhs.dtype.kind not in "f" or rhs.dtype != lhs.dtype:
        return None
    return cpu_conv.plan(lhs.shape, rhs.shape, dtype,
                         *(eqn.params[k] for k in _CONV_PARAMS))


def _conv_library(eqn: JaxprEqn, ins: list[str]) -> str:
    params = ", ".join(render_value(eqn.params[k]) for k in
                       (*_CONV_PARAMS, "preferred_element_type"))
    return f"cv.conv_general_dilated({ins[0]}, {ins[1]}, {params})"


register(convolution.conv_general_dilated_p, backend="cpu", library=_conv_library,
         library_ok=lambda eqn: _conv_plan(eqn) is not None)



def _window_layout(eqn: JaxprEqn) -> bool:
    """Whether cpu/runtime/windows.py takes this windowed equation (a numeric operand of a
    layout it runs; booleans stay eager)."""
    p = eqn.params
    operand = eqn.invars[-1].aval
    if any(v.aval.dtype.kind not in "iufc" for v in eqn.invars):
        return False
    if "select_prim" in p and operand.dtype.kind == "c":
        return False
    ones = (1,) * operand.ndim
    return cpu_windows.layout(operand.shape, p["window_dimensions"], p["window_strides"],
                              p["padding"], p.get("base_dilation", ones),
                              p.get("window_dilation", ones)) is not None


def _reduce_window_library(kind: str):
    """The rule of one windowed reduction: `kind` names its code in cpu/runtime/windows.py."""
    def render(eqn: JaxprEqn, ins: list[str]) -> str:
        p = eqn.params
        args = ", ".join(render_value(p[k]) for k in ("window_dimensions", "window_strides",
                                                      "padding", "window_dilation"))
        return f"wk.reduce_window({ins[0]}, wk.{kind}, {args})"

    return render


def _select_library(eqn: JaxprEqn, ins: list[str]) -> str:
    p = eqn.params
    names = ("window_dimensions", "window_strides", "padding")
    if eqn.primitive is windowed_reductions.select_and_gather_add_p:
        names += ("window_dilation",)
    args = ", ".join(render_value(p[k]) for k in names)
    is_max, strict = windowed_reductions.select_rule(p["select_prim"])
    return f"wk.{eqn.primitive.name}({ins[0]}, {ins[1]}, {is_max}, {strict}, {args})"


for _prim, _kind in ((windowed_reductions.reduce_window_sum_p, "SUM"),
                     (windowed_reductions.reduce_window_max_p, "MAX"),
                     (windowed_reductions.reduce_window_min_p, "MIN")):
    register(_prim, backend="cpu", library=_reduce_window_library(_kind),
             library_ok=_window_layout)
for _prim in (windowed_reductions.select_and_gather_add_p,
              windowed_reductions.select_and_scatter_add_p):
    register(_prim, backend="cpu", library=_select_library, library_ok=_window_layout)
for _prim in (reduce_window.reduce_window_p, windowed_reductions.select_and_scatter_p):
    register(_prim, backend="cpu", library=EAGER)


def _fft_library(eqn: JaxprEqn, ins: list[str]) -> str:
    p = eqn.params
    return (f"ft.fft({ins[0]}, {p['fft_type']!r}, {render_value(tuple(p['fft_lengths']))}, "
            f"{render_value(eqn.outvars[0].aval.dtype)})")


register(fft.fft_p, backend="cpu", library=_fft_library)

# CUDA: windowed reductions and FFT
# The sum/max/min windowed reductions and max pooling's select-and-gather/scatter pair run
# generated kernels (cuda/kernels/windows.py: one thread per output element, no atomics); fft
# runs cuFFT through CuPy (cuda/runtime/cufft.py) where CuPy is installed (decided at compile
# time: without it fft runs on the host). The general reduce_window and select_and_scatter run
# their eager implementations on the host, as on the CPU.
for _prim, _render in ((windowed_reductions.reduce_window_sum_p, cuda_windows.reduce_window),
                       (windowed_reductions.reduce_window_max_p, cuda_windows.reduce_window),
                       (windowed_reductions.reduce_window_min_p, cuda_windows.reduce_window),
                       (windowed_reductions.select_and_gather_add_p,
                        cuda_windows.select_and_gather_add),
                       (windowed_reductions.select_and_scatter_add_p,
                        cuda_windows.select_and_scatter_add)):
    register(_prim, backend="cuda", library=cuda_driver.planned(_render),
             library_ok=cuda_windows.supported)
register(fft.fft_p, backend="cuda", library=cuda_driver.CudaDriver.fft,
         library_ok=lambda eqn: cufft.available() and cufft.takes(eqn))

# ----------------------------------------------------------------------------- CUDA


def _cuda_conv_dtypes(eqn: JaxprEqn) -> bool:
    """The dtypes the CUDA convolution takes (those of dot_general's product kernel): ints,
    float32/float64 and complex, for operands and output, and float16 where cuDNN takes the
    convolution; bool and other 16-bit float convolutions run on the host."""
    if all(v.aval.dtype.kind in "iuc" or v.aval.dtype in (np.float32, np.float64)
           for v in (*eqn.invars, *eqn.outvars)):
        return True
    if not cudnn.available():
        return False
    call = cuda_conv.cudnn_plan(eqn)  # a forward convolution or a filter gradient
    return call is not None and cudnn.supports(call.conv)


register(convolution.conv_general_dilated_p, backend="cuda",
         library=cuda_driver.CudaDriver.conv_general_dilated, library_ok=_cuda_conv_dtypes)
