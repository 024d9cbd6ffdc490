"""What generated CPU modules import: scalar helpers, fast math, reduction accumulators, library
kernels, the GEMM and BLAS thread policy, and the host-ISA choice (run before any @njit)."""
