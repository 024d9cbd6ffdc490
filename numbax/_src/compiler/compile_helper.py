"""The helper process that compiles prange variants for one numbax process
(cpu/runtime/compile_ahead.py). It reads requests from stdin (a length and a number, then a
pickle from its parent: the module's name and generated source, a function, a signature),
compiles each into the disk cache, and answers each with its number and whether it compiled.
It ends when its parent closes the pipe or ends, after the compile in progress."""
from __future__ import annotations

import os
import pickle
import struct
import sys


def serve(requests, answers) -> None:
    from numbax._src.compiler import cache
    from numbax._src.config import config

    parent = os.getppid()
    while True:
        head = requests.read(16)
        if len(head) < 16 or os.getppid() != parent:  # (requests its parent left unanswered:
            return  # no process is there to load them)
        size, ident = struct.unpack("<QQ", head)
        message = pickle.loads(requests.read(size))  # noqa: S301 - from the parent's own pipe
        ok = False
        try:
            if message["cache_dir"] != config.cache_dir:  # (modules save where they loaded)
                config.update("cache_dir", message["cache_dir"])
                cache.clear()
            module = cache.load_named(message["module"], message["source"])
            if getattr(module, "__file__", None):  # on disk, where the parent loads it from
                function = getattr(module, message["function"])
                function.compile(message["signature"])
                ok = cache.has_saved_code(function)
        except Exception:  # noqa: BLE001,S110 - the parent compiles in line and sees the error
            pass
        answers.write(struct.pack("<Q?", ident, ok))
        answers.flush()


if __name__ == "__main__":
    serve(sys.stdin.buffer, sys.stdout.buffer)
