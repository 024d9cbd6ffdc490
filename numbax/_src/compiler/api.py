"""numbax's compiler: `compile(closed_jaxpr, backend)` returns an Executable.

inline -> check -> simplify -> partition (with the backend's fusible predicate) -> render ->
cache. How each primitive is emitted is registered by primitive object (registry.py, filled by
the family modules of lowerings/); backends implement backend.Backend (cpu/, cuda/)."""
# First: Numba's CPU target is chosen before any @njit function is decorated (host_isa.py).
from numbax._src.compiler.cpu.runtime import host_isa  # noqa: F401  # isort: skip

from numbax._src.compiler import (
    lowerings,  # noqa: E402, F401  (fills the registry)
    pipeline,  # noqa: E402
)
from numbax._src.compiler.backend import Backend, Executable  # noqa: E402
from numbax._src.compiler.cpu.backend import CpuBackend  # noqa: E402
from numbax._src.compiler.cuda.backend import CudaBackend  # noqa: E402
from numbax._src.core import ClosedJaxpr  # noqa: E402
from numbax._src.errors import NumbaxValueError  # noqa: E402

BACKENDS: dict[str, Backend] = {"cpu": CpuBackend(), "cuda": CudaBackend()}
_ALIASES = {"gpu": "cuda"}


forget_built = pipeline.forget_built


def get_backend(name: str) -> Backend:
    """The backend called `name` ("cpu", "cuda", or its alias "gpu")."""
    backend = BACKENDS.get(_ALIASES.get(name, name))
    if backend is None:
        raise NumbaxValueError(f"compile: backend has value {name!r}, expected one of "
                               f"{sorted([*BACKENDS, *_ALIASES])}. Pass one of those.")
    return backend


def compile(closed: ClosedJaxpr, backend: str = "cpu", donated: frozenset = frozenset(),
            name: str = "", device=None) -> Executable:  # noqa: A001
    """`closed` compiled for `backend`: `donated` holds the input positions whose buffers
    outputs may be written into, `name` the function's name (messages), `device` the device
    a GPU program runs on."""
    return pipeline.compile_with(closed, get_backend(backend), donated, name, device)
