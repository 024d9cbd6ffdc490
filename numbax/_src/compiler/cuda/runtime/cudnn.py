"""Convolutions on the GPU through cuDNN, reached through NVIDIA's cudnn-frontend Python
bindings (`nvidia-cudnn-frontend`, the `numbax[cuda]` extra; CuPy 14 has no cuDNN module).

`kernels/conv.py` (`cudnn_plan`) decides which convolutions come here and in which of cuDNN's
three forms: float32 and float16 forward convolutions (feature groups allowed), and the two
gradients JAX writes as convolutions: the filter gradient (TF32 float32 only) and a strided
data gradient (found through the `rev` of its kernel, which cuDNN does itself). The input and
output must be packed channels-first (NCHW...) or channels-last (NHWC...) alike; the driver
transposes a kernel into the matching KCRS or KRSC layout first where it is not (cuDNN reads
no other filter layout: an HWIO kernel described by its strides gave wrong sums on an H200),
and a filter gradient out of it after. The rest keep im2col and cuBLAS. cuDNN's tensors are
described in its logical order, [N, C, spatial...] and [K, C/groups, spatial...], with each
array's element strides, so outputs land in the program's own layout. float32 runs on TF32
tensor cores where JAX's precision rules allow it, and with the tensor-core engines deselected
for `"highest"` (exact against a float64 reference).

One cuDNN graph per convolution and device, built when the driver is generated (`supports`:
a convolution cuDNN turns down keeps im2col), never during a graph capture; one handle per
device, its stream set per call where it changed (the work stream, or a capture stream); the
workspace is one buffer per (device, stream), grown to the largest graph's need and never
freed (a captured CUDA graph keeps its address). Without the package, or under Numba's CUDA
simulator, `available()` is False.
"""
from __future__ import annotations

import functools
import threading
from typing import Any, NamedTuple

import numpy as np

from numbax._src.compiler.cuda.runtime import memory, stream


class CudnnConv(NamedTuple):
    """One convolution as the driver passes it (its repr is the generated source), described
    as its forward convolution: logical dims and element strides of the input x [N, C,
    spatial...], the kernel w [K, C/groups, spatial...] and the output y [N, K, spatial...];
    per spatial dim the padding before and after, the window stride and the kernel dilation.
    `kind` says which of the three it computes: "fprop" y from (x, w), "dgrad" x from (y, w)
    (the gradient of a strided convolution with respect to its input), "wgrad" w from (x, y)
    (the gradient with respect to its kernel)."""
    x: tuple[tuple[int, ...], tuple[int, ...]]
    w: tuple[tuple[int, ...], tuple[int, ...]]
    y: tuple[tuple[int, ...], tuple[int, ...]]
    pre_padding: tuple[int, ...]
    post_padding: tuple[int, ...]
    stride: tuple[int, ...]
    dilation: tuple[int, ...]
    dtype: str  # float32 or float16
    tf32: bool  # float32 may run on TF32 tensor cores
    kind: str = "fprop"


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


def supports(c: CudnnConv) -> bool:
    """Whether cuDNN builds a graph for `c` on the current device: asked when a driver is
    generated, so a convolution cuDNN turns down keeps im2col instead of failing at its first
    call (the graph built here serves the calls). Under Numba's simulator the model of `_call`
    takes every convolution."""
    if memory.simulator_enabled():
        return True
    try:
        _graph(memory.current_device_id(), c)
    except Exception:  # noqa: BLE001 - cudnnGraphNotSupportedError and the binding's others
        return False
    return True


def conv(a: Any, b: Any, out: Any, c: CudnnConv) -> None:
    """One cuDNN call: out = fprop(x=a, w=b), dgrad(y=a, w=b) or wgrad(x=a, y=b), by c.kind."""
    _call(a, b, out, c)


