"""What generated CPU modules import: scalar helpers, fast math, reduction accumulators, library
kernels, the GEMM and BLAS thread policy, and the host-ISA choice (run before any @njit)."""
from numbax._src.compiler import cache

cache.key_runtime_caches()  # before any runtime module decorates a cached function
