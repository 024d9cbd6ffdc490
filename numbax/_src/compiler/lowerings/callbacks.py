"""Host callbacks (debug_callback, debug_print, pure_callback, io_callback), checkify's check /
check_error outside checkify, and the reads and writes of a Ref's buffer: the driver runs each
through its eager impl at every call, between kernels, in program order."""
from __future__ import annotations

from numbax._src import callbacks, checkify, refs
from numbax._src.compiler.registry import EAGER, register

for _prim in (callbacks.debug_callback_p, callbacks.debug_print_p, callbacks.pure_callback_p,
              callbacks.io_callback_p, checkify.check_p, checkify.check_error_p, refs.ref_get_p,
              refs.ref_set_p):
    register(_prim, backend="cpu", library=EAGER)
