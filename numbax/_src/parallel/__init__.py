"""pmap's runtime: worker processes (pool), shared-memory buffers (shm), collectives, the API."""
