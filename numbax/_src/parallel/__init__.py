"""pmap's runtime: worker processes (pool), shared-memory buffers (shm), collectives, the API."""

# The variable by which pool.py tells a worker whether the thread starting it is the main one
# (worker_main._die_with_parent); here, where both read it without importing each other.
WORKER_DIES_WITH_PARENT = "NUMBAX_WORKER_DIES_WITH_PARENT"