def _call(a: Any, b: Any, out: Any, c: CudnnConv) -> None:
    """cuDNN's forward convolution (cross-correlation), or its data or filter gradient, on
    device buffers described by `c` (beta 0), on the stream the driver's launches go to.
    Tests replace this function with a numpy model of the same contract."""
    device, h = memory.current_device_id(), stream.current()
    g = _GRAPHS.get((device, c)) or _graph(device, c)
    workspace = _workspace(device, h, g.workspace)
    pointers = (memory.pointer(a), memory.pointer(b), memory.pointer(out))
    handle = _handle(device)
    with handle.lock:  # the device's one handle: calls from two threads take turns
        if handle.stream != h:  # set only on a change (a capture, or another stream's call)
            _bindings().set_stream(handle=handle.handle, stream=h)
            handle.stream = h
        # the buffers by uid (execute's ordered form): one crossing into the binding, no dict
        # (70.8 against 76.7 µs a call through the mapping form, H200)
        g.graph.execute(pointers, workspace, handle=handle.handle, tensor_uids=g.uids)


class _Graph(NamedTuple):
    graph: Any
    workspace: int  # bytes
    uids: tuple[int, int, int]  # of a, b and out


class _Handle:
    """A device's cuDNN handle, the stream it is set to, and the lock its callers take."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.stream: int | None = None
        self.lock = threading.Lock()


_GRAPHS: dict[tuple, _Graph] = {}
_WORKSPACES: dict[tuple[int, int], tuple[int, int]] = {}  # (device, stream) -> (bytes, address)
_KEPT: list = []  # every workspace buffer made (a captured graph may hold an old one)


def _graph(device: int, c: CudnnConv) -> _Graph:
    """The built cuDNN graph of one convolution on one device (built outside any capture:
    when the driver is generated, see `supports`)."""
    dn = _bindings()
    dtype = dn.data_type.FLOAT if c.dtype == "float32" else dn.data_type.HALF
    handle = _handle(device)
    with memory.on_device(device), handle.lock:
        g = dn.pygraph(io_data_type=dtype, intermediate_data_type=dn.data_type.FLOAT,
                       compute_data_type=dn.data_type.FLOAT, handle=handle.handle)

        def described(name):
            dims, steps = getattr(c, name)
            return g.tensor(name=name, dim=list(dims), stride=list(steps), data_type=dtype)

        geometry = dict(pre_padding=list(c.pre_padding), post_padding=list(c.post_padding),
                        stride=list(c.stride), dilation=list(c.dilation),
                        compute_data_type=dn.data_type.FLOAT, name=c.kind)
        if c.kind == "fprop":
            a, b = described("x"), described("w")
            out, out_name = g.conv_fprop(image=a, weight=b, **geometry), "y"
        elif c.kind == "dgrad":
            a, b = described("y"), described("w")
            out, out_name = g.conv_dgrad(loss=a, filter=b, **geometry), "x"
        else:
            a, b = described("x"), described("y")
            out, out_name = g.conv_wgrad(image=a, loss=b, **geometry), "w"
        dims, steps = getattr(c, out_name)
        out.set_output(True).set_dim(list(dims)).set_stride(list(steps)).set_data_type(dtype)
        g.validate()
        g.build_operation_graph()
        g.create_execution_plans([dn.heur_mode.A, dn.heur_mode.FALLBACK])
        if c.dtype == "float32" and not c.tf32:  # full float32: no tensor-core engine
            g.deselect_numeric_notes([dn.numerical_note.TENSOR_CORE])
        g.check_support()
        g.build_plans()
        built = _Graph(g, int(g.get_workspace_size()),
                       (a.get_uid(), b.get_uid(), out.get_uid()))
    _GRAPHS[(device, c)] = built
    return built


@functools.cache
def _handle(device: int) -> _Handle:
    """numbax's cuDNN handle of one device (its stream is set per call, on a change)."""
    with memory.on_device(device):
        memory.get_cuda().current_context()
        return _Handle(_bindings().create_handle())


def _workspace(device: int, h: int, need: int) -> int:
    """The address of a workspace of at least `need` bytes for one (device, stream)."""
    size, address = _WORKSPACES.get((device, h), (-1, 0))
    if need <= size:
        return address
    buf = memory.kept_buffer((device, max(need, 1), np.dtype(np.uint8).str))
    _KEPT.append(buf)
    _WORKSPACES[(device, h)] = (max(need, 1), memory.pointer(buf))
    return memory.pointer(buf)
