"""pmap's runtime: worker processes (pool), shared-memory buffers (shm), collectives, the API."""
import pickle

# The variable by which pool.py tells a worker whether the thread starting it is the main one
# (worker_main._die_with_parent); here, where both read it without importing each other.
WORKER_DIES_WITH_PARENT = "NUMBAX_WORKER_DIES_WITH_PARENT"


def send_plain(conn, message) -> None:
    """Sends a message of plain data (tuples, dicts, strings, numbers, bytes, dtypes) over a
    multiprocessing Connection, pickled by pickle's own dumps: Connection.send's reducer
    pickler copies its dispatch table on every message, ~3x the time of a small call's
    messages. The other end's Connection.recv reads it as usual."""
    conn.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))
