"""The CUDA backend: loop nests and row groups rendered as @cuda.jit modules, library kernels,
and the host driver that launches them."""
