"""The entry point of a virtual-device worker process (`python -m
numbax._src.parallel.worker_main FD`): only numbax is imported here, never the user's __main__.
The parent's sys.path arrives first, so modules the parent can import the worker can too."""
import multiprocessing.connection
import signal
import sys


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and stops us
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
