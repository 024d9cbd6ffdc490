"""The entry point of a virtual-device worker process (`python -m
numbax._src.parallel.worker_main FD`): only numbax is imported here, never the user's __main__.
The parent's sys.path arrives first, so modules the parent can import the worker can too."""
import multiprocessing.connection
import os
import signal
import sys
import threading
import time

PARENT_CHECK_S = 0.5  # how often a worker looks whether its parent is still there
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _leave_with_parent(parent: int) -> None:
    """Ends this worker once its parent is gone (killed: nothing told the workers). A worker at
    a barrier or waiting for a message notices by itself; one inside a long computation reads
    nothing until it ends, and would spin on for minutes or hours with no one to answer."""
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_S)
    os._exit(1)


def _die_with_parent(parent: int) -> None:
    """Asks Linux to kill this worker when the thread that started it ends (PR_SET_PDEATHSIG),
    where the parent says that thread is its main one, which ends with the process. The
    watch thread cannot run while this worker's main thread is inside compiled code, which
    holds the GIL: a jitted pmap body looping for hours kept its workers spinning after the
    parent was killed. (A thread that started workers and ended would take them along, so
    workers started from other threads keep only the watch.)"""
    from numbax._src.parallel import WORKER_DIES_WITH_PARENT  # (the package: already loaded)

    if os.environ.get(WORKER_DIES_WITH_PARENT) != "1" or not sys.platform.startswith("linux"):
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        return  # (not allowed here: the watch thread still runs)
    if os.getppid() != parent:  # the parent died before the request: nothing would come
        os._exit(1)


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and stops us
    parent = os.getppid()
    _die_with_parent(parent)
    threading.Thread(target=_leave_with_parent, args=(parent,), daemon=True,
                     name="numbax-parent-watch").start()
    conn = multiprocessing.connection.Connection(int(sys.argv[1]))
    try:
        init = conn.recv()
    except (EOFError, OSError):
        return
    sys.path[:] = [*init["sys_path"], *[p for p in sys.path if p not in init["sys_path"]]]
    from numbax._src.parallel import worker

    worker.serve(init["index"], conn, init.get("board"), init.get("host_workers", 1))


if __name__ == "__main__":
    main()
