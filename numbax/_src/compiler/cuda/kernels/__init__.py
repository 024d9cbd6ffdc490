"""CUDA kernels of library primitives: indexing and shapes, sort, linear algebra, matmul."""
