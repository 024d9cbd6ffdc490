"""Convolutions on the GPU through cuDNN, reached through NVIDIA's cudnn-frontend Python
bindings (`nvidia-cudnn-frontend`, the `numbax[cuda]` extra; CuPy 14 has no cuDNN module).

`kernels/conv.py` (`cudnn_plan`) decides which convolutions come here: float32 and float16
ones without lhs dilation or batch groups whose input and output are packed channels-first
(NCHW...) or channels-last (NHWC...) alike; the driver transposes the kernel into the matching
KCRS or KRSC layout first where it is not (cuDNN reads no other filter layout: an HWIO kernel
described by its strides gave wrong sums on an H200). The rest keep im2col and cuBLAS. cuDNN's
tensors are described in its logical order, [N, C, spatial...] and [K, C/groups, spatial...],
with each array's element strides, so outputs land in the program's own layout. float32 runs
on TF32 tensor cores where JAX's precision rules allow it, and with the tensor-core engines
deselected for `"highest"` (exact against a float64 reference).

One cuDNN graph per convolution, device and stream (a handle is bound to one stream, so the
work stream and a capture stream never share one), built on first use; the workspace is one
buffer per (device, stream), grown to the largest graph's need and never freed (a captured
CUDA graph keeps its address). Without the package, or under Numba's CUDA simulator,
`available()` is False.
"""
from __future__ import annotations

import functools
import threading
from typing import Any, NamedTuple

import numpy as np

from numbax._src.compiler.cuda.runtime import memory, stream


class CudnnConv(NamedTuple):
    """One convolution as the driver passes it (its repr is the generated source): logical
    dims and element strides of the input [N, C, spatial...], the kernel [K, C/groups,
    spatial...] and the output [N, K, spatial...]; per spatial dim the padding before and
    after, the window stride and the kernel dilation."""
    x: tuple[tuple[int, ...], tuple[int, ...]]
    w: tuple[tuple[int, ...], tuple[int, ...]]
    y: tuple[tuple[int, ...], tuple[int, ...]]
    pre_padding: tuple[int, ...]
    post_padding: tuple[int, ...]
    stride: tuple[int, ...]
    dilation: tuple[int, ...]
    dtype: str  # float32 or float16
    tf32: bool  # float32 may run on TF32 tensor cores


@functools.cache
def _bindings() -> Any:
    """The cudnn-frontend module with libcudnn loaded, or None when either is missing."""
    try:
        try:  # libcudnn from NVIDIA's wheels (as CUDA's other libraries are found)
            from cuda import pathfinder

            pathfinder.load_nvidia_dynamic_lib("cudnn")
        except Exception:  # noqa: BLE001 - no pathfinder, or libcudnn on the loader's path
            pass
        import cudnn

        cudnn.backend_version()
    except Exception:  # noqa: BLE001 - not installed, or no libcudnn to bind
        return None
    return cudnn


def available() -> bool:
    """Whether convolutions can go to cuDNN: a real GPU (not the simulator), cudnn-frontend
    and libcudnn installed."""
    return not memory.simulator_enabled() and _bindings() is not None


def conv(x: Any, w: Any, y: Any, c: CudnnConv) -> None:
    """y = the convolution of x with w, as `c` describes it: one cuDNN call."""
    _call(x, w, y, c)


def _call(x: Any, w: Any, y: Any, c: CudnnConv) -> None:
    """cuDNN's forward convolution (cross-correlation, beta 0) on device buffers described by
    `c`, on the stream the driver's launches go to. Tests replace this function with a numpy
    model of the same contract."""
    device, h = memory.current_device_id(), stream.current()
    g = _GRAPHS.get((device, h, c)) or _graph(device, h, c)
    workspace = _workspace(device, h, g.workspace)
    pointers = (memory.pointer(x), memory.pointer(w), memory.pointer(y))
    with g.lock:  # one graph, one handle: calls from two threads take turns
        if ORDERED:  # the buffers by uid: one crossing into the binding, no dict
            g.graph.execute(pointers, workspace, handle=g.handle, tensor_uids=g.uids)
        else:
            g.graph.execute(dict(zip((g.x, g.w, g.y), pointers)), workspace, handle=g.handle)


ORDERED = True  # execute's ordered form (cudnn-frontend >= 1.3x); the mapping form otherwise


class _Graph(NamedTuple):
    graph: Any
    x: Any
    w: Any
    y: Any
    handle: Any
    workspace: int  # bytes
    uids: tuple[int, int, int]  # of x, w and y
    lock: threading.Lock


_GRAPHS: dict[tuple, _Graph] = {}
_WORKSPACES: dict[tuple[int, int], tuple[int, int]] = {}  # (device, stream) -> (bytes, address)
_KEPT: list = []  # every workspace buffer made (a captured graph may hold an old one)


def _graph(device: int, h: int, c: CudnnConv) -> _Graph:
    """The built cuDNN graph of one convolution on one (device, stream)."""
    dn = _bindings()
    dtype = dn.data_type.FLOAT if c.dtype == "float32" else dn.data_type.HALF
    with memory.on_device(device):
        g = dn.pygraph(io_data_type=dtype, intermediate_data_type=dn.data_type.FLOAT,
                       compute_data_type=dn.data_type.FLOAT, handle=_handle(device, h))
        x = g.tensor(name="x", dim=list(c.x[0]), stride=list(c.x[1]), data_type=dtype)
        w = g.tensor(name="w", dim=list(c.w[0]), stride=list(c.w[1]), data_type=dtype)
        y = g.conv_fprop(image=x, weight=w, pre_padding=list(c.pre_padding),
                         post_padding=list(c.post_padding), stride=list(c.stride),
                         dilation=list(c.dilation), compute_data_type=dn.data_type.FLOAT,
                         name="conv")
        y.set_output(True).set_dim(list(c.y[0])).set_stride(list(c.y[1])).set_data_type(dtype)
        g.validate()
        g.build_operation_graph()
        g.create_execution_plans([dn.heur_mode.A, dn.heur_mode.FALLBACK])
        if c.dtype == "float32" and not c.tf32:  # full float32: no tensor-core engine
            g.deselect_numeric_notes([dn.numerical_note.TENSOR_CORE])
        g.check_support()
        g.build_plans()
        built = _Graph(g, x, w, y, _handle(device, h), int(g.get_workspace_size()),
                       (x.get_uid(), w.get_uid(), y.get_uid()), threading.Lock())
    _GRAPHS[(device, h, c)] = built
    return built


@functools.cache
def _handle(device: int, h: int) -> Any:
    """numbax's cuDNN handle of one device, bound to one stream once."""
    dn = _bindings()
    with memory.on_device(device):
        memory.get_cuda().current_context()
        handle = dn.create_handle()
        dn.set_stream(handle=handle, stream=h)
    return handle


def _workspace(device: int, h: int, need: int) -> int:
    """The address of a workspace of at least `need` bytes for one (device, stream)."""
    size, address = _WORKSPACES.get((device, h), (-1, 0))
    if need <= size:
        return address
    buf = memory.kept_buffer((device, max(need, 1), np.dtype(np.uint8).str))
    _KEPT.append(buf)
    _WORKSPACES[(device, h)] = (max(need, 1), memory.pointer(buf))
    return memory.pointer(buf)
