"""What generated CUDA modules import: device functions, complex helpers, special functions,
launchers and device memory (the one door to numba.cuda)."""
