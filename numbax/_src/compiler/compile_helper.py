"""The helper process that compiles threaded forms for one numbax process
(cpu/runtime/compile_ahead.py). It reads requests from stdin (a length and a number, then a
pickle from its parent: a generated module's name and source, or a runtime module's name; a
function; a signature; or a runtime module to import alone), compiles each into the disk
cache, and answers each with its number and whether its code is there. It ends when its
parent closes the pipe or ends, after the compile in progress."""
from __future__ import annotations

import importlib
import os
import pickle
import struct
import sys


def serve(requests, answers) -> None:
    parent = os.getppid()
    while True:
        head = requests.read(16)
        if len(head) < 16 or os.getppid() != parent:  # (requests its parent left unanswered:
            return  # no process is there to load them)
        size, ident = struct.unpack("<QQ", head)
        message = pickle.loads(requests.read(size))  # noqa: S301 - from the parent's own pipe
        try:
            ok = _compile(message)
        except Exception:  # noqa: BLE001 - the parent compiles in line and sees the error
            ok = False
        answers.write(struct.pack("<Q?", ident, ok))
        answers.flush()


def _compile(message: dict) -> bool:
    """Compiles one request into the disk cache; whether its code is there now."""
    from numbax._src.compiler import cache
    from numbax._src.config import config

    if "import" in message:  # a runtime module whose import compiles its cfuncs (cached)
        importlib.import_module(message["import"])
        return True
    if "runtime" in message:  # one of numbax's runtime functions, cached beside its module
        function = getattr(importlib.import_module(message["runtime"]), message["function"])
        function.compile(message["signature"])
        return cache.has_saved_signature(function, message["signature"])
    if message["cache_dir"] != config.cache_dir:  # (modules save where they were loaded)
        config.update("cache_dir", message["cache_dir"])
        cache.clear()
    module = cache.load_named(message["module"], message["source"])
    if not getattr(module, "__file__", None):  # not on disk: the parent could not load it
        return False
    function = getattr(module, message["function"])
    function.compile(message["signature"])
    return cache.has_saved_code(function)


if __name__ == "__main__":
    serve(sys.stdin.buffer, sys.stdout.buffer)
