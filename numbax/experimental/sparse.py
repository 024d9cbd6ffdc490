"""numbax.experimental.sparse: jax.experimental.sparse's BCOO and BCSR arrays, their
operations and the sparsify transform (numbax/_src/sparse/), under JAX's names."""
from numbax._src.sparse.bcoo import BCOO, bcoo_fromdense, bcoo_todense  # noqa: F401
from numbax._src.sparse.bcoo_dot import bcoo_dot_general  # noqa: F401
from numbax._src.sparse.bcoo_ops import (  # noqa: F401
    bcoo_multiply_dense,
    bcoo_multiply_sparse,
    bcoo_reduce_sum,
    bcoo_reshape,
    bcoo_sort_indices,
    bcoo_sum_duplicates,
    bcoo_transpose,
)
from numbax._src.sparse.bcsr import (  # noqa: F401
    BCSR,
    bcsr_dot_general,
    bcsr_fromdense,
    bcsr_todense,
)
from numbax._src.sparse.creation import empty, eye, random_bcoo, todense  # noqa: F401
from numbax._src.sparse.sparsify import sparsify  # noqa: F401
from numbax._src.sparse.transforms import grad, value_and_grad  # noqa: F401

JAXSparse = (BCOO, BCSR)  # isinstance(x, sparse.JAXSparse) holds for both formats

__all__ = [
    "BCOO", "BCSR", "JAXSparse", "bcoo_dot_general", "bcoo_fromdense", "bcoo_multiply_dense",
    "bcoo_multiply_sparse", "bcoo_reduce_sum", "bcoo_reshape", "bcoo_sort_indices",
    "bcoo_sum_duplicates", "bcoo_todense", "bcoo_transpose", "bcsr_dot_general",
    "bcsr_fromdense", "bcsr_todense", "empty", "eye", "grad", "random_bcoo", "sparsify",
    "todense", "value_and_grad",
]
