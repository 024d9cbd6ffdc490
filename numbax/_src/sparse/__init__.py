"""jax.experimental.sparse's arrays (BCOO, BCSR) and the sparsify transform, built from numbax's
gathers, scatter-adds and dot_generals so that jit, grad and vmap compose through them."""
