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


def _leave_with_parent(parent: int) -> None:
    """Ends this worker once its parent is gone (killed: nothing told the workers). A worker at
    a barrier or waiting for a message notices by itself; one inside a long computation reads
    nothing until it ends, and would spin on for minutes or hours with no one to answer."""
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_S)
    os._exit(1)


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and stops us
    threading.Thread(target=_leave_with_parent, args=(os.getppid(),), daemon=True,
                     name="numbax-parent-watch").start()
    conn = multiprocessing.connection.Connection(int(sys.argv[1]))
    try:
        init = conn.recv()
    except (EOFError, OSError):
        return
    sys.path[:] = [*init["sys_path"], *[p for p in sys.path if p not in init["sys_path"]]]
    from numbax._src.parallel import worker

    worker.serve(init["index"], conn, init.get("board"))


if __name__ == "__main__":
    main()
